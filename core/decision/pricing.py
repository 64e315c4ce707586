"""Pricing an assignment exactly: the monthly cash bill of workloads on routes, from the deployments' sizings.

The second of the fleet plan's three jobs (core.decision.plan): a plan column per workload in, the cash bill
out (max(owned, needed) nodes x full $/node-hour x 730 + API spend + licence fees), with replicas packed onto
whole nodes and offline work filled into the idle GPU-hours first. A move from a priced plan re-prices only
the deployments it touches, bit for bit the bill a full pricing gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from core.decision.economics import HOURS_PER_MONTH
from core.decision.settings import SearchSettings
from core.decision.sizing import _ANY, _SUM, DeploymentSize, OwnedRoute, PlanInputs, Sizer

_NO_ROWS = np.zeros(0, dtype=np.intp)  # no rows (shared: read-only)
_NO_ROWS.flags.writeable = False


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
    fill_capacity: float  # GPUs the offline work may fill each hour up to (fill)
    offline_gpu_hours_per_day: float
    # What a move from this plan re-uses (Planner.price(base=)): per row its API spend, escalated share and
    # whether it escalates onto an owned column; per owned column its part of the bill. None: not a base.
    row_api: np.ndarray | None = field(default=None, repr=False)
    esc_share: np.ndarray | None = field(default=None, repr=False)
    esc_owned: np.ndarray | None = field(default=None, repr=False)
    parts: dict[int, tuple] | None = field(default=None, repr=False)
    owned_usd: float = 0.0  # the owned nodes' monthly cost: the same in every plan of these inputs

    @cached_property
    def fill(self) -> np.ndarray:
        """(24,) GPUs filled with offline work (fill_idle up to fill_capacity). Made when read: only the chosen
        plan's is shown, and the search prices tens of thousands of plans (fill_idle was ~6 % of its CPU at
        100 workloads); the node count needs only how much does not fit (Pricer.price)."""
        fill = fill_idle(self.busy, self.fill_capacity, self.offline_gpu_hours_per_day)
        fill.flags.writeable = False
        return fill

    @cached_property  # read several times per move the search weighs; the plan never changes
    def key(self) -> tuple[float, float, float]:
        """What the search minimises: the bill, then GPU-hours, then latency. The bill to the cent above what
        the owned nodes cost anyway: rounded whole, a sub-cent API spend tied with filling an owned node or
        not depending on where the node price put the cent boundary (a dearer node moved a workload from
        its API onto the owned node: tests/test_engine.py::test_higher_node_price_never_moves_api_to_owned)."""
        return (_round(self.bill - self.owned_usd, 2), _round(self.gpu_hours_per_day, 6),
                _round(self.mean_latency_ms, 3))


def _round(x: float, digits: int) -> float:
    """round(x, digits) as the type of x rounds it, in a tenth of the time for a numpy float: numpy rounds
    x * 10**digits half to even and divides back (not Python's correctly rounded round), which Python's round
    of the product reproduces exactly (tests/test_plan.py compares the two); numpy's own round() of a scalar
    took ~25 us, ~3 % of a 20-workload evaluation's CPU in the search's keys."""
    if type(x) is not float and isinstance(x, np.floating) and math.isfinite(x):
        scale = 10.0 ** digits
        return round(float(x) * scale) / scale
    return round(x, digits)



class Pricer(Sizer):
    """Prices assignments exactly from cached deployment sizings (the planner's second job)."""

    def __init__(self, inp: PlanInputs, cache: dict[tuple, Any] | None = None,
                 settings: SearchSettings | None = None):
        super().__init__(inp, cache, settings)
        self._owned_pos = {o.index: k for k, o in enumerate(inp.owned)}
        w = len(inp.workload_ids)
        self._rows = np.arange(w)
        owned_cols = np.zeros(inp.n_routes + 1, dtype=bool)
        owned_cols[[o.index for o in inp.owned]] = True
        self._fb_owned = owned_cols[inp.fallback_route]  # index -1 hits the spare False at the end
        self._owned_cols = np.array(sorted(o.index for o in inp.owned), dtype=int)
        self._offline = ~inp.interactive  # per row: offline work (filled into idle hours, not sized)
        # The last prefetch_plans batch's per-move terms and sizing requests, which price() then needs again for
        # the same moves from the same base: (base, {assignment bytes: (terms, requests)}).
        self._terms_memo: tuple[PlanCost | None, dict[bytes, tuple]] = (None, {})
        self._base_order: tuple[PlanCost | None, list[int]] = (None, [])  # _positions: a base's sorted positions
        self._base_extra: tuple[PlanCost | None, dict] = (None, {})  # _terms: a base's escalated-in rows per column
        self._base_sums: tuple[PlanCost | None, list[int], tuple] = (None, [], ())  # price: a base's running sums

    def _groups(self, col: np.ndarray) -> dict[int, np.ndarray]:
        """Rows per owned plan column (ascending row order), from one stable sort instead of a mask per column."""
        order = np.argsort(col, kind="stable")
        ordered = col[order]
        lo = np.searchsorted(ordered, self._owned_cols, side="left")
        hi = np.searchsorted(ordered, self._owned_cols, side="right")
        return {int(c): order[a:b] for c, a, b in zip(self._owned_cols, lo, hi, strict=True) if b > a}

    def _row_terms_one(self, assign: np.ndarray, i: int) -> tuple[float, float, bool]:
        """_row_terms of one row as scalars: the same float operations (math.isfinite gives np.isfinite's answer
        on a float without a ufunc call)."""
        inp = self.inp
        ai = int(assign[i])
        on = ai >= 0
        er1 = int(inp.col_route[ai if on else 0])
        api = inp.api_monthly_r[i, er1]
        f1 = inp.fallback_share_r[i, er1] if on else 0.0
        esc1 = on and f1 > 0 and inp.fallback_route[i] >= 0
        fbo = bool(self._fb_owned[i])
        api1 = (api if on and math.isfinite(api) else 0.0) + (f1 * inp.fallback_api_monthly[i] if esc1 and not fbo else 0.0)
        return api1, f1, bool(esc1 and fbo)

    def _row_terms(self, assign: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: API spend (its API, or its escalations paid per request), the escalated share and
        whether its escalations load an owned fallback column."""
        inp = self.inp
        if rows.size == 1:  # a single move's row (most calls): the same float operations on scalars
            api1, f1, esc1 = self._row_terms_one(assign, int(rows[0]))
            return np.array([api1], dtype=float), np.array([f1], dtype=float), np.array([esc1])
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
            same_offline = False
            has = assign >= 0
            prim_groups = self._groups(np.where(has, assign, -1))
            extra_groups = self._groups(np.where(esc_owned, fb, -1)) if esc_owned.any() else {}
            touched = None
        else:
            changed = (assign != base.assignment).nonzero()[0]
            # A plan with parts has its per-row terms too (price() sets all four or none).
            assert base.row_api is not None and base.esc_share is not None and base.esc_owned is not None
            row_api, f, esc_owned = base.row_api.copy(), base.esc_share.copy(), base.esc_owned.copy()
            if changed.size == 1:  # a single move (most pricings): its terms and the touched set from scalars
                i = int(changed[0])
                row_api[i], f[i], esc_owned[i] = self._row_terms_one(assign, i)
                same_offline = not self._offline[i]
                touched = {int(base.assignment[i]), int(assign[i])}
                same_escalations = not (base.esc_owned[i] or esc_owned[i])
                if not same_escalations:
                    touched.add(int(fb[i]))
            else:
                row_api[changed], f[changed], esc_owned[changed] = self._row_terms(assign, changed)
                same_escalations = False
                same_offline = not _ANY(self._offline[changed])
                old_fb = changed[base.esc_owned[changed]]
                new_fb = changed[esc_owned[changed]]
                touched = set(base.assignment[changed].tolist()) | set(assign[changed].tolist()) \
                    | set(fb[old_fb].tolist()) | set(fb[new_fb].tolist())
            # .nonzero() of the 1-D mask: np.flatnonzero's ravel and wrapper cost more than the mask of a few rows.
            prim_groups = {c: (assign == c).nonzero()[0] for c in touched if c >= 0}
            if same_escalations:
                # The moved row escalates onto no owned column, before or after: each column's escalated-in
                # rows are the base's, found once per base (a search prices hundreds of moves from one plan).
                held, extra = self._base_extra
                if held is not base:
                    extra = {}
                    self._base_extra = (base, extra)
                for c in touched:
                    if c >= 0 and c not in extra:
                        extra[c] = (esc_owned & (fb == c)).nonzero()[0] if _ANY(esc_owned) else _NO_ROWS
                extra_groups = {c: extra[c] for c in touched if c >= 0}
            elif _ANY(esc_owned):
                extra_groups = {c: (esc_owned & (fb == c)).nonzero()[0] for c in touched if c >= 0}
            else:  # nothing escalates onto an owned column (most plans): what the masks give, without them
                extra_groups = {c: _NO_ROWS for c in touched if c >= 0}
        # Whether only interactive rows moved: every column's offline work (its own rows, the escalations onto it)
        # is then base's, and so are its offline GPU-hours and GPUs needed at once (_price_column's offline part).
        return row_api, f, esc_owned, touched, prim_groups, extra_groups, same_offline

    def _requests(self, touched, prim_groups, extra_groups, f, slo_override) -> list[tuple]:
        """The deployment sizings pricing these columns asks for (prefetch's requests)."""
        out = []
        for pos in self._positions(touched):
            r = self.inp.owned[pos].index
            req = self._column_request(pos, prim_groups.get(r), extra_groups.get(r), f, slo_override)
            if req is not None:
                out.append(req)
        return out

    def _base_prefix(self, base: PlanCost, positions, touched: set[int]) -> tuple[int, tuple]:
        """Where pricing a move from base may start (price()): the index in `positions` of the first touched
        position, and base's running sums before it with its parts and replicas so far; 0 where `positions`
        are not base's own order (a move onto a column base does not run) or the first is touched."""
        held, order, sums = self._base_sums
        if held is not base:
            order = self._base_order[1] if self._base_order[0] is base else sorted(base.parts or {})
            items = [(p, base.parts[p]) for p in order] if base.parts is not None else []
            sums = [], items, [], {p: k for k, p in enumerate(order)}
            busy, licence, off_hours, off_min, lat_sum, lat_w = np.zeros(24), 0.0, 0.0, 0.0, 0.0, 0.0
            for _, (d, h, m, lic) in items:  # price()'s loop over a feasible plan's parts, recorded before each
                sums[0].append((busy.copy(), licence, off_hours, off_min, lat_sum, lat_w, len(sums[2])))
                if d is not None:
                    sums[2].append((d.gpus_per_replica, d.replicas))
                    busy += d.busy
                    lat_sum += d.lat_sum
                    lat_w += d.lat_w
                off_hours += h
                if m > off_min:
                    off_min = m
                licence += lic
            sums[0].append((busy.copy(), licence, off_hours, off_min, lat_sum, lat_w, len(sums[2])))
            self._base_sums = (base, order, sums)
        if positions is not order:
            return 0, ()
        index = sums[3]
        first = min((index[self._owned_pos[r]] for r in touched if r in self._owned_pos), default=len(order))
        if first == 0:
            return 0, ()
        return first, (sums[0][first], sums[1], sums[2])

    def _positions(self, touched: set[int] | None, base: PlanCost | None = None) -> list[int] | range:
        """Owned positions to visit, ascending: all (touched None), else the touched ones and those running in
        base (the only ones with a part: a position with none adds nothing, so sums keep their order)."""
        if touched is None:
            return range(len(self.inp.owned))
        pos = {self._owned_pos[r] for r in touched if r in self._owned_pos}
        if base is not None and base.parts is not None:
            # The base's positions sorted once per base (a search prices hundreds of moves from one plan);
            # a move onto a column the base does not run needs the merge.
            held, order = self._base_order
            if held is not base:
                order = sorted(base.parts)
                self._base_order = (base, order)
            if all(p in base.parts for p in pos):
                return order
            pos.update(order)
        return sorted(pos)

    def prefetch_plans(self, assigns, base: PlanCost | None) -> None:
        """Size in one batch what pricing each of these assignments from `base` will ask for (the search's
        candidate moves, priced one by one afterwards: the sizings are the same, made together)."""
        reqs: list[tuple] = []
        memo: dict[bytes, tuple] = {}
        for assign in assigns:
            assign = np.asarray(assign)
            terms = self._terms(assign, base, None)
            _, f, _, touched, prim_groups, extra_groups, _ = terms
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
            self.prefetch(requests)
        else:  # prefetch_plans made this move's requests and prefetched them with its batch's
            terms, requests = known
        row_api, f, esc_owned, touched, prim_groups, extra_groups, same_offline = terms
        # Each column priced below was asked for in `requests` (_requests visits every touched one): absent, it
        # has no interactive work (request None).
        asked = {req[0]: req for req in requests}
        api_monthly = float(_SUM(row_api))

        sizes: dict[int, DeploymentSize] = {}
        parts: dict[int, tuple] = {}
        busy = np.zeros(24)
        licence = 0.0
        interactive_gpus: list[tuple[int, int]] = []  # (replica size, count)
        offline_hours = 0.0
        offline_min = 0.0
        lat_sum, lat_w = 0.0, 0.0
        positions = self._positions(touched, base)
        if touched is not None and base is not None and base.parts is not None and positions:
            # The positions before the first touched one are base's own, in base's order: their sums are base's
            # running sums there (the same additions in the same order), taken instead of added again.
            k0, prefix = self._base_prefix(base, positions, touched)
            if k0:
                (acc, licence, offline_hours, offline_min, lat_sum, lat_w, n_gpus), items, gpus = prefix
                busy = acc.copy()
                parts = dict(items[:k0])
                sizes = {p: part[0] for p, part in items[:k0] if part[0] is not None}
                interactive_gpus = gpus[:n_gpus]
                positions = positions[k0:]
        for pos in positions:
            route = inp.owned[pos]
            r = route.index
            if touched is not None and r not in touched:
                part = base.parts.get(pos) if base is not None and base.parts is not None else None
            else:
                held = base.parts.get(pos) if same_offline and base is not None and base.parts is not None else None
                part = self._price_column(pos, route, prim_groups.get(r), extra_groups.get(r), f, asked.get(pos),
                                          None if held is None or (held[0] is not None and not held[0].feasible)
                                          else held[1:3])
            if part is None:
                continue
            d, off_hours, off_min, lic = part
            parts[pos] = part
            if d is not None:
                sizes[pos] = d
                if not d.feasible:
                    return PlanCost(assign, False, np.inf, np.inf, np.inf, 0, 0, 0, api_monthly, licence, sizes,
                                    busy, 0.0, offline_hours)
                interactive_gpus.append((d.gpus_per_replica, d.replicas))
                busy += d.busy
                lat_sum += d.lat_sum
                lat_w += d.lat_w
            offline_hours += off_hours
            if off_min > offline_min:  # max()'s value (never NaN here) without its call: ~20 columns a pricing
                offline_min = off_min
            licence += lic
        gpn = inp.gpus_per_node
        nodes_i = pack_nodes(interactive_gpus, gpn)
        capacity = max(inp.owned_nodes, nodes_i) * gpn
        leftover = self._leftover(busy, capacity, offline_hours)
        extra_nodes = math.ceil(leftover / (gpn * 24.0) - 1e-9) if leftover > 1e-9 else 0  # math: a float's ceil
        if extra_nodes:
            capacity = (max(inp.owned_nodes, nodes_i) + extra_nodes) * gpn
        needed = max(nodes_i + extra_nodes, math.ceil(offline_min / gpn - 1e-9))
        owned_usd = inp.owned_nodes * inp.full_usd_per_node_hour * HOURS_PER_MONTH
        bill = (max(inp.owned_nodes, needed) * inp.full_usd_per_node_hour * HOURS_PER_MONTH
                + api_monthly + licence)
        gpu_hours = sum(g * n for g, n in interactive_gpus) * 24.0 + offline_hours
        # A plan priced with one member's target overridden is not a base for moves (its sizings differ).
        keep = slo_override is None
        return PlanCost(assign, True, bill, gpu_hours, lat_sum / lat_w if lat_w else 0.0, needed, nodes_i,
                        extra_nodes, api_monthly, licence, sizes, busy, capacity, offline_hours,
                        row_api if keep else None, f if keep else None, esc_owned if keep else None,
                        parts if keep else None, owned_usd)

    @staticmethod
    def _leftover(busy: np.ndarray, capacity: float, gpu_hours: float) -> float:
        """Offline GPU-hours a day that do not fit below `capacity` beside `busy` (fill_idle's remainder): all the
        room is filled when the work exceeds it, else the work fits (the water level stays below capacity)."""
        if gpu_hours <= 0:
            return 0.0
        room = float(_SUM(np.maximum(capacity - busy, 0.0)))
        return gpu_hours - room if gpu_hours >= room else 0.0

    def _column_request(self, pos: int, prim: np.ndarray | None, extra: np.ndarray | None, f: np.ndarray,
                        slo_override: tuple[int, float] | None) -> tuple | None:
        """The sizing of owned column `pos`'s interactive deployment: (pos, rows, shares, targets or None,
        primary rows); None when no interactive work runs there."""
        inp = self.inp
        p_int = prim[inp.interactive[prim]] if prim is not None else _NO_ROWS
        # No escalations in (most columns): what indexing no rows gives, without the two steps.
        e_int = extra[inp.interactive[extra]] if extra is not None and extra.size else _NO_ROWS
        inter_rows = np.concatenate([p_int, e_int]) if e_int.size else p_int
        if not inter_rows.size:
            return None
        shares = np.concatenate([_ones(p_int.size), f[e_int]]) if e_int.size else _ones(p_int.size)
        slo = None
        if slo_override is not None and np.any(inter_rows == slo_override[0]):
            slo = inp.slo_ms[inter_rows].copy()
            slo[inter_rows == slo_override[0]] = slo_override[1]
        return pos, inter_rows, shares, slo, p_int.size

    def _offline_part(self, route: OwnedRoute, prim: np.ndarray | None, extra: np.ndarray | None,
                      f: np.ndarray) -> tuple[float, float]:
        """A column's offline GPU-hours a day and offline GPUs needed at once (its own offline rows and the
        offline rows escalating onto it)."""
        inp = self.inp
        p_off = prim[self._offline[prim]] if prim is not None else _NO_ROWS
        e_off = extra[self._offline[extra]] if extra is not None and extra.size else _NO_ROWS
        if not (p_off.size or e_off.size):  # an interactive pool alone (most columns): the sums of nothing
            return 0.0, 0.0
        er = route.route_index
        # np.nansum / np.nanmax's own steps (NaN to 0, sum; NaN ignored, max with 0), without their wrappers.
        own = inp.gpu_hours_day_r[p_off, er]
        esc = inp.gpu_hours_day_r[e_off, er] * f[e_off]
        own[np.isnan(own)] = 0.0
        esc[np.isnan(esc)] = 0.0
        off_min = float(np.fmax.reduce(inp.offline_min_gpus_r[p_off, er], initial=0.0))
        return float(_SUM(own)) + float(_SUM(esc)), off_min

    def _price_column(self, pos: int, route: OwnedRoute, prim: np.ndarray | None, extra: np.ndarray | None,
                      f: np.ndarray, req: tuple | None, offline: tuple[float, float] | None = None) -> tuple | None:
        """One owned column's part of the bill: (its interactive deployment or None, offline GPU-hours a day,
        offline GPUs needed at once, licence $/month); None when nothing runs there. req: the column's sizing
        request (_column_request: None where no interactive work runs there), made once by the caller.
        offline: the column's offline GPU-hours a day and GPUs needed at once where they are known (the base
        plan's, when only interactive rows moved)."""
        if prim is None and extra is None:
            return None
        d = None
        d_gpus = 0
        if req is not None:
            d = self.size(*req)
            if not d.feasible:
                return d, 0.0, 0.0, 0.0
            d_gpus = d.gpus
        off_hours, off_min = offline if offline is not None else self._offline_part(route, prim, extra, f)
        lic = route.licence_usd_per_gpu_month * (d_gpus + np.ceil(off_hours / 24.0 - 1e-9))
        return d, off_hours, off_min, lic


_ONES = np.ones(4096)
_ONES.flags.writeable = False


def _ones(n: int) -> np.ndarray:
    """n ones, read-only (a member's own share of its load): a view of one array, not np.ones' new one per move."""
    return _ONES[:n] if n <= _ONES.size else np.ones(n)


def pack_nodes(replicas: list[tuple[int, int]], gpus_per_node: int) -> int:
    """Whole nodes holding every replica: first-fit decreasing (exact when replica sizes divide the node)."""
    sizes = [(g, n) for g, n in replicas if n > 0]
    if not sizes:
        return 0
    if all(gpus_per_node % g == 0 for g, _ in sizes):  # whole GPUs per node: their count, in any order
        return math.ceil(sum(g * n for g, n in sizes) / gpus_per_node - 1e-9)
    sizes.sort(reverse=True)
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
