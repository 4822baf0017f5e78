"""Build the FM-index arrays from DNA records (CPU: pydivsufsort + Numba).

The steps, each a function of arrays (``docs/index-format.md`` has the
layouts):

1. :func:`check_records` -- every record non-empty, names unique, at least
   one A/C/G/T in the file.
2. :func:`segments` -- the maximal N-free runs of every contig. The text that
   is suffix-sorted is ``$ seg0 $ seg1 $ ... $ segM-1 $``: every contig
   boundary and every N run becomes one separator ``$``, smaller than the
   bases, so no match can touch an N or span two contigs.
3. :func:`suffix_array` (libdivsufsort), then the BWT, the sorted dollar rows,
   the C array and the interleaved Occ blocks (:func:`occ_blocks`).
4. :func:`sample_sa` -- marks and samples of rows whose SA value is a multiple
   of ``sa_sample`` (text-position sampling: a locate walk takes at most
   ``sa_sample - 1`` LF steps).
5. :func:`wgram_table` -- the SA interval of every w-mer.

>>> import numpy as np
>>> from gseek.alphabet import encode_dna
>>> codes = encode_dna("ACNNGT" + "TTA")
>>> starts, lengths, contigs = segments(codes, np.array([0, 6, 9]))
>>> starts.tolist(), lengths.tolist(), contigs.tolist()
([0, 4, 6], [2, 2, 3], [0, 0, 1])
>>> text, text_starts = separator_text(codes, starts, lengths)
>>> "".join("ACGT$"[c] for c in text), text_starts.tolist()
('$AC$GT$TTA$', [1, 4, 7, 11])
"""

from __future__ import annotations

import numba
import numpy as np

from gseek import ragged
from gseek.backend import CpuBackend
from gseek.encode import pack_2bit
from gseek.errors import FastxError, OptionError
from gseek.kernels import fmindex as kernels
from gseek.kernels._jit import njit
from gseek.seqio import SequenceBatch, mask_runs

from .format import DEFAULT_SA_SAMPLE
from .search import FmArrays, extend_intervals

__all__ = [
    "SEPARATOR",
    "DEFAULT_SA_SAMPLE",
    "DEFAULT_WGRAM",
    "auto_wgram",
    "check_records",
    "check_reference_names",
    "segments",
    "separator_text",
    "suffix_array",
    "bwt_from_sa",
    "occ_blocks",
    "sample_sa",
    "wgram_table",
    "ambiguous_runs",
    "build_arrays",
]

#: Code of the separator in the index text (bases are 0..3, as everywhere).
SEPARATOR = 4
#: The longest w-gram table built by default (128 MiB with 32-bit positions): references of 4^12 =
#: 16.8 M bases or more get it; shorter ones a table of at most one entry a base (:func:`auto_wgram`).
DEFAULT_WGRAM = 12
#: Intervals extended per call while building the w-gram table.
_WGRAM_CHUNK = 1 << 18
#: Texts of this length or more need 64-bit positions.
POS32_LIMIT = 1 << 32


#: Bytes a SAM reference name (RNAME, ``@SQ SN``) may hold, SAM 1.6's grammar
#: ``[0-9A-Za-z!#$%&+./:;?@^_|~-][0-9A-Za-z!#$%&*+./:;=?@^_|~-]*``: printable ASCII but
#: ``\ , " ' ` ( ) [ ] { } < >``; the first may not be ``*`` or ``=`` either.
_RNAME_OK = np.zeros(256, dtype=bool)
_RNAME_OK[0x21:0x7F] = True
_RNAME_OK[np.frombuffer(b'\\,"\'`()[]{}<>', np.uint8)] = False
_RNAME_FIRST_OK = _RNAME_OK.copy()
_RNAME_FIRST_OK[np.frombuffer(b"*=", np.uint8)] = False


def check_records(batch: SequenceBatch) -> None:
    """Raise :class:`~gseek.errors.FastxError` unless the records can be indexed:
    at least one record, none empty, unique names that SAM's RNAME grammar
    allows (a read placed on a contig named ``*`` would read as unmapped), some A/C/G/T.

    >>> import os, tempfile
    >>> from gseek.seqio import read_fastx
    >>> path = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> _ = open(path, "w").write(">chr1\\nACGT\\n>=chr2\\nACGT\\n")
    >>> check_records(read_fastx(path))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gseek.errors.FastxError: .../ref.fa:3: record name '=chr2' is no SAM reference name (RNAME: ...
    """
    if len(batch) == 0:
        raise FastxError(batch.path, None, "no FASTA records (empty file)")
    check_reference_names(batch)
    empty = np.flatnonzero(batch.lengths == 0)
    if empty.size:
        i = int(empty[0])
        raise FastxError(batch.path, int(batch.lines[i]), f"record {batch.name(i)!r} has no sequence")
    first_line: dict[str, int] = {}
    for i, name in enumerate(batch.name_list()):
        if name in first_line:
            raise FastxError(
                batch.path,
                int(batch.lines[i]),
                f"duplicate record name {name!r} (first at line {first_line[name]})",
            )
        first_line[name] = int(batch.lines[i])
    if not (batch.codes < 4).any():
        raise FastxError(batch.path, None, "no A/C/G/T base in any record (only N/ambiguous)")


def check_reference_names(batch: SequenceBatch) -> None:
    """Refuse the first record whose name SAM's RNAME grammar forbids (:data:`_RNAME_OK`):
    :class:`~gseek.errors.FastxError` naming the file, the record's line and its name.
    One pass over the name bytes."""
    names = np.asarray(batch.names, dtype=np.uint8)
    offsets = np.asarray(batch.name_offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    bad = ~_RNAME_OK[names]
    starts = offsets[:-1][lengths > 0]
    bad[starts] = ~_RNAME_FIRST_OK[names[starts]]
    records = set(np.flatnonzero(lengths == 0).tolist())
    if bad.any():
        records.add(int(np.searchsorted(offsets, int(np.argmax(bad)), side="right")) - 1)
    if not records:
        return
    i = min(records)
    shown = batch.name(i) if lengths[i] else ""
    raise FastxError(batch.path, int(batch.lines[i]),
                     f"record name {shown!r} is no SAM reference name (RNAME: 1 or more printable ASCII "
                     "characters, none of \\ , \" ' ` ( ) [ ] { } < >, the first not * or =); rename the record")


def segments(codes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of bases (codes 0..3) inside each record.

    Returns ``(ref_start, length, contig)``: start in concatenated record
    coordinates, length, and record index of every segment, in text order.
    """
    runs = mask_runs(codes < 4, offsets)
    starts, ends = runs[:, 0].copy(), runs[:, 1].copy()
    contig = (np.searchsorted(offsets, starts, side="right") - 1).astype(np.int32)
    return starts, ends - starts, contig


def ambiguous_runs(codes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Runs ``[start, end)`` of ambiguous bases (code 4), split at record offsets."""
    return mask_runs(codes > 3, offsets)


@njit(parallel=True, cache=True)
def _fill_text(codes, ref_start, lengths, text_start, text):
    for k in numba.prange(ref_start.size):
        for j in range(lengths[k]):
            text[text_start[k] + j] = codes[ref_start[k] + j]


def separator_text(codes: np.ndarray, ref_start: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The text ``$ seg0 $ seg1 $ ... $`` (codes 0..3, separator 4) and the
    text start of every segment, with the text length appended."""
    text_start = _text_starts(lengths)
    text = np.full(int(text_start[-1]), SEPARATOR, dtype=np.uint8)
    _fill_text(codes, ref_start, lengths, text_start[:-1], text)
    return text, text_start


def suffix_array(text: np.ndarray, *, force64: bool = False) -> np.ndarray:
    """Suffix array of a separator text (separator sorts before A).

    libdivsufsort through pydivsufsort: int32 up to 2^31 - 1 characters, int64
    above (or when ``force64``).
    """
    import pydivsufsort

    order = np.array([1, 2, 3, 4, 0], dtype=np.uint8)  # A..T -> 1..4, $ -> 0
    return pydivsufsort.divsufsort(order[text], force64=force64)


@njit(parallel=True, cache=True)
def _bwt(text, sa, out):
    n = sa.size
    for i in numba.prange(n):
        p = np.int64(sa[i])
        out[i] = text[p - 1] if p > 0 else text[n - 1]


def bwt_from_sa(text: np.ndarray, sa: np.ndarray) -> np.ndarray:
    """BWT codes: ``text[SA[i] - 1]`` (cyclic), separator = 4."""
    out = np.empty(sa.size, dtype=np.uint8)
    _bwt(text, sa, out)
    return out


@njit(parallel=True, cache=True)
def _block_counts(bwt, interval, counts):
    n = bwt.size
    for b in numba.prange(counts.shape[0]):
        for i in range(b * interval, min(n, (b + 1) * interval)):
            counts[b, bwt[i]] += 1


def occ_blocks(bwt: np.ndarray, *, wide: bool, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Interleaved Occ blocks and the dollar rows (with the sentinel ``n``).

    ``bwt`` holds codes 0..3 and 4 for a separator; its separators are
    overwritten with the A placeholder. Returns ``occ``
    (uint32, shape (blocks, 16)) and ``dollar_rows`` (uint32 or int64).
    """
    n = bwt.size
    interval = kernels.OCC_INTERVAL_64 if wide else kernels.OCC_INTERVAL_32
    header = 8 if wide else 4
    n_blocks = n // interval + 1
    counts = np.zeros((n_blocks, 5), dtype=np.int64)
    _block_counts(bwt, interval, counts)
    before = np.zeros((n_blocks, 4), dtype=np.int64)
    np.cumsum(counts[:-1, :4], axis=0, out=before[1:])
    dollars = np.flatnonzero(bwt == SEPARATOR)
    bwt[dollars] = 0  # the placeholder (in place: the caller's BWT is spent)
    words, _ = pack_2bit(CpuBackend(threads), bwt)
    base_words = kernels.BLOCK_WORDS - header
    occ = np.zeros((n_blocks, kernels.BLOCK_WORDS), dtype=np.uint32)
    flat = np.zeros(n_blocks * base_words, dtype=np.uint32)
    flat[: words.size] = words
    occ[:, header:] = flat.reshape(n_blocks, base_words)
    if wide:
        occ[:, 0:8:2] = before & 0xFFFFFFFF
        occ[:, 1:8:2] = before >> 32
    else:
        occ[:, :4] = before
    pos_dtype = np.int64 if wide else np.uint32
    dollar_rows = np.append(dollars, n).astype(pos_dtype)
    return occ, dollar_rows


def c_array(text: np.ndarray) -> np.ndarray:
    """C[c]: characters of the text smaller than base c (separators included); C[4] = n."""
    return _c_from_counts(_symbol_counts(text, 5))


def _text_starts(lengths: np.ndarray) -> np.ndarray:
    """The text start of every segment of ``$ seg0 $ seg1 $ ... $``, the text length appended."""
    text_start = np.empty(lengths.size + 1, dtype=np.int64)
    text_start[0] = 1
    np.cumsum(lengths + 1, out=text_start[1:])
    text_start[1:] += 1
    return text_start


def _symbol_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """How many of ``codes`` (uint8) equal 0, 1, ..., k - 1: one pass each with a byte-wide
    temporary (``np.bincount`` would widen the whole array to 8 bytes a code first)."""
    return np.array([np.count_nonzero(codes == c) for c in range(k)], dtype=np.int64)


def _c_from_counts(counts: np.ndarray) -> np.ndarray:
    return np.array([counts[4], *(counts[4] + np.cumsum(counts[:4]))], dtype=np.int64)


def _text_layout(ref_start: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`separator_text` and :func:`c_array` give of the text, without building it (a
    text-only index needs only these): the text start of every segment with the length appended,
    and C (the segments hold every base 0..3 of ``codes``; the rest of the text is separators)."""
    text_start = _text_starts(lengths)
    n = int(text_start[-1])
    counts = _symbol_counts(codes, 4)
    return text_start, _c_from_counts(np.append(counts, n - int(counts.sum())))


@njit(parallel=True, cache=True)
def _mark_multiples(sa, rate, marked):
    for i in numba.prange(sa.size):
        marked[i] = sa[i] % rate == 0


def sample_sa(sa: np.ndarray, rate: int, *, wide: bool) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose SA value is a multiple of ``rate``: the mark blocks and the samples.

    Returns ``sa_mark`` (uint32, shape (blocks, 16)) and ``sa_samples``
    (uint32 or int64, the SA values of marked rows in row order).
    """
    n = sa.size
    rows = kernels.MARK_ROWS_64 if wide else kernels.MARK_ROWS_32
    header = 2 if wide else 1
    n_blocks = n // rows + 1
    marked = np.zeros(n_blocks * rows, dtype=bool)
    _mark_multiples(sa, rate, marked)
    pos_dtype = np.int64 if wide else np.uint32
    samples = sa[marked[:n]].astype(pos_dtype)
    per_block = marked.reshape(n_blocks, rows).sum(axis=1, dtype=np.int64)
    before = ragged.offsets(per_block[:-1])
    bits = np.packbits(marked, bitorder="little").view("<u4").astype(np.uint32)
    sa_mark = np.zeros((n_blocks, kernels.BLOCK_WORDS), dtype=np.uint32)
    sa_mark[:, header:] = bits.reshape(n_blocks, rows // 32)
    sa_mark[:, 0] = before & 0xFFFFFFFF
    if wide:
        sa_mark[:, 1] = before >> 32
    return sa_mark, samples


def wgram_table(
    occ: np.ndarray, dollar_rows: np.ndarray, C: np.ndarray, w: int, *, wide: bool, threads: int | None = None
) -> np.ndarray:
    """SA interval [lo, hi) of every w-mer (code: 2 bits a base, first base
    high); [0, 0) for a w-mer that does not occur. Shape (4**w, 2).

    Built from the FM-index itself, one backward-search step per level for
    all 4**k k-mers at once (``extend_intervals``): no array of the text's
    size is needed.
    """
    if not 1 <= w <= kernels.WGRAM_MAX:
        raise OptionError(f"w-gram length must be 1..{kernels.WGRAM_MAX}, not {w}")
    cpu = CpuBackend(threads)
    fm = FmArrays.upload(cpu, {"occ": occ, "dollar_rows": dollar_rows}, list(C), wide)
    table = np.empty((4**w, 2), dtype=np.int64 if wide else np.uint32)
    lo, hi = np.zeros(1, dtype=np.int64), np.array([C[4]], dtype=np.int64)
    for level in range(1, w + 1):
        n = lo.size
        if level == w:
            out_lo, out_hi = table[:, 0], table[:, 1]
        else:
            out_lo, out_hi = np.empty(4 * n, dtype=np.int64), np.empty(4 * n, dtype=np.int64)
        for x0 in range(0, n, _WGRAM_CHUNK):  # bounded temporaries on the last level
            x1 = min(n, x0 + _WGRAM_CHUNK)
            a, b = extend_intervals(cpu, fm, lo[x0:x1], hi[x0:x1])
            m = x1 - x0
            for c in range(4):
                out_lo[c * n + x0 : c * n + x1] = a[c * m : (c + 1) * m]
                out_hi[c * n + x0 : c * n + x1] = b[c * m : (c + 1) * m]
        lo, hi = out_lo, out_hi
    return table


def auto_wgram(bases: int) -> int:
    """The default w-gram width for a reference of ``bases`` bases: the largest ``w`` with ``4**w <=
    bases``, from 1 to :data:`DEFAULT_WGRAM`. The table then has at most one entry a base (8 bytes,
    32-bit positions), where the w-mers of the text fill it; a wider one is mostly empty entries
    (the 48.5 kb lambda at ``w = 12``: 128 MiB, 2,767 bytes a base). It only skips the first ``w``
    steps of backward search, so any width gives the same results.

    >>> auto_wgram(48_502), auto_wgram(4_641_652), auto_wgram(3_100_000_000), auto_wgram(3)
    (7, 11, 12, 1)
    """
    w = 1
    while w < DEFAULT_WGRAM and 4 ** (w + 1) <= bases:
        w += 1
    return w


def build_arrays(
    batch: SequenceBatch,
    *,
    sa_sample: int = DEFAULT_SA_SAMPLE,
    wgram: int = DEFAULT_WGRAM,
    pos64: bool | None = None,
    threads: int | None = None,
    progress: bool = False,
    text_only: bool = False,
) -> tuple[dict[str, np.ndarray], dict]:
    """Every part of the index from DNA records; returns ``(arrays, meta)``.

    ``text_only``: only the contig and segment tables and the packed text with its N runs
    (what the BLAST-style search reads): no suffix array, BWT, Occ, SA samples or w-gram table.

    ``meta`` holds the C array, the position width and the statistics that go
    into the header. ``pos64=None`` picks 64-bit positions only when the text
    has 2^32 characters or more; ``True`` forces them (for tests).
    """
    if int(sa_sample) < 1:
        raise OptionError(f"sa_sample must be >= 1, not {sa_sample}")
    if not 0 <= int(wgram) <= kernels.WGRAM_MAX:
        raise OptionError(f"wgram must be 0 (no table) or 1..{kernels.WGRAM_MAX}, not {wgram}")
    check_records(batch)
    cpu = CpuBackend(threads)
    numba.set_num_threads(cpu.threads)
    steps = ["segments", "packed text"] if text_only else \
        ["segments", "suffix array", "BWT + Occ", "sampled SA", "w-gram table", "packed text"]
    bar = _progress(steps, progress)

    codes, offsets = batch.codes, batch.offsets
    ref_start, lengths, contig = segments(codes, offsets)
    if text_only:  # the layout and C only: the text itself is for the suffix array
        text_start, C = _text_layout(ref_start, lengths, codes)
        n = int(text_start[-1])
    else:
        text, text_start = separator_text(codes, ref_start, lengths)
        n = text.size
        C = c_array(text)
    wide = n >= POS32_LIMIT if pos64 is None else bool(pos64)
    if n >= POS32_LIMIT and not wide:
        raise OptionError(f"a text of {n} characters needs 64-bit positions (pos64=True)")
    bar.step()

    arrays: dict[str, np.ndarray] = {}
    if not text_only:
        sa = suffix_array(text, force64=wide)
        bar.step()

        bwt = bwt_from_sa(text, sa)
        occ, dollar_rows = occ_blocks(bwt, wide=wide, threads=cpu.threads)
        del bwt
        bar.step()

        sa_mark, sa_samples = sample_sa(sa, int(sa_sample), wide=wide)
        del sa
        bar.step()

        if wgram:
            arrays["wgram"] = wgram_table(occ, dollar_rows, C, int(wgram), wide=wide, threads=cpu.threads)
        bar.step()
        arrays.update(occ=occ, dollar_rows=dollar_rows, sa_mark=sa_mark, sa_samples=sa_samples)

    packed, _ = pack_2bit(cpu, codes)
    names = np.array(batch.names, dtype=np.uint8)
    arrays.update(
        contig_offsets=np.asarray(offsets, dtype=np.int64),
        contig_names=names,
        contig_name_offsets=np.asarray(batch.name_offsets, dtype=np.int64),
        seg_text_start=text_start,
        seg_ref_start=ref_start,
        seg_contig=contig,
        text=packed,
        amb_runs=ambiguous_runs(codes, offsets),
    )
    bar.step()
    bar.close()
    meta = {
        "C": C.tolist(),
        "pos64": wide,
        "text_length": int(n),
        "contigs": len(batch),
        "bases": int(codes.size),
        "ambiguous": int((codes > 3).sum()),
        "segments": int(ref_start.size),
    }
    return arrays, meta


class _progress:
    """A tqdm bar over the build steps (a no-op unless asked for)."""

    def __init__(self, steps: list[str], enabled: bool) -> None:
        self.steps = steps
        self.i = 0
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(steps), desc="gseek index", unit="step")
            self.bar.set_postfix_str(steps[0])

    def step(self) -> None:
        self.i += 1
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(self.steps[self.i] if self.i < len(self.steps) else "done")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
