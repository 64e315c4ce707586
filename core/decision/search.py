"""Searching for the cheapest assignment: shadow-price candidates, improving moves, restarts.

The third of the fleet plan's three jobs (core.decision.plan): for a ladder of shadow prices per GPU-hour,
every workload picks its cheapest route at that price (a linear, pooled view of capacity); each candidate is
priced exactly (core.decision.pricing); the best one is improved by moving single workloads, whole
deployments, members at the edge of their target and whole pools (a node fewer), and restarted from other
shapes of plan, while the exact bill falls.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from core.decision import latency
from core.decision.economics import DAYS_PER_MONTH, HOURS_PER_MONTH
from core.decision.latency import service_p95_alone_ms
from core.decision.pricing import PlanCost, Pricer
from core.decision.settings import SearchSettings
from core.decision.sizing import OwnedRoute, PlanInputs, _given

# Moves priced per batch in Planner._cheapest: all of a small plan's at once, a bounded number of a large one's.
CHEAPEST_BATCH = 64


class Planner(Pricer):
    """Prices assignments exactly (with a cache of deployment sizings) and searches for the cheapest."""

    def __init__(self, inp: PlanInputs, gpu_hours_month: np.ndarray | None = None,
                 cache: dict[tuple, Any] | None = None, settings: SearchSettings | None = None):
        super().__init__(inp, cache, settings)
        self._lin = None
        # (inputs, linear view) of a planner this one's linear view is built from (linear_parts_like)
        self._lin_like: tuple[PlanInputs, tuple] | None = None
        self._alt_cache: dict[tuple[int, bytes], np.ndarray] = {}  # whole-deployment moves' targets (_improve)
        self._barred_log: list[np.ndarray] = []  # rows of each batch of pairings barred so far (_bar_hopeless)
        self._classes: tuple[np.ndarray | None, np.ndarray | None] | None = None  # (class per row, first rows)
        self._sub: Planner | None = None  # the planner of the classes (optimise)
        # Where the descents ended: assignment bytes -> (its key then, the assignment), the
        # settings.close_loop_alternatives cheapest (local_optima: the plans the simulation check falls back on).
        self._optima: dict[bytes, tuple[tuple, np.ndarray]] = {}
        self._restarts = True  # small inventories: moves from several starts (a restart's own search: one start)
        # The edge pool beside each tier of a stack at one GPU count (plan column -> plan column).
        edge_cols = {(o.route_index, o.tp_options[0]): o.index for o in inp.owned if o.edge}
        self._edge_of = {o.index: edge_cols[(o.route_index, o.tp_options[0])] for o in inp.owned
                         if not o.edge and (o.route_index, o.tp_options[0]) in edge_cols}
        self._evict_budget = self.settings.evict_pricings
        self._alone: np.ndarray | None = None  # standalone_cost(), for the budgeted single moves' order
        self._rank: np.ndarray | None = None  # each row's place in the order the search visits rows (_search_rank)
        # _single_moves: a plan, the focus its moves were tried under, and the rows none of whose moves from it won.
        self._settled: tuple[PlanCost | None, np.ndarray | None, set[int]] = (None, None, set())
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
                 focus: np.ndarray | None = None, singles: bool = True, polishing: bool = False) -> PlanCost:
        """The cheapest plan found: shadow-price candidates (and `start`, a plan known to be allowed here, such
        as the plan without a route this one may also use), then improving moves. ladder=False (with a start)
        skips the shadow-price candidates: only moves from the start.

        focus (bool per plan column, with a start that is a converged plan of the same inputs without those
        columns): while the search is still at that start, only moves onto or off a focus column are priced;
        any other move was priced from the same plan by the search that produced it and did not improve it.
        After a move is taken, small inventories (up to settings.single_move_rows) try every move again; large ones
        keep to the focus. singles=False: no single-workload moves above settings.full_move_rows (a re-plan that only
        needs the deployments to adjust, such as a licence fee's refinement). polishing=True: pool merges and
        single moves in every pass whatever the inventory's size (above settings.merge_pool_rows and
        settings.single_move_rows they are otherwise left out; the single moves then budgeted: see polish)."""
        inp = self.inp
        W, R = inp.allowed.shape
        if W == 0 or R == 0:
            return self.price(np.full(W, -1))
        on_classes = self._optimise_classes(start, ladder, focus, singles, polishing)
        if on_classes is not None:
            return on_classes
        best, others = self._candidates(start, ladder)
        at_start = start is not None and np.array_equal(best.assignment, np.asarray(start))
        moves = singles or self.settings.full_move_rows >= W
        found = self._improve(best, focus if at_start else None, moves, polishing)
        # The cheapest candidate is not always the one moves improve most: on generated inventories of 20-40
        # workloads, moves from another shadow price's candidate ended a whole node cheaper (docs/design/fleet_plan.md
        # "Sizing in batches; moves from several starts"). Small inventories improve the next cheapest candidates too, keep the cheapest plan.
        # Only a full search (ladder; not a re-plan from a given plan, such as a licence fee's refinement).
        restarts = focus is None and ladder and self._restarts
        if restarts and self.settings.multi_start_rows >= W:
            # The candidate at the lowest shadow price (everything on owned routes: the dearest before moves, and
            # the best start on 3 of the 15 generated inventories checked), then the cheapest others.
            rest = [c for c in others if c is not best]
            for cand in (rest[:1] + sorted(rest[1:], key=lambda c: c.key))[:self.settings.multi_starts]:
                end = self._improve(cand, None, moves)
                if end.key < found.key:
                    found = end
            found = self._without_stacks(found, moves, self.settings.exclude_stacks)
            found = self._from_tighter_targets(found, moves)
        elif restarts and self.settings.restart_rows >= W and found.nodes_needed > self.inp.owned_nodes:
            # Up to settings.restart_rows, one restart (each is a search of its own) where the plan buys nodes.
            found = self._without_stacks(found, moves, 1)
        if restarts and self.settings.dearer_api_min_rows < W <= self.settings.dearer_api_rows and found.nodes_needed > self.inp.owned_nodes:
            for scale in self.settings.dearer_apis:
                found = self._from_dearer_apis(found, moves, scale)  # a start of another shape (its docstring)
        return found

    def _candidates(self, start: np.ndarray | None, ladder: bool) -> tuple[PlanCost, list[PlanCost]]:
        """The cheapest start (`start` priced, and with ladder the shadow-price candidates) and the feasible
        shadow-price candidates. Pairings a pooled deployment cannot hold are barred and the candidates
        re-chosen, up to settings.max_repair_rounds times, while no candidate could be sized at all."""
        W = len(self.inp.workload_ids)
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
        for _ in range(self.settings.max_repair_rounds):
            best, seen, others = warm, set(), []
            for mult in (self.settings.shadow_prices if self.settings.large_rows >= W else self.settings.shadow_prices_large) if ladder or warm is None else ():
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
        return best, others

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
        them). Up to settings.dearer_api_rows: at 10,000 and 20,000 workloads x1.5 cost ~3 s for no node. From
        settings.dearer_api_min_rows: with several starts and their restarts, generated inventories of 20, 44 and
        54 workloads still planned a node more without it (tests/test_plan.py, docs/design/fleet_plan.md)."""
        inp = self.inp
        sub = Planner(replace(inp, api_monthly_r=inp.api_monthly_r * scale,
                              fallback_api_monthly=inp.fallback_api_monthly * scale),
                      self._gpu_hours_month, cache=self._cache, settings=self.settings)
        sub._restarts = False
        return self._restart_from(sub.optimise(singles=False), found, moves)

    def from_whole_moves(self, found: PlanCost) -> PlanCost:
        """A restart from the cheapest shadow-price candidate moved by whole deployments only (pool merges and a
        node fewer included) until none helps, then by every move; the cheaper of it and `found`.

        The search's own descent from that candidate takes single moves from the start, and on generated
        inventories of 184 and 195 workloads it and every restart ended dearer than this one: 4 nodes where 3 do
        ($16,052.13 a month), and $686.42 at the same 3 (bench/bench_plan_constants.py --set
        whole_moves_restart=0 --seeds 1000:1016 --rows 61:300; docs/design/fleet_plan.md)."""
        start, _ = self._candidates(None, True)
        return self._restart_from(self.optimise(start=start.assignment, ladder=False, singles=False), found, True)

    def polish(self, found: PlanCost) -> PlanCost:
        """Above settings.merge_pool_rows workloads up to settings.polish_rows, where the plan buys nodes: moves
        from `found` (the plan every restart reached) with pool merges and single moves in every pass (the single
        moves budgeted by work: settings.single_move_pricings a pass, in the order of their expected saving),
        until none helps; `found` itself elsewhere.

        Large inventories' passes leave both out (a pass prices every ordered pair of running pools, and every
        workload on every route), and their moves of one pool or of the members at a pool's edge left
        generated inventories of 800-50,000 workloads 1-14 nodes dearer than plans these moves reach
        (docs/design/fleet_plan.md "The polish of large inventories"). A descent from the finished plan: it
        never raises the bill."""
        W = len(self.inp.workload_ids)
        if not self.settings.merge_pool_rows < W <= self.settings.polish_rows or not found.feasible \
                or found.nodes_needed <= self.inp.owned_nodes:
            return found
        end = self.optimise(start=found.assignment, ladder=False, polishing=True)
        return end if end.feasible and end.key < found.key else found

    def _from_tighter_targets(self, found: PlanCost, moves: bool) -> PlanCost:
        """A restart from the plan searched with every target settings.tighter_targets times as tight (one start): a
        plan that holds the tighter targets holds these, so the search should never end dearer than it. On a
        generated 18-workload inventory it did: targets x0.8 planned $24,861.01 a month against $25,129.10
        for the same workloads (bench/bench_plan_properties.py seed 43); this restart finds $24,894.24."""
        inp = self.inp
        # Its own sizing cache and standalone view: both depend on the targets.
        sub = Planner(replace(inp, slo_ms=inp.slo_ms * self.settings.tighter_targets), settings=self.settings)
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
        # On the workload classes where the start keeps each on one route, as optimise searches.
        end = self.optimise(start=assign, ladder=False, singles=moves)
        return end if end.feasible and end.key < found.key else found

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
            sub = Planner(replace(inp, allowed=allowed), self._gpu_hours_month, cache=self._cache,
                          settings=self.settings)
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

    def fewer_nodes(self, found: PlanCost) -> PlanCost:
        """Up to settings.room_rows workloads, where `found` buys nodes: a plan a node fewer made by moving the
        members of one running pool, one by one, into the room other running pools have and onto APIs (no
        move that raises the pools' GPUs or the nodes), then improved by every move; the cheaper of it and
        `found`, up to settings.room_rounds times in a row.

        Single moves, whole-pool moves and the node-fewer move (moving a whole pool, or the workloads holding
        the most GPUs per API dollar, to their cheapest routes on the linear view) cannot reach a plan where
        half a pool's members leave for the room of two others while some of those pools' own members go to
        APIs: each step alone raises the bill until the last member leaves. On a generated 117-workload
        inventory (bench/bench_plan_properties.py seed 66, --rows 61:120) every restart planned 3 nodes,
        $52,883.72 a month above the owned node; the plan the same workloads get at APIs x1.5 needs 2
        ($28,038.71 at these prices), and this move reaches 2 nodes, $29,816.84 (docs/design/fleet_plan.md
        "A node fewer through the pools' room"). On the workload classes where `found` keeps each on one
        route (split-invariant, as optimise searches)."""
        W = len(self.inp.workload_ids)
        for _ in range(self.settings.room_rounds if self.settings.room_rows >= W else 0):
            if not found.feasible or found.nodes_needed <= self.inp.owned_nodes:
                break
            on = self._class_planner(found.assignment)
            if on is not None:
                sub, cls, first = on
                moved = sub._into_room(sub.price(found.assignment[first]))
                start = None if moved is None else self.price(moved.assignment[cls])
            else:
                start = self._into_room(found)
            if start is None or not start.feasible or not start.key < found.key:
                break
            end = self.optimise(start=start.assignment, ladder=False)
            found = end if end.feasible and end.key < start.key else start
        return found

    def _into_room(self, best: PlanCost) -> PlanCost | None:
        """The first of the running interactive pools (the most GPUs first) whose members, moved one by one
        (_roomy_move; the cheapest per share of the pool's load first, each from the plan as it then stands)
        give a plan a node fewer and cheaper than `best`; that plan, or None."""
        inp = self.inp
        rank = self._search_rank()
        # Only this pool's GPUs fall (no move raises another's): one holding fewer than a node fewer needs cannot.
        need = self._gpus_for_a_node_fewer(best, _pool_gpus(best))
        for _, pos in sorted(((-d.gpus, pos) for pos, d in best.sizes.items()
                              if d.feasible and d.gpus >= need and d.n_primary)):
            d = best.sizes[pos]
            col = inp.owned[pos].index
            prim = d.rows[:d.n_primary].tolist()
            share = d.load_shares(inp.lam_peak)[:d.n_primary].tolist()
            order = []
            for i, s in zip(prim, share, strict=True):
                first = self._roomy_move(best, i, col)
                if first is not None:
                    order.append(((first.bill - best.bill) / max(s, 1e-12), int(rank[i]), i))
            plan = best
            for *_, i in sorted(order):
                moved = self._roomy_move(plan, i, col)
                if moved is None:
                    continue
                plan = moved
                if plan.nodes_needed < best.nodes_needed:
                    if plan.key < best.key:
                        return plan
                    break
        return None

    def _roomy_move(self, plan: PlanCost, i: int, col: int) -> PlanCost | None:
        """The cheapest plan with row i moved off plan column `col` onto another running pool or an API route,
        raising neither the interactive pools' GPUs nor the nodes (opening a pool never frees one); None: no
        such move."""
        inp = self.inp
        running = {inp.owned[pos].index for pos, d in plan.sizes.items() if d.feasible and d.gpus}
        targets = [t for t in np.flatnonzero(inp.allowed[i]).tolist()
                   if t != col and (t in running or t not in self._col_group)]
        self._speculate(plan, [(np.array([i]), t) for t in targets])
        gpus = _pool_gpus(plan)
        out = None
        for t in targets:
            assign = plan.assignment.copy()
            assign[i] = t
            cand = self.price(assign, base=plan)
            if cand.feasible and cand.nodes_needed <= plan.nodes_needed and _pool_gpus(cand) <= gpus \
                    and (out is None or cand.key < out.key):
                out = cand
        return out

    def _class_planner(self, assignment: np.ndarray | None) -> tuple[Planner, np.ndarray, np.ndarray] | None:
        """(the workload classes' planner, each row's class, each class's first row) where there are classes and
        `assignment` (if given) keeps every class on one route; None otherwise (the search runs on rows)."""
        from core.decision.classes import class_inputs, scale_classes

        if self._classes is None:
            got = scale_classes(self.inp)
            self._classes = (None, None) if got is None else got
        cls, first = self._classes
        if cls is None or first is None:
            return None
        if assignment is not None and not np.array_equal(assignment[first][cls], assignment):
            return None
        if self._sub is None:
            # Sizings of class rows are shared only between planners with the same classes (the key's row
            # numbers mean classes, and other inputs number them otherwise).
            key = ("classes", hashlib.blake2b(cls.tobytes(), digest_size=16).digest())
            shared = self._cache.setdefault(key, {})
            self._sub = Planner(class_inputs(self.inp, cls, first), cache=shared, settings=self.settings)
        return self._sub, cls, first

    def _optimise_classes(self, start, ladder, focus, singles=True, polishing=False) -> PlanCost | None:
        """The search run on workload classes (core.decision.classes), its plan priced exactly on the workloads;
        None when every workload is its own class or `start` splits a class (then the search runs on rows)."""
        on = self._class_planner(None if start is None else np.asarray(start))
        if on is None:
            return None
        sub, cls, first = on
        class_start = None if start is None else np.asarray(start)[first]
        found_c = sub.optimise(start=class_start, ladder=ladder, focus=focus, singles=singles, polishing=polishing)
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
                ratios[blk] = given[blk] if blk in given else \
                    latency.length_ratios(n_out, inp.output_p95_tokens, blk, 1.0 - inp.sla_tail)[0]

        def gpu_seconds(route: OwnedRoute) -> np.ndarray:
            svc = route.service_s  # (W, G, B)
            blk = latency.block_tokens_of(route.stack)
            p95 = service_p95_alone_ms(svc, route.prefill_ms, n_out, inp.output_p95_tokens, blk, ratios[blk])
            ok = np.isfinite(svc) & (p95 <= inp.slo_ms[:, None, None])
            g = np.array(route.tp_options, dtype=float)[None, :, None]
            b = inp.concurrency_grid[None, None, :]
            return np.where(ok, svc * g / b, np.inf).min(axis=1)  # (W, B)

        if self.settings.parallel_rows <= W and len(distinct) > 1:
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

    def _improve(self, best: PlanCost, focus: np.ndarray | None = None, singles: bool = True,
                 polishing: bool = False) -> PlanCost:
        inp = self.inp
        W = len(inp.workload_ids)
        focused = focus is not None
        for _ in range(self.settings.max_passes):
            improved = False
            # Whole deployments: move every member of one owned route to its next-best route.
            cols = [o.index for o in inp.owned]
            moves: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}  # from the current plan
            ahead = 0  # the routes cols[:ahead] have their moves in `moves` (sized ahead: _speculate)
            # How many moves to size ahead: after a move is taken the next is likely taken too (the licensed
            # stack's re-plan at 100,000 workloads took ~35 in a row, each after sizing 8), so one; doubled
            # up to settings.speculate_moves while none is. Sizing ahead only fills the cache: the same plan either way.
            span = self.settings.speculate_moves
            for k, col in enumerate(cols):
                if k >= ahead:
                    window: list[tuple[np.ndarray, np.ndarray]] = []
                    while ahead < len(cols) and len(window) < span:
                        move = moves[cols[ahead]] = self._whole_move(best, focus, cols[ahead])
                        if move is not None:
                            window.append(move)
                        ahead += 1
                    self._speculate(best, window)
                    span = min(2 * span, self.settings.speculate_moves)
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
            if polishing or self.settings.merge_pool_rows >= W:
                merged = self._merge_pools(best, focus)
                if merged is not best:
                    best, improved = merged, True
            # A focused re-plan (a licensed stack's break-even fee) starts from a plan whose pools were already
            # thinned at the edge; its own evictions bought nothing on generated 30k inventories for ~100 sizings.
            if self.settings.single_move_rows < W and not focused:
                evicted = self._evict(best)
                if evicted is not best:
                    best, improved = evicted, True
            # Single workloads (small inventories): every allowed route, first improvement. Above settings.full_move_rows,
            # of another stack or GPU count only the top tier is tried (its pool is where most members are); the
            # other tiers of the workload's own stack and GPU count are tried too (out of a pool it holds back).
            # (Copies of one workload are one row here: the search runs on workload classes, see optimise.)
            single = (self.settings.single_move_rows >= W or polishing) and singles
            if single:
                best, gained = self._single_moves(best, focus)
                improved |= gained
            if not focused:
                # Large inventories: a node fewer again right away. Dropping a node rarely opens a whole-deployment
                # move (at 100,000 generated workloads, passes 2-6 gained only by dropping nodes, ~0.6 s of
                # whole moves each); the next pass still tries every move, so the search ends where none helps.
                for _ in range(self.settings.max_passes if self.settings.single_move_rows < W else 1):
                    fewer = self._drop_node(best)
                    if fewer is best:
                        break
                    best, improved = fewer, True
            if not improved and single and self.settings.budget_move_rows < W <= self.settings.single_move_rows:
                # (Not in a large inventory's polish: a pass of every move at 1,000 workloads is ~10,000 pricings.)
                # The budgeted passes found nothing more: one pass of every move before the search ends, so it
                # ends where the exhaustive search would (no single move lowers the bill or the GPU-hours).
                best, improved = self._single_moves(best, focus, exhaustive=True)
            if not improved:
                break
            if self.settings.single_move_rows >= W:
                focus = None  # the plan moved: every move is new again (small inventories afford them all)
        self._record_optimum(best)
        return best

    def _record_optimum(self, plan: PlanCost) -> None:
        """Keep `plan`, where a descent ended, among the settings.close_loop_alternatives cheapest kept so far."""
        keep = self.settings.close_loop_alternatives
        if keep <= 0 or not plan.feasible:
            return
        self._optima[plan.assignment.tobytes()] = (plan.key, plan.assignment)
        if len(self._optima) > keep:
            del self._optima[max(self._optima, key=lambda k: self._optima[k][0])]

    def local_optima(self) -> list[np.ndarray]:
        """The assignments where this planner's descents (and its workload classes' planner's, on the rows)
        ended, the cheapest first by their key when reached; at most settings.close_loop_alternatives."""
        found = list(self._optima.values())
        if self._sub is not None and self._classes is not None and self._classes[0] is not None:
            cls = self._classes[0]
            found += [(key, a[cls]) for key, a in self._sub._optima.values()]
        found.sort(key=lambda kv: kv[0])
        return [a for _, a in found[:self.settings.close_loop_alternatives]]

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
        the row's plan inputs (core.decision.classes.row_hashes). Above settings.single_move_rows (no single moves; ties
        only between rows a node-fewer or eviction move picks): the inventory's order, not ~0.5 s of hashing
        at 100,000 workloads."""
        if self._rank is None:
            W = len(self.inp.workload_ids)
            if self.settings.single_move_rows < W:
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

        def candidates() -> Iterator[np.ndarray]:  # made as priced: P x (P - 1) plans at 100,000 rows each
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
                yield assign
        return self._cheapest(best, candidates())

    def _single_moves(self, best: PlanCost, focus: np.ndarray | None,
                      exhaustive: bool = False) -> tuple[PlanCost, bool]:
        """One pass of single-workload moves, first improvement; whether one lowered the bill or GPU-hours.

        Every allowed plan column; above settings.full_move_rows, of another stack or GPU count only the top tier (its
        pool is where most members are), and the other tiers of the workload's own stack and GPU count (out
        of a pool it holds back). (Copies of one workload are one row here: see optimise's classes.)
        Pruning these moves was tried and dropped (docs/design/fleet_plan.md "Single moves"): skipping members
        whose leaving frees nothing cut 300 generated workloads from 92 s to 14 s with the same plan, but
        lost a whole node on 40 and two on 100 (the search is first-improvement, and moves that gain only
        latency open the way to later ones).
        """
        inp = self.inp
        W = len(inp.workload_ids)
        if self.settings.budget_move_rows < W and not exhaustive:
            return self._budgeted_moves(best, focus)
        gained = False
        for i in np.argsort(self._search_rank()).tolist():
            # A row whose every move was priced from this same plan (and focus) and none taken: pricing is a
            # function of the plan and the move, so they would be refused again (the pass after a pass's last
            # taken move re-tried every row after it: ~a third of the single moves at 300 workloads).
            held, held_focus, done = self._settled
            if held is best and held_focus is focus and i in done:
                continue
            moved = False
            own = self._col_group.get(int(best.assignment[i]))

            def tried(r, best, own=own, i=i):
                if r == best.assignment[i]:
                    return False
                if self.settings.full_move_rows < W and r in self._col_group and r not in self._top_cols \
                        and self._col_group[int(r)] != own:
                    return False
                return focus is None or bool(focus[r]) or bool(focus[best.assignment[i]])

            targets = inp.allowed[i].nonzero()[0].tolist()
            # Whether each is tried, from the plan as it stands (again from the new plan after a move is taken).
            ok = [tried(t, best) for t in targets]
            # Every move of this row sized in one batch (few are taken: on 100 generated workloads sizing them
            # settings.speculate_moves at a time took 1.6x as long); after a move is taken, the rest from the new plan.
            self._speculate(best, [(i, t) for t, yes in zip(targets, ok, strict=True) if yes])
            for k, r in enumerate(targets):
                if not ok[k]:
                    continue
                cand = self._better(best, np.array([i]), r)
                if cand is not None:
                    # Another pass only after a gain in the bill or GPU-hours (small inventories: any gain): on
                    # 300 generated workloads the last two of six passes moved members for latency alone.
                    gained |= self.settings.full_move_rows >= W or cand.key[:2] < best.key[:2]
                    best, moved = cand, True
                    ok[k + 1:] = [tried(t, best) for t in targets[k + 1:]]
                    self._speculate(best, [(i, t) for t, yes in zip(targets[k + 1:], ok[k + 1:], strict=True) if yes])
            if not moved:  # every move of row i priced from best, none taken
                if held is best and held_focus is focus:
                    done.add(i)
                else:
                    self._settled = (best, focus, {i})
        return best, gained

    def _tried(self, i: int, r: int, best: PlanCost, focus: np.ndarray | None) -> bool:
        """Whether the single moves try row i on plan column r from best (_single_moves' rule)."""
        a = int(best.assignment[i])
        if r == a:
            return False
        if self.settings.full_move_rows < len(self.inp.workload_ids) and r in self._col_group \
                and r not in self._top_cols and self._col_group[r] != self._col_group.get(a):
            return False
        return focus is None or bool(focus[r]) or bool(focus[a])

    def _move_estimates(self, best: PlanCost) -> np.ndarray:
        """(W, C) expected monthly saving of moving each row alone to each plan column (-inf: not allowed):
        what the row costs where it is (on an owned pool: its linear cost with its share of the pool's idle
        GPUs, the pool's GPUs priced at the full $/GPU-hour spread over its members by GPU-hours held alone)
        less what it would cost on the column on the linear view. Only orders the moves; each is priced exactly."""
        inp = self.inp
        if self._alone is None:
            self._alone = self.standalone_cost()
        alone = self._alone
        rows = np.arange(len(inp.workload_ids))
        a = best.assignment
        here = np.where(a >= 0, alone[rows, np.maximum(a, 0)], np.inf)
        full = inp.full_usd_per_gpu_hour
        for pos, d in best.sizes.items():
            if not d.feasible or not d.n_primary:
                continue
            col = inp.owned[pos].index
            prim = d.rows[:d.n_primary]
            held = _nan_to_num(self._gpu_hours_month[prim, col])
            if held.sum() <= 0:
                continue
            # The pool's GPUs beyond what its members hold alone, charged to them by what they hold.
            idle = max(d.gpus * HOURS_PER_MONTH - float(held.sum()), 0.0)
            here[prim] += idle * full * held / held.sum()
        ok = np.isfinite(alone) & inp.allowed
        with np.errstate(invalid="ignore"):  # inf - inf where not allowed: masked below
            est = here[:, None] - alone
        # An unserved row (here inf) first: any allowed column serves it.
        return np.where(ok, np.nan_to_num(est, posinf=1e300, neginf=-1e300), -np.inf)

    def _budgeted_moves(self, best: PlanCost, focus: np.ndarray | None) -> tuple[PlanCost, bool]:
        """One pass of single moves above settings.budget_move_rows: the moves in the order of their expected
        saving (_move_estimates), first improvement, each row moved at most once a pass; the pass ends after
        settings.single_move_pricings exact pricings, or settings.single_move_patience in a row that lowered
        neither the bill nor the GPU-hours. Whether one lowered the bill or GPU-hours."""
        est = self._move_estimates(best)
        i_all, r_all = np.nonzero(np.isfinite(est))
        order = np.lexsort((r_all, self._search_rank()[i_all], -est[i_all, r_all]))
        queue = list(zip(i_all[order].tolist(), r_all[order].tolist(), strict=True))  # Python ints, made in C
        moved: set[int] = set()
        gained = False
        pricings = idle = k = 0
        budget, patience = self.settings.single_move_pricings, self.settings.single_move_patience
        while k < len(queue) and pricings < budget and idle < patience:
            # Sized together: no more moves than the budget and the patience have left.
            span = min(self.settings.speculate_moves, budget - pricings, patience - idle)
            window: list[tuple[int, int]] = []
            while k < len(queue) and len(window) < span:
                i, r = queue[k]
                k += 1
                if i not in moved and self._tried(i, r, best, focus):
                    window.append((i, r))
            self._speculate(best, [(np.array([i]), r) for i, r in window])
            for i, r in window:
                pricings += 1
                cand = self._better(best, np.array([i]), r)
                if cand is None:
                    idle += 1
                    continue
                saved = cand.key[:2] < best.key[:2]
                gained |= saved
                idle = 0 if saved else idle + 1
                best = cand
                moved.add(i)
                # The rest of the window was sized from the old plan: put it back in the queue.
                rest = window[window.index((i, r)) + 1:]
                queue[k:k] = rest
                break
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
        (up to settings.drop_node_pools), the smallest pairs that do, the smallest ones together. Workloads: each one's
        GPUs are its share (by offered load at the peak) of its pool's, or its offline GPU-hours a day / 24,
        moved in sets freeing settings.drop_node_margins times the GPUs the node fewer needs. Each candidate is priced
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
        need = self._gpus_for_a_node_fewer(best, inter_gpus)
        candidates = []

        # Whole pools emptied into the pools still running (their slack is free) or an API: each pool that alone
        # frees enough, the pairs of smaller ones that do (the smallest pairs first), the smallest pools together.
        pools = sorted((d.gpus, pos) for pos, d in best.sizes.items() if d.gpus and d.n_primary)
        # Interactive pools with replicas: joining one may fit in its slack, opening a new one never frees GPUs.
        running = np.array([inp.owned[pos].index for pos, d in best.sizes.items() if d.gpus], dtype=int)
        idle_cols = np.setdiff1d(self._owned_cols, running)
        sets = [[pos] for g, pos in pools if g >= need][:self.settings.drop_node_pools]
        small = [(g, pos) for g, pos in pools if g < need]
        sets += [[p1, p2] for _, p1, p2 in sorted((g1 + g2, p1, p2) for (g1, p1), (g2, p2)
                                                  in itertools.combinations(small, 2) if g1 + g2 >= need)
                 ][:self.settings.drop_node_pools]
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
        for m in self.settings.drop_node_margins:
            k = int(np.searchsorted(freed, need * m - 1e-9)) + 1
            candidates.append(np.where(np.isin(self._rows, order[:k]), api_col, a))
            if k >= order.size:
                break
        return self._cheapest(best, candidates)

    def _gpus_for_a_node_fewer(self, best: PlanCost, inter_gpus: int) -> int:
        """Interactive GPUs the plan must shed to need a node fewer (a whole node's where the offline work's
        own nodes set the count: what it frees is filled with that work)."""
        gpn = self.inp.gpus_per_node
        need = inter_gpus - (best.nodes_needed - 1) * gpn
        return max(need, gpn) if best.nodes_offline_extra or need <= 0 else need

    def _cheapest(self, best: PlanCost, candidates: Iterable[np.ndarray]) -> PlanCost:
        """The cheapest of these assignments (moves from best, sized in batches of CHEAPEST_BATCH) if it beats
        best; else best. In batches, not all at once: each holds a copy of the plan's per-row terms until priced
        (a large inventory's pool merges, every ordered pair of its pools, held ~7 GB at 100,000 workloads)."""
        winner = best
        it = iter(candidates)
        while batch := list(itertools.islice(it, CHEAPEST_BATCH)):
            self.prefetch_plans(batch, best)
            for assign in batch:
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
        exactly; the cheapest is kept while the bill falls. Large inventories only: up to settings.single_move_rows
        workloads the single moves already try every member on every route. The budget (settings.evict_pricings
        exact pricings per search) is a count, not a clock, so the plan does not depend on the machine.
        """
        inp = self.inp
        full = inp.full_usd_per_gpu_hour
        looked: set[int] = set()
        while self._evict_budget > 0:
            moved = False
            for pos, d in sorted(best.sizes.items(), key=lambda kv: -kv[1].gpus)[:self.settings.evict_deployments]:
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
                    None if q_all is None else q_all[prim], 1.0 - inp.sla_tail)[:, 0, 0]
                order = prim[np.lexsort((self._search_rank()[prim], -(p95_alone / inp.slo_ms[prim])))]
                edge = self._edge_of.get(route.index)
                candidates: list[np.ndarray] = []
                for k in self.settings.evict_groups:
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


def _pool_gpus(plan: PlanCost) -> int:
    """GPUs the plan's interactive pools hold."""
    return sum(d.gpus for d in plan.sizes.values() if d.feasible)


def _nan_to_num(x: np.ndarray, nan: float = 0.0) -> np.ndarray:
    """np.nan_to_num(x, nan=nan) (infinities to the largest finite floats) in two passes over x instead of
    seven: the search's linear terms are (workloads x plan columns) arrays of ~13M values at 100k workloads."""
    big = np.finfo(float).max
    return np.where(np.isnan(x), nan, np.clip(x, -big, big))
