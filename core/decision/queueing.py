"""Queueing maths for fleet sizing: Erlang C (M/M/c) and the M/G/c wait's scale from the service spread, vectorised."""

from __future__ import annotations

import numpy as np
from scipy import special


def erlang_c(servers, offered_load):
    """P(wait > 0) in an M/M/c queue with c servers and offered load A = lambda / mu (Erlangs).

    Uses the Poisson form C = p(c; A) / (p(c; A) + (1 - rho) P(N <= c - 1; A)), with
    the regularised incomplete gamma from scipy for P(N <= c - 1), which stays
    stable for thousands of servers. Returns 1 where the queue is unstable (rho >= 1).
    """
    c = np.asarray(servers, dtype=float)
    a = np.asarray(offered_load, dtype=float)
    rho = np.divide(a, c, out=np.full(np.broadcast(c, a).shape, np.inf), where=c > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_pmf = -a + c * np.log(np.where(a > 0, a, 1.0)) - special.gammaln(c + 1.0)
        pmf = np.exp(log_pmf)
        below = special.gammaincc(np.maximum(c, 1e-12), a)  # P(N <= c - 1) for N ~ Poisson(a)
        out = pmf / (pmf + (1.0 - rho) * below)
    out = np.where(a <= 0, 0.0, out)
    return np.where(rho >= 1.0, 1.0, np.clip(np.nan_to_num(out, nan=1.0), 0.0, 1.0))


def wait_scale(servers, utilization, service_cv2):
    """k: the mean wait of those who wait in M/G/c over M/M/c's, from the service time's cv^2.

    Kimura's system interpolation (Kimura 1994, "Approximations for multi-server
    queues: system interpolations", Queueing Systems 17) between M/M/c (k = 1) and
    M/D/c (k = h, Cosmetatos' 1976 approximation of M/D/c's wait over M/M/c's):
    k = (1 + cv^2) / (2 cv^2 + (1 - cv^2) / h). One server: (1 + cv^2) / 2, exact
    (Pollaczek–Khinchine), and so is Allen–Cunneen's k everywhere. With several
    servers at light load Allen–Cunneen's k is off both ways: simulated on 4-16 slots
    at 40-60 % load (docs/design/latency_model.md "The wait's scale"), waits with output cv 1.5
    were 12-35 % shorter than it said and with cv 0.5 10-54 % longer; this k is within
    about 9 %, and meets Allen–Cunneen's as the load nears 1. The latency model passes
    the cv^2 of its queue's drain (latency.pooled_state: the service's, without prefills).
    """
    c = np.maximum(np.asarray(servers, dtype=float), 1.0)
    rho = np.clip(np.asarray(utilization, dtype=float), 1e-9, 1.0)
    cv2 = np.maximum(np.asarray(service_cv2, dtype=float), 0.0)
    h = 0.5 * (1.0 + (1.0 - rho) * (c - 1.0) * (np.sqrt(4.0 + 5.0 * c) - 2.0) / (16.0 * rho * c))
    h = np.clip(h, 0.5, 1.0)  # M/D/c waits between half of M/M/c's (heavy load, one server) and all of it
    return (1.0 + cv2) / (2.0 * cv2 + (1.0 - cv2) / h)


def p_wait_exceeds(servers, arrival_rate, service_s, t_s, service_cv2=1.0):
    """P(wait > t) = C exp(-(c mu - lambda) t / k), k = wait_scale (Kimura's interpolation).

    For exponential service (cv^2 = 1) this is exact M/M/c; for more regular
    service the waits shrink by k, for more variable ones they grow.
    """
    c = np.asarray(servers, dtype=float)
    lam = np.asarray(arrival_rate, dtype=float)
    mu = 1.0 / np.asarray(service_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = wait_scale(c, lam / (c * mu), service_cv2)
    cw = erlang_c(c, lam / mu)
    decay = np.maximum(c * mu - lam, 0.0) * np.maximum(np.asarray(t_s, dtype=float), 0.0) / k
    return np.where(c * mu > lam, cw * np.exp(-decay), 1.0)


def replicas_for_sla(arrival_rate, service_s, slots_per_replica, wait_budget_s, tail=0.05, service_cv2=1.0, max_replicas=1_000_000):
    """Fewest replicas n such that P(wait > budget) <= tail with n x slots servers.

    service_cv2 is a scalar or one value per workload (the latency model's service spread).
    Vectorised over workloads: bracket between the stability bound and a
    square-root-staffing bound, then bisect; every step evaluates only the rows
    still undecided. Returns 0 where
    the arrival rate is 0 and -1 where no count up to max_replicas works (no budget).
    """
    lam = np.asarray(arrival_rate, dtype=float)
    svc = np.asarray(service_s, dtype=float)
    slots = np.asarray(slots_per_replica, dtype=float)
    budget = np.asarray(wait_budget_s, dtype=float)
    cv2 = np.asarray(service_cv2, dtype=float)
    lam, svc, slots, budget, cv2 = (np.atleast_1d(x).copy() for x in np.broadcast_arrays(lam, svc, slots, budget, cv2))
    scalar = np.ndim(arrival_rate) == 0 and np.ndim(service_s) == 0
    out = np.zeros(lam.shape, dtype=np.int64)
    need = (lam > 0) & (budget >= 0) & (slots > 0) & (svc > 0)
    out[~need & (lam > 0)] = -1
    if not need.any():
        return out[0] if scalar else out

    def ok(n, idx):
        return p_wait_exceeds(n * slots[idx], lam[idx], svc[idx], budget[idx], cv2[idx]) <= tail

    idx = np.flatnonzero(need)
    load = lam[idx] * svc[idx]  # offered load in Erlangs (slots busy on average)
    lo = np.floor(load / slots[idx]).astype(np.int64)  # lo fails: unstable, or zero replicas
    # Square-root staffing: A + 3 sqrt(A) + 1 servers keep P(wait > 0) well under 5 %,
    # so this upper bound almost always passes and the bisection below is short.
    hi = np.maximum(np.ceil((load + 3.0 * np.sqrt(load) + 1.0) / slots[idx]).astype(np.int64), lo + 1)
    feasible = ok(hi, idx)
    # Rare misses (tail much tighter than 5 %): grow hi geometrically.
    for _ in range(64):
        sel = np.flatnonzero(~feasible & (hi < max_replicas))
        if sel.size == 0:
            break
        lo[sel] = hi[sel]
        hi[sel] = np.minimum(hi[sel] * 2, max_replicas)
        feasible[sel] = ok(hi[sel], idx[sel])
    # Bisect between lo (fails) and hi (passes).
    for _ in range(64):
        sel = np.flatnonzero((hi - lo > 1) & feasible)
        if sel.size == 0:
            break
        mid = (lo[sel] + hi[sel]) // 2
        good = ok(mid, idx[sel])
        hi[sel[good]] = mid[good]
        lo[sel[~good]] = mid[~good]
    out[idx] = np.where(feasible, hi, -1)
    return out[0] if scalar else out
