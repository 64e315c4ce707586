"""The closed-form bounds of P(time in system > t) compiled with numba, for token-by-token (not block-wise) service.

exact._p_items(exact=False) is the reference: per member, (1 - C) P(S_free > t) + C P(E + S_full > t) with the
waited term between P(S_full > t) + J's lower and upper bound (exact._j_bounds). The sizing's search asks for
these bounds at every replica count it tries (~4 of 30 CPU s of a 300-workload plan in numpy, a few dozen members
a call); here the same formulas run in one loop. Whole-block (diffusion) service stays in numpy. ndtr follows
Cephes (scipy's), erfcx is exp(x^2) erfc(x) below 5 and its continued fraction above; they agree with scipy's to
~1e-14 relative (tests/test_latency.py).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_SQRT2 = math.sqrt(2.0)
_SQRTH = math.sqrt(0.5)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRTPI = 1.0 / math.sqrt(math.pi)
_MILLS = math.sqrt(math.pi / 2.0)


@njit(cache=True)
def ndtr(a):
    """P(Z < a), as Cephes (and scipy.special.ndtr) computes it."""
    if a != a:
        return math.nan
    x = a * _SQRTH
    z = abs(x)
    if z < _SQRTH:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if x > 0 else y


@njit(cache=True)
def erfcx(x):
    """exp(x^2) erfc(x) without overflow: directly below 5 (relative error ~ x^2 eps), the continued fraction
    erfc(x) = exp(-x^2) / sqrt(pi) / (x + 1/2 / (x + 1 / (x + 3/2 / (x + ...)))) above; negative x by reflection."""
    if x != x:
        return math.nan
    if x < 0:
        if x < -26.7:
            return math.inf
        return 2.0 * math.exp(x * x) - erfcx(-x)
    if x < 5.0:
        return math.exp(x * x) * math.erfc(x)
    f = x
    for k in range(60, 0, -1):
        f = x + (k / 2.0) / f
    return _INV_SQRTPI / f


@njit(cache=True, inline="always")
def _z_of(t, a, c, mu, sigma):
    """service._z_of for one item."""
    if not t > a:
        return -math.inf
    x = math.log(max(t - a, 0.0) / c)
    if sigma > 0:
        return (x - mu) / sigma
    return math.inf if x >= mu else -math.inf


@njit(cache=True, inline="always")
def _one(t, cw, af, cf, muf, sf, aw, cwt, muw, sw, theta):
    """(lo, hi) of P(T > t) for one item (exact._p_items' `one` with exact=False, exact._j_bounds inside)."""
    base = (1.0 - cw) * ndtr(-_z_of(t, af, cf, muf, sf))
    if not theta > 0:
        return base + cw, base + cw
    surv = ndtr(-_z_of(t, aw, cwt, muw, sw))
    z_t = _z_of(t, aw, cwt, muw, sw)
    if math.isfinite(z_t) and sw > 0:
        beta = theta * max(t - aw, 0.0)
        dens = math.exp(-0.5 * z_t * z_t) * _INV_SQRT2PI
        lo = dens * _MILLS * erfcx((beta * sw - z_t) / _SQRT2)
        up = math.inf
        for u in (0.5, 1.0, 2.0, 4.0):
            q = -math.expm1(-sw * u)
            up = min(up, dens * _MILLS * erfcx((beta * q / u - z_t) / _SQRT2) + math.exp(-beta * q) * ndtr(z_t - u))
        hi = min(up, ndtr(z_t))
    else:
        lo = 0.0
        hi = 1.0 if t > aw else 0.0
    return base + cw * min(surv + lo, 1.0), base + cw * min(surv + hi, 1.0)


@njit(cache=True)
def bounds_kernel(t, cw, af, cf, muf, sf, aw, cwt, muw, sw, theta, esc, extra, unstable):
    """(lo, hi) of P(T > t) per item: escalated requests (share esc) again at t - extra, 1 where unstable."""
    n = t.shape[0]
    lo = np.empty(n)
    hi = np.empty(n)
    for i in range(n):
        if unstable[i]:
            lo[i] = hi[i] = 1.0
            continue
        a, b = _one(t[i], cw[i], af[i], cf[i], muf[i], sf[i], aw[i], cwt[i], muw[i], sw[i], theta[i])
        e = esc[i]
        if e > 0:
            ax, bx = _one(t[i] - extra[i], cw[i], af[i], cf[i], muf[i], sf[i], aw[i], cwt[i], muw[i], sw[i], theta[i])
            a, b = (1.0 - e) * a + e * ax, (1.0 - e) * b + e * bx
        lo[i], hi[i] = a, b
    return lo, hi
