"""The service-time distribution both latency tiers read: output length, S = a + c N_eff, P(wait + S > t).

Shared by the screen (core.decision.latency.screen) and the exact tier (core.decision.latency.chain and
.exact): one output-length lognormal, one block rounding for diffusion, one convolution of an exponential
wait with the service (module docstring of core.decision.latency).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from core.decision.settings import DEFAULT as SETTINGS  # the numerics below (SearchSettings' help)
from core.models import Architecture

# Spread of a workload's output length when the inventory gives no output_tokens_p95.
# ESTIMATE (not measured): chat and agent outputs vary by about half their mean
# (coefficient of variation 0.5, lognormal: p95 = 1.85 x mean); replace it with the
# workload's own p95 where known.
DEFAULT_OUTPUT_CV = 0.5
# The default tail: targets are 95th percentiles unless the scenario says otherwise (Scenario.sla_percentile
# reaches the model as PooledDeployments.tail and PlanInputs.sla_tail): one budget for the whole time in system.
SLO_TAIL = 0.05
Z95 = 1.6448536269514722  # standard normal 95th percentile
# Largest sigma whose lognormal p95/mean is still a function of sigma (the maximum of
# 1.645 sigma - sigma^2 / 2 is at sigma = 1.645): p95/mean above e^1.353 = 3.87 is capped there.
_MAX_SIGMA = Z95
# Gauss–Legendre nodes per panel of the wait-service convolution (two panels):
# 16 per panel put P(E + S > t) within 3e-7 (relative) of 64 per panel and of adaptive
# quadrature on 200k random cases (tests/test_latency.py checks against scipy's quad).
_GL_X, _GL_W = np.polynomial.legendre.leggauss(SETTINGS.gauss_legendre_nodes)
_GL_X, _GL_W = (_GL_X + 1.0) / 2.0, _GL_W / 2.0  # on [0, 1]
_SQRT2 = np.sqrt(2.0)
_INV_SQRT2PI = 1.0 / np.sqrt(2.0 * np.pi)
# Blocks summed exactly in the wait + service convolution of block-wise (diffusion) service; blocks further
# below t add at most P(K <= m - 64) exp(-theta x 64 blocks), taken whole (an upper bound).
_BLOCK_TERMS = SETTINGS.block_terms
# Blocks summed for E[ceil(N / L)] and E[ceil(N / L)^2] (where rounding matters: a few blocks); beyond,
# the rounding is uniform on average
# (E[K] = E[N] / L + 1 / 2 and E[K^2] = E[N^2] / L^2 + E[N] / L + 1 / 3).
_BLOCK_SUM = SETTINGS.block_sum


# --------------------------------------------------------------------------- output length

def output_lognormal(mean_tokens, p95_tokens=None) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of the lognormal output length with this mean and p95 (NaN/None p95: DEFAULT_OUTPUT_CV).

    mean = exp(mu + sigma^2 / 2) and p95 = exp(mu + 1.645 sigma) give
    ln(p95 / mean) = 1.645 sigma - sigma^2 / 2, so sigma = 1.645 - sqrt(1.645^2 - 2 ln(p95 / mean))
    (the smaller root). p95 <= mean gives sigma = 0 (every request the mean length);
    p95 / mean above 3.87 is capped at sigma = 1.645 (the largest p95 a lognormal
    with that mean has). Without a p95: sigma^2 = ln(1 + cv^2).
    """
    m = np.asarray(mean_tokens, dtype=float)
    default_sigma = np.sqrt(np.log1p(DEFAULT_OUTPUT_CV**2))
    if p95_tokens is None:
        sigma = np.full(m.shape, default_sigma)
    else:
        p95 = np.asarray(p95_tokens, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.log(np.maximum(p95, m) / m)
            disc = np.maximum(Z95**2 - 2.0 * r, 0.0)
            fitted = np.clip(Z95 - np.sqrt(disc), 0.0, _MAX_SIGMA)
        sigma = np.where(np.isfinite(p95) & (m > 0), fitted, default_sigma)
        sigma = np.broadcast_to(sigma, np.broadcast(m, p95).shape).copy()
    mu = np.log(np.maximum(m, 1e-300)) - sigma**2 / 2.0
    return mu, sigma


# --------------------------------------------------------------------------- service time

def _n_survival(x, mu, sigma):
    """P(N > x) for N ~ LogNormal(mu, sigma) (sigma = 0: a point mass at e^mu; x <= 0: 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.log(np.maximum(x, 0.0))
        z = (lx - mu) / np.where(sigma > 0, sigma, 1.0)
        z = np.where(sigma > 0, z, np.where(lx >= mu, np.inf, -np.inf))
    return np.where(x > 0, special.ndtr(-z), 1.0)


def _blocks(block_tokens, shape) -> np.ndarray:
    """Tokens per block as an array of `shape` (None: 1, no rounding)."""
    if block_tokens is None:
        return np.ones(shape)
    return np.broadcast_to(np.asarray(block_tokens, dtype=float), shape)


def effective_tokens_moments(mu, sigma, block_tokens=None) -> tuple[np.ndarray, np.ndarray]:
    """E[N_eff] and E[N_eff^2] of N_eff = L ceil(N / L) (L = 1: N itself), N ~ LogNormal(mu, sigma).

    K = ceil(N / L) has P(K > k) = P(N > k L), so E[K] = sum_k P(N > k L) and
    E[K^2] = sum_k (2k + 1) P(N > k L) (k >= 0), summed exactly up to _BLOCK_SUM blocks;
    a longer tail is rounded up by half a block on average (see _BLOCK_SUM).
    """
    mu, sigma = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(sigma, dtype=float))
    L = _blocks(block_tokens, mu.shape)
    en = np.exp(mu + sigma**2 / 2.0)
    en2 = np.exp(2.0 * mu + 2.0 * sigma**2)
    m1, m2 = en.copy(), en2.copy()
    blk = L > 1
    if blk.any():
        i = np.flatnonzero(blk.ravel())
        mu_b, sg_b, L_b = mu.ravel()[i], sigma.ravel()[i], L.ravel()[i]
        top = np.exp(mu_b + 8.5 * sg_b) / L_b  # P(N > top x L) < 1e-17
        k1 = en.ravel()[i] / L_b + 0.5
        k2 = en2.ravel()[i] / L_b**2 + en.ravel()[i] / L_b + 1.0 / 3.0
        few = np.flatnonzero(top <= _BLOCK_SUM)
        if few.size:
            k = np.arange(int(np.ceil(top[few].max())) + 1, dtype=float)[None, :]
            surv = _n_survival(k * L_b[few, None], mu_b[few, None], sg_b[few, None])
            k1[few] = surv.sum(axis=1)
            k2[few] = ((2.0 * k + 1.0) * surv).sum(axis=1)
        flat1, flat2 = m1.ravel(), m2.ravel()
        flat1[i], flat2[i] = L_b * k1, L_b**2 * k2
        m1, m2 = flat1.reshape(mu.shape), flat2.reshape(mu.shape)
    return m1, m2


@dataclass(frozen=True, eq=False)
class ServiceTime:
    """S = a_ms + c_ms_per_token x X x N_eff, N ~ LogNormal(mu, sigma), N_eff = L ceil(N / L): per workload row.

    block_tokens L: tokens per block of block-wise (diffusion) decoding; None or 1 leaves N unrounded.
    spread_sigma s: X ~ LogNormal(-s^2 / 2, s) (mean 1), independent of N: the spread of the
    per-token time (the batch a request finds, the others' prefills landing during its decode).
    It is a spread of time, not of length, so it is never rounded to whole blocks; with L = 1,
    X N is one lognormal (mu - s^2 / 2, sqrt(sigma^2 + s^2)).
    """

    a_ms: np.ndarray
    c_ms_per_token: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    block_tokens: np.ndarray | float | None = None  # one per row, one for all, or None (1)
    spread_sigma: np.ndarray | float = 0.0  # one per row or one for all

    @property
    def _L(self) -> np.ndarray:
        return _blocks(self.block_tokens, np.shape(self.mu))

    @property
    def mean_ms(self) -> np.ndarray:
        """E[S] = a + c E[N_eff] (E[X] = 1; E[N] = exp(mu + sigma^2 / 2) when L = 1)."""
        return self.a_ms + self.c_ms_per_token * effective_tokens_moments(self.mu, self.sigma, self.block_tokens)[0]

    @property
    def var_ms2(self) -> np.ndarray:
        """Var S = c^2 (E[X^2] E[N_eff^2] - E[N_eff]^2), E[X^2] = exp(s^2) (= c^2 Var N_eff without a spread)."""
        m1, m2 = effective_tokens_moments(self.mu, self.sigma, self.block_tokens)
        ex2 = np.exp(np.asarray(self.spread_sigma, dtype=float) ** 2)
        return self.c_ms_per_token**2 * np.maximum(ex2 * m2 - m1**2, 0.0)

    @property
    def cv2(self) -> np.ndarray:
        """Squared coefficient of variation Var S / E[S]^2."""
        mean = self.mean_ms
        return np.divide(self.var_ms2, mean**2, out=np.zeros_like(mean), where=mean > 0)

    def _arrays(self, p):
        """p and every parameter broadcast to one shape: (p, a, c, mu, sigma, L, s)."""
        return np.broadcast_arrays(np.asarray(p, dtype=float), *(np.asarray(x, dtype=float) for x in (
            self.a_ms, self.c_ms_per_token, self.mu, self.sigma, self._L, self.spread_sigma)))

    def quantile(self, p) -> np.ndarray:
        """The p-quantile of S (p broadcasts against the rows); whole blocks: a + c L ceil(q_N(p) / L).

        Whole blocks with a spread (no closed form): bisection on the survival between quantile_bounds.
        """
        p, a, c, mu, sigma, L, sx = self._arrays(p)
        fmu, fsigma = _folded(mu, sigma, sx)
        n = np.exp(fmu + fsigma * special.ndtri(p))
        out = a + c * np.where(L > 1, L * np.maximum(np.ceil(n / L - 1e-12), 1.0), n)
        mixed = (L > 1) & (sx > 0)
        if not mixed.any():
            return out
        lo, hi = (x[mixed] for x in self.quantile_bounds(p))
        args = [x[mixed] for x in (a, c, mu, sigma, L, sx)]
        for _ in range(60):  # the survival is continuous there (X has a density): halve the bracket to ~1e-18
            mid = (lo + hi) / 2.0
            above = _block_spread_survival(mid, *args) > 1.0 - p[mixed]
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        out = out.copy()
        out[mixed] = hi
        return out

    def quantile_bounds(self, p) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) around the p-quantile of S in closed form (both the quantile where no blocks or no spread).

        N <= N_eff <= N + L, so a + c X N <= S <= a + c X (N + L): lo is the quantile of the
        lognormal X N; hi adds the union bound P(X N > u) + P(X L > v) <= 1 - p at u, v the
        (1 + p) / 2 quantiles of X N and X L.
        """
        p, a, c, mu, sigma, L, sx = self._arrays(p)
        fmu, fsigma = _folded(mu, sigma, sx)
        n = np.exp(fmu + fsigma * special.ndtri(p))
        mixed = (L > 1) & (sx > 0)
        whole = a + c * np.where(L > 1, L * np.maximum(np.ceil(n / L - 1e-12), 1.0), n)
        if not mixed.any():
            return whole, whole
        z2 = special.ndtri((1.0 + p) / 2.0)
        hi = a + c * (np.exp(fmu + fsigma * z2) + L * np.exp(-sx**2 / 2.0 + sx * z2))
        return np.where(mixed, a + c * n, whole), np.where(mixed, hi, whole)

    def survival(self, t_ms) -> np.ndarray:
        """P(S > t)."""
        return _survival(np.asarray(t_ms, dtype=float), self.a_ms, self.c_ms_per_token, self.mu, self.sigma,
                         self.block_tokens, self.spread_sigma)


def service_time(a_ms, c_ms_per_token, mean_tokens, p95_tokens=None, block_tokens=None) -> ServiceTime:
    """The service-time distribution S = a + c N_eff of workloads whose output length has this mean and p95."""
    mu, sigma = output_lognormal(mean_tokens, p95_tokens)
    a, c, mu, sigma, L = np.broadcast_arrays(np.asarray(a_ms, float), np.asarray(c_ms_per_token, float), mu, sigma,
                                             np.asarray(1.0 if block_tokens is None else block_tokens, float))
    return ServiceTime(a.copy(), c.copy(), mu.copy(), sigma.copy(), L.copy())


def block_tokens_of(stack) -> int:
    """Tokens per whole block a stack decodes in: a diffusion stack's block length L (physics.decode_steps), else 1."""
    if getattr(stack, "architecture", None) == Architecture.DIFFUSION and stack.diffusion_block_tokens:
        return int(stack.diffusion_block_tokens)
    return 1


def _z_of(t, a, c, mu, sigma):
    """Standard-normal score of N at S = t: (ln((t - a) / c) - mu) / sigma (-inf where t <= a)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(np.maximum(t - a, 0.0) / c)
        z = (x - mu) / np.where(sigma > 0, sigma, 1.0)
        # sigma = 0: a point mass at a + c e^mu.
        z = np.where(sigma > 0, z, np.where(x >= mu, np.inf, -np.inf))
    return np.where(t > a, z, -np.inf)


def _whole_blocks(t, a, c, L):
    """m = floor((t - a) / (c L)): the most blocks a request can take and still end by t (-1 where t < a)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t >= a, np.floor((t - a) / (c * L) + 1e-12), -1.0)


def _folded(mu, sigma, spread):
    """(mu, sigma) of X N, N ~ LogNormal(mu, sigma), X ~ LogNormal(-s^2 / 2, s) independent (s = spread)."""
    if np.ndim(spread) == 0 and spread == 0:
        return mu, sigma  # the waited (full-batch) service and the batch-1 service: no spread to fold
    s2 = np.asarray(spread, dtype=float) ** 2
    return mu - s2 / 2.0, np.sqrt(sigma**2 + s2)


def _survival(t, a, c, mu, sigma, block_tokens=None, spread=0.0):
    """P(S > t), S = a + c X N_eff; whole blocks: P(K > m) = P(N > m L), m = floor((t - a) / (c L)) without
    a spread, the block sum of _block_spread_survival with one."""
    L = None if block_tokens is None else np.asarray(block_tokens, dtype=float)
    if L is None or not (L > 1).any():
        fmu, fsigma = _folded(mu, sigma, spread)
        return special.ndtr(-_z_of(t, a, c, fmu, fsigma))
    t, a, c, mu, sigma, L, sx = np.broadcast_arrays(t, a, c, mu, sigma, L, np.asarray(spread, dtype=float))
    blk = L > 1
    mixed = blk & (sx > 0)
    if mixed.all():  # a diffusion deployment's free service: every row (one stack per deployment)
        return _block_spread_survival(*(x.ravel() for x in (t, a, c, mu, sigma, L, sx))).reshape(np.shape(t))
    out = np.empty(np.shape(t))
    for rows, f in ((~blk, lambda t, a, c, mu, sigma, L, sx: special.ndtr(-_z_of(t, a, c, *_folded(mu, sigma, sx)))),
                    (blk & ~mixed, lambda t, a, c, mu, sigma, L, sx: _n_survival(_whole_blocks(t, a, c, L) * L, mu,
                                                                                  sigma)),
                    (mixed, _block_spread_survival)):
        if rows.any():
            out[rows] = f(*(x[rows] for x in (t, a, c, mu, sigma, L, sx)))
    return out


def _block_spread_survival(t, a, c, mu, sigma, L, sx):
    """P(a + c X L K > t), K = ceil(N / L), X ~ LogNormal(-sx^2 / 2, sx): flat arrays of items with L > 1, sx > 0.

    With y = (t - a) / (c L), P = sum over k of P(K = k) P(X > y / k). P(X > y / k) is below
    P(Z > 5) = 3e-7 for k < y exp(sx^2 / 2 - 5 sx) and above 1 - 3e-7 for k > y exp(sx^2 / 2 + 5 sx);
    the blocks between (where K has mass) are summed one block a column while they span at most
    _BLOCK_TERMS (exact), else in _BLOCK_TERMS groups geometric in k (P(X > y / k) depends on ln k)
    with P(X > y / k) at the group's geometric middle; the blocks above are counted whole.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = np.maximum(t - a, 0.0) / (c * L)
        yh = y * np.exp(sx * sx / 2.0)  # P(X > y / k) = P(Z > ln(yh / k) / sx)
        w = np.exp(5.0 * sx)
        # ... and where K has mass: N within e^(mu +- 6 sigma) (outside, P(K = k) sums to 2e-9).
        k_lo = np.maximum(np.maximum(np.floor(yh / w), np.ceil(np.exp(mu - 6.0 * sigma) / L)), 1.0)
        k_hi = np.maximum(np.minimum(np.ceil(yh * w), np.ceil(np.exp(mu + 6.0 * sigma) / L)), k_lo)
        # As few groups as the widest window needs (most span a few dozen blocks: one block a group, exact).
        groups = int(min(_BLOCK_TERMS, np.max(k_hi - k_lo + 1.0, initial=1.0)))
        j = np.arange(groups + 1, dtype=float)[None, :]
        kl = k_lo[:, None]
        # group j holds blocks edge_j .. edge_{j+1} - 1 (empty where the geometric edges coincide)
        edge = np.maximum(np.floor(kl * np.exp(np.log((k_hi + 1.0) / k_lo)[:, None] / groups * j)), kl + j)
        ln_e, ln_em1 = np.log(edge), np.log(edge - 1.0)
        # P(K >= edge) = P(N > (edge - 1) L) = Phi((mu - ln((edge - 1) L)) / sigma); sigma = 0 (every request
        # e^mu tokens): 1 where (edge - 1) L < e^mu, else 0.
        d = (mu - np.log(L))[:, None] - ln_em1
        pos = sigma > 0
        if pos.all():
            at_least = special.ndtr(d / sigma[:, None])
        else:
            at_least = np.where(pos[:, None], special.ndtr(d / np.where(pos, sigma, 1.0)[:, None]), d > 0)
        mass = at_least[:, :-1] - at_least[:, 1:]
        z = (np.log(yh)[:, None] - (ln_e[:, :-1] + ln_em1[:, 1:]) / 2.0) / sx[:, None]
        out = np.einsum("ij,ij->i", mass, special.ndtr(-z)) + at_least[:, -1]
    return np.where(y > 0, np.clip(out, 0.0, 1.0), 1.0)


def _all_blocks(block_tokens, *xs):
    """(shape, xs then L flattened) when every item is decoded in whole blocks (L > 1), else None."""
    if block_tokens is None or not np.all(np.asarray(block_tokens) > 1):
        return None
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (*xs, block_tokens)))
    return arrays[0].shape, [x.ravel() for x in arrays]


def _block_rows(shape, block_tokens, *xs):
    """Flat indices of the items decoded in whole blocks (L > 1), and xs then L broadcast to shape at them."""
    L = np.broadcast_to(np.asarray(block_tokens, dtype=float), shape)
    blk = np.flatnonzero(L.ravel() > 1)
    if blk.size == 0:  # the usual case (no diffusion): nothing to gather
        return blk, []
    return blk, [np.broadcast_to(np.asarray(x, dtype=float), shape).ravel()[blk] for x in (*xs, L)]


def _block_j(t, a, c, mu, sigma, theta, L):
    """J = E[exp(-theta (t - S)); S <= t] for whole-block service, as (sum of the top blocks, + the rest's bound).

    S = a + c L K: J = sum over k <= m of P(K = k) exp(-theta (t - a - c L k)); the _BLOCK_TERMS largest k
    exactly, the blocks below at most P(K <= m - _BLOCK_TERMS) times the largest of their factors.
    """
    m = _whole_blocks(t, a, c, L)
    k = m[..., None] - np.arange(_BLOCK_TERMS)[None, :]
    mu_, sg_, L_ = mu[..., None], sigma[..., None], L[..., None]
    p_k = np.where(k >= 1, _n_survival((k - 1.0) * L_, mu_, sg_) - _n_survival(k * L_, mu_, sg_), 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        decay = np.exp(-theta[..., None] * np.maximum(t[..., None] - a[..., None] - (c * L)[..., None] * k, 0.0))
    top = (p_k * decay).sum(axis=-1)
    below = m - _BLOCK_TERMS
    with np.errstate(over="ignore", invalid="ignore"):
        rest = np.where(below >= 1, (1.0 - _n_survival(below * L, mu, sigma))
                        * np.exp(-theta * np.maximum(t - a - c * L * below, 0.0)), 0.0)
    return top, np.nan_to_num(rest, nan=0.0)


def _p_exceed_with_wait(t, a, c, mu, sigma, theta_per_ms, block_tokens=None):
    """P(E + S > t) for E ~ Exp(theta) independent of S = a + c N_eff (theta = 0: E infinite, 1).

    Whole blocks (L > 1): P(S > t) + the block sum of _block_j (its bound on the
    lowest blocks included: never below the exact value).

    P(E + S > t) = P(S > t) + J, J = E[exp(-theta (t - S)); S <= t]. With z_t the
    normal score of S = t and t - S(z) = (t - a)(1 - exp(-sigma (z_t - z))) exactly,
    J = integral over u >= 0 of phi(z_t - u) exp(-beta (1 - exp(-sigma u))) du,
    beta = theta (t - a): smooth, so two Gauss–Legendre panels (the first one over
    the exponential's fast decay near u = 0) integrate it.
    """
    every = _all_blocks(block_tokens, t, a, c, mu, sigma, theta_per_ms)
    if every is not None:  # a diffusion deployment: the block sum alone (no quadrature to throw away)
        shape, args = every
        top, rest = _block_j(*args)
        res = np.clip(_survival(*args[:5], args[6]) + top + rest, 0.0, 1.0).reshape(shape)
        return np.where(theta_per_ms > 0, res, 1.0)
    z_t = _z_of(t, a, c, mu, sigma)
    surv = special.ndtr(-z_t)
    beta = theta_per_ms * np.maximum(t - a, 0.0)
    finite = np.isfinite(z_t)
    zt = np.where(finite, z_t, 0.0)
    upper = np.maximum(zt + 8.0, 0.0)  # phi(z_t - u) is negligible past u = z_t + 8
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fast = np.where(beta * sigma > 0, 30.0 / (beta * sigma), np.inf)
    split = np.minimum(upper, fast)
    out = np.zeros(np.shape(z_t))
    for lo, hi in ((np.zeros_like(split), split), (split, upper)):
        width = (hi - lo)[..., None]
        u = lo[..., None] + width * _GL_X
        f = np.exp(-0.5 * (zt[..., None] - u) ** 2) * _INV_SQRT2PI
        f = f * np.exp(-beta[..., None] * -np.expm1(-sigma[..., None] * u))
        out = out + (f * _GL_W).sum(axis=-1) * width[..., 0]
    # sigma = 0 (point mass s0): J = exp(-theta (t - s0)) when s0 <= t.
    point = np.where(z_t == np.inf, np.exp(-theta_per_ms * np.maximum(t - a - c * np.exp(mu), 0.0)), 0.0)
    j = np.where(sigma > 0, np.where(finite, out, 0.0), point)
    res = np.clip(surv + j, 0.0, 1.0)
    if block_tokens is not None:
        blk, args = _block_rows(np.shape(res), block_tokens, t, a, c, mu, sigma, theta_per_ms)
        if blk.size:
            top, rest = _block_j(*args)
            flat = res.ravel().copy()
            flat[blk] = np.clip(_survival(*args[:5], args[6]) + top + rest, 0.0, 1.0)
            res = flat.reshape(np.shape(res))
    return np.where(theta_per_ms > 0, res, 1.0)
