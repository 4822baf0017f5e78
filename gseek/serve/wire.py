"""A search's result sent from the service to :class:`~gseek.serve.client.Client`, as the local API's type.

BLAST: a :class:`~gseek.blast.hits.BlastHits` (below). Mapping: a
:class:`~gseek.mapper.MappingResult` (the request's ``format: "mapping"``): its arrays, the reads
(every array of their :class:`~gseek.seqio.SequenceBatch`), the contigs' names and offsets and the
reference text each hit covers (:func:`mapping_to_bytes`); the client's result reads those windows
where the local one reads the whole text (``MD``, ``cigar_eq_str``, ``to_pandas()``).

The request's ``format: "hits"``: the HSPs' arrays, the queries (names, lengths, codes) and of each
subject hit its name, its length and its text from the first to the last base any HSP covers, in
one NumPy ``.npz`` (no pickles: :func:`numpy.load` with ``allow_pickle=False``). The client's
:class:`~gseek.blast.hits.BlastHits` formats every ``-outfmt 6`` field (``qseq``, ``sseq`` and
``btop`` included) as the service's does, so ``to_pandas()`` / ``to_arrow()`` give the local API's
tables. Its subjects are numbered anew, from 0, in the order of their first number (their
``subject_names`` are those hit, not the database's).

Both ends import NumPy (the client only when a search returns hits).
"""

from __future__ import annotations

import io
import json
from typing import Any

__all__ = ["hits_from_bytes", "hits_to_bytes", "mapping_from_bytes", "mapping_to_bytes"]

#: The format's version (``meta["version"]``): a client refuses another.
VERSION = 1


def hits_to_bytes(hits: Any) -> bytes:
    """``hits`` (one search's, against the whole database text) as the ``hits`` format's bytes."""
    import numpy as np

    a = hits.arrays
    used, subject = np.unique(np.asarray(a["subject"], np.int64), return_inverse=True)
    lo = np.full(used.size, np.iinfo(np.int64).max, np.int64)
    hi = np.zeros(used.size, np.int64)
    np.minimum.at(lo, subject, np.asarray(a["s_start"], np.int64))
    np.maximum.at(hi, subject, np.asarray(a["s_end"], np.int64))
    windows = [hits.subject_codes(int(lo[i]), int(hi[i]), int(s)) for i, s in enumerate(used)]
    window_off = np.zeros(used.size + 1, np.int64)
    np.cumsum([w.size for w in windows], out=window_off[1:])
    meta = {"version": VERSION, "query_names": list(hits.query_names),
            "subject_names": [hits.subject_names[int(s)] for s in used]}
    parts = {f"a.{k}": np.asarray(v) for k, v in a.items()}
    parts["a.subject"] = subject.astype(a["subject"].dtype)
    out = io.BytesIO()
    np.savez_compressed(out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                        query_lengths=np.asarray(hits.query_lengths), query_codes=np.asarray(hits._query_codes),
                        query_offsets=np.asarray(hits._query_offsets),
                        subject_lengths=np.asarray(hits.subject_lengths)[used], window_start=lo,
                        window_codes=np.concatenate(windows) if windows else np.zeros(0, np.uint8),
                        window_offsets=window_off, **parts)
    return out.getvalue()


def _packed(codes: Any) -> tuple[Any, Any]:
    """Base codes 0..4 as :class:`~gseek.index.text.ReferenceText` holds them: 2-bit words (16 bases
    a word, the first in the high bits) and the runs of N (code 4) as ``(k, 2)`` [start, end)."""
    import numpy as np

    padded = np.zeros(-(-codes.size // 16) * 16, np.uint32)
    padded[:codes.size] = codes & 3
    shifts = np.arange(30, -1, -2, dtype=np.uint32)
    words = np.bitwise_or.reduce(padded.reshape(-1, 16) << shifts, axis=1).astype(np.uint32)
    n = np.concatenate([[False], codes == 4, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(n))
    return words, edges.reshape(-1, 2).astype(np.int64)


def _load(data: bytes, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The arrays and the ``meta`` of a format's bytes, refused where its version is not this one's."""
    import numpy as np

    from gseek.errors import GseekError

    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        f = {k: z[k] for k in z.files}
    meta = json.loads(f["meta"].tobytes())
    if meta.get("version") != VERSION:
        raise GseekError(f"the service sent {what} of format version {meta.get('version')}; this client reads "
                         f"{VERSION} (use the same gseek at both ends)")
    return f, meta


def hits_from_bytes(data: bytes) -> Any:
    """The :class:`~gseek.blast.hits.BlastHits` of the ``hits`` format's bytes."""
    import numpy as np

    from gseek.blast.hits import BlastHits
    from gseek.index.text import ReferenceText

    f, meta = _load(data, "hits")
    texts = []
    for i, name in enumerate(meta["subject_names"]):
        start, codes = int(f["window_start"][i]), f["window_codes"][f["window_offsets"][i]:f["window_offsets"][i + 1]]
        words, runs = _packed(codes)
        # the window [start, start + len) of subject i: its offsets make subject coordinates index it
        texts.append(ReferenceText(words, runs, (name,), np.array([-start, codes.size], np.int64), first_contig=i))
    arrays = {k[2:]: f[k] for k in f if k.startswith("a.")}
    return BlastHits(arrays, list(meta["query_names"]), f["query_lengths"], tuple(meta["subject_names"]),
                     f["subject_lengths"], f["query_codes"], f["query_offsets"], tuple(texts))


#: The :class:`~gseek.seqio.SequenceBatch` arrays sent with a mapping result (``quals`` where FASTQ).
_BATCH_ARRAYS = ("codes", "offsets", "names", "name_offsets", "descriptions", "description_offsets", "soft_mask",
                 "lines")


def _result_arrays() -> list[str]:
    import dataclasses

    from gseek.mapper import MappingResult

    return [f.name for f in dataclasses.fields(MappingResult) if f.type == "np.ndarray"]


def mapping_to_bytes(result: Any, path: str) -> bytes:
    """``result`` (:meth:`Mapper.map <gseek.mapper.Mapper.map>` of a batch) as the ``mapping`` format's
    bytes; ``path``: its reads' file as the client named it (the batch's ``path``)."""
    import numpy as np

    batch, ref = result.batch, result.reference
    contig_offsets = np.asarray(ref.contig_offsets, np.int64)
    start = contig_offsets[np.asarray(result.contig, np.int64)] + np.asarray(result.pos, np.int64)
    lengths = np.diff(np.asarray(batch.offsets, np.int64))[np.asarray(result.read, np.int64)]
    order = np.argsort(start, kind="stable")
    lo, hi = start[order], (start + lengths)[order]
    hi = np.maximum.accumulate(hi) if hi.size else hi
    new = np.ones(lo.size, bool)
    new[1:] = lo[1:] > hi[:-1]  # a window a run of overlapping hits
    first = np.flatnonzero(new)
    w_start, w_end = lo[first], np.append(hi[first[1:] - 1], hi[-1:]) if first.size else hi[:0]
    windows = [ref.bases(int(a), int(b)) for a, b in zip(w_start, w_end)]
    meta = {"version": VERSION, "contig_names": list(ref.contig_names), "path": path, "format": batch.format,
            "alphabet": batch.alphabet, "first_record": int(batch.first_record)}
    parts = {f"r.{k}": np.asarray(getattr(result, k)) for k in _result_arrays()}
    parts.update({f"b.{k}": np.asarray(getattr(batch, k)) for k in _BATCH_ARRAYS})
    if batch.quals is not None:
        parts["b.quals"] = np.asarray(batch.quals)
    out = io.BytesIO()
    np.savez_compressed(out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), contig_offsets=contig_offsets,
                        window_start=w_start, window_end=w_end,
                        window_codes=np.concatenate(windows) if windows else np.zeros(0, np.uint8), **parts)
    return out.getvalue()


class CoveredText:
    """The reference text where a mapping result's hits lie (what its views read of a
    :class:`~gseek.index.text.ReferenceText`: ``contig_names``, ``contig_offsets``, ``bases``,
    ``bases_at``), from windows of it; a position outside them raises :class:`IndexError`."""

    def __init__(self, contig_names: tuple[str, ...], contig_offsets: Any, start: Any, end: Any, codes: Any) -> None:
        import numpy as np

        self.contig_names, self.contig_offsets = contig_names, contig_offsets
        self._start, self._end, self._codes = start, end, codes
        self._at = np.zeros(start.size + 1, np.int64)
        np.cumsum(end - start, out=self._at[1:])

    def bases_at(self, g: Any) -> Any:
        import numpy as np

        g = np.asarray(g, np.int64)
        w = np.searchsorted(self._start, g, side="right") - 1
        if g.size and ((w < 0).any() or (g >= self._end[np.maximum(w, 0)]).any()):
            raise IndexError("reference position outside the text the service sent")
        return self._codes[self._at[w] + g - self._start[w]]

    def bases(self, start: int, end: int) -> Any:
        import numpy as np

        return self.bases_at(np.arange(int(start), int(end), dtype=np.int64))


def mapping_from_bytes(data: bytes) -> Any:
    """The :class:`~gseek.mapper.MappingResult` of the ``mapping`` format's bytes."""
    import numpy as np

    from gseek.mapper import MappingResult
    from gseek.mapper.result import ReadNames
    from gseek.seqio import SequenceBatch

    f, meta = _load(data, "a mapping")
    batch = SequenceBatch(path=meta["path"], format=meta["format"], alphabet=meta["alphabet"],
                          quals=f.get("b.quals"), first_record=meta["first_record"],
                          **{k: f[f"b.{k}"] for k in _BATCH_ARRAYS})
    reference = CoveredText(tuple(meta["contig_names"]), f["contig_offsets"], f["window_start"], f["window_end"],
                            f["window_codes"])
    return MappingResult(names=ReadNames(batch.names, batch.name_offsets), contig_names=reference.contig_names,
                         batch=batch, reference=reference, **{k[2:]: f[k] for k in f if k.startswith("r.")})
