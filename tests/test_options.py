"""Options as values (gseek.options, gseek.values): checked where made, passed whole, sent as JSON."""

from __future__ import annotations

import pickle

import pytest

from gseek.errors import OptionError
from gseek.options import MapOptions, PairOptions, ReadOptions, SamOptions

VALUES = [
    MapOptions(),
    MapOptions(mismatches=3, report_all=True, max_hits=7, norc=True, xa_limit=0, min_piece=12),
    ReadOptions(phred64=True, trim5=2, trim3=1, skip=3, upto=9),
    SamOptions(no_unal=True, cigar_eq=True, read_group=(("ID", "L1"), ("SM", "s 1")), sort=False,
               compression_level=1, reference="ref.fa"),
    PairOptions(minins=10, maxins=500, orientation="rf"),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: repr(v))
def test_a_value_travels_as_json_and_pickle_unchanged(value):
    cls = type(value)
    assert cls.from_json(value.to_json()) == value
    assert cls.from_dict(value.to_dict()) == value
    assert pickle.loads(pickle.dumps(value)) == value
    assert hash(cls.from_json(value.to_json())) == hash(value)  # frozen: a TaskSpec's options are hashable


@pytest.mark.parametrize("cls, fields, message", [
    (MapOptions, dict(mismatches=9), "mismatches must be 0..8"),
    (MapOptions, dict(mismatches=True), "mismatches must be an integer"),
    (MapOptions, dict(max_alignments=2, report_all=True), "choose one of -k N and --all"),
    (MapOptions, dict(max_hits=3), "max_hits caps --all"),
    (MapOptions, dict(norc=True, nofw=True), "no strand"),
    (MapOptions, dict(min_piece=40), "min_piece must be 1..32"),
    (MapOptions, dict(norc="yes"), "norc must be True or False"),
    (ReadOptions, dict(upto=0), "upto must be a whole number >= 1"),
    (ReadOptions, dict(trim5=-1), "trim5 must be a whole number >= 0"),
    (ReadOptions, dict(phred64=1), "phred64 must be True or False"),
    (SamOptions, dict(compression_level=10), "compression level must be 0 to 9"),
    (SamOptions, dict(read_group=(("SM", "x"),)), "start with ID"),
    (PairOptions, dict(minins=300, maxins=200), "larger than maxins"),
    (PairOptions, dict(orientation="rr"), "orientation must be one of"),
])
def test_a_value_is_checked_where_it_is_made(cls, fields, message):
    with pytest.raises(OptionError, match=message):
        cls(**fields)
    with pytest.raises(OptionError, match=message):  # the same rules for a value sent as JSON
        cls.from_dict(fields)


def test_unknown_names_and_bad_json_are_refused():
    with pytest.raises(OptionError, match="unknown MapOptions option.*colour"):
        MapOptions.from_dict({"colour": 1})
    with pytest.raises(OptionError, match="not JSON"):
        MapOptions.from_json("{mismatches: 3")
    with pytest.raises(OptionError, match="expected an object"):
        ReadOptions.from_json("[1, 2]")


def test_bowtie_words_and_the_mapper_keywords():
    assert MapOptions.from_bowtie("-v 3 -a --nofw") == MapOptions(mismatches=3, report_all=True, nofw=True)
    assert MapOptions.from_bowtie("-k 2", mismatches=0) == MapOptions(mismatches=0, max_alignments=2)
    with pytest.raises(OptionError, match="bowtie option '-n'"):
        MapOptions.from_bowtie("-n 2")
    with pytest.raises(OptionError, match="needs a number"):
        MapOptions.from_bowtie("-v")
    assert MapOptions(mismatches=1, norc=True).mapper_kwargs() == {"norc": True}


def test_the_limits_are_the_kernels():
    from gseek.kernels import kmismatch
    from gseek.options import MAX_MIN_PIECE, MAX_MISMATCHES

    assert MAX_MISMATCHES == kmismatch.MAX_MISMATCHES and MAX_MIN_PIECE == kmismatch.MAX_DFS_DEPTH // 2


def test_keywords_or_values_once_at_the_front_door():
    from gseek.pipeline.tasks.map import map_values

    assert map_values(mismatches=1, skip=2, sort=False, maxins=9) == (
        MapOptions(mismatches=1), ReadOptions(skip=2), SamOptions(sort=False), PairOptions(maxins=9))
    assert map_values(MapOptions(mismatches=1), trim3=1)[:2] == (MapOptions(mismatches=1), ReadOptions(trim3=1))
    with pytest.raises(OptionError, match="not both"):
        map_values(MapOptions(), mismatches=1)
    with pytest.raises(OptionError, match="unknown mapping option"):
        map_values(colour=1)
    with pytest.raises(OptionError, match="expected a ReadOptions"):
        map_values(read_options=MapOptions())


def test_a_mapper_and_a_task_take_the_value_whole(tmp_path):
    from gseek.datasets import lambda_genome
    from gseek.index import Index
    from gseek.mapper import Mapper
    from gseek.pipeline.tasks import MapTask

    index = Index.build(lambda_genome(), wgram=8, device="cpu")
    options = MapOptions(mismatches=1, report_all=True)
    assert Mapper(index, options, device="cpu").options is options
    assert Mapper(index, options=options, device="cpu").k == 1
    with pytest.raises(OptionError, match="not both"):
        Mapper(index, options=options, norc=True)
    saved = index.save(tmp_path / "l.gseek")
    by_keywords = MapTask(saved, 1, report_all=True, trim5=2, device="cpu", threads=1)
    by_values = MapTask(saved, options, read_options=ReadOptions(trim5=2), device="cpu", threads=1)
    assert by_keywords.spec == by_values.spec and by_keywords.fingerprint() == by_values.fingerprint()
    assert dict(by_values.spec.options)["options"] is options
