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
"""

from __future__ import annotations

import hashlib
import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from core.decision import latency
from core.decision.economics import DAYS_PER_MONTH, HOURS_PER_MONTH

# Shadow prices tried, as multiples of the full $/GPU-hour: 0 fills owned nodes, 1 makes a node pay for itself.
SHADOW_PRICES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0, 1.25, 1.6, 2.0, 3.0)
SHADOW_PRICES_LARGE = (0.0, 0.1, 0.35, 0.7, 1.0, 1.6, 3.0)  # fewer rungs where one exact pricing costs more
LARGE_ROWS = 20_000
SINGLE_MOVE_ROWS = 400  # up to this many workloads the search also tries moving each one alone
FULL_MOVE_ROWS = 12  # up to this many, to every allowed plan column (every tier of every stack)
MULTI_START_ROWS = 60  # up to this many, moves from MULTI_STARTS more shadow-price candidates than the cheapest
MULTI_STARTS = 3
EXCLUDE_STACKS = 2  # ... and restarts without each of the stacks holding the most GPUs (Planner._without_stacks)
RESTART_ROWS = 100  # up to this many, one such restart where the plan buys nodes
# ... and above MULTI_START_ROWS up to DEARER_API_ROWS, where the plan buys nodes, a restart from the plan searched
# with every API this many times dearer, for each (Planner._from_dearer_apis)
DEARER_API_ROWS = 5000
DEARER_APIS = (1.5, 2.25)
TIGHTER_TARGETS = 0.8  # ... and up to MULTI_START_ROWS, a restart from the plan searched at targets this much tighter
# Above that, binding members of the deployments holding the most GPUs are moved out one at a time (exact
# pricings per pass, deployments looked at per pass): a deterministic budget, not a clock.
EVICT_PRICINGS = 60
EVICT_DEPLOYMENTS = 8
EVICT_GROUPS = tuple(2**k for k in range(13))  # how many of a pool's members closest to the edge move at once
MAX_PASSES = 6
# Candidate moves sized together ahead of pricing them one by one (Planner._speculate): enough for most of a
# batch's saving, few enough that a move taken midway wastes little (the moves after it are sized again).
SPECULATE_MOVES = 8
DROP_NODE_MARGINS = (1.0, 1.25, 1.6, 2.0, 3.0)  # GPUs moved off, as multiples of what a node fewer needs
DROP_NODE_POOLS = 6  # pools that alone free a node's worth tried as one move each (smallest first)
MAX_REPAIR_ROUNDS = 6  # rounds of barring members a pooled deployment cannot hold (see optimise)
# Concurrency tiers of one stack at one GPU count: (lowest, highest) concurrency cap per replica. One pool holds
# every member to the tightest target among them, so one member that needs batch 2 would otherwise force a
# pool of hundreds of loose ones to cap 2 (and 10x the replicas); a tier per band lets the search keep the
# tight members on low-batch replicas of the same model while the rest run at high batch, as operators run a
# latency pool beside a throughput pool. Offline work uses the top tier (its batch is sized by the engine).
CAP_BANDS = ((1, 4), (8, 32), (64, 1 << 30))
# Beside a latency tier the plan may run one more low-batch pool for members whose target sits at the edge of
# what the hardware does alone: in a big pool such a member needs nearly every replica idle (hundreds of
# surplus GPUs), on a pool of its own a few (Planner._evict moves them there when the bill falls).
EDGE_TIER = len(CAP_BANDS)
TIER_NAMES = ("latency tier", "middle tier", "throughput tier", "edge pool")
# Target given to requests escalated onto a deployment: they load its queue, their own target is held on the
# deployment that served them first (finite, so the latency model's arithmetic stays finite).
_LOAD_ONLY_SLO_MS = 1e12
_NO_ROWS = np.zeros(0, dtype=np.intp)  # no rows (shared: read-only)
_NO_ROWS.flags.writeable = False


def _given(a: np.ndarray | None, what: str) -> np.ndarray:
    """A latency-model input the plan was built with (PlanInputs/OwnedRoute allow None for older callers)."""
    if a is None:
        raise ValueError(f"the plan was built without {what}, which sizing pooled deployments needs")
    return a


@dataclass(frozen=True)
class OwnedRoute:
    """What the plan needs to size one owned route's deployment."""

    index: int  # column of the plan's (W, C) arrays
    route_index: int  # column of the engine's (W, R) arrays (one owned stack has a plan column per GPU count)
    route_id: str
    label: str
    architecture: str
    tp_options: tuple[int, ...]  # GPUs per replica it may use
    licence_usd_per_gpu_month: float  # 0 for open weights
    # (W, G, B) mean service seconds per request at GPUs-per-replica option g and concurrency grid b
    # (NaN where the workload does not fit): the linear view of the search and the memory check.
    service_s: np.ndarray = field(repr=False)
    tail: np.ndarray = field(repr=False)  # (G,) kept for callers of the old fixed tail; sizing does not use it
    # The latency model (core.decision.latency) of a deployment on this column: physics of the stack on
    # the GPU, each workload's prefill here (ms, NaN where not computed) and decode steps per output token.
    stack: Any = field(default=None, repr=False)
    gpu: Any = field(default=None, repr=False)
    eff: Any = field(default=None, repr=False)
    prefill_ms: np.ndarray | None = field(default=None, repr=False)  # (W,)
    steps_per_token: float = 1.0
    # The concurrency caps per replica this column's deployment may run at (CAP_BANDS); tier names it when
    # the same stack and GPU count has several tiers in the plan ("" when it has one).
    cap_lo: int = 1
    cap_hi: int = 1 << 30
    tier: str = ""
    edge: bool = False  # the edge pool beside a latency tier (EDGE_TIER)

    def band_mask(self, grid: np.ndarray) -> np.ndarray:
        """Which grid concurrencies this column's deployment may use as its cap."""
        return (grid >= self.cap_lo) & (grid <= self.cap_hi)

    def step_curve_ms(self, context_tokens: float, max_batch: int) -> np.ndarray:
        """One decode step at running batch b = 1..max_batch with this mean context (physics)."""
        from core.performance import physics

        b = np.arange(1, max_batch + 1, dtype=float)
        return np.asarray(physics.decode_step(self.stack, self.gpu, self.tp_options[0], b, context_tokens,
                                              self.eff)[0], dtype=float)


@dataclass(frozen=True)
class PlanInputs:
    """Everything the search reads: per-workload demand, per-route costs and owned-route physics."""

    workload_ids: np.ndarray
    interactive: np.ndarray  # (W,) bool
    lam_peak: np.ndarray  # requests/s at the peak hour
    lam_mean: np.ndarray  # requests/s on average
    profile: np.ndarray  # (W, 24) hourly multipliers of the mean rate
    slo_ms: np.ndarray  # (W,) p95 target (NaN for offline work)
    allowed: np.ndarray  # (W, C) bool: feasible and permitted, per plan column
    # Per ENGINE route (W, E), not per plan column: an owned stack has a plan column per GPU count and tier,
    # and they all read the same figure, so plan column c reads column col_route[c] (up to 6x less memory;
    # the _r suffix makes any reader that indexes them by plan column fail loudly instead of reading another
    # route's figure).
    api_monthly_r: np.ndarray  # monthly API spend when the workload goes there (inf for owned)
    gpu_hours_day_r: np.ndarray  # offline GPU-hours per day on an owned route
    offline_min_gpus_r: np.ndarray  # GPUs the offline work needs at once to finish inside its window
    offline_gpus_per_replica: np.ndarray  # (W, C) read-only view
    fallback_share_r: np.ndarray  # share of outputs escalated
    fallback_route: np.ndarray  # (W,) plan column escalated to (-1: none)
    fallback_api_monthly: np.ndarray  # (W,) monthly API spend if all requests went to the fallback route
    latency_ms_r: np.ndarray  # standalone p95 (tie-break)
    owned: tuple[OwnedRoute, ...]
    n_routes: int  # plan columns: every API route, and every owned stack once per GPUs-per-replica option
    col_route: np.ndarray  # (C,) engine route of each plan column
    gpus_per_node: int
    owned_nodes: int
    full_usd_per_node_hour: float
    attribution_usd_per_node_hour: float  # the owned nodes' rate under the cost basis
    concurrency_grid: np.ndarray
    sla_tail: float = 0.05
    # The latency model's per-workload inputs (None: built without them, e.g. by older tests).
    input_tokens: np.ndarray | None = None  # (W,) mean input tokens
    output_tokens: np.ndarray | None = None  # (W,) mean output tokens
    output_p95_tokens: np.ndarray | None = None  # (W,) NaN: latency.DEFAULT_OUTPUT_CV
    fallback_extra_ms: np.ndarray | None = None  # (W,) latency an escalated request adds (its fallback's p95)
    # By block size: (W,) each output length's p95 over the length the physics timed (latency.length_ratios),
    # computed once by fleet.build_inputs (None, or a block size missing: computed where needed).
    output_q_ratio: dict[int, np.ndarray] | None = None

    @property
    def full_usd_per_gpu_hour(self) -> float:
        """Full $/GPU-hour: what a new node costs per GPU."""
        return self.full_usd_per_node_hour / self.gpus_per_node


@dataclass(frozen=True, eq=False)
class DeploymentSize:
    """One owned route's deployment for a set of members (cached by the search)."""

    route: int  # position in PlanInputs.owned
    rows: np.ndarray  # interactive member rows (primary and escalated)
    shares: np.ndarray  # share of each row's rate (1 primary, f escalated)
    feasible: bool
    gpus_per_replica: int
    concurrency: int  # concurrency cap per replica
    replicas: int
    service_s: np.ndarray  # (len(rows),) mean service (admission to last token) at the chosen point
    # (len(rows),) analytic p95 of time in system (wait + service, escalations included; NaN for escalated
    # rows, whose target is held on their own deployment), or a function computing it on first use: the
    # search compares bills and mean latencies, only the chosen plan reports percentiles.
    p95_source: Any
    busy: np.ndarray = field(default_factory=lambda: np.zeros(24))  # (24,) GPUs busy with its interactive work
    lat_sum: float = 0.0  # sum of rate x mean time in system over its members (the search's latency tie-break)
    lat_w: float = 0.0  # sum of rates
    binding: int = -1  # kept for callers; the search no longer asks the sizing which member binds (-1)
    n_primary: int = 0  # rows[:n_primary] are served here first; the rest are escalated here

    @property
    def p95_ms(self) -> np.ndarray:
        """Analytic p95 of time in system per member row (computed once)."""
        src = self.p95_source
        if callable(src):
            src = np.asarray(src(), dtype=float)
            object.__setattr__(self, "p95_source", src)
        return src

    @property
    def gpus(self) -> int:
        """GPUs reserved for the interactive pool."""
        return self.replicas * self.gpus_per_replica

    def load_shares(self, lam_peak: np.ndarray) -> np.ndarray:
        """Each member row's share of the pool's offered load at the peak (rate x share x mean service; the
        attribution of its reserved GPUs, the node drivers' weights, the node-fewer move's ranking); zeros
        when the pool has no load."""
        load = lam_peak[self.rows] * self.shares * self.service_s
        total = load.sum()
        return load / total if total > 0 else np.zeros(len(self.rows))


@dataclass(frozen=True)
class Deployment:
    """One running owned deployment in the plan (the JSON's fleet.deployments[])."""

    route_id: str
    label: str
    architecture: str
    workloads: tuple[str, ...]
    gpus_per_replica: int
    concurrency_cap: int
    replicas: int
    interactive_gpus: int
    offline_gpu_hours_per_day: float
    offline_min_gpus: int
    licence_usd_per_month: float

    @property
    def gpus(self) -> int:
        """GPUs this deployment holds at its busiest (interactive replicas, or the offline minimum)."""
        return max(self.interactive_gpus, self.offline_min_gpus)


@dataclass(frozen=True)
class PlanCost:
    """The exact price of one assignment."""

    assignment: np.ndarray
    feasible: bool
    bill: float
    gpu_hours_per_day: float
    mean_latency_ms: float
    nodes_needed: int
    nodes_interactive: int
    nodes_offline_extra: int
    api_monthly: float
    licence_monthly: float
    sizes: dict[int, DeploymentSize]
    busy: np.ndarray  # (24,) GPUs busy with interactive work
    fill: np.ndarray  # (24,) GPUs filled with offline work
    offline_gpu_hours_per_day: float
    # What a move from this plan re-uses (Planner.price(base=)): per row its API spend, escalated share and
    # whether it escalates onto an owned column; per owned column its part of the bill. None: not a base.
    row_api: np.ndarray | None = field(default=None, repr=False)
    esc_share: np.ndarray | None = field(default=None, repr=False)
    esc_owned: np.ndarray | None = field(default=None, repr=False)
    parts: dict[int, tuple] | None = field(default=None, repr=False)
    owned_usd: float = 0.0  # the owned nodes' monthly cost: the same in every plan of these inputs

    @property
    def key(self) -> tuple[float, float, float]:
        """What the search minimises: the bill, then GPU-hours, then latency. The bill to the cent above what
        the owned nodes cost anyway: rounded whole, a sub-cent API spend tied with filling an owned node or
        not depending on where the node price put the cent boundary (a dearer node moved a workload from
        its API onto the owned node: tests/test_engine.py::test_higher_node_price_never_moves_api_to_owned)."""
        return (round(self.bill - self.owned_usd, 2), round(self.gpu_hours_per_day, 6),
                round(self.mean_latency_ms, 3))


class Planner:
    """Prices assignments exactly (with a cache of deployment sizings) and searches for the cheapest."""

    def __init__(self, inp: PlanInputs, gpu_hours_month: np.ndarray | None = None,
                 cache: dict[tuple, Any] | None = None):
        self.inp = inp
        self._owned_pos = {o.index: k for k, o in enumerate(inp.owned)}
        # Sizings depend on the owned routes' physics and the members only, so planners over the same owned
        # routes (the licensed-route and fleet-option re-plans) may share them.
        # (DeploymentSize by sizing key; and the class planners' own caches, under ("classes", digest))
        self._cache: dict[tuple, Any] = {} if cache is None else cache
        w = len(inp.workload_ids)
        self._rows = np.arange(w)
        owned_cols = np.zeros(inp.n_routes + 1, dtype=bool)
        owned_cols[[o.index for o in inp.owned]] = True
        self._fb_owned = owned_cols[inp.fallback_route]  # index -1 hits the spare False at the end
        self._owned_cols = np.array(sorted(o.index for o in inp.owned), dtype=int)
        self._lin = None
        # (inputs, linear view) of a planner this one's linear view is built from (linear_parts_like)
        self._lin_like: tuple[PlanInputs, tuple] | None = None
        self._alt_cache: dict[tuple[int, bytes], np.ndarray] = {}  # whole-deployment moves' targets (_improve)
        self._hopeless: set[tuple[int, int]] = set()  # (row, plan column) found unable to meet the target there
        self._moments_by_block: dict[float, tuple[np.ndarray, ...]] = {}  # _output_moments
        self._barred_log: list[np.ndarray] = []  # rows of each batch of pairings barred so far (_bar_hopeless)
        # Sizings made ahead in a batch (prefetch), with the hopeless pairings each found: size() takes them.
        self._prefetched: dict[tuple, tuple[DeploymentSize, list[tuple[int, int]]]] = {}
        # The last prefetch_plans batch's per-move terms and sizing requests, which price() then needs again for
        # the same moves from the same base: (base, {assignment bytes: (terms, requests)}).
        self._terms_memo: tuple[PlanCost | None, dict[bytes, tuple]] = (None, {})
        # fill_idle by (busy GPUs per hour, capacity, offline GPU-hours): most moves leave all three as they were.
        self._fills: dict[tuple[bytes, float, float], np.ndarray] = {}
        self._classes: tuple[np.ndarray | None, np.ndarray | None] | None = None  # (class per row, first rows)
        self._sub: Planner | None = None  # the planner of the classes (optimise)
        self._restarts = True  # small inventories: moves from several starts (a restart's own search: one start)
        # The edge pool beside each tier of a stack at one GPU count (plan column -> plan column).
        edge_cols = {(o.route_index, o.tp_options[0]): o.index for o in inp.owned if o.edge}
        self._edge_of = {o.index: edge_cols[(o.route_index, o.tp_options[0])] for o in inp.owned
                         if not o.edge and (o.route_index, o.tp_options[0]) in edge_cols}
        self._evict_budget = EVICT_PRICINGS
        self._rank: np.ndarray | None = None  # each row's place in the order the search visits rows (_search_rank)
        # Plan column -> (engine route, GPUs per replica) of owned columns, and the top tier of each.
        self._col_group = {o.index: (o.route_index, o.tp_options[0]) for o in inp.owned}
        top: dict[tuple[int, int], OwnedRoute] = {}
        for o in inp.owned:
            k = (o.route_index, o.tp_options[0])
            if not o.edge and (k not in top or o.cap_hi > top[k].cap_hi):
                top[k] = o
        self._top_cols = {o.index for o in top.values()}
        # The standalone view depends on physics only, so planners over the same inputs may share it.
        self._gpu_hours_month = gpu_hours_month if gpu_hours_month is not None else self._standalone_gpu_hours()

    # -- exact pricing --------------------------------------------------------
    def size(self, pos: int, rows: np.ndarray, shares: np.ndarray, slo_ms: np.ndarray | None = None,
             n_primary: int | None = None) -> DeploymentSize:
        """Size one deployment on the latency model: the concurrency cap and replicas needing the fewest GPUs
        such that every primary member's p95 of time in system (wait + service, its escalated requests
        inside the same 5 % budget) meets its own target (docs/design/latency_model.md).

        rows[:n_primary] are the members served here first (share 1); the rest are requests escalated
        here from other deployments (share f), which load the queue but whose target is held on their
        own deployment. Every grid concurrency the members fit at is a candidate cap; one
        `latency.min_replicas` call sizes them all. Only members that can bind are checked: with the
        same output-length spread and no escalation, a member with less slack (target - prefill) and
        longer outputs (larger lognormal mu) than another misses whenever that one does, so the
        sizing checks the Pareto front of (slack, mu) and every member still loads the queue.
        """
        n_primary = len(rows) if n_primary is None else int(n_primary)
        key = self._size_key(pos, rows, shares, slo_ms, n_primary)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        done = self._prefetched.pop(key, None)
        if done is None:
            slo = self.inp.slo_ms[rows] if slo_ms is None else slo_ms
            done = self._size_many([(pos, rows, shares, slo, n_primary)])[0]
        res, hopeless = done
        # Pairings found hopeless count once the search asks for this sizing (as if sized here and now).
        self._hopeless.update(hopeless)
        self._cache[key] = res
        return res

    @staticmethod
    def _size_key(pos, rows, shares, slo_ms, n_primary) -> tuple:
        return (pos, rows.tobytes(), shares.tobytes(), None if slo_ms is None else slo_ms.tobytes(), n_primary)

    def prefetch(self, requests) -> None:
        """Size in one batch the deployments (pos, rows, shares, slo_ms or None, n_primary) not sized yet, for
        size() to find. The same sizings size() would make one by one: each deployment's replicas, cap and
        figures do not depend on the others in the batch; what a batch saves is numpy's per-call overhead,
        most of a small sizing's time (docs/design/fleet_plan.md "Sizing in batches; moves from several starts")."""
        todo, keys = [], set()
        for pos, rows, shares, slo_ms, n_primary in requests:
            key = self._size_key(pos, rows, shares, slo_ms, n_primary)
            if key in keys or key in self._cache or key in self._prefetched:
                continue
            keys.add(key)
            slo = self.inp.slo_ms[rows] if slo_ms is None else slo_ms
            todo.append((key, (pos, rows, shares, slo, n_primary)))
        if len(todo) < 2:
            return  # one sizing: size() makes it when asked (the same call)
        for (key, _), done in zip(todo, self._size_many([q for _, q in todo]), strict=True):
            self._prefetched[key] = done

    def _model(self, pos, rows, shares, slo, n_primary, b_max) -> dict:
        """The latency model's inputs for these members on owned column `pos` (what the simulation replays too)."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)
        lam = inp.lam_peak[rows] * shares
        prefill = np.nan_to_num(_given(route.prefill_ms, "prefill_ms")[rows], nan=0.0)
        n_out = _given(inp.output_tokens, "output_tokens")[rows]
        primary = np.arange(n) < n_primary
        esc_share = np.where(primary & (inp.fallback_route[rows] >= 0), inp.fallback_share_r[rows, route.route_index], 0.0)
        esc_extra = np.where(esc_share > 0, _given(inp.fallback_extra_ms, "fallback_extra_ms")[rows], 0.0)
        # One step curve per deployment, at the members' mean context weighted by the time each spends in
        # the batch (rate x output tokens): KV reads grow with the contexts actually running.
        ctx = _given(inp.input_tokens, "input_tokens")[rows] + 0.5 * n_out
        occ = lam * n_out
        context = float((occ * ctx).sum() / occ.sum()) if occ.sum() > 0 else float(ctx.mean() if n else 0.0)
        return {
            "n_primary": n_primary, "arrival_rate_per_s": lam, "prefill_ms": prefill, "output_mean_tokens": n_out,
            "output_p95_tokens": _given(inp.output_p95_tokens, "output_p95_tokens")[rows],
            # Escalated rows only load the queue: a target far out of reach of any miss.
            "slo_ms": np.where(primary, slo, _LOAD_ONLY_SLO_MS),
            "escalated_share": esc_share, "escalated_extra_ms": esc_extra,
            "step_ms": route.step_curve_ms(context, b_max), "steps_per_token": route.steps_per_token,
            "block_tokens": latency.block_tokens_of(route.stack),
            "context_tokens": context,
        }

    def _output_moments(self, block_tokens: float) -> tuple[np.ndarray, ...]:
        """Every workload's output-length lognormal (mu, sigma) and effective length's moments at a block size,
        computed once per block size (sizing derived them for the members again at each of thousands of
        sizings: ~1.3 s of a 100,000-workload plan)."""
        key = float(block_tokens)
        if key not in self._moments_by_block:
            inp = self.inp
            mu, sigma = latency.output_lognormal(_given(inp.output_tokens, "output_tokens"),
                                                 _given(inp.output_p95_tokens, "output_p95_tokens"))
            m1, m2 = latency.effective_tokens_moments(mu, sigma, np.full(mu.shape, key))
            self._moments_by_block[key] = (mu, sigma, m1, m2)
        return self._moments_by_block[key]

    def deployment_model(self, d: DeploymentSize) -> dict:
        """The latency model of a sized deployment (its members' arrays and step curve up to its cap)."""
        return self._model(d.route, d.rows, d.shares, self.inp.slo_ms[d.rows], d.n_primary, d.concurrency)

    def _size_many(self, requests) -> list[tuple[DeploymentSize, list[tuple[int, int]]]]:
        """Size deployments (pos, rows, shares, slo, n_primary): one latency.min_replicas call and one
        pooled_state call for all of them. Per deployment its size and the (row, plan column) pairings found
        hopeless (a member whose service alone misses its target there)."""
        out: list[Any] = [None] * len(requests)
        pending = []
        for k, req in enumerate(requests):
            prep = self._size_prepare(*req)
            if isinstance(prep, DeploymentSize):
                out[k] = (prep, [])
            else:
                pending.append((k, *prep))
        if pending:
            dep = latency.PooledDeployments.concat([d for _, d, _ in pending])
            sizing = latency.min_replicas(dep, binding_rows=False)
            reps = sizing.replicas.astype(float)
            st = latency.pooled_state(dep, np.where(reps >= 1, reps, 1.0))
            at = 0
            for k, d, finish in pending:
                sl = slice(at, at + d.rows)
                out[k] = finish(reps[sl], sizing.service_tail_misses[sl], st.take(at, at + d.rows))
                at += d.rows
        return out

    def _size_prepare(self, pos, rows, shares, slo, n_primary):
        """A deployment's size where no queue needs solving (nothing fits, no traffic), else (the candidate caps'
        configurations for min_replicas, a function of their replicas, tail misses and state giving the size
        and the hopeless pairings)."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)
        lam = inp.lam_peak[rows] * shares
        svc = route.service_s[rows][:, 0, :]  # (n, B) mean seconds at each grid concurrency (NaN: does not fit)
        grid = inp.concurrency_grid
        fits = np.all(np.isfinite(svc), axis=0) if n else np.ones(len(grid), bool)
        band = route.band_mask(grid)
        if (fits & band).any():
            fits &= band
        else:
            # Members that each fit in the tier but not all at once (their contexts add up): the largest cap
            # below the tier that holds them all, so a tier never makes a servable pool unservable.
            below = np.flatnonzero(fits & (grid < route.cap_lo))
            fits = np.zeros_like(fits)
            fits[below[-1:]] = True
        g = int(route.tp_options[0])
        total = float(lam.sum())

        def infeasible():
            return DeploymentSize(pos, rows, shares, False, 0, 0, 0, np.full(n, np.nan), np.full(n, np.nan),
                                  n_primary=n_primary)

        if not fits.any():
            return infeasible()
        caps_j = np.flatnonzero(fits)
        b_max = int(grid[caps_j[-1]])
        parts = self._model(pos, rows, shares, slo, n_primary, b_max)
        prefill, n_out, p95_out = parts["prefill_ms"], parts["output_mean_tokens"], parts["output_p95_tokens"]
        esc_share, esc_extra, slo_eff = parts["escalated_share"], parts["escalated_extra_ms"], parts["slo_ms"]
        step, spt, blk = parts["step_ms"], parts["steps_per_token"], parts["block_tokens"]
        primary = np.arange(n) < n_primary
        load = latency.PooledDeployments.build(
            row=np.zeros(n, dtype=np.int64), arrival_rate_per_s=lam, prefill_ms=prefill, output_mean_tokens=n_out,
            output_p95_tokens=p95_out, slo_ms=slo_eff, step_ms=step[None, :], concurrency_cap=b_max,
            escalated_share=esc_share, escalated_extra_ms=esc_extra, steps_per_token=spt, block_tokens=blk,
            row_moments=tuple(x[rows] for x in self._output_moments(blk)))

        if total <= 0:
            # No traffic: nothing to reserve (the route still reports an operating point).
            bi = int(caps_j[-1])
            return DeploymentSize(pos, rows, shares, True, g, int(grid[bi]), 0, np.full(n, np.nan),
                                  np.full(n, np.nan), np.zeros(24), 0.0, 0.0, -1, n_primary)

        check = _binding_candidates(slo_eff - prefill, load.output_mu, load.output_sigma, esc_share > 0, primary)
        caps = grid[caps_j].astype(np.int64)
        dep = load.at_caps(check, caps)

        def finish(reps, tail_misses, st):
            ok = reps >= 1
            if not ok.any():
                hopeless = []
                if tail_misses.all():
                    # The step curve (hence the batch-1 service) is the same for every cap: name the members whose
                    # service alone misses here, so the search stops pairing them with this column.
                    alone = latency.ServiceTime(prefill, np.full(n, spt * step[0]), load.output_mu,
                                                load.output_sigma, load.row_block_tokens)
                    p_alone = (1.0 - esc_share) * alone.survival(slo_eff) \
                        + esc_share * alone.survival(slo_eff - esc_extra)
                    hopeless = [(int(rows[i]), int(route.index))
                                for i in np.flatnonzero(primary & (p_alone > latency.SLO_TAIL) & (lam > 0))]
                return infeasible(), hopeless
            return self._size_finish(pos, rows, shares, n_primary, parts, load, caps, reps, st), []

        return dep, finish

    def _size_finish(self, pos, rows, shares, n_primary, parts, load, caps, reps, st) -> DeploymentSize:
        """The size at the cap needing the fewest GPUs (then the lowest mean latency), from every cap's replicas
        and queue state."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)
        lam = inp.lam_peak[rows] * shares
        g = int(route.tp_options[0])
        total = float(lam.sum())
        prefill, n_out, p95_out = parts["prefill_ms"], parts["output_mean_tokens"], parts["output_p95_tokens"]
        esc_share, esc_extra, slo_eff = parts["escalated_share"], parts["escalated_extra_ms"], parts["slo_ms"]
        step, spt, blk = parts["step_ms"], parts["steps_per_token"], parts["block_tokens"]
        ok = reps >= 1
        # Mean time in system of the whole traffic per candidate cap (closed form from the load's sums):
        # free slot: p + join + c E N at the typical batch; waited: + 1/theta, at the full batch.
        m = load.moments
        with np.errstate(divide="ignore", invalid="ignore"):
            free = m.pre[0] + m.lam[0] * st.join_ms + st.ms_per_token * m.n[0]
            waited = m.pre[0] + m.lam[0] * st.full_join_ms + st.waited_ms_per_token * m.n[0] \
                + np.where(st.wait_rate_per_ms > 0, m.lam[0] / st.wait_rate_per_ms, 0.0)
            lat = (1.0 - st.p_wait) * free + st.p_wait * waited + float((lam * esc_share * esc_extra).sum())
        gpus = np.where(ok, reps * g, np.inf)
        best = int(np.lexsort((np.nan_to_num(lat, nan=np.inf), gpus))[0])
        cap, replicas = int(caps[best]), int(reps[best])
        mean_n = np.exp(load.output_mu + load.output_sigma**2 / 2.0)
        service_ms = prefill + st.join_ms[best] + st.ms_per_token[best] * mean_n
        s_chosen = service_ms / 1e3

        def p95():
            out = np.full(n, np.nan)
            if n_primary:
                chosen = latency.PooledDeployments.build(
                    row=np.zeros(n, dtype=np.int64), arrival_rate_per_s=lam, prefill_ms=prefill,
                    output_mean_tokens=n_out, output_p95_tokens=p95_out, slo_ms=slo_eff, step_ms=step[None, :cap],
                    concurrency_cap=cap, escalated_share=esc_share, escalated_extra_ms=esc_extra,
                    steps_per_token=spt, block_tokens=blk)
                out[:n_primary] = latency.p95_ms(chosen, np.array([float(replicas)]), idx=np.arange(n_primary))
            return out

        # GPUs busy each hour: rate(h) x GPU-seconds per request at the running batch a request joins at the
        # peak (the latency model's), not at the cap: a cap is a limit, and dividing by it made the same traffic
        # on the same replicas look 6 % or 1 % busy depending on a cap nothing reached.
        b_run = float(np.clip(np.nan_to_num(st.batch[best], nan=float(cap)), 1.0, float(cap)))
        busy = ((inp.lam_mean[rows] * shares * g * s_chosen / b_run)[:, None] * inp.profile[rows]).sum(axis=0)
        return DeploymentSize(pos, rows, shares, True, g, cap, replicas, s_chosen, p95, busy,
                              float(lat[best]), total, -1, n_primary)

    def _groups(self, col: np.ndarray) -> dict[int, np.ndarray]:
        """Rows per owned plan column (ascending row order), from one stable sort instead of a mask per column."""
        order = np.argsort(col, kind="stable")
        ordered = col[order]
        lo = np.searchsorted(ordered, self._owned_cols, side="left")
        hi = np.searchsorted(ordered, self._owned_cols, side="right")
        return {int(c): order[a:b] for c, a, b in zip(self._owned_cols, lo, hi, strict=True) if b > a}

    def _row_terms(self, assign: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: API spend (its API, or its escalations paid per request), the escalated share and
        whether its escalations load an owned fallback column."""
        inp = self.inp
        a = assign[rows]
        has = a >= 0
        safe = np.where(has, a, 0)
        er = inp.col_route[safe]
        on_api = inp.api_monthly_r[rows, er]
        # Escalated shares: an owned fallback takes f of the load; an API fallback is paid per request.
        f = np.where(has, inp.fallback_share_r[rows, er], 0.0)
        esc = has & (f > 0) & (inp.fallback_route[rows] >= 0)
        fb_owned = self._fb_owned[rows]
        row_api = np.where(has & np.isfinite(on_api), on_api, 0.0) \
            + np.where(esc & ~fb_owned, f * inp.fallback_api_monthly[rows], 0.0)
        return row_api, f, esc & fb_owned

    def _terms(self, assign: np.ndarray, base: PlanCost | None, slo_override) -> tuple:
        """price()'s per-row terms (API spend, escalated share, escalations onto an owned column), the owned
        columns to price again (None: all) and their primary and escalated-in rows."""
        inp = self.inp
        fb = inp.fallback_route
        if base is None or base.parts is None or slo_override is not None:
            row_api, f, esc_owned = self._row_terms(assign, self._rows)
            has = assign >= 0
            prim_groups = self._groups(np.where(has, assign, -1))
            extra_groups = self._groups(np.where(esc_owned, fb, -1)) if esc_owned.any() else {}
            touched = None
        else:
            changed = np.flatnonzero(assign != base.assignment)
            # A plan with parts has its per-row terms too (price() sets all four or none).
            assert base.row_api is not None and base.esc_share is not None and base.esc_owned is not None
            row_api, f, esc_owned = base.row_api.copy(), base.esc_share.copy(), base.esc_owned.copy()
            row_api[changed], f[changed], esc_owned[changed] = self._row_terms(assign, changed)
            old_fb = changed[base.esc_owned[changed]]
            new_fb = changed[esc_owned[changed]]
            touched = set(base.assignment[changed].tolist()) | set(assign[changed].tolist()) \
                | set(fb[old_fb].tolist()) | set(fb[new_fb].tolist())
            prim_groups = {c: np.flatnonzero(assign == c) for c in touched if c >= 0}
            if esc_owned.any():
                extra_groups = {c: np.flatnonzero(esc_owned & (fb == c)) for c in touched if c >= 0}
            else:  # nothing escalates onto an owned column (most plans): what the masks give, without them
                extra_groups = {c: _NO_ROWS for c in touched if c >= 0}
        return row_api, f, esc_owned, touched, prim_groups, extra_groups

    def _requests(self, touched, prim_groups, extra_groups, f, slo_override) -> list[tuple]:
        """The deployment sizings pricing these columns asks for (prefetch's requests)."""
        out = []
        for pos in self._positions(touched):
            r = self.inp.owned[pos].index
            req = self._column_request(pos, prim_groups.get(r), extra_groups.get(r), f, slo_override)
            if req is not None:
                out.append(req)
        return out

    def _positions(self, touched: set[int] | None, base: PlanCost | None = None) -> list[int] | range:
        """Owned positions to visit, ascending: all (touched None), else the touched ones and those running in
        base (the only ones with a part: a position with none adds nothing, so sums keep their order)."""
        if touched is None:
            return range(len(self.inp.owned))
        pos = {self._owned_pos[r] for r in touched if r in self._owned_pos}
        if base is not None and base.parts is not None:
            pos |= set(base.parts)
        return sorted(pos)

    def prefetch_plans(self, assigns, base: PlanCost | None) -> None:
        """Size in one batch what pricing each of these assignments from `base` will ask for (the search's
        candidate moves, priced one by one afterwards: the sizings are the same, made together)."""
        reqs: list[tuple] = []
        memo: dict[bytes, tuple] = {}
        for assign in assigns:
            assign = np.asarray(assign)
            terms = self._terms(assign, base, None)
            _, f, _, touched, prim_groups, extra_groups = terms
            mine = self._requests(touched, prim_groups, extra_groups, f, None)
            reqs += mine
            if base is not None:
                memo[assign.tobytes()] = (terms, mine)
        self._terms_memo = (base, memo)
        self.prefetch(reqs)

    def price(self, assign: np.ndarray, slo_override: tuple[int, float] | None = None,
              base: PlanCost | None = None) -> PlanCost:
        """The exact monthly cash bill of an assignment (plan column per workload, -1 unserved).

        base: a priced assignment this one differs from in a few rows (a search move). Only the deployments
        those rows leave or join are looked at again; the others keep base's figures, and every sum runs
        in the same order over the same per-row and per-deployment terms, so the bill is the one a full
        pricing gives, bit for bit (tests/test_plan.py checks it)."""
        inp = self.inp
        assign = np.asarray(assign)
        memo_base, memo = self._terms_memo
        known = memo.pop(assign.tobytes(), None) if base is not None and base is memo_base \
            and slo_override is None else None
        if known is None:
            terms = self._terms(assign, base, slo_override)
            requests = self._requests(terms[3], terms[4], terms[5], terms[1], slo_override)
        else:
            terms, requests = known
        row_api, f, esc_owned, touched, prim_groups, extra_groups = terms
        self.prefetch(requests)
        api_monthly = float(np.sum(row_api))

        sizes: dict[int, DeploymentSize] = {}
        parts: dict[int, tuple] = {}
        busy = np.zeros(24)
        licence = 0.0
        interactive_gpus: list[tuple[int, int]] = []  # (replica size, count)
        offline_hours = 0.0
        offline_min = 0.0
        lat_sum, lat_w = 0.0, 0.0
        for pos in self._positions(touched, base):
            route = inp.owned[pos]
            r = route.index
            if touched is not None and r not in touched:
                part = base.parts.get(pos) if base is not None and base.parts is not None else None
            else:
                part = self._price_column(pos, route, prim_groups.get(r), extra_groups.get(r), f, slo_override)
            if part is None:
                continue
            d, off_hours, off_min, lic = part
            parts[pos] = part
            if d is not None:
                sizes[pos] = d
                if not d.feasible:
                    return PlanCost(assign, False, np.inf, np.inf, np.inf, 0, 0, 0, api_monthly, licence, sizes,
                                    busy, np.zeros(24), offline_hours)
                interactive_gpus.append((d.gpus_per_replica, d.replicas))
                busy += d.busy
                lat_sum += d.lat_sum
                lat_w += d.lat_w
            offline_hours += off_hours
            offline_min = max(offline_min, off_min)
            licence += lic
        gpn = inp.gpus_per_node
        nodes_i = pack_nodes(interactive_gpus, gpn)
        capacity = max(inp.owned_nodes, nodes_i) * gpn
        fill = self._fill_idle(busy, capacity, offline_hours)
        leftover = max(offline_hours - float(fill.sum()), 0.0)
        extra_nodes = int(np.ceil(leftover / (gpn * 24.0) - 1e-9)) if leftover > 1e-9 else 0
        if extra_nodes:
            fill = self._fill_idle(busy, (max(inp.owned_nodes, nodes_i) + extra_nodes) * gpn, offline_hours)
        needed = max(nodes_i + extra_nodes, int(np.ceil(offline_min / gpn - 1e-9)))
        owned_usd = inp.owned_nodes * inp.full_usd_per_node_hour * HOURS_PER_MONTH
        bill = (max(inp.owned_nodes, needed) * inp.full_usd_per_node_hour * HOURS_PER_MONTH
                + api_monthly + licence)
        gpu_hours = sum(g * n for g, n in interactive_gpus) * 24.0 + offline_hours
        # A plan priced with one member's target overridden is not a base for moves (its sizings differ).
        keep = slo_override is None
        return PlanCost(assign, True, bill, gpu_hours, lat_sum / lat_w if lat_w else 0.0, needed, nodes_i,
                        extra_nodes, api_monthly, licence, sizes, busy, fill, offline_hours,
                        row_api if keep else None, f if keep else None, esc_owned if keep else None,
                        parts if keep else None, owned_usd)

    def _fill_idle(self, busy: np.ndarray, capacity: float, gpu_hours: float) -> np.ndarray:
        """fill_idle, remembered (read-only: plans share the array)."""
        key = (busy.tobytes(), float(capacity), float(gpu_hours))
        fill = self._fills.get(key)
        if fill is None:
            if len(self._fills) >= 4096:
                self._fills.clear()
            fill = self._fills[key] = fill_idle(busy, capacity, gpu_hours)
            fill.flags.writeable = False
        return fill

    def _column_request(self, pos: int, prim: np.ndarray | None, extra: np.ndarray | None, f: np.ndarray,
                        slo_override: tuple[int, float] | None) -> tuple | None:
        """The sizing of owned column `pos`'s interactive deployment: (pos, rows, shares, targets or None,
        primary rows); None when no interactive work runs there."""
        inp = self.inp
        prim = prim if prim is not None else np.zeros(0, dtype=int)
        extra = extra if extra is not None else np.zeros(0, dtype=int)
        p_int, e_int = prim[inp.interactive[prim]], extra[inp.interactive[extra]]
        inter_rows = np.concatenate([p_int, e_int]) if e_int.size else p_int
        if not inter_rows.size:
            return None
        shares = np.concatenate([np.ones(p_int.size), f[e_int]]) if e_int.size else np.ones(p_int.size)
        slo = None
        if slo_override is not None and np.any(inter_rows == slo_override[0]):
            slo = inp.slo_ms[inter_rows].copy()
            slo[inter_rows == slo_override[0]] = slo_override[1]
        return pos, inter_rows, shares, slo, p_int.size

    def _price_column(self, pos: int, route: OwnedRoute, prim: np.ndarray | None, extra: np.ndarray | None,
                      f: np.ndarray, slo_override: tuple[int, float] | None) -> tuple | None:
        """One owned column's part of the bill: (its interactive deployment or None, offline GPU-hours a day,
        offline GPUs needed at once, licence $/month); None when nothing runs there."""
        inp = self.inp
        if prim is None and extra is None:
            return None
        prim = prim if prim is not None else np.zeros(0, dtype=int)
        extra = extra if extra is not None else np.zeros(0, dtype=int)
        req = self._column_request(pos, prim, extra, f, slo_override)
        d = None
        d_gpus = 0
        if req is not None:
            d = self.size(*req)
            if not d.feasible:
                return d, 0.0, 0.0, 0.0
            d_gpus = d.gpus
        p_off, e_off = prim[~inp.interactive[prim]], extra[~inp.interactive[extra]]
        er = route.route_index
        if p_off.size or e_off.size:
            off_hours = float(np.nansum(inp.gpu_hours_day_r[p_off, er])) + float(
                np.nansum(inp.gpu_hours_day_r[e_off, er] * f[e_off]))
            off_min = float(np.nanmax(inp.offline_min_gpus_r[p_off, er], initial=0.0))
        else:  # an interactive pool alone (most columns): what the sums of nothing give
            off_hours, off_min = 0.0, 0.0
        lic = route.licence_usd_per_gpu_month * (d_gpus + np.ceil(off_hours / 24.0 - 1e-9))
        return d, off_hours, off_min, lic

    # -- search -------------------------------------------------------------
    def _linear_parts(self):
        """Per workload: the cheapest allowed API (its cost does not depend on the shadow price), and per owned
        column the GPU-hours held and the fixed cost (licence, escalation), computed once (for the search:
        plan_evaluation lets go of them afterwards, ~1.8 KB per workload)."""
        if self._lin is None and self._lin_like is not None:
            self._lin = self._linear_parts_from(self._lin_like)
            self._lin_like = None  # let go of the other planner
        if self._lin is None:
            cols, res, fixed, fb_r, lat_r = self._owned_terms(slice(None))
            self._lin = (cols, res, fixed, *self._api_parts(fb_r, lat_r))
        return self._lin

    def _api_parts(self, fb_r: np.ndarray, lat_r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each workload's cheapest allowed API column and its cost (escalation spend and tie-break included)."""
        inp = self.inp
        api_r = inp.api_monthly_r
        api_cost = np.where(inp.allowed, np.where(np.isfinite(api_r), api_r + fb_r + lat_r * 1e-12, np.inf)
                            [:, inp.col_route], np.inf)
        api_col = np.argmin(api_cost, axis=1) if inp.n_routes else np.zeros(len(api_cost), dtype=int)
        api_best = api_cost[np.arange(len(api_cost)), api_col] if inp.n_routes else np.full(len(api_cost), np.inf)
        return api_col, api_best

    def linear_parts_like(self, other: Planner) -> None:
        """Build the linear view, when first needed, from another planner's over the same workloads and
        physics (the licensed stacks' re-plans: the same inputs but for a few columns' allowed pairs or
        licence): only the owned columns that differ are computed again (the whole view took ~1.2 s at 100k
        workloads), and the API part is reused when no API column's pairs differ."""
        if other._lin is not None and other.inp.allowed.shape == self.inp.allowed.shape \
                and other._gpu_hours_month is self._gpu_hours_month:
            self._lin_like = (other.inp, other._lin)

    def _linear_parts_from(self, like: tuple[PlanInputs, tuple]) -> tuple | None:
        """Another planner's linear view with the owned columns whose pairs or licence differ here computed
        again (None when the owned columns differ: then the whole view is computed)."""
        inp, (o_inp, o_lin) = self.inp, like
        cols: np.ndarray = o_lin[0]
        res: np.ndarray = o_lin[1]
        fixed: np.ndarray = o_lin[2]
        api_col: np.ndarray = o_lin[3]
        api_best: np.ndarray = o_lin[4]
        mine = np.array([o.index for o in inp.owned], dtype=int)
        same_routes = len(o_inp.owned) == len(inp.owned) and np.array_equal(mine, cols)
        if not same_routes:
            return None
        lic = np.array([o.licence_usd_per_gpu_month for o in inp.owned])
        o_lic = np.array([o.licence_usd_per_gpu_month for o in o_inp.owned])
        differ = np.flatnonzero((inp.allowed[:, cols] != o_inp.allowed[:, cols]).any(axis=0) | (lic != o_lic))
        res, fixed = res.copy(), fixed.copy()
        if differ.size:
            _, r_sub, f_sub, fb_r, lat_r = self._owned_terms(slice(None), differ)
            res[:, differ] = r_sub
            fixed[:, differ] = f_sub
        api = np.ones(inp.n_routes, dtype=bool)
        api[cols] = False
        if (inp.allowed[:, api] != o_inp.allowed[:, api]).any():
            _, _, _, fb_r, lat_r = self._owned_terms(slice(None), np.zeros(0, dtype=int))
            api_col, api_best = self._api_parts(fb_r, lat_r)
        return cols, res, fixed, api_col, api_best

    def _owned_terms(self, rows, which: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """For workload rows (a slice or indices): the owned plan columns (those at positions `which` of
        inp.owned, default all), GPU-hours held on each (0 where not allowed), fixed cost plus tie-break (inf
        where not allowed), and per engine route the escalation spend and the latency tie-break. Row by row
        and column by column the same values whatever rows and columns are asked for."""
        inp = self.inp
        owned = inp.owned if which is None else [inp.owned[k] for k in which]
        cols = np.array([o.index for o in owned], dtype=int)
        lic = np.array([o.licence_usd_per_gpu_month / HOURS_PER_MONTH for o in owned])
        # Per engine route first (E columns), gathered to plan columns once.
        fb_r = _nan_to_num(inp.fallback_share_r[rows] * inp.fallback_api_monthly[rows, None])
        lat_r = _nan_to_num(inp.latency_ms_r[rows])
        res = _nan_to_num(self._gpu_hours_month[rows][:, cols], nan=np.inf)
        ok = inp.allowed[rows][:, cols] & np.isfinite(res)
        res = np.where(ok, res, 0.0)
        own_r = inp.col_route[cols]
        fixed = np.where(ok, res * lic[None, :] + fb_r[:, own_r], np.inf)
        # Ties go to fewer GPU-hours, then lower latency.
        tie = res * 1e-9 + lat_r[:, own_r] * 1e-12
        return cols, res, fixed + tie, fb_r, lat_r

    def _choose(self, p_gpu_hour: float, rows: np.ndarray | None = None, exclude=None) -> np.ndarray:
        """Each workload's cheapest plan column at a shadow price per GPU-hour (pooled, linear view); -1: none.
        exclude: an owned plan column (or several) not to choose."""
        cols, res, fixed, api_col, api_best = self._linear_parts()
        if rows is not None:
            res, fixed, api_col, api_best = res[rows], fixed[rows], api_col[rows], api_best[rows]
        cost = fixed + res * p_gpu_hour
        if exclude is not None:
            cost[:, np.isin(cols, exclude)] = np.inf
        k = np.argmin(cost, axis=1) if cols.size else np.zeros(len(api_best), dtype=int)
        own = cost[np.arange(len(k)), k] if cols.size else np.full(len(api_best), np.inf)
        pick = np.where(own <= api_best, cols[k] if cols.size else -1, api_col)
        return np.where(np.isfinite(np.minimum(own, api_best)), pick, -1)

    def standalone_cost(self) -> np.ndarray:
        """(W, C) monthly cost of each allowed plan column on its own: APIs as priced, owned columns at the
        full $/GPU-hour on the pooled, linear view (inf where not allowed)."""
        inp = self.inp
        cols, res, fixed, _, _ = self._linear_parts()
        api_r = inp.api_monthly_r
        out = np.where(inp.allowed, np.where(np.isfinite(api_r), api_r + np.nan_to_num(
            inp.fallback_share_r * inp.fallback_api_monthly[:, None]), np.inf)[:, inp.col_route], np.inf)
        out[:, cols] = fixed + res * inp.full_usd_per_gpu_hour
        return out

    def standalone_cost_row(self, i: int) -> np.ndarray:
        """standalone_cost() for one workload (C,), without building the whole matrix."""
        inp = self.inp
        if self._lin is not None:
            cols, res, fixed = self._lin[0], self._lin[1][i], self._lin[2][i]
        else:  # one row of the same terms, not the (W, C) matrices the search held
            cols, res, fixed = (x[0] if x.ndim == 2 else x for x in self._owned_terms(np.array([i]))[:3])
        api = inp.api_monthly_r[i, inp.col_route]
        fb = inp.fallback_share_r[i, inp.col_route] * inp.fallback_api_monthly[i]
        out = np.where(np.isfinite(api) & inp.allowed[i], api + np.nan_to_num(fb), np.inf)
        out[cols] = fixed + res * inp.full_usd_per_gpu_hour
        return out

    def optimise(self, start: np.ndarray | None = None, ladder: bool = True,
                 focus: np.ndarray | None = None, singles: bool = True) -> PlanCost:
        """The cheapest plan found: shadow-price candidates (and `start`, a plan known to be allowed here, such
        as the plan without a route this one may also use), then improving moves. ladder=False (with a start)
        skips the shadow-price candidates: only moves from the start.

        focus (bool per plan column, with a start that is a converged plan of the same inputs without those
        columns): while the search is still at that start, only moves onto or off a focus column are priced;
        any other move was priced from the same plan by the search that produced it and did not improve it.
        After a move is taken, small inventories (up to SINGLE_MOVE_ROWS) try every move again; large ones
        keep to the focus. singles=False: no single-workload moves above FULL_MOVE_ROWS (a re-plan that only
        needs the deployments to adjust, such as a licence fee's refinement)."""
        inp = self.inp
        W, R = inp.allowed.shape
        if W == 0 or R == 0:
            return self.price(np.full(W, -1))
        on_classes = self._optimise_classes(start, ladder, focus, singles)
        if on_classes is not None:
            return on_classes
        best: PlanCost | None = None
        if start is not None:
            first = self.price(np.asarray(start))
            best = first if first.feasible else None
        # A member that meets its target alone at its own context may miss it at batch 1 on a pool whose
        # mean context is longer (a slower step): that pairing is barred and the candidates re-chosen.
        warm = best
        others: list[PlanCost] = []
        # Each shadow price's candidate, with how many batches of pairings had been barred when it was chosen.
        chosen: dict[float, tuple[np.ndarray, int]] = {}
        for _ in range(MAX_REPAIR_ROUNDS):
            best, seen, others = warm, set(), []
            for mult in (SHADOW_PRICES if W <= LARGE_ROWS else SHADOW_PRICES_LARGE) if ladder or warm is None else ():
                p_hour = mult * self.inp.full_usd_per_gpu_hour
                if mult not in chosen:
                    assign = self._choose(p_hour)
                else:
                    # The linear view is row by row and only the barred rows' allowed columns changed: re-choose
                    # those (the whole (W x C) choice took ~0.1 s a price, 3 rounds x 7 prices at 100k workloads).
                    prev, done = chosen[mult]
                    assign = prev.copy()
                    if len(self._barred_log) > done:
                        rows = np.unique(np.concatenate(self._barred_log[done:]))
                        assign[rows] = self._choose(p_hour, rows=rows)
                chosen[mult] = (assign, len(self._barred_log))
                k = assign.tobytes()
                if k in seen:
                    continue
                seen.add(k)
                cand = self.price(assign)
                if cand.feasible:
                    others.append(cand)
                    if best is None or cand.key < best.key:
                        best = cand
            # Re-choose only when no candidate could be sized at all: a feasible best is improved by moves.
            if best is not None or not self._bar_hopeless():
                break
        if best is None:  # every candidate failed to size (should not happen): serve what can be served
            best = self.price(np.where(self.inp.allowed.any(axis=1), np.argmax(self.inp.allowed, axis=1), -1))
        at_start = start is not None and np.array_equal(best.assignment, np.asarray(start))
        moves = singles or W <= FULL_MOVE_ROWS
        found = self._improve(best, focus if at_start else None, moves)
        # The cheapest candidate is not always the one moves improve most: on generated inventories of 20-40
        # workloads, moves from another shadow price's candidate ended a whole node cheaper (docs/design/fleet_plan.md
        # "Sizing in batches; moves from several starts"). Small inventories improve the next cheapest candidates too, keep the cheapest plan.
        # Only a full search (ladder; not a re-plan from a given plan, such as a licence fee's refinement).
        restarts = focus is None and ladder and self._restarts
        if restarts and W <= MULTI_START_ROWS:
            # The candidate at the lowest shadow price (everything on owned routes: the dearest before moves, and
            # the best start on 3 of the 15 generated inventories checked), then the cheapest others.
            rest = [c for c in others if c is not best]
            for cand in (rest[:1] + sorted(rest[1:], key=lambda c: c.key))[:MULTI_STARTS]:
                end = self._improve(cand, None, moves)
                if end.key < found.key:
                    found = end
            found = self._without_stacks(found, moves, EXCLUDE_STACKS)
            found = self._from_tighter_targets(found, moves)
        elif restarts and W <= RESTART_ROWS and found.nodes_needed > self.inp.owned_nodes:
            # Up to RESTART_ROWS, one restart (each is a search of its own) where the plan buys nodes.
            found = self._without_stacks(found, moves, 1)
        if restarts and MULTI_START_ROWS < W <= DEARER_API_ROWS and found.nodes_needed > self.inp.owned_nodes:
            for scale in DEARER_APIS:
                found = self._from_dearer_apis(found, moves, scale)  # a start of another shape (its docstring)
        return found

    def _from_dearer_apis(self, found: PlanCost, moves: bool, scale: float) -> PlanCost:
        """A restart from the plan searched with every API (and escalation) `scale` times as dear, then improved
        at the real prices; the cheaper of it and `found` kept.

        A search from one start ends in one local optimum, and above 60 workloads (no multi-start) it could end
        whole nodes dearer than a plan it never visits: generated inventories of 101, 102 and 117 workloads
        (bench/bench_plan_properties.py --rows 30:150, seeds 14, 2 and 9) planned 5, 4 and 5 nodes ($123,732.66,
        $101,517.04 and $121,010.78 a month) where the same workloads at dearer API prices planned 4, 3 and 3
        ($99,686.93, $82,282.78 and $75,393.17 at the real prices). Dearer APIs lean the search towards owned
        pools of other shapes, and which one leads there differs: x1.5 found the first two, only x2.25 the
        third (docs/design/fleet_plan.md "A restart from dearer APIs"). The sub-search makes whole-pool moves only
        (its start is then polished here with every move), and it shares the sizings (prices do not enter
        them). Up to DEARER_API_ROWS: at 10,000 and 20,000 workloads x1.5 cost ~3 s for no node."""
        inp = self.inp
        sub = Planner(replace(inp, api_monthly_r=inp.api_monthly_r * scale,
                              fallback_api_monthly=inp.fallback_api_monthly * scale),
                      self._gpu_hours_month, cache=self._cache)
        sub._restarts = False
        return self._restart_from(sub.optimise(singles=False), found, moves)

    def _from_tighter_targets(self, found: PlanCost, moves: bool) -> PlanCost:
        """A restart from the plan searched with every target TIGHTER_TARGETS times as tight (one start): a
        plan that holds the tighter targets holds these, so the search should never end dearer than it. On a
        generated 18-workload inventory it did: targets x0.8 planned $24,861.01 a month against $25,129.10
        for the same workloads (bench/bench_plan_properties.py seed 43); this restart finds $24,894.24."""
        inp = self.inp
        # Its own sizing cache and standalone view: both depend on the targets.
        sub = Planner(replace(inp, slo_ms=inp.slo_ms * TIGHTER_TARGETS))
        sub._restarts = False
        return self._restart_from(sub.optimise(), found, moves)

    def _restart_from(self, other: PlanCost, found: PlanCost, moves: bool) -> PlanCost:
        """`other` (a plan of a sub-search over the same workloads) priced here and improved; the cheaper of it
        and `found`. Workloads only `found` serves keep their place: moves never take one off its route, so a
        start without it would look cheaper."""
        if not other.feasible:
            return found
        assign = np.where((other.assignment < 0) & (found.assignment >= 0), found.assignment, other.assignment)
        start = self.price(assign)
        if not start.feasible:
            return found
        end = self._improve(start, None, moves)
        return end if end.key < found.key else found

    def _without_stacks(self, found: PlanCost, moves: bool, stacks: int) -> PlanCost:
        """Restarts away from the plan's biggest pools: for each of the `stacks` owned stacks holding the most
        GPUs in it, the plan searched without that stack (one start), then improved with it allowed again;
        the cheapest kept. Every start's moves can end in the same local optimum, anchored by one big pool
        (a stack's whole node of replicas that the moves of one workload or one pool never empty); on
        generated inventories of 40-80 workloads the plan without it needed a node fewer (docs/design/fleet_plan.md
        "Sizing in batches; moves from several starts", "Restarts without a stack")."""
        inp = self.inp
        held: dict[str, int] = {}
        for pos, d in found.sizes.items():
            if d.feasible and d.gpus:
                rid = inp.owned[pos].route_id
                held[rid] = held.get(rid, 0) + d.gpus
        for rid in sorted(held, key=lambda r: (-held[r], r))[:stacks]:
            cols = np.array([o.index for o in inp.owned if o.route_id == rid], dtype=int)
            allowed = inp.allowed.copy()
            allowed[:, cols] = False
            sub = Planner(replace(inp, allowed=allowed), self._gpu_hours_month, cache=self._cache)
            sub._restarts = False
            other = sub.optimise()
            if not other.feasible:
                continue
            # Workloads only that stack could serve keep their place in the plan (a start serves every workload
            # the plan serves: moves never take one off its route, so a start without it would look cheaper).
            assign = np.where((other.assignment < 0) & (found.assignment >= 0), found.assignment, other.assignment)
            start = self.price(assign)
            if not start.feasible:
                continue
            end = self._improve(start, None, moves)
            if end.key < found.key:
                found = end
        return found

    def _optimise_classes(self, start, ladder, focus, singles=True) -> PlanCost | None:
        """The search run on workload classes (core.decision.classes), its plan priced exactly on the workloads;
        None when every workload is its own class or `start` splits a class (then the search runs on rows)."""
        from core.decision.classes import class_inputs, scale_classes

        if self._classes is None:
            found = scale_classes(self.inp)
            self._classes = (None, None) if found is None else found
        cls, first = self._classes
        if cls is None or first is None:
            return None
        class_start = None
        if start is not None:
            start = np.asarray(start)
            class_start = start[first]
            if not np.array_equal(class_start[cls], start):
                return None
        if self._sub is None:
            # Sizings of class rows are shared only between planners with the same classes (the key's row
            # numbers mean classes, and other inputs number them otherwise).
            key = ("classes", hashlib.blake2b(cls.tobytes(), digest_size=16).digest())
            shared = self._cache.setdefault(key, {})
            self._sub = Planner(class_inputs(self.inp, cls, first), cache=shared)
        sub = self._sub
        found_c = sub.optimise(start=class_start, ladder=ladder, focus=focus, singles=singles)
        # Pairings the class search found a pooled deployment cannot hold are barred for every member.
        barred = ~sub.inp.allowed[cls] & self.inp.allowed
        if barred.any():
            self._hopeless.update(zip(*(x.tolist() for x in np.nonzero(barred)), strict=True))
            self._bar_hopeless()
        priced = self.price(found_c.assignment[cls])
        if not priced.feasible:  # a pool the class rows fit and the members do not (rounding at an edge)
            return None
        return priced

    def _bar_hopeless(self) -> bool:
        """Disallow the (workload, column) pairs found hopeless while sizing; whether there were any new."""
        if not self._hopeless:
            return False
        rows, cols = np.array([p[0] for p in self._hopeless]), np.array([p[1] for p in self._hopeless])
        self._hopeless.clear()
        self._barred_log.append(rows)
        allowed = self.inp.allowed.copy()
        allowed[rows, cols] = False
        self.inp = replace(self.inp, allowed=allowed)
        self._alt_cache.clear()
        if self._lin is not None:
            # The linear terms of a barred pair are what _linear_parts gives a pair not allowed (no GPU-hours,
            # no finite cost); the rest is unchanged, so patch them instead of ~1 s of (W x C) passes at 100k.
            lin_cols, res, fixed = self._lin[0], self._lin[1], self._lin[2]
            pos = np.searchsorted(lin_cols, cols) if np.all(np.diff(lin_cols) > 0) else None
            if pos is not None and np.all(lin_cols[np.minimum(pos, lin_cols.size - 1)] == cols):
                res[rows, pos] = 0.0
                fixed[rows, pos] = np.inf
            else:
                self._lin = None
        return True

    def _standalone_gpu_hours(self) -> np.ndarray:
        """(W, R) GPU-hours a month each workload would hold on each owned route, alone on its pool."""
        inp = self.inp
        W = len(inp.workload_ids)
        out = np.full((W, inp.n_routes), np.nan)
        # The tiers of one stack at one GPU count share its service array: GPU-seconds per request at each
        # grid concurrency where the service p95 alone meets the target, computed once per shared array.
        n_out = _given(inp.output_tokens, "output_tokens")
        ratios: dict[int, np.ndarray] = {}  # the output-length p95 ratio depends on the stack's block size only
        distinct: dict[int, OwnedRoute] = {}
        for route in inp.owned:
            distinct.setdefault(id(route.service_s), route)
            blk = latency.block_tokens_of(route.stack)
            if blk not in ratios:
                given = inp.output_q_ratio or {}
                ratios[blk] = given[blk] if blk in given else latency.length_ratios(n_out, inp.output_p95_tokens, blk)[0]

        def gpu_seconds(route: OwnedRoute) -> np.ndarray:
            svc = route.service_s  # (W, G, B)
            blk = latency.block_tokens_of(route.stack)
            p95 = service_p95_alone_ms(svc, route.prefill_ms, n_out, inp.output_p95_tokens, blk, ratios[blk])
            ok = np.isfinite(svc) & (p95 <= inp.slo_ms[:, None, None])
            g = np.array(route.tp_options, dtype=float)[None, :, None]
            b = inp.concurrency_grid[None, None, :]
            return np.where(ok, svc * g / b, np.inf).min(axis=1)  # (W, B)

        from core.decision.engine import PARALLEL_ROWS

        if W >= PARALLEL_ROWS and len(distinct) > 1:
            # numpy releases the GIL on these (W, G, B) arrays: two threads use both cores of a small machine.
            with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
                per_point = dict(zip(distinct, pool.map(gpu_seconds, distinct.values()), strict=True))
        else:
            per_point = {k: gpu_seconds(route) for k, route in distinct.items()}
        for route in inp.owned:
            r = route.index
            gpu_s_b = per_point[id(route.service_s)]
            # Interactive: GPU-seconds per request at the cheapest point of the tier's band meeting the target,
            # at the peak rate (capacity is reserved for the peak all month); offline: GPU-hours used.
            band = route.band_mask(inp.concurrency_grid)
            gpu_s = gpu_s_b[:, band].min(axis=1) if band.any() else np.full(W, np.inf)
            # GPUs busy at the peak, held every hour; NaN where no point meets the target alone (not allowed).
            inter = np.where(np.isfinite(gpu_s), inp.lam_peak * np.where(np.isfinite(gpu_s), gpu_s, 0.0), np.nan) \
                * HOURS_PER_MONTH
            out[:, r] = np.where(inp.interactive, inter, inp.gpu_hours_day_r[:, route.route_index] * DAYS_PER_MONTH)
        return out

    def _improve(self, best: PlanCost, focus: np.ndarray | None = None, singles: bool = True) -> PlanCost:
        inp = self.inp
        W = len(inp.workload_ids)
        focused = focus is not None
        for _ in range(MAX_PASSES):
            improved = False
            # Whole deployments: move every member of one owned route to its next-best route.
            cols = [o.index for o in inp.owned]
            moves: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}  # from the current plan
            ahead = 0  # the routes cols[:ahead] have their moves in `moves` (sized ahead: _speculate)
            # How many moves to size ahead: after a move is taken the next is likely taken too (the licensed
            # stack's re-plan at 100,000 workloads took ~35 in a row, each after sizing 8), so one; doubled
            # up to SPECULATE_MOVES while none is. Sizing ahead only fills the cache: the same plan either way.
            span = SPECULATE_MOVES
            for k, col in enumerate(cols):
                if k >= ahead:
                    window: list[tuple[np.ndarray, np.ndarray]] = []
                    while ahead < len(cols) and len(window) < span:
                        move = moves[cols[ahead]] = self._whole_move(best, focus, cols[ahead])
                        if move is not None:
                            window.append(move)
                        ahead += 1
                    self._speculate(best, window)
                    span = min(2 * span, SPECULATE_MOVES)
                move = moves.get(col)
                if move is None:
                    continue
                cand = self._better(best, *move)
                if cand is not None:
                    best, improved = cand, True
                    # The routes still to try may have gained or lost members: their moves from the new plan.
                    moves.clear()
                    ahead = k + 1
                    span = 1
            if W <= SINGLE_MOVE_ROWS:
                merged = self._merge_pools(best, focus)
                if merged is not best:
                    best, improved = merged, True
            # A focused re-plan (a licensed stack's break-even fee) starts from a plan whose pools were already
            # thinned at the edge; its own evictions bought nothing on generated 30k inventories for ~100 sizings.
            if W > SINGLE_MOVE_ROWS and not focused:
                evicted = self._evict(best)
                if evicted is not best:
                    best, improved = evicted, True
            # Single workloads (small inventories): every allowed route, first improvement. Above FULL_MOVE_ROWS,
            # of another stack or GPU count only the top tier is tried (its pool is where most members are); the
            # other tiers of the workload's own stack and GPU count are tried too (out of a pool it holds back).
            # (Copies of one workload are one row here: the search runs on workload classes, see optimise.)
            if W <= SINGLE_MOVE_ROWS and singles:
                best, gained = self._single_moves(best, focus)
                improved |= gained
            if not focused:
                # Large inventories: a node fewer again right away. Dropping a node rarely opens a whole-deployment
                # move (at 100,000 generated workloads, passes 2-6 gained only by dropping nodes, ~0.6 s of
                # whole moves each); the next pass still tries every move, so the search ends where none helps.
                for _ in range(MAX_PASSES if W > SINGLE_MOVE_ROWS else 1):
                    fewer = self._drop_node(best)
                    if fewer is best:
                        break
                    best, improved = fewer, True
            if not improved:
                break
            if W <= SINGLE_MOVE_ROWS:
                focus = None  # the plan moved: every move is new again (small inventories afford them all)
        return best

    def _whole_move(self, best: PlanCost, focus: np.ndarray | None, col: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The move _improve tries for owned plan column `col`: (its members, each one's next-best plan column);
        None when it has no members, one of them has nowhere else to go, or it is outside the focus."""
        members = np.flatnonzero(best.assignment == col)
        if not members.size:
            return None
        # Each pass asks again for every deployment; most are unchanged since the last pass.
        alt_key = (col, members.tobytes())
        alt = self._alt_cache.get(alt_key)
        if alt is None:
            alt = self._alt_cache[alt_key] = self._choose(self.inp.full_usd_per_gpu_hour, rows=members, exclude=col)
        if (alt < 0).any():
            return None
        if focus is not None and not focus[col] and not focus[alt].any():
            return None
        return members, alt

    def _search_rank(self) -> np.ndarray:
        """Each row's place in the order the search visits rows (and breaks ties between them): by what the row
        is, never by where it sits in the inventory. The search takes the first improving move, so a row order
        is a search path: before this, shuffling the rows of a generated 12-workload inventory gave plans of
        1 and 2 nodes. Largest first by the cheapest way to serve the row alone per month, then by a hash of
        the row's plan inputs (core.decision.classes.row_hashes). Above SINGLE_MOVE_ROWS (no single moves; ties
        only between rows a node-fewer or eviction move picks): the inventory's order, not ~0.5 s of hashing
        at 100,000 workloads."""
        if self._rank is None:
            W = len(self.inp.workload_ids)
            if W > SINGLE_MOVE_ROWS:
                self._rank = np.arange(W)
            else:
                from core.decision.classes import _sig, row_hashes

                alone = self.standalone_cost().min(axis=1, initial=np.inf)
                alone = _sig(np.where(np.isfinite(alone), alone, -1.0))
                order = np.lexsort((row_hashes(self.inp), -alone))
                self._rank = np.empty(W, dtype=int)
                self._rank[order] = np.arange(W)
        return self._rank

    def _merge_pools(self, best: PlanCost, focus: np.ndarray | None) -> PlanCost:
        """The cheapest plan with one running interactive pool's members all moved into another running pool (those
        the other may not serve: to their next-best route), if it beats best; else best.

        A whole-deployment move sends each member to its own next-best route, and single moves one member at a
        time: neither merges two half-empty pools into one, which is how a plan sheds a node (on a generated
        38-workload inventory the Llama-70B x8 pool taking the x4 pool's and the Qwen3-30B pool's members saved
        one). Every ordered pair of pools is priced (sized in one batch) and the best kept; only while the plan
        needs more nodes than are owned."""
        inp = self.inp
        if best.nodes_needed <= inp.owned_nodes:
            return best  # the GPUs a merge frees are paid for already: it can save only GPU-hours, not a node
        pools = sorted(pos for pos, d in best.sizes.items() if d.feasible and d.gpus and d.n_primary)
        candidates = []
        for a, b in itertools.permutations(pools, 2):
            col_a, col_b = inp.owned[a].index, inp.owned[b].index
            if focus is not None and not (focus[col_a] or focus[col_b]):
                continue
            rows = best.sizes[a].rows[:best.sizes[a].n_primary]
            target = np.where(inp.allowed[rows, col_b], col_b, -1)
            away = target < 0
            if away.any():
                target[away] = self._choose(inp.full_usd_per_gpu_hour, rows=rows[away], exclude=[col_a, col_b])
            if away.all() or (target < 0).any():
                continue
            assign = best.assignment.copy()
            assign[rows] = target
            candidates.append(assign)
        return self._cheapest(best, candidates)

    def _single_moves(self, best: PlanCost, focus: np.ndarray | None) -> tuple[PlanCost, bool]:
        """One pass of single-workload moves, first improvement; whether one lowered the bill or GPU-hours.

        Every allowed plan column; above FULL_MOVE_ROWS, of another stack or GPU count only the top tier (its
        pool is where most members are), and the other tiers of the workload's own stack and GPU count (out
        of a pool it holds back). (Copies of one workload are one row here: see optimise's classes.)
        Pruning these moves was tried and dropped (docs/design/fleet_plan.md "Single moves"): skipping members
        whose leaving frees nothing cut 300 generated workloads from 92 s to 14 s with the same plan, but
        lost a whole node on 40 and two on 100 (the search is first-improvement, and moves that gain only
        latency open the way to later ones).
        """
        inp = self.inp
        W = len(inp.workload_ids)
        gained = False
        for i in np.argsort(self._search_rank()).tolist():
            own = self._col_group.get(int(best.assignment[i]))

            def tried(r, best, own=own, i=i):
                if r == best.assignment[i]:
                    return False
                if W > FULL_MOVE_ROWS and r in self._col_group and r not in self._top_cols \
                        and self._col_group[int(r)] != own:
                    return False
                return focus is None or bool(focus[r]) or bool(focus[best.assignment[i]])

            targets = np.flatnonzero(inp.allowed[i])
            # Every move of this row sized in one batch (few are taken: on 100 generated workloads sizing them
            # SPECULATE_MOVES at a time took 1.6x as long); after a move is taken, the rest from the new plan.
            self._speculate(best, [(i, t) for t in targets if tried(t, best)])
            for k, r in enumerate(targets):
                if not tried(r, best):
                    continue
                cand = self._better(best, np.array([i]), r)
                if cand is not None:
                    # Another pass only after a gain in the bill or GPU-hours (small inventories: any gain): on
                    # 300 generated workloads the last two of six passes moved members for latency alone.
                    gained |= W <= FULL_MOVE_ROWS or cand.key[:2] < best.key[:2]
                    best = cand
                    self._speculate(best, [(i, t) for t in targets[k + 1:] if tried(t, best)])
        return best, gained

    def _speculate(self, best: PlanCost, moves) -> None:
        """Size in one batch what the moves (rows, target) from `best` about to be tried will ask for. Only the
        cache is filled: the search prices each move as before, so a move taken midway wastes the rest."""
        assigns = []
        for rows, target in moves:
            assign = best.assignment.copy()
            assign[rows] = target
            assigns.append(assign)
        if len(assigns) > 1:
            self.prefetch_plans(assigns, best)

    def _drop_node(self, best: PlanCost) -> PlanCost:
        """A plan with a bought node fewer, if one is cheaper. Two kinds of move free a node's worth of GPUs:
        whole interactive pools emptied into the pools still running or an API, and the owned workloads holding
        the most GPUs per dollar of their cheapest API moved there.

        The bill steps by whole nodes, and moves of one workload or one deployment rarely free a whole one:
        on generated inventories of 40-400 workloads, search paths that differed in one move ended a node
        apart (docs/design/fleet_plan.md "A move that aims at a node fewer"). Pools: each that alone frees enough
        (up to DROP_NODE_POOLS), the smallest pairs that do, the smallest ones together. Workloads: each one's
        GPUs are its share (by offered load at the peak) of its pool's, or its offline GPU-hours a day / 24,
        moved in sets freeing DROP_NODE_MARGINS times the GPUs the node fewer needs. Each candidate is priced
        exactly and the cheapest that beats the plan is kept. Nodes already owned are paid for: only a plan needing
        more than those is looked at.
        """
        inp = self.inp
        if best.nodes_needed <= inp.owned_nodes:
            return best
        W = len(inp.workload_ids)
        a = best.assignment
        api_col, api_best = self._linear_parts()[3:5]
        held = np.zeros(W)
        inter_gpus = 0
        for d in best.sizes.values():
            if not d.feasible:
                return best
            inter_gpus += d.gpus
            if d.n_primary and d.gpus:
                held[d.rows[:d.n_primary]] += d.gpus * d.load_shares(inp.lam_peak)[:d.n_primary]
        on_owned = np.isin(a, self._owned_cols)
        off = np.flatnonzero(on_owned & ~inp.interactive)
        held[off] = inp.gpu_hours_day_r[off, inp.col_route[a[off]]] / 24.0
        movable = np.flatnonzero(on_owned & np.isfinite(api_best) & (api_col >= 0) & (held > 0))
        if not movable.size:
            return best
        gpn = inp.gpus_per_node
        need = inter_gpus - (best.nodes_needed - 1) * gpn
        if best.nodes_offline_extra or need <= 0:
            need = max(need, gpn)
        candidates = []

        # Whole pools emptied into the pools still running (their slack is free) or an API: each pool that alone
        # frees enough, the pairs of smaller ones that do (the smallest pairs first), the smallest pools together.
        pools = sorted((d.gpus, pos) for pos, d in best.sizes.items() if d.gpus and d.n_primary)
        # Interactive pools with replicas: joining one may fit in its slack, opening a new one never frees GPUs.
        running = np.array([inp.owned[pos].index for pos, d in best.sizes.items() if d.gpus], dtype=int)
        idle_cols = np.setdiff1d(self._owned_cols, running)
        sets = [[pos] for g, pos in pools if g >= need][:DROP_NODE_POOLS]
        small = [(g, pos) for g, pos in pools if g < need]
        sets += [[p1, p2] for _, p1, p2 in sorted((g1 + g2, p1, p2) for (g1, p1), (g2, p2)
                                                  in itertools.combinations(small, 2) if g1 + g2 >= need)
                 ][:DROP_NODE_POOLS]
        acc: list[int] = []
        for _g, pos in pools:
            acc.append(pos)
            if sum(best.sizes[p].gpus for p in acc) >= need:
                if len(acc) > 1:
                    sets.append(list(acc))
                break
        for chosen in sets:
            gone = np.array([inp.owned[p].index for p in chosen], dtype=int)
            # Its interactive members (offline work there fills idle hours; it holds no replicas).
            rows = np.sort(np.concatenate([best.sizes[p].rows[:best.sizes[p].n_primary] for p in chosen]))
            target = self._choose(0.0, rows=rows, exclude=np.r_[gone, idle_cols])
            if rows.size and (target >= 0).all():
                assign = a.copy()
                assign[rows] = target
                candidates.append(assign)
        # The members holding the most GPUs per dollar of their cheapest API, moved there.
        order = movable[np.lexsort((self._search_rank()[movable], api_best[movable] / held[movable]))]
        freed = np.cumsum(held[order])
        for m in DROP_NODE_MARGINS:
            k = int(np.searchsorted(freed, need * m - 1e-9)) + 1
            candidates.append(np.where(np.isin(self._rows, order[:k]), api_col, a))
            if k >= order.size:
                break
        return self._cheapest(best, candidates)

    def _cheapest(self, best: PlanCost, candidates: list[np.ndarray]) -> PlanCost:
        """The cheapest of these assignments (moves from best, sized in one batch) if it beats best; else best."""
        self.prefetch_plans(candidates, best)
        winner = best
        for assign in candidates:
            cand = self.price(assign, base=best)
            if cand.feasible and cand.key < winner.key:
                winner = cand
        return winner

    def _better(self, best: PlanCost, rows: np.ndarray, target) -> PlanCost | None:
        """best with `rows` moved to `target` (a plan column, or one per row), priced from best; None unless
        it beats best."""
        assign = best.assignment.copy()
        assign[rows] = target
        cand = self.price(assign, base=best)
        return cand if cand.feasible and cand.key < best.key else None

    def _evict(self, best: PlanCost) -> PlanCost:
        """Move the members at the edge of their target out of the deployments holding the most GPUs.

        A pool is sized so that its most demanding member meets its target. A member whose target sits at
        the edge of what the hardware does alone (service p95 at batch 1 close to the target) leaves no room
        to wait or to batch, so a big pool keeps most replicas idle for it (a pool at 4x its offered load for
        a few workloads at 0.2 requests/s each); on a small pool of their own (the edge pool beside the
        latency tier) such members need a few replicas. Per deployment the k members closest to the edge
        (k = 1, 2, 4, ...) are moved to the edge pool, or to their next-best route, and each result priced
        exactly; the cheapest is kept while the bill falls. Large inventories only: up to SINGLE_MOVE_ROWS
        workloads the single moves already try every member on every route. The budget (EVICT_PRICINGS
        exact pricings per search) is a count, not a clock, so the plan does not depend on the machine.
        """
        inp = self.inp
        full = inp.full_usd_per_gpu_hour
        looked: set[int] = set()
        while self._evict_budget > 0:
            moved = False
            for pos, d in sorted(best.sizes.items(), key=lambda kv: -kv[1].gpus)[:EVICT_DEPLOYMENTS]:
                if pos in looked or not d.feasible or d.replicas <= 1 or d.n_primary < 2:
                    continue
                looked.add(pos)
                route = inp.owned[pos]
                prim = d.rows[:d.n_primary]
                blk = latency.block_tokens_of(route.stack)
                q_all = (inp.output_q_ratio or {}).get(blk)
                p95_alone = service_p95_alone_ms(
                    route.service_s[prim][:, :, :1], _given(route.prefill_ms, "prefill_ms")[prim],
                    _given(inp.output_tokens, "output_tokens")[prim],
                    None if inp.output_p95_tokens is None else inp.output_p95_tokens[prim], blk,
                    None if q_all is None else q_all[prim])[:, 0, 0]
                order = prim[np.lexsort((self._search_rank()[prim], -(p95_alone / inp.slo_ms[prim])))]
                edge = self._edge_of.get(route.index)
                candidates: list[np.ndarray] = []
                for k in EVICT_GROUPS:
                    if k >= prim.size or len(candidates) >= self._evict_budget:
                        break
                    out = order[:k]
                    target = self._choose(full, rows=out, exclude=route.index)
                    if edge is not None:
                        target = np.where(inp.allowed[out, edge], edge, target)
                    if (target < 0).any():
                        continue
                    cand_assign = best.assignment.copy()
                    cand_assign[out] = target
                    candidates.append(cand_assign)
                self._evict_budget -= len(candidates)
                winner = self._cheapest(best, candidates)
                if winner is not best:
                    best, moved = winner, True
                    looked.discard(pos)  # its next members at the edge may be worth moving too
                    break  # the sizes changed: look at the biggest deployments again
            if not moved:
                break
        return best


def service_p95_alone_ms(service_s: np.ndarray, prefill_ms: np.ndarray | None, output_tokens: np.ndarray,
                         output_p95_tokens: np.ndarray | None, block_tokens: int = 1,
                         q_ratio: np.ndarray | None = None) -> np.ndarray:
    """(W, G, B) p95 of each workload's service alone at each grid concurrency, ms: the decode part scaled by
    its output length's p95 over the length the physics timed (latency.length_ratios: the latency model's
    lognormal, in whole blocks for diffusion), the prefill as it is. q_ratio: that ratio, if already computed
    for these workloads and this block size."""
    if q_ratio is None:
        q_ratio = latency.length_ratios(output_tokens, output_p95_tokens, block_tokens)[0]
    pre = np.nan_to_num(prefill_ms, nan=0.0)[:, None, None] if prefill_ms is not None else 0.0
    return pre + (service_s * 1e3 - pre) * q_ratio[:, None, None]


def pack_nodes(replicas: list[tuple[int, int]], gpus_per_node: int) -> int:
    """Whole nodes holding every replica: first-fit decreasing (exact when replica sizes divide the node)."""
    sizes = sorted(((g, n) for g, n in replicas if n > 0), reverse=True)
    if not sizes:
        return 0
    if all(gpus_per_node % g == 0 for g, _ in sizes):
        return int(np.ceil(sum(g * n for g, n in sizes) / gpus_per_node - 1e-9))
    free: list[int] = []
    for g, n in sizes:
        for _ in range(int(n)):
            for k, room in enumerate(free):
                if room >= g:
                    free[k] -= g
                    break
            else:
                free.append(gpus_per_node - g)
    return len(free)


def fill_idle(busy: np.ndarray, capacity: float, gpu_hours: float) -> np.ndarray:
    """Water-fill offline GPU-hours into the quietest hours: raise them to a common level, never above capacity.

    This spreads an overnight queue over the night instead of piling it into one
    hour; what does not fit below capacity is left over (it needs more nodes).
    """
    room = np.maximum(capacity - busy, 0.0)
    if gpu_hours <= 0 or room.sum() <= 0:
        return np.zeros_like(busy)
    if gpu_hours >= room.sum():
        return room
    # The level in closed form (the search calls this for every plan it prices): raising the k quietest
    # hours b_1 <= ... <= b_k to L takes sum(L - b_i) = gpu_hours, so L_k = (gpu_hours + b_1 + ... + b_k) / k,
    # and the answer is the first k whose level stays at or below the next hour b_(k+1).
    b = np.sort(np.minimum(busy, capacity))
    levels = (gpu_hours + np.cumsum(b)) / np.arange(1, b.size + 1)
    k = int(np.argmax(levels <= np.r_[b[1:], np.inf]))
    level = min(float(levels[k]), float(capacity))
    return np.minimum(np.maximum(level - busy, 0.0), room)


def _nan_to_num(x: np.ndarray, nan: float = 0.0) -> np.ndarray:
    """np.nan_to_num(x, nan=nan) (infinities to the largest finite floats) in two passes over x instead of
    seven: the search's linear terms are (workloads x plan columns) arrays of ~13M values at 100k workloads."""
    big = np.finfo(float).max
    return np.where(np.isnan(x), nan, np.clip(x, -big, big))


def _binding_candidates(slack_ms, mu, sigma, escalates, primary) -> np.ndarray:
    """Member rows that can be the one missing its target first (indices, ascending).

    P(wait + a + c N > target) grows as the slack target - prefill shrinks and as N grows
    stochastically (larger mu at the same sigma), and with the escalated share and its extra
    latency. So among primary rows with the same sigma and no escalation only the Pareto front
    of (small slack, large mu) can bind; rows that escalate are all kept; escalated-in rows
    (load only) never bind.
    """
    idx = np.flatnonzero(primary & ~escalates)
    keep = [np.flatnonzero(primary & escalates)]
    if idx.size:
        order = idx[np.lexsort((-mu[idx], slack_ms[idx], sigma[idx]))]
        s, m = sigma[order], mu[order]
        first = np.r_[True, s[1:] != s[:-1]]
        group = np.cumsum(first) - 1
        span = float(m.max() - m.min()) + 2.0
        # Offsetting each sigma group above the previous makes one running maximum serve every group.
        shifted = (m - m.min() + 1.0) + group * span
        before = np.r_[-np.inf, np.maximum.accumulate(shifted)[:-1]]
        keep.append(order[first | (shifted > before)])
    return np.sort(np.concatenate(keep))
