"""Sequence encoding stages: 2-bit packing, reverse complement, w-gram codes.

Each stage takes a :class:`~gseek.Backend` and arrays, returns arrays on that
backend's device, and runs the ``seqpack`` kernel family (CUDA on the GPU,
its Numba twin on the CPU) with identical results.

>>> import numpy as np
>>> from gseek import get_backend
>>> from gseek.alphabet import encode_dna, decode_dna
>>> cpu = get_backend("cpu", threads=1)
>>> codes = encode_dna("ACGTNACGTACGTACGTA")
>>> packed, nmask = pack_2bit(cpu, codes)
>>> [hex(x) for x in packed], [hex(x) for x in nmask]
(['0x1b06c6c6', '0xc0000000'], ['0xc00000', '0x0'])
>>> decode_dna(unpack_2bit(cpu, packed, nmask, codes.size))
'ACGTNACGTACGTACGTA'
>>> offsets = np.array([0, 5, 18])
>>> decode_dna(reverse_complement(cpu, codes, offsets))
'NACGTTACGTACGTACGT'
>>> wgram_codes(cpu, encode_dna("ACGT"), np.array([0, 4]), 2).tolist()
[1, 6, 11, 4294967295]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek.kernels import seqpack

from .backend import Backend, on_device
from .errors import OptionError

__all__ = ["pack_2bit", "pack_rows", "unpack_2bit", "reverse_complement", "wgram_codes", "WGRAM_INVALID"]

WGRAM_INVALID = int(seqpack.WGRAM_INVALID)


@on_device
def pack_2bit(backend: Backend, codes: Any) -> tuple[Any, Any]:
    """Pack codes 0..4 into 16-bases-per-uint32 words and an N mask of the same layout."""
    codes = backend.asarray(codes, dtype=np.uint8)
    n = int(codes.size)
    n_words = (n + 15) // 16
    packed = backend.xp.empty(n_words, dtype=np.uint32)
    nmask = backend.xp.empty(n_words, dtype=np.uint32)
    backend.launch(seqpack, "pack_2bit", n_words, codes, np.int64(n), packed, nmask)
    return packed, nmask


@on_device
def pack_rows(backend: Backend, codes: Any, offsets: Any, word_offsets: Any) -> tuple[Any, Any]:
    """Pack every record into its own row of whole words (and N mask), rows at ``word_offsets``.

    Record ``i`` (``codes[offsets[i]:offsets[i+1]]``) fills words
    ``word_offsets[i]:word_offsets[i+1]``, which must hold it (at least
    ``ceil(length / 16)`` words); the rest of its row packs as A with a clear
    N mask. Arrays already on ``backend``'s device are used in place (no checks
    that need a copy back to the host).
    """
    codes = backend.asarray(codes, dtype=np.uint8)
    offsets = backend.asarray(offsets, dtype=np.int64)
    word_offsets = backend.asarray(word_offsets, dtype=np.int64)
    n_records = int(offsets.size) - 1
    n_words = int(word_offsets[-1])
    packed = backend.xp.empty(n_words, dtype=np.uint32)
    nmask = backend.xp.empty(n_words, dtype=np.uint32)
    backend.launch(seqpack, "pack_rows", n_words, codes, offsets, word_offsets, np.int64(n_records), packed, nmask)
    return packed, nmask


@on_device
def unpack_2bit(backend: Backend, packed: Any, nmask: Any, n: int) -> Any:
    """Inverse of :func:`pack_2bit`: the first ``n`` codes (N restored as 4)."""
    packed = backend.asarray(packed, dtype=np.uint32)
    nmask = backend.asarray(nmask, dtype=np.uint32)
    if packed.size * 16 < n or nmask.size != packed.size:
        raise OptionError(f"packed arrays hold {packed.size * 16} bases, fewer than n={n}")
    codes = backend.xp.empty(n, dtype=np.uint8)
    backend.launch(seqpack, "unpack_2bit", n, packed, nmask, np.int64(n), codes)
    return codes


def _offsets(backend: Backend, codes: Any, offsets: Any) -> Any:
    host = np.asarray(backend.to_host(offsets), dtype=np.int64)
    if host.ndim != 1 or host.size < 1 or host[0] != 0 or host[-1] != codes.size or (np.diff(host) < 0).any():
        raise OptionError("offsets must start at 0, never decrease, and end at len(codes)")
    return backend.asarray(host)


@on_device
def reverse_complement(backend: Backend, codes: Any, offsets: Any, *, check: bool = True) -> Any:
    """Reverse-complement every record ``codes[offsets[i]:offsets[i+1]]`` (N stays N).

    ``check=False``: ``offsets`` are known to be valid device ``int64`` offsets
    (a stage's own), so they are not copied to the host to be checked.
    """
    codes = backend.asarray(codes, dtype=np.uint8)
    offsets = _offsets(backend, codes, offsets) if check else backend.asarray(offsets, dtype=np.int64)
    out = backend.xp.empty_like(codes)
    backend.launch(seqpack, "reverse_complement", codes.size, codes, offsets, np.int64(offsets.size - 1), out)
    return out


@on_device
def wgram_codes(backend: Backend, codes: Any, offsets: Any, w: int) -> Any:
    """Code of the w-mer starting at every position (2 bits a base, first base high).

    Windows that hold an N or run past their record's end get
    :data:`WGRAM_INVALID`. ``w`` is 1..15.
    """
    if not 1 <= int(w) <= seqpack.WGRAM_MAX:
        raise OptionError(f"w-gram length must be 1..{seqpack.WGRAM_MAX}, not {w}")
    codes = backend.asarray(codes, dtype=np.uint8)
    offsets = _offsets(backend, codes, offsets)
    out = backend.xp.empty(codes.size, dtype=np.uint32)
    backend.launch(
        seqpack, "wgram_codes", codes.size, codes, offsets, np.int64(offsets.size - 1), np.int32(w), out
    )
    return out
