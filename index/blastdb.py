"""BLAST+ nucleotide databases read directly: volumes (``.nin``/``.nsq``/``.nhr``), alias files (``.nal``),
converted on first use into a text-only gseek index (cached) that the BLAST-style search scans.

The format, as ``makeblastdb`` 2.12 writes it (versions 4 and 5; NCBI's ``seqdbfile.cpp``, ``seqdbvol.cpp``
and the BlastDB format notes), integers big-endian unless said:

* ``.nin``: version (4 or 5), sequence type (0 nucleotide, 1 protein), [v5: volume number], title
  (int32 length + bytes), [v5: the LMDB file's name], creation date (padded with NULs to 8 bytes),
  sequence count N, total bases (**8 bytes little-endian**), longest sequence, then three int32
  arrays of N + 1: header offsets into ``.nhr``, sequence offsets and ambiguity offsets into ``.nsq``.
* ``.nsq``: a NUL byte, then per sequence its bases 2 bits each, 4 a byte, first base in the high
  bits (A C G T = 0 1 2 3); the last byte's low 2 bits count the bases in it (0-3), so the length is
  4 * (bytes - 1) + that count. The ambiguity data follows (from the ambiguity offset to the next
  sequence): a count word (high bit: the *new* format), then per run either one word (residue 4
  bits, length - 1 4 bits, position 24 bits) or, new, two (residue 4 bits, length - 1 12 bits at
  bits 16-27; then the position). Under a run the 2-bit bases are random; gseek reads every
  ambiguity residue as N.
* ``.nhr``: per sequence a BER ``Blast-def-line-set`` (:mod:`gseek.index.blastdb_defline`).
* ``.nal``: text lines ``DBLIST`` (volumes or other databases, relative to the alias file),
  ``TITLE``, ``NSEQ``, ``LENGTH``; the subset keys (``OIDLIST``, ``GILIST``, ...) are refused.
  A multi-volume database is an alias of ``NAME.00``, ``NAME.01``, ...

>>> find_blastdb("/nonexistent/db") is None
True
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from gseek.backend import CpuBackend
from gseek.errors import IndexFormatError
from gseek.kernels._jit import njit

from . import format as _format
from .blastdb_defline import DeflineError, FurtherDefline, SubjectId

__all__ = ["BlastDb", "Volume", "find_blastdb", "read_volume", "convert_blastdb", "open_blastdb", "read_subject_ids",
           "write_subject_ids", "SUBJECTS_FILE"]

#: Versions of the ``.nin`` layout read here.
VERSIONS = (4, 5)
#: Alias keys that select a subset of the databases listed (not supported: the search would be of another set).
SUBSET_KEYS = ("OIDLIST", "GILIST", "TILIST", "SEQIDLIST", "TAXIDLIST", "MEMB_BIT", "FIRST_OID", "LAST_OID")
#: The converted index's file of subject names as blastn prints them (with -parse_seqids).
SUBJECTS_FILE = "blastdb_subjects.json"
#: Bumped when the conversion changes: an older cache is converted again.
CONVERSION_VERSION = 2
#: Text words a thread of the conversion fills at a time.
_WORDS_A_TASK = 1 << 16


@dataclass
class Volume:
    """One database volume's index: its path (without extension), title, the offset arrays and lengths."""

    path: str
    version: int
    title: str
    n_seqs: int
    total: int
    hdr: np.ndarray
    seq: np.ndarray
    amb: np.ndarray
    lengths: np.ndarray


@dataclass
class BlastDb:
    """A database as named: its volumes in order, the alias files read, and the title."""

    name: str
    volumes: list[str]
    aliases: list[str]
    title: str


def _candidates(name: str) -> list[Path]:
    """Where ``name`` may be: as given, then (a bare relative name) under each ``$BLASTDB`` folder."""
    out = [Path(name)]
    if not os.path.isabs(name):
        for d in os.environ.get("BLASTDB", "").split(os.pathsep):
            if d:
                out.append(Path(d) / name)
    return out


def find_blastdb(name: str | os.PathLike) -> BlastDb | None:
    """The BLAST nucleotide database ``name`` (a volume or an alias, as blastn's ``-db`` takes it), or None
    when there is none. A protein database, or an alias file that cannot be followed, raises
    :class:`~gseek.errors.IndexFormatError` naming the file."""
    name = os.fspath(name)
    for base in _candidates(name):
        if Path(f"{base}.nal").is_file() or Path(f"{base}.nin").is_file():
            volumes: list[str] = []
            aliases: list[str] = []
            title = _collect(str(base), volumes, aliases, [])
            return BlastDb(str(base), volumes, aliases, title)
    for base in _candidates(name):
        for ext in ("pal", "pin"):
            if Path(f"{base}.{ext}").is_file():
                raise IndexFormatError(f"{base}.{ext}", "a protein BLAST database; gseek searches nucleotide "
                                                        "databases (.nin/.nal)")
    return None


def _collect(base: str, volumes: list[str], aliases: list[str], stack: list[str]) -> str:
    """Add the volumes of ``base`` (an alias, followed, or a volume) to ``volumes``; its title."""
    alias = f"{base}.nal"
    if not Path(alias).is_file():
        if not Path(f"{base}.nin").is_file():
            raise IndexFormatError(f"{base}.nin", "no such BLAST database volume (listed in "
                                                  f"{stack[-1] if stack else 'the command'})")
        volumes.append(base)
        return ""
    if os.path.abspath(alias) in stack:
        raise IndexFormatError(alias, "alias files list each other in a loop")
    aliases.append(alias)
    keys: dict[str, str] = {}
    try:
        with open(alias, encoding="latin-1") as fh:
            for line in fh:
                words = line.strip().split(None, 1)
                if words and not words[0].startswith("#"):
                    keys[words[0].upper()] = words[1] if len(words) > 1 else ""
    except OSError as err:
        raise IndexFormatError(alias, f"cannot read: {err.strerror}") from None
    subset = [k for k in SUBSET_KEYS if k in keys]
    if subset:
        raise IndexFormatError(alias, f"{subset[0]} (a subset of the databases listed) is not supported by gseek")
    if not keys.get("DBLIST", "").strip():
        raise IndexFormatError(alias, "an alias file without a DBLIST line")
    folder = os.path.dirname(alias)
    for entry in shlex.split(keys["DBLIST"]):
        path = entry if os.path.isabs(entry) else os.path.join(folder, entry)
        _collect(path, volumes, aliases, stack + [os.path.abspath(alias)])
    return keys.get("TITLE", "")


# ---------------------------------------------------------------------------- one volume


class _Reader:
    """Big-endian fields of a ``.nin`` file, each read checked against the file's end."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path, self.data, self.pos = path, data, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise IndexFormatError(self.path, f"truncated index file ({len(self.data)} bytes; ends inside the {what})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int32(self, what: str) -> int:
        return int.from_bytes(self.take(4, what), "big", signed=True)

    def string(self, what: str) -> str:
        return self.take(self.int32(what + "'s length"), what).decode("latin-1")

    def array(self, n: int, what: str) -> np.ndarray:
        return np.frombuffer(self.take(4 * n, what), ">u4").astype(np.int64)


def read_volume(base: str) -> Volume:
    """The ``.nin`` of volume ``base`` read and checked against its ``.nsq`` and ``.nhr`` (sizes, offsets,
    lengths); anything wrong raises :class:`~gseek.errors.IndexFormatError` naming the file."""
    nin = f"{base}.nin"
    try:
        data = Path(nin).read_bytes()
    except OSError as err:
        raise IndexFormatError(nin, f"cannot read: {err.strerror}") from None
    r = _Reader(nin, data)
    raw = r.take(4, "format version")
    version = int.from_bytes(raw, "big")
    if version not in VERSIONS:
        if int.from_bytes(raw, "little") in VERSIONS:
            raise IndexFormatError(nin, "written in the other byte order (little-endian); BLAST databases are "
                                        "big-endian: rebuild it with makeblastdb")
        raise IndexFormatError(nin, f"BLAST database format version {version}; gseek reads versions 4 and 5")
    kind = r.int32("sequence type")
    if kind == 1:
        raise IndexFormatError(nin, "a protein BLAST database; gseek searches nucleotide databases")
    if kind != 0:
        raise IndexFormatError(nin, f"unknown sequence type {kind} (0 nucleotide, 1 protein)")
    if version == 5:
        r.int32("volume number")
    title = r.string("title")
    if version == 5:
        r.string("LMDB file name")
    r.string("date")
    n = r.int32("sequence count")
    if n < 0:
        raise IndexFormatError(nin, f"negative sequence count {n}")
    total = int.from_bytes(r.take(8, "total length"), "little")
    r.int32("longest sequence")
    hdr = r.array(n + 1, "header offsets")
    seq = r.array(n + 1, "sequence offsets")
    amb = r.array(n + 1, "ambiguity offsets")
    nsq_size = _size(f"{base}.nsq")
    nhr_size = _size(f"{base}.nhr")
    if n and (np.any(np.diff(hdr) < 0) or hdr[-1] > nhr_size):
        raise IndexFormatError(f"{base}.nhr", f"truncated or replaced header file ({nhr_size} bytes; the index "
                                              f"says {int(hdr[-1])})")
    if n and (seq[-1] > nsq_size or np.any(amb[:-1] > seq[1:])):
        raise IndexFormatError(f"{base}.nsq", f"truncated or replaced sequence file ({nsq_size} bytes; the "
                                              f"index says {int(seq[-1])})")
    if n and np.any(amb[:-1] - seq[:-1] < 1):
        raise IndexFormatError(nin, "corrupt sequence offsets (a sequence without its length byte)")
    lengths = np.zeros(n, np.int64)
    if n:
        nsq = np.memmap(f"{base}.nsq", np.uint8, "r")
        lengths = 4 * (amb[:-1] - seq[:-1] - 1) + (nsq[amb[:-1] - 1] & 3)
    if int(lengths.sum()) != total:
        raise IndexFormatError(nin, f"total length {total} differs from its sequences' {int(lengths.sum())}")
    return Volume(base, version, title, n, total, hdr, seq, amb, lengths)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError as err:
        raise IndexFormatError(path, f"cannot read: {err.strerror}") from None


def _ambiguity_runs(vol: Volume, nsq: np.ndarray) -> np.ndarray:
    """The volume's ambiguity runs ``[start, end)`` in its concatenated sequences (merged where adjacent)."""
    have = np.flatnonzero(vol.seq[1:] - vol.amb[:-1] >= 4)
    if have.size == 0:
        return np.zeros((0, 2), np.int64)
    starts, stops = vol.amb[:-1][have], vol.seq[1:][have]
    if np.any((stops - starts) % 4):
        raise IndexFormatError(f"{vol.path}.nsq", "corrupt ambiguity data (not whole words)")
    counts = (stops - starts) // 4
    first = np.r_[0, np.cumsum(counts)[:-1]]
    idx = np.repeat(starts, counts) + 4 * (np.arange(int(counts.sum())) - np.repeat(first, counts))
    words = nsq[(idx[:, None] + np.arange(4)).ravel()].reshape(-1, 4).astype(np.uint32)
    words = (words[:, 0] << 24) | (words[:, 1] << 16) | (words[:, 2] << 8) | words[:, 3]
    head = words[first]
    new = (head & 0x80000000) != 0
    per = np.where(new, 2, 1)
    n_runs = (head & 0x7FFFFFFF).astype(np.int64) // per  # the count is of words, two a run in the new format
    if np.any(n_runs * per + 1 > counts):
        raise IndexFormatError(f"{vol.path}.nsq", "corrupt ambiguity data (more runs than words)")
    seq_of = np.repeat(np.arange(have.size), n_runs)
    k = np.arange(int(n_runs.sum())) - np.repeat(np.r_[0, np.cumsum(n_runs)[:-1]], n_runs)
    w = first[seq_of] + 1 + k * per[seq_of]
    is_new = new[seq_of]
    entry = words[w]
    length = np.where(is_new, (entry >> 16) & 0xFFF, (entry >> 24) & 0xF).astype(np.int64) + 1
    pos = np.where(is_new, words[np.minimum(w + 1, words.size - 1)], entry & 0xFFFFFF).astype(np.int64)
    seq_ids = have[seq_of]
    seq_len = vol.lengths[seq_ids]
    if np.any(pos + length > seq_len):
        raise IndexFormatError(f"{vol.path}.nsq", "corrupt ambiguity data (a run past its sequence's end)")
    base = np.r_[0, np.cumsum(vol.lengths)][seq_ids]
    runs = np.stack([base + pos, base + pos + length], axis=1)
    runs = runs[np.lexsort((runs[:, 1], runs[:, 0]))]
    # merge overlapping or adjacent runs of one sequence (runs never cross sequences: clipped above)
    seq_sorted = np.searchsorted(np.r_[0, np.cumsum(vol.lengths)], runs[:, 0], side="right")
    new_group = np.r_[True, (runs[1:, 0] > np.maximum.accumulate(runs[:-1, 1])) | (seq_sorted[1:] != seq_sorted[:-1])]
    group = np.cumsum(new_group) - 1
    out = np.zeros((int(group[-1]) + 1, 2), np.int64)
    out[:, 0] = runs[new_group, 0]
    np.maximum.at(out[:, 1], group, runs[:, 1])
    return out


@njit(cache=True, nogil=True)
def _popcount(x):
    """Set bits of a uint32."""
    x = x - ((x >> np.uint32(1)) & np.uint32(0x55555555))
    x = (x & np.uint32(0x33333333)) + ((x >> np.uint32(2)) & np.uint32(0x33333333))
    x = (x + (x >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
    byte = np.uint32(0xFF)
    return int((x & byte) + ((x >> np.uint32(8)) & byte) + ((x >> np.uint32(16)) & byte) + (x >> np.uint32(24)))


@njit(parallel=True, cache=True, nogil=True)
def _nsq_to_text(nsq, seq_start, base_offsets, text, counts):
    """OR the 2-bit bases of one volume into the packed ``text`` (``pack_2bit``'s layout: 16 a word, first
    in bits 31-30): base ``p`` (global) of sequence ``s`` (``base_offsets[s] <= p < base_offsets[s + 1]``) is
    the 2-bit field ``(p - base_offsets[s]) % 4`` (from the high bits) of ``.nsq`` byte ``seq_start[s] +
    (p - base_offsets[s]) // 4``. Words a task apart run in parallel; a word shared with another volume
    gets only this volume's bases (ORed in). ``counts[task, code]``: bases of each code."""
    first, last = base_offsets[0], base_offsets[-1]
    w_first, w_last = first // 16, (last + 15) // 16
    n_tasks = (w_last - w_first + _WORDS_A_TASK - 1) // _WORDS_A_TASK
    for t in numba.prange(n_tasks):
        w0 = w_first + t * _WORDS_A_TASK
        w1 = min(w_last, w0 + _WORDS_A_TASK)
        p = max(first, w0 * 16)
        s = np.searchsorted(base_offsets, p, side="right") - 1
        for w in range(w0, w1):
            p = w * 16
            if first <= p and p + 16 <= last:
                while p >= base_offsets[s + 1]:
                    s += 1
                if p + 16 <= base_offsets[s + 1]:  # the word inside one sequence: 5 bytes, shifted
                    q = p - base_offsets[s]
                    b = seq_start[s] + (q >> 2)
                    wide = np.uint64(0)
                    for j in range(5):
                        wide = (wide << np.uint64(8)) | np.uint64(nsq[b + j] if b + j < nsq.size else 0)
                    word = np.uint32((wide >> np.uint64(8 - 2 * (q & 3))) & np.uint64(0xFFFFFFFF))
                    others = 0
                    for c in range(1, 4):  # bases of code c: the 2-bit fields equal to c
                        x = word ^ np.uint32(c * 0x55555555)
                        n = _popcount(~(x | (x >> np.uint32(1))) & np.uint32(0x55555555))
                        counts[t, c] += n
                        others += n
                    counts[t, 0] += 16 - others
                    text[w] |= word
                    continue
            word = np.uint32(0)
            for k in range(16):
                p = w * 16 + k
                code = 0
                if first <= p < last:
                    while p >= base_offsets[s + 1]:
                        s += 1
                    q = p - base_offsets[s]
                    code = (nsq[seq_start[s] + (q >> 2)] >> (6 - 2 * (q & 3))) & 3
                    counts[t, code] += 1
                word = (word << np.uint32(2)) | np.uint32(code)
            text[w] |= word


@njit(cache=True, nogil=True)
def _clear_runs(text, runs, counts):
    """Set the bases under the ambiguity ``runs`` to A (the N mask says N), removing them from ``counts``."""
    for r in range(runs.shape[0]):
        for p in range(runs[r, 0], runs[r, 1]):
            shift = 30 - 2 * (p & 15)
            code = (text[p >> 4] >> shift) & 3
            counts[code] -= 1
            text[p >> 4] &= ~(np.uint32(3) << np.uint32(shift))


# ---------------------------------------------------------------------------- conversion


def convert_blastdb(db: BlastDb, dest: str | os.PathLike) -> Path:
    """Convert ``db`` into a text-only gseek index at ``dest`` (``docs/index-format.md``): the volumes'
    sequences in order as contigs, ambiguity runs as N, names as blastn prints them; with parsed ids
    (``-parse_seqids``) also :data:`SUBJECTS_FILE`. Vectorised: no Python loop per base or run."""
    from gseek.kernels import fmindex as kernels

    vols = [read_volume(v) for v in db.volumes]
    lengths = np.concatenate([v.lengths for v in vols]) if vols else np.zeros(0, np.int64)
    if lengths.size == 0:
        raise IndexFormatError(db.name, "a BLAST database without sequences")
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    total = int(offsets[-1])
    text = np.zeros((total + 15) // 16, np.uint32)
    counts = np.zeros(5, np.int64)
    runs_all, ids = [], []
    parsed = False
    seq_base = 0
    numba.set_num_threads(CpuBackend(None).threads)
    for vol in vols:
        nsq = np.memmap(f"{vol.path}.nsq", np.uint8, "r") if vol.n_seqs else np.zeros(1, np.uint8)
        runs = _ambiguity_runs(vol, nsq) + int(offsets[seq_base])
        if vol.n_seqs:
            tasks = np.zeros(((vol.lengths.sum() + 31) // (16 * _WORDS_A_TASK) + 2, 4), np.int64)
            _nsq_to_text(nsq, vol.seq[:-1].astype(np.int64), offsets[seq_base:seq_base + vol.n_seqs + 1], text, tasks)
            vol_counts = tasks.sum(axis=0)
            _clear_runs(text, runs, vol_counts)
            counts[:4] += vol_counts
            counts[4] += int((runs[:, 1] - runs[:, 0]).sum())
        runs_all.append(runs)
        if vol.n_seqs:
            error = ""
            with open(f"{vol.path}.nhr", "rb") as fh:
                nhr = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                # the .nhr scan's 17 Numba functions, imported when a database is converted (a search of a
                # gseek index, or of a database converted before, decorates none of them)
                from .blastdb_scan import volume_subject_ids

                vol_ids = volume_subject_ids(nhr, vol.hdr)
            except DeflineError as err:  # raised once the mmap is let go (its traceback holds views of it)
                error = str(err)
            finally:
                try:
                    nhr.close()
                except BufferError:  # a view of it still alive (a first, compiling call's): closed when collected
                    pass
                del nhr
            if error:
                raise IndexFormatError(f"{vol.path}.nhr", error)
            ids.extend(vol_ids)
            parsed = parsed or any(sid.parsed for sid in vol_ids)
        seq_base += vol.n_seqs
    runs = np.concatenate(runs_all) if runs_all else np.zeros((0, 2), np.int64)
    # the name's first word is what blastn prints as the subject id; the rest its title
    names = [sid.seqid if sid.title == "N/A" else sid.title if not sid.parsed else f"{sid.seqid} {sid.title}"
             for sid in ids]
    arrays = _contig_arrays(offsets, runs, names)
    arrays["text"] = text
    seg_len = arrays["seg_text_start"]
    n_text = int(seg_len[-1])
    C = np.array([n_text - int(counts[:4].sum()), *(n_text - int(counts[:4].sum()) + np.cumsum(counts[:4]))],
                 np.int64)
    wide = n_text >= (1 << 32)
    header = {
        "source": db.name,
        "parameters": {"sa_sample": 16, "wgram": 0, "pos64": wide,
                       "occ_interval": kernels.OCC_INTERVAL_64 if wide else kernels.OCC_INTERVAL_32,
                       "mark_rows": kernels.MARK_ROWS_64 if wide else kernels.MARK_ROWS_32},
        "C": C.tolist(),
        "stats": {"contigs": int(lengths.size), "bases": total, "ambiguous": int(counts[4]),
                  "segments": int(arrays["seg_ref_start"].size), "text_length": n_text},
        "groups": ["contigs", "text"],
        "blastdb": {"conversion": CONVERSION_VERSION, "sources": _fingerprint(db), "title": db.title or
                    (vols[0].title if vols else ""), "parsed_ids": parsed},
    }
    path = _format.write_index(dest, header, arrays)
    if parsed or any(s.taxid for s in ids):  # names or taxids the deflines alone do not give
        write_subject_ids(path, ids)
    return Path(path)


def write_subject_ids(index_dir: str | os.PathLike, ids: list[SubjectId]) -> None:
    """Keep the subjects' names as blastn prints them (:data:`SUBJECTS_FILE`) in an index directory."""
    table = {"seqid": [s.seqid for s in ids], "acc": [s.acc for s in ids], "accver": [s.accver for s in ids],
             "title": [s.title for s in ids], "taxid": [s.taxid for s in ids],
             "all_titles": [list(s.all_titles) for s in ids], "parsed": [s.parsed for s in ids],
             "others": [[list(o) for o in s.others] for s in ids]}
    tmp = Path(index_dir) / f".{SUBJECTS_FILE}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(table))
    os.replace(tmp, Path(index_dir) / SUBJECTS_FILE)


def _contig_arrays(offsets: np.ndarray, runs: np.ndarray, names: list[str]) -> dict[str, np.ndarray]:
    """The ``contigs`` group of a text-only index from the contig offsets, N runs and names."""
    starts = np.sort(np.concatenate([offsets[:-1], runs[:, 1]]))
    ends = np.sort(np.concatenate([runs[:, 0], offsets[1:]]))
    keep = ends > starts
    seg_start, seg_len = starts[keep], (ends - starts)[keep]
    text_start = np.empty(seg_len.size + 1, np.int64)
    text_start[0] = 1
    np.cumsum(seg_len + 1, out=text_start[1:])
    text_start[1:] += 1
    encoded = [n.encode("latin-1", "replace") for n in names]
    name_offsets = np.r_[0, np.cumsum([len(e) for e in encoded])].astype(np.int64)
    return {
        "contig_offsets": offsets.astype(np.int64),
        "contig_names": np.frombuffer(b"".join(encoded), np.uint8).copy(),
        "contig_name_offsets": name_offsets,
        "seg_text_start": text_start,
        "seg_ref_start": seg_start.astype(np.int64),
        "seg_contig": (np.searchsorted(offsets, seg_start, side="right") - 1).astype(np.int32),
        "amb_runs": runs.astype(np.int64).reshape(-1, 2),
    }


def _fingerprint(db: BlastDb) -> list[list]:
    """Every file the database is read from, with its size and modification time (the cache's key)."""
    files = list(db.aliases) + [f"{v}.{e}" for v in db.volumes for e in ("nin", "nsq", "nhr")]
    out = []
    for f in files:
        st = os.stat(f)
        out.append([os.path.abspath(f), st.st_size, st.st_mtime_ns])
    return out


def _cache_dirs(db: BlastDb) -> list[Path]:
    """Where the converted index of ``db`` is kept: beside it, else under ``~/.cache/gseek/blastdb``."""
    beside = Path(f"{db.name}.gseek-blastdb")
    key = hashlib.sha256(os.path.abspath(db.name).encode()).hexdigest()[:16]
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gseek" / "blastdb"
    return [beside, home / f"{Path(db.name).name}-{key}"]


def _fresh(path: Path, db: BlastDb) -> bool:
    try:
        header = _format.read_header(path)
    except (IndexFormatError, OSError):
        return False
    meta = header.get("blastdb") or {}
    try:
        return meta.get("conversion") == CONVERSION_VERSION and meta.get("sources") == _fingerprint(db)
    except OSError:
        return False


def open_blastdb(db: BlastDb) -> Path:
    """The converted index of ``db``: a fresh cached one, or converted now (beside the database, or under
    ``~/.cache/gseek`` when its folder is read-only)."""
    places = _cache_dirs(db)
    for p in places:
        if p.is_dir() and _fresh(p, db):
            return p
    last: OSError | None = None
    for p in places:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(p.parent, os.W_OK):
                continue
            return convert_blastdb(db, p)
        except PermissionError as err:
            last = err
    raise IndexFormatError(db.name, f"no writable place for its converted copy ({last or 'read-only folders'})")


def read_subject_ids(index_dir: str | os.PathLike) -> list[SubjectId] | None:
    """The subject names a converted database with parsed ids keeps (None: names are the deflines)."""
    path = Path(index_dir) / SUBJECTS_FILE
    if not path.is_file():
        return None
    t = json.loads(path.read_text())
    parsed = t.get("parsed") or [True] * len(t["seqid"])
    others = t.get("others") or [[]] * len(t["seqid"])
    return [SubjectId(*row[:5], tuple(row[5]), row[6], tuple(FurtherDefline(*o) for o in row[7])) for row in
            zip(t["seqid"], t["acc"], t["accver"], t["title"], t["taxid"], t["all_titles"], parsed, others)]
