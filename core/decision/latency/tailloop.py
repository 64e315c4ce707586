"""The closed-form bounds of P(time in system > t) compiled with numba (token-by-token and whole-block service).

exact._p_items(exact=False, compiled=False) is the reference: per member, (1 - C) P(S_free > t) + C P(E + S_full >
t) with the waited term between P(S_full > t) + J's lower and upper bound (exact._j_bounds; whole-block service:
service._block_j, _block_spread_survival). The sizing's search asks for these bounds at every replica count it
tries (~5 of 30 CPU s of a 300-workload plan in numpy, a few dozen members a call); here the same formulas run in
one loop. Like the reference, the spread-of-time blocks are summed in as many groups as the call's widest window
needs, so an item's bound may depend on the others in the call (each within the reference's 3e-7). ndtr follows
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
def _n_survival(x, mu, sigma):
    """service._n_survival for one item: P(N > x), N ~ LogNormal(mu, sigma)."""
    if not x > 0:
        return 1.0
    lx = math.log(x)
    if sigma > 0:
        return ndtr(-(lx - mu) / sigma)
    return ndtr(-math.inf) if lx >= mu else ndtr(math.inf)


@njit(cache=True, inline="always")
def _whole_blocks(t, a, c, L):
    """service._whole_blocks for one item."""
    return math.floor((t - a) / (c * L) + 1e-12) if t >= a else -1.0


@njit(cache=True, inline="always")
def _spread_window(t, a, c, mu, sigma, L, sx):
    """service._block_spread_survival's (y, yh, k_lo, k_hi) for one item."""
    y = max(t - a, 0.0) / (c * L)
    yh = y * math.exp(sx * sx / 2.0)
    w = math.exp(5.0 * sx)
    k_lo = max(max(math.floor(yh / w), math.ceil(math.exp(mu - 6.0 * sigma) / L)), 1.0)
    k_hi = max(min(math.ceil(yh * w), math.ceil(math.exp(mu + 6.0 * sigma) / L)), k_lo)
    return y, yh, k_lo, k_hi


@njit(cache=True)
def _block_spread_survival(t, a, c, mu, sigma, L, sx, groups):
    """service._block_spread_survival for one item, at the call's number of groups."""
    y, yh, k_lo, k_hi = _spread_window(t, a, c, mu, sigma, L, sx)
    if not y > 0:
        return 1.0
    step = math.log((k_hi + 1.0) / k_lo) / groups
    log_l = math.log(L)
    out = 0.0
    prev_at = 0.0
    prev_ln_e = 0.0
    for j in range(groups + 1):
        edge = max(math.floor(k_lo * math.exp(step * j)), k_lo + j)
        ln_e, ln_em1 = math.log(edge), math.log(edge - 1.0)
        d = (mu - log_l) - ln_em1
        at = ndtr(d / sigma) if sigma > 0 else (1.0 if d > 0 else 0.0)
        if j > 0:
            z = (math.log(yh) - (prev_ln_e + ln_em1) / 2.0) / sx
            out += (prev_at - at) * ndtr(-z)
        prev_at, prev_ln_e = at, ln_e
    out += prev_at
    return min(max(out, 0.0), 1.0)


@njit(cache=True)
def _block_j(t, a, c, mu, sigma, theta, L, terms):
    """service._block_j for one item: (the top `terms` blocks' sum, + the rest's bound)."""
    m = _whole_blocks(t, a, c, L)
    top = 0.0
    for j in range(terms):
        k = m - j
        if k >= 1:
            p_k = _n_survival((k - 1.0) * L, mu, sigma) - _n_survival(k * L, mu, sigma)
            top += p_k * math.exp(-theta * max(t - a - (c * L) * k, 0.0))
    below = m - terms
    rest = 0.0
    if below >= 1:
        rest = (1.0 - _n_survival(below * L, mu, sigma)) * math.exp(-theta * max(t - a - c * L * below, 0.0))
        if rest != rest:
            rest = 0.0
    return top, top + rest


@njit(cache=True, inline="always")
def _one(t, cw, af, cf, muf, sf, aw, cwt, muw, sw, theta, L, sx, groups, terms, want_hi):
    """(lo, hi) of P(T > t) for one item (exact._p_items' `one` with exact=False, exact._j_bounds inside); want_hi
    False: hi may be NaN (skipped where it costs more than lo: token-by-token service's four erfcx bounds)."""
    if L > 1:
        if sx > 0:
            free = _block_spread_survival(t, af, cf, muf, sf, L, sx, groups)
        else:
            free = _n_survival(_whole_blocks(t, af, cf, L) * L, muf, sf)
    else:
        if sx > 0:  # a spread of the per-token time not folded yet (service._folded)
            s2 = sx * sx
            muf, sf = muf - s2 / 2.0, math.sqrt(sf * sf + s2)
        free = ndtr(-_z_of(t, af, cf, muf, sf))
    base = (1.0 - cw) * free
    if not theta > 0:
        return base + cw, base + cw
    if L > 1:
        surv = _n_survival(_whole_blocks(t, aw, cwt, L) * L, muw, sw)
        lo, hi = _block_j(t, aw, cwt, muw, sw, theta, L, terms)
        return base + cw * min(surv + lo, 1.0), base + cw * min(surv + hi, 1.0)
    z_t = _z_of(t, aw, cwt, muw, sw)
    surv = ndtr(-z_t)
    if math.isfinite(z_t) and sw > 0:
        beta = theta * max(t - aw, 0.0)
        dens = math.exp(-0.5 * z_t * z_t) * _INV_SQRT2PI
        lo = dens * _MILLS * erfcx((beta * sw - z_t) / _SQRT2)
        if not want_hi:
            return base + cw * min(surv + lo, 1.0), math.nan
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
def _groups(t, af, cf, muf, sf, L, sx, pick, terms):
    """The groups service._block_spread_survival sums in over the items `pick` (one call's: it takes the widest
    window among them, at most `terms`)."""
    widest = 1.0
    for i in pick:
        if L[i] > 1 and sx[i] > 0:
            _, _, k_lo, k_hi = _spread_window(t[i], af[i], cf[i], muf[i], sf[i], L[i], sx[i])
            width = k_hi - k_lo + 1.0
            if width != width:
                return terms
            widest = max(widest, width)
    return int(min(float(terms), widest))


@njit(cache=True, error_model="numpy")
def bounds_kernel(t, cw, af, cf, muf, sf, aw, cwt, muw, sw, theta, esc, extra, unstable, L, sx, terms, lo_only):
    """(lo, hi) of P(T > t) per item: escalated requests (share esc) again at t - extra, 1 where unstable.
    lo_only: hi may be left NaN (the upper bound, four erfcx bounds a member, skipped), for callers that rank by lo;
    lo is the same either way."""
    n = t.shape[0]
    lo = np.empty(n)
    hi = np.empty(n)
    groups = _groups(t, af, cf, muf, sf, L, sx, np.arange(n), terms)
    pick = np.flatnonzero(esc > 0)
    t_x = t - extra
    groups_x = _groups(t_x, af, cf, muf, sf, L, sx, pick, terms)
    # Both bounds for every item otherwise: skipping hi item by item where lo alone decides a miss cost more
    # than it saved (lo made twice where hi is needed: most items of a replica search; 133 -> 166 us a call).
    want_hi = not lo_only
    for i in range(n):
        a, b = _one(t[i], cw[i], af[i], cf[i], muf[i], sf[i], aw[i], cwt[i], muw[i], sw[i], theta[i], L[i], sx[i],
                    groups, terms, want_hi)
        e = esc[i]
        if e > 0:
            ax, bx = _one(t_x[i], cw[i], af[i], cf[i], muf[i], sf[i], aw[i], cwt[i], muw[i], sw[i], theta[i], L[i],
                          sx[i], groups_x, terms, want_hi)
            a, b = (1.0 - e) * a + e * ax, (1.0 - e) * b + e * bx
        lo[i], hi[i] = (1.0, 1.0) if unstable[i] else (a, b)
    return lo, hi
