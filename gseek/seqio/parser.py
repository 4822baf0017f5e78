"""The FASTA/FASTQ chunk parser: one Numba pass over raw bytes.

``parse_chunk`` turns a buffer of whole or partial records into
struct-of-arrays outputs. It stops at the last complete record (unless
``final``), at ``max_records``, or at the first error, and reports how far it
got so the caller can carry the remainder into the next chunk. It never
allocates: the caller passes output arrays sized by the buffer length, which
bounds every output (a record cannot hold more bases or name bytes than the
buffer holds bytes).
"""

from __future__ import annotations

import numpy as np

from gseek.alphabet import dna_table, protein_table
from gseek.errors import FastxError
from gseek.kernels._jit import njit

# Error codes returned by parse_chunk (see ERROR_TEXT in gseek.seqio).
OK = 0
E_RECORD_START = 1  # line does not start with '>' / '@'
E_SEQ_CHAR = 2  # byte not allowed in a sequence line
E_QUAL_LENGTH = 3  # quality length != sequence length
E_NO_PLUS = 4  # FASTQ record ends before its '+' line
E_TRUNCATED = 5  # FASTQ record ends inside its quality
E_QUAL_CHAR = 6  # quality byte outside '!'..'~' (Phred+64: '@'..'~')
E_EMPTY_NAME = 7  # header line with no name

_NL = 10
_CR = 13
_SPACE = 32
_TAB = 9
_GT = 62  # '>'
_AT = 64  # '@'
_PLUS = 43  # '+'
_INVALID = 255
_SKIP = 254


@njit(cache=True, nogil=True)
def _line_end(buf, p, n):
    """Index of the next '\\n' at or after p, or n."""
    while p < n and buf[p] != _NL:
        p += 1
    return p


@njit(cache=True, nogil=True)
def parse_chunk(
    buf,
    n,
    final,
    is_fastq,
    table,
    qual_min,
    max_records,
    max_bases,
    codes,
    quals,
    case_mask,
    seq_off,
    names,
    name_off,
    descs,
    desc_off,
    rec_line,
):
    """Parse records from ``buf[:n]``.

    Quality bytes must lie in ``qual_min``..``'~'`` (33 for Phred+33, 64 for
    Phred+64); they are copied as they are. Returns ``(records, consumed,
    lines, bases, lower_seen, error, err_line, err_a, err_b)``; ``lines`` and ``err_line`` count newlines from the start
    of the buffer (0-based), the caller adds the buffer's first line number.
    """
    head = _AT if is_fastq else _GT
    r = 0
    nb = 0
    nn = 0
    nd = 0
    p = 0
    ln = 0
    consumed = 0
    consumed_ln = 0
    lower_seen = 0
    seq_off[0] = 0
    name_off[0] = 0
    desc_off[0] = 0
    while True:
        # blank lines between records
        while p < n and (buf[p] == _NL or buf[p] == _CR):
            if buf[p] == _NL:
                ln += 1
            p += 1
        if p >= n:
            if final:
                consumed = p
                consumed_ln = ln
            break
        if r >= max_records or nb >= max_bases:
            consumed = p
            consumed_ln = ln
            break
        start_line = ln
        if buf[p] != head:
            return r, consumed, consumed_ln, nb, lower_seen, E_RECORD_START, ln, buf[p], 0
        e = _line_end(buf, p, n)
        if e >= n and not final:
            break
        # header: name up to the first blank, description after it
        h = p + 1
        he = e
        if he > h and buf[he - 1] == _CR:
            he -= 1
        q = h
        while q < he and buf[q] != _SPACE and buf[q] != _TAB:
            names[nn] = buf[q]
            nn += 1
            q += 1
        if q == h:
            return r, consumed, consumed_ln, nb, lower_seen, E_EMPTY_NAME, ln, 0, 0
        while q < he and (buf[q] == _SPACE or buf[q] == _TAB):
            q += 1
        while q < he:
            descs[nd] = buf[q]
            nd += 1
            q += 1
        ln += 1
        p = e + 1
        # sequence lines
        s0 = nb
        incomplete = False
        while True:
            if p >= n:
                if not final:
                    incomplete = True
                break
            c = buf[p]
            if c == head and not is_fastq:
                break
            if c == _PLUS and is_fastq:
                break
            # one pass: convert until the newline
            i = p
            while i < n:
                b = buf[i]
                if b == _NL:
                    break
                v = table[b]
                if v >= _SKIP:
                    if v == _SKIP:
                        i += 1
                        continue
                    return r, consumed, consumed_ln, nb, lower_seen, E_SEQ_CHAR, ln, b, i - p
                codes[nb] = v
                if b >= 97:  # valid bytes >= 'a' are lowercase letters
                    case_mask[nb] = 1
                    lower_seen = 1
                nb += 1
                i += 1
            if i >= n and not final:
                incomplete = True
                break
            ln += 1
            p = i + 1
        if incomplete:
            break
        slen = nb - s0
        if is_fastq:
            if p >= n:
                return r, consumed, consumed_ln, nb, lower_seen, E_NO_PLUS, ln, 0, 0
            e = _line_end(buf, p, n)
            if e >= n and not final:
                break
            ln += 1
            p = e + 1
            ql = 0
            while ql < slen:
                if p >= n:
                    if not final:
                        incomplete = True
                        break
                    # report the last quality line, or where the quality should start
                    return r, consumed, consumed_ln, nb, lower_seen, E_TRUNCATED, ln - (ql > 0), ql, slen
                q0 = ql
                i = p
                while i < n:
                    b = buf[i]
                    if b == _NL:
                        break
                    if b != _CR:
                        if b < qual_min or b > 126:
                            return r, consumed, consumed_ln, nb, lower_seen, E_QUAL_CHAR, ln, b, i - p
                        if ql < slen:
                            quals[s0 + ql] = b
                        ql += 1
                    i += 1
                if i >= n and not final:
                    incomplete = True
                    break
                if ql == q0:
                    return r, consumed, consumed_ln, nb, lower_seen, E_QUAL_LENGTH, ln, ql, slen
                if ql > slen:
                    if q0 > 0:
                        # a continuation line overflowed: the previous line was short
                        # (typically the next record's '@' header read as quality)
                        return r, consumed, consumed_ln, nb, lower_seen, E_QUAL_LENGTH, ln - 1, q0, slen
                    return r, consumed, consumed_ln, nb, lower_seen, E_QUAL_LENGTH, ln, ql, slen
                ln += 1
                p = i + 1
            if incomplete:
                break
        r += 1
        seq_off[r] = nb
        name_off[r] = nn
        desc_off[r] = nd
        rec_line[r - 1] = start_line
        consumed = p
        consumed_ln = ln
    return r, consumed, consumed_ln, seq_off[r], lower_seen, OK, 0, 0, 0


def empty_outputs(n: int, max_records: int, fastq: bool):
    """Allocate parse_chunk's output arrays for a buffer of ``n`` bytes.

    A record takes at least 2 bytes (``>a`` at the end of a file), so
    ``n // 2 + 1`` records is an upper bound; ``np.empty`` only reserves
    address space, so the bound costs nothing until pages are written.
    """
    records = max(1, min(max_records, n // 2 + 1)) + 1
    return (
        np.empty(n, dtype=np.uint8),  # codes
        np.empty(n if fastq else 0, dtype=np.uint8),  # quals
        np.zeros(n, dtype=np.uint8),  # case_mask (calloc: pages touched only if written)
        np.empty(records, dtype=np.int64),  # seq_off
        np.empty(n, dtype=np.uint8),  # names
        np.empty(records, dtype=np.int64),  # name_off
        np.empty(n, dtype=np.uint8),  # descs
        np.empty(records, dtype=np.int64),  # desc_off
        np.empty(records, dtype=np.int64),  # rec_line
    )


# --------------------------------------------------------------------------- prediction
#
# The multi-threaded reader (gseek.seqio.FastxReader(threads=N)) parses several
# chunks at once. Chunk k+1 starts where parse_chunk stops in chunk k, which is
# only known once chunk k is parsed, so the reader *predicts* it with the two
# functions below and checks every prediction against parse_chunk's own result
# before it uses a chunk parsed from a predicted start. A wrong prediction costs
# time, never correctness, so these functions may be approximate; they follow
# parse_chunk's control flow statement by statement so that on well-formed input
# they are exact (keep them in step with parse_chunk).


@njit(cache=True, nogil=True)
def skim_chunk(buf, p, n, final, is_fastq, table, max_records, max_bases):
    """Where ``parse_chunk`` would stop on ``buf[p:n]``, without building output.

    Returns ``(records, consumed, error)``; ``consumed`` is an index into
    ``buf`` (``p`` when no record is complete).
    """
    head = _AT if is_fastq else _GT
    r = 0
    nb = 0
    consumed = p
    while True:
        while p < n and (buf[p] == _NL or buf[p] == _CR):
            p += 1
        if p >= n:
            if final:
                consumed = p
            break
        if r >= max_records or nb >= max_bases:
            consumed = p
            break
        if buf[p] != head:
            return r, consumed, E_RECORD_START
        e = _line_end(buf, p, n)
        if e >= n and not final:
            break
        h = p + 1
        he = e
        if he > h and buf[he - 1] == _CR:
            he -= 1
        if h >= he or buf[h] == _SPACE or buf[h] == _TAB:
            return r, consumed, E_EMPTY_NAME
        p = e + 1
        s0 = nb
        incomplete = False
        while True:
            if p >= n:
                if not final:
                    incomplete = True
                break
            c = buf[p]
            if c == head and not is_fastq:
                break
            if c == _PLUS and is_fastq:
                break
            i = p
            while i < n:
                b = buf[i]
                if b == _NL:
                    break
                v = table[b]
                if v >= _SKIP:
                    if v == _SKIP:
                        i += 1
                        continue
                    return r, consumed, E_SEQ_CHAR
                nb += 1
                i += 1
            if i >= n and not final:
                incomplete = True
                break
            p = i + 1
        if incomplete:
            break
        slen = nb - s0
        if is_fastq:
            if p >= n:
                return r, consumed, E_NO_PLUS
            e = _line_end(buf, p, n)
            if e >= n and not final:
                break
            p = e + 1
            ql = 0
            while ql < slen:
                if p >= n:
                    if not final:
                        incomplete = True
                        break
                    return r, consumed, E_TRUNCATED
                # a line of exactly the missing length (4-line FASTQ): jump over it
                # (its bytes unchecked: an error there fails the parse anyway)
                j = p + slen - ql
                if j < n and buf[j] == _NL:
                    ql = slen
                    p = j + 1
                    continue
                if j + 1 < n and buf[j] == _CR and buf[j + 1] == _NL:
                    ql = slen
                    p = j + 2
                    continue
                q0 = ql
                i = p
                while i < n:
                    b = buf[i]
                    if b == _NL:
                        break
                    if b != _CR:
                        if b < 33 or b > 126:
                            return r, consumed, E_QUAL_CHAR
                        ql += 1
                    i += 1
                if i >= n and not final:
                    incomplete = True
                    break
                if ql == q0 or ql > slen:
                    return r, consumed, E_QUAL_LENGTH
                p = i + 1
            if incomplete:
                break
        r += 1
        consumed = p
    return r, consumed, OK


@njit(cache=True, nogil=True)
def tail_stop(buf, n, is_fastq, table):
    """Predict ``consumed`` of ``parse_chunk(buf, n, final=False)`` when neither
    cap can stop it, looking only at the last records; -1 when unsure.

    Without caps and before the end of input, parse_chunk stops at the end of
    the last complete record. The last record start is found from the end: a
    line starting with the header byte (for FASTQ, also followed two lines later
    by a '+' line, and confirmed by skimming from it to the end).
    """
    head = _AT if is_fastq else _GT
    a = n - 1
    tries = 0
    while tries < 8:
        while a >= 1 and not (buf[a] == head and buf[a - 1] == _NL):
            a -= 1
        if a < 1:
            # FASTA: a record ends only at the next '>' line, so none is complete
            return -1 if is_fastq else 0
        if is_fastq:
            e1 = _line_end(buf, a, n)
            ok = False
            if e1 + 1 < n:
                e2 = _line_end(buf, e1 + 1, n)
                ok = e2 + 1 < n and buf[e2 + 1] == _PLUS
            if not ok:
                a -= 1
                continue
            r, c, err = skim_chunk(buf, a, n, False, True, table, n + 1, n + 1)
            if err != OK:
                tries += 1
                a -= 1
                continue
            if r > 0:
                return c
        # the record at a is the incomplete last one: the previous record ends
        # there (FASTA: blank lines belong to the sequence before), or for FASTQ
        # after the newline that ends its last line
        j = a
        while j > 0 and (buf[j - 1] == _NL or buf[j - 1] == _CR):
            j -= 1
        if j == 0:
            return 0  # only blank lines before the first record: none complete
        if not is_fastq:
            return a
        while buf[j] != _NL:
            j += 1
        return j + 1
    return -1


# --------------------------------------------------------------------------- messages and tables

#: The reader reads at least this many bytes at a time.
READ_MIN = 1 << 16

#: Code -> message of each parse error (``a``, ``b``, ``col`` from the parser).
ERROR_TEXT = {
    E_RECORD_START: "expected '{head}' at the start of a record, found {a}",
    E_SEQ_CHAR: "invalid {alphabet} character {a} in sequence (column {col})",
    E_QUAL_LENGTH: "quality length {a} != sequence length {b}",
    E_NO_PLUS: "truncated record: missing '+' line",
    E_TRUNCATED: "truncated record: quality length {a} != sequence length {b}",
    E_QUAL_CHAR: "invalid quality character {a} (column {col}){phred}",
    E_EMPTY_NAME: "header line has no record name",
}

#: Byte -> residue code table of each alphabet.
TABLES = {"dna": dna_table(), "protein": protein_table()}


def show_byte(b: int) -> str:
    """A byte as an error message shows it."""
    if b == 0:
        return "NUL byte (binary data?)"
    if 32 < b < 127:
        return repr(chr(b))
    return f"byte 0x{b:02x}" + (" (binary data?)" if b < 32 or b >= 128 else "")


#: The format a file's first non-blank byte names.
FORMATS = {b">": "fasta", b"@": "fastq"}


def not_fastx(path: str, line: int, head: bytes) -> FastxError:
    """The error of a file whose first record starts with ``head`` (not ``>`` or ``@``)."""
    return FastxError(path, line, f"not FASTA or FASTQ: record starts with {show_byte(head[0])}, expected '>' or '@'")
