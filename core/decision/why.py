"""Why each node: the figures that explain an interactive pool's replicas, and the nodes a workload forces.

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
from core.decision.records import DeploymentWhy

if TYPE_CHECKING:
    from core.decision.pricing import PlanCost, Pricer
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
