"""The fleet plan: workloads pooled into deployments, replicas packed onto whole nodes, one cash bill.

DESIGN.md "Fleet plan". The engine scores every workload on every route
(feasibility, standalone operating points); this module decides the
assignment that minimises the monthly cash bill and prices it exactly:

- one deployment per owned route; every workload assigned to it shares its
  replicas (one pooled queue, one concurrency cap, the GPUs per replica that
  need the fewest GPUs while every workload keeps its own p95 target);
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
workloads (small inventories) or whole deployments (large ones) while the
exact bill falls. Deployment sizings are cached on (route, members), so a move
re-prices only the two deployments it touches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.decision.economics import DAYS_PER_MONTH, HOURS_PER_MONTH
from core.decision.queueing import replicas_for_sla

SERVICE_CV2 = 0.5  # estimate: squared coefficient of variation of service time (output lengths vary)
# Shadow prices tried, as multiples of the full $/GPU-hour: 0 fills owned nodes, 1 makes a node pay for itself.
SHADOW_PRICES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0, 1.25, 1.6, 2.0, 3.0)
SHADOW_PRICES_LARGE = (0.0, 0.1, 0.35, 0.7, 1.0, 1.6, 3.0)  # fewer rungs where one exact pricing costs more
LARGE_ROWS = 20_000
SINGLE_MOVE_ROWS = 400  # up to this many workloads the search also tries moving each one alone
MAX_PASSES = 6


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
    # (NaN where the workload does not fit), and the p95 / mean tail factor per option.
    service_s: np.ndarray = field(repr=False)
    tail: np.ndarray = field(repr=False)  # (G,)


@dataclass(frozen=True)
class PlanInputs:
    """Everything the search reads: per-workload demand, per-route costs and owned-route physics."""

    workload_ids: np.ndarray
    interactive: np.ndarray  # (W,) bool
    lam_peak: np.ndarray  # requests/s at the peak hour
    lam_mean: np.ndarray  # requests/s on average
    profile: np.ndarray  # (W, 24) hourly multipliers of the mean rate
    slo_ms: np.ndarray  # (W,) p95 target (NaN for offline work)
    allowed: np.ndarray  # (W, R) bool: feasible and permitted
    api_monthly: np.ndarray  # (W, R) monthly API spend when the workload goes there (inf for owned)
    gpu_hours_day: np.ndarray  # (W, R) offline GPU-hours per day on an owned route
    offline_min_gpus: np.ndarray  # (W, R) GPUs the offline work needs at once to finish inside its window
    offline_gpus_per_replica: np.ndarray  # (W, R)
    fallback_share: np.ndarray  # (W, R) share of outputs escalated
    fallback_route: np.ndarray  # (W,) route escalated to (-1: none)
    fallback_api_monthly: np.ndarray  # (W,) monthly API spend if all requests went to the fallback route
    latency_ms: np.ndarray  # (W, R) standalone p95 (tie-break)
    owned: tuple[OwnedRoute, ...]
    n_routes: int  # plan columns: every API route, and every owned stack once per GPUs-per-replica option
    col_route: np.ndarray  # (C,) engine route of each plan column
    gpus_per_node: int
    owned_nodes: int
    full_usd_per_node_hour: float
    attribution_usd_per_node_hour: float  # the owned nodes' rate under the cost basis
    concurrency_grid: np.ndarray
    sla_tail: float = 0.05

    @property
    def full_usd_per_gpu_hour(self) -> float:
        """Full $/GPU-hour: what a new node costs per GPU."""
        return self.full_usd_per_node_hour / self.gpus_per_node


@dataclass(frozen=True)
class DeploymentSize:
    """One owned route's deployment for a set of members (cached by the search)."""

    route: int  # position in PlanInputs.owned
    rows: np.ndarray  # interactive member rows (primary and escalated)
    shares: np.ndarray  # share of each row's rate (1 primary, f escalated)
    feasible: bool
    gpus_per_replica: int
    concurrency: int
    replicas: int
    service_s: np.ndarray  # (len(rows),) mean service at the chosen point
    p95_ms: np.ndarray  # (len(rows),) service p95 at the chosen point
    wait_budget_s: float
    busy: np.ndarray = field(default_factory=lambda: np.zeros(24))  # (24,) GPUs busy with its interactive work
    lat_sum: float = 0.0  # sum of rate x p95 over its members (the search's latency tie-break)
    lat_w: float = 0.0  # sum of rates

    @property
    def gpus(self) -> int:
        """GPUs reserved for the interactive pool."""
        return self.replicas * self.gpus_per_replica


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

    @property
    def key(self) -> tuple[float, float, float]:
        """What the search minimises: the bill, then GPU-hours, then latency."""
        return (round(self.bill, 2), round(self.gpu_hours_per_day, 6), round(self.mean_latency_ms, 3))


class Planner:
    """Prices assignments exactly (with a cache of deployment sizings) and searches for the cheapest."""

    def __init__(self, inp: PlanInputs, gpu_hours_month: np.ndarray | None = None):
        self.inp = inp
        self._owned_pos = {o.index: k for k, o in enumerate(inp.owned)}
        self._cache: dict[tuple, DeploymentSize] = {}
        w = len(inp.workload_ids)
        self._rows = np.arange(w)
        owned_cols = np.zeros(inp.n_routes + 1, dtype=bool)
        owned_cols[[o.index for o in inp.owned]] = True
        self._fb_owned = owned_cols[inp.fallback_route]  # index -1 hits the spare False at the end
        self._owned_cols = np.array(sorted(o.index for o in inp.owned), dtype=int)
        self._lin = None
        # The standalone view depends on physics only, so planners over the same inputs may share it.
        self._gpu_hours_month = gpu_hours_month if gpu_hours_month is not None else self._standalone_gpu_hours()

    # -- exact pricing --------------------------------------------------------
    def size(self, pos: int, rows: np.ndarray, shares: np.ndarray, slo_ms: np.ndarray | None = None) -> DeploymentSize:
        """Size one deployment: the (GPUs per replica, concurrency) needing the fewest GPUs that holds every target."""
        key = (pos, rows.tobytes(), shares.tobytes(), None if slo_ms is None else slo_ms.tobytes())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        inp, route = self.inp, self.inp.owned[pos]
        slo = inp.slo_ms[rows] if slo_ms is None else slo_ms
        lam = inp.lam_peak[rows] * shares
        svc = route.service_s[rows]  # (n, G, B)
        p95 = svc * 1e3 * route.tail[None, :, None]
        ok = np.all(np.isfinite(svc) & (p95 <= slo[:, None, None] + 1e-9), axis=0)  # (G, B)
        total = lam.sum()
        best = None
        if total <= 0:
            # No traffic: nothing to reserve (the route still reports an operating point).
            gi = int(np.argmax(ok.any(axis=1))) if ok.any() else 0
            bi = int(np.flatnonzero(ok[gi])[-1]) if ok[gi].any() else 0
            best = (gi, bi, 0, np.inf)
        elif ok.any():
            gg, bb = np.nonzero(ok)
            s = svc[:, gg, bb]  # (n, K)
            pool = (lam[:, None] * s).sum(axis=0) / total
            budget = np.min(slo[:, None] - p95[:, gg, bb], axis=0) / 1e3
            slots = inp.concurrency_grid[bb]
            n = replicas_for_sla(np.full(len(gg), total), pool, slots, budget, tail=inp.sla_tail,
                                 service_cv2=SERVICE_CV2).astype(float)
            n = np.where(n < 0, np.inf, np.maximum(n, 1.0))
            gpus = n * np.array(route.tp_options)[gg]
            lat = (lam[:, None] * p95[:, gg, bb]).sum(axis=0) / total
            if np.isfinite(gpus).any():
                k = int(np.lexsort((lat, gpus))[0])
                best = (int(gg[k]), int(bb[k]), int(n[k]), float(budget[k]))
        if best is None:
            res = DeploymentSize(pos, rows, shares, False, 0, 0, 0, np.full(len(rows), np.nan),
                                 np.full(len(rows), np.nan), np.nan)
        else:
            gi, bi, n, budget = best
            g, b = route.tp_options[gi], float(inp.concurrency_grid[bi])
            s_chosen = svc[:, gi, bi].astype(float)
            p95_chosen = s_chosen * 1e3 * route.tail[gi]
            # GPUs busy each hour: rate(h) x GPU-seconds per request at the operating point.
            busy = ((inp.lam_mean[rows] * shares * g * np.nan_to_num(s_chosen) / b)[:, None]
                    * inp.profile[rows]).sum(axis=0)
            res = DeploymentSize(pos, rows, shares, True, g, int(b), n, s_chosen, p95_chosen, budget,
                                 busy, float((lam * np.nan_to_num(p95_chosen)).sum()), float(lam.sum()))
        self._cache[key] = res
        return res

    def _groups(self, col: np.ndarray) -> dict[int, np.ndarray]:
        """Rows per owned plan column (ascending row order), from one stable sort instead of a mask per column."""
        order = np.argsort(col, kind="stable")
        ordered = col[order]
        lo = np.searchsorted(ordered, self._owned_cols, side="left")
        hi = np.searchsorted(ordered, self._owned_cols, side="right")
        return {int(c): order[a:b] for c, a, b in zip(self._owned_cols, lo, hi, strict=True) if b > a}

    def price(self, assign: np.ndarray, slo_override: tuple[int, float] | None = None) -> PlanCost:
        """The exact monthly cash bill of an assignment (plan column per workload, -1 unserved)."""
        inp = self.inp
        rows_all = self._rows
        has = assign >= 0
        safe = np.where(has, assign, 0)
        on_api = inp.api_monthly[rows_all, safe]
        api_monthly = float(np.sum(np.where(has & np.isfinite(on_api), on_api, 0.0)))
        # Escalated shares: an owned fallback takes f of the load; an API fallback is paid per request.
        f = np.where(has, inp.fallback_share[rows_all, safe], 0.0)
        fb = inp.fallback_route
        esc = has & (f > 0) & (fb >= 0)
        api_monthly += float(np.sum(np.where(esc & ~self._fb_owned, f * inp.fallback_api_monthly, 0.0)))
        prim_groups = self._groups(np.where(has, assign, -1))
        extra_groups = self._groups(np.where(esc & self._fb_owned, fb, -1)) if esc.any() else {}

        sizes: dict[int, DeploymentSize] = {}
        busy = np.zeros(24)
        licence = 0.0
        interactive_gpus: list[tuple[int, int]] = []  # (replica size, count)
        offline_hours = 0.0
        offline_min = 0.0
        lat_sum, lat_w = 0.0, 0.0
        for pos, route in enumerate(inp.owned):
            r = route.index
            prim = prim_groups.get(r)
            extra = extra_groups.get(r)
            if prim is None and extra is None:
                continue
            prim = prim if prim is not None else np.zeros(0, dtype=int)
            extra = extra if extra is not None else np.zeros(0, dtype=int)
            p_int, e_int = prim[inp.interactive[prim]], extra[inp.interactive[extra]]
            inter_rows = np.concatenate([p_int, e_int]) if e_int.size else p_int
            shares = np.concatenate([np.ones(p_int.size), f[e_int]]) if e_int.size else np.ones(p_int.size)
            slo = None
            if slo_override is not None and np.any(inter_rows == slo_override[0]):
                slo = inp.slo_ms[inter_rows].copy()
                slo[inter_rows == slo_override[0]] = slo_override[1]
            d_gpus = 0
            if inter_rows.size:
                d = self.size(pos, inter_rows, shares, slo)
                sizes[pos] = d
                if not d.feasible:
                    return PlanCost(assign, False, np.inf, np.inf, np.inf, 0, 0, 0, api_monthly, licence, sizes,
                                    busy, np.zeros(24), offline_hours)
                d_gpus = d.gpus
                interactive_gpus.append((d.gpus_per_replica, d.replicas))
                busy += d.busy
                lat_sum += d.lat_sum
                lat_w += d.lat_w
            p_off, e_off = prim[~inp.interactive[prim]], extra[~inp.interactive[extra]]
            off_hours = float(np.nansum(inp.gpu_hours_day[p_off, r])) + float(
                np.nansum(inp.gpu_hours_day[e_off, r] * f[e_off]))
            off_min = float(np.nanmax(inp.offline_min_gpus[p_off, r], initial=0.0))
            offline_hours += off_hours
            offline_min = max(offline_min, off_min)
            licence += route.licence_usd_per_gpu_month * (d_gpus + np.ceil(off_hours / 24.0 - 1e-9))
        gpn = inp.gpus_per_node
        nodes_i = pack_nodes(interactive_gpus, gpn)
        capacity = max(inp.owned_nodes, nodes_i) * gpn
        fill = fill_idle(busy, capacity, offline_hours)
        leftover = max(offline_hours - float(fill.sum()), 0.0)
        extra_nodes = int(np.ceil(leftover / (gpn * 24.0) - 1e-9)) if leftover > 1e-9 else 0
        if extra_nodes:
            fill = fill_idle(busy, (max(inp.owned_nodes, nodes_i) + extra_nodes) * gpn, offline_hours)
        needed = max(nodes_i + extra_nodes, int(np.ceil(offline_min / gpn - 1e-9)))
        bill = (max(inp.owned_nodes, needed) * inp.full_usd_per_node_hour * HOURS_PER_MONTH
                + api_monthly + licence)
        gpu_hours = sum(g * n for g, n in interactive_gpus) * 24.0 + offline_hours
        return PlanCost(assign, True, bill, gpu_hours, lat_sum / lat_w if lat_w else 0.0, needed, nodes_i,
                        extra_nodes, api_monthly, licence, sizes, busy, fill, offline_hours)

    # -- search -------------------------------------------------------------
    def _linear_parts(self):
        """Per workload: the cheapest allowed API (its cost does not depend on the shadow price), and per owned
        column the GPU-hours held and the fixed cost (licence, escalation), computed once."""
        if self._lin is None:
            inp = self.inp
            cols = np.array([o.index for o in inp.owned], dtype=int)
            lic = np.array([o.licence_usd_per_gpu_month / HOURS_PER_MONTH for o in inp.owned])
            fb = np.nan_to_num(inp.fallback_share * inp.fallback_api_monthly[:, None])
            res = np.nan_to_num(self._gpu_hours_month[:, cols], nan=np.inf)
            ok = inp.allowed[:, cols] & np.isfinite(res)
            res = np.where(ok, res, 0.0)
            fixed = np.where(ok, res * lic[None, :] + fb[:, cols], np.inf)
            # Ties go to fewer GPU-hours, then lower latency.
            tie = res * 1e-9 + np.nan_to_num(inp.latency_ms[:, cols], nan=0.0) * 1e-12
            api_mask = np.isfinite(inp.api_monthly) & inp.allowed
            api_cost = np.where(api_mask, inp.api_monthly + fb + np.nan_to_num(inp.latency_ms, nan=0.0) * 1e-12,
                                np.inf)
            api_col = np.argmin(api_cost, axis=1) if inp.n_routes else np.zeros(len(api_cost), dtype=int)
            api_best = api_cost[np.arange(len(api_cost)), api_col] if inp.n_routes else np.full(len(api_cost), np.inf)
            self._lin = (cols, res, fixed + tie, api_col, api_best)
        return self._lin

    def _choose(self, p_gpu_hour: float, rows: np.ndarray | None = None, exclude: int | None = None) -> np.ndarray:
        """Each workload's cheapest plan column at a shadow price per GPU-hour (pooled, linear view); -1: none."""
        cols, res, fixed, api_col, api_best = self._linear_parts()
        if rows is not None:
            res, fixed, api_col, api_best = res[rows], fixed[rows], api_col[rows], api_best[rows]
        cost = fixed + res * p_gpu_hour
        if exclude is not None:
            cost[:, cols == exclude] = np.inf
        k = np.argmin(cost, axis=1) if cols.size else np.zeros(len(api_best), dtype=int)
        own = cost[np.arange(len(k)), k] if cols.size else np.full(len(api_best), np.inf)
        pick = np.where(own <= api_best, cols[k] if cols.size else -1, api_col)
        return np.where(np.isfinite(np.minimum(own, api_best)), pick, -1)

    def standalone_cost(self) -> np.ndarray:
        """(W, C) monthly cost of each allowed plan column on its own: APIs as priced, owned columns at the
        full $/GPU-hour on the pooled, linear view (inf where not allowed)."""
        inp = self.inp
        cols, res, fixed, _, _ = self._linear_parts()
        out = np.where(np.isfinite(inp.api_monthly) & inp.allowed, inp.api_monthly
                       + np.nan_to_num(inp.fallback_share * inp.fallback_api_monthly[:, None]), np.inf)
        out[:, cols] = fixed + res * inp.full_usd_per_gpu_hour
        return out

    def standalone_cost_row(self, i: int) -> np.ndarray:
        """standalone_cost() for one workload (C,), without building the whole matrix."""
        inp = self.inp
        cols, res, fixed, _, _ = self._linear_parts()
        fb = inp.fallback_share[i] * inp.fallback_api_monthly[i]
        out = np.where(np.isfinite(inp.api_monthly[i]) & inp.allowed[i], inp.api_monthly[i] + np.nan_to_num(fb), np.inf)
        out[cols] = fixed[i] + res[i] * inp.full_usd_per_gpu_hour
        return out

    def optimise(self) -> PlanCost:
        """The cheapest plan found: shadow-price candidates, then improving moves."""
        inp = self.inp
        W, R = inp.allowed.shape
        if W == 0 or R == 0:
            return self.price(np.full(W, -1))
        best: PlanCost | None = None
        seen = set()
        for mult in SHADOW_PRICES if W <= LARGE_ROWS else SHADOW_PRICES_LARGE:
            assign = self._choose(mult * inp.full_usd_per_gpu_hour)
            k = assign.tobytes()
            if k in seen:
                continue
            seen.add(k)
            cand = self.price(assign)
            if cand.feasible and (best is None or cand.key < best.key):
                best = cand
        if best is None:  # every candidate failed to size (should not happen): serve what can be served
            best = self.price(np.where(inp.allowed.any(axis=1), np.argmax(inp.allowed, axis=1), -1))
        return self._improve(best)

    def _standalone_gpu_hours(self) -> np.ndarray:
        """(W, R) GPU-hours a month each workload would hold on each owned route, alone on its pool."""
        inp = self.inp
        W = len(inp.workload_ids)
        out = np.full((W, inp.n_routes), np.nan)
        for route in inp.owned:
            r = route.index
            svc = route.service_s  # (W, G, B)
            p95 = svc * 1e3 * route.tail[None, :, None]
            ok = np.isfinite(svc) & (p95 <= inp.slo_ms[:, None, None])
            # Interactive: GPU-seconds per request at the cheapest point meeting the target, at the peak rate
            # (capacity is reserved for the peak all month); offline: GPU-hours used.
            g = np.array(route.tp_options, dtype=float)[None, :, None]
            b = inp.concurrency_grid[None, None, :]
            gpu_s = np.where(ok, svc * g / b, np.inf).reshape(W, -1).min(axis=1)
            inter = inp.lam_peak * gpu_s * HOURS_PER_MONTH  # GPUs busy at the peak, held every hour
            out[:, r] = np.where(inp.interactive, inter, inp.gpu_hours_day[:, r] * DAYS_PER_MONTH)
        return out

    def _improve(self, best: PlanCost) -> PlanCost:
        inp = self.inp
        W = len(inp.workload_ids)
        allowed = inp.allowed
        for _ in range(MAX_PASSES):
            improved = False
            # Whole deployments: move every member of one owned route to its next-best route.
            for route in inp.owned:
                members = np.flatnonzero(best.assignment == route.index)
                if not members.size:
                    continue
                alt = self._choose(inp.full_usd_per_gpu_hour, rows=members, exclude=route.index)
                if (alt < 0).any():
                    continue
                cand_assign = best.assignment.copy()
                cand_assign[members] = alt
                cand = self.price(cand_assign)
                if cand.feasible and cand.key < best.key:
                    best, improved = cand, True
            # Single workloads (small inventories): every allowed route, first improvement.
            if W <= SINGLE_MOVE_ROWS:
                for i in range(W):
                    for r in np.flatnonzero(allowed[i]):
                        if r == best.assignment[i]:
                            continue
                        cand_assign = best.assignment.copy()
                        cand_assign[i] = r
                        cand = self.price(cand_assign)
                        if cand.feasible and cand.key < best.key:
                            best, improved = cand, True
            if not improved:
                break
        return best


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
    lo, hi = float(busy.min()), float(capacity)
    for _ in range(60):  # bisection on the level; 60 halvings is far below float resolution
        level = (lo + hi) / 2
        if np.clip(level - busy, 0.0, room).sum() < gpu_hours:
            lo = level
        else:
            hi = level
    return np.clip(hi - busy, 0.0, room)
