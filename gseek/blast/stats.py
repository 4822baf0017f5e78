"""Karlin-Altschul statistics of nucleotide scoring, as BLAST+ 2.12 computes them.

The numbers (``_TABLES``) are BLAST+'s ``blastn_values_<reward>_<penalty>`` tables of
``src/algo/blast/core/blast_stat.c``; the rules (which gap costs a reward/penalty pair
supports, the scaling of pairs with a common divisor, the length adjustment, the search
space, bit scores, e-values) are written here from BLAST+'s description of them, and the
text forms are those of ``blastn -outfmt 6``. ``docs/blast.md`` ("Statistics") lists the
supported combinations and the known differences.

>>> p = nucleotide_params(1, -2, 0, 0)          # megablast: linear gap costs
>>> p.lambda_, p.K, p.H
(1.28, 0.46, 0.85)
>>> length_adjustment(p, 300, 20_000, 1)
15
>>> effective_search_space(p, 300, 20_000, 1)
5695725
>>> format_evalue(evalues(p, [288], 5695725)[0]), format_bitscore(bit_scores(p, [288])[0])
('2.09e-154', '532')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gseek.errors import OptionError

from .karlin import ungapped_karlin

#: (reward, -penalty) -> rows (gap_open, gap_extend, lambda, K, H, alpha, beta, theta), and the
#: (gap_open, gap_extend) from which on (both at least as large) the ungapped values apply.
#: A first row with gap costs (0, 0) is the "linear" row of megablast's greedy extension (its
#: gap extension is reward/2 - penalty). The rows of 2/-7, 2/-5, 2/-3 and 3/-4 are, says
#: BLAST+, meant for even scores only. Numbers exactly as in BLAST+'s blast_stat.c.
_TABLES: dict[tuple[int, int], tuple[tuple[tuple[float, ...], ...], tuple[int, int]]] = {
    (1, 5): (((0, 0, 1.39, 0.747, 1.38, 1.00, 0, 100),
              (3, 3, 1.39, 0.747, 1.38, 1.00, 0, 100)), (3, 3)),
    (1, 4): (((0, 0, 1.383, 0.738, 1.36, 1.02, 0, 100),
              (1, 2, 1.36, 0.67, 1.2, 1.1, 0, 98),
              (0, 2, 1.26, 0.43, 0.90, 1.4, -1, 91),
              (2, 1, 1.35, 0.61, 1.1, 1.2, -1, 98),
              (1, 1, 1.22, 0.35, 0.72, 1.7, -3, 88)), (2, 2)),
    (2, 7): (((0, 0, 0.69, 0.73, 1.34, 0.515, 0, 100),
              (2, 4, 0.68, 0.67, 1.2, 0.55, 0, 99),
              (0, 4, 0.63, 0.43, 0.90, 0.7, -1, 91),
              (4, 2, 0.675, 0.62, 1.1, 0.6, -1, 98),
              (2, 2, 0.61, 0.35, 0.72, 1.7, -3, 88)), (4, 4)),
    (1, 3): (((0, 0, 1.374, 0.711, 1.31, 1.05, 0, 100),
              (2, 2, 1.37, 0.70, 1.2, 1.1, 0, 99),
              (1, 2, 1.35, 0.64, 1.1, 1.2, -1, 98),
              (0, 2, 1.25, 0.42, 0.83, 1.5, -2, 91),
              (2, 1, 1.34, 0.60, 1.1, 1.2, -1, 97),
              (1, 1, 1.21, 0.34, 0.71, 1.7, -2, 88)), (2, 2)),
    (2, 5): (((0, 0, 0.675, 0.65, 1.1, 0.6, -1, 99),
              (2, 4, 0.67, 0.59, 1.1, 0.6, -1, 98),
              (0, 4, 0.62, 0.39, 0.78, 0.8, -2, 91),
              (4, 2, 0.67, 0.61, 1.0, 0.65, -2, 98),
              (2, 2, 0.56, 0.32, 0.59, 0.95, -4, 82)), (4, 4)),
    (1, 2): (((0, 0, 1.28, 0.46, 0.85, 1.5, -2, 96),
              (2, 2, 1.33, 0.62, 1.1, 1.2, 0, 99),
              (1, 2, 1.30, 0.52, 0.93, 1.4, -2, 97),
              (0, 2, 1.19, 0.34, 0.66, 1.8, -3, 89),
              (3, 1, 1.32, 0.57, 1.0, 1.3, -1, 99),
              (2, 1, 1.29, 0.49, 0.92, 1.4, -1, 96),
              (1, 1, 1.14, 0.26, 0.52, 2.2, -5, 85)), (2, 2)),
    (2, 3): (((0, 0, 0.55, 0.21, 0.46, 1.2, -5, 87),
              (4, 4, 0.63, 0.42, 0.84, 0.75, -2, 99),
              (2, 4, 0.615, 0.37, 0.72, 0.85, -3, 97),
              (0, 4, 0.55, 0.21, 0.46, 1.2, -5, 87),
              (3, 3, 0.615, 0.37, 0.68, 0.9, -3, 97),
              (6, 2, 0.63, 0.42, 0.84, 0.75, -2, 99),
              (5, 2, 0.625, 0.41, 0.78, 0.8, -2, 99),
              (4, 2, 0.61, 0.35, 0.68, 0.9, -3, 96),
              (2, 2, 0.515, 0.14, 0.33, 1.55, -9, 81)), (6, 4)),
    (3, 4): (((6, 3, 0.389, 0.25, 0.56, 0.7, -5, 95),
              (5, 3, 0.375, 0.21, 0.47, 0.8, -6, 92),
              (4, 3, 0.351, 0.14, 0.35, 1.0, -9, 86),
              (6, 2, 0.362, 0.16, 0.45, 0.8, -4, 88),
              (5, 2, 0.330, 0.092, 0.28, 1.2, -13, 81),
              (4, 2, 0.281, 0.046, 0.16, 1.8, -23, 69)), (6, 3)),
    (4, 5): (((0, 0, 0.22, 0.061, 0.22, 1.0, -15, 74),
              (6, 5, 0.28, 0.21, 0.47, 0.6, -7, 93),
              (5, 5, 0.27, 0.17, 0.39, 0.7, -9, 90),
              (4, 5, 0.25, 0.10, 0.31, 0.8, -10, 83),
              (3, 5, 0.23, 0.065, 0.25, 0.9, -11, 76)), (12, 8)),
    (1, 1): (((3, 2, 1.09, 0.31, 0.55, 2.0, -2, 99),
              (2, 2, 1.07, 0.27, 0.49, 2.2, -3, 97),
              (1, 2, 1.02, 0.21, 0.36, 2.8, -6, 92),
              (0, 2, 0.80, 0.064, 0.17, 4.8, -16, 72),
              (4, 1, 1.08, 0.28, 0.54, 2.0, -2, 98),
              (3, 1, 1.06, 0.25, 0.46, 2.3, -4, 96),
              (2, 1, 0.99, 0.17, 0.30, 3.3, -10, 90)), (4, 2)),
    (3, 2): (((5, 5, 0.208, 0.030, 0.072, 2.9, -47, 77),), (5, 5)),
    (5, 4): (((10, 6, 0.163, 0.068, 0.16, 1.0, -19, 85),
              (8, 6, 0.146, 0.039, 0.11, 1.3, -29, 76)), (25, 10)),
}

#: Reduced pairs whose table is for even scores only (BLAST+'s "round_down").
_EVEN_SCORES = {(2, 7), (2, 5), (2, 3), (3, 4)}


@dataclass(frozen=True)
class KarlinParams:
    """Karlin-Altschul parameters of one scoring system (BLAST+'s ``Blast_KarlinBlk``).

    Attributes:
        lambda_: λ, nats per score unit (bit score = (λS - ln K) / ln 2).
        K: the search-space scale of the e-value, E = K m n e^(-λS).
        H: relative entropy of the target frequencies, nats per aligned pair.
        alpha: α of the length adjustment (expected HSP length grows as α/λ per nat).
        beta: β of the length adjustment, its constant term.
        even_scores: True for the tables BLAST+ marks "even scores only" (2/-7, 2/-5, 2/-3,
            3/-4): e-values then use the score rounded down to even, as blastn 2.12 does
            (its bit scores use the raw score).
        computed: True where λ, K, H are computed from the scores (ungapped, or gap costs past
            BLAST+'s tables), not tabulated: blastn's then depend on each query's letters in their
            last digits (:func:`query_params`).
    """

    lambda_: float
    K: float
    H: float
    alpha: float
    beta: float
    even_scores: bool = False
    computed: bool = field(default=False, repr=False, compare=False)

    @property
    def log_K(self) -> float:
        """ln K."""
        return math.log(self.K)


def _reduce(reward: int, penalty: int) -> tuple[int, int, int]:
    """(reward, |penalty|) divided by their greatest common divisor, and the divisor."""
    divisor = math.gcd(reward, penalty)
    return reward // divisor, -penalty // divisor, divisor


def _table(reward: int, penalty: int):
    if reward <= 0 or penalty >= 0:
        raise OptionError(f"reward must be > 0 and penalty < 0 (got {reward} and {penalty})")
    r, p, divisor = _reduce(reward, penalty)
    if (r, p) not in _TABLES:
        pairs = ", ".join(f"{a}/-{b}" for a, b in _TABLES)
        raise OptionError(f"reward/penalty {reward}/{penalty} is not supported; BLAST+ has "
                          f"statistics for {pairs} and their multiples (e.g. 2/-4 as 1/-2)")
    rows, (open_max, extend_max) = _TABLES[(r, p)]
    # A common divisor d scales scores by d: gap costs times d, lambda and alpha over d.
    scaled = [(o * divisor, e * divisor, lam / divisor, K, H, alpha / divisor, beta)
              for o, e, lam, K, H, alpha, beta, _theta in rows]
    return scaled, (open_max * divisor, extend_max * divisor), (r, p) in _EVEN_SCORES


def supported_gap_costs(reward: int, penalty: int) -> list[tuple[int, int]]:
    """The (gap_open, gap_extend) pairs BLAST+ tabulates for ``reward``/``penalty``.

    (0, 0) means linear gaps (megablast's greedy extension). Gap costs at least as large as
    the last pair, in both terms, are supported too: they take the ungapped values.

    >>> supported_gap_costs(1, -3)
    [(0, 0), (2, 2), (1, 2), (0, 2), (2, 1), (1, 1), (2, 2)]
    """
    rows, maximum, _even = _table(reward, penalty)
    return [(int(r[0]), int(r[1])) for r in rows] + [maximum]


def nucleotide_params(reward: int, penalty: int, gap_open: int, gap_extend: int,
                      gapped: bool = True) -> KarlinParams:
    """BLAST+'s Karlin-Altschul parameters for match ``reward``, mismatch ``penalty`` and gaps.

    Arguments: reward > 0, penalty < 0 (pairs with a common divisor d use the table of the
    reduced pair, λ and α over d, gap costs times d); gap_open, gap_extend: BLAST+'s gap
    existence and extension costs, (0, 0) for linear (megablast) gaps; gapped: False for the
    parameters of an ungapped search. Raises OptionError, naming the supported gap costs,
    when BLAST+ has no statistics for the combination.

    >>> nucleotide_params(2, -3, 5, 2)
    KarlinParams(lambda_=0.625, K=0.41, H=0.78, alpha=0.8, beta=-2, even_scores=True)
    >>> nucleotide_params(2, -6, 4, 4).lambda_          # 2/-6 is 1/-3 with λ / 2
    0.685
    """
    rows, (open_max, extend_max), even = _table(reward, penalty)
    if gapped:
        for row_open, row_extend, row_lam, row_K, row_H, alpha, beta in rows:
            if (row_open, row_extend) == (gap_open, gap_extend):
                return KarlinParams(row_lam, row_K, row_H, alpha, beta, even)
    if not gapped or (gap_open >= open_max and gap_extend >= extend_max):
        return ungapped_params(reward, penalty)
    listed = "; ".join(f"{o} and {e}" for o, e in supported_gap_costs(reward, penalty))
    raise OptionError(f"gap costs {gap_open} (open) and {gap_extend} (extend) are not supported "
                      f"with reward/penalty {reward}/{penalty}; supported (open and extend): "
                      f"{listed}, and any costs at least {open_max} and {extend_max}")


def ungapped_params(reward: int, penalty: int) -> KarlinParams:
    """Karlin-Altschul λ, K, H of ungapped ``reward``/``penalty`` scoring of uniform random DNA.

    BLAST+ computes its ungapped Karlin block from the score distribution, and so does
    ``gseek.blast.karlin``, in BLAST+'s order of arithmetic (blastn prints these with 15 digits).
    α = λ/H; β = -2 for 1/-1 and 2/-3, else 0 (BLAST+'s ungapped α and β of nucleotide scores).

    >>> p = ungapped_params(1, -2)          # blastn prints 1.33 0.621 1.12
    >>> round(p.lambda_, 2), round(p.K, 3), round(p.H, 2)
    (1.33, 0.621, 1.12)
    >>> ungapped_params(2, -3).beta
    -2.0
    """
    if reward <= 0 or penalty >= 0:
        raise OptionError(f"reward must be > 0 and penalty < 0 (got {reward} and {penalty})")
    K, lam, H = ungapped_karlin(int(reward), int(penalty))
    beta = -2.0 if (reward, penalty) in ((1, -1), (2, -3)) else 0.0
    return KarlinParams(lam, K, H, lam / H, beta, computed=True)


def query_params(params: KarlinParams, reward: int, penalty: int, counts) -> KarlinParams:
    """``params`` as blastn reports them for one query whose searched strand has ``counts`` A, C, G, T (bases it
    hard-masks left out): computed parameters from that composition (the same to 14 digits), tabulated ones as
    they are; a query without a base keeps ``params``.

    >>> p = nucleotide_params(1, -2, 5, 2)                   # past the table: computed
    >>> '%.15g' % query_params(p, 1, -2, (144, 128, 121, 107)).K, '%.15g' % p.K
    ('0.620991117264206', '0.620991117264207')
    """
    counts = tuple(int(c) for c in counts)
    if not params.computed or sum(counts) == 0:
        return params
    K, lam, H = ungapped_karlin(int(reward), int(penalty), counts)
    return KarlinParams(lam, K, H, params.alpha, params.beta, params.even_scores, computed=True)


def length_adjustment(params: KarlinParams, query_length: int, db_length: int,
                      db_sequences: int) -> int:
    """BLAST+'s length adjustment ℓ: the edge-effect correction of query and database lengths.

    ℓ approximates from below the fixed point of ℓ = β + (α/λ) (ln K + ln((m - ℓ)(n - Nℓ))),
    m the query length, n the database length, N its sequence count, found by BLAST+'s
    iteration (at most 20 steps, kept between bounds; 0 when K m n is too small).

    >>> length_adjustment(nucleotide_params(2, -3, 5, 2), 300, 20_000, 1)
    16
    """
    m, n, N = float(query_length), float(db_length), float(db_sequences)
    K, log_K = params.K, params.log_K
    alpha_over_lambda, beta = params.alpha / params.lambda_, params.beta
    # Largest ℓ with K (m - ℓ)(n - Nℓ) > max(m, n): the smaller root of a quadratic in ℓ.
    c = n * m - max(m, n) / K
    if c < 0:
        return 0
    b = m * N + n
    ell_max = 2 * c / (b + math.sqrt(b * b - 4 * N * c))

    def proposal(ell: float) -> float:
        return alpha_over_lambda * (log_K + math.log((m - ell) * (n - N * ell))) + beta

    ell_min, ell_next, converged = 0.0, 0.0, False
    for step in range(1, 21):
        ell = ell_next
        ell_bar = proposal(ell)
        if ell_bar >= ell:                  # ell is at or below the fixed point
            ell_min = ell
            if ell_bar - ell_min <= 1.0:
                converged = True
                break
            if ell_min == ell_max:
                break
        else:
            ell_max = ell
        if ell_min <= ell_bar <= ell_max:
            ell_next = ell_bar
        else:
            ell_next = ell_max if step == 1 else (ell_min + ell_max) / 2
    result = int(ell_min)
    if converged:                           # is ceil(ell_min) still below the fixed point?
        ceiling = math.ceil(ell_min)
        if ceiling <= ell_max and proposal(ceiling) >= ceiling:
            result = int(ceiling)
    return result


def effective_search_space(params: KarlinParams, query_length: int, db_length: int,
                           db_sequences: int) -> int:
    """BLAST+'s effective search space: (m - ℓ) × max(n - Nℓ, 1), ℓ the length adjustment.

    >>> effective_search_space(nucleotide_params(2, -3, 5, 2), 300, 20_000, 1)
    5675456
    """
    ell = length_adjustment(params, query_length, db_length, db_sequences)
    effective_db = max(db_length - db_sequences * ell, 1)
    return effective_db * (query_length - ell)


def bit_scores(params: KarlinParams, scores) -> np.ndarray:
    """Bit scores (λS - ln K) / ln 2 of raw ``scores`` (any shape), float64.

    >>> bit_scores(nucleotide_params(2, -3, 5, 2), [22, 23]).round(2).tolist()
    [21.12, 22.03]
    """
    s = np.asarray(scores, dtype=np.float64)
    return (params.lambda_ * s - params.log_K) / math.log(2)


def evalues(params: KarlinParams, scores, search_space) -> np.ndarray:
    """E-values K × search_space × e^(-λS) of raw ``scores`` (search_space may be per score);
    with ``params.even_scores``, S is the score rounded down to even."""
    raw = np.asarray(scores, dtype=np.int64)
    s = (raw - (raw & 1) if params.even_scores else raw).astype(np.float64)
    return np.asarray(search_space, dtype=np.float64) * np.exp(params.log_K - params.lambda_ * s)


def format_evalue(evalue: float) -> str:
    """An e-value as ``blastn -outfmt 6`` (BLAST+ 2.12) prints it.

    Below 1e-180: ``0.0``; below 0.0009: three significant digits in exponent form
    (``2.06e-161``); below 0.1: three decimals; below 1: two; below 10: one; else none.

    >>> [format_evalue(x) for x in (0.0, 2.064e-161, 0.0123, 0.5, 3.14, 1234.5)]
    ['0.0', '2.06e-161', '0.012', '0.50', '3.1', '1234']
    """
    if evalue < 1.0e-180:
        return "0.0"
    if evalue < 0.0009:
        return f"{evalue:.2e}"
    if evalue < 0.1:
        return f"{evalue:.3f}"
    if evalue < 1.0:
        return f"{evalue:.2f}"
    if evalue < 10.0:
        return f"{evalue:.1f}"
    return f"{evalue:.0f}"


def format_bitscore(bits: float) -> str:
    """A bit score as ``blastn -outfmt 6`` prints it: one decimal up to 99.9, above it the
    integer part (truncated, not rounded: 99.94 prints as ``99``), exponent form above 99999
    (blastn 2.12 printed ``54924`` and ``1.108e+05`` for E. coli's 29.7 and 60 kb; until
    2026-11-27 gseek took the exponent form from 9999 on).

    >>> [format_bitscore(x) for x in (21.12, 99.94, 532.9, 12345.6, 110803.2)]
    ['21.1', '99', '532', '12345', '1.108e+05']
    """
    if bits > 99999:
        return f"{bits:.3e}"
    if bits > 99.9:
        return str(int(bits))
    return f"{bits:.1f}"
