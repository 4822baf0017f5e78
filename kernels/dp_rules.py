"""The rules every kernel of the ``dp`` family shares (``kernels/dp.py``, ``kernels/dp_xdrop.py``,
``kernels/dp_lanes.py``): mode flags, a cell's trace-back nibble, BAM CIGAR codes, minus infinity, and
how a walk adds a column to its CIGAR runs (``docs/alignment.md``; ``kernels/dp.cu`` writes the same
numbers)."""

from __future__ import annotations

import numpy as np

from gseek.kernels._jit import njit

# Mode flags (an ``int32`` argument of every kernel).
LOCAL = 1
#: Semiglobal free ends: query start / end, target start / end.
FREE_QS, FREE_QE, FREE_TS, FREE_TE = 2, 4, 8, 16

# Trace-back nibble of a cell: bits 0-1 the source of H, bit 2 "E extends",
# bit 3 "F extends".
SRC_DIAG, SRC_E, SRC_F, SRC_STOP = 0, 1, 2, 3
# BAM CIGAR op codes.
OP_I, OP_D, OP_EQ, OP_X = 1, 2, 7, 8

NEG_INF = -(1 << 28)
INT16_MAX = 32767


@njit(cache=True, inline="always")
def _emit(cigar, pos, run_op, run_len, op, write, step=-1):
    """Add one column of ``op`` to the current run; a finished run is written
    at ``pos``, which then moves by ``step`` (-1: runs come end-first).
    Returns the new (pos, run_op, run_len, runs_finished)."""
    if op == run_op:
        return pos, run_op, run_len + 1, 0
    if run_len > 0:
        if write:
            cigar[pos] = np.uint32((run_len << 4) | run_op)
        return pos + step, op, 1, 1
    return pos, op, 1, 0
