"""Why each node: the figures that explain an interactive pool's replicas, and the nodes a workload or a pool forces.

A pool is held to its tightest member's target. Where that target sits near what one replica does for a
request alone, each replica may hold only a few requests at once, however high its concurrency cap, and the
pool needs replicas for the requests in flight at a few each: the figures here let the words say so
(core.decision.explain.deployment_why_words).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from core.decision import latency
from core.decision.latency import service_p95_alone_ms
from core.decision.records import DeploymentWhy, PoolDriver

if TYPE_CHECKING:
    from core.decision.pricing import PlanCost, Pricer
    from core.decision.search import Planner
    from core.decision.sizing import DeploymentSize, OwnedRoute, PlanInputs


def deployment_why(inp: PlanInputs, route: OwnedRoute, d: DeploymentSize) -> DeploymentWhy | None:
    """The why-figures of one sized interactive pool (None: no member with traffic, or not sized)."""
    n = int(d.n_primary)
    if not d.feasible or d.replicas < 1 or n == 0 or route.service_s is None or inp.output_tokens is None:
        return None
    lam = np.asarray(inp.lam_peak, dtype=float)[d.rows] * d.shares
    peak = float(lam.sum())
    if peak <= 0:
        return None
    in_flight = float((lam * np.nan_to_num(d.service_s, nan=0.0)).sum())
    rows = d.rows[:n]
    blk = latency.block_tokens_of(route.stack) if route.stack is not None else 1
    q = None if inp.output_q_ratio is None or blk not in inp.output_q_ratio else inp.output_q_ratio[blk][rows]
    p95_out = inp.output_p95_tokens[rows] if inp.output_p95_tokens is not None else None
    prefill = route.prefill_ms[rows] if route.prefill_ms is not None else None
    p95 = service_p95_alone_ms(np.asarray(route.service_s[rows], dtype=float), prefill, inp.output_tokens[rows],
                               p95_out, blk, q, 1.0 - inp.sla_tail)[:, 0, :]  # (n, grid)
    grid = np.asarray(inp.concurrency_grid, dtype=float)
    slo = np.asarray(inp.slo_ms, dtype=float)[rows]
    within = np.isfinite(p95) & (p95 <= slo[:, None]) & (grid[None, :] <= d.concurrency)
    # Largest grid concurrency within target per member (1 where even batch 1 is only met with queueing aside).
    last = np.where(within.any(axis=1), within.shape[1] - 1 - np.argmax(within[:, ::-1], axis=1), 0)
    per_replica = grid[last].astype(int)
    k = int(np.lexsort((slo, per_replica))[0])  # fewest requests per replica, then the tighter target
    b = max(int(per_replica[k]), 1)
    return DeploymentWhy(
        binding_workload=str(inp.workload_ids[rows[k]]), latency_slo_ms=float(slo[k]),
        p95_alone_ms=float(p95[k, 0]), requests_per_replica_within_target=b,
        slots=int(d.replicas * d.concurrency), peak_requests_per_s=peak, requests_in_flight_at_peak=in_flight,
        replicas_for_load=int(np.ceil(in_flight / b - 1e-9)))


def nodes_forced(pricer: Pricer, best: PlanCost, i: int) -> int | None:
    """How many nodes fewer the plan needs without workload i (its assignment unserved, every other kept; None
    when that plan cannot be priced). Exact re-pricing: the pools it leaves are sized again without it."""
    moved = best.assignment.copy()
    moved[i] = -1
    cand = pricer.price(moved)
    if not cand.feasible:
        return None
    return max(int(best.nodes_needed) - int(cand.nodes_needed), 0)


MAX_POOL_DRIVERS = 6  # pools priced as a cause of the purchase (two exact re-pricings each), the most GPUs first


def pool_drivers(planner: Planner, best: PlanCost) -> list[PoolDriver]:
    """The owned pools holding the most GPUs in a plan that needs nodes beyond those owned, each priced exactly as a
    cause: the nodes fewer with its members left unserved, and the plan with its members on their next-best routes
    off its stack (the cheapest at the full $/GPU-hour with every tier and GPU count of the stack excluded).

    A workload's own `nodes_forced` is often 0 where the purchase is real: one member fewer rarely frees a replica of
    a pool of many. The pool is the unit a node is bought for: this says how many nodes it holds and what the
    alternative to buying for it costs (a negative difference would be a cheaper plan the search did not reach, and
    is shown as such)."""
    inp = planner.inp
    v = best.assignment
    held: list[tuple[float, int, np.ndarray]] = []
    for pos, o in enumerate(inp.owned):
        members = np.flatnonzero(v == o.index)
        if not members.size:
            continue
        d = best.sizes.get(pos)
        inter = float(d.gpus) if d is not None and d.feasible else 0.0
        batch = members[~inp.interactive[members]]
        # Batch work holds its GPU-hours a day / 24 on average, but a replica's whole GPUs while it runs (as
        # fleet._pools' Deployment.gpus).
        off = max(float(np.nansum(inp.gpu_hours_day_r[batch, o.route_index])) / 24.0,
                  float(np.nanmax(inp.offline_min_gpus_r[batch, o.route_index], initial=0.0))) if batch.size else 0.0
        if max(inter, off) > 0:
            held.append((max(inter, off), pos, members))
    held.sort(key=lambda h: (-h[0], h[1]))
    from core.decision.closeloop import raised_columns

    raised = raised_columns(planner, best)  # members moved into a raised pool: that alternative is not priced
    out = []
    for gpus, pos, members in held[:MAX_POOL_DRIVERS]:
        without = v.copy()
        without[members] = -1
        freed = planner.price(without, base=best)
        # Elsewhere: off the stack (every tier and GPU count of it), or another tier of it would be the same pool.
        stack = [o.index for o in inp.owned if o.route_id == inp.owned[pos].route_id]
        alt = planner._choose(inp.full_usd_per_gpu_hour, rows=members, exclude=stack)
        moved = v.copy()
        moved[members] = alt
        # With a member left without a route the bill leaves its work out: not a price of the alternative.
        there = planner.price(moved, base=best) if (alt >= 0).all() and not raised & set(alt.tolist()) else None
        out.append(PoolDriver(
            route_id=inp.owned[pos].route_id, route=_tiered(inp.owned[pos]),
            gpus_per_replica=int(inp.owned[pos].tp_options[0]), gpus=gpus,
            workloads=int(members.size),
            nodes_forced=max(int(best.nodes_needed) - int(freed.nodes_needed), 0) if freed.feasible else None,
            elsewhere_usd_per_month=float(there.bill - best.bill) if there is not None and there.feasible else None,
            elsewhere_nodes_needed=int(there.nodes_needed) if there is not None and there.feasible else None,
            elsewhere_unserved=int((alt < 0).sum())))
    return out


def _tiered(route: OwnedRoute) -> str:
    """A plan column's label with its tier where its stack runs several ("Qwen3-30B-A3B (MoE; FP8) (middle tier)")."""
    return route.label + (f" ({route.tier})" if route.tier else "")
