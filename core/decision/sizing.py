"""Sizing one pooled deployment: the plan's inputs, the latency model's replicas and cap per pool, cached by members.

The fleet plan (core.decision.plan) is three jobs: this module sizes deployments (the concurrency cap and
replicas needing the fewest GPUs such that every member meets its own latency target, on the exact latency
tier of core.decision.latency), core.decision.pricing prices an assignment exactly from those sizings, and
core.decision.search looks for the cheapest assignment. Sizings are cached on (route, members, shares,
targets), so planners over the same owned routes share them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from core.decision import latency
from core.decision import settings as settings_mod
from core.decision.settings import SearchSettings

# Concurrency tiers of one stack at one GPU count: (lowest, highest) concurrency cap per replica. One pool holds
# every member to the tightest target among them, so one member that needs batch 2 would otherwise force a
# pool of hundreds of loose ones to cap 2 (and 10x the replicas); a tier per band lets the search keep the
# tight members on low-batch replicas of the same model while the rest run at high batch, as operators run a
# latency pool beside a throughput pool. Offline work uses the top tier (its batch is sized by the engine).
CAP_BANDS = ((1, 4), (8, 32), (64, 1 << 30))
_FMAX = float(np.finfo(float).max)
# Beside a latency tier the plan may run one more low-batch pool for members whose target sits at the edge of
# what the hardware does alone: in a big pool such a member needs nearly every replica idle (hundreds of
# surplus GPUs), on a pool of its own a few (Planner._evict moves them there when the bill falls).
EDGE_TIER = len(CAP_BANDS)
TIER_NAMES = ("latency tier", "middle tier", "throughput tier", "edge pool")
# Target given to requests escalated onto a deployment: they load its queue, their own target is held on the
# deployment that served them first (finite, so the latency model's arithmetic stays finite).
_LOAD_ONLY_SLO_MS = 1e12


# Sizings shared by every planner made inside shared_sizings(): plans of the same workloads and routes that differ
# only in targets, policies or licence fees (the smallest change's re-plans), keyed by what the sizing reads.
_SHARED: ContextVar[dict | None] = ContextVar("shared_sizings", default=None)


@contextmanager
def shared_sizings(store: dict) -> Iterator[None]:
    """Planners made inside share sizings through `store`, keyed by content (Sizer._shared_key): a pool of the
    same members with the same inputs on the same stack, GPU count and tier is sized once across plans. Only for
    plans of one catalog's physics and one scenario (the step curves are not in the key)."""
    token = _SHARED.set(store)
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared_store() -> dict | None:
    """The store of the shared_sizings block this runs in (None: none)."""
    return _SHARED.get()


# The reductions the array methods .sum() and .any() call, without their Python wrapper (~1 us a call, several
# per sizing): the same values.
_SUM = np.add.reduce
_ANY = np.logical_or.reduce


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
    _curves: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # step_curve_ms's, per cap

    def band_mask(self, grid: np.ndarray) -> np.ndarray:
        """Which grid concurrencies this column's deployment may use as its cap."""
        return (grid >= self.cap_lo) & (grid <= self.cap_hi)

    def step_curve_ms(self, context_tokens: float, max_batch: int) -> np.ndarray:
        """One decode step at running batch b = 1..max_batch with this mean context (physics; what does not
        depend on the context computed once per max_batch: ~5 % of a 300-workload plan's CPU otherwise)."""
        curve = self._curves.get(max_batch)
        if curve is None:
            from core.performance import physics

            b = np.arange(1, max_batch + 1, dtype=float)
            curve = self._curves[max_batch] = physics.decode_step_curve(self.stack, self.gpu, self.tp_options[0], b,
                                                                        self.eff)
        return np.asarray(curve(context_tokens), dtype=float)


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
    sla_tail: float = latency.SLO_TAIL  # 1 - the percentile the targets refer to (Scenario.sla_percentile)
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



# Sizer._physics_of's texts by the parts they are made of (equal parts, equal text). The smallest change's re-plans
# and a search's restarts each make new sizers over the same columns: a text is ~20 us of repr each time.
_PHYSICS_TEXT: dict[tuple, str] = {}
_PHYSICS_TEXT_MAX = 4096


@dataclass(frozen=True)
class _PoolLoad:
    """One deployment's part of a load built for several (_size_loads): its traffic sums (one configuration)
    and its members' output-length lognormals, as _size_finish reads them."""

    moments: Any  # latency.chain._Moments of one configuration
    output_mu: np.ndarray
    output_sigma: np.ndarray
    row_block_tokens: np.ndarray

    @classmethod
    def of(cls, load: latency.PooledDeployments, k: int, lo: int, hi: int) -> _PoolLoad:
        m = load.moments
        return cls(type(m)(*(getattr(m, f)[k:k + 1] for f in ("lam", "pre", "pre2", "n", "pre_n", "n2"))),
                   load.output_mu[lo:hi], load.output_sigma[lo:hi], load.row_block_tokens[lo:hi])


class Sizer:
    """Sizes pooled deployments on the latency model, with a cache of sizings (the planner's first job)."""

    def __init__(self, inp: PlanInputs, cache: dict[tuple, Any] | None = None,
                 settings: SearchSettings | None = None):
        self.inp = inp
        # What steers the search (core.decision.settings); without one, the record the entry points use now.
        self.settings = settings if settings is not None else settings_mod.current()
        # Sizings depend on the owned routes' physics and the members only, so planners over the same owned
        # routes (the licensed-route and fleet-option re-plans) may share them.
        # (DeploymentSize by sizing key; and the class planners' own caches, under ("classes", digest))
        self._cache: dict[tuple, Any] = {} if cache is None else cache
        self._hopeless: set[tuple[int, int]] = set()  # (row, plan column) found unable to meet the target there
        self._raised: dict[tuple, int] = {}  # sizing key -> replicas the plan's simulation check added (closeloop)
        self._moments_by_block: dict[float, tuple[np.ndarray, ...]] = {}  # _output_moments
        # Sizings made ahead in a batch (prefetch), with the hopeless pairings each found: size() takes them.
        self._prefetched: dict[tuple, tuple[DeploymentSize, list[tuple[int, int]]]] = {}
        self._shared = _SHARED.get()  # shared_sizings: across plans, by content
        self._sig: dict[int, np.ndarray] = {}  # owned position -> (W, k) per-row inputs of its sizings
        self._physics: dict[int, str] = {}  # owned position -> what its step curve and tail are made of
        self._prefill0: dict[int, np.ndarray] = {}  # owned position -> its prefill ms per row, NaN as 0

    def size(self, pos: int, rows: np.ndarray, shares: np.ndarray, slo_ms: np.ndarray | None = None,
             n_primary: int | None = None) -> DeploymentSize:
        """Size one deployment on the latency model: the concurrency cap and replicas needing the fewest GPUs
        such that every primary member's p95 of time in system (wait + service, its escalated requests
        inside the same tail, inp.sla_tail) meets its own target (docs/design/latency_model.md).

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
            skey = self._shared_key(pos, rows, shares, slo, n_primary) if self._shared is not None else None
            done = self._from_shared(pos, skey)
            if done is None:
                done = self._size_many([(pos, rows, shares, slo, n_primary)])[0]
                self._to_shared(skey, done)
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
            # The shared key made once, for the lookup and the store after sizing (a digest of the members).
            skey = self._shared_key(pos, rows, shares, slo, n_primary) if self._shared is not None else None
            shared = self._from_shared(pos, skey)
            if shared is not None:
                self._prefetched[key] = shared
                continue
            todo.append((key, skey, (pos, rows, shares, slo, n_primary)))
        if len(todo) < 2:
            return  # one sizing: size() makes it when asked (the same call)
        for (key, skey, _), done in zip(todo, self._size_many([q for _, _, q in todo]), strict=True):
            self._prefetched[key] = done
            self._to_shared(skey, done)

    def _shared_key(self, pos, rows, shares, slo, n_primary) -> tuple:
        """What a sizing reads, as a key valid across plans of one catalog and scenario: the column's stack, GPU
        count and tier, the members, their shares and targets, and every per-row input of the latency model."""
        inp, o = self.inp, self.inp.owned[pos]
        sig = self._sig.get(pos)
        if sig is None:
            n = len(inp.workload_ids)

            def col(a: np.ndarray | None) -> np.ndarray:
                return np.full((n, 1), np.nan) if a is None else np.asarray(a, dtype=float).reshape(n, -1)

            sig = np.ascontiguousarray(np.hstack([
                col(inp.lam_peak), col(inp.lam_mean), col(inp.profile), col(o.prefill_ms), col(inp.input_tokens),
                col(inp.output_tokens), col(inp.output_p95_tokens), col(inp.fallback_route >= 0),
                col(inp.fallback_share_r[:, o.route_index]), col(inp.fallback_extra_ms),
                col(o.service_s[:, 0, :])]))
            self._sig[pos] = sig
        # The members' part as a 128-bit digest, not the bytes themselves (a few KB a pool: 131 MB of keys for the
        # 23,000 pools one 300-workload evaluation sizes); the count of members fixes where each part ends.
        members = hashlib.blake2b(rows.tobytes(), digest_size=16)
        members.update(shares.tobytes())
        members.update(np.asarray(slo, dtype=float).tobytes())
        members.update(sig[rows].tobytes())
        return ((o.route_index, o.tp_options[0], o.cap_lo, o.cap_hi, o.edge, self._physics_of(pos)), len(rows),
                int(n_primary), members.digest())

    def _physics_of(self, pos: int) -> str:
        """What owned column `pos`'s sizings read beside the members' rows: the stack (but its licence fee), the
        GPU, the efficiencies its step curve is made with, its decode steps per token and the tail the targets
        refer to. In the shared key, so plans of another efficiency end or another scenario sharing one store
        (engine.evaluate keeps one per catalog and scenario) never take each other's sizings."""
        got = self._physics.get(pos)
        if got is None:
            o = self.inp.owned[pos]
            key = (o.stack, o.gpu, o.tp_options, o.eff, o.steps_per_token, self.inp.sla_tail)
            hashable = True
            try:  # the same parts give the same text: made once per process, not once per sizer (a plan's each)
                got = _PHYSICS_TEXT.get(key)
            except TypeError:  # a part that cannot be hashed: made here each time
                hashable = False
            if got is None:
                stack = o.stack.model_copy(update={"licence_usd_per_gpu_month": 0.0}) \
                    if hasattr(o.stack, "model_copy") else o.stack
                got = repr((stack, *key[1:]))
                if hashable:
                    if len(_PHYSICS_TEXT) >= _PHYSICS_TEXT_MAX:
                        _PHYSICS_TEXT.clear()
                    _PHYSICS_TEXT[key] = got
            self._physics[pos] = got
        return got

    def _from_shared(self, pos, skey) -> tuple[DeploymentSize, list[tuple[int, int]]] | None:
        """A sizing another plan made of the same pool (shared_sizings; skey its _shared_key), as this plan's;
        None: not made yet (or no shared store: skey None)."""
        if skey is None or self._shared is None:
            return None
        got = self._shared.get(skey)
        if got is None:
            return None
        res, hopeless_rows = got
        col = int(self.inp.owned[pos].index)
        return (res if res.route == pos else replace(res, route=pos)), [(r, col) for r in hopeless_rows]

    def _to_shared(self, skey, done) -> None:
        if skey is not None and self._shared is not None:
            res, hopeless = done
            self._shared[skey] = (res, [r for r, _ in hopeless])

    def _model(self, pos, rows, shares, slo, n_primary, b_max) -> dict:
        """The latency model's inputs for these members on owned column `pos` (what the simulation replays too)."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)
        lam = inp.lam_peak[rows] * shares
        prefill = self._prefill_or_zero(pos)[rows]
        n_out = _given(inp.output_tokens, "output_tokens")[rows]
        primary = np.arange(n) < n_primary
        esc_share = np.where(primary & (inp.fallback_route[rows] >= 0), inp.fallback_share_r[rows, route.route_index], 0.0)
        esc_extra = np.where(esc_share > 0, _given(inp.fallback_extra_ms, "fallback_extra_ms")[rows], 0.0)
        # One step curve per deployment, at the members' mean context weighted by the time each spends in
        # the batch (rate x output tokens): KV reads grow with the contexts actually running.
        ctx = _given(inp.input_tokens, "input_tokens")[rows] + 0.5 * n_out
        occ = lam * n_out
        occ_sum = _SUM(occ)
        context = float(_SUM(occ * ctx) / occ_sum) if occ_sum > 0 else float(ctx.mean() if n else 0.0)
        return {
            "n_primary": n_primary, "arrival_rate_per_s": lam, "prefill_ms": prefill, "output_mean_tokens": n_out,
            "output_p95_tokens": _given(inp.output_p95_tokens, "output_p95_tokens")[rows],
            # Escalated rows only load the queue: a target far out of reach of any miss.
            "slo_ms": np.where(primary, slo, _LOAD_ONLY_SLO_MS),
            "escalated_share": esc_share, "escalated_extra_ms": esc_extra,
            "step_ms": route.step_curve_ms(context, b_max), "steps_per_token": route.steps_per_token,
            "block_tokens": latency.block_tokens_of(route.stack),
            "context_tokens": context, "sla_tail": inp.sla_tail,
        }

    def _prefill_or_zero(self, pos: int) -> np.ndarray:
        """Owned column `pos`'s prefill ms per row, 0 where none (once per column, not per sizing: np.nan_to_num
        was ~2 % of a 100-workload plan's CPU)."""
        got = self._prefill0.get(pos)
        if got is None:
            got = self._prefill0[pos] = np.nan_to_num(_given(self.inp.owned[pos].prefill_ms, "prefill_ms"), nan=0.0)
        return got

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
        """Size deployments (pos, rows, shares, slo, n_primary): one build of their loads, one
        latency.min_replicas call and one pooled_state call for all of them. Per deployment its size and the
        (row, plan column) pairings found hopeless (a member whose service alone misses its target there)."""
        out: list[Any] = [None] * len(requests)
        pending = []
        for k, req in enumerate(requests):
            prep = self._size_prepare(*req)
            if isinstance(prep, DeploymentSize):
                out[k] = (prep, [])
            else:
                pending.append((k, prep))
        if pending:
            dep, finishes = self._size_loads([prep for _, prep in pending])
            sizing = latency.min_replicas(dep, binding_rows=False)
            reps = sizing.replicas.astype(float)
            # A pool's size is its cap with the fewest replicas (then the lowest mean latency): only those caps'
            # queues are solved.
            fewest = np.zeros(len(reps), dtype=bool)
            at = 0
            for _, caps_n in finishes:
                r_d = reps[at:at + caps_n]
                if _ANY(r_d >= 1):
                    fewest[at:at + caps_n] = r_d == r_d[r_d >= 1].min()
                at += caps_n
            st = latency.pooled_state(dep, np.where(reps >= 1, reps, 1.0), only=fewest)
            at = 0
            for (k, _), (finish, caps_n) in zip(pending, finishes, strict=True):
                sl = slice(at, at + caps_n)
                out[k] = finish(reps[sl], sizing.service_tail_misses[sl], st.take(at, at + caps_n))
                at += caps_n
        return out

    def _size_prepare(self, pos, rows, shares, slo, n_primary):
        """A deployment's size where no queue needs solving (nothing fits, no traffic), else what its load is
        built from (_size_loads): (pos, rows, shares, n_primary, the candidate caps' grid indices, the latency
        model's inputs)."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)
        svc = route.service_s[rows][:, 0, :]  # (n, B) mean seconds at each grid concurrency (NaN: does not fit)
        grid = inp.concurrency_grid
        fits = np.all(np.isfinite(svc), axis=0) if n else np.ones(len(grid), bool)
        band = route.band_mask(grid)
        if _ANY(fits & band):
            fits &= band
        else:
            # Members that each fit in the tier but not all at once (their contexts add up): the largest cap
            # below the tier that holds them all, so a tier never makes a servable pool unservable.
            below = np.flatnonzero(fits & (grid < route.cap_lo))
            fits = np.zeros_like(fits)
            fits[below[-1:]] = True
        if not _ANY(fits):
            return self._infeasible(pos, rows, shares, n_primary)
        caps_j = np.flatnonzero(fits)
        parts = self._model(pos, rows, shares, slo, n_primary, int(grid[caps_j[-1]]))
        if float(_SUM(parts["arrival_rate_per_s"])) <= 0:
            # No traffic: nothing to reserve (the route still reports an operating point).
            bi = int(caps_j[-1])
            return DeploymentSize(pos, rows, shares, True, int(route.tp_options[0]), int(grid[bi]), 0,
                                  np.full(n, np.nan), np.full(n, np.nan), np.zeros(24), 0.0, 0.0, -1, n_primary)
        return pos, rows, shares, n_primary, caps_j, parts

    def _infeasible(self, pos, rows, shares, n_primary) -> DeploymentSize:
        """The size of a deployment no cap can serve."""
        n = len(rows)
        return DeploymentSize(pos, rows, shares, False, 0, 0, 0, np.full(n, np.nan), np.full(n, np.nan),
                              n_primary=n_primary)

    def _size_loads(self, preps) -> tuple[latency.PooledDeployments, list[tuple[Any, int]]]:
        """The candidate caps' configurations of these deployments for min_replicas (each checking only its
        members that can bind), and per deployment (a function of its replicas, tail misses and state giving the
        size and the hopeless pairings, its number of caps). Every deployment's load is one configuration of
        one PooledDeployments.build: a build per deployment was ~90 us of numpy's per-call cost, ~6 a batch;
        each configuration's sums run over its own members in their order, as in a build of its own."""
        inp = self.inp
        grid = inp.concurrency_grid
        ns = [len(rows) for _, rows, _, _, _, _ in preps]
        width = max(len(parts["step_ms"]) for *_, parts in preps)
        step = np.full((len(preps), width), np.nan)
        for k, (*_, parts) in enumerate(preps):
            step[k, :len(parts["step_ms"])] = parts["step_ms"]
        moments = [tuple(x[rows] for x in self._output_moments(parts["block_tokens"]))
                   for _, rows, _, _, _, parts in preps]

        def cat(name):
            return np.concatenate([parts[name] for *_, parts in preps]) if len(preps) > 1 else preps[0][5][name]

        load = latency.PooledDeployments.build(
            row=np.repeat(np.arange(len(preps), dtype=np.int64), ns), arrival_rate_per_s=cat("arrival_rate_per_s"),
            prefill_ms=cat("prefill_ms"), output_mean_tokens=cat("output_mean_tokens"),
            output_p95_tokens=cat("output_p95_tokens"), slo_ms=cat("slo_ms"), step_ms=step,
            concurrency_cap=np.array([grid[caps_j[-1]] for *_, caps_j, _ in preps], dtype=np.int64),
            escalated_share=cat("escalated_share"), escalated_extra_ms=cat("escalated_extra_ms"),
            steps_per_token=np.array([parts["steps_per_token"] for *_, parts in preps], dtype=float),
            block_tokens=np.array([parts["block_tokens"] for *_, parts in preps], dtype=float),
            row_moments=tuple(np.concatenate([m[f] for m in moments]) for f in range(4)), tail=inp.sla_tail)
        picks, finishes = [], []
        at = 0
        for k, (pos, rows, shares, n_primary, caps_j, parts) in enumerate(preps):
            n = ns[k]
            mine = _PoolLoad.of(load, k, at, at + n)
            primary = np.arange(n) < n_primary
            check = _binding_candidates(parts["slo_ms"] - parts["prefill_ms"], mine.output_mu, mine.output_sigma,
                                        parts["escalated_share"] > 0, primary)
            caps = grid[caps_j].astype(np.int64)
            picks.append((k, at + check, caps))
            finishes.append((self._finisher(pos, rows, shares, n_primary, parts, mine, caps), caps.size))
            at += n
        return load.at_caps_many(picks), finishes

    def _finisher(self, pos, rows, shares, n_primary, parts, load: _PoolLoad, caps):
        """finish(replicas per cap, tail misses per cap, state per cap) -> (size, hopeless pairings)."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)

        def finish(reps, tail_misses, st):
            ok = reps >= 1
            if not _ANY(ok):
                hopeless = []
                if tail_misses.all():
                    # The step curve (hence the batch-1 service) is the same for every cap: name the members whose
                    # service alone misses here, so the search stops pairing them with this column.
                    prefill, slo_eff = parts["prefill_ms"], parts["slo_ms"]
                    esc_share, esc_extra = parts["escalated_share"], parts["escalated_extra_ms"]
                    alone = latency.ServiceTime(prefill, np.full(n, parts["steps_per_token"] * parts["step_ms"][0]),
                                                load.output_mu, load.output_sigma, load.row_block_tokens)
                    p_alone = (1.0 - esc_share) * alone.survival(slo_eff) \
                        + esc_share * alone.survival(slo_eff - esc_extra)
                    primary = np.arange(n) < n_primary
                    lam = parts["arrival_rate_per_s"]
                    hopeless = [(int(rows[i]), int(route.index))
                                for i in np.flatnonzero(primary & (p_alone > inp.sla_tail) & (lam > 0))]
                return self._infeasible(pos, rows, shares, n_primary), hopeless
            return self._size_finish(pos, rows, shares, n_primary, parts, load, caps, reps, st), []

        return finish

    def _size_finish(self, pos, rows, shares, n_primary, parts, load, caps, reps, st) -> DeploymentSize:
        """The size at the cap needing the fewest GPUs (then the lowest mean latency), from every cap's replicas
        and queue state."""
        inp, route = self.inp, self.inp.owned[pos]
        n = len(rows)
        lam = inp.lam_peak[rows] * shares
        g = int(route.tp_options[0])
        total = float(_SUM(lam))
        prefill, n_out, p95_out = parts["prefill_ms"], parts["output_mean_tokens"], parts["output_p95_tokens"]
        esc_share, esc_extra, slo_eff = parts["escalated_share"], parts["escalated_extra_ms"], parts["slo_ms"]
        step, spt, blk = parts["step_ms"], parts["steps_per_token"], parts["block_tokens"]
        ok = reps >= 1
        # Mean time in system of the whole traffic per candidate cap (closed form from the load's sums):
        # free slot: p + join + c E N at the typical batch; waited: + 1/theta, at the full batch.
        # (No np.errstate, ~25 us, around it: the wait's 1/theta is 0 where theta is not positive by dividing by
        # inf there, and the mixture runs under one only where a term is infinite, 0 x inf giving NaN as before.)
        m = load.moments
        theta = st.wait_rate_per_ms
        free = m.pre[0] + m.lam[0] * st.join_ms + st.ms_per_token * m.n[0]
        waited = m.pre[0] + m.lam[0] * st.full_join_ms + st.waited_ms_per_token * m.n[0] \
            + m.lam[0] / np.where(theta > 0, theta, np.inf)
        infinite = _ANY(np.isinf(free)) or _ANY(np.isinf(waited))
        with np.errstate(invalid="ignore") if infinite else nullcontext():
            lat = (1.0 - st.p_wait) * free + st.p_wait * waited + float(_SUM(lam * esc_share * esc_extra))
        gpus = np.where(ok, reps * g, np.inf)
        # np.nan_to_num(lat, nan=np.inf)'s values (infinities to the largest float, then NaN to inf) in two calls.
        best = int(np.lexsort((np.where(np.isnan(lat), np.inf, np.clip(lat, -_FMAX, _FMAX)), gpus))[0])
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
                    steps_per_token=spt, block_tokens=blk, tail=inp.sla_tail)
                out[:n_primary] = latency.p95_ms(chosen, np.array([float(replicas)]), idx=np.arange(n_primary))
            return out

        # GPUs busy each hour: rate(h) x GPU-seconds per request at the running batch a request joins at the
        # peak (the latency model's), not at the cap: a cap is a limit, and dividing by it made the same traffic
        # on the same replicas look 6 % or 1 % busy depending on a cap nothing reached.
        b_at = float(st.batch[best])
        b_run = min(max(float(cap) if math.isnan(b_at) else b_at, 1.0), float(cap))
        busy = _SUM((inp.lam_mean[rows] * shares * g * s_chosen / b_run)[:, None] * inp.profile[rows], axis=0)
        return DeploymentSize(pos, rows, shares, True, g, cap, replicas, s_chosen, p95, busy,
                              float(lat[best]), total, -1, n_primary)


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
        first = np.concatenate(([True], s[1:] != s[:-1]))
        group = np.cumsum(first) - 1
        span = float(m.max() - m.min()) + 2.0
        # Offsetting each sigma group above the previous makes one running maximum serve every group.
        shifted = (m - m.min() + 1.0) + group * span
        before = np.concatenate(([-np.inf], np.maximum.accumulate(shifted)[:-1]))
        keep.append(order[first | (shifted > before)])
    return np.sort(np.concatenate(keep))
