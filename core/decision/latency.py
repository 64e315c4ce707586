"""Latency model of a pooled deployment: service-time distribution, p95 of wait + service, replicas for every target.

One service-time model, used both for the p95 check and for queueing (DESIGN.md,
"Latency model"; issue 12):

- **Output length** N of a workload is lognormal, fitted to its mean and
  `output_tokens_p95` (or to `DEFAULT_OUTPUT_CV` when no p95 is given).
- **Service time** of a request (admission to last token) is affine in N:
  S = a + c N, where c = decode steps per token x step_ms(b) / (1 - phi) is the
  wall time per token at the running batch b, stretched by the share phi of the
  replica's time spent on other requests' prefills (a prefill occupies the
  replica's step, so decode pauses while it runs), and a = own prefill + the
  wait for the step in progress to end.
- **Waiting**: M/G/c over the pooled slots (replicas x concurrency cap), Erlang C
  with Allen–Cunneen: W = 0 with probability 1 - C, else exponential with rate
  theta = (c mu_full - lambda) / k, k = (1 + cv^2) / 2 (cv^2 of the rate-weighted
  service mixture at the full batch, where a queue forms).
- **p95 of time in system** T = W + S (+ the escalated requests' extra latency,
  one 5 % budget): solved numerically from P(T > t), where a request that waits
  starts at the full batch and one that does not at the load's typical batch.

Everything is numpy over flat arrays: `PooledDeployments` holds R deployment
configurations (e.g. every owned route x candidate concurrency cap) and the I
workload rows on them (`row` says which configuration each belongs to).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from core.decision.queueing import erlang_c

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
_FIXED_POINT_ITERATIONS = 30
_BISECTION_ITERATIONS = 40
# Gauss–Legendre nodes per panel of the wait-service convolution (two panels):
# accurate to < 0.1 % in the p95 against adaptive quadrature (tests/test_latency.py).
_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)
_GL_X, _GL_W = (_GL_X + 1.0) / 2.0, _GL_W / 2.0  # on [0, 1]
_SQRT2 = np.sqrt(2.0)
_INV_SQRT2PI = 1.0 / np.sqrt(2.0 * np.pi)


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

@dataclass(frozen=True)
class ServiceTime:
    """S = a_ms + c_ms_per_token x N, N ~ LogNormal(mu, sigma): per workload row, all arrays of one shape."""

    a_ms: np.ndarray
    c_ms_per_token: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray

    @property
    def mean_ms(self) -> np.ndarray:
        """E[S] = a + c E[N], E[N] = exp(mu + sigma^2 / 2)."""
        return self.a_ms + self.c_ms_per_token * np.exp(self.mu + self.sigma**2 / 2.0)

    @property
    def var_ms2(self) -> np.ndarray:
        """Var S = c^2 Var N = c^2 E[N]^2 (exp(sigma^2) - 1)."""
        en = np.exp(self.mu + self.sigma**2 / 2.0)
        return (self.c_ms_per_token * en) ** 2 * np.expm1(self.sigma**2)

    @property
    def cv2(self) -> np.ndarray:
        """Squared coefficient of variation Var S / E[S]^2."""
        mean = self.mean_ms
        return np.divide(self.var_ms2, mean**2, out=np.zeros_like(mean), where=mean > 0)

    def quantile(self, p) -> np.ndarray:
        """The p-quantile of S (p broadcasts against the rows)."""
        z = special.ndtri(np.asarray(p, dtype=float))
        return self.a_ms + self.c_ms_per_token * np.exp(self.mu + self.sigma * z)

    def survival(self, t_ms) -> np.ndarray:
        """P(S > t)."""
        return _survival(np.asarray(t_ms, dtype=float), self.a_ms, self.c_ms_per_token, self.mu, self.sigma)


def service_time(a_ms, c_ms_per_token, mean_tokens, p95_tokens=None) -> ServiceTime:
    """The service-time distribution S = a + c N of workloads whose output length has this mean and p95."""
    mu, sigma = output_lognormal(mean_tokens, p95_tokens)
    a, c, mu, sigma = np.broadcast_arrays(np.asarray(a_ms, float), np.asarray(c_ms_per_token, float), mu, sigma)
    return ServiceTime(a.copy(), c.copy(), mu.copy(), sigma.copy())


def _z_of(t, a, c, mu, sigma):
    """Standard-normal score of N at S = t: (ln((t - a) / c) - mu) / sigma (-inf where t <= a)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(np.maximum(t - a, 0.0) / c)
        z = (x - mu) / np.where(sigma > 0, sigma, 1.0)
        # sigma = 0: a point mass at a + c e^mu.
        z = np.where(sigma > 0, z, np.where(x >= mu, np.inf, -np.inf))
    return np.where(t > a, z, -np.inf)


def _survival(t, a, c, mu, sigma):
    return special.ndtr(-_z_of(t, a, c, mu, sigma))


def _p_exceed_with_wait(t, a, c, mu, sigma, theta_per_ms):
    """P(E + S > t) for E ~ Exp(theta) independent of S = a + c N (theta = 0: E infinite, 1).

    P(E + S > t) = P(S > t) + J, J = E[exp(-theta (t - S)); S <= t]. With z_t the
    normal score of S = t and t - S(z) = (t - a)(1 - exp(-sigma (z_t - z))) exactly,
    J = integral over u >= 0 of phi(z_t - u) exp(-beta (1 - exp(-sigma u))) du,
    beta = theta (t - a): smooth, so two Gauss–Legendre panels (the first one over
    the exponential's fast decay near u = 0) integrate it.
    """
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
    return np.where(theta_per_ms > 0, res, 1.0)


# --------------------------------------------------------------------------- pooled deployments

@dataclass(frozen=True)
class PooledDeployments:
    """R deployment configurations and the I workload rows that share them (row[i] in 0..R-1).

    Per configuration: `step_ms[r, b - 1]` is one decode step at running batch b
    for b = 1..B (entries past the cap are ignored), `concurrency_cap[r]` slots per
    replica, `steps_per_token[r]` decode steps per output token (1 for AR; 1 / tokens
    committed per step for speculative or diffusion serving). Per workload row: peak
    arrival rate, prefill ms on this deployment, output-length mean and p95 (NaN: the
    default spread), p95 target, the share escalated to a fallback and the latency
    that adds.
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

    @classmethod
    def build(cls, *, row, arrival_rate_per_s, prefill_ms, output_mean_tokens, slo_ms, step_ms, concurrency_cap,
              output_p95_tokens=None, escalated_share=0.0, escalated_extra_ms=0.0,
              steps_per_token=1.0) -> PooledDeployments:
        """Broadcast and check the arrays; a bad one raises ValueError naming it."""
        row = np.asarray(row, dtype=np.int64).ravel()
        n = row.size
        step = np.atleast_2d(np.asarray(step_ms, dtype=float))
        r_count = step.shape[0]
        cap = np.broadcast_to(np.asarray(concurrency_cap, dtype=np.int64), (r_count,)).copy()
        spt = np.broadcast_to(np.asarray(steps_per_token, dtype=float), (r_count,)).copy()

        def items(name, x):
            arr = np.asarray(np.nan if x is None else x, dtype=float)
            try:
                return np.broadcast_to(arr, (n,)).copy()
            except ValueError:
                raise ValueError(f"{name}: {arr.shape} does not match the {n} workload rows") from None

        out = cls(
            row=row,
            arrival_rate_per_s=items("arrival_rate_per_s", arrival_rate_per_s),
            prefill_ms=items("prefill_ms", prefill_ms),
            output_mean_tokens=items("output_mean_tokens", output_mean_tokens),
            output_p95_tokens=items("output_p95_tokens", output_p95_tokens),
            slo_ms=items("slo_ms", slo_ms),
            escalated_share=items("escalated_share", escalated_share),
            escalated_extra_ms=items("escalated_extra_ms", escalated_extra_ms),
            step_ms=step, concurrency_cap=cap, steps_per_token=spt,
        )
        checks = {
            "row": (row >= 0).all() and (row < r_count).all(),
            "concurrency_cap": (cap >= 1).all() and (cap <= step.shape[1]).all(),
            "step_ms": np.isfinite(step[np.arange(step.shape[1])[None, :] < cap[:, None]]).all() and (step > 0).sum() > 0,
            "steps_per_token": (spt > 0).all(),
            "arrival_rate_per_s": (out.arrival_rate_per_s >= 0).all(),
            "prefill_ms": (out.prefill_ms >= 0).all(),
            "output_mean_tokens": (out.output_mean_tokens > 0).all(),
            "slo_ms": (out.slo_ms > 0).all(),
            "escalated_share": ((out.escalated_share >= 0) & (out.escalated_share <= 1)).all(),
            "escalated_extra_ms": (out.escalated_extra_ms >= 0).all(),
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"PooledDeployments: out-of-range values in {', '.join(bad)}")
        return out

    @property
    def rows(self) -> int:
        """Number of deployment configurations R."""
        return self.step_ms.shape[0]

    def select(self, rows: np.ndarray) -> PooledDeployments:
        """The configurations `rows` (renumbered 0..len-1) with their workload rows."""
        rows = np.asarray(rows, dtype=np.int64)
        new = np.full(self.rows, -1)
        new[rows] = np.arange(rows.size)
        keep = new[self.row] >= 0
        return PooledDeployments(
            row=new[self.row[keep]], arrival_rate_per_s=self.arrival_rate_per_s[keep],
            prefill_ms=self.prefill_ms[keep], output_mean_tokens=self.output_mean_tokens[keep],
            output_p95_tokens=self.output_p95_tokens[keep], slo_ms=self.slo_ms[keep],
            escalated_share=self.escalated_share[keep], escalated_extra_ms=self.escalated_extra_ms[keep],
            step_ms=self.step_ms[rows], concurrency_cap=self.concurrency_cap[rows],
            steps_per_token=self.steps_per_token[rows],
        )


def _step_at(step_ms, b):
    """step_ms(b) by linear interpolation between integer batches, and its slope d step / d b."""
    b = np.clip(b, 1.0, step_ms.shape[1])
    lo = np.clip(np.floor(b).astype(np.int64), 1, step_ms.shape[1])
    hi = np.minimum(lo + 1, step_ms.shape[1])
    idx = np.arange(step_ms.shape[0])
    s_lo, s_hi = step_ms[idx, lo - 1], step_ms[idx, hi - 1]
    frac = b - lo
    slope = np.where(hi > lo, s_hi - s_lo, 0.0)
    return s_lo + frac * slope, slope


@dataclass(frozen=True)
class PooledState:
    """A set of deployment configurations at given replica counts (arrays over R rows; `service*` over I rows)."""

    replicas: np.ndarray
    arrival_rate_per_s: np.ndarray
    batch: np.ndarray  # typical running batch per replica (fixed point of Little's law)
    prefill_share: np.ndarray  # phi: share of a replica's time spent on prefill steps
    offered_load: np.ndarray  # requests in service on average (Erlangs)
    service_mean_ms: np.ndarray  # rate-weighted mean service at the typical batch
    full_service_mean_ms: np.ndarray  # the same at the full batch (the cap), where a queue forms
    full_service_cv2: np.ndarray  # cv^2 of the service mixture at the full batch (Allen–Cunneen)
    p_wait: np.ndarray  # C: P(a request waits for a slot)
    wait_rate_per_ms: np.ndarray  # theta: the waiting time of one that waits is Exp(theta)
    stable: np.ndarray
    service: ServiceTime  # each workload row at the typical batch (a request that found a free slot)
    service_full: ServiceTime  # each workload row at the full batch (a request that waited)


def pooled_state(dep: PooledDeployments, replicas) -> PooledState:
    """Service, batch and wait distribution of every configuration with `replicas` replicas (array over R).

    The typical batch b solves Little's law per replica, A = lambda E[S(b)] and
    b = 1 + (A / n)(1 - 1 / cap) (a request sees itself plus its replica's share of
    the others; b reaches the cap when every slot is busy), by fixed-point iteration.
    Step time grows with the batch, so the number of requests in service spreads
    wider than Poisson: its variance is A / (1 - eps), eps = (b - 1) S'(b) / S the
    elasticity of service time in the batch (a diffusion approximation of the
    birth–death chain). Erlang C is evaluated on c (1 - eps) servers and A (1 - eps)
    Erlangs, which matches that spread near the top (and is plain Erlang C when the
    step time does not depend on the batch).
    """
    R = dep.rows
    n = np.broadcast_to(np.asarray(replicas, dtype=float), (R,)).astype(float)
    r = dep.row
    lam_i = dep.arrival_rate_per_s
    lam = np.bincount(r, lam_i, minlength=R)
    with np.errstate(divide="ignore", invalid="ignore"):
        pbar = np.bincount(r, lam_i * dep.prefill_ms, minlength=R) / lam
        p2 = np.bincount(r, lam_i * dep.prefill_ms**2, minlength=R) / lam
        pbar, p2 = np.nan_to_num(pbar), np.nan_to_num(p2)
        phi = np.where(n > 0, lam * pbar / 1000.0 / n, np.inf)
    mu_n, sigma_n = output_lognormal(dep.output_mean_tokens, dep.output_p95_tokens)
    mean_n = np.exp(mu_n + sigma_n**2 / 2.0)
    m_rate = np.bincount(r, lam_i * mean_n, minlength=R)  # sum lambda_i E[N_i]
    cap = dep.concurrency_cap.astype(float)
    spt = dep.steps_per_token
    ok = (phi < 1.0) & (n > 0)
    stretch = np.where(ok, 1.0 / np.where(ok, 1.0 - phi, 1.0), np.inf)
    # The step in progress when a request is admitted: a decode step (share 1 - phi, mean
    # residual step / 2) or a prefill step (share phi, size-biased residual E[p^2] / 2 E[p]).
    pre_resid = np.divide(p2, 2.0 * pbar, out=np.zeros(R), where=pbar > 0)

    def at(b, busy):
        step, slope = _step_at(dep.step_ms, b)
        c = spt * step * stretch
        join = busy * (np.minimum(1.0 - phi, 1.0) * step / 2.0 + np.minimum(phi, 1.0) * pre_resid)
        with np.errstate(invalid="ignore", divide="ignore"):
            s_bar = pbar + join + c * m_rate / np.where(lam > 0, lam, 1.0)
        return c, join, s_bar, slope

    b = np.ones(R)
    for _ in range(_FIXED_POINT_ITERATIONS):
        c, join, s_bar, _ = at(b, 1.0)
        a_load = lam * s_bar / 1000.0
        with np.errstate(invalid="ignore", divide="ignore"):
            per = np.where(ok, a_load / n, cap)
        b = np.clip(1.0 + per * (1.0 - 1.0 / cap), 1.0, cap)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        busy = np.where(ok, -np.expm1(-np.nan_to_num(lam * s_bar / 1000.0 / n, posinf=50.0)), 1.0)
    c, join, s_bar, slope = at(b, busy)
    a_load = lam * s_bar / 1000.0
    c_full, join_full, s_full, _ = at(cap, 1.0)

    service = ServiceTime(dep.prefill_ms + join[r], c[r] * np.ones_like(mu_n), mu_n, sigma_n)
    service_full = ServiceTime(dep.prefill_ms + join_full[r], c_full[r] * np.ones_like(mu_n), mu_n, sigma_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        second = np.bincount(r, lam_i * (service_full.var_ms2 + service_full.mean_ms**2), minlength=R) / lam
        cv2_full = np.nan_to_num(second / s_full**2 - 1.0)
        d_sbar = spt * slope * stretch * m_rate / np.where(lam > 0, lam, 1.0)
        eps = np.clip(np.nan_to_num((b - 1.0) * d_sbar / s_bar), 0.0, 0.95)
    servers = n * cap
    full_load = lam * s_full / 1000.0
    stable = ok & (full_load < servers)
    cw = erlang_c(servers * (1.0 - eps), np.where(stable, a_load, servers) * (1.0 - eps))
    cw = np.where(lam > 0, np.where(stable, cw, 1.0), 0.0)
    k = (1.0 + cv2_full) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.where(stable, (servers * 1000.0 / s_full - lam) / k / 1000.0, 0.0)
    return PooledState(
        replicas=n, arrival_rate_per_s=lam, batch=b, prefill_share=phi, offered_load=a_load,
        service_mean_ms=s_bar, full_service_mean_ms=s_full, full_service_cv2=cv2_full,
        p_wait=cw, wait_rate_per_ms=np.nan_to_num(theta), stable=stable,
        service=service, service_full=service_full,
    )


def _sel(svc: ServiceTime, idx) -> tuple:
    return svc.a_ms[idx], svc.c_ms_per_token[idx], svc.mu[idx], svc.sigma[idx]


def _p_time_in_system(state: PooledState, r, idx, t):
    """P(W + S > t) for workload rows idx (configuration r = their rows) at times t.

    A request finds a free slot with probability 1 - C and is served at the typical
    batch; otherwise it waits Exp(theta) and is served at the full batch.
    """
    c_wait = state.p_wait[r]
    free = _survival(t, *_sel(state.service, idx))
    waited = _p_exceed_with_wait(t, *_sel(state.service_full, idx), state.wait_rate_per_ms[r])
    return (1.0 - c_wait) * free + c_wait * waited


def p_exceed(dep: PooledDeployments, replicas, t_ms, state: PooledState | None = None) -> np.ndarray:
    """P(time in system > t) for every workload row, escalated requests included (one tail budget).

    An escalated request (share e) is served here, then again by the fallback, which
    adds `escalated_extra_ms` x: P(T > t) = (1 - e) P(W + S > t) + e P(W + S > t - x).
    """
    state = pooled_state(dep, replicas) if state is None else state
    idx = np.arange(dep.row.size)
    t = np.broadcast_to(np.asarray(t_ms, dtype=float), idx.shape)
    return _p_mixture(dep, state, idx, t)


def _p_mixture(dep, state, idx, t):
    r = dep.row[idx]
    e = dep.escalated_share[idx]
    out = _p_time_in_system(state, r, idx, t)
    esc = np.flatnonzero(e > 0)
    if esc.size:
        shifted = _p_time_in_system(state, r[esc], idx[esc], t[esc] - dep.escalated_extra_ms[idx[esc]])
        out[esc] = (1.0 - e[esc]) * out[esc] + e[esc] * shifted
    return np.where(state.stable[r], out, 1.0)


def percentile_ms(dep: PooledDeployments, replicas, q: float = 1.0 - SLO_TAIL,
                  state: PooledState | None = None) -> np.ndarray:
    """The q-quantile of time in system for every workload row (inf where the deployment is unstable).

    Bisection on t of P(T > t) = 1 - q, vectorised over rows: 40 halvings of a
    bracket [0, upper] give a relative error far below 0.1 %.
    """
    state = pooled_state(dep, replicas) if state is None else state
    tail = 1.0 - q
    r = dep.row
    out = np.full(r.size, np.inf)
    live = np.flatnonzero(state.stable[r])
    if live.size == 0:
        return out
    full = state.service_full
    theta = state.wait_rate_per_ms[r[live]]
    # Upper bound: the full-batch service's 1 - tail/4 quantile, plus a wait the exponential
    # exceeds with probability < tail / 4, plus the escalation's extra latency.
    with np.errstate(divide="ignore"):
        wait_hi = np.where(state.p_wait[r[live]] > 0, np.log(4.0 / tail) / np.where(theta > 0, theta, np.inf), 0.0)
    hi = full.quantile(1.0 - tail / 4.0)[live] + wait_hi + dep.escalated_extra_ms[live]
    lo = np.zeros(live.size)
    for _ in range(_BISECTION_ITERATIONS):
        mid = (lo + hi) / 2.0
        over = _p_mixture(dep, state, live, mid) > tail
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    out[live] = hi
    return out


def p95_ms(dep: PooledDeployments, replicas, state: PooledState | None = None) -> np.ndarray:
    """p95 of time in system (wait + service, escalations included) for every workload row."""
    return percentile_ms(dep, replicas, 1.0 - SLO_TAIL, state)


# --------------------------------------------------------------------------- sizing

@dataclass(frozen=True)
class ReplicaSizing:
    """Fewest replicas per configuration meeting every workload's p95 target.

    replicas: -1 where no count helps (the service tail alone misses a target) or
    none up to max_replicas does; 0 where no traffic. binding: the workload row that
    needs the most replicas (with -1 replicas: a row whose service alone misses), -1
    where none. service_tail_misses: rows whose service tail alone misses the target.
    """

    replicas: np.ndarray
    binding: np.ndarray
    service_tail_misses: np.ndarray


def min_replicas(dep: PooledDeployments, max_replicas: int = 100_000) -> ReplicaSizing:
    """Fewest replicas such that every workload row on each configuration meets P(T > slo) <= 5 %.

    Lower bound: stability at the full batch (lambda E[S_full] < n x cap). More
    replicas never hurt (smaller batch, less prefill interference, less waiting),
    so a galloping search then a bisection over n, vectorised over configurations;
    each step evaluates only the configurations still undecided. A target missed
    with unlimited replicas (batch 1, no interference, no wait) needs no search.
    """
    R = dep.rows
    r = dep.row
    n_items = r.size
    lam = np.bincount(r, dep.arrival_rate_per_s, minlength=R)
    replicas = np.zeros(R, dtype=np.int64)
    binding = np.full(R, -1, dtype=np.int64)

    # The service tail alone, at batch 1 with no one else's prefill: the best any replica count gives.
    step1 = dep.step_ms[:, 0]
    alone = ServiceTime(dep.prefill_ms, (dep.steps_per_token * step1)[r] * np.ones(n_items),
                        *output_lognormal(dep.output_mean_tokens, dep.output_p95_tokens))
    e, x = dep.escalated_share, dep.escalated_extra_ms
    p_alone = (1.0 - e) * alone.survival(dep.slo_ms) + e * alone.survival(dep.slo_ms - x)
    hopeless_item = (p_alone > SLO_TAIL) & (dep.arrival_rate_per_s > 0)
    misses = np.bincount(r, hopeless_item, minlength=R) > 0
    worst_alone = _argmax_by_row(r, np.where(hopeless_item, p_alone, -np.inf), R)
    replicas[misses] = -1
    binding[misses] = worst_alone[misses]

    todo = np.flatnonzero(~misses & (lam > 0))
    if todo.size == 0:
        return ReplicaSizing(replicas, binding, misses)
    sub = dep.select(todo)
    full = pooled_state(sub, np.full(todo.size, 1.0e12))  # service at the full batch does not depend on n
    cap = sub.concurrency_cap.astype(float)
    lo = np.maximum(np.floor(full.arrival_rate_per_s * full.full_service_mean_ms / 1000.0 / cap), 0).astype(np.int64)
    # lo fails (unstable at lo replicas, or lo = 0); find hi that passes by doubling.
    hi = np.maximum(lo + 1, 1)
    passed = _all_pass(sub, hi)
    for _ in range(64):
        sel = np.flatnonzero(~passed & (hi < max_replicas))
        if sel.size == 0:
            break
        lo[sel] = hi[sel]
        hi[sel] = np.minimum(hi[sel] * 2, max_replicas)
        passed[sel] = _all_pass(sub.select(sel), hi[sel])
    for _ in range(64):
        sel = np.flatnonzero(passed & (hi - lo > 1))
        if sel.size == 0:
            break
        mid = (lo[sel] + hi[sel]) // 2
        good = _all_pass(sub.select(sel), mid)
        hi[sel[good]] = mid[good]
        lo[sel[~good]] = mid[~good]
    replicas[todo] = np.where(passed, hi, -1)
    # The binding workload: the one that fails with one replica fewer (or the nearest to its target).
    at_hi = p_exceed(sub, np.where(passed, hi, max_replicas), sub.slo_ms)
    below = np.maximum(hi - 1, 0)
    at_below = p_exceed(sub, below, sub.slo_ms) if (below > 0).any() else np.ones(sub.row.size)
    score = np.where(np.isfinite(at_below), at_below, 1.0) + 1e-9 * at_hi
    local = _argmax_by_row(sub.row, score, todo.size)
    items = np.flatnonzero(np.isin(r, todo))  # select() keeps workload rows in order
    binding[todo] = np.where(local >= 0, items[np.maximum(local, 0)], -1)
    return ReplicaSizing(replicas, binding, misses)


def _all_pass(dep: PooledDeployments, replicas) -> np.ndarray:
    """Whether every workload row of each configuration meets its target with `replicas` (array over R)."""
    p = p_exceed(dep, replicas, dep.slo_ms)
    fails = np.bincount(dep.row, p > SLO_TAIL, minlength=dep.rows)
    return fails == 0


def _argmax_by_row(row, value, R) -> np.ndarray:
    """Index of the largest value per row (-1 where the row has none or all are -inf)."""
    out = np.full(R, -1, dtype=np.int64)
    if row.size == 0:
        return out
    order = np.lexsort((value, row))  # by row, then value ascending
    last = np.r_[row[order][1:] != row[order][:-1], True]
    picks = order[last]
    good = np.isfinite(value[picks]) | (value[picks] > -np.inf)
    out[row[picks[good]]] = picks[good]
    return out
