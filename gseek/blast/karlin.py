"""Karlin-Altschul λ, K and H of ungapped nucleotide scoring, computed as BLAST+ 2.12 computes them.

blastn prints these numbers with 15 significant digits (``-outfmt 5``'s ``Statistics_kappa``, ``-outfmt 15``'s
``kappa``) wherever it does not take them from its tables: ``-ungapped``, and gap costs at least as large as the
last tabulated pair (``blastn-short``'s 5/2 with 1/-3). To print the same digits the arithmetic is done in
BLAST+'s order (``blast_stat.c``: the score frequencies of the uniform composition, λ by a safeguarded Newton
iteration on x = e^-λ, H, then K by the closed forms of Karlin & Altschul or their sum over alignment lengths;
``ncbi_math.c``'s ``expm1`` and integer power), written here from its description and checked digit for digit
against blastn 2.12 (``tests/test_blast_karlin.py``).

>>> '%.15g %.15g %.15g' % ungapped_karlin(1, -3)      # blastn-short: kappa, lambda, entropy as blastn prints them
'0.710602795216363 1.37406312246009 1.30724660390929'
"""

from __future__ import annotations

import functools
import math

#: The tolerance of λ, BLAST+'s evaluation budget of its iteration, its first guess.
_LAMBDA_TOLERANCE, _LAMBDA_ITERATIONS, _LAMBDA_NEWTON_STEPS, _LAMBDA_GUESS = 1e-5, 20, 37, 0.5
#: K's sum over alignment lengths stops at this term or after this many lengths.
_K_SUM_LIMIT, _K_ITERATIONS = 0.0001, 100


def _expm1(x: float) -> float:
    """e^x - 1 as BLAST+'s ``BLAST_Expm1`` (a Taylor polynomial for |x| <= 0.33)."""
    if abs(x) > 0.33:
        return math.exp(x) - 1.0
    if abs(x) < 1e-16:
        return x
    terms = (1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040, 1 / 40320, 1 / 362880, 1 / 3628800,
             1 / 39916800, 1 / 479001600)
    inner = x / 6227020800.0
    for term in reversed(terms):
        inner = x * (term + inner)
    return x * (1.0 + inner)


def _powi(x: float, n: int) -> float:
    """x^n (n >= 0) by squaring, as BLAST+'s ``BLAST_Powi``."""
    y = 1.0
    while n > 0:
        if n & 1:
            y *= x
        n //= 2
        x *= x
    return y


def _score_profile(counts: tuple[int, int, int, int]) -> tuple[float, float]:
    """The probabilities of a mismatch and of a match of one aligned pair: the query's letters (``counts`` of A, C,
    G, T) against uniform ones, summed letter pair by letter pair and normalised as BLAST+'s
    ``BlastScoreFreqCalc`` sums them (the same numbers for every composition but in their last bits)."""
    total = float(sum(counts))
    freq = [c / total for c in counts]
    p_mismatch = p_match = 0.0
    for i in range(4):
        for j in range(4):
            if i == j:
                p_match += freq[i] * 0.25
            else:
                p_mismatch += freq[i] * 0.25
    norm = p_mismatch + p_match
    return p_mismatch / norm, p_match / norm


def _lattice(prob: dict[int, float], low: int, high: int) -> int:
    """The greatest common divisor of the scores of non-zero probability (BLAST+'s loop over ``i - low``)."""
    d, i = -low, 1
    while i <= high - low and d > 1:
        if prob.get(low + i, 0.0) != 0.0:
            d = math.gcd(d, i)
        i += 1
    return d


def _lambda(prob: dict[int, float], low: int, high: int) -> float:
    """λ: the root x = e^(-λd) in (0, 1) of the score polynomial, by Newton steps kept inside a bracketing
    interval (bisection when a step leaves it, moves away or shrinks |f| too little)."""
    d = _lattice(prob, low, high)
    x = math.exp(-_LAMBDA_GUESS)  # (in (0, 1): BLAST+'s fallback to 0.5 outside it never applies)
    a, b, f, newton = 0.0, 1.0, 4.0, False
    for k in range(_LAMBDA_ITERATIONS):
        f_before, was_newton, newton = f, newton, False
        g, f = 0.0, prob[low]                          # Horner: f the polynomial, g its derivative
        for i in range(low + d, 0, d):
            g = x * g + f
            f = f * x + prob.get(i, 0.0)
        g = x * g + f
        f = f * x + prob.get(0, 0.0) - 1
        for i in range(d, high + 1, d):
            g = x * g + f
            f = f * x + prob.get(i, 0.0)
        if f > 0:
            a = x
        elif f < 0:
            b = x
        else:
            break
        if b - a < 2 * a * (1 - b) * _LAMBDA_TOLERANCE:
            x = (a + b) / 2
            break
        if k >= _LAMBDA_NEWTON_STEPS or (was_newton and abs(f) > 0.9 * abs(f_before)) or g >= 0:
            x = (a + b) / 2
            continue
        step = -f / g
        y = x + step
        if y <= a or y >= b:
            x = (a + b) / 2
            continue
        newton, x = True, y
        if abs(step) < _LAMBDA_TOLERANCE * x * (1 - x):
            break
    return -math.log(x) / d


def _entropy(prob: dict[int, float], low: int, high: int, lam: float) -> float:
    """H = λ Σ s p(s) e^(λs), summed from the lowest score by Horner's rule in e^-λ."""
    e = math.exp(-lam)
    total = low * prob[low]
    for s in range(low + 1, high + 1):
        total = s * prob.get(s, 0.0) + e * total
    scale = _powi(e, high)
    if scale > 0.0:
        return lam * total / scale
    return lam * math.exp(lam * high + math.log(total))


def _kappa(prob: dict[int, float], low0: int, high0: int, mean: float, lam: float, H: float) -> float:
    """K: closed forms where the highest score is 1 or the lowest -1 (on the lattice), else
    -e^(-2σ) / ((H/λ)(e^-λ - 1)), σ = Σ_j (1/j) [Σ_{s<0} P_j(s) e^(λs) + Σ_{s>=0} P_j(s)], P_j the score
    distribution of j pairs by dynamic programming. As in BLAST+, the programme's probabilities are read from
    the lowest score upwards one score apart even when the lattice is coarser (4/-6 then gets K = 1.1667)."""
    at = lambda k: prob.get(low0 + k, 0.0)  # noqa: E731 - BLAST+'s array "probArrayStartLow"
    divisor = _lattice(prob, low0, high0)
    low, high, lam = low0 // divisor, high0 // divisor, lam * divisor
    span = high - low
    first_term = H / lam
    e = math.exp(-lam)
    if low == -1 and high == 1:
        p_low, p_high = prob[low * divisor], prob[high * divisor]
        return (p_low - p_high) * (p_low - p_high) / p_low
    if low == -1 or high == 1:
        if high != 1:
            m = mean / divisor
            first_term = (m * m) / first_term
        return first_term * (1.0 - e)
    table = [0.0] * (_K_ITERATIONS * span + 1)
    table[0] = term = 1.0
    sigma, lowest, highest, j = 0.0, 0, 0, 0
    while j < _K_ITERATIONS and term > _K_SUM_LIMIT:
        first = last = span
        lowest += low
        highest += high
        for top in range(highest - lowest, -1, -1):   # P_j from P_(j-1), in place from the top
            left, stop, right, value = top - first, top - last, first, 0.0
            while left >= stop:
                value += table[left] * at(right)
                left -= 1
                right += 1
            if first:
                first -= 1
            if top <= span:
                last -= 1
            table[top] = value
        term, at_index = table[0], 0
        for _ in range(lowest + 1, 0):
            at_index += 1
            term = table[at_index] + term * e
        term *= e
        for _ in range(max(lowest + 1, 0), highest + 1):
            at_index += 1
            term += table[at_index]
        j += 1
        term /= j
        sigma += term
    return -math.exp(-2.0 * sigma) / (first_term * _expm1(-lam))


def ungapped_karlin(reward: int, penalty: int, counts: tuple[int, int, int, int] = (1, 1, 1, 1)
                    ) -> tuple[float, float, float]:
    """(K, λ, H) of ungapped ``reward``/``penalty`` scoring (reward > 0 > penalty), BLAST+'s digits; ``counts``:
    the query's A, C, G, T (its searched strand and piece, hard-masked bases left out), which blastn's numbers
    depend on in their last digit.

    >>> ['%.6g' % v for v in ungapped_karlin(1, -2)]
    ['0.620991', '1.33271', '1.12409']
    >>> '%.15g' % ungapped_karlin(1, -2, (144, 128, 121, 107))[0]    # blastn prints ...264206 for this query
    '0.620991117264206'
    """
    return _karlin_of_profile(int(reward), int(penalty), *_score_profile(counts))


@functools.lru_cache(maxsize=256)
def _karlin_of_profile(reward: int, penalty: int, p_mismatch: float, p_match: float) -> tuple[float, float, float]:
    prob = {score: 0.0 for score in range(penalty, reward + 1)}
    prob[penalty], prob[reward] = p_mismatch, p_match
    mean = 0.0
    for s in range(penalty, reward + 1):
        mean += s * prob[s]
    lam = _lambda(prob, penalty, reward)
    H = _entropy(prob, penalty, reward, lam)
    return _kappa(prob, penalty, reward, mean, lam, H), lam, H
