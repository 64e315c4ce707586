"""The fleet plan: workloads pooled into deployments, replicas packed onto whole nodes, one cash bill.

docs/design/fleet_plan.md. The engine scores every workload on every route
(feasibility, standalone operating points); this module decides the
assignment that minimises the monthly cash bill and prices it exactly:

- one deployment per owned route and concurrency tier; every workload assigned
  to it shares its replicas (one pooled queue, one concurrency cap, the GPUs
  per replica that need the fewest GPUs while every workload keeps its own p95
  target; docs/design/fleet_plan.md "Deployments, tiers and the edge pool"). A
  pool is held to its tightest member's target, so a stack runs up to three
  pools by concurrency cap (latency, middle, throughput tiers) plus an edge
  pool for members whose target sits at the edge of what the hardware does
  alone, as operators run a latency pool beside a throughput pool;
- replicas are packed onto whole nodes; offline work fills the idle GPU-hours
  first and asks for nodes only for what does not fit;
- cash bill = max(owned, needed) nodes x full $/node-hour x 730 + API spend +
  licence fees; the cost basis changes attribution only, never the bill;
- attribution: interactive work pays its share of its deployment's reserved
  GPUs (by offered load at the peak), offline work its GPU-hours; the rest is
  unallocated, so attributed + unallocated = bill exactly.

The search: for a ladder of shadow prices per GPU-hour, every workload picks
its cheapest route at that price (a linear, pooled view of capacity); each
candidate is priced exactly; the best one is improved by moving single
workloads (small inventories) or whole deployments (large ones), and by
emptying pools to buy a node fewer (the bill's steps), while the exact bill
falls. Small inventories also improve other candidates and restart without
the stacks holding the most GPUs (one local optimum can hold every start), and
keep the cheapest plan. Deployment sizings are cached on (route, members), so
a move re-prices only the two deployments it touches, and made in batches
(the search sizes its candidate moves together before pricing them one by one).
Workloads that differ only in traffic are searched as one row
(core.decision.classes) and the plan found is priced again on the workloads,
so cutting a workload into parts changes nothing.

The plan is three modules, one per job: core.decision.sizing (the plan's inputs and one pooled deployment's
size on the latency model, cached), core.decision.pricing (the exact bill of an assignment) and
core.decision.search (candidates, moves, restarts). This module is their public entry: what the engine, the
fleet record and the analyses import.
"""

from __future__ import annotations

from core.decision.latency import service_p95_alone_ms
from core.decision.pricing import Deployment, PlanCost, Pricer, fill_idle, pack_nodes
from core.decision.search import Planner
from core.decision.settings import DEFAULT, SearchSettings
from core.decision.sizing import (
    CAP_BANDS,
    EDGE_TIER,
    TIER_NAMES,
    DeploymentSize,
    OwnedRoute,
    PlanInputs,
    Sizer,
    _binding_candidates,
)

# The search's thresholds live in SearchSettings; fleet.py still reads these two by name (the licensed
# stacks' re-plan), with the default record's values.
FULL_MOVE_ROWS = DEFAULT.full_move_rows
RESTART_ROWS = DEFAULT.restart_rows

__all__ = [
    "CAP_BANDS", "DEFAULT", "EDGE_TIER", "FULL_MOVE_ROWS", "RESTART_ROWS", "TIER_NAMES", "Deployment",
    "DeploymentSize", "OwnedRoute", "PlanCost", "PlanInputs", "Planner", "Pricer", "SearchSettings", "Sizer",
    "_binding_candidates", "fill_idle", "pack_nodes", "service_p95_alone_ms",
]
