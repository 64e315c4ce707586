"""Latency model of a pooled deployment: service-time distribution, p95 of wait + service, replicas for every target.

One service-time model, used both for the p95 check and for queueing (DESIGN.md,
"Latency model"; issue 12), and replayed by the simulation (core.decision.simulate):

- **Output length** N of a workload is lognormal, fitted to its mean and
  `output_tokens_p95` (or to `DEFAULT_OUTPUT_CV` when no p95 is given).
- **Decode steps** are the physics' (core.performance.physics.decode_steps):
  N x steps per token for autoregressive, speculative and MoE serving; whole
  blocks for text diffusion, ceil(N / L) x S passes, so the service is affine
  in the effective length N_eff = L ceil(N / L) (N_eff = N when L = 1).
- **Service time** of a request (admission to last token) is S = a + c N_eff,
  where c = decode steps per token x step_ms(b) / (1 - phi) is the wall time per
  token at the running batch b, stretched by the share phi of the replica's time
  spent on other requests' prefills, and a = own prefill + the wait for the step
  in progress to end.
- **Requests in system** follow a birth–death chain over the pooled slots
  (replicas x concurrency cap, shortest-queue routing): with k in system the
  replicas complete decodes at D(k) = k / tau(b) (tau: a request's decode time at
  the batch b = k / replicas), and every admission first runs its prefill, which
  stalls its replica. Prefill time is spent in the state the admission enters,
  so the chain's ratio is pi(k) / pi(k - 1) = lambda / D(k) + lambda E[p] / min(k, n):
  the busier the deployment, the larger the share of its time in prefills. (A
  stretch 1 / (1 - phi) on the mean instead, as before issue 12's follow-up,
  left the busy states too light: compute-bound diffusion deployments queued
  4-8 x more often in simulation than that model said, and their p95 ran up to
  57 % over the analytic one.)
- **A request that finds a free slot** (probability 1 - C from the chain) sees
  the batch of the state it arrives in; the spread of the per-token time over
  those states multiplies N's (a lognormal factor with that mean and cv^2).
  **One that waits** (C, the chain's mass at or above every slot busy) waits
  Exp(theta), theta = D_eff (1 - r_q) / k, r_q the chain's ratio above the slots,
  k from the n cap slots and the cv^2 of the queue's drain with every slot busy
  (queueing.wait_scale: Kimura's interpolation between M/M/c and M/D/c, which is
  Allen–Cunneen's (1 + cv^2) / 2 on one slot), and is served at the full batch.
  The drain's cv^2 is that of the work each request brings, cap p + d over the
  traffic mixture: its prefill p stalls all cap slots of its replica once, its
  decode d holds one slot (pooled_state). The others' prefills, which stretch a
  slot's service, stall every slot of the replica together: a common pace, not
  spread between slots (reading the service's cv^2 put waits with 25-50 ms
  prefills and output cv 1.5 at 1.5-1.8 x the simulated ones).
- **p95 of time in system** T = W + S (+ the escalated requests' extra latency,
  one 5 % budget): solved numerically from P(T > t).

Everything is numpy over flat arrays: `PooledDeployments` holds R deployment
configurations (e.g. every owned route x candidate concurrency cap) and the I
workload rows on them (`row` says which configuration each belongs to).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from scipy import special

from core.decision import queueing
from core.decision.settings import DEFAULT as SETTINGS  # the numerics below (SearchSettings' help)
from core.models import Architecture

# Spread of a workload's output length when the inventory gives no output_tokens_p95.
# ESTIMATE (not measured): chat and agent outputs vary by about half their mean
# (coefficient of variation 0.5, lognormal: p95 = 1.85 x mean); replace it with the
# workload's own p95 where known.
DEFAULT_OUTPUT_CV = 0.5
# The latency target is a 95th percentile: one 5 % budget for the whole time in system.
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
# Points of the requests-in-system chain per configuration: exact (one per state) up to this many slots,
# a grid of this many points above (its log density is smooth there, and sums become integrals).
_CHAIN_POINTS = SETTINGS.chain_points
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


def length_ratios(mean_tokens, p95_tokens=None, block_tokens=None, q: float = 1.0 - SLO_TAIL):
    """The service distribution behind a physics mean, as ratios to the length the physics timed.

    physics.e2e_ms times one request of the mean output length n (in whole blocks for
    diffusion: N_eff(n) = L ceil(n / L)). With S = fixed + c N_eff and c fixed by that
    mean (c = (e2e - fixed) / N_eff(n)), the q-quantile, mean and variance of S are
    fixed + D x q_ratio, fixed + D x e_ratio and D^2 x v_ratio, D = e2e - fixed, where
    (q_ratio, e_ratio, v_ratio) = (N_eff quantile, E N_eff, Var N_eff) / N_eff(n): this returns
    them per row. The engine scores every workload x route with them (vectorised, no
    quadrature); it is the same lognormal, block-rounded length the plan sizes on.
    """
    m = np.asarray(mean_tokens, dtype=float)
    mu, sigma = output_lognormal(m, p95_tokens)
    L = _blocks(block_tokens, m.shape)
    at_mean = np.where(L > 1, L * np.maximum(np.ceil(m / L - 1e-12), 1.0), m)
    svc = ServiceTime(np.zeros(m.shape), np.ones(m.shape), mu, sigma, L)
    m1, m2 = effective_tokens_moments(mu, sigma, L)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (svc.quantile(q) / at_mean, m1 / at_mean, np.maximum(m2 - m1**2, 0.0) / at_mean**2)


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


# --------------------------------------------------------------------------- pooled deployments

@dataclass(frozen=True, eq=False)
class PooledDeployments:
    """R deployment configurations and the I workload rows that share them (row[i] in 0..R-1).

    Per configuration: `step_ms[r, b - 1]` is one decode step at running batch b
    for b = 1..B (entries past the cap are ignored), `concurrency_cap[r]` slots per
    replica, `steps_per_token[r]` decode steps per output token (1 for AR; 1 / tokens
    committed per step for speculative or diffusion serving), `block_tokens[r]` tokens
    per block of block-wise decoding (diffusion: L, each block taking L x steps_per_token
    steps; 1: no rounding). Per workload row: peak
    arrival rate, prefill ms on this deployment, output-length mean and p95 (NaN: the
    default spread), p95 target, the share escalated to a fallback and the latency
    that adds. Build it with `PooledDeployments.build(...)`, which checks the arrays.
    """

    row: np.ndarray
    arrival_rate_per_s: np.ndarray
    prefill_ms: np.ndarray
    output_mean_tokens: np.ndarray
    output_p95_tokens: np.ndarray
    slo_ms: np.ndarray
    escalated_share: np.ndarray
    escalated_extra_ms: np.ndarray
    step_ms: np.ndarray
    concurrency_cap: np.ndarray
    steps_per_token: np.ndarray
    block_tokens: np.ndarray | None = None  # (R,); None: 1 (set by build)
    # Derived once: output-length lognormal per workload row, its effective length's moments
    # (whole blocks), and per-configuration sums of the traffic's moments (everything the
    # pooled queue needs from the workloads).
    output_mu: np.ndarray = field(init=False, repr=False)
    output_sigma: np.ndarray = field(init=False, repr=False)
    row_block_tokens: np.ndarray = field(init=False, repr=False)
    effective_mean_tokens: np.ndarray = field(init=False, repr=False)
    effective_second_moment: np.ndarray = field(init=False, repr=False)
    moments: _Moments = field(init=False, repr=False)
    # (mu, sigma, E N_eff, E N_eff^2) per row, computed before (build's row_moments); not kept.
    preset: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.block_tokens is None:
            object.__setattr__(self, "block_tokens", np.ones(self.step_ms.shape[0]))
        L = self.block_tokens[self.row]
        object.__setattr__(self, "row_block_tokens", L)
        if self.preset is not None:
            mu, sigma, m1, m2 = self.preset
            object.__setattr__(self, "preset", None)
        else:
            mu, sigma = output_lognormal(self.output_mean_tokens, self.output_p95_tokens)
            m1, m2 = effective_tokens_moments(mu, sigma, L)
        object.__setattr__(self, "output_mu", mu)
        object.__setattr__(self, "output_sigma", sigma)
        object.__setattr__(self, "effective_mean_tokens", m1)
        object.__setattr__(self, "effective_second_moment", m2)
        object.__setattr__(self, "moments", _Moments.of(self))

    @classmethod
    def build(cls, *, row, arrival_rate_per_s, prefill_ms, output_mean_tokens, slo_ms, step_ms, concurrency_cap,
              output_p95_tokens=None, escalated_share=0.0, escalated_extra_ms=0.0,
              steps_per_token=1.0, block_tokens=1.0, row_moments=None) -> PooledDeployments:
        """Broadcast and check the arrays; a bad one raises ValueError naming it.

        row_moments: (mu, sigma, E N_eff, E N_eff^2) per row as output_lognormal and effective_tokens_moments
        give them for these rows' lengths and block size, when the caller holds them already (the fleet plan
        sizes the same members thousands of times)."""
        row = np.asarray(row, dtype=np.int64).ravel()
        n = row.size
        step = np.atleast_2d(np.asarray(step_ms, dtype=float))
        r_count = step.shape[0]
        cap = np.broadcast_to(np.asarray(concurrency_cap, dtype=np.int64), (r_count,)).copy()
        spt = np.broadcast_to(np.asarray(steps_per_token, dtype=float), (r_count,)).copy()
        blk = np.broadcast_to(np.asarray(block_tokens, dtype=float), (r_count,)).copy()

        def items(name, x):
            arr = np.asarray(np.nan if x is None else x, dtype=float)
            try:
                return np.broadcast_to(arr, (n,)).copy()
            except ValueError:
                raise ValueError(f"PooledDeployments: {name} has shape {arr.shape}, "
                                 f"not one value per workload row ({n})") from None

        arrays = {
            "arrival_rate_per_s": items("arrival_rate_per_s", arrival_rate_per_s),
            "prefill_ms": items("prefill_ms", prefill_ms),
            "output_mean_tokens": items("output_mean_tokens", output_mean_tokens),
            "output_p95_tokens": items("output_p95_tokens", output_p95_tokens),
            "slo_ms": items("slo_ms", slo_ms),
            "escalated_share": items("escalated_share", escalated_share),
            "escalated_extra_ms": items("escalated_extra_ms", escalated_extra_ms),
        }
        used = np.arange(step.shape[1])[None, :] < cap[:, None]
        checks = {
            "row": bool(((row >= 0) & (row < r_count)).all()),
            "concurrency_cap": bool(((cap >= 1) & (cap <= step.shape[1])).all()),
            "step_ms": bool((np.isfinite(step) & (step > 0))[used].all()),
            "steps_per_token": bool((spt > 0).all()),
            "block_tokens": bool(((blk >= 1) & (blk == np.round(blk))).all()),
            "arrival_rate_per_s": bool((arrays["arrival_rate_per_s"] >= 0).all()),
            "prefill_ms": bool((arrays["prefill_ms"] >= 0).all()),
            "output_mean_tokens": bool((arrays["output_mean_tokens"] > 0).all()),
            "output_p95_tokens": bool(~(arrays["output_p95_tokens"] <= 0).any()),
            "slo_ms": bool((arrays["slo_ms"] > 0).all()),
            "escalated_share": bool(((arrays["escalated_share"] >= 0) & (arrays["escalated_share"] <= 1)).all()),
            "escalated_extra_ms": bool((arrays["escalated_extra_ms"] >= 0).all()),
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"PooledDeployments: out-of-range or non-finite values in {', '.join(bad)}")
        return cls(row=row, step_ms=np.where(used, step, np.nan), concurrency_cap=cap, steps_per_token=spt,
                   block_tokens=blk, preset=row_moments, **arrays)

    @property
    def rows(self) -> int:
        """Number of deployment configurations R."""
        return self.step_ms.shape[0]

    @classmethod
    def concat(cls, parts: list[PooledDeployments]) -> PooledDeployments:
        """Several deployments' configurations as one (configurations in order, rows renumbered), each keeping its
        own traffic sums: min_replicas and pooled_state treat configurations independently, so the fleet plan
        sizes many deployments in one call (numpy's per-call overhead is most of a small sizing's time)."""
        if len(parts) == 1:
            return parts[0]
        width = max(p.step_ms.shape[1] for p in parts)
        offsets = np.cumsum([0] + [p.rows for p in parts])[:-1]

        def cat(name):
            return np.concatenate([getattr(p, name) for p in parts])

        out = copy.copy(parts[0])
        arrays: dict[str, Any] = {
            "row": np.concatenate([p.row + o for p, o in zip(parts, offsets, strict=True)]),
            # Entries past a configuration's cap are NaN (build) and never read.
            "step_ms": np.vstack([np.pad(p.step_ms, ((0, 0), (0, width - p.step_ms.shape[1])),
                                         constant_values=np.nan) for p in parts]),
            "moments": _Moments(*(np.concatenate([getattr(p.moments, f) for p in parts])
                                  for f in ("lam", "pre", "pre2", "n", "pre_n", "n2"))),
        }
        for name in ("arrival_rate_per_s", "prefill_ms", "output_mean_tokens", "output_p95_tokens", "slo_ms",
                     "escalated_share", "escalated_extra_ms", "concurrency_cap", "steps_per_token", "block_tokens",
                     "output_mu", "output_sigma", "row_block_tokens", "effective_mean_tokens",
                     "effective_second_moment"):
            arrays[name] = cat(name)
        for name, value in arrays.items():
            object.__setattr__(out, name, value)
        return out

    def at_caps(self, rows: np.ndarray, caps: np.ndarray) -> PooledDeployments:
        """This one configuration (a deployment's whole load, its step curve up to the largest cap) at each of
        `caps`, checking workload rows `rows` only: what build(...).with_load_of(self) gives for those rows,
        taken from this one's arrays instead of deriving the lognormals and block moments again (a sizing
        builds both, thousands of times per plan)."""
        if self.rows != 1:
            raise ValueError("at_caps: the load must be one configuration")
        caps = np.asarray(caps, dtype=np.int64)
        J, k = caps.size, rows.size
        width = self.step_ms.shape[1]
        if ((caps < 1) | (caps > width)).any():
            raise ValueError("at_caps: a cap beyond the load's step curve")
        out = copy.copy(self)
        arrays: dict[str, Any] = {name: np.tile(getattr(self, name)[rows], J) for name in (
            "arrival_rate_per_s", "prefill_ms", "output_mean_tokens", "output_p95_tokens", "slo_ms",
            "escalated_share", "escalated_extra_ms", "output_mu", "output_sigma", "row_block_tokens",
            "effective_mean_tokens", "effective_second_moment")}
        arrays["row"] = np.repeat(np.arange(J, dtype=np.int64), k)
        arrays["step_ms"] = np.where(np.arange(width)[None, :] < caps[:, None], self.step_ms[0][None, :], np.nan)
        arrays["concurrency_cap"] = caps.copy()
        arrays["steps_per_token"] = np.repeat(self.steps_per_token, J)
        arrays["block_tokens"] = np.repeat(np.asarray(self.block_tokens), J)  # set by __post_init__
        m = self.moments
        arrays["moments"] = _Moments(*(np.repeat(getattr(m, f), J) for f in ("lam", "pre", "pre2", "n", "pre_n", "n2")))
        for name, value in arrays.items():
            object.__setattr__(out, name, value)
        return out

    def with_load_of(self, load: PooledDeployments) -> PooledDeployments:
        """The same configurations and checked rows, queueing under `load`'s traffic (one configuration, tiled).

        The queue reads the traffic only through per-configuration sums (_Moments), so a
        sizing may check a few rows (those that can bind) while every row's traffic loads it.
        """
        if load.rows != 1:
            raise ValueError("with_load_of: the load must be one configuration")
        m = load.moments
        tiled = _Moments(*(np.repeat(getattr(m, f), self.rows) for f in ("lam", "pre", "pre2", "n", "pre_n", "n2")))
        out = copy.copy(self)
        object.__setattr__(out, "moments", tiled)
        return out


@dataclass(frozen=True, eq=False)
class _Moments:
    """Per configuration: sums over its workloads of lambda x (1, p, p^2, E N_eff, p E N_eff, E N_eff^2) (p = prefill ms)."""

    lam: np.ndarray
    pre: np.ndarray
    pre2: np.ndarray
    n: np.ndarray
    pre_n: np.ndarray
    n2: np.ndarray

    @classmethod
    def of(cls, dep: PooledDeployments) -> _Moments:
        R, r, lam = dep.step_ms.shape[0], dep.row, dep.arrival_rate_per_s
        en, en2 = dep.effective_mean_tokens, dep.effective_second_moment
        p = dep.prefill_ms

        def s(x):
            return np.bincount(r, lam * x, minlength=R)

        return cls(s(np.ones_like(p)), s(p), s(p * p), s(en), s(p * en), s(en2))


def _step_at(step_ms, b):
    """step_ms(b) by linear interpolation between integer batches, and its slope d step / d b.

    b has one value per configuration (R,) or a row of values per configuration (R, G).
    """
    # np.minimum/np.maximum rather than np.clip: this runs thousands of times on a few values per plan,
    # where np.clip's dispatch costs more than the arithmetic. b >= 1, so truncation is the floor.
    top = step_ms.shape[1]
    b = np.minimum(np.maximum(b, 1.0), float(top))
    lo = np.minimum(np.maximum(np.asarray(b).astype(np.int64), 1), top)  # bounded even for a NaN batch
    hi = np.minimum(lo + 1, top)
    idx = np.arange(step_ms.shape[0]).reshape((-1,) + (1,) * (np.ndim(b) - 1))
    s_lo, s_hi = step_ms[idx, lo - 1], step_ms[idx, hi - 1]
    frac = b - lo
    slope = np.where((hi > lo) & np.isfinite(s_hi), s_hi - s_lo, 0.0)
    return s_lo + frac * slope, slope


@dataclass(frozen=True, eq=False)
class PooledState:
    """Deployment configurations at given replica counts: arrays over the R configurations.

    A workload row i on configuration r is served in a + c N_eff ms: a request that
    found a free slot with a = prefill_i + join_ms[r], c = ms_per_token[r] x X, X the
    batch it finds (lognormal, mean 1, cv^2 batch_cv2[r], folded into N's spread);
    one that waited with a = prefill_i + full_join_ms[r], c = waited_ms_per_token[r]
    (the full batch, the cap).
    """

    replicas: np.ndarray
    arrival_rate_per_s: np.ndarray
    batch: np.ndarray  # mean running batch a request that finds a free slot joins (itself included)
    prefill_share: np.ndarray  # phi: share of a replica's time spent on prefill steps
    prefill_stretch: np.ndarray  # 1 / (1 - phi_t): own prefill and decode stretched by others' prefills
    offered_load: np.ndarray  # requests in service on average (Erlangs)
    join_ms: np.ndarray
    ms_per_token: np.ndarray  # mean over the states a request that finds a free slot arrives in
    batch_cv2: np.ndarray  # cv^2 of that per-token time over those states
    # Variance rate of the others' prefills landing on a request's replica while it decodes:
    # lambda_t E[p^2] ms^2 per ms (lambda_t = lambda_r shared: the arrivals its replica takes).
    interference_var_per_ms: np.ndarray
    full_join_ms: np.ndarray  # none: one that waited is admitted at the boundary where its slot frees
    full_ms_per_token: np.ndarray  # while a queue waits (the wait's completions): each one admits a prefill
    waited_ms_per_token: np.ndarray  # a request that waited, over its service: the queue drains meanwhile
    service_mean_ms: np.ndarray  # rate-weighted mean service of requests that find a free slot
    full_service_mean_ms: np.ndarray  # the same at the full batch, where a queue forms
    full_service_cv2: np.ndarray  # cv^2 of the service mixture at the full batch
    drain_cv2: np.ndarray  # cv^2 of the work a request brings to the queue's drain (the wait's scale)
    p_wait: np.ndarray  # C: P(a request waits for a slot)
    wait_rate_per_ms: np.ndarray  # theta: the waiting time of one that waits is Exp(theta)
    stable: np.ndarray

    def take(self, start: int, stop: int) -> PooledState:
        """Configurations start..stop-1 (one deployment's share of a state computed for several)."""
        return PooledState(**{f.name: getattr(self, f.name)[start:stop] for f in fields(self)})

    def service(self, dep: PooledDeployments, idx=None) -> ServiceTime:
        """Service time of workload rows idx (default all) when they find a free slot (the batch's spread folded in)."""
        idx = np.arange(dep.row.size) if idx is None else idx
        r = dep.row[idx]
        # The others' prefills arrive as a compound Poisson stream: over a decode of T ms (its tail
        # length's) they add phi_t T / (1 - phi_t) on average (the stretch in ms_per_token) with
        # variance v T / (1 - phi_t)^3: a cv^2 of v / ((1 - phi_t) T) on its decode time.
        keep = 1.0 / self.prefill_stretch[r]  # 1 - phi_t
        L = dep.row_block_tokens[idx]
        n95 = np.exp(dep.output_mu[idx] + Z95 * dep.output_sigma[idx])
        n95 = np.where(L > 1, L * np.maximum(np.ceil(n95 / L - 1e-12), 1.0), n95)
        t_ref = self.ms_per_token[r] * keep * n95
        with np.errstate(divide="ignore", invalid="ignore"):
            cv2_int = np.where(t_ref > 0, self.interference_var_per_ms[r] / (keep * t_ref), 0.0)
        s2 = np.log1p(self.batch_cv2[r]) + np.log1p(np.nan_to_num(cv2_int, nan=0.0, posinf=0.0))
        a = dep.prefill_ms[idx] * self.prefill_stretch[r] + self.join_ms[r]
        if not (L > 1).any():  # X N is one lognormal: fold it here, once, rather than in every survival
            return ServiceTime(a, self.ms_per_token[r], dep.output_mu[idx] - s2 / 2.0,
                               np.sqrt(dep.output_sigma[idx] ** 2 + s2), L)
        # A spread of the per-token time (X in ServiceTime), not of the length: whole blocks round N only.
        return ServiceTime(a, self.ms_per_token[r], dep.output_mu[idx], dep.output_sigma[idx], L, np.sqrt(s2))

    def service_full(self, dep: PooledDeployments, idx=None) -> ServiceTime:
        """Service time of workload rows idx (default all) when they waited (full batch)."""
        idx = np.arange(dep.row.size) if idx is None else idx
        r = dep.row[idx]
        return ServiceTime(dep.prefill_ms[idx] + self.full_join_ms[r], self.waited_ms_per_token[r], dep.output_mu[idx],
                           dep.output_sigma[idx], dep.row_block_tokens[idx])


def pooled_state(dep: PooledDeployments, replicas) -> PooledState:
    """Requests in system, batch, service and wait distribution of every configuration with `replicas` replicas.

    The birth–death chain (module docstring) over k requests in system on n replicas x
    cap slots: pi(k) / pi(k - 1) = lambda tau(b_k) / k + lambda E[p] / min(k, n), b_k =
    k / n the replicas' batch (shortest-queue routing keeps them within one of it),
    tau(b) = steps per token x step_ms(b) x E[N_eff] + step_ms(b) / 2 the decode time
    at that batch plus the wait for a step boundary. Above n cap the ratio stays at
    r_q = lambda tau(cap) / (n cap) + lambda E[p] / n (a geometric queue; stable while
    r_q < 1). It has no free parameter: with no prefill and exponential service it is
    the M/M/c chain with batch-dependent speed (exact), with prefills it puts their time
    where it is spent, in the busy states.

    By PASTA an arrival sees the chain's distribution: C = P(k >= n cap) waits, any
    other joins the least-loaded replica at batch floor(k / n) + 1, where a token takes
    c_k = steps per token x step_ms(b) / (1 - phi), phi = lambda E[p] / n (the others'
    prefills interleave), after a join wait for the step in progress (none on an idle
    replica). One that waited is served at the cap, where each completion admits the
    next request, so the prefill share there is f_q = phi / r_q, of which the other
    cap - 1 slots' prefills stall it; it is admitted where its slot frees (no join wait).

    The wait of one that waits is Exp(theta), theta = D_eff (1 - r_q) / k: D_eff the
    completions per ms with every slot busy, k = queueing.wait_scale (Kimura 1994) read
    from the cv^2 of the drain, not of a slot's service. In heavy traffic the mean wait
    of M/G/c is (1 + cv^2) / 2 over M/M/c's, cv^2 the variability of the departures
    while every server is busy (Köllerström 1974; Iglehart & Whitt 1970, "Multiple
    channel queues in heavy traffic", Adv. Appl. Prob. 2): there the n cap slots'
    decodes complete as c superposed renewal streams (per departure, variance Var d / c^2
    on a mean E d / c), and each admission's prefill stalls its replica's cap slots
    together (p / n of the pool's time). So a departure costs w / (n cap), w = cap p + d,
    and k reads cv^2(w) over the traffic's members (each member's p with its own N_eff:
    E w^2 from the sums of lambda p^2, p N_eff and N_eff^2). No constant is fitted. No
    prefill: cv^2(w) = cv^2(N_eff), the service's, as before; exponential service
    without prefills gives k = 1 (M/M/c, exact); one slot (n = cap = 1): w = p + d is the
    service, k = (1 + cv^2) / 2 (Pollaczek–Khinchine, exact). The service's cv^2
    (full_service_cv2, read before) counts the others' prefills as spread of a slot's
    own service: on 1 x 4 slots with 25-50 ms prefills and output cv 1.5 the mean wait
    was 1.5-1.8 x the simulated (now 1.15-1.2 x), on generated seed 14's 14-member pool
    1.22 x (now 1.03 x) (bench/bench_wait_scale.py, tests/test_simulate.py).
    """
    m = dep.moments
    R = dep.rows
    n = np.broadcast_to(np.asarray(replicas, dtype=float), (R,)).astype(float)
    lam = m.lam
    has = lam > 0
    safe_lam = np.where(has, lam, 1.0)
    pbar, p2 = m.pre / safe_lam, m.pre2 / safe_lam
    lam_ms = lam / 1000.0
    live = n > 0
    safe_n = np.where(live, n, 1.0)
    phi = np.where(live, lam_ms * pbar / safe_n, np.inf)
    cap = dep.concurrency_cap.astype(float)
    servers = safe_n * cap
    spt = dep.steps_per_token
    en = m.n / safe_lam  # mixture E[N_eff]
    # The step in progress when a request is admitted: a decode step (share 1 - phi, mean
    # residual step / 2) or a prefill step (share phi, size-biased residual E[p^2] / 2 E[p]).
    pre_resid = np.divide(p2, 2.0 * pbar, out=np.zeros(R), where=pbar > 0)

    # The chain on a grid: point g stands for the states (k_{g-1}, k_g], k_g = g x delta.
    delta = np.maximum(servers / _CHAIN_POINTS, 1.0)
    # Small deployments need only their own states (most plans: a few replicas x a cap of 4-64).
    points = int(min(_CHAIN_POINTS, np.ceil(np.max(servers, initial=1.0))))
    g = np.arange(points + 1, dtype=float)[None, :]
    k = g * delta[:, None]
    inside = k <= servers[:, None] * (1.0 + 1e-12)
    x = np.maximum(k - (delta[:, None] - 1.0) / 2.0, 1.0)  # the middle state of the points' interval
    b_x = np.minimum(np.maximum(x / safe_n[:, None], 1.0), cap[:, None])
    step_x, _ = _step_at(dep.step_ms, b_x)
    tau_x = (spt * en)[:, None] * step_x + step_x / 2.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = lam_ms[:, None] * (tau_x / np.minimum(x, servers[:, None]) + pbar[:, None] / np.minimum(x, safe_n[:, None]))
        log_r = np.where(inside & (g > 0), np.log(np.where(has[:, None], ratio, 1.0)), 0.0)
    log_end = np.cumsum(log_r * delta[:, None], axis=1)  # log pi(k_g) / pi(0)
    log_mid = log_end - (delta[:, None] - 1.0) / 2.0 * log_r  # log pi at the middle of the point's interval
    step_cap, _ = _step_at(dep.step_ms, cap)
    tau_cap = spt * en * step_cap + step_cap / 2.0
    r_q = np.where(live, lam_ms * (tau_cap / servers + pbar / safe_n), np.inf)
    stable = live & (r_q < 1.0)
    last = inside & (k >= servers[:, None] * (1.0 - 1e-12))
    # Weights of the points for arrivals that find a free slot (k < n cap), and the queue's mass.
    w = np.where(g == 0, 1.0, np.where(inside & ~last, delta[:, None], np.where(last, delta[:, None] - 1.0, 0.0)))
    log_last = np.where(last, log_end, -np.inf).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_queue = np.where(stable, log_last - np.log1p(-np.minimum(r_q, 1.0 - 1e-300)), np.inf)
        log_w = np.where(w > 0, np.log(np.maximum(w, 1e-300)) + log_mid, -np.inf)
    top = np.maximum(log_w.max(axis=1), np.where(np.isfinite(log_queue), log_queue, -np.inf))
    top = np.where(np.isfinite(top), top, 0.0)
    pw = np.exp(log_w - top[:, None])
    free_mass = pw.sum(axis=1)
    queue_mass = np.where(stable, np.exp(np.minimum(log_queue - top, 700.0)), 0.0)
    cw = np.where(has, np.where(stable, queue_mass / (free_mass + queue_mass), 1.0), 0.0)
    # What an arrival that finds a free slot sees: the batch it joins, the per-token time there, the join wait.
    k_arr = np.where(g == 0, 0.0, np.round(k - (delta[:, None] - 1.0) / 2.0))
    b_arr = np.minimum(np.floor(k_arr / safe_n[:, None]) + 1.0, cap[:, None])
    step_arr = np.take_along_axis(dep.step_ms, b_arr.astype(np.int64) - 1, axis=1)  # whole batches: no interpolation
    phi_c = np.minimum(phi, 1.0)
    busy = k_arr >= safe_n[:, None]  # every replica runs something: wait for the step in progress
    # Arriving at a busy replica: the step in progress, or the prefill queue's M/G/1 wait.
    phi_q = np.minimum(phi, 1.0 - 1e-9)
    join_arr = busy * ((1.0 - phi_q)[:, None] * step_arr / 2.0 + (phi_q * pre_resid / (1.0 - phi_q))[:, None])
    pf = pw / np.where(free_mass > 0, free_mass, 1.0)[:, None]
    # Others' arrivals join the tagged request's replica only where no replica runs fewer (shortest
    # queue): with n - 1 or more others in system. Their prefills stall it, during its own prefill
    # (a busy period: p / (1 - phi_t)) and during its decode (the stretch 1 / (1 - phi_t)).
    shared = (pf * (k_arr >= safe_n[:, None] - 1.0)).sum(axis=1)
    phi_t = np.minimum(phi * shared, 1.0 - 1e-9)
    pre_stretch = 1.0 / (1.0 - phi_t)
    interference = lam_ms / safe_n * shared * p2
    c_arr = step_arr * (spt * pre_stretch)[:, None]
    with np.errstate(invalid="ignore"):
        c = (pf * c_arr).sum(axis=1)
        c2 = (pf * c_arr**2).sum(axis=1)
        batch_cv2 = np.where(c > 0, np.maximum(c2 / np.where(c > 0, c, 1.0) ** 2 - 1.0, 0.0), 0.0)
        batch_cv2 = np.where(np.isfinite(batch_cv2), batch_cv2, 0.0)
        join = (pf * join_arr).sum(axis=1)
        batch = (pf * b_arr).sum(axis=1)
        s_bar = pbar * pre_stretch + join + c * en
    a_load = lam * s_bar / 1000.0
    # At the cap: each completion admits the next waiting request, so prefills take f_q of the time.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        queued = stable & has
        f_q = np.where(queued, np.minimum(phi / np.where(r_q > 0, r_q, 1.0), 1.0 - 1e-9), phi_c)
        f_q = np.maximum(f_q, phi_c)
        # A request decoding at the cap is stalled by the prefills of the requests admitted into the other
        # cap - 1 slots of its replica, not by its own (which it ran before): per ms of decode, (cap - 1) / cap
        # of the f_q / (1 - f_q) ms of prefill each completion brings. (The whole f_q / (1 - f_q) counted a
        # request's own prefill twice: one prefill's time too many, the most on a cap of 4; on one replica of
        # cap 4 with 25 ms prefills a waited request's service was 323 ms against 293 simulated.)
        c_dec = spt * step_cap  # per token at the cap, without prefills
        c_full = np.where(f_q < 1.0, c_dec * (1.0 + (cap - 1.0) / cap * f_q / (1.0 - f_q)), np.inf)
        # One that waited is admitted at the step boundary where its slot frees: no wait to join.
        join_full = np.zeros(R)
        s_full = pbar + c_full * en
        # E[S^2] = sum lambda_i E[(p_i + c N_eff,i)^2] / lambda.
        pn2, n2 = 2.0 * m.pre_n / safe_lam, m.n2 / safe_lam
        second = p2 + c_full * (pn2 + c_full * n2)
        cv2_full = np.where(queued, np.maximum(second / s_full**2 - 1.0, 0.0), 1.0)
        # The wait's scale reads the spread of the queue's drain, not of a slot's service (docstring): with
        # every slot busy a request costs the pool p / n (its prefill stalls its replica's cap slots) +
        # d / (n cap) (its decode, d = steps per token x step_ms(cap) x N_eff, holds one slot), i.e.
        # w / (n cap), w = cap p + d; E[w^2] from the traffic's sums (a member's p with its own N_eff).
        w1 = cap * pbar + c_dec * en
        w2 = cap * (cap * p2 + c_dec * pn2) + c_dec * c_dec * n2
        drain_cv2 = np.where(queued, np.maximum(w2 / (w1 * w1) - 1.0, 0.0), 1.0)
        kk = queueing.wait_scale(servers, r_q, drain_cv2)
        d_eff = servers / tau_cap * (1.0 - f_q)  # completions per ms with every slot busy
        theta = np.where(stable, d_eff * (1.0 - r_q) / kk, 0.0)
        # A request that waited starts at the cap, where each completion admits a waiting request's prefill
        # (share f_q). That lasts while the lam / theta that arrived during its wait are admitted, at the next
        # completions (rate d_eff); then prefills come as arrivals do (share phi_t, as for one that found a
        # slot). Its per-token time blends the two by the share of its decode before that. (f_q for the whole
        # decode put the analytic p95 8-14 % over the simulated one on 1-2 replica cap-4 pools; measured
        # per-token excess over a free-slot request 0.07-0.10 ms, f_q gave 0.28-0.33, this 0.12-0.15.)
        live_q = stable & (theta > 0) & (d_eff > 0)
        t_queue = np.where(live_q, lam_ms / np.where(live_q, theta * d_eff, 1.0), np.inf)
        c_top = spt * step_cap * pre_stretch
        u = np.clip(np.where(c_full * en > 0, t_queue / (c_full * en), 1.0), 0.0, 1.0)
        c_waited = np.where(np.isfinite(c_full), u * c_full + (1.0 - u) * c_top, c_full)
    return PooledState(
        replicas=n, arrival_rate_per_s=lam, batch=batch, prefill_share=phi, prefill_stretch=pre_stretch, offered_load=a_load,
        join_ms=join, ms_per_token=c, batch_cv2=batch_cv2, interference_var_per_ms=interference, full_join_ms=join_full, full_ms_per_token=c_full,
        waited_ms_per_token=c_waited,
        service_mean_ms=s_bar, full_service_mean_ms=s_full, full_service_cv2=cv2_full, drain_cv2=drain_cv2,
        p_wait=cw, wait_rate_per_ms=theta, stable=stable,
    )


def _j_bounds(t, a, c, mu, sigma, theta_per_ms, block_tokens=None):
    """Closed-form (lower, upper) bounds of J = E[exp(-theta (t - S)); S <= t].

    Whole blocks (L > 1): the block sum of _block_j, without and with its bound on the lowest blocks.

    With u = z_t - z, t - S(z) = (t - a)(1 - exp(-sigma u)) and beta = theta (t - a):
    - lower: 1 - exp(-sigma u) <= sigma u gives J >= phi(z_t) M(kappa - z_t),
      kappa = beta sigma, M(x) = P(Z > x) / phi(x) the Mills ratio;
    - upper: 1 - exp(-sigma u) is concave, so above its chord on [0, U]; then
      J <= phi(z_t) M(l - z_t) + exp(-beta (1 - exp(-sigma U))) P(Z < z_t - U) with
      l = beta (1 - exp(-sigma U)) / U; the least over U in {0.5, 1, 2, 4}.
    """
    every = _all_blocks(block_tokens, t, a, c, mu, sigma, theta_per_ms)
    if every is not None:
        shape, args = every
        top, rest = _block_j(*args)
        return top.reshape(shape), (top + rest).reshape(shape)
    z_t = _z_of(t, a, c, mu, sigma)
    ok = np.isfinite(z_t) & (sigma > 0)
    zt = np.where(ok, z_t, 0.0)
    beta = theta_per_ms * np.maximum(t - a, 0.0)
    dens = np.exp(-0.5 * zt**2) * _INV_SQRT2PI
    mills = np.sqrt(np.pi / 2.0)

    def first(rate):
        return dens * mills * special.erfcx((rate - zt) / _SQRT2)

    lower = first(beta * sigma)
    upper = np.full(np.shape(zt), np.inf)
    for u in (0.5, 1.0, 2.0, 4.0):
        q = -np.expm1(-sigma * u)
        upper = np.minimum(upper, first(beta * q / u) + np.exp(-beta * q) * special.ndtr(zt - u))
    # Outside the lognormal's support (t <= a: J = 0; sigma = 0 or t past every S: decided by the quadrature).
    lo, hi = np.where(ok, lower, 0.0), np.where(ok, np.minimum(upper, special.ndtr(zt)), np.where(t > a, 1.0, 0.0))
    if block_tokens is not None:
        blk, args = _block_rows(np.shape(lo), block_tokens, t, a, c, mu, sigma, theta_per_ms)
        if blk.size:
            top, rest = _block_j(*args)
            lo, hi = lo.ravel().copy(), hi.ravel().copy()
            lo[blk], hi[blk] = top, top + rest
            lo, hi = lo.reshape(np.shape(z_t)), hi.reshape(np.shape(z_t))
    return lo, hi


def _p_items(dep: PooledDeployments, st: PooledState, idx, t, exact: bool = True):
    """P(T > t) for workload rows idx; with exact=False, (lo, hi) bounds in closed form.

    A request finds a free slot with probability 1 - C and is served at the typical
    batch; otherwise it waits Exp(theta) and is served at the full batch:
    P(W + S > t) = (1 - C) P(S_free > t) + C P(E + S_full > t). An escalated request
    (share e) is served here, then by the fallback, which adds x ms:
    P(T > t) = (1 - e) P(W + S > t) + e P(W + S > t - x) (one 5 % budget).
    Bounds: the waited term P(S_full > t) + J with J between its closed-form bounds (_j_bounds).
    """
    r = dep.row[idx]
    c_wait = st.p_wait[r]
    sf, sw = st.service(dep, idx), st.service_full(dep, idx)
    free = (sf.a_ms, sf.c_ms_per_token, sf.mu, sf.sigma, sf.block_tokens, sf.spread_sigma)
    full = (sw.a_ms, sw.c_ms_per_token, sw.mu, sw.sigma)
    blk = sw.block_tokens
    theta = st.wait_rate_per_ms[r]
    e = dep.escalated_share[idx]

    def one(tt, sel=None):
        pick = (lambda x: x) if sel is None else (lambda x: x[sel] if np.ndim(x) else x)
        cw, args_f, args_w, th = pick(c_wait), tuple(map(pick, free)), tuple(map(pick, full)), pick(theta)
        bl = pick(blk)
        base = (1.0 - cw) * _survival(tt, *args_f)
        if exact:
            return base + cw * _p_exceed_with_wait(tt, *args_w, th, bl)
        surv = _survival(tt, *args_w, bl)
        j_lo, j_hi = _j_bounds(tt, *args_w, th, bl)
        waited = th > 0
        return (base + cw * np.where(waited, np.minimum(surv + j_lo, 1.0), 1.0),
                base + cw * np.where(waited, np.minimum(surv + j_hi, 1.0), 1.0))

    esc = np.flatnonzero(e > 0)
    unstable = ~st.stable[r]
    if exact:
        out = one(t)
        if esc.size:
            out[esc] = (1.0 - e[esc]) * out[esc] + e[esc] * one(t[esc] - dep.escalated_extra_ms[idx[esc]], esc)
        return np.where(unstable, 1.0, out)
    lo, hi = one(t)
    if esc.size:
        lo_x, hi_x = one(t[esc] - dep.escalated_extra_ms[idx[esc]], esc)
        lo[esc] = (1.0 - e[esc]) * lo[esc] + e[esc] * lo_x
        hi[esc] = (1.0 - e[esc]) * hi[esc] + e[esc] * hi_x
    return np.where(unstable, 1.0, lo), np.where(unstable, 1.0, hi)


def _p_fast(dep, st, idx, t):
    """P(T > t), skipping the quadrature where no request waits (C = 0)."""
    out = np.ones(idx.size)
    waits = st.p_wait[dep.row[idx]] > 0
    some = np.flatnonzero(waits)
    if some.size:
        out[some] = _p_items(dep, st, idx[some], t[some])
    none = np.flatnonzero(~waits)
    if none.size:
        out[none] = _p_items(dep, st, idx[none], t[none], exact=False)[0]
    return out


def _misses(dep, st, idx) -> np.ndarray:
    """Whether P(T > slo) > 5 % for workload rows idx: the bounds decide most, the quadrature the rest."""
    t = dep.slo_ms[idx]
    lo, hi = _p_items(dep, st, idx, t, exact=False)
    out = lo > SLO_TAIL
    unsure = np.flatnonzero(~out & (hi > SLO_TAIL))
    if unsure.size:
        out[unsure] = _p_items(dep, st, idx[unsure], t[unsure]) > SLO_TAIL
    return out


def p_exceed(dep: PooledDeployments, replicas, t_ms, state: PooledState | None = None) -> np.ndarray:
    """P(time in system > t) for every workload row (escalated requests included; 1 where unstable)."""
    st = pooled_state(dep, replicas) if state is None else state
    idx = np.arange(dep.row.size)
    return _p_fast(dep, st, idx, np.broadcast_to(np.asarray(t_ms, dtype=float), idx.shape).copy())


def percentile_ms(dep: PooledDeployments, replicas, q: float = 1.0 - SLO_TAIL,
                  state: PooledState | None = None, idx=None) -> np.ndarray:
    """The q-quantile of time in system for workload rows idx (default all; inf where unstable).

    Solves P(T > t) = 1 - q by the Illinois method (a safeguarded secant) inside a
    bracket: below, the smaller of the free and full-batch service quantiles (waiting
    and escalation only add time); above, the full-batch service's 1 - tail/4 quantile
    plus a wait exceeded with probability tail/4 plus the escalation's extra latency.
    Stops at a relative width of 1e-5.
    """
    st = pooled_state(dep, replicas) if state is None else state
    tail = 1.0 - q
    idx = np.arange(dep.row.size) if idx is None else np.asarray(idx)
    out = np.full(idx.size, np.inf)
    live = np.flatnonzero(st.stable[dep.row[idx]])
    if live.size == 0:
        return out
    items = idx[live]
    r = dep.row[items]
    free, full = st.service(dep, items), st.service_full(dep, items)
    theta = st.wait_rate_per_ms[r]
    with np.errstate(divide="ignore"):
        wait_hi = np.where(st.p_wait[r] > 0, np.log(4.0 / tail) / np.where(theta > 0, theta, np.inf), 0.0)
    a = np.minimum(free.quantile_bounds(q)[0], full.quantile(q))
    b = np.maximum(free.quantile_bounds(1.0 - tail / 4.0)[1], full.quantile(1.0 - tail / 4.0)) + wait_hi \
        + dep.escalated_extra_ms[items]
    b = np.maximum(b, a)
    fa = _p_fast(dep, st, items, a) - tail
    fb = _p_fast(dep, st, items, b) - tail
    side = np.zeros(items.size)  # Illinois bookkeeping: which end was kept last time
    todo = np.flatnonzero((b - a > 1e-5 * b) & (fa > 0) & (fb < 0))
    for _ in range(100):
        if todo.size == 0:
            break
        aa, bb, fa_, fb_ = a[todo], b[todo], fa[todo], fb[todo]
        c = (aa * fb_ - bb * fa_) / (fb_ - fa_)
        c = np.where((c > aa) & (c < bb), c, (aa + bb) / 2.0)
        fc = _p_fast(dep, st, items[todo], c) - tail
        up = fc > 0  # the root lies above c
        # Illinois: when the same end is kept twice, halve its value so the secant moves.
        new_a, new_b = np.where(up, c, aa), np.where(up, bb, c)
        new_fa = np.where(up, fc, np.where(side[todo] < 0, fa_ / 2.0, fa_))
        new_fb = np.where(up, np.where(side[todo] > 0, fb_ / 2.0, fb_), fc)
        a[todo], b[todo], fa[todo], fb[todo] = new_a, new_b, new_fa, new_fb
        side[todo] = np.where(up, 1.0, -1.0)
        todo = todo[(b[todo] - a[todo] > 1e-5 * b[todo]) & (fc != 0)]
    res = (a + b) / 2.0
    res = np.where(fa <= 0, a, np.where(fb >= 0, b, res))  # the bracket's own end is the quantile
    out[live] = res
    return out


def p95_ms(dep: PooledDeployments, replicas, state: PooledState | None = None, idx=None) -> np.ndarray:
    """p95 of time in system (wait + service, escalations included) for workload rows idx (default all)."""
    return percentile_ms(dep, replicas, 1.0 - SLO_TAIL, state, idx)


# --------------------------------------------------------------------------- sizing

@dataclass(frozen=True, eq=False)
class ReplicaSizing:
    """Fewest replicas per configuration meeting every workload's p95 target.

    replicas: -1 where no count helps (the service tail alone misses a target, see
    service_tail_misses) or none up to max_replicas does; 0 where there is no traffic.
    binding: the workload row that needs the most replicas (the one that misses with
    one replica fewer), or a row whose service alone misses; -1 where none.
    """

    replicas: np.ndarray
    binding: np.ndarray
    service_tail_misses: np.ndarray


# Workload rows per configuration checked in the search before all are verified.
_CANDIDATES_PER_ROW = SETTINGS.candidates_per_row


def min_replicas(dep: PooledDeployments, max_replicas: int = 100_000, binding_rows: bool = True) -> ReplicaSizing:
    """Fewest replicas such that every workload row on each configuration has P(T > slo) <= 5 %.

    binding_rows=False skips naming the binding row of configurations that can be served (two more
    evaluations of every candidate; the fleet plan's search does not read it): -1 there.

    - A target missed even with unlimited replicas (batch 1, no one else's prefill,
      no wait) makes the configuration hopeless: -1 with that row as binding.
    - More replicas never hurt (smaller batch, less prefill interference, less
      waiting), so per configuration the answer is a galloping search up from the
      stability bound (lambda E[S_full] < n x cap) and a bisection.
    - The search checks only a few candidate rows per configuration (those most
      likely to miss at a first guess), then verifies every row at the answer; a row
      that misses there joins the candidates and the search resumes above. The
      result is exact for all rows; the work is a few full passes, not one per step.
    """
    R = dep.rows
    r = dep.row
    replicas = np.zeros(R, dtype=np.int64)
    binding = np.full(R, -1, dtype=np.int64)
    lam = dep.moments.lam

    # The service tail alone at batch 1 with no interference: the best any replica count gives.
    alone_c = (dep.steps_per_token * dep.step_ms[:, 0])[r]
    alone = ServiceTime(dep.prefill_ms, alone_c, dep.output_mu, dep.output_sigma, dep.row_block_tokens)
    e, x, slo = dep.escalated_share, dep.escalated_extra_ms, dep.slo_ms
    p_alone = (1.0 - e) * alone.survival(slo) + e * alone.survival(slo - x)
    hopeless_item = (p_alone > SLO_TAIL) & (dep.arrival_rate_per_s > 0)
    misses = np.bincount(r, hopeless_item, minlength=R) > 0
    replicas[misses] = -1
    binding[misses] = _argmax_by_row(r, np.where(hopeless_item, p_alone, -np.inf), R)[misses]
    live_rows = ~misses & (lam > 0)
    if not live_rows.any():
        return ReplicaSizing(replicas, binding, misses)

    # Stability bound with no prefill interference: lo replicas are too few.
    no_interference = pooled_state(dep, np.full(R, 1e15))
    cap = dep.concurrency_cap.astype(float)
    lo = np.floor(lam * no_interference.full_service_mean_ms / 1000.0 / cap).astype(np.int64)
    lo = np.where(live_rows, np.maximum(lo, 0), 0)
    items_all = np.flatnonzero(live_rows[r])
    # First guess of the binding rows: the most likely to miss at square-root staffing.
    guess = np.ceil(lo + 2.0 * np.sqrt(lo) + 1.0)
    p_guess = _p_items(dep, pooled_state(dep, guess), items_all, slo[items_all], exact=False)[0]
    cand = _top_by_row(r[items_all], p_guess, _CANDIDATES_PER_ROW, items_all)
    todo = np.flatnonzero(live_rows)
    hi = np.zeros(R, dtype=np.int64)
    found = np.zeros(R, dtype=bool)
    start: np.ndarray | None = guess[todo]
    for _ in range(64):
        hi_t, ok_t = _search(dep, todo, cand, lo[todo], max_replicas, start)
        start = None  # a resumed search starts just above the count where a row missed
        hi[todo], found[todo] = hi_t, ok_t
        verify = todo[ok_t]
        if verify.size == 0:
            break
        items = np.flatnonzero(np.isin(r, verify))
        st = pooled_state(dep, hi.astype(float))
        miss = _misses(dep, st, items)
        bad = items[miss]
        if bad.size == 0:
            break
        # Rows with a miss at their answer: add the worst misses, search again above it.
        todo = np.unique(r[bad])
        p_bad = _p_items(dep, st, bad, slo[bad], exact=False)[0]
        cand = np.union1d(cand, _top_by_row(r[bad], p_bad, _CANDIDATES_PER_ROW, bad))
        lo[todo] = hi[todo]
    replicas[live_rows] = np.where(found[live_rows], hi[live_rows], -1)
    # Binding: among the candidates, the one furthest over its target with one replica fewer.
    cand = cand[found[r[cand]]]
    if cand.size and binding_rows:
        below = pooled_state(dep, np.maximum(hi - 1, 0).astype(float))
        p_below = _p_fast(dep, below, cand, slo[cand])
        p_at = _p_fast(dep, pooled_state(dep, hi.astype(float)), cand, slo[cand])
        best = _argmax_by_row(r[cand], p_below + 1e-6 * p_at, R)
        has = best >= 0
        binding[has & live_rows] = cand[best[has & live_rows]]
    return ReplicaSizing(replicas, binding, misses)


def _search(dep, rows, cand, lo, max_replicas, start=None):
    """Fewest n > lo per configuration in `rows` at which every candidate row passes (and whether one exists).

    start: a first count to try per configuration (square-root staffing): where it passes, a bisection
    below it; where it does not, a gallop up from it. The answer is the same (more replicas never hurt);
    a big pool takes ~5 checks instead of ~10."""
    R = dep.rows
    r = dep.row
    cand = cand[np.isin(r[cand], rows)]
    pos = np.full(R, -1)
    pos[rows] = np.arange(rows.size)
    n_all = np.zeros(R)

    def passes(sel, n):
        n_all[:] = 0.0
        n_all[rows[sel]] = n
        items = cand[np.isin(r[cand], rows[sel])]
        miss = _misses(dep, pooled_state(dep, n_all), items)
        fails = np.bincount(pos[r[items]], miss, minlength=rows.size)
        return fails[sel] == 0

    lo = lo.astype(np.int64).copy()
    gap = np.ones(rows.size, dtype=np.int64)
    hi = np.minimum(lo + 1, max_replicas)
    if start is not None:
        hi = np.minimum(np.maximum(hi, np.asarray(start, dtype=np.int64)), max_replicas)
        gap = np.maximum(hi - lo, 1)
    everything = np.arange(rows.size)
    ok = passes(everything, hi)
    # Gallop: the answer is usually close to the stability bound (square-root staffing).
    for _ in range(64):
        sel = np.flatnonzero(~ok & (hi < max_replicas))
        if sel.size == 0:
            break
        lo[sel] = hi[sel]
        gap[sel] *= 2
        hi[sel] = np.minimum(lo[sel] + gap[sel], max_replicas)
        ok[sel] = passes(sel, hi[sel])
    for _ in range(64):
        sel = np.flatnonzero(ok & (hi - lo > 1))
        if sel.size == 0:
            break
        mid = (lo[sel] + hi[sel]) // 2
        good = passes(sel, mid)
        hi[sel[good]] = mid[good]
        lo[sel[~good]] = mid[~good]
    return hi, ok


def _top_by_row(row, value, k, ids):
    """ids of the k largest values per row (values are probabilities in [0, 1])."""
    if ids.size == 0:
        return ids
    # One float sort instead of a lexsort: row first, then the larger value first.
    order = np.argsort(row + (1.0 - np.clip(value, 0.0, 1.0)) * 0.5)
    srow = row[order]
    start = np.r_[0, np.flatnonzero(srow[1:] != srow[:-1]) + 1]
    first = np.repeat(start, np.diff(np.r_[start, srow.size]))
    keep = order[(np.arange(srow.size) - first) < k]
    return np.sort(ids[keep])


def _argmax_by_row(row, value, R) -> np.ndarray:
    """Index of the largest value per row (-1 where the row has none or all are -inf)."""
    out = np.full(R, -1, dtype=np.int64)
    if row.size == 0:
        return out
    order = np.lexsort((value, row))  # by row, then value ascending
    last = np.r_[row[order][1:] != row[order][:-1], True]
    picks = order[last]
    good = value[picks] > -np.inf
    out[row[picks[good]]] = picks[good]
    return out
