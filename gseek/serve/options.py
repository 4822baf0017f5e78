"""A request's options as JSON, made into the option values the front doors take, whole.

A BLAST request's ``options`` object holds fields of
:class:`~gseek.blast.options.BlastOptions`; a mapping request's, fields of
:class:`~gseek.options.MapOptions`, :class:`~gseek.options.ReadOptions` and the
``no_unal`` / ``cigar_eq`` of :class:`~gseek.options.SamOptions` side by side
(:class:`MapRequestOptions`). Each value is made by its own
:meth:`~gseek.values.OptionsValue.from_dict`, so a request is checked by the
rules the command line's options are checked by, with the same one-line
messages; the JSON types are checked first against each field's annotation (a
string where a number belongs is refused here, not deep in a search).

>>> blast_options("blastn", {"evalue": 1e-5, "dust": [20, 64, 1]})
BlastOptions(task='blastn', evalue=1e-05)
>>> blast_options("megablast", {"word_size": 2})
Traceback (most recent call last):
...
gseek.errors.OptionError: word size must be at least 4 for task megablast, not 2
>>> blast_options("dc-megablast", {"template_type": "optimal", "template_length": 21})
BlastOptions(task='dc-megablast', template_type='optimal', template_length=21)
>>> blast_options("megablast", {"evalue": "small"})
Traceback (most recent call last):
...
gseek.errors.OptionError: option evalue: expected a number, not 'small'
>>> map_options({"mismatches": 1, "no_unal": True, "trim5": 2})
MapRequestOptions(options=MapOptions(mismatches=1), read_options=ReadOptions(trim5=2), sam_options=SamOptions(no_unal=True))
>>> map_options({"max_alignments": 2, "report_all": True})
Traceback (most recent call last):
...
gseek.errors.OptionError: choose one of -k N and --all
>>> output_format("megablast", "7 std qlen"), output_format("map", None)
('7 std qlen', 'sam')
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from gseek.blast.options import TASKS as BLAST_PRESETS
from gseek.errors import OptionError
from gseek.options import MapOptions, ReadOptions, SamOptions

__all__ = ["BLAST_TASKS", "MAP_KEYS", "SAM_KEYS", "TASKS", "MapRequestOptions", "blast_options", "map_options",
           "output_format"]

#: The BLAST tasks, each with its own presets: megablast, blastn, blastn-short, dc-megablast.
BLAST_TASKS = tuple(BLAST_PRESETS)
TASKS = (*BLAST_TASKS, "map")
#: The SAM options a mapping request may give (the others name files or shape a BAM).
SAM_KEYS = ("no_unal", "cigar_eq")
#: Every option a mapping request may give: nothing that names a file.
MAP_KEYS = (*MapOptions.field_names(), *ReadOptions.field_names(), *SAM_KEYS)


@dataclass(frozen=True)
class MapRequestOptions:
    """A mapping request's option values, passed whole to :func:`~gseek.pipeline.map_files`
    (:meth:`keywords`); hashable: the batcher's key."""

    options: MapOptions = MapOptions()
    read_options: ReadOptions = ReadOptions()
    sam_options: SamOptions = SamOptions()

    def keywords(self) -> dict[str, Any]:
        return {"options": self.options, "read_options": self.read_options, "sam_options": self.sam_options}


def _object(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise OptionError(f"options must be a JSON object, not {type(options).__name__}")
    return options


def _checked(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (JSON) checked against the annotations of ``cls``'s fields (unknown names are
    left to :meth:`~gseek.values.OptionsValue.from_dict`, which names them)."""
    types = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    return {name: _json_value(name, value, types[name]) if name in types else value for name, value in values.items()}


def _json_value(name: str, value: Any, annotation: str) -> Any:
    """A JSON ``value`` of the field ``name`` checked against its ``annotation`` (``int``,
    ``float``, ``bool``, ``str``, ``tuple[int, ...]``, each perhaps ``| None``)."""
    kind = annotation.split("|")[0].strip()
    if value is None and "None" in annotation:
        return None
    if kind == "bool" and isinstance(value, bool) or kind == "str" and isinstance(value, str):
        return value
    if kind == "int" and type(value) is int:
        return value
    if kind == "float" and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if kind.startswith("tuple[int") and isinstance(value, list) and all(type(v) is int for v in value):
        return tuple(value)
    want = {"bool": "true/false", "str": "a string", "int": "an integer", "float": "a number"}.get(kind, "a list of integers")
    raise OptionError(f"option {name}: expected {want}{' or null' if 'None' in annotation else ''}, not {value!r}")


def blast_options(task: str, options: Any) -> Any:
    """The :class:`~gseek.blast.options.BlastOptions` of ``task`` with the JSON object ``options``
    (its field names; ``dust`` null or ``[level, window, linker]``) applied and checked."""
    from gseek.blast.options import BlastOptions

    values = dict(_object(options))
    if values.get("task", task) != task:
        raise OptionError(f"options: task {values['task']!r} is not the request's task {task!r}")
    values["task"] = task
    return BlastOptions.from_dict(_checked(BlastOptions, values))


def map_options(options: Any) -> MapRequestOptions:
    """The JSON object ``options`` as a mapping request's values, checked as ``gseek search
    --task map`` checks them."""
    values = _object(options)
    unknown = sorted(set(values) - set(MAP_KEYS))
    if unknown:
        raise OptionError(f"unknown mapping option(s): {', '.join(unknown)} (known: {', '.join(MAP_KEYS)})")
    if values.get("max_hits") is not None and not values.get("report_all"):
        raise OptionError("--max-hits caps --all; give --all too")  # the command line's words
    parts = {}
    for field, cls in (("options", MapOptions), ("read_options", ReadOptions), ("sam_options", SamOptions)):
        names = set(cls.field_names()) & set(MAP_KEYS)
        parts[field] = cls.from_dict(_checked(cls, {k: v for k, v in values.items() if k in names}))
    return MapRequestOptions(**parts)


def output_format(task: str, fmt: Any) -> str:
    """The output of a request: BLAST's ``6``/``7`` (with field keywords), ``sam`` or ``json``
    (records) for the BLAST tasks (default ``6``); ``sam`` (default) or ``mapping`` (the ``.npz`` of
    :meth:`gseek.Client.map <gseek.serve.client.Client.map>`) for ``map``."""
    if fmt is not None and not isinstance(fmt, (str, int)) or isinstance(fmt, bool):
        raise OptionError(f"format must be a string such as \"6\", \"7 std qlen\", \"sam\" or \"json\", not {fmt!r}")
    text = "" if fmt is None else str(fmt).strip()
    if task == "map":
        if text not in ("", "sam", "mapping"):
            raise OptionError(f"format {text!r}: --task map writes SAM (format \"sam\") or a MappingResult "
                              f"(\"mapping\")")
        return text or "sam"
    if text in ("", "6"):
        return "6"
    if text in ("json", "hits"):
        return text
    from gseek.blast.report import parse_outfmt

    if parse_outfmt(text)[0] not in ("6", "7", "sam", "10"):  # XML and JSON reports: gseek blastn's, not here
        raise OptionError(f"format {text!r}: the service writes BLAST tabular (6, 7, 10), sam or json records")
    return text
