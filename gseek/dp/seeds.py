"""The seed extensions' arguments (:mod:`gseek.dp.xdrop`, :mod:`gseek.dp.greedy`): offsets, lengths and seed
pairs as arrays, checked; apart from the stages so that one imports no other's kernels."""

from __future__ import annotations

import numpy as np

from gseek.errors import OptionError

__all__ = ["seed_arrays"]


def seed_arrays(q_off, q_len, t_off, t_len, q_pos, t_pos) -> tuple[np.ndarray, ...]:
    """Seed extensions' offsets (int64), lengths and seed pairs (int32) as arrays, each seed pair
    checked to be a residue pair of its sequences (an :class:`~gseek.errors.OptionError` names the first
    that is not)."""
    q_off, t_off = np.asarray(q_off, np.int64), np.asarray(t_off, np.int64)
    q_len, t_len = np.asarray(q_len, np.int32), np.asarray(t_len, np.int32)
    q_pos, t_pos = np.asarray(q_pos, np.int32), np.asarray(t_pos, np.int32)
    bad = (q_pos < 0) | (q_pos >= q_len) | (t_pos < 0) | (t_pos >= t_len)
    if bad.any():
        k = int(np.argmax(bad))
        raise OptionError(f"seed {k}: (q_pos, t_pos) = ({q_pos[k]}, {t_pos[k]}) is not a residue pair of "
                          f"lengths ({q_len[k]}, {t_len[k]})")
    return q_off, q_len, t_off, t_len, q_pos, t_pos
