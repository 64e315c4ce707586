"""The exact tier, part 2: each member's tail of time in system on a pooled deployment, and the fewest replicas.

From the chain's state (core.decision.latency.chain): P(T > t) = (1 - C) P(S > t) + C P(W + S_full > t) per
member, solved for the percentile the scenario asks for (`percentile_ms`, `p95_ms`), and the fewest replicas
such that every member meets its target at that tail (`min_replicas`), what the plan sizes pools with
(core.decision.sizing). Exact up to the chain's and the quadrature's numerics (SearchSettings).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from core.decision.latency.chain import PooledDeployments, PooledState, pooled_state
from core.decision.latency.service import (
    _BLOCK_TERMS,
    _INV_SQRT2PI,
    _SQRT2,
    ServiceTime,
    _all_blocks,
    _block_j,
    _block_rows,
    _p_exceed_with_wait,
    _survival,
    _z_of,
)
from core.decision.settings import DEFAULT as SETTINGS  # the numerics below (SearchSettings' help)


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


def _p_items(dep: PooledDeployments, st: PooledState, idx, t, exact: bool = True, compiled: bool = True,
             lo_only: bool = False):
    """P(T > t) for workload rows idx; with exact=False, (lo, hi) bounds in closed form (compiled=False: in numpy
    also where the compiled loop covers them, the reference it is tested against; lo_only: the compiled
    loop may leave hi NaN, for callers that read lo alone).

    A request finds a free slot with probability 1 - C and is served at the typical
    batch; otherwise it waits Exp(theta) and is served at the full batch:
    P(W + S > t) = (1 - C) P(S_free > t) + C P(E + S_full > t). An escalated request
    (share e) is served here, then by the fallback, which adds x ms:
    P(T > t) = (1 - e) P(W + S > t) + e P(W + S > t - x) (one tail budget, dep.tail).
    Bounds: the waited term P(S_full > t) + J with J between its closed-form bounds (_j_bounds).
    """
    r = dep.row[idx]
    c_wait = st.p_wait[r]
    sf, sw = st.service(dep, idx), st.service_full(dep, idx)
    if not exact and compiled:
        # The same bounds in one compiled loop (core.decision.latency.tailloop).
        from core.decision.latency.tailloop import bounds_kernel

        def f64(x):  # one compiled signature: C-contiguous, writable (numba types a read-only array apart)
            if type(x) is np.ndarray and x.shape == idx.shape:  # most are: a copy, without broadcast_to's cost
                return np.array(x, dtype=np.float64)
            return np.array(np.broadcast_to(x, idx.shape), dtype=np.float64)

        return bounds_kernel(f64(t), f64(c_wait), f64(sf.a_ms), f64(sf.c_ms_per_token), f64(sf.mu), f64(sf.sigma),
                             f64(sw.a_ms), f64(sw.c_ms_per_token), f64(sw.mu), f64(sw.sigma),
                             f64(st.wait_rate_per_ms[r]), f64(dep.escalated_share[idx]),
                             f64(dep.escalated_extra_ms[idx]), np.array(~st.stable[r], dtype=np.bool_),
                             f64(dep.row_block_tokens[idx]), f64(sf.spread_sigma), _BLOCK_TERMS, bool(lo_only))
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
        out[none] = _p_items(dep, st, idx[none], t[none], exact=False, lo_only=True)[0]
    return out


def _misses(dep, st, idx) -> np.ndarray:
    """Whether P(T > slo) > the deployments' tail (dep.tail: 5 % at the 95th percentile) for workload rows idx:
    the bounds decide most, the quadrature the rest."""
    t = dep.slo_ms[idx]
    tail = dep.tail
    lo, hi = _p_items(dep, st, idx, t, exact=False)
    out = lo > tail
    unsure = np.flatnonzero(~out & (hi > tail))
    if unsure.size:
        out[unsure] = _p_items(dep, st, idx[unsure], t[unsure]) > tail
    return out


def p_exceed(dep: PooledDeployments, replicas, t_ms, state: PooledState | None = None) -> np.ndarray:
    """P(time in system > t) for every workload row (escalated requests included; 1 where unstable)."""
    st = pooled_state(dep, replicas) if state is None else state
    idx = np.arange(dep.row.size)
    return _p_fast(dep, st, idx, np.broadcast_to(np.asarray(t_ms, dtype=float), idx.shape).copy())


def percentile_ms(dep: PooledDeployments, replicas, q: float | None = None,
                  state: PooledState | None = None, idx=None) -> np.ndarray:
    """The q-quantile of time in system for workload rows idx (default all; inf where unstable); q None: the
    percentile the deployments' targets refer to (1 - dep.tail).

    Solves P(T > t) = 1 - q by the Illinois method (a safeguarded secant) inside a
    bracket: below, the smaller of the free and full-batch service quantiles (waiting
    and escalation only add time); above, the full-batch service's 1 - tail/4 quantile
    plus a wait exceeded with probability tail/4 plus the escalation's extra latency.
    Stops at a relative width of 1e-5.
    """
    st = pooled_state(dep, replicas) if state is None else state
    q = 1.0 - dep.tail if q is None else q
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
    """The percentile of time in system the targets refer to (1 - dep.tail: the p95 by default; wait + service,
    escalations included) for workload rows idx (default all)."""
    return percentile_ms(dep, replicas, None, state, idx)


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
    """Fewest replicas such that every workload row on each configuration has P(T > slo) <= dep.tail (5 % at
    the 95th percentile the targets refer to by default).

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
    hopeless_item = (p_alone > dep.tail) & (dep.arrival_rate_per_s > 0)
    misses = np.bincount(r, hopeless_item, minlength=R) > 0
    replicas[misses] = -1
    binding[misses] = _argmax_by_row(r, np.where(hopeless_item, p_alone, -np.inf), R)[misses]
    live_rows = ~misses & (lam > 0)
    if not live_rows.any():
        return ReplicaSizing(replicas, binding, misses)

    # Stability bound with no prefill interference: lo replicas are too few.
    no_interference = pooled_state(dep, np.full(R, 1e15), only=live_rows, chain=False)
    cap = dep.concurrency_cap.astype(float)
    full_ms = np.where(live_rows, no_interference.full_service_mean_ms, 0.0)  # NaN where not solved
    lo = np.floor(lam * full_ms / 1000.0 / cap).astype(np.int64)
    lo = np.where(live_rows, np.maximum(lo, 0), 0)
    items_all = np.flatnonzero(live_rows[r])
    # First guess of the binding rows: the most likely to miss at square-root staffing.
    guess = np.ceil(lo + 2.0 * np.sqrt(lo) + 1.0)
    at_guess = pooled_state(dep, guess, only=live_rows)
    p_guess = _p_items(dep, at_guess, items_all, slo[items_all], exact=False, lo_only=True)[0]
    cand = _top_by_row(r[items_all], p_guess, _CANDIDATES_PER_ROW, items_all)
    todo = np.flatnonzero(live_rows)
    hi = np.zeros(R, dtype=np.int64)
    found = np.zeros(R, dtype=bool)
    start: np.ndarray | None = guess[todo]
    for _ in range(64):
        hi_t, ok_t = _search(dep, todo, cand, lo[todo], max_replicas, start, at_guess)
        start = None  # a resumed search starts just above the count where a row missed
        hi[todo], found[todo] = hi_t, ok_t
        verify = todo[ok_t]
        if verify.size == 0:
            break
        items = _member(R, verify)[r].nonzero()[0]
        st = pooled_state(dep, hi.astype(float), only=_member(R, verify))
        miss = _misses(dep, st, items)
        bad = items[miss]
        if bad.size == 0:
            break
        # Rows with a miss at their answer: add the worst misses, search again above it.
        todo = np.unique(r[bad])
        p_bad = _p_items(dep, st, bad, slo[bad], exact=False, lo_only=True)[0]
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


def _search(dep, rows, cand, lo, max_replicas, start=None, at_start=None):
    """Fewest n > lo per configuration in `rows` at which every candidate row passes (and whether one exists).

    start: a first count to try per configuration (square-root staffing): where it passes, a bisection
    below it; where it does not, a gallop up from it. The answer is the same (more replicas never hurt);
    a big pool takes ~5 checks instead of ~10. at_start: the state of `rows` at `start` (pooled_state), solved
    already by the caller; the first check reads it where it tries exactly those counts."""
    R = dep.rows
    r = dep.row
    cand = cand[_member(R, rows)[r[cand]]]
    pos = np.full(R, -1)
    pos[rows] = np.arange(rows.size)
    n_all = np.zeros(R)

    def passes(sel, n, state=None):
        n_all[:] = 0.0
        n_all[rows[sel]] = n
        solved = _member(R, rows[sel])
        items = cand[solved[r[cand]]]
        miss = _misses(dep, pooled_state(dep, n_all, only=solved) if state is None else state, items)
        fails = np.bincount(pos[r[items]], miss, minlength=rows.size)
        return fails[sel] == 0

    lo = lo.astype(np.int64).copy()
    gap = np.ones(rows.size, dtype=np.int64)
    hi = np.minimum(lo + 1, max_replicas)
    if start is not None:
        hi = np.minimum(np.maximum(hi, np.asarray(start, dtype=np.int64)), max_replicas)
        gap = np.maximum(hi - lo, 1)
    everything = np.arange(rows.size)
    # Each configuration's state is its own: the caller's at `start` is this check's where the counts are the same.
    same = at_start is not None and start is not None and np.array_equal(hi, start)
    ok = passes(everything, hi, at_start if same else None)
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


def _member(R: int, configs: np.ndarray) -> np.ndarray:
    """(R,) bool: which configurations are in `configs` (np.isin's answer for configuration indices, by a mask:
    np.isin's sort was ~0.1 ms a call, a few per replica search)."""
    mask = np.zeros(R, dtype=bool)
    mask[configs] = True
    return mask


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
