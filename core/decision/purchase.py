"""Staged purchase under the ranges (issue 32): a seeded Monte Carlo over the estimates, re-packing the plan's own pools.

What is drawn (each draw independently, `PurchaseSettings.draws` of them, from `seed`):
- the speed of each owned route the plan runs (stack at its GPUs per replica): a factor between the pessimistic
  and optimistic ends of `Catalog.efficiency_bounds`, triangular around the central estimate (u in [-1, 1],
  mode 0; log speed = u x log of the end it leans to). Routes draw independently, unlike the two end plans of
  core/decision/sensitivity.py, which move every route to the same end at once;
- traffic growth: one factor for every workload, uniform over the range set (`--growth 10-30%`; none by default);
- the node price and the API prices: uniform within a stated +/- range (estimates, PRICE_RANGE_NOTE).

The approximation (the planner is not re-run per draw). Each owned pool of the chosen plan keeps its members,
shares, GPUs per replica and tier; the plan's own sizer (core.decision.sizing) re-sizes it at a grid of points:
9 positions of its route's speed range (U_GRID; the efficiency log-interpolated between the central figure and
the end, the ends exactly those of the end plans) x the growth range's ends and middle, with the same latency
model and targets. A member the route can no longer serve alone within its target leaves the pool (it would go
without a route, as in the pessimistic end plan). A draw takes, per pool, the replicas at the nearest grid
point; nodes = ceil(sum of replicas x GPUs per replica / GPUs per node). Batch work scales its GPU-hours by
growth / speed (reference throughput at batch 64) and takes new nodes only beyond the interactive nodes' idle
GPU-hours (the plan's busy hours scaled with the pools). The central draw is shifted onto the plan's node
count (the shift is 0 where the plan is whole pools packed into nodes) and every draw takes the same shift.
It does not re-route: a workload the plan sends to an API that a faster owned route would win, or pools the
search would re-tier or merge at another speed, are not re-planned, so a draw at an end can differ from that
end's plan (which re-plans everything); tests/test_purchase.py checks the all-end draws against the end plans.
Cost: 9 x (1 or 4) sizings per pool, then arithmetic over the draws.

P(owned beats the best allowed API) per workload: its owned cost (the attributed share when the plan runs it
owned, else the cheapest owned route's standalone cost) x node price factor x growth / speed (the geometric
mean of the batch-1 and batch-64 reference throughput ratios), against the
cheapest feasible API's monthly cost x API price factor x growth; owned loses a draw where its p95 alone misses
the target. None where the workload has no owned or no allowed API route. That compares its share of the fleet,
not the cash a move saves: beside it, `switch_usd_per_month` is the central plan's cash bill after the workload
alone switches side, less the bill now (exact; positive: the side it is on is cheaper in cash), so a workload
whose share is dearer than the API but whose leaving frees no replica is not read as one to move.

buy_now_nodes: the most nodes needed in at least `quantile` of the draws (0.9 by default); the rest (up to
nodes_p90) after measuring the route whose range moves the node count most (each route drawn alone).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.decision.economics import HOURS_PER_MONTH
from core.format import integer, money, percent

# Stated price ranges (estimates): API list prices move with vendors' cuts and tiers; a node quote within a band.
NODE_PRICE_RANGE = 0.10
API_PRICE_RANGE = 0.20
PRICE_RANGE_NOTE = ("node price ±10 %, API prices ±20 % (estimates: vendors' list prices move and node quotes "
                    "vary by term)")
_EPS = 1e-9
# Positions in each route's range the pools are re-sized at (a draw takes the nearest): -1 the pessimistic end,
# 0 the central estimate (the plan itself), 1 the optimistic end.
U_GRID = np.linspace(-1.0, 1.0, 9)
GROWTH_POINTS = 3


@dataclass(frozen=True)
class PurchaseSettings:
    """How the Monte Carlo draws: count, seed, the quantile buy_now_nodes holds at, growth and price ranges."""

    draws: int = 1000
    seed: int = 0
    quantile: float = 0.9
    growth: tuple[float, float] = (0.0, 0.0)  # traffic growth range as shares (0.1 = +10 %)
    node_price_range: float = NODE_PRICE_RANGE
    api_price_range: float = API_PRICE_RANGE

    def __post_init__(self):
        if not 1 <= self.draws <= 100_000:
            raise ValueError(f"draws must be 1 to 100,000; got {self.draws}")
        if not 0.5 < self.quantile < 1.0:
            raise ValueError(f"the buy-now quantile must be above 50 % and below 100 %; got {self.quantile}")
        lo, hi = self.growth
        if not (-0.9 <= lo <= hi <= 10.0):
            raise ValueError(f"growth must be a range lo <= hi within -90 % .. +1000 %; got {self.growth}")

    def key(self) -> str:
        return f"purchase:{self.draws}:{self.seed}:{self.quantile}:{self.growth}:{self.node_price_range}:" \
               f"{self.api_price_range}"


@dataclass(frozen=True)
class RouteRange:
    """One owned route (stack at a GPU count) of the plan: its speed ratios at each end, and what drives them."""

    route_id: str
    label: str
    stack_id: str
    gpus_per_replica: int
    driver: str
    # Throughput at the pessimistic / optimistic end over the central, at batch 1 and at batch 64.
    slow: tuple[float, float]
    fast: tuple[float, float]


@dataclass(frozen=True)
class Pool:
    """One owned pool of the plan: its replicas re-sized at each grid point of its route's speed and of growth."""

    route: int  # index into the route ranges
    gpus_per_replica: int
    cap: float  # concurrency cap per replica (1 when unknown)
    replicas: np.ndarray  # (len(U_GRID), len(growth grid)) replicas the sizer gives at each grid point
    offline_gpu_hours_day: float
    offline_min_gpus: int


@dataclass(frozen=True)
class Inputs:
    """What the draws read of a finished plan (small; built once)."""

    routes: tuple[RouteRange, ...]
    pools: tuple[Pool, ...]
    gpus_per_node: int
    plan_nodes: int
    owned_nodes: int
    busy_gpus_by_hour: np.ndarray  # (24,) interactive GPUs busy each hour in the plan
    interactive_gpus: int
    growth_grid: np.ndarray  # the growth factors the pools were sized at
    # Per workload: owned monthly cost and route (-1: none), best allowed API monthly cost (nan: none).
    workload_ids: np.ndarray
    owned_usd: np.ndarray
    owned_route: np.ndarray
    owned_p95_ms: np.ndarray
    slo_ms: np.ndarray
    api_usd: np.ndarray
    api_label: np.ndarray
    node_usd_per_month: float = 0.0  # one new node at the plan's full price (0: not known)
    # Per workload: the central plan's cash bill after it alone switches side (owned -> its best API, or API ->
    # its owned route), less the bill now, exact (NaN: not priced). Beside P(owned beats the API), which compares
    # its attributed share: a workload riding on capacity held anyway saves nothing by leaving, whatever its share.
    switch_usd: np.ndarray | None = None
    on_owned: np.ndarray | None = None  # per workload: the plan runs it on owned GPUs (None: not known)


@dataclass(frozen=True)
class Purchase:
    """The staged purchase: the distribution of nodes needed, what to buy now, and what to measure for the rest."""

    buy_now_nodes: int
    buy_now_new_nodes: int
    nodes_p10: int
    nodes_p50: int
    nodes_p90: int
    plan_nodes: int
    owned_nodes: int
    draws: int
    seed: int
    quantile: float
    growth: tuple[float, float]
    measure_route_id: str | None
    measure_route: str | None
    measure_driver: str | None
    measure_what: str | None
    measure_spread_nodes: int
    owned_beats_api: tuple[dict, ...]
    basis: str
    nodes: np.ndarray = field(repr=False, compare=False)
    node_usd_per_month: float = 0.0

    @property
    def hold_nodes(self) -> int:
        """Nodes to hold until measured: the 90th percentile's need beyond the fleet after buying now."""
        return max(self.nodes_p90 - max(self.buy_now_nodes, self.owned_nodes), 0)

    def histogram(self) -> dict[int, int]:
        """Draws per node count."""
        vals, counts = np.unique(self.nodes, return_counts=True)
        return {int(v): int(c) for v, c in zip(vals, counts, strict=True)}


def speed_ratios(catalog, stack, gpu, gpus: int) -> tuple[tuple[float, float], tuple[float, float], str]:
    """((slow at batch 1, at 64), (fast at batch 1, at 64), driver): reference throughput at each efficiency end
    over the central one (calibration's reference points: 1,000 tokens in, 256 out)."""
    from core.performance.calibration import _ref_throughput

    b = catalog.efficiency_bounds(stack, gpu, gpus)
    lo, c, hi = (np.asarray(_ref_throughput(stack, gpu, gpus, e), dtype=float) for e in b)
    slow, fast = lo / c, hi / c
    return (float(slow[0]), float(slow[-1])), (float(fast[0]), float(fast[-1])), b.driver


def inputs_of(ev, growth: tuple[float, float] = (0.0, 0.0)) -> Inputs:
    """The draws' inputs read from a finished evaluation: its pools re-sized on the grid, route ranges and
    per-workload costs."""
    gpu = ev.catalog.gpu(ev.scenario.gpu)
    f = ev.fleet
    index = {r.route_id: j for j, r in enumerate(ev.routes)}
    routes: list[RouteRange] = []
    key_of: dict[tuple[str, int], int] = {}

    def route_index(route_id: str, g: int) -> int:
        if (route_id, g) not in key_of:
            rt = ev.routes[index[route_id]]
            slow, fast, driver = speed_ratios(ev.catalog, rt.stack, gpu, g)
            key_of[(route_id, g)] = len(routes)
            routes.append(RouteRange(route_id, rt.label, rt.stack.stack_id, g, driver, slow, fast))
        return key_of[(route_id, g)]

    g_grid = growth_grid(growth)
    sized = _resized(ev, gpu, g_grid)
    pools = []
    for d in f.deployments:
        reps = sized.get((d.route_id, d.gpus_per_replica, d.tier or ""))
        pools.append(Pool(route=route_index(d.route_id, d.gpus_per_replica), gpus_per_replica=d.gpus_per_replica,
                          cap=float(d.concurrency_cap or 1),
                          replicas=reps if reps is not None else np.zeros((len(U_GRID), len(g_grid))),
                          offline_gpu_hours_day=d.offline_gpu_hours_per_day, offline_min_gpus=d.offline_min_gpus))
    gpn = f.gpus_per_node
    busy = np.asarray(f.hourly_utilization_without_batch, dtype=float) * f.nodes_in_plan * gpn
    owned_usd, owned_route, owned_p95, api_usd, api_label, owned_col, api_col = _workload_costs(ev, route_index)
    return Inputs(routes=tuple(routes), pools=tuple(pools), gpus_per_node=gpn, plan_nodes=f.nodes_needed,
                  owned_nodes=f.owned_nodes, busy_gpus_by_hour=busy,
                  interactive_gpus=sum(d.interactive_gpus for d in f.deployments), growth_grid=g_grid,
                  workload_ids=ev.workloads["workload_id"].astype(str).to_numpy(),
                  owned_usd=owned_usd, owned_route=owned_route, owned_p95_ms=owned_p95,
                  slo_ms=np.asarray(ev.slo_ms, dtype=float), api_usd=api_usd, api_label=api_label,
                  node_usd_per_month=float(f.full_usd_per_node_hour) * HOURS_PER_MONTH,
                  switch_usd=_switch_usd(ev, owned_col, api_col, owned_usd),
                  on_owned=np.array([v >= 0 and ev.routes[v].hosting == "owned" for v in ev.verdict.tolist()],
                                    dtype=bool))


def growth_grid(growth: tuple[float, float]) -> np.ndarray:
    """Growth factors the pools are sized at: no growth (the plan itself) and the range's ends and middle."""
    lo, hi = growth
    points = [lo] if hi <= lo else list(np.linspace(lo, hi, GROWTH_POINTS))
    return np.unique(np.array([1.0] + [1.0 + x for x in points]))


def efficiency_at(bounds, u: float):
    """The route's Efficiency at position u of its range: each factor log-interpolated between the central
    figure and the end u leans to (u = -1, 1: exactly the ends the end plans use)."""
    from dataclasses import fields as dc_fields
    from dataclasses import replace as dc_replace

    if u == 0:
        return bounds.central
    end = bounds.low if u < 0 else bounds.high
    w = abs(u)
    changes = {}
    for fd in dc_fields(bounds.central):
        c, e = getattr(bounds.central, fd.name), getattr(end, fd.name)
        if isinstance(c, float) and isinstance(e, float) and c != e:
            changes[fd.name] = c ** (1 - w) * e ** w if c > 0 and e > 0 else c + (e - c) * w
    return dc_replace(bounds.central, **changes)


def _resized(ev, gpu, g_grid: np.ndarray) -> dict[tuple[str, int, str], np.ndarray]:
    """Per plan pool (route id, GPUs per replica, tier): replicas at each (speed, growth) grid point, from the
    plan's own sizer on the same members, shares and tier, with the route's physics at that speed and every
    rate times the growth. Members whose target the route then misses alone leave the pool (re-sized without
    them); a pool left with none needs no replicas."""
    from dataclasses import replace as dc_replace

    from core.decision.sizing import Sizer

    plan, inp = ev.plan, ev.plan_inputs
    out: dict[tuple[str, int, str], np.ndarray] = {}
    if plan is None or inp is None:
        return out
    live = [(pos, d) for pos, d in plan.sizes.items() if d.feasible and d.replicas > 0 and d.n_primary]
    if not live:
        return out
    grids = {pos: np.zeros((len(U_GRID), len(g_grid))) for pos, _ in live}
    for ui, u in enumerate(U_GRID):
        owned = list(inp.owned)
        for pos, d in live:
            owned[pos] = _route_at(inp, owned[pos], d.rows, ev.catalog.efficiency_bounds(
                owned[pos].stack, gpu, int(owned[pos].tp_options[0])), u) if u else owned[pos]
        for gi, g in enumerate(g_grid):
            sizer = Sizer(dc_replace(inp, owned=tuple(owned), lam_peak=inp.lam_peak * g),
                          settings=getattr(ev.planner, "settings", None))
            for pos, d in live:
                grids[pos][ui, gi] = _size_keeping(sizer, pos, d)
    for pos, _ in live:
        r = inp.owned[pos]
        out[(r.route_id, int(r.tp_options[0]), r.tier or "")] = grids[pos]
    return out


def _size_keeping(sizer, pos: int, d) -> int:
    """Replicas of pool d re-sized; members the route no longer serves alone dropped first."""
    size = sizer.size(pos, d.rows, d.shares, n_primary=d.n_primary)
    if size.feasible:
        return int(size.replicas)
    lost = {row for row, col in sizer._hopeless if col == sizer.inp.owned[pos].index}
    keep = np.array([k >= d.n_primary or int(r) not in lost for k, r in enumerate(d.rows)], dtype=bool)
    n_primary = int(keep[:d.n_primary].sum())
    if not n_primary or keep.all():
        return 0
    size = sizer.size(pos, d.rows[keep], d.shares[keep], n_primary=n_primary)
    return int(size.replicas) if size.feasible else 0


def _route_at(inp, route, rows: np.ndarray, bounds, u: float):
    """The plan's owned route with its physics at speed position u, for the pool's rows (others unchanged)."""
    from dataclasses import replace as dc_replace

    from core.performance import physics

    eff = efficiency_at(bounds, u)
    stack, gpu, g = route.stack, route.gpu, int(route.tp_options[0])
    n_in, n_out = inp.input_tokens[rows], inp.output_tokens[rows]
    pre = physics.prefill_ms(stack, gpu, g, n_in, eff)
    maxc = physics.max_concurrency(stack, gpu, g, n_in + n_out, eff)
    svc = np.array(route.service_s, copy=True)
    prefill = np.array(route.prefill_ms, copy=True)
    prefill[rows] = pre
    for j, b in enumerate(inp.concurrency_grid):
        fits = b <= maxc
        lat = physics.e2e_ms(stack, gpu, g, b, n_in, n_out, eff, prefill=pre) / 1e3 if fits.any() else np.nan
        svc[rows, 0, j] = np.where(fits, lat, np.nan)
    spt = float(physics.decode_steps(stack, 1e6, eff)) / 1e6
    return dc_replace(route, service_s=svc, prefill_ms=prefill, eff=eff, steps_per_token=spt)


def _workload_costs(ev, route_index):
    """Per workload: owned cost ($/month), its route range index (-1: none), p95 alone, best allowed API cost
    and label, and the engine routes of both (-1: none). Owned: the verdict's attributed share where the plan runs
    it owned, else the cheapest feasible owned route's standalone cost (at its best GPU count)."""
    W = len(ev.workloads)
    feas = np.asarray(ev.a["feasible"], dtype=bool)
    monthly = np.asarray(ev.a["monthly_usd"], dtype=float)
    owned_cols = np.array([r.hosting == "owned" for r in ev.routes], dtype=bool)
    owned_usd, owned_route = np.full(W, np.nan), np.full(W, -1, dtype=int)
    owned_p95, api_usd = np.full(W, np.nan), np.full(W, np.nan)
    api_label = np.full(W, "", dtype=object)
    owned_col, api_col = np.full(W, -1, dtype=int), np.full(W, -1, dtype=int)
    for i in range(W):
        v = int(ev.verdict[i])
        if v >= 0 and owned_cols[v]:
            j = v
        else:
            cand = np.flatnonzero(feas[i] & owned_cols & np.isfinite(monthly[i]))
            j = int(cand[np.argmin(monthly[i, cand])]) if cand.size else -1
        if j >= 0:
            g = ev.a["gpus_per_replica"][i, j]
            g = int(g) if np.isfinite(g) and g >= 1 else int(np.nan_to_num(ev.a["best_gpus"][i, j], nan=1) or 1)
            owned_usd[i], owned_route[i], owned_col[i] = monthly[i, j], route_index(ev.routes[j].route_id, g), j
            owned_p95[i] = ev.a["best_p95_ms"][i, j]
        api = np.flatnonzero(feas[i] & ~owned_cols & np.isfinite(monthly[i]))
        if api.size:
            k = int(api[np.argmin(monthly[i, api])])
            api_usd[i], api_label[i], api_col[i] = monthly[i, k], ev.routes[k].label, k
    return owned_usd, owned_route, owned_p95, api_usd, api_label, owned_col, api_col


MAX_SWITCH_PRICINGS = 200  # exact re-pricings of a workload switching side, the costliest owned shares first


def _switch_usd(ev, owned_col: np.ndarray, api_col: np.ndarray, owned_usd: np.ndarray) -> np.ndarray:
    """Per workload with an owned and an allowed API route: the central plan's cash bill after it alone switches
    side, less the bill now (exact re-pricing with the plan's own pricer): from its owned pool to its best API,
    or from wherever it is onto its owned route's cheapest plan column (another GPU count may be cheaper). NaN
    where not priced: no plan kept, the switch cannot be priced, it leaves or joins a pool the simulation check
    raised, or past MAX_SWITCH_PRICINGS."""
    W = len(ev.workloads)
    out = np.full(W, np.nan)
    planner, plan, inp = (getattr(ev, k, None) for k in ("planner", "plan", "plan_inputs"))
    if planner is None or plan is None or inp is None:
        return out
    col_route = np.asarray(inp.col_route)
    owned_plan_cols = {o.index for o in inp.owned}
    both = np.flatnonzero((owned_col >= 0) & (api_col >= 0))
    order = both[np.argsort(-np.nan_to_num(owned_usd[both]), kind="stable")][:MAX_SWITCH_PRICINGS]
    if not order.size:
        return out
    from core.decision.closeloop import raised_columns

    raised = raised_columns(planner, plan)  # a switch into or out of a raised pool: not priced
    alone = planner.standalone_cost()
    for i in order.tolist():
        here = int(plan.assignment[i])
        if here < 0:  # unserved: a switch would add its work to the bill, not move it
            continue
        side = col_route[here]
        if here in owned_plan_cols:
            cols = np.flatnonzero((col_route == api_col[i]) & inp.allowed[i])
        else:
            cols = np.flatnonzero((col_route == owned_col[i]) & inp.allowed[i])
            cols = cols[np.argsort(alone[i, cols], kind="stable")] if cols.size else cols
        if not cols.size or col_route[cols[0]] == side or here in raised or int(cols[0]) in raised:
            continue
        moved = plan.assignment.copy()
        moved[i] = cols[0]
        switched = planner.price(moved, base=plan)  # re-sizes only the two pools it touches (the same bill)
        if switched.feasible:
            out[i] = float(switched.bill - plan.bill)
    return out


def _speeds(inp: Inputs, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(speed at batch 1, speed at batch 64) per draw and route, (D, R), for positions u in [-1, 1] of each range
    (log-linear: u = -1 the pessimistic end, 0 the central, 1 the optimistic)."""
    slow = np.array([r.slow for r in inp.routes], dtype=float).reshape(-1, 2)
    fast = np.array([r.fast for r in inp.routes], dtype=float).reshape(-1, 2)
    out = []
    for k in (0, 1):
        end = np.where(u < 0, np.log(slow[None, :, k]), np.log(fast[None, :, k]))
        out.append(np.exp(np.abs(u) * end))
    return out[0], out[1]


def nodes_for(inp: Inputs, u: np.ndarray, growth: np.ndarray) -> np.ndarray:
    """Nodes needed per draw, (D,) int, for route positions u (D, R) and growth factors (D,): each pool's
    replicas at the nearest grid point, packed into nodes, then batch work beyond the idle GPU-hours."""
    _, s64 = _speeds(inp, u)
    D = u.shape[0]
    gi = np.abs(growth[:, None] - inp.growth_grid[None, :]).argmin(axis=1)
    gpus = np.zeros(D)
    inter_c = 0.0
    off_day = np.zeros(D)
    off_min = np.zeros(D)
    for p in inp.pools:
        if p.replicas.any():
            ui = np.abs(u[:, p.route, None] - U_GRID[None, :]).argmin(axis=1)
            gpus += p.replicas[ui, gi] * p.gpus_per_replica
            inter_c += p.replicas[len(U_GRID) // 2, int(np.argmin(np.abs(inp.growth_grid - 1.0)))] \
                * p.gpus_per_replica
        if p.offline_gpu_hours_day > 0:
            off_day += p.offline_gpu_hours_day * growth / s64[:, p.route]
            off_min = np.maximum(off_min, p.offline_min_gpus)
    gpn = inp.gpus_per_node
    nodes = np.ceil(gpus / gpn - _EPS)
    # Batch work fills the interactive nodes' idle GPU-hours first (the plan's busy hours, scaled with the pools).
    scale = gpus / inter_c if inter_c > 0 else np.zeros(D)
    busy = np.minimum(inp.busy_gpus_by_hour[None, :] * scale[:, None], (nodes * gpn)[:, None])
    idle = nodes * gpn * 24 - busy.sum(axis=1)
    extra = np.ceil(np.maximum(off_day - idle, 0.0) / (24 * gpn) - _EPS)
    nodes = nodes + extra
    nodes = np.maximum(nodes, np.where(off_day > 0, np.ceil(off_min / gpn - _EPS), 0))
    return nodes.astype(int)


def _draw(inp: Inputs, s: PurchaseSettings):
    """(u (D, R), growth (D,), node price factor (D,), API price factor (D,)) from the seed."""
    rng = np.random.default_rng(s.seed)
    D, R = s.draws, len(inp.routes)
    u = rng.triangular(-1.0, 0.0, 1.0, size=(D, R)) if R else np.zeros((D, 0))
    lo, hi = s.growth
    growth = 1.0 + (rng.uniform(lo, hi, size=D) if hi > lo else np.full(D, lo))
    node_f = 1.0 + rng.uniform(-s.node_price_range, s.node_price_range, size=D)
    api_f = 1.0 + rng.uniform(-s.api_price_range, s.api_price_range, size=D)
    return u, growth, node_f, api_f


def buy_now(nodes: np.ndarray, quantile: float) -> int:
    """The most nodes needed in at least `quantile` of the draws: the largest n with #(nodes >= n) >= q x D."""
    ordered = np.sort(nodes)
    need = math.ceil(quantile * len(ordered) - _EPS)
    return int(ordered[len(ordered) - need])


def percentile(nodes: np.ndarray, q: float) -> int:
    """A node count some draw needed: the smallest with at least q of the draws at or below it."""
    return int(np.quantile(nodes, q, method="inverted_cdf"))


def simulate(inp: Inputs, s: PurchaseSettings) -> Purchase:
    """The staged purchase of a plan's inputs under the settings (pure: same inputs and seed, same answer)."""
    u, growth, node_f, api_f = _draw(inp, s)
    R = len(inp.routes)
    shift = inp.plan_nodes - int(nodes_for(inp, np.zeros((1, R)), np.ones(1))[0])
    nodes = np.maximum(nodes_for(inp, u, growth) + shift, 0)
    p10, p50, p90 = (percentile(nodes, q) for q in (0.1, 0.5, 0.9))
    now = buy_now(nodes, s.quantile)  # <= p50 for any quantile above 0.5
    # Which route's range moves the node count most: each route drawn alone, every other at its central figure.
    spreads = []
    for r in range(R):
        alone = np.zeros_like(u)
        alone[:, r] = u[:, r]
        n = nodes_for(inp, alone, np.ones(len(u))) + shift
        spreads.append(percentile(n, 0.9) - percentile(n, 0.1))
    top = int(np.argmax(spreads)) if spreads and max(spreads) > 0 else None
    rr = inp.routes[top] if top is not None else None
    return Purchase(
        buy_now_nodes=now, buy_now_new_nodes=max(now - inp.owned_nodes, 0), nodes_p10=p10, nodes_p50=p50,
        nodes_p90=p90, plan_nodes=inp.plan_nodes, owned_nodes=inp.owned_nodes, draws=s.draws, seed=s.seed,
        quantile=s.quantile, growth=s.growth,
        measure_route_id=rr.route_id if rr else None, measure_route=rr.label if rr else None,
        measure_driver=rr.driver if rr else None, measure_what=_measure_what(inp, rr) if rr else None,
        measure_spread_nodes=int(spreads[top]) if top is not None else 0,
        owned_beats_api=_owned_beats(inp, u, growth, node_f, api_f),
        node_usd_per_month=inp.node_usd_per_month,
        basis=f"Monte Carlo over the estimate ranges: each owned route's speed (triangular between its "
              f"pessimistic and optimistic ends), traffic growth {_growth_words(s.growth)}, {PRICE_RANGE_NOTE}; "
              f"the plan's pools re-sized on a grid by its own sizer, not re-planned (core/decision/purchase.py)",
        nodes=nodes)


def _owned_beats(inp: Inputs, u, growth, node_f, api_f) -> tuple[dict, ...]:
    """Per workload: P(owned beats the best allowed API) over the draws (None where one side has no route)."""
    s1, s64 = _speeds(inp, u) if len(inp.routes) else (np.ones((len(growth), 0)),) * 2
    out = []
    for i, wid in enumerate(inp.workload_ids):
        r = int(inp.owned_route[i])
        if r < 0 or not np.isfinite(inp.api_usd[i]) or not np.isfinite(inp.owned_usd[i]):
            out.append({"workload_id": str(wid), "p_owned_beats_api": None, "api": inp.api_label[i] or None,
                        "runs_on": None, "switch_usd_per_month": None})
            continue
        speed = np.sqrt(s1[:, r] * s64[:, r])  # the two reference batches' geometric mean
        owned = inp.owned_usd[i] * node_f * growth / speed
        api = inp.api_usd[i] * api_f * growth
        if np.isfinite(inp.slo_ms[i]) and np.isfinite(inp.owned_p95_ms[i]):
            ok = inp.owned_p95_ms[i] / s1[:, r] <= inp.slo_ms[i] * (1 + _EPS)
        else:  # batch work, or no p95 figure: the plan's feasibility holds
            ok = np.ones(len(growth), dtype=bool)
        p = float(np.mean(ok & (owned < api)))
        switch = None if inp.switch_usd is None or not np.isfinite(inp.switch_usd[i]) else round(
            float(inp.switch_usd[i]), 2)
        runs_on = None if inp.on_owned is None else ("owned" if inp.on_owned[i] else "api")
        out.append({"workload_id": str(wid), "p_owned_beats_api": round(p, 4), "api": inp.api_label[i],
                    "runs_on": runs_on, "switch_usd_per_month": switch})
    return tuple(out)


def _measure_what(inp: Inputs, rr: RouteRange) -> str:
    """What to measure to narrow the range: a benchmark of that route at the plan's batch and lengths."""
    caps = sorted({int(p.cap) for p in inp.pools if inp.routes[p.route] is rr})
    batch = f"concurrency {', '.join(integer(c) for c in caps)}" if caps else "the plan's concurrency"
    return (f"import a benchmark (hangover bench import) of {rr.stack_id} on {rr.gpus_per_replica} GPU"
            f"{'s' if rr.gpus_per_replica != 1 else ''} per replica at {batch}, with the workloads' input and "
            f"output lengths (its range: {rr.driver})")


def _growth_words(growth: tuple[float, float]) -> str:
    lo, hi = growth
    if lo == hi == 0:
        return "none"
    def signed(x: float) -> str:
        text = percent(x)
        return text if text.startswith("-") else f"+{text}"

    return signed(lo) if lo == hi else f"{signed(lo)} to {signed(hi)}"


def purchase(ev, settings: PurchaseSettings | None = None) -> Purchase | None:
    """The evaluation's staged purchase, computed once per settings and kept in `ev.answers`.

    Rule (as for the verdict ranges): with the default settings, automatic for inventories of at most
    SearchSettings.ranges_max_workloads workloads, else None; settings given (`--purchase-draws`) always run.
    """
    from core.decision import settings as settings_mod

    if settings is None and len(ev.workloads) > settings_mod.PLAN.ranges_max_workloads:
        return None
    s = settings or PurchaseSettings()
    return ev.answers.get(s.key(), lambda: simulate(inputs_of(ev, s.growth), s))


def parse_growth(text: str) -> tuple[float, float]:
    """A growth range as people type it: "20%", "10-30%", "10%..30%", "0.1-0.3" (a share), "-10-20%"."""
    from core.errors import InputError

    t = text.strip().replace(" ", "").replace("..", "~").replace("to", "~")
    m = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)(%?)(?:[~-]([+-]?\d+(?:\.\d+)?)(%?))?", t)
    if not m:
        raise InputError(f"growth is a share or range such as 20%, 10-30% or 0.1-0.3; got {text!r}")
    pct = "%" in t

    def share(x: str) -> float:
        v = float(x)
        return v / 100.0 if pct or abs(v) > 1.0 else v

    lo = share(m.group(1))
    hi = share(m.group(3)) if m.group(3) is not None else lo
    if hi < lo:
        raise InputError(f"growth range {text!r} runs backwards: give the lower figure first")
    if not (lo >= -0.9 and hi <= 10.0):
        raise InputError(f"growth must lie within -90 % and +1,000 %; got {text!r}")
    return lo, hi


def purchase_json(p: Purchase) -> dict:
    """The contract's `fleet.purchase` object."""
    return {
        "buy_now_nodes": p.buy_now_nodes, "buy_now_new_nodes": p.buy_now_new_nodes, "hold_nodes": p.hold_nodes,
        "nodes_p10": p.nodes_p10, "nodes_p50": p.nodes_p50, "nodes_p90": p.nodes_p90,
        "plan_nodes": p.plan_nodes, "owned_nodes": p.owned_nodes,
        "draws": p.draws, "seed": p.seed, "quantile": p.quantile, "growth": list(p.growth),
        "nodes_histogram": {str(k): v for k, v in p.histogram().items()},
        "measure": None if p.measure_route_id is None else {
            "route_id": p.measure_route_id, "route": p.measure_route, "driver": p.measure_driver,
            "what": p.measure_what, "spread_nodes": p.measure_spread_nodes},
        "owned_beats_api": list(p.owned_beats_api),
        "basis": p.basis,
    }


def purchase_lines(p: Purchase) -> list[str]:
    """For a finance reader, in three sentences: buy now X; hold up to Y until Z is measured (and how); the spread."""
    def n(k):
        return f"{integer(k)} node{'s' if k != 1 else ''}"

    each = f", {money(p.node_usd_per_month)} a month each at the plan's node price" if p.node_usd_per_month else ""
    growth = "" if p.growth == (0.0, 0.0) else f", traffic growth {_growth_words(p.growth)}"
    share = f"at least {percent(p.quantile)} of {integer(p.draws)} draws over the estimate ranges{growth}"
    if p.buy_now_new_nodes:
        now = (f"Buy {n(p.buy_now_new_nodes)} now ({integer(p.buy_now_nodes)} in all with the "
               f"{integer(p.owned_nodes)} owned{each}): needed in {share}.")
    else:
        now = (f"Buy no node now: {n(p.buy_now_nodes)} {'is' if p.buy_now_nodes == 1 else 'are'} needed in {share}, "
               f"and {integer(p.owned_nodes)} {'is' if p.owned_nodes == 1 else 'are'} owned.")
    if not p.hold_nodes:
        hold = "The ranges call for no second purchase."
    else:
        who = p.measure_route or "the owned routes"
        hold = f"Hold up to {n(p.hold_nodes)} more until {who} is measured"
        if p.measure_route and p.measure_spread_nodes:
            hold += f": its speed range alone moves the need by {n(p.measure_spread_nodes)}"
        hold += f". To measure: {p.measure_what}." if p.measure_what else "."
    spread = (f"Nodes needed across the draws: median {integer(p.nodes_p50)}, {integer(p.nodes_p10)}–"
              f"{integer(p.nodes_p90)} (10th–90th percentile); the plan's central estimate {integer(p.plan_nodes)} "
              f"(estimates).")
    return [now, hold, spread]


def purchase_short(p: Purchase) -> str:
    """One line (the one-pager): buy now, hold until measured, the spread."""
    def n(k):
        return f"{integer(k)} node{'s' if k != 1 else ''}"

    now = f"buy {n(p.buy_now_new_nodes)} now" if p.buy_now_new_nodes else "buy no node now"
    hold = f"; hold up to {n(p.hold_nodes)} more until {p.measure_route or 'the owned routes'} is measured" \
        if p.hold_nodes else "; no second purchase"
    return (f"{now[0].upper()}{now[1:]} ({integer(p.buy_now_nodes)} in all){hold}. Nodes needed "
            f"{integer(p.nodes_p10)}–{integer(p.nodes_p90)} (10th–90th percentile of {integer(p.draws)} draws over "
            f"the estimate ranges; estimates).")


def purchase_words(p: Purchase) -> str:
    """One paragraph for a finance reader: buy now X, then up to Y after measuring Z."""
    return " ".join(purchase_lines(p))


def owned_vs_api_frame(p: Purchase) -> pd.DataFrame:
    """Per workload with both an owned and an allowed API route: P(its owned share beats the best allowed API),
    where the plan runs it ("owned", "api") and the central plan's cash bill change if it alone switched side
    (NaN: not priced)."""
    rows = [r for r in p.owned_beats_api if r["p_owned_beats_api"] is not None]
    return pd.DataFrame({"workload_id": [r["workload_id"] for r in rows],
                         "p_owned_beats_api": [r["p_owned_beats_api"] for r in rows],
                         "api": [r["api"] for r in rows],
                         "runs_on": [{"owned": "owned GPUs", "api": "the API"}.get(r.get("runs_on") or "", "—")
                                     for r in rows],
                         "switch_usd_per_month": [np.nan if r.get("switch_usd_per_month") is None
                                                  else r["switch_usd_per_month"] for r in rows]})
