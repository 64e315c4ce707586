"""The fleet plan as frozen records, built once; their JSON; the lock-guarded memo of answers read from a finished plan.

Frozen dataclasses with slots rather than pydantic models: every field is
already a checked number or name made by the planner (nothing here parses
outside input), the records are built on the plan's hot path (one per
deployment and driver), and slots keep a shared evaluation's records small.
The mappings inside a record (nodes by route, the verdict mix) are plain dicts
that nothing writes after the record is built; the record cannot be rebound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True, slots=True)
class DeploymentWhy:
    """Why an interactive pool has the replicas it has (core.decision.why): what its binding member's target lets
    each replica hold, what one request takes alone, and the traffic at the peak hour.

    `binding_workload` is the member whose target allows the fewest requests per replica (ties: the tighter
    target); `requests_per_replica_within_target` the largest concurrency (of the plan's grid, up to the cap)
    at which its service p95 alone still meets its target, queueing aside; `replicas_for_load` the replicas
    the requests in flight need at that many each (ceil(in flight / that)), before any margin for queueing.
    """

    binding_workload: str
    latency_slo_ms: float
    p95_alone_ms: float
    requests_per_replica_within_target: int
    slots: int  # replicas x concurrency cap
    peak_requests_per_s: float  # every request the pool serves at the peak hour (escalated-in ones too)
    requests_in_flight_at_peak: float  # peak rate x mean service (Little's law)
    replicas_for_load: int


@dataclass(frozen=True, slots=True)
class Deployment:
    """One owned pool of the plan: a stack at a GPU count (and concurrency tier), the workloads it serves, its size."""

    route_id: str
    label: str
    architecture: str
    workloads: tuple[str, ...]
    escalated_from: tuple[str, ...]
    gpus_per_replica: int
    tier: str | None  # several tiers of one stack at one GPU count run as separate pools (plan.CAP_BANDS)
    concurrency_cap: int | None
    replicas: int
    interactive_gpus: int
    offline_gpu_hours_per_day: float
    offline_min_gpus: int
    gpus: int
    nodes: int
    licence_usd_per_month: float
    why: DeploymentWhy | None = None  # interactive pools with traffic (core.decision.why)
    replicas_added_by_simulation: int = 0  # replicas the plan's simulation check added (core.decision.closeloop)


@dataclass(frozen=True, slots=True)
class Relaxation:
    """One change that would shrink the purchase, and what it saves (None: not allowed)."""

    change: str
    kind: str  # "target_x2" | "to_api" | "smallest_target"
    saves_usd_per_month: float | None
    nodes_needed: int | None
    route_id: str | None = None  # the API moved to (kind "to_api", where one is allowed)
    latency_slo_ms: float | None = None  # kind "smallest_target": the new target, as planned (core.decision.smallest)


@dataclass(frozen=True, slots=True)
class NodeDriver:
    """A workload holding GPUs on the nodes beyond those owned, its target, and the relaxations priced exactly."""

    workload_id: str
    route_id: str
    route: str
    gpus_per_replica: int
    latency_slo_ms: float | None  # interactive work: its p95 target
    batch_window_hours: float | None  # batch work: its window
    gpu_hours_per_month: float
    relaxations: tuple[Relaxation, ...]
    nodes_forced: int | None = None  # nodes the plan needs fewer without this workload (None: not priced)

    def best_relaxation(self) -> Relaxation | None:
        """The relaxation that saves most (None when none saves a cent: one that costs more is no saving)."""
        return max((r for r in self.relaxations if (r.saves_usd_per_month or 0.0) >= 0.005),
                   key=lambda r: r.saves_usd_per_month or 0.0, default=None)


@dataclass(frozen=True, slots=True)
class PoolDriver:
    """An owned pool holding GPUs where the plan needs nodes beyond those owned, priced exactly as a cause of them
    (core.decision.why.pool_drivers): where no single workload forces a node, the pools together do."""

    route_id: str
    route: str  # its label, with its tier where the stack runs several
    gpus_per_replica: int
    gpus: float  # GPUs it holds: its interactive replicas', or its batch work's (GPU-hours a day / 24, or a
    # replica's GPUs at once where more)
    workloads: int  # its members
    nodes_forced: int | None  # nodes the plan needs fewer with its members left unserved (None: not priced)
    # The plan with its members on their next-best routes off its stack (the cheapest at the full $/GPU-hour,
    # every tier and GPU count of the stack excluded), priced exactly: its bill less the plan's (positive: dearer)
    # and the nodes it needs. None where that plan cannot be priced, where a member would join a pool the
    # simulation check raised (priced without its raise), or where elsewhere_unserved > 0: members with no route
    # off the stack would leave their work out of the bill, so it would not price the alternative.
    elsewhere_usd_per_month: float | None
    elsewhere_nodes_needed: int | None
    elsewhere_unserved: int


@dataclass(frozen=True, slots=True)
class OwnedChange:
    """One relaxation of the answer "to stay on the nodes you own" (core.decision.smallest)."""

    kind: str  # "target" | "policy" | "licence"
    change: str  # in words
    workload_id: str | None  # the workload relaxed (target, policy)
    route_id: str | None  # the licensed stack (licence); the route the workload moves to (policy)
    latency_slo_ms_from: float | None  # target: as planned now
    latency_slo_ms: float | None  # target: as relaxed
    licence_gpus: int | None  # licence: GPUs the plan runs the stack on (its fee is on top of the bill change)
    # licence: the fee per GPU-month up to which the answer's bill stays at or under the plan's (None: never)
    break_even_usd_per_gpu_month: float | None


@dataclass(frozen=True, slots=True)
class StayOnOwned:
    """The cheapest set of relaxations found that needs no node beyond those owned, each step verified by
    re-planning; `exists` False: none of the relaxations tried, alone or together, avoids a new node."""

    exists: bool
    owned_nodes: int
    nodes_needed: int  # with the changes (where none exists: the fewest reached)
    changes: tuple[OwnedChange, ...]
    total_monthly_usd: float  # the bill with the changes (licence fees not entered excluded)
    bill_change_usd_per_month: float  # that bill less the plan's bill (negative: cheaper)
    complete: bool  # False: the search stopped at its re-plan budget (SearchSettings.smallest_change_replans)
    replans: int
    serves_unserved: tuple[str, ...] = ()  # workloads the plan leaves without a route that the changes serve
    # Replicas the plan's simulation check added. Where the plan fits on the owned nodes without them, the new
    # nodes hold those replicas and no relaxation is searched (exists False, no changes): the re-plans are judged
    # on the latency model, which already fits.
    simulation_added_replicas: int = 0


@dataclass(frozen=True, slots=True)
class SmallestChange:
    """The smallest change answer: each node driver's smallest_target relaxation (by workload) and the joint
    answer to stay on the nodes owned (None when the plan needs no new node)."""

    targets: Mapping[str, Relaxation]
    stay_on_owned: StayOnOwned | None
    replans: int


@dataclass(frozen=True, slots=True)
class LicensedRoute:
    """A self-hostable stack under a licence whose fee the user has not entered yet."""

    route_id: str
    label: str
    licence_usd_per_gpu_month: float | None
    break_even_usd_per_gpu_month: float | None  # highest fee at which a plan using it still beats the best without
    gpus_in_plan: int  # GPUs the plan with it (at a zero fee) runs it on
    saves_usd_per_month_at_zero_fee: float
    serves_unserved: tuple[str, ...] = ()  # workloads no permitted route can serve and it can


@dataclass(frozen=True, slots=True)
class MeasuredUtilization:
    """The measured utilization and idle $ (GPU telemetry, dated) shown beside the plan's."""

    utilization: float
    gpus: int
    label: str
    metric: str
    idle_usd_per_month: float


@dataclass(frozen=True, slots=True)
class Source:
    """Which inventory an evaluation read, and the telemetry measured beside it (None: none imported)."""

    inventory: str
    measured: MeasuredUtilization | None = None


@dataclass(frozen=True, slots=True)
class PerformanceRange:
    """The whole fleet at each end of the performance estimates (core/decision/sensitivity.py).

    `*_optimistic` is the end where every owned route runs at the fast end of its efficiency range (fewest nodes),
    `*_pessimistic` the slow end. `dropped_*`: workloads the central plan serves that have no route at that end,
    and (`_usd`) their share of the central bill, which that end's bill leaves out; `added_*`: workloads only that
    end could serve. The figures above are for the central plan's work (core/decision/sensitivity.py; the chosen
    mix's: core/decision/mix.py); `*_with_added` the end's nodes and bill serving those too, None where there are
    none.
    """

    nodes_needed_optimistic: int
    nodes_needed_pessimistic: int
    total_monthly_usd_optimistic: float
    total_monthly_usd_pessimistic: float
    unserved_optimistic: int
    unserved_central: int
    unserved_pessimistic: int
    dropped_optimistic: int
    dropped_optimistic_usd: float
    dropped_pessimistic: int
    dropped_pessimistic_usd: float
    added_optimistic: int
    added_pessimistic: int
    basis: str
    nodes_needed_optimistic_with_added: int | None = None
    nodes_needed_pessimistic_with_added: int | None = None
    total_monthly_usd_optimistic_with_added: float | None = None
    total_monthly_usd_pessimistic_with_added: float | None = None

    def nodes_at(self, end: str) -> int:
        """Nodes needed at one end ("optimistic" or "pessimistic")."""
        return self.nodes_needed_optimistic if _optimistic(end) else self.nodes_needed_pessimistic

    def bill_at(self, end: str) -> float:
        return self.total_monthly_usd_optimistic if _optimistic(end) else self.total_monthly_usd_pessimistic

    def dropped_at(self, end: str) -> tuple[int, float]:
        """(workloads, $ a month of the central bill) the central plan serves and this end does not."""
        return (self.dropped_optimistic, self.dropped_optimistic_usd) if _optimistic(end) else \
            (self.dropped_pessimistic, self.dropped_pessimistic_usd)

    def added_at(self, end: str) -> int:
        return self.added_optimistic if _optimistic(end) else self.added_pessimistic

    def with_added_at(self, end: str) -> tuple[int, float] | None:
        """(nodes, $ a month) of one end serving the workloads only it serves, where its figures leave them out."""
        n, usd = (self.nodes_needed_optimistic_with_added, self.total_monthly_usd_optimistic_with_added) \
            if _optimistic(end) else (self.nodes_needed_pessimistic_with_added,
                                      self.total_monthly_usd_pessimistic_with_added)
        return None if n is None or usd is None else (n, usd)


# The ends by name; "low" and "high" (the nodes' low and high estimate) are read as before the keys were renamed.
_ENDS = {"optimistic": True, "low": True, "pessimistic": False, "high": False}


def _optimistic(end: str) -> bool:
    if end not in _ENDS:
        raise ValueError(f"an end of the performance range is 'optimistic' or 'pessimistic', not {end!r}")
    return _ENDS[end]


@dataclass(frozen=True, slots=True)
class VerdictRanges:
    """Per-workload verdicts at each end of the performance estimates, and the whole fleet at each end.

    `frame` (sensitivity.verdict_ranges' table) is shared by every reader of the evaluation: read it, copy it
    to change it. `row(i)` is workload i as plain values, read from the columns (no dict per row kept).
    """

    frame: pd.DataFrame
    performance: PerformanceRange
    columns: Mapping[str, np.ndarray]

    @classmethod
    def of(cls, frame: pd.DataFrame, performance: PerformanceRange) -> VerdictRanges:
        return cls(frame=frame, performance=performance, columns={c: frame[c].to_numpy() for c in frame.columns})

    def row(self, i: int) -> dict:
        """Workload i's row, as `frame.to_dict("records")[i]` gives it."""
        return {c: _native(v[i]) for c, v in self.columns.items()}

    @property
    def sensitive(self) -> np.ndarray:
        return np.asarray(self.columns["sensitive"], dtype=bool)


@dataclass(frozen=True, slots=True)
class FleetOption:
    """One fleet option (which routes it may use), planned with the plan's search and priced as a cash bill."""

    option: str
    monthly_usd: float
    owned_monthly_usd: float
    api_monthly_usd: float
    licence_monthly_usd: float
    nodes_needed: int
    owned_nodes: int
    workloads_served: int
    workloads_unserved: int
    unserved: str  # up to ten ids, then "and N more"
    workloads_total: int = 0
    # The unserved work priced (core.decision.unserved): each workload's cheapest route after the smallest change
    # that gives it one, a standalone estimate; the bill with it is the like-for-like figure across options.
    unserved_priced_usd: float = 0.0
    unserved_unpriced: int = 0  # unserved workloads no change tried gives a route (not in the priced figure)
    unserved_routes: str = ""  # the priced routes in words, a few workloads
    monthly_usd_with_unserved: float = 0.0


@dataclass(frozen=True, slots=True)
class FleetPlan:
    """The fleet the plan needs and its cash bill, built once by core.decision.fleet (fields in JSON order)."""

    gpu: str
    traffic_shape: str
    gpus_per_node: int
    owned_nodes: int
    nodes_needed: int
    workloads_served: int  # workloads the plan gives a route (a bill is read beside it: unserved work costs $0)
    workloads_total: int
    nodes_in_plan: int
    nodes_needed_interactive: int
    nodes_needed_offline_extra: int
    nodes_by_route: Mapping[str, int]
    gpus_by_route: Mapping[str, float]
    utilization: float
    hourly_utilization: tuple[float, ...]
    hourly_utilization_without_batch: tuple[float, ...]
    offline_gpu_hours_per_day: float
    usd_per_node_hour: float
    full_usd_per_node_hour: float
    usd_per_gpu_hour: float
    attribution_usd_per_gpu_hour: float
    owned_monthly_usd: float
    idle_usd_per_month: float
    extra_nodes_monthly_usd: float
    api_monthly_usd: float
    licence_monthly_usd: float
    total_monthly_usd: float
    attributed_usd_per_month: float
    unallocated_usd_per_month: float
    owned_usd_per_mtok_out: float | None
    monthly_usd_by_route: Mapping[str, float]
    deployments: tuple[Deployment, ...]
    node_drivers: tuple[NodeDriver, ...]
    # The licensed stacks' break-even; None: not computed (above SearchSettings.break_even_max_workloads, until
    # asked: fleet.licensed_routes).
    licensed_routes: tuple[LicensedRoute, ...] | None
    verdict_mix: Mapping[str, int]
    source: Source | None = None  # set by core.service: which inventory, measured telemetry
    # Of the node lines: the power of nodes priced at their TCO at the plan's utilization (core.decision.energy);
    # 0 for cloud prices (power included). `energy` is the line in detail (None: cloud prices).
    energy_usd_per_month: float = 0.0
    energy: Any = None
    # The owned pools as causes of the nodes beyond those owned (empty: none bought, or not priced).
    pool_drivers: tuple[PoolDriver, ...] = ()

    @property
    def inventory(self) -> str | None:
        """The inventory's label ("bundled sample", "version 3", "file x.csv"); None when not named."""
        return None if self.source is None else self.source.inventory

    @property
    def measured(self) -> MeasuredUtilization | None:
        return None if self.source is None else self.source.measured

    @property
    def workloads_unserved(self) -> int:
        """Workloads the plan leaves without a route (their work is not in the bill)."""
        return self.workloads_total - self.workloads_served

    @property
    def new_nodes(self) -> int:
        """Nodes to buy beyond those owned."""
        return max(self.nodes_needed - self.owned_nodes, 0)


# ---------------------------------------------------------------------------------------------------------------
# JSON: the `fleet` object of `hangover evaluate --format json`
# ---------------------------------------------------------------------------------------------------------------

def _energy_json(plan: FleetPlan) -> dict | None:
    """`fleet.energy` (core.decision.energy), with the node lines without it: nodes without energy + energy + API
    + licences = the bill, each in cents."""
    from core.decision.energy import energy_json

    out = energy_json(plan.energy)
    if out is not None:
        out["nodes_without_energy_usd_per_month"] = round(
            plan.owned_monthly_usd + plan.extra_nodes_monthly_usd - plan.energy_usd_per_month, 2)
    return out


def fleet_json(plan: FleetPlan, performance: PerformanceRange | None = None, purchase: dict | None = None,
               smallest: SmallestChange | None = None) -> dict:
    """The contract's `fleet` object: every field in order, nested records as objects, tuples as lists; then the
    inventory and measured telemetry when named, the performance range, the staged purchase and the smallest
    change when computed (its smallest_target relaxations among each node driver's, and `stay_on_owned`)."""
    if smallest is not None:
        plan = with_smallest(plan, smallest)
    out = {f.name: _json(getattr(plan, f.name)) for f in fields(plan) if f.name not in ("source", "energy")}
    out["energy"] = _energy_json(plan)
    if plan.source is not None:
        out["inventory"] = plan.source.inventory
        out["measured"] = _json(plan.source.measured)
    if performance is not None:
        out["performance_range"] = _json(performance)
    if purchase is not None:
        out["purchase"] = purchase
    if smallest is not None:
        out["stay_on_owned"] = _json(smallest.stay_on_owned)
    return jsonable(out)


def with_smallest(plan: FleetPlan, smallest: SmallestChange | None) -> FleetPlan:
    """The fleet record with each node driver's smallest_target relaxation after its others (unchanged: None)."""
    if smallest is None or not smallest.targets:
        return plan
    drivers = tuple(replace(d, relaxations=d.relaxations + (smallest.targets[d.workload_id],))
                    if d.workload_id in smallest.targets else d for d in plan.node_drivers)
    return replace(plan, node_drivers=drivers)


def record_json(rec: Any) -> dict:
    """One record as its JSON object (fields in order); a node driver names only its own target, a relaxation its
    API only when it has one."""
    out = {}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if isinstance(rec, NodeDriver) and f.name in ("latency_slo_ms", "batch_window_hours") \
                and (f.name == "latency_slo_ms") != (rec.latency_slo_ms is not None):
            continue
        if isinstance(rec, Relaxation) and (f.name == "route_id" or (f.name == "latency_slo_ms" and v is None)):
            continue
        out[f.name] = _json(v)
        if isinstance(rec, Relaxation) and f.name == "kind" and rec.route_id is not None:
            out["route_id"] = rec.route_id
    return out


def _json(v: Any) -> Any:
    if v is None or isinstance(v, str | int | float | bool | np.generic):
        return v
    if isinstance(v, tuple | list):
        return [_json(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _json(x) for k, x in v.items()}
    return record_json(v)


def jsonable(obj):
    """Numpy scalars as Python numbers, non-finite floats as None, tuples as lists (the contract's rules)."""
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | np.ndarray):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return finite(obj)
    return obj


def finite(x) -> float | None:
    """x as a float, or None when it is not a finite number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) else None


def _native(x):
    """A numpy scalar as the Python value to_dict("records") gives (float, int, bool); anything else as is."""
    return x.item() if isinstance(x, np.generic) else x


# ---------------------------------------------------------------------------------------------------------------
# answers read from a finished evaluation, computed once
# ---------------------------------------------------------------------------------------------------------------

class Answers:
    """What is computed from a finished evaluation on first request and kept for the next (the verdict ranges, the
    fleet options): one lock per answer, so two threads asking at once (dashboard sessions sharing one cached
    evaluation) compute it once and both get the same record. Nothing is written into the evaluation."""

    __slots__ = ("_locks", "_values", "_guard", "_jobs")

    def __init__(self, jobs: dict[str, Callable[[], Any]] | None = None) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._values: dict[str, Any] = {}
        self._jobs = dict(jobs or {})  # answers whose computation the plan left ready, run when first asked

    def job(self, name: str) -> Callable[[], Any] | None:
        """The computation the plan left for answer `name` (None: none)."""
        return self._jobs.get(name)

    def get(self, name: str, compute: Callable[[], Any]) -> Any:
        """The answer `name`, computed by `compute()` under its lock the first time; a None answer (skipped) is not
        kept, so a later caller may compute it (e.g. forced)."""
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            if name in self._values:
                return self._values[name]
            value = compute()
            if value is not None:
                self._values[name] = value
            return value

    def known(self, name: str) -> Any:
        """The answer if already computed, else None (never computes)."""
        return self._values.get(name)

    def take(self, name: str) -> Any:
        """The answer if already computed, removed (None if not): for what one later computation consumes and
        nothing should hold afterwards, such as a search's sizings."""
        with self._guard:
            return self._values.pop(name, None)
