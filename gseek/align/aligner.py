"""The pairwise aligner: :class:`PairAligner` (pairs, all-vs-all, query-vs-database) over the DP stages.

>>> a = PairAligner(mode="semiglobal", free_ends=("target_start", "target_end"), device="cpu")
>>> a.align("ACGT", "TTACGTTT").score
8
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, get_backend, numba_guard
from gseek.dp import (
    WALK_FIELDS,
    DNA_LETTERS,
    DPWorkspace,
    Scoring,
    identity_score_bound,
    score_pairs,
    traceback_pairs,
)
from gseek.errors import OptionError
from gseek.output.cigar import CigarStrings, cigar_strings
from gseek.seqio import SequenceBatch, read_fastx

from .options import AlignOptions
from .results import Alignment, AlignmentResults

__all__ = ["PairAligner", "EncodedSet", "encode_set", "read_pair_list", "default_traceback_memory", "triangle"]


class EncodedSet:
    """Sequences of one side, encoded: codes, offsets, lengths, names."""

    def __init__(self, codes, offsets, names):
        self.codes, self.offsets, self.names = codes, offsets, names
        self.lengths = np.diff(offsets).astype(np.int32)

    def __len__(self) -> int:
        return len(self.names)


def encode_set(seqs: Any, scoring: Scoring, prefix: str) -> EncodedSet:
    """One side of a DP job: a sequence (``str`` or ``bytes``: one), a list or dict
    (name -> sequence) of them, a :class:`~gseek.seqio.SequenceBatch`, or a FASTA/FASTQ
    file given as a :class:`pathlib.Path` (or any ``os.PathLike``; a ``str`` is a sequence)."""
    if isinstance(seqs, (str, bytes)):
        seqs = [seqs]
    elif isinstance(seqs, os.PathLike):
        seqs = read_fastx(seqs, alphabet="protein" if scoring.matrix else "dna")
    if isinstance(seqs, SequenceBatch):
        names = seqs.name_list()
        if seqs.alphabet == "dna":
            if scoring.is_dna:
                codes = seqs.codes.astype(np.uint8, copy=False)
            else:
                text = np.frombuffer(DNA_LETTERS.encode(), np.uint8)[seqs.codes]
                codes = _lookup(scoring, text, seqs.offsets, names)
        else:
            codes = _lookup(scoring, seqs.codes, seqs.offsets, names)
        offsets = np.asarray(seqs.offsets, np.int64)
    else:
        if isinstance(seqs, dict):
            names, texts = list(seqs), list(seqs.values())
        else:
            texts = list(seqs)
            names = [f"{prefix}{i}" for i in range(len(texts))]
        raw, offsets = ragged.encode_strings(texts, "latin-1")
        codes = _lookup(scoring, raw, offsets, names)
    lengths = np.diff(offsets)
    if lengths.size and (lengths == 0).any():
        raise OptionError(f"sequence {names[int(np.argmax(lengths == 0))]!r} is empty")
    return EncodedSet(np.ascontiguousarray(codes), offsets, names)


def read_pair_list(path: str | os.PathLike, query_names: list[str],
                   target_names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(query index, target index) of each ``query<TAB>target`` line of ``path``.

    Blank lines and ``#`` comments are skipped; an unknown name or a short
    line raises :class:`~gseek.errors.OptionError` naming ``path:line``.
    """
    q_at = {n: i for i, n in enumerate(query_names)}
    t_at = {n: i for i, n in enumerate(target_names)}
    qi, ti = [], []
    with open(path) as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) < 2:
                raise OptionError(f"{path}:{line_no}: expected 'query<TAB>target'")
            if fields[0] not in q_at or fields[1] not in t_at:
                missing = fields[0] if fields[0] not in q_at else fields[1]
                raise OptionError(f"{path}:{line_no}: no sequence named {missing!r}")
            qi.append(q_at[fields[0]])
            ti.append(t_at[fields[1]])
    return np.array(qi, np.int64), np.array(ti, np.int64)


def _lookup(scoring: Scoring, raw: np.ndarray, offsets: np.ndarray, names: list[str]) -> np.ndarray:
    codes = scoring.lookup[raw]
    bad = codes == 255
    if bad.any():
        pos = int(np.argmax(bad))
        rec = int(np.searchsorted(offsets, pos, side="right") - 1)
        raise OptionError(f"sequence {names[rec]!r}: residue {chr(raw[pos])!r} at position {pos - offsets[rec] + 1} "
                          f"is not in the alphabet of {scoring._what()} ({scoring.alphabet})")
    return codes


class PairAligner:
    """Batched NW / SW / semiglobal aligner; one configured object per job.

    Arguments (keyword only; unknown names raise :class:`OptionError`):
        mode: ``global``, ``local`` or ``semiglobal``.
        scoring: a preset name (:data:`SCORING_PRESETS`: dna, megablast, edit,
            blosum62, blosum50) or a :class:`Scoring`; ``match``, ``mismatch``,
            ``gap_open``, ``gap_extend``, ``matrix``, ``n_score`` override it.
        traceback: also report start cells, CIGAR, identity, gaps.
        free_ends: semiglobal only: which overhangs are free, any of
            ``query_start``, ``query_end``, ``target_start``, ``target_end``
            (default all four, parasail's ``sg``).
        min_score, min_identity: lazy trace-back (LazyRScan): score every
            pair, trace back only pairs that can pass, keep pairs that pass.
        cigar_m: write ``M`` instead of ``=``/``X``.
        outfmt: None (gseek TSV), ``"6"`` or ``"6 COLUMNS..."``; columns
            that need the trace-back (pident, cigar, qstart, ...) turn it on.
        options: the options above as one :class:`~gseek.align.options.AlignOptions`
            (checked where made), instead of keywords.
        device, threads: the backend (``auto``, ``cpu``, ``gpu``, ``gpu:N`` or a
            :class:`~gseek.backend.Backend`), chosen now; CPU threads.
        batch_pairs, traceback_memory: pairs per scoring batch; bytes of
            trace-back matrices per batch (default: 256 MiB on the CPU, 40%
            of the free device memory on a GPU, so that enough long pairs
            are in flight to fill the device).

    >>> a = PairAligner(mode="semiglobal", free_ends=("target_start", "target_end"), device="cpu")
    >>> a.align("ACGT", "TTACGTTT").score
    8
    >>> PairAligner(colour="red")
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: unknown PairAligner option 'colour' (known: ...)
    """

    def __init__(
        self,
        *,
        options: AlignOptions | None = None,
        mode: str = "global",
        scoring: str | Scoring = "dna",
        match: int | None = None,
        mismatch: int | None = None,
        gap_open: int | None = None,
        gap_extend: int | None = None,
        matrix: str | None = None,
        n_score: int | None = None,
        traceback: bool = False,
        free_ends: str | tuple[str, ...] | None = None,
        min_score: int | None = None,
        min_identity: float | None = None,
        cigar_m: bool = False,
        outfmt: str | None = None,
        device: str | Backend = "auto",
        threads: int | None = None,
        batch_pairs: int = 1 << 16,
        traceback_memory: int | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            known = sorted(p for p in inspect.signature(PairAligner).parameters if p != "unknown")
            raise OptionError(f"unknown PairAligner option {next(iter(unknown))!r} (known: {', '.join(known)})")
        fields = dict(mode=mode, scoring=scoring, match=match, mismatch=mismatch, gap_open=gap_open,
                      gap_extend=gap_extend, matrix=matrix, n_score=n_score, traceback=traceback, free_ends=free_ends,
                      min_score=min_score, min_identity=min_identity, cigar_m=cigar_m, outfmt=outfmt)
        defaults = {p.name: p.default for p in inspect.signature(PairAligner).parameters.values()}
        if options is None:  # the keywords made into the value, checked once here
            options = AlignOptions(**fields)
        elif any(v != defaults[k] for k, v in fields.items()):
            raise OptionError("give the DP options as options=AlignOptions(...) or as keywords, not both")
        elif not isinstance(options, AlignOptions):
            raise OptionError(f"expected an AlignOptions, not {type(options).__name__}")
        #: The options, whole (:class:`~gseek.align.options.AlignOptions`).
        self.options = options
        running = dict(device=device, batch_pairs=batch_pairs, traceback_memory=traceback_memory)
        self._shown = {**options.changed(), **{k: v for k, v in running.items() if v != defaults[k]}}
        opts = dict(running, threads=threads)
        self.mode: str = options.mode
        self.scoring = options.resolved_scoring()
        self.free_ends = options.free_end_names()
        self.flags = options.flags()
        self.min_score = options.min_score
        self.min_identity = options.min_identity
        self.lazy = options.lazy
        self.traceback = options.traceback_on()
        self.cigar_m = bool(options.cigar_m)
        self.columns = options.columns()
        self.batch_pairs = int(opts["batch_pairs"])
        given_memory = opts["traceback_memory"]
        self.traceback_memory = 1 if given_memory is None else int(given_memory)
        if self.batch_pairs < 1 or self.traceback_memory < 1:
            raise OptionError("batch_pairs and traceback_memory must be >= 1")
        self.backend: Backend = get_backend(opts["device"], threads=opts["threads"])
        if opts["traceback_memory"] is None:
            self.traceback_memory = default_traceback_memory(self.backend)
        self.workspace = DPWorkspace(self.backend)

    def __repr__(self) -> str:
        shown = dict(self._shown)
        if "device" in shown:
            shown["device"] = self.backend.name
        return "PairAligner(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    # -- front doors

    def align(self, query: str, target: str) -> Alignment:
        """Align one pair; the row view of a one-pair result.

        >>> PairAligner(device="cpu", traceback=True).align("ACGT", "AGT").cigar
        '1=1I2='
        """
        results = self._run(encode_set([query], self.scoring, "q"), encode_set([target], self.scoring, "t"),
                            np.zeros(1, np.int64), np.zeros(1, np.int64), lazy=False)
        return results[0]

    def align_pairs(self, queries: Any, targets: Any) -> AlignmentResults:
        """Align ``queries[i]`` with ``targets[i]`` for every i."""
        q = encode_set(queries, self.scoring, "q")
        t = encode_set(targets, self.scoring, "t")
        if len(q) != len(t):
            raise OptionError(f"align_pairs needs as many queries as targets ({len(q)} != {len(t)})")
        idx = np.arange(len(q), dtype=np.int64)
        return self._concat(q, t, self.iter_pairs(q, t, idx, idx))

    def all_vs_all(self, seqs: Any) -> AlignmentResults:
        """Align every pair ``i < j`` of ``seqs`` (query i, target j)."""
        s = encode_set(seqs, self.scoring, "s")
        return self._concat(s, s, self.iter_all_vs_all(s))

    def query_vs_database(self, queries: Any, database: Any) -> AlignmentResults:
        """Align every query with every database sequence."""
        q = encode_set(queries, self.scoring, "q")
        t = encode_set(database, self.scoring, "t")
        return self._concat(q, t, self.iter_query_vs_database(q, t))

    # -- streaming

    # ``progress``: called with the number of pairs of each chunk once it is
    # aligned (a lazy chunk can keep fewer rows than it aligned).

    def iter_all_vs_all(self, seqs: Any, progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream :meth:`all_vs_all` in chunks of at most ``batch_pairs`` pairs."""
        s = self._encoded(seqs, "s")
        n = len(s)
        total = n * (n - 1) // 2
        for start in range(0, total, self.batch_pairs):
            k = np.arange(start, min(total, start + self.batch_pairs), dtype=np.int64)
            i, j = triangle(k, n)
            yield from self.iter_pairs(s, s, i, j, progress)

    def iter_query_vs_database(self, queries: Any, database: Any,
                               progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream :meth:`query_vs_database` in chunks."""
        q, t = self._encoded(queries, "q"), self._encoded(database, "t")
        total = len(q) * len(t)
        for start in range(0, total, self.batch_pairs):
            k = np.arange(start, min(total, start + self.batch_pairs), dtype=np.int64)
            yield from self.iter_pairs(q, t, k // len(t), k % len(t), progress)

    def iter_pair_list(self, queries: Any, targets: Any, path: str | os.PathLike,
                       progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream the pairs named in ``path`` (``query<TAB>target`` lines) in chunks."""
        q, t = self._encoded(queries, "q"), self._encoded(targets, "t")
        qi, ti = read_pair_list(path, q.names, t.names)
        yield from self.iter_pairs(q, t, qi, ti, progress)

    def iter_pairs(self, queries: Any, targets: Any, query_index: np.ndarray, target_index: np.ndarray,
                   progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream the pairs ``(queries[query_index[k]], targets[target_index[k]])`` in chunks."""
        q, t = self._encoded(queries, "q"), self._encoded(targets, "t")
        qi = np.asarray(query_index, dtype=np.int64)
        ti = np.asarray(target_index, dtype=np.int64)
        for start in range(0, qi.size, self.batch_pairs):
            sl = slice(start, start + self.batch_pairs)
            chunk = self._run(q, t, qi[sl], ti[sl], lazy=self.lazy)
            if progress is not None:
                progress(qi[sl].size)
            yield chunk

    def _encoded(self, seqs: Any, prefix: str) -> EncodedSet:
        return seqs if isinstance(seqs, EncodedSet) else encode_set(seqs, self.scoring, prefix)

    def _concat(self, q: EncodedSet, t: EncodedSet, parts: Iterable[AlignmentResults]) -> AlignmentResults:
        parts = list(parts)
        if not parts:
            empty = np.zeros(0, np.int32)
            return self._results(q, t, np.zeros(0, np.int64), np.zeros(0, np.int64),
                                 {"score": empty, "q_end": empty, "t_end": empty}, None)
        if len(parts) == 1:
            return parts[0]
        fields = {}
        for f in dataclasses.fields(AlignmentResults):
            values = [getattr(p, f.name) for p in parts]
            if isinstance(values[0], np.ndarray):
                fields[f.name] = np.concatenate(values)
            elif f.name == "cigars" and values[0] is not None:
                fields[f.name] = CigarStrings.concat(values)
            else:
                fields[f.name] = values[0]
        return AlignmentResults(**fields)

    def _run(self, q: EncodedSet, t: EncodedSet, qi: np.ndarray, ti: np.ndarray, lazy: bool) -> AlignmentResults:
        backend = self.backend
        # both sides' residues on the device once for all the chunks of q against t
        codes = self.workspace.resident("codes", (q, t), lambda: _joined(q, t))
        t_shift = 0 if q is t else int(q.codes.size)
        q_off, q_len = q.offsets[qi], q.lengths[qi]
        t_off, t_len = t.offsets[ti] + t_shift, t.lengths[ti]
        if not self.traceback and not lazy:
            res = score_pairs(backend, codes, q_off, q_len, t_off, t_len, self.scoring, self.flags, self.workspace)
            return self._results(q, t, qi, ti, res, None)
        if lazy:
            res = score_pairs(backend, codes, q_off, q_len, t_off, t_len, self.scoring, self.flags, self.workspace)
            keep = np.ones(qi.size, bool)
            if self.min_score is not None:
                keep &= res["score"] >= self.min_score
            if self.min_identity is not None:
                keep &= res["score"] >= identity_score_bound(self.min_identity, q_len, t_len, self.mode,
                                                             self.scoring)
            if not self.traceback:
                return self._results(q, t, qi, ti, res, None).take(keep)
            qi, ti, q_off, q_len, t_off, t_len = (a[keep] for a in (qi, ti, q_off, q_len, t_off, t_len))
        res = traceback_pairs(backend, codes, q_off, q_len, t_off, t_len, self.scoring, self.flags,
                              self.traceback_memory, self.workspace)
        results = self._results(q, t, qi, ti, res, res)
        if self.min_identity is not None:
            results = results.take(results.identity >= float(self.min_identity) - 1e-12)
        return results

    def _results(self, q, t, qi, ti, res, tb) -> AlignmentResults:
        extra: dict[str, Any] = {}
        if tb is not None:
            extra = {k: tb[k] for k in WALK_FIELDS}
            with numba_guard():  # a parallel Numba pass, maybe beside other threads' (device workers)
                extra["cigars"] = cigar_strings(tb["cigar"], tb["cigar_offsets"], self.cigar_m)
        return AlignmentResults(
            query_names=q.names, target_names=t.names, query=qi, target=ti, score=res["score"],
            q_end=res["q_end"], t_end=res["t_end"], q_len=q.lengths[qi], t_len=t.lengths[ti],
            columns=self.columns, **extra)


def default_traceback_memory(backend: Backend) -> int:
    """Trace-back bytes per batch: on the CPU 256 MiB, or 64 MiB a thread where
    more (each thread holds one SIMD lane group's trace-back, 36 MB for pairs of
    1.5 kb: ``gseek.dp.traceback_pairs``); on a GPU 40% of the free device
    memory (one thread per pair: a 1.5 kb pair needs 1.1 MB of trace-back, and
    the device needs tens of thousands of pairs in flight).

    >>> from gseek.backend import CpuBackend
    >>> default_traceback_memory(CpuBackend(threads=2)) >> 20, default_traceback_memory(CpuBackend(threads=1)) >> 20
    (256, 256)
    """
    if backend.name != "gpu":
        return max(256 << 20, (64 << 20) * backend.threads)
    with backend.device:
        free, _ = backend.cupy.cuda.runtime.memGetInfo()
    return max(256 << 20, int(0.4 * free))


def _joined(q: EncodedSet, t: EncodedSet) -> np.ndarray:
    """One residue array holding both sides, the queries first (one upload for both)."""
    return q.codes if q is t else np.concatenate([q.codes, t.codes])


def triangle(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with i < j of the k-th pair in row-major order of the upper triangle.

    >>> [x.tolist() for x in triangle(np.arange(6), 4)]
    [[0, 0, 0, 1, 1, 2], [1, 2, 3, 2, 3, 3]]
    """
    # Row i starts at i*n - i*(i+1)/2; solve for i with floating point, then fix.
    kf = k.astype(np.float64)
    i = np.floor(((2 * n - 1) - np.sqrt((2 * n - 1) ** 2 - 8 * kf)) / 2).astype(np.int64)
    row_start = i * n - i * (i + 1) // 2
    over = row_start > k
    i[over] -= 1
    row_start = i * n - i * (i + 1) // 2
    nxt = (i + 1) * n - (i + 1) * (i + 2) // 2
    under = k >= nxt
    i[under] += 1
    row_start = i * n - i * (i + 1) // 2
    j = k - row_start + i + 1
    return i, j
