"""The seqpack kernel family (pack, unpack, reverse complement, w-grams) on every backend."""

from __future__ import annotations

import numpy as np
import pytest
import reference

from gseek.alphabet import decode_dna, encode_dna
from gseek.encode import WGRAM_INVALID, pack_2bit, pack_rows, reverse_complement, unpack_2bit, wgram_codes
from gseek.errors import OptionError


def _concat(records):
    codes = encode_dna("".join(records))
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in records])]).astype(np.int64)
    return codes, offsets


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 31, 33, 1000, 4099])
def test_pack_matches_reference(backend, n):
    rng = np.random.default_rng(n)
    codes = rng.integers(0, 5, size=n, dtype=np.uint8)
    packed, nmask = pack_2bit(backend, codes)
    ref_packed, ref_mask = reference.pack_2bit(codes.tolist())
    assert backend.to_host(packed).tolist() == ref_packed
    assert backend.to_host(nmask).tolist() == ref_mask
    back = backend.to_host(unpack_2bit(backend, packed, nmask, n))
    assert back.tolist() == codes.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_pack_rows_match_reference(backend, seed):
    rng = np.random.default_rng(seed)
    records = reference.random_records(rng, 50, 70) + ["", "A" * 16, "C" * 17]
    codes, offsets = _concat(records)
    spare = rng.integers(0, 2, size=len(records))  # rows may be longer than needed
    words = np.array([(len(r) + 15) // 16 for r in records]) + spare
    word_off = np.concatenate([[0], np.cumsum(words)]).astype(np.int64)
    packed, nmask = pack_rows(backend, codes, offsets, word_off)
    packed, nmask = backend.to_host(packed).tolist(), backend.to_host(nmask).tolist()
    for i, r in enumerate(records):
        row = encode_dna(r).tolist() + [0] * (16 * int(words[i]) - len(r))
        ref_packed, ref_mask = reference.pack_2bit(row)
        assert packed[word_off[i] : word_off[i + 1]] == ref_packed, i
        assert nmask[word_off[i] : word_off[i + 1]] == ref_mask, i


def test_pack_layout_first_base_high(backend):
    packed, nmask = pack_2bit(backend, encode_dna("T" + "A" * 14 + "G"))
    assert backend.to_host(packed).tolist() == [0xC0000002]
    assert backend.to_host(nmask).tolist() == [0]


def test_unpack_rejects_short_input(backend):
    with pytest.raises(OptionError):
        unpack_2bit(backend, np.zeros(1, np.uint32), np.zeros(1, np.uint32), 17)


@pytest.mark.parametrize("seed", range(4))
def test_reverse_complement_matches_reference(backend, seed):
    rng = np.random.default_rng(seed)
    records = reference.random_records(rng, 60, 90)
    codes, offsets = _concat(records)
    out = backend.to_host(reverse_complement(backend, codes, offsets))
    expected = "".join(reference.reverse_complement(r) for r in records)
    assert decode_dna(out) == expected


def test_reverse_complement_twice_is_identity(backend):
    codes, offsets = _concat(["ACGTN", "", "G", "TTAC"])
    once = reverse_complement(backend, codes, offsets)
    assert decode_dna(backend.to_host(once)) == "NACGT" + "C" + "GTAA"
    assert backend.to_host(reverse_complement(backend, once, offsets)).tolist() == codes.tolist()


@pytest.mark.parametrize("w", [1, 5, 12, 15])
def test_wgram_codes_match_reference(backend, w):
    rng = np.random.default_rng(w)
    records = reference.random_records(rng, 40, 50, n_rate=0.02)
    codes, offsets = _concat(records)
    out = backend.to_host(wgram_codes(backend, codes, offsets, w))
    assert out.tolist() == reference.wgram_codes(records, w)


def test_wgram_codes_never_cross_records(backend):
    codes, offsets = _concat(["ACG", "TAC"])
    out = backend.to_host(wgram_codes(backend, codes, offsets, 3)).tolist()
    assert out == [0b000110, WGRAM_INVALID, WGRAM_INVALID, 0b110001, WGRAM_INVALID, WGRAM_INVALID]


@pytest.mark.parametrize("w", [0, 16])
def test_wgram_length_is_checked(w):
    from gseek import get_backend

    with pytest.raises(OptionError, match="1..15"):
        wgram_codes(get_backend("cpu"), encode_dna("ACGT"), np.array([0, 4]), w)


def test_offsets_are_checked():
    from gseek import get_backend

    with pytest.raises(OptionError, match="offsets"):
        reverse_complement(get_backend("cpu"), encode_dna("ACGT"), np.array([0, 3]))


@pytest.mark.gpu
def test_gpu_equals_cpu_on_a_large_input():
    """Byte-identical results across backends on a multi-block input."""
    from conftest import make_backend

    rng = np.random.default_rng(7)
    codes = rng.integers(0, 5, size=1_000_003, dtype=np.uint8)
    offsets = np.unique(np.concatenate([[0, codes.size], rng.integers(0, codes.size, 5000)])).astype(np.int64)
    cpu, gpu = make_backend("cpu-2"), make_backend("gpu")
    for fn, args in [
        (pack_2bit, (codes,)),
        (reverse_complement, (codes, offsets)),
        (wgram_codes, (codes, offsets, 12)),
    ]:
        a, b = fn(cpu, *args), fn(gpu, *args)
        a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
        for x, y in zip(a, b):
            assert np.array_equal(cpu.to_host(x), gpu.to_host(y)), fn.__name__


def test_cuda_source_packs_as_the_numba_twin_on_the_host(tmp_path):
    from host_cuda import build

    from gseek.backend import CpuBackend
    from gseek.kernels import seqpack

    host, cpu = build(tmp_path, [seqpack]), CpuBackend(1)
    rng = np.random.default_rng(9)
    records = reference.random_records(rng, 40, 70) + ["", "N" * 17]
    codes, offsets = _concat(records)
    words = np.array([(len(r) + 15) // 16 for r in records]) + rng.integers(0, 2, len(records))
    word_off = np.concatenate([[0], np.cumsum(words)]).astype(np.int64)
    (hp, hm), (cp, cm) = pack_2bit(host, codes), pack_2bit(cpu, codes)
    assert hp.tolist() == cp.tolist() and hm.tolist() == cm.tolist()
    (hp, hm), (cp, cm) = pack_rows(host, codes, offsets, word_off), pack_rows(cpu, codes, offsets, word_off)
    assert hp.tolist() == cp.tolist() and hm.tolist() == cm.tolist() and hm.any()
    assert decode_dna(reverse_complement(host, codes, offsets)) == decode_dna(reverse_complement(cpu, codes, offsets))
