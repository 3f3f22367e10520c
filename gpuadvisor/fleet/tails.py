"""Heavy-tailed noise for the fleet's tests: Student's t distribution (tail, quantiles, a fit of its degrees of
freedom from a sample) and the normal score of a t value, so that evidence from figures with heavy-tailed noise
can be added up as if it were Gaussian (Stouffer's method) without one wild reading dominating the sum.

Benchmark noise is not Gaussian: an nccl-tests row that "sometimes can reach a normal value like 150GB/s, but it
is much lower for majority of runs" on 16 H100 nodes (https://github.com/NVIDIA/nccl/issues/1469), a pageable host
copy 21 % lower 49 minutes later on one H100. A normal tail turns such a reading into p 1e-100; the t tail with
degrees of freedom measured from the group's own spread does not.

The t tail is the regularised incomplete beta function, P(T > x) = I_{v/(v+x^2)}(v/2, 1/2) / 2 (Abramowitz and
Stegun 26.7.1), evaluated by its continued fraction (Press et al., Numerical Recipes, 3rd ed., 6.4, modified
Lentz's method).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

_N = NormalDist()
NORMAL = math.inf  # degrees of freedom of the normal distribution
DOF_GRID = (1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 60.0, NORMAL)
DOF_SMALL_SAMPLE = 4.0  # fewer than FIT_MIN values: tails this heavy are assumed, not fitted
FIT_MIN = 60  # values needed to fit the degrees of freedom
FIT_VALUES = 4000  # at most this many values (evenly spaced) are used for the fit
P_MIN = 1e-300
_STEP = 0.02  # grid of the normal-score table
_TOP = 40.0


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(x: float, dof: float) -> float:
    """P(T > x) for Student's t with ``dof`` degrees of freedom (the normal tail for NORMAL)."""
    if dof == NORMAL:
        return 0.5 * math.erfc(x / math.sqrt(2))
    if x < 0:
        return 1.0 - t_sf(-x, dof)
    return 0.5 * betainc(dof / 2.0, 0.5, dof / (dof + x * x))


@functools.cache
def t_ppf(q: float, dof: float) -> float:
    """The q quantile (q > 0.5) of Student's t, by bisection on the tail."""
    if dof == NORMAL:
        return _N.inv_cdf(q)
    lo, hi = 0.0, 1.0
    while t_sf(hi, dof) > 1 - q:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, dof) > 1 - q else (lo, mid)
    return (lo + hi) / 2


def _loglik(sq: list[float], total: float, c: float, dof: float) -> float:
    """Log-likelihood of values under t with ``dof`` and scale ``c``, from their squares ``sq`` (``total``: their
    sum): the squares are taken once per fit, not once per degrees of freedom and scale."""
    n = len(sq)
    if dof == NORMAL:
        return -n * (math.log(c) + 0.5 * math.log(2 * math.pi)) - 0.5 * total / (c * c)
    k = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    inv = 1.0 / (c * c * dof)
    return n * (k - math.log(c)) - (dof + 1) / 2 * sum(map(math.log1p, [s * inv for s in sq]))


SCALE_GRID = (0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15)  # around the scale that matches the median |value|


def fit(values: list[float], robust: float = 1.0) -> tuple[float, float]:
    """(degrees of freedom, scale) of the t distribution most likely to give ``values`` (deviations around 0,
    ``robust`` their robust sigma): maximum likelihood over DOF_GRID and, per degrees of freedom, scales
    within 15 % of the one whose median |T| is the sample's. At most FIT_VALUES values are used (evenly spaced);
    fewer than FIT_MIN: (DOF_SMALL_SAMPLE, its median-matched scale). A value u is u / scale in t's units."""
    n = len(values)
    if n < FIT_MIN:
        return DOF_SMALL_SAMPLE, robust * _N.inv_cdf(0.75) / t_ppf(0.75, DOF_SMALL_SAMPLE)
    a = [abs(v) for v in values[:: max(1, n // FIT_VALUES)]]
    mid = sorted(a)[len(a) // 2] or robust * _N.inv_cdf(0.75)
    sq = [x * x for x in a]
    total = sum(sq)
    best = (-math.inf, DOF_SMALL_SAMPLE, 1.0)
    for dof in DOF_GRID:
        c0 = mid / t_ppf(0.75, dof)
        for f in SCALE_GRID:
            ll = _loglik(sq, total, c0 * f, dof)
            if ll > best[0]:
                best = (ll, dof, c0 * f)
    return best[1], best[2]


def fit_dof(values: list[float]) -> float:
    """Degrees of freedom of the t distribution most likely to give ``values`` (see ``fit``)."""
    return fit(values)[0]


@functools.cache
def _scores(dof: float) -> tuple[float, ...]:
    return tuple(_score_exact(i * _STEP, dof) for i in range(int(_TOP / _STEP) + 1))


def _score_exact(x: float, dof: float) -> float:
    return -_N.inv_cdf(max(t_sf(x, dof), P_MIN))


def normal_score(x: float, dof: float) -> float:
    """The standard normal value with the same upper tail as t value ``x``: Phi^-1(P(T <= x))."""
    if dof == NORMAL:
        return x
    ax = abs(x)
    if ax >= _TOP:
        s = _score_exact(ax, dof)
    else:
        table = _scores(dof)
        i = int(ax / _STEP)
        f = ax / _STEP - i
        s = table[i] + f * (table[i + 1] - table[i])
    return s if x >= 0 else -s


def score_sum(us: list[float], kappa: float, dof: float) -> float:
    """``sum(normal_score(u * kappa, dof) for u in us)``, the same arithmetic without a call per value (the fleet
    scores every figure of every node)."""
    if dof == NORMAL:
        return sum([u * kappa for u in us])
    table, step = _scores(dof), _STEP
    out = []
    for u in us:
        x = u * kappa
        ax = abs(x)
        if ax >= _TOP:
            s = _score_exact(ax, dof)
        else:
            i = int(ax / step)
            f = ax / step - i
            s = table[i] + f * (table[i + 1] - table[i])
        out.append(s if x >= 0 else -s)
    return sum(out)


def upper(z: float) -> float:
    """One-sided p-value of a standard normal score (worse side)."""
    return max(0.5 * math.erfc(z / math.sqrt(2)), 0.0)
