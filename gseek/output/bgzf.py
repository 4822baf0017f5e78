"""BGZF, the blocked gzip of htslib (``.sam.gz``, ``.bam``): :class:`BgzfWriter`.

A BGZF file is a series of gzip members of at most 64 KiB each, every one
with a ``BC`` extra field holding its size, ending in a fixed empty block
(SAM/BAM specification, section 4.1). Any gzip reader reads it as one
stream; htslib (samtools, pysam, tabix) can also seek in it by block.

>>> import gzip, io
>>> raw = io.BytesIO()
>>> with BgzfWriter(raw) as fh:
...     _ = fh.write(b"@HD\\tVN:1.6\\n")
>>> gzip.decompress(raw.getvalue())
b'@HD\\tVN:1.6\\n'
>>> raw.getvalue().endswith(EOF_BLOCK)
True
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import IO

__all__ = ["BgzfWriter", "EOF_BLOCK", "BLOCK_INPUT"]

#: Uncompressed bytes a block holds at most (htslib's ``BGZF_BLOCK_SIZE``, 0xff00):
#: its compressed form then fits the 64 KiB a block may take.
BLOCK_INPUT = 0xFF00
#: The empty block that ends every BGZF file (what ``samtools quickcheck`` looks for).
EOF_BLOCK = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_HEADER = struct.Struct("<4BI2BH2BHH")  # ID1 ID2 CM FLG MTIME XFL OS XLEN SI1 SI2 SLEN BSIZE
_MAX_BLOCK = 1 << 16


class BgzfWriter(io.RawIOBase):
    """Write BGZF blocks to the binary stream ``raw`` (which stays open).

    ``level``: zlib's compression level (6, as htslib's default). Each block
    holds :data:`BLOCK_INPUT` bytes of input (the last one less); closing
    writes the last block and :data:`EOF_BLOCK`.
    """

    def __init__(self, raw: IO[bytes], level: int = 6) -> None:
        self.raw = raw
        self.level = level
        self._pending = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self._pending += view
        if len(self._pending) >= BLOCK_INPUT:
            whole = len(self._pending) // BLOCK_INPUT * BLOCK_INPUT
            pending = memoryview(self._pending)
            for start in range(0, whole, BLOCK_INPUT):
                self.raw.write(block(pending[start : start + BLOCK_INPUT], self.level))
            pending.release()
            del self._pending[:whole]
        return view.nbytes

    def close(self) -> None:
        if not self.closed:
            try:
                if self._pending:
                    self.raw.write(block(self._pending, self.level))
                    self._pending.clear()
                self.raw.write(EOF_BLOCK)
            finally:
                super().close()


def block(data: bytes | bytearray | memoryview, level: int = 6) -> bytes:
    """One BGZF block of ``data`` (at most :data:`BLOCK_INPUT` bytes)."""
    packer = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = packer.compress(data) + packer.flush()
    if len(body) + 26 > _MAX_BLOCK:  # incompressible: stored as it is
        packer = zlib.compressobj(0, zlib.DEFLATED, -15)
        body = packer.compress(data) + packer.flush()
    size = len(body) + 26  # header 18 + footer 8
    head = _HEADER.pack(31, 139, 8, 4, 0, 0, 255, 6, 66, 67, 2, size - 1)
    return head + body + struct.pack("<II", zlib.crc32(data), len(data))
