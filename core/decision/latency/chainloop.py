"""The requests-in-system chain compiled with numba: chain.pooled_state_py's arithmetic, one configuration at a time.

chain.pooled_state_py is the reference (array arithmetic over every configuration and chain point at once, with
the derivation in its docstring); this is the same formulas in loops. It exists for speed: the fleet plan's
search solves the chain ~25,000 times on a 300-workload inventory, a few configurations each, where numpy's
per-call overhead was most of the time (~0.4 ms a call, 10 of 42 CPU s). The figures agree to rounding, not
bit for bit: sums run in order here, pairwise in numpy (tests/test_latency.py compares both on random
deployments at a relative 1e-12).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# Rows of chain_kernel's output, in PooledState's field order (chain.pooled_state reads them by these names).
OUTPUTS = ("replicas", "arrival_rate_per_s", "batch", "prefill_share", "prefill_stretch", "offered_load",
           "join_ms", "ms_per_token", "batch_cv2", "interference_var_per_ms", "full_join_ms", "full_ms_per_token",
           "waited_ms_per_token", "service_mean_ms", "full_service_mean_ms", "full_service_cv2", "drain_cv2",
           "p_wait", "wait_rate_per_ms", "stable")
# The rows that read the chain's points (NaN when chain_kernel runs without them).
_FROM_CHAIN = tuple(OUTPUTS.index(f) for f in (
    "batch", "prefill_stretch", "offered_load", "join_ms", "ms_per_token", "batch_cv2", "interference_var_per_ms",
    "waited_ms_per_token", "service_mean_ms", "p_wait"))


@njit(cache=True, inline="always")
def _min(a, b):
    """np.minimum of two floats (NaN if either is)."""
    if a != a or b != b:
        return math.nan
    return a if a < b else b


@njit(cache=True, inline="always")
def _max(a, b):
    """np.maximum of two floats (NaN if either is)."""
    if a != a or b != b:
        return math.nan
    return a if a > b else b


@njit(cache=True, inline="always")
def _step_at(step, r, b):
    """chain._step_at for one configuration and one batch: step_ms(b) by linear interpolation."""
    top = step.shape[1]
    b = _min(_max(b, 1.0), float(top))
    lo = min(max(int(b), 1), top) if b == b else 1
    hi = min(lo + 1, top)
    s_lo, s_hi = step[r, lo - 1], step[r, hi - 1]
    slope = s_hi - s_lo if hi > lo and math.isfinite(s_hi) else 0.0
    return s_lo + (b - lo) * slope


@njit(cache=True, error_model="numpy")
def chain_kernel(n, lam, pre, pre2, mom_n, pre_n, n2, cap_i, spt, step, chain_points,  # noqa: C901 - one derivation
                 active, with_chain):
    """Every PooledState field (OUTPUTS' rows) of R configurations at replicas n (chain.pooled_state_py's
    formulas and names; stable as 1.0 / 0.0).

    Configurations are independent: those not `active` are left NaN (stable 0), the others' figures are the
    same as when all are solved. with_chain=False skips the chain's points: the fields that read them (the
    batch an arrival joins, its join wait and per-token time, p_wait and what follows from them) are NaN, the
    closed forms at the cap (full_service_mean_ms, drain_cv2, ...) the same."""
    R = n.shape[0]
    out = np.full((len(OUTPUTS), R), math.nan)
    servers_max = 1.0
    for r in range(R):
        if active[r]:
            sn = n[r] if n[r] > 0 else 1.0
            servers_max = max(servers_max, sn * float(cap_i[r]))
    points = int(min(float(chain_points), math.ceil(servers_max))) if with_chain else 0
    for r in range(R):
        if not active[r]:
            out[len(OUTPUTS) - 1, r] = 0.0
            continue
        lam_r = lam[r]
        has = lam_r > 0
        safe_lam = lam_r if has else 1.0
        pbar, p2 = pre[r] / safe_lam, pre2[r] / safe_lam
        lam_ms = lam_r / 1000.0
        live = n[r] > 0
        safe_n = n[r] if live else 1.0
        phi = lam_ms * pbar / safe_n if live else math.inf
        cap = float(cap_i[r])
        servers = safe_n * cap
        spt_r = spt[r]
        en = mom_n[r] / safe_lam
        pre_resid = p2 / (2.0 * pbar) if pbar > 0 else 0.0
        delta = _max(servers / chain_points, 1.0)
        half = (delta - 1.0) / 2.0
        step_cap = _step_at(step, r, cap)
        tau_cap = spt_r * en * step_cap + step_cap / 2.0
        r_q = lam_ms * (tau_cap / servers + pbar / safe_n) if live else math.inf
        stable = live and r_q < 1.0
        # The chain on its grid: log pi at each point's end and middle, the arrivals' weights.
        log_end = 0.0
        log_last = -math.inf
        top = -math.inf
        last_g = points if with_chain else -1
        log_w = np.empty(points + 1)
        # A point's weight is 1 (g = 0), delta - 1 (the last) or delta: their logs made once per configuration,
        # not once per point (the same values: a third of the loop's transcendental calls).
        log_delta = math.log(_max(delta, 1e-300)) if delta > 0 else 0.0
        log_delta_m1 = math.log(_max(delta - 1.0, 1e-300)) if delta - 1.0 > 0 else 0.0
        for g in range(points + 1 if with_chain else 0):
            k = g * delta
            if not k <= servers * (1.0 + 1e-12):
                last_g = g - 1
                break
            log_r = 0.0
            if g > 0 and has:
                x = _max(k - half, 1.0)
                b_x = _min(_max(x / safe_n, 1.0), cap)
                step_x = _step_at(step, r, b_x)
                tau_x = (spt_r * en) * step_x + step_x / 2.0
                log_r = math.log(lam_ms * (tau_x / _min(x, servers) + pbar / _min(x, safe_n)))
            log_end += log_r * delta
            log_mid = log_end - half * log_r
            last = k >= servers * (1.0 - 1e-12)
            if last:
                log_last = _max(log_last, log_end)
            if g == 0:  # w = 1
                lw = math.log(1.0) + log_mid
            elif last:  # w = delta - 1
                lw = log_delta_m1 + log_mid if delta - 1.0 > 0 else -math.inf
            else:  # w = delta
                lw = log_delta + log_mid if delta > 0 else -math.inf
            log_w[g] = lw
            top = _max(top, lw)
        log_queue = log_last - math.log1p(-_min(r_q, 1.0 - 1e-300)) if stable else math.inf
        if math.isfinite(log_queue):
            top = _max(top, log_queue)
        if not math.isfinite(top):
            top = 0.0
        free_mass = 0.0
        for g in range(last_g + 1):
            log_w[g] = math.exp(log_w[g] - top)
            free_mass += log_w[g]
        queue_mass = math.exp(_min(log_queue - top, 700.0)) if stable else 0.0
        cw = (queue_mass / (free_mass + queue_mass) if stable else 1.0) if has else 0.0
        # What an arrival that finds a free slot sees.
        phi_q = _min(phi, 1.0 - 1e-9)
        norm = free_mass if free_mass > 0 else 1.0
        s_shared = s_c = s_c2 = s_join = s_batch = 0.0
        for g in range(last_g + 1):
            pf = log_w[g] / norm
            k_arr = 0.0 if g == 0 else np.rint(g * delta - half)
            b_arr = _min(math.floor(k_arr / safe_n) + 1.0, cap)
            step_arr = step[r, int(b_arr) - 1]
            if k_arr >= safe_n:
                s_join += pf * ((1.0 - phi_q) * step_arr / 2.0 + phi_q * pre_resid / (1.0 - phi_q))
            if k_arr >= safe_n - 1.0:
                s_shared += pf
            s_batch += pf * b_arr
            s_c += pf * step_arr
            s_c2 += pf * step_arr * step_arr
        phi_c = _min(phi, 1.0)
        phi_t = _min(phi * s_shared, 1.0 - 1e-9)
        pre_stretch = 1.0 / (1.0 - phi_t)
        interference = lam_ms / safe_n * s_shared * p2
        scale = spt_r * pre_stretch
        c = s_c * scale
        c2 = s_c2 * scale * scale
        batch_cv2 = _max(c2 / (c * c) - 1.0, 0.0) if c > 0 else 0.0
        if not math.isfinite(batch_cv2):
            batch_cv2 = 0.0
        s_bar = pbar * pre_stretch + s_join + c * en
        # At the cap (chain.pooled_state_py's comments).
        queued = stable and has
        f_q = _min(phi / (r_q if r_q > 0 else 1.0), 1.0 - 1e-9) if queued else phi_c
        f_q = _max(f_q, phi_c)
        c_dec = spt_r * step_cap
        c_full = c_dec * (1.0 + (cap - 1.0) / cap * f_q / (1.0 - f_q)) if f_q < 1.0 else math.inf
        s_full = pbar + c_full * en
        pn2, n2r = 2.0 * pre_n[r] / safe_lam, n2[r] / safe_lam
        second = p2 + c_full * (pn2 + c_full * n2r)
        cv2_full = _max(second / (s_full * s_full) - 1.0, 0.0) if queued else 1.0
        w1 = cap * pbar + c_dec * en
        w2 = cap * (cap * p2 + c_dec * pn2) + c_dec * c_dec * n2r
        drain_cv2 = _max(w2 / (w1 * w1) - 1.0, 0.0) if queued else 1.0
        # queueing.wait_scale(servers, r_q, drain_cv2), inlined (tests compare the two).
        cs = _max(servers, 1.0)
        rho = _min(_max(r_q, 1e-9), 1.0)
        cv2 = _max(drain_cv2, 0.0)
        h = 0.5 * (1.0 + (1.0 - rho) * (cs - 1.0) * (math.sqrt(4.0 + 5.0 * cs) - 2.0) / (16.0 * rho * cs))
        h = _min(_max(h, 0.5), 1.0)
        kk = (1.0 + cv2) / (2.0 * cv2 + (1.0 - cv2) / h)
        d_eff = servers / tau_cap * (1.0 - f_q)
        theta = d_eff * (1.0 - r_q) / kk if stable else 0.0
        live_q = stable and theta > 0 and d_eff > 0
        t_queue = lam_ms / (theta * d_eff) if live_q else math.inf
        c_top = spt_r * step_cap * pre_stretch
        u = t_queue / (c_full * en) if c_full * en > 0 else 1.0
        u = _min(_max(u, 0.0), 1.0)
        c_waited = u * c_full + (1.0 - u) * c_top if math.isfinite(c_full) else c_full
        vals = (n[r], lam_r, s_batch, phi, pre_stretch, lam_r * s_bar / 1000.0, s_join, c, batch_cv2, interference,
                0.0, c_full, c_waited, s_bar, s_full, cv2_full, drain_cv2, cw, theta, 1.0 if stable else 0.0)
        for j in range(len(vals)):
            out[j, r] = vals[j]
        if not with_chain:
            for j in _FROM_CHAIN:
                out[j, r] = math.nan
    return out
