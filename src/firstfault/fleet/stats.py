"""The binomial upper tail P(X >= k), X ~ Binomial(n, p), for the suspect-host test; no SciPy needed.

For integer k in 1..n, P(X >= k) equals the regularized incomplete beta function I_p(k, n - k + 1);
that identity also gives the tail a meaning for a weighted count k (node-condition failures
count half), continuous and monotone in k. The incomplete beta is evaluated with its continued
fraction (modified Lentz), from the side where it converges fast, so tails as small as 1e-300
keep their precision.
"""
from __future__ import annotations

import math

_TINY = 1e-300
_EPSILON = 1e-15
_ITERATIONS = 500


def binomial_upper_tail(successes: float, trials: int, probability: float) -> float:
    """P(X >= successes) for X ~ Binomial(trials, probability)."""
    if successes <= 0:
        return 1.0
    if successes > trials or probability <= 0:
        return 0.0
    if probability >= 1:
        return 1.0
    return regularized_beta(probability, successes, trials - successes + 1)


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _continued_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _continued_fraction(1 - x, b, a) / b


def _continued_fraction(x: float, a: float, b: float) -> float:
    c = 1.0
    d = _nonzero(1.0 - (a + b) * x / (a + 1))
    d = 1.0 / d
    result = d
    for m in range(1, _ITERATIONS + 1):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 / _nonzero(1.0 + even * d)
        c = _nonzero(1.0 + even / c)
        result *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 / _nonzero(1.0 + odd * d)
        c = _nonzero(1.0 + odd / c)
        step = d * c
        result *= step
        if abs(step - 1.0) < _EPSILON:
            break
    return result


def _nonzero(value: float) -> float:
    return _TINY if abs(value) < _TINY else value


def surprise(p_value: float) -> float:
    """-log10(p), the score shown for a host: 2 means 1 in 100, 10 means 1 in 10^10."""
    return round(-math.log10(max(p_value, 1e-300)), 2)
