"""From the engine's per-route scores to the fleet plan: plan inputs, attribution, drivers, the fleet record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from core import background
from core.decision import latency
from core.decision import settings as settings_mod
from core.decision.closeloop import (
    cheapest_checked,
    close_by_simulation,
    close_polished,
    raised_columns,
)
from core.decision.economics import DAYS_PER_MONTH, HOURS_PER_MONTH, cash_bill, to_cents
from core.decision.plan import (
    CAP_BANDS,
    EDGE_TIER,
    TIER_NAMES,
    OwnedRoute,
    PlanCost,
    PlanInputs,
    Planner,
    service_p95_alone_ms,
)
from core.decision.records import Deployment, FleetPlan, LicensedRoute, NodeDriver, Relaxation
from core.decision.sizing import shared_store
from core.decision.why import deployment_why, nodes_forced, pool_drivers
from core.format import integer
from core.models import CostBasis, Weights
from core.performance import physics

if TYPE_CHECKING:
    from core.decision.engine import Evaluation

# Office-hours shape of interactive traffic (local time), 0..1; scaled per workload to its peak factor.
OFFICE_HOURS = np.array([0.05, 0.03, 0.02, 0.02, 0.03, 0.08, 0.2, 0.45, 0.75, 0.95, 1.0, 1.0,
                         0.9, 0.95, 1.0, 0.95, 0.85, 0.65, 0.4, 0.25, 0.18, 0.12, 0.08, 0.06])
MAX_DRIVERS = 5  # workloads examined as the cause of each purchase (each costs one exact re-pricing per change)
# ev.a arrays read by build_inputs only, or by nobody after it (the plan keeps its own service and wait budget
# in its deployments): dropped before the search instead of held through it (~50 MiB at 100k workloads).
DROP_AFTER_INPUTS = ("base_usd_per_request", "service_s", "wait_budget_s")


def traffic_shape(scenario) -> tuple[np.ndarray, str]:
    """The scenario's hour-of-day shape of interactive traffic (0..1, peak 1) and words saying where it comes from.

    A measured profile (GPU telemetry) replaces the assumed office hours; hours the logs do not cover take
    the mean of the covered ones (unknown, not idle), and the shape is scaled so its busiest hour is 1.
    """
    from core.errors import InputError
    from core.models import TrafficProfile

    if scenario.traffic_profile is not TrafficProfile.MEASURED:
        return OFFICE_HOURS, "office-hours traffic shape (an assumption)"
    if scenario.measured_hourly_shape is None:
        raise InputError("the measured traffic profile needs imported GPU telemetry "
                         "(hangover telemetry import, or the Telemetry page); or use the office-hours profile")
    shape = np.array(scenario.measured_hourly_shape, dtype=float)
    if not np.isfinite(shape).any() or np.nanmax(shape) <= 0:
        raise InputError("the measured traffic profile is empty (no busy hour in the telemetry)")
    shape = np.where(np.isfinite(shape), shape, np.nanmean(shape))
    return shape / shape.max(), f"measured traffic shape ({scenario.measured_label or 'imported telemetry'})"


def hourly_profile(peak_factor, shape: np.ndarray = OFFICE_HOURS) -> np.ndarray:
    """(W, 24) multipliers of the mean rate: mean 1, maximum = peak factor (office-hours shape by default).

    p(h) = a + b s(h) with mean(p) = 1 and max(p) = peak; where a would go
    negative the shape is clipped at 0 and renormalised to mean 1.
    """
    pf = np.asarray(peak_factor, dtype=float)[:, None]
    s = np.asarray(shape, dtype=float)[None, :]
    b = (pf - 1.0) / (1.0 - s.mean())
    a = pf - b
    p = np.maximum(a + b * s, 0.0)
    return p / p.mean(axis=1, keepdims=True)


def route_permitted(route) -> bool:
    """Whether a route may carry work in the plan (licensed weights need a known fee)."""
    st = route.stack
    return st is None or not (st.weights is Weights.LICENSED and st.licence_usd_per_gpu_month is None)


def build_inputs(ev: Evaluation, gpu, lam_peak, rpd, n_in, n_out, slo, interactive, pf, *,
                 grid: np.ndarray, tp_options: tuple[int, ...], zero_fee_for: set[str] | None = None) -> PlanInputs:
    """Everything the plan search needs, computed once per scenario (physics on the concurrency grid).

    A route of the plan is an API, or an owned stack with a fixed number of GPUs per replica (docs/design/fleet_plan.md
    "Routes": stack x GPU x g); each gets a plan column. With g fixed, a pool of workloads that each meet their
    target alone at that g can always be served (at worst one request per slot), so the search never
    builds a deployment nobody could run.
    """
    a, sc, rate = ev.a, ev.scenario, ev.rate
    W, R = a["code"].shape
    rows_all = np.arange(W)
    zero_fee_for = zero_fee_for or set()
    permitted = np.array([route_permitted(r) or r.route_id in zero_fee_for for r in ev.routes], dtype=bool)
    allowed_r = a["feasible"] & permitted[None, :]
    per_month = rpd * DAYS_PER_MONTH
    base = a["base_usd_per_request"]
    api_cols = np.array([r.hosting == "api" for r in ev.routes], dtype=bool)
    gpn = sc.gpus_per_node

    # The latency model's inputs (docs/design/latency_model.md): output-length spread per workload (the
    # inventory's output_tokens_p95, else latency.DEFAULT_OUTPUT_CV) and the latency an escalated request
    # adds: its fallback route's standalone p95 (an upper estimate of that one request's extra time).
    n_out_p95 = _optional_column(ev.workloads, "output_tokens_p95", W)
    fb_all = a["fallback_route"].astype(int)
    fb_extra = np.where(fb_all >= 0, a["p95_ms"][rows_all, np.where(fb_all >= 0, fb_all, 0)], 0.0) if R \
        else np.zeros(W)
    fb_extra = np.nan_to_num(fb_extra, nan=0.0, posinf=0.0)
    out_mu, out_sigma = latency.output_lognormal(n_out, n_out_p95)
    # Each output length's p95 over its mean, per block size: every owned stack and the plan read it.
    q_ratio: dict[int, np.ndarray] = {}
    for route in ev.routes:
        if route.hosting == "owned":
            blk = latency.block_tokens_of(route.owned_stack)
            if blk not in q_ratio:
                q_ratio[blk] = latency.length_ratios(n_out, n_out_p95, blk, sc.sla_percentile)[0]
    best_g = np.nan_to_num(a["gpus_per_replica"], nan=0.0).astype(int)

    # Physics of every owned stack at every GPU count it fits on, once; its tiers (plan.CAP_BANDS) share it.
    phys: dict[tuple[int, int], dict] = {}
    for r, route in enumerate(ev.routes):
        if route.hosting != "owned":
            continue
        for g in tp_options:
            if g <= gpn and physics.max_concurrency(route.owned_stack, gpu, g, 1024.0) >= 1:
                phys[(r, g)] = _owned_physics(ev, route.owned_stack, gpu, g, r, allowed_r[:, r] & interactive, n_in, n_out,
                                              n_out_p95, slo, grid, out_mu, out_sigma, fb_all, fb_extra,
                                              q_ratio[latency.block_tokens_of(route.owned_stack)])

    # A sub-second member sets its pool's tier: never the throughput tier where a lower one holds it (settings).
    sub = interactive & (np.asarray(slo, dtype=float) < settings_mod.current().sub_second_ms)
    cols, owned_spec = _plan_columns(ev, phys, tp_options, sub)
    col_route = np.array([c[0] for c in cols], dtype=int)
    col_g = np.array([c[1] for c in cols], dtype=int)
    C = len(cols)
    allowed = allowed_r[:, col_route] if C else np.zeros((W, 0), bool)

    owned = _owned_routes(ev, owned_spec, phys, allowed, interactive, best_g, zero_fee_for, gpu, sub)

    api_monthly_r = np.where(api_cols[None, :], base * per_month[:, None], np.inf)  # (W, engine routes)
    fb = a["fallback_route"].astype(int)
    fb_safe = np.where(fb >= 0, fb, 0)
    fb_is_api = (fb >= 0) & api_cols[fb_safe] if R else np.zeros(W, bool)
    fallback_api = np.where(fb_is_api, base[rows_all, fb_safe] * per_month, 0.0) if R else np.zeros(W)
    fb_col = _fallback_columns(fb, cols, owned_spec, api_cols, best_g)
    attribution_rate = rate.owned_fleet_usd_per_node_hour if sc.cost_basis is CostBasis.MARGINAL \
        else rate.full_usd_per_node_hour
    return PlanInputs(
        workload_ids=ev.workloads["workload_id"].to_numpy(), interactive=interactive, lam_peak=lam_peak,
        lam_mean=rpd / 86400.0, profile=hourly_profile(pf, traffic_shape(sc)[0]), slo_ms=slo, allowed=allowed,
        api_monthly_r=api_monthly_r, gpu_hours_day_r=np.nan_to_num(a["gpu_hours_per_day"], nan=0.0),
        offline_min_gpus_r=np.nan_to_num(a["replicas"] * a["gpus_per_replica"], nan=0.0),
        # The same for every workload: a read-only (W, C) view of one row, not W copies of it.
        offline_gpus_per_replica=np.broadcast_to(np.where(col_g > 0, col_g, 1)[None, :], (W, C)),
        fallback_share_r=np.nan_to_num(a["fallback_share"]),
        # A copy: the plan's own p95s are written into ev.a["p95_ms"] afterwards; re-plans tie-break on these.
        fallback_route=fb_col, fallback_api_monthly=fallback_api, latency_ms_r=a["p95_ms"].copy(),
        owned=tuple(owned), n_routes=C, col_route=col_route, gpus_per_node=gpn, owned_nodes=sc.fleet_nodes,
        full_usd_per_node_hour=rate.full_usd_per_node_hour, attribution_usd_per_node_hour=attribution_rate,
        concurrency_grid=np.asarray(grid, dtype=float), sla_tail=1.0 - sc.sla_percentile,
        input_tokens=np.asarray(n_in, dtype=float), output_tokens=np.asarray(n_out, dtype=float),
        output_p95_tokens=n_out_p95, fallback_extra_ms=fb_extra, output_q_ratio=q_ratio)


def _plan_columns(ev: Evaluation, phys: dict[tuple[int, int], dict], tp_options: tuple[int, ...],
                  sub: np.ndarray) -> tuple[list[tuple[int, int]], list[tuple[int, int, int, int]]]:
    """The plan's columns: (engine route, GPUs per replica; 0 for an API) each, and for the owned ones
    (plan column, engine route, g, tier): one per concurrency tier a workload needs, and the edge pool; the
    middle tier also where a sub-second member (`sub`) meets its target there, since it may not run at
    throughput caps."""
    cols: list[tuple[int, int]] = []
    owned_spec: list[tuple[int, int, int, int]] = []
    top = len(CAP_BANDS) - 1
    for r, route in enumerate(ev.routes):
        if route.hosting != "owned":
            cols.append((r, 0))
            continue
        for g in tp_options:
            ph = phys.get((r, g))
            if ph is None:
                continue
            # A lower tier only where some interactive workload can run there and nowhere higher: a tier
            # nobody needs would only multiply the search's columns.
            tiers = [t for t in range(len(CAP_BANDS))
                     if t == top or (ph["tier_ok"][t] & ~ph["tier_ok"][t + 1:].any(axis=0)).any()
                     or (t == top - 1 and (sub & ph["tier_ok"][t]).any())]
            if 0 in tiers:
                # Beside a latency tier, a second low-batch pool: the search moves there the few members whose
                # target sits at the edge of what the hardware does alone (see Planner._evict).
                if 1 not in tiers and top > 1:
                    # And the middle tier: a member that meets its target in the throughput tier but not in the
                    # big pool already there would otherwise get a pool of its own only at caps of 4.
                    tiers.insert(1, 1)
                tiers.append(EDGE_TIER)
            for t in tiers:
                owned_spec.append((len(cols), r, g, t))
                cols.append((r, g))
    return cols, owned_spec


def _owned_routes(ev: Evaluation, owned_spec: list[tuple[int, int, int, int]], phys: dict[tuple[int, int], dict],
                  allowed: np.ndarray, interactive: np.ndarray, best_g: np.ndarray, zero_fee_for: set[str],
                  gpu, sub: np.ndarray) -> list[OwnedRoute]:
    """The plan's owned columns as OwnedRoute records; who may use each is narrowed in `allowed` (in place):
    sub-second members (`sub`) stay off the throughput tier of a stack and GPU count that has a lower tier."""
    top = len(CAP_BANDS) - 1
    owned: list[OwnedRoute] = []
    tiers_of: dict[tuple[int, int], int] = {}
    for _, r, g, _ in owned_spec:
        tiers_of[(r, g)] = tiers_of.get((r, g), 0) + 1
    for c, r, g, t in owned_spec:
        route, ph = ev.routes[r], phys[(r, g)]
        # Interactive work may use any tier of a column where it meets its target alone: a cap is a limit, and a
        # lightly loaded pool runs far below it, so the tier a workload suits is the search's call (its linear
        # view prices each tier at the batch of the tier's caps; the exact pricing decides). Offline work uses
        # the top tier at the g the engine sized.
        barred = sub if t == top and tiers_of[(r, g)] > 1 else np.zeros_like(sub)
        allowed[:, c] &= np.where(interactive, ph["alone_ok"] & ~barred, (best_g[:, r] == g) & (t == top))
        fee = 0.0 if route.route_id in zero_fee_for else (route.owned_stack.licence_usd_per_gpu_month or 0.0)
        lo, hi = CAP_BANDS[0] if t == EDGE_TIER else CAP_BANDS[t]
        owned.append(OwnedRoute(c, r, route.route_id, route.label, route.architecture, (g,), float(fee), ph["svc"],
                                ph["tail"], stack=route.stack, gpu=gpu, eff=ph["eff"], prefill_ms=ph["prefill"],
                                steps_per_token=ph["spt"], cap_lo=lo, cap_hi=hi,
                                tier=TIER_NAMES[t] if tiers_of[(r, g)] > 1 else "", edge=t == EDGE_TIER))
    return owned


def _fallback_columns(fb: np.ndarray, cols: list[tuple[int, int]], owned_spec: list[tuple[int, int, int, int]],
                      api_cols: np.ndarray, best_g: np.ndarray) -> np.ndarray:
    """The plan column each workload's escalated share lands on (-1: none): its fallback's API, or its stack at
    the GPU count the engine sized (top tier)."""
    top = len(CAP_BANDS) - 1
    col_of = {(r, g): c for c, r, g, t in owned_spec if t == top}
    col_of.update({(r, 0): k for k, (r, g) in enumerate(cols) if g == 0})
    return np.array([col_of.get((int(f), 0 if api_cols[int(f)] else int(best_g[i, int(f)])), -1) if f >= 0 else -1
                     for i, f in enumerate(fb)], dtype=int) if np.any(fb >= 0) else np.full(len(fb), -1)


def _owned_physics(ev: Evaluation, stack, gpu, g: int, r: int, rows_mask: np.ndarray, n_in, n_out, n_out_p95, slo,
                   grid, out_mu, out_sigma, fb_all, fb_extra, q_ratio) -> dict:
    """One owned stack at g GPUs per replica: each interactive workload's mean service on the concurrency
    grid (NaN where it does not fit), its prefill, whether it meets its target alone, and per tier
    (plan.CAP_BANDS) whether it meets it alone at some cap of the tier."""
    a = ev.a
    W = len(rows_mask)
    svc = np.full((W, 1, len(grid)), np.nan, dtype=np.float32)
    eff, _ = ev.catalog.efficiency(stack, gpu, g)
    prefill = np.full(W, np.nan)
    rows = np.flatnonzero(rows_mask)
    spt = float(physics.decode_steps(stack, 1e6, eff)) / 1e6  # decode steps per output token
    alone_ok = np.zeros(W, dtype=bool)
    tier_ok = np.zeros((len(CAP_BANDS), W), dtype=bool)
    if rows.size:
        pre, svc_rows, step1, p95 = _owned_timing(stack, gpu, g, eff, rows, n_in, n_out, n_out_p95, grid, q_ratio)
        prefill[rows] = pre
        svc[rows] = svc_rows
        # Alone (batch 1, nobody else's prefill, no wait), with its escalations in the same 5 % budget:
        # the best any deployment of this column can do for the workload (latency.min_replicas's test).
        e = np.where(fb_all[rows] >= 0, np.nan_to_num(a["fallback_share"][rows, r]), 0.0)
        alone = latency.ServiceTime(pre, spt * step1, out_mu[rows], out_sigma[rows], latency.block_tokens_of(stack))
        p_miss = (1.0 - e) * alone.survival(slo[rows]) + e * alone.survival(slo[rows] - fb_extra[rows])
        alone_ok[rows] = np.isfinite(svc[rows, 0, 0]) & (p_miss <= 1.0 - ev.scenario.sla_percentile)
        # Per tier: its service p95 alone at some cap of the band within target (the search's linear view).
        meets = np.isfinite(p95) & (p95 <= slo[rows, None])
        g_arr = np.asarray(grid)
        for t, (lo, hi) in enumerate(CAP_BANDS):
            tier_ok[t, rows] = meets[:, (g_arr >= lo) & (g_arr <= hi)].any(axis=1)
        tier_ok[0, rows] |= alone_ok[rows]  # the latency tier holds anyone who meets the target at batch 1
    return {"svc": svc, "tail": np.array([eff.p95_over_mean]), "prefill": prefill, "spt": spt, "eff": eff,
            "alone_ok": alone_ok, "tier_ok": tier_ok}


def _owned_timing(stack, gpu, g: int, eff, rows: np.ndarray, n_in, n_out, n_out_p95, grid,
                  q_ratio) -> tuple[np.ndarray, ...]:
    """_owned_physics' part that reads no target: the rows' prefill, mean service on the grid (s; NaN where the
    batch does not fit), decode step at batch 1 and service p95 alone on the grid (ms). Kept in the block's
    shared_sizings store where there is one: the smallest change's re-plans differ in a target or a policy, and
    timed every owned stack's rows again each (~4 % of a 20-workload evaluation). The key holds what it reads
    (the store is one scenario's GPU and grid; the efficiency is in the key: a range end shares the store)."""
    store = shared_store()
    key = None
    if store is not None:
        key = ("owned_timing", stack.stack_id, gpu.name, int(g), eff, rows.tobytes(), n_in[rows].tobytes(),
               n_out[rows].tobytes(), n_out_p95[rows].tobytes(), q_ratio[rows].tobytes(),
               np.asarray(grid, dtype=float).tobytes())
        got = store.get(key)
        if got is not None:
            return got
    svc = np.full((rows.size, 1, len(grid)), np.nan, dtype=np.float32)
    pre = physics.prefill_ms(stack, gpu, g, n_in[rows], eff)
    maxc = physics.max_concurrency(stack, gpu, g, n_in[rows] + n_out[rows], eff)
    for j, b in enumerate(grid):
        fits = b <= maxc
        if not fits.any():
            break
        lat = physics.e2e_ms(stack, gpu, g, b, n_in[rows], n_out[rows], eff, prefill=pre) / 1e3
        svc[:, 0, j] = np.where(fits, lat, np.nan)
    step1 = physics.decode_step(stack, gpu, g, 1.0, n_in[rows] + 0.5 * n_out[rows], eff)[0]
    p95 = service_p95_alone_ms(svc, pre, n_out[rows], n_out_p95[rows], latency.block_tokens_of(stack),
                               q_ratio[rows])[:, 0, :]
    out = (pre, svc, step1, p95)
    for x in out:
        if isinstance(x, np.ndarray):
            x.flags.writeable = False  # shared by the re-plans that find it
    if store is not None and key is not None:
        store[key] = out
    return out


def _optional_column(workloads: pd.DataFrame, name: str, n: int) -> np.ndarray:
    """A numeric optional inventory column as floats (NaN where absent or blank)."""
    if name not in workloads:
        return np.full(n, np.nan)
    return pd.to_numeric(workloads[name], errors="coerce").to_numpy(dtype=float)


def restrict(inp: PlanInputs, route_mask: np.ndarray) -> PlanInputs:
    """The same inputs with only some engine routes allowed (fleet options).

    A route that needs quality escalation stays allowed only if its fallback is allowed too: an all-API
    option cannot lean on an owned route for the hard cases.
    """
    cols_ok = np.asarray(route_mask, dtype=bool)[inp.col_route]
    fb = inp.fallback_route
    fb_ok = np.where(fb >= 0, cols_ok[np.where(fb >= 0, fb, 0)], True)
    escalates = inp.fallback_share_r[:, inp.col_route] > 0
    return replace(inp, allowed=inp.allowed & cols_ok[None, :] & ~(escalates & ~fb_ok[:, None]))


@dataclass(frozen=True)
class Planned:
    """What the plan decided for an evaluation: each workload's engine route (-1: none), the fleet record, and the
    search's result, inputs and planner (which prices other assignments: options, drivers)."""

    verdict: np.ndarray
    fleet: FleetPlan
    plan: PlanCost
    plan_inputs: PlanInputs
    planner: Planner
    licensed_job: Callable[[], tuple[LicensedRoute, ...]] | None = None  # the break-even, deferred (licensed_routes)
    held_servable: np.ndarray | None = None  # rows `hold` kept without a route that have one here (plan_evaluation)


def column_keys(inp: PlanInputs) -> list[tuple[int, int, int, int, bool]]:
    """Each plan column's identity across plans of the same routes: (engine route, GPUs per replica, its
    concurrency band, edge pool); an API column (route, 0, 0, 0, False). Column positions are not stable: a
    changed target can add or drop a tier."""
    keys: list[tuple[int, int, int, int, bool]] = [(int(r), 0, 0, 0, False) for r in inp.col_route]
    for o in inp.owned:
        keys[o.index] = (int(o.route_index), int(o.tp_options[0]), int(o.cap_lo), int(o.cap_hi), bool(o.edge))
    return keys


def plan_start_keys(planned_inputs: PlanInputs, assignment: np.ndarray) -> list[tuple | None]:
    """A plan's assignment as column identities (column_keys; None: unserved), to start another plan from."""
    keys = column_keys(planned_inputs)
    return [None if int(c) < 0 else keys[int(c)] for c in assignment]


def _warm_start(planner: Planner, start_keys: list[tuple | None]) -> np.ndarray | None:
    """start_keys (plan_start_keys of a plan of the same workloads and routes) as this plan's columns: each row on
    its column here, else on another allowed tier of its stack and GPU count (the nearest band: a changed target
    or speed can add or drop a tier), else (or where it was unserved) its cheapest column on the linear view at
    the full price, as the search's own candidates choose. None where the rows differ."""
    inp = planner.inp
    if len(start_keys) != len(inp.workload_ids):
        return None
    keys = column_keys(inp)
    col_of = {k: c for c, k in enumerate(keys)}
    by_group: dict[tuple[int, int], list[int]] = {}
    for col, key in enumerate(keys):
        if key[1] > 0:
            by_group.setdefault((key[0], key[1]), []).append(col)
    assign = np.full(len(start_keys), -1, dtype=int)
    loose: list[int] = []
    for i, k in enumerate(start_keys):
        c = None if k is None else col_of.get(k)
        if c is None or not inp.allowed[i, c]:
            near = [] if k is None else [x for x in by_group.get((k[0], k[1]), []) if inp.allowed[i, x]]
            if k is None or not near:
                loose.append(i)
                continue
            band, edge = k[2], k[4]
            c = min(near, key=lambda x: (abs(keys[x][2] - band), keys[x][4] != edge))
        assign[i] = c
    if loose:
        rows = np.array(loose, dtype=int)
        assign[rows] = planner._choose(inp.full_usd_per_gpu_hour, rows=rows)
    return assign


def plan_evaluation(ev: Evaluation, gpu, lam_peak, rpd, n_in, n_out, slo, interactive, pf, *,
                    grid, tp_options, break_even: bool | str = True, checked: bool = True,
                    start_keys: list[tuple | None] | None = None, candidates: bool = False,
                    restart_from: Callable[[], list] | None = None, other_starts: tuple = (),
                    polish: bool = True, hold: np.ndarray | None = None) -> Planned:
    """Plan the fleet for a scored evaluation: the verdicts, attributed costs (into its route arrays) and fleet record.

    break_even=False skips the licensed stacks' break-even re-plan (a search of its own, ~40 % of the time on
    a 100-workload inventory): `licensed_routes` is then empty. For evaluations nobody shows, such as
    the efficiency ends of the verdict ranges, which read only verdicts, nodes and the bill. break_even="later":
    made when first asked (licensed_routes(ev, force=True)) whatever the size, as above
    SearchSettings.break_even_max_workloads: for plans only some of which are shown (the mix's stage plans).
    checked=False skips the simulation check (core.decision.closeloop) and the node drivers: for re-plans compared
    with one another on the latency model alone, such as the smallest change's.
    start_keys (plan_start_keys of a plan of the same workloads and routes, such as the plan before a target is
    relaxed, or the central plan for a range's end): the search starts from that plan (_warm_start maps it onto
    this plan's columns) without restarts; only moves from it (the smallest change's exploring re-plans), or
    with candidates=True from the better of it and the shadow-price candidates (the ranges' end plans). A
    whole search where the start cannot be sized here.
    restart_from: a function giving another plan's start keys (the plan at the fast end of the efficiency ranges),
    called where the search's plan buys nodes: that plan, priced here and improved, replaces the search's where
    cheaper (docs/design/fleet_plan.md "A restart from faster routes").
    other_starts (with candidates=True): more plans' start keys; the cheapest of them and start_keys' plan is
    the start (the optimistic end of the ranges is given the whole search the central plan's restart made at
    its speeds: a converged plan of the same inputs, so its moves end after one pass).
    polish=False: without the last descent with pool merges of large inventories (Planner.polish), for the fast
    end's search that only gives the restart from faster routes its start.
    hold (bool per workload): rows kept without a route, whatever this plan could serve them on (a range end
    planned for the work the central plan serves: sensitivity.end_evaluations); those that have a route here are
    Planned.held_servable."""
    # Built once with licensed stacks of unknown fee at a zero fee; the plan itself may not use them.
    unknown_fee = {r.route_id for r in unknown_fee_routes(ev)}
    every = build_inputs(ev, gpu, lam_peak, rpd, n_in, n_out, slo, interactive, pf, grid=grid,
                         tp_options=tp_options, zero_fee_for=unknown_fee)
    for k in DROP_AFTER_INPUTS:
        ev.a.pop(k, None)
    barred = np.array([ev.routes[r].route_id in unknown_fee for r in every.col_route], dtype=bool)
    inp = replace(every, allowed=every.allowed & ~barred[None, :])
    held_servable = None
    if hold is not None:
        held_servable = hold & inp.allowed.any(axis=1)
        inp = replace(inp, allowed=inp.allowed & ~hold[:, None])
    planner = Planner(inp)
    start = None if start_keys is None else _warm_start(planner, start_keys)
    if start is not None and not planner.price(start).feasible:
        start = None  # a pool of the start cannot be sized here (a slower end of the ranges): a whole search
    for keys in other_starts if candidates else ():
        other = _warm_start(planner, keys)
        priced = None if other is None else planner.price(other)
        if priced is not None and priced.feasible and (start is None or priced.key < planner.price(start).key):
            start = other
    # The plan checked by its own simulation before it is final (core.decision.closeloop).
    if start is None:
        best = planner.optimise()
    elif candidates:
        planner._restarts = False  # one start: the better of the start and the shadow-price candidates, improved
        best = planner.optimise(start=start)
    else:
        best = planner.optimise(start=start, ladder=False)
    if restart_from is not None and best.feasible and best.nodes_needed > inp.owned_nodes:
        other = _warm_start(planner, restart_from())
        if other is not None:
            priced = planner.price(other)
            if priced.feasible:
                best = planner._restart_from(priced, best, True)
        # Last, so the plan is never dearer than the restarts above make it (docs/design/fleet_plan.md "A
        # restart from whole moves"); not in the fast end's search, whose plan is only a start for this one.
        if best.nodes_needed > inp.owned_nodes and planner.settings.whole_moves_restart:
            best = planner.from_whole_moves(best)
    if polish:
        best = planner.fewer_nodes(best)  # a node fewer through the pools' room (its docstring)
    added: dict[int, int] = {}
    if checked:
        closed = cheapest_checked(planner, close_polished(planner, best) if polish else close_by_simulation(planner, best))
        best, added = closed.plan, closed.added
    elif polish:
        best = planner.polish(best)
    # The break-even re-plan reads the plan and writes only its own result: at scale it runs on the other core
    # while the plan is attributed (docs/design/fleet_plan.md "The break-even beside the attribution"). Above
    # SearchSettings.break_even_max_workloads it waits until asked (licensed_routes).
    now = break_even is True and len(inp.workload_ids) <= settings_mod.PLAN.break_even_max_workloads
    licensed = (background.in_background(lambda: _licensed_routes(ev, best, every, barred, planner),
                                          len(inp.workload_ids) >= settings_mod.PLAN.background_rows) if now else list)
    verdict, fleet = _apply(ev, planner, best, rpd, n_out, added, drivers=checked)
    fleet = replace(fleet, licensed_routes=tuple(licensed()) if now or not break_even else None)
    later = None
    if break_even and not now:
        def later() -> tuple[LicensedRoute, ...]:
            return tuple(_licensed_routes(ev, best, every, barred, planner))
    # The search's (W x plan columns) linear terms and move targets are not needed to price other plans
    # (options, drivers, reports): let go of them (~1.8 KB per workload held by a shared evaluation).
    planner._lin = None
    planner._alt_cache.clear()
    planner._prefetched.clear()  # sizings made ahead for moves the search did not take
    if planner._sub is not None:
        planner._sub._prefetched.clear()
    # planner.inp, not inp: the search may bar pairings a pooled deployment cannot hold.
    return Planned(verdict=verdict, fleet=fleet, plan=best, plan_inputs=planner.inp, planner=planner,
                   licensed_job=later, held_servable=held_servable)


def licensed_routes(ev: Evaluation, *, force: bool = False) -> tuple[LicensedRoute, ...] | None:
    """The licensed stacks whose fee is unknown, each with its break-even fee (FleetPlan.licensed_routes): made
    with the plan up to SearchSettings.break_even_max_workloads workloads; above, on first request with force
    (`hangover evaluate --break-even`, the report, the Overview and Fleet sizing pages) and kept. None: not computed (not forced,
    or an evaluation planned without it)."""
    if ev.fleet.licensed_routes is not None:
        return ev.fleet.licensed_routes
    job = ev.answers.job("licensed_routes")
    if job is None:
        return None
    return ev.answers.get("licensed_routes", job) if force else ev.answers.known("licensed_routes")


def unknown_fee_routes(ev: Evaluation) -> list:
    """The routes of licensed stacks whose fee is not entered (the plan may not use them), in route order."""
    return [r for r in ev.routes if r.stack is not None and not route_permitted(r)]


def _licensed_routes(ev, best: PlanCost, every: PlanInputs, barred: np.ndarray,
                     planner: Planner) -> list[LicensedRoute]:
    """Break-even licence fee of every licensed stack whose fee is unknown."""
    out = []
    for route in unknown_fee_routes(ev):
        mine = np.array([ev.routes[r].route_id == route.route_id for r in every.col_route], dtype=bool)
        inp = replace(every, allowed=every.allowed & (~barred | mine)[None, :])
        # From the plan without it (so using it never looks dearer), sharing the sizings already made.
        # Large inventories: only moves from that plan (each shadow-price candidate re-sizes every pool).
        small = len(inp.workload_ids) <= settings_mod.PLAN.full_move_rows
        lic_planner = Planner(inp, planner._gpu_hours_month, cache=planner._cache)
        lic_planner.linear_parts_like(planner)
        with_it = lic_planner.optimise(start=best.assignment, ladder=small, focus=mine)
        newly_rows = (with_it.assignment >= 0) & (best.assignment < 0)
        if len(inp.workload_ids) <= settings_mod.PLAN.restart_rows:
            # Moves from the plan without it stop where no single move onto it pays; a search of its own with the
            # stack allowed can find a plan built around it (docs/design/fleet_plan.md "Break-even from a search of its
            # own": on the sample the re-plan from the plan said "would not lower the bill", the search found
            # $48,443 a month less). Compared like for like: on the workloads the plan without it serves; the ones
            # only it can serve are named apart. Up to SearchSettings.restart_rows: on 300 workloads it cost 24 s and found none.
            own = Planner(inp, planner._gpu_hours_month, cache=planner._cache)
            own._restarts = False
            found = own.optimise()
            if found.feasible:
                newly_rows |= (found.assignment >= 0) & (best.assignment < 0)
                like = np.where(best.assignment < 0, -1,
                                np.where(found.assignment < 0, best.assignment, found.assignment))
                start = lic_planner.price(like)
                if start.feasible:
                    like_plan = lic_planner._improve(start, None, True)
                    if like_plan.key < with_it.key:
                        with_it = like_plan
        positions = [k for k, o in enumerate(inp.owned) if o.route_id == route.route_id]
        gpus = _route_gpus(inp, with_it, positions)
        newly = tuple(str(x) for x in inp.workload_ids[newly_rows])
        saves = best.bill - with_it.bill
        fee = None
        # Serving more workloads is not a saving to weigh against a fee: the saving is on the same workloads,
        # and the ones it unlocks are named apart.
        if gpus > 0 and saves > 0 and ((with_it.assignment >= 0) == (best.assignment >= 0)).all():
            fee = saves / gpus
            if len(inp.workload_ids) <= settings_mod.PLAN.break_even_refine_rows:
                # The bill with a fee f is concave in f (a minimum of lines); Newton steps from the estimate.
                for _ in range(3):
                    owned = [replace(o, licence_usd_per_gpu_month=fee) if k in positions else o
                             for k, o in enumerate(inp.owned)]
                    # Whole deployments adjust to the fee; single-workload moves above a dozen workloads made
                    # these steps a whole search each (300 workloads: ~25,000 pricings, a third of the evaluation).
                    fee_planner = Planner(replace(inp, owned=tuple(owned)), planner._gpu_hours_month,
                                          cache=planner._cache)
                    fee_planner.linear_parts_like(lic_planner)
                    at_fee = fee_planner.optimise(start=with_it.assignment, ladder=False, singles=False)
                    g2 = _route_gpus(inp, at_fee, positions)
                    gap = best.bill - at_fee.bill
                    if g2 <= 0 or gap <= 0.01:
                        break
                    fee += gap / g2
        out.append(LicensedRoute(route.route_id, route.label, route.stack.licence_usd_per_gpu_month, fee,
                                 int(gpus), float(max(saves, 0.0)) if fee is not None else 0.0, newly))
    return out


def _route_gpus(inp: PlanInputs, plan: PlanCost, positions: list[int]) -> int:
    """GPUs a plan runs one stack on (every GPU-count column of it)."""
    total = 0
    for pos in positions:
        c = inp.owned[pos].index
        d = plan.sizes.get(pos)
        inter = d.gpus if d is not None and d.feasible else 0
        hours = float(np.nansum(inp.gpu_hours_day_r[(plan.assignment == c) & ~inp.interactive, inp.col_route[c]]))
        total += int(inter + np.ceil(hours / 24.0 - 1e-9))
    return total


def _apply(ev: Evaluation, planner: Planner, best: PlanCost, rpd, n_out,
           added: dict[int, int] | None = None, drivers: bool = True) -> tuple[np.ndarray, FleetPlan]:
    """(each workload's engine route, the fleet record) of the chosen plan; the plan's operating points and the
    attributed costs are written into the evaluation's route arrays (while it is being built). drivers=False:
    no node drivers (a re-plan only compared with others, whose drivers nobody reads)."""
    inp, sc = planner.inp, ev.scenario
    W = len(inp.workload_ids)
    rows_all = np.arange(W)
    gpn = inp.gpus_per_node
    v = best.assignment.astype(int)  # plan columns
    has = v >= 0
    safe = np.where(has, v, 0)
    vr = np.where(has, inp.col_route[safe], -1)  # engine routes
    total_nodes = max(sc.fleet_nodes, best.nodes_needed)
    # Attribution rate per GPU-hour: under the marginal basis owned nodes count at their marginal rate and
    # new nodes at full; under the full basis every node at full.
    new_nodes = max(best.nodes_needed - sc.fleet_nodes, 0)
    # Nodes priced at their TCO pay their power at the plan's utilization, not the TCO's flat average (energy.py).
    energy = plan_energy(ev, best, total_nodes, gpn)
    adj = 0.0 if energy is None else energy.usd_per_node_hour_change
    if total_nodes:
        node_rate = (min(sc.fleet_nodes, total_nodes) * inp.attribution_usd_per_node_hour
                     + new_nodes * inp.full_usd_per_node_hour) / total_nodes + adj
    else:
        node_rate = inp.full_usd_per_node_hour + adj
    gpu_rate = node_rate / gpn

    attributed = np.zeros(W)
    # API spend, primary and escalated.
    attributed += np.where(has, np.nan_to_num(inp.api_monthly_r[rows_all, inp.col_route[safe]], posinf=0.0), 0.0)
    f = np.where(has, inp.fallback_share_r[rows_all, inp.col_route[safe]], 0.0)
    fb = inp.fallback_route
    fb_owned = planner._fb_owned
    esc = has & (f > 0) & (fb >= 0)
    attributed += np.where(esc & ~fb_owned, f * inp.fallback_api_monthly, 0.0)

    deployments, batch, nodes_by_route, gpus_by_route = _pools(ev, planner, best, esc, f, gpu_rate, attributed,
                                                               added or {})
    _charge_offline(attributed, batch, sum(d.interactive_gpus for d in deployments), total_nodes * gpn, gpu_rate)
    # Money in cents: every share rounded so that the shares a report prints add up to the rounded sum
    # (rounded one by one, 7 shares plus the rest missed the bill by a cent on 1 in 4 generated inventories).
    attributed = to_cents(attributed)
    _write_route_costs(ev, planner, attributed, vr, rpd, n_out)
    return vr, _fleet_record(ev, planner, best, vr, attributed, deployments, nodes_by_route, gpus_by_route, drivers,
                             total_nodes, gpu_rate, rpd, n_out, energy)


def plan_energy(ev: Evaluation, best: PlanCost, total_nodes: int, gpn: int):
    """The plan's energy line (core.decision.energy) when its nodes are priced at their TCO; else None."""
    from core.decision import energy as energy_mod

    hw = energy_mod.owned_hardware_of(ev.catalog, ev.scenario, ev.gpu_name)
    if hw is None:
        return None
    return energy_mod.line(hw, ev.gpu_name, total_nodes,
                           energy_mod.plan_utilization(best.busy, best.fill, total_nodes, gpn))


def _pools(ev: Evaluation, planner: Planner, best: PlanCost, esc: np.ndarray, f: np.ndarray, gpu_rate: float,
           attributed: np.ndarray, added: dict[int, int]) -> tuple[list[Deployment], list[tuple[np.ndarray, np.ndarray]],
                                            dict[str, int], dict[str, float]]:
    """The plan's owned pools as Deployment records (with the operating points written into the route arrays and
    each pool's cost added to its members' attributed share), the offline rows and GPU-hours of each, and the
    nodes and GPUs per route."""
    inp, a, gpn = planner.inp, ev.a, planner.inp.gpus_per_node
    v = best.assignment.astype(int)
    has = v >= 0
    fb, fb_owned = inp.fallback_route, planner._fb_owned
    deployments = []
    batch: list[tuple[np.ndarray, np.ndarray]] = []  # offline rows and their GPU-hours a day
    nodes_by_route: dict[str, int] = {}
    gpus_by_route: dict[str, float] = {}
    for pos, route in enumerate(inp.owned):
        r = route.index  # plan column
        er = route.route_index  # engine route
        prim = has & (v == r)
        extra = esc & fb_owned & (fb == r)
        if not prim.any() and not extra.any():
            continue
        d = best.sizes.get(pos)
        inter_gpus = 0
        if d is not None and d.feasible:
            inter_gpus = d.gpus
            n_prim = int((prim & inp.interactive).sum())
            p_rows = d.rows[:n_prim]
            for key, val in (("p95_ms", d.p95_ms[:n_prim]), ("service_s", d.service_s[:n_prim])):
                if key in a:  # the engine's service is dropped before the search
                    a[key][p_rows, er] = val
            a["concurrency"][p_rows, er] = d.concurrency
            a["gpus_per_replica"][p_rows, er] = d.gpus_per_replica
            a["replicas"][p_rows, er] = d.replicas
            share = d.load_shares(inp.lam_peak)
            cost = d.gpus * gpu_rate * HOURS_PER_MONTH + route.licence_usd_per_gpu_month * d.gpus
            np.add.at(attributed, d.rows, share * cost)
        off = np.flatnonzero((prim | extra) & ~inp.interactive)
        off_share = np.where(prim[off], 1.0, f[off])
        hours = inp.gpu_hours_day_r[off, inp.col_route[r]] * off_share
        off_hours = float(hours.sum())
        lic_gpus_off = np.ceil(off_hours / 24.0 - 1e-9)
        if off.size:
            lic = route.licence_usd_per_gpu_month * lic_gpus_off
            if off_hours > 0:
                np.add.at(attributed, off, hours / off_hours * lic)
            batch.append((off, hours))
        off_min = int(np.nanmax(inp.offline_min_gpus_r[off, inp.col_route[r]], initial=0.0)) if off.size else 0
        members = inp.workload_ids[np.flatnonzero(prim)]
        dep = Deployment(
            route_id=route.route_id, label=route.label, architecture=route.architecture,
            workloads=tuple(str(x) for x in members),
            escalated_from=tuple(str(x) for x in inp.workload_ids[np.flatnonzero(extra)]),
            gpus_per_replica=int(route.tp_options[0]),
            # Several tiers of one stack at one GPU count run as separate pools (plan.CAP_BANDS).
            tier=route.tier or None,
            concurrency_cap=int(d.concurrency) if d is not None and d.feasible else None,
            replicas=int(d.replicas) if d is not None and d.feasible else 0,
            interactive_gpus=int(inter_gpus),
            offline_gpu_hours_per_day=off_hours,
            offline_min_gpus=off_min,
            gpus=int(max(inter_gpus, off_min)),
            nodes=int(np.ceil(max(inter_gpus, off_min) / gpn - 1e-9)),
            licence_usd_per_month=float(route.licence_usd_per_gpu_month * (inter_gpus + lic_gpus_off)),
            why=deployment_why(inp, route, d) if d is not None else None,
            replicas_added_by_simulation=int(added.get(pos, 0)),
        )
        deployments.append(dep)
        gpus_by_route[route.route_id] = gpus_by_route.get(route.route_id, 0.0) + inter_gpus + off_hours / 24.0
        if dep.nodes:
            nodes_by_route[route.route_id] = nodes_by_route.get(route.route_id, 0) + dep.nodes
        a["nodes"][np.flatnonzero(prim), er] = dep.nodes
    return deployments, batch, nodes_by_route, gpus_by_route


def _charge_offline(attributed: np.ndarray, batch: list[tuple[np.ndarray, np.ndarray]], reserved: int,
                    gpus_in_plan: int, gpu_rate: float) -> None:
    """Offline work pays for its GPU-hours, but only those beyond the interactive reservations: hours it takes
    from GPUs already reserved (and charged) for interactive work cost nothing more, and charging them twice
    would attribute more than the bill. Added to `attributed` in place."""
    total_hours = sum(float(h.sum()) for _, h in batch)
    if total_hours > 0:
        slack = max(gpus_in_plan - reserved, 0) * 24.0
        charged = min(1.0, slack / total_hours)
        for off, hours in batch:
            np.add.at(attributed, off, hours * charged * DAYS_PER_MONTH * gpu_rate)


def _write_route_costs(ev: Evaluation, planner: Planner, attributed: np.ndarray, vr: np.ndarray, rpd,
                       n_out) -> None:
    """Into the route arrays (while the evaluation is built): each workload's verdict cell carries its attributed
    share; the other owned cells the standalone cost the search compared."""
    inp, a = planner.inp, ev.a
    has = vr >= 0
    rows_all = np.arange(len(vr))
    # Owned offline rows report their own operating point; the verdict cell carries the attributed share.
    verdict_monthly = attributed
    with np.errstate(divide="ignore", invalid="ignore"):
        per_req = np.where(rpd > 0, verdict_monthly / (rpd * DAYS_PER_MONTH), 0.0)
    # The owned columns' standalone costs: the pooled, linear view at the full rate (what the search compares).
    # A stack's standalone cost is its cheapest GPU-count column (where the workload may use it).
    gh = np.where(inp.allowed, planner._gpu_hours_month, np.nan)
    standalone: dict[int, np.ndarray] = {}
    for o in inp.owned:
        col = gh[:, o.index] * (inp.full_usd_per_gpu_hour + o.licence_usd_per_gpu_month / HOURS_PER_MONTH)
        col = col + inp.fallback_share_r[:, o.route_index] * inp.fallback_api_monthly
        prev = standalone.get(o.route_index)
        standalone[o.route_index] = col if prev is None else np.fmin(prev, col)
    for er, col in standalone.items():
        col = np.where(np.isfinite(col), col, a["monthly_usd"][:, er])
        a["monthly_usd"][:, er] = col
        with np.errstate(divide="ignore", invalid="ignore"):
            a["usd_per_request"][:, er] = np.where(rpd > 0, col / (rpd * DAYS_PER_MONTH), 0.0)
    a["monthly_usd"][rows_all[has], vr[has]] = verdict_monthly[has]
    a["usd_per_request"][rows_all[has], vr[has]] = per_req[has]
    with np.errstate(divide="ignore", invalid="ignore"):
        a["usd_per_mtok_out"] = a["usd_per_request"] / n_out[:, None] * 1e6


def _fleet_record(ev: Evaluation, planner: Planner, best: PlanCost, vr: np.ndarray, attributed: np.ndarray,
                  deployments: list[Deployment], nodes_by_route: dict[str, int], gpus_by_route: dict[str, float],
                  with_drivers: bool, total_nodes: int, gpu_rate: float, rpd, n_out, energy=None) -> FleetPlan:
    """The fleet record of the chosen plan: nodes, utilization, the cash bill in cents and what it pays for."""
    inp, sc, rate, gpn = planner.inp, ev.scenario, ev.rate, planner.inp.gpus_per_node
    v = best.assignment.astype(int)
    has = v >= 0
    adj = 0.0 if energy is None else energy.usd_per_node_hour_change  # power at the plan's utilization
    full_node = inp.full_usd_per_node_hour + adj
    # The bill and its parts in cents, so that the parts a report prints add up to the bill it prints.
    bill = cash_bill(sc.fleet_nodes, best.nodes_needed, full_node, best.api_monthly, best.licence_monthly).in_cents()
    owned_monthly, extra_monthly, total = bill.owned_usd, bill.new_nodes_usd, bill.total
    api_monthly, licence_monthly = bill.api_usd, bill.licence_usd
    unallocated = round(total - float(attributed.sum()), 2)  # both in cents: the round only drops float noise

    cap = total_nodes * gpn
    busy, fill = best.busy, best.fill
    util_without = np.minimum(busy / cap, 1.0) if cap else np.zeros(24)
    util_with = np.minimum((busy + fill) / cap, 1.0) if cap else np.zeros(24)
    utilization = float(np.mean(util_with)) if cap else 0.0
    idle_month = cap * HOURS_PER_MONTH * full_node / gpn * (1.0 - utilization)
    on_owned = has & np.isin(v, [o.index for o in inp.owned])
    owned_tokens_month = float(np.nansum((rpd * n_out)[on_owned])) * DAYS_PER_MONTH
    owned_cash = owned_monthly + extra_monthly + licence_monthly
    eff_mtok = owned_cash / owned_tokens_month * 1e6 if owned_tokens_month > 0 and owned_cash > 0 else None

    by_route: dict[str, float] = {}
    for r_idx in np.unique(vr[has]):
        key = ev.routes[int(r_idx)].route_id
        by_route[key] = float(attributed[has & (vr == r_idx)].sum())
    buys = with_drivers and best.nodes_needed > sc.fleet_nodes
    drivers = node_drivers(ev, planner, best) if buys else []
    pools = pool_drivers(planner, best) if buys else []
    verdict_mix = {k: int(n) for k, n in pd.Series(
        [ev.routes[i].architecture + (" (API)" if ev.routes[i].hosting == "api" else " (owned)") if i >= 0
         else "no feasible route" for i in vr]).value_counts().items()}
    return FleetPlan(
        gpu=ev.gpu_name, traffic_shape=traffic_shape(sc)[1], gpus_per_node=gpn, owned_nodes=sc.fleet_nodes,
        nodes_needed=int(best.nodes_needed), workloads_served=int(has.sum()), workloads_total=int(len(v)),
        nodes_in_plan=int(total_nodes),
        nodes_needed_interactive=int(best.nodes_interactive),
        nodes_needed_offline_extra=int(best.nodes_offline_extra),
        nodes_by_route=nodes_by_route, gpus_by_route=gpus_by_route, utilization=utilization,
        hourly_utilization=tuple(float(x) for x in util_with),
        hourly_utilization_without_batch=tuple(float(x) for x in util_without),
        offline_gpu_hours_per_day=float(best.offline_gpu_hours_per_day),
        usd_per_node_hour=rate.usd_per_node_hour + adj, full_usd_per_node_hour=full_node,
        usd_per_gpu_hour=(rate.usd_per_node_hour + adj) / gpn, attribution_usd_per_gpu_hour=gpu_rate,
        owned_monthly_usd=owned_monthly, idle_usd_per_month=idle_month, extra_nodes_monthly_usd=extra_monthly,
        api_monthly_usd=api_monthly, licence_monthly_usd=licence_monthly, total_monthly_usd=total,
        attributed_usd_per_month=float(attributed.sum()), unallocated_usd_per_month=unallocated,
        owned_usd_per_mtok_out=eff_mtok, monthly_usd_by_route=by_route, deployments=tuple(deployments),
        node_drivers=tuple(drivers), licensed_routes=(), verdict_mix=verdict_mix,
        energy_usd_per_month=0.0 if energy is None else energy.usd_per_month, energy=energy,
        pool_drivers=tuple(pools))


def node_drivers(ev: Evaluation, planner: Planner, best: PlanCost) -> list[NodeDriver]:
    """For the nodes beyond those owned: the workloads and targets that force them, and what relaxing each saves."""
    inp = planner.inp
    v = best.assignment
    owned_cols = np.zeros(inp.n_routes + 1, dtype=bool)
    owned_cols[[o.index for o in inp.owned]] = True
    on_owned = owned_cols[v]  # -1 (unserved) hits the spare False at the end
    # Weight: GPUs held at the peak (interactive) or GPU-hours a day / 24 (offline), on the standalone view.
    gh = planner._gpu_hours_month
    weight = np.where(on_owned, np.nan_to_num(gh[np.arange(len(v)), np.where(v >= 0, v, 0)]), 0.0)
    # Interactive members: their share (by offered load) of the GPU-hours their pool reserves, from the plan's
    # own sizing (the standalone view has no figure for a member whose target its tier's batch cannot hold).
    for d in best.sizes.values():
        if d.feasible and d.replicas > 0 and d.n_primary:
            share = d.load_shares(inp.lam_peak)
            if share.any():  # the pool carries load (its escalated-in requests' too)
                weight[d.rows[:d.n_primary]] = share[:d.n_primary] * d.gpus * HOURS_PER_MONTH
    order = [int(i) for i in np.argsort(-np.nan_to_num(weight)) if on_owned[i] and weight[i] > 0][:MAX_DRIVERS]
    w = ev.workloads
    raised = raised_columns(planner, best)  # a driver in a raised pool: its what-ifs are not priced
    out: list[NodeDriver] = []
    for i in order:
        relax: list[Relaxation] = []
        slo_i: float | None = None
        window: float | None = None
        if inp.interactive[i]:
            slo = float(inp.slo_ms[i])
            # With a looser target the workload may also suit another tier of its stack and GPU count.
            group = planner._col_group[int(v[i])]
            tiers = [c for c, k in planner._col_group.items() if k == group and (c == v[i] or inp.allowed[i, c])]
            cands = []
            for c in tiers:
                moved = v.copy()
                moved[i] = c
                cands.append(planner.price(moved, slo_override=(i, slo * 2.0)))
            feasible = [c for c in cands if c.feasible]
            cand = min(feasible, key=lambda c: c.key) if feasible else cands[0]
            if cand.feasible:
                relax.append(Relaxation(f"target {integer(slo)} ms -> {integer(slo * 2)} ms", "target_x2",
                                        float(best.bill - cand.bill), int(cand.nodes_needed)))
            slo_i = slo
        else:
            window = float(w["batch_window_hours"].iloc[i])
        api_i = inp.api_monthly_r[i, inp.col_route]
        api = np.flatnonzero(inp.allowed[i] & np.isfinite(api_i))
        if api.size:
            k = int(api[np.argmin(api_i[api])])
            moved = v.copy()
            moved[i] = k
            cand = planner.price(moved)
            if cand.feasible:
                er = int(inp.col_route[k])
                relax.append(Relaxation(f"move to {ev.routes[er].label}", "to_api", float(best.bill - cand.bill),
                                        int(cand.nodes_needed), route_id=ev.routes[er].route_id))
        elif w["data_policy"].iloc[i] == "owned_only":
            relax.append(Relaxation("move to an API: not allowed (owned_only data)", "to_api", None, None))
        er = int(inp.col_route[v[i]])
        forced = nodes_forced(planner, best, i)
        if int(v[i]) in raised:  # re-priced without the pool's raise: savings that are not there
            relax = [replace(r, saves_usd_per_month=None, nodes_needed=None) for r in relax]
            forced = None
        out.append(NodeDriver(
            workload_id=str(inp.workload_ids[i]), route_id=ev.routes[er].route_id, route=ev.routes[er].label,
            gpus_per_replica=int(inp.owned[next(k for k, o in enumerate(inp.owned) if o.index == v[i])].tp_options[0]),
            latency_slo_ms=slo_i, batch_window_hours=window, gpu_hours_per_month=float(weight[i]),
            relaxations=tuple(relax), nodes_forced=forced))
    out.sort(key=lambda d: -max([x.saves_usd_per_month or 0.0 for x in d.relaxations] or [0.0]))
    return out
