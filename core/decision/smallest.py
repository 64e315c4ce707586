"""The smallest change that avoids a purchase (issue 32): each node driver's least-relaxed target that lowers the
node count (`smallest_target`), and the cheapest set of relaxations that needs no new node (`stay_on_owned`).

Method. Every answer is checked on a re-plan: the engine run again (scores, plan search, exact bill; without
the licensed stacks' break-even re-plan, which changes no node count) on the inventory with some changes made:
a workload's target (`latency_slo_ms`, as planned: the scenario's SLA scale applied), a workload's data allowed
to leave (`data_policy` external_ok), a licensed stack's fee entered (at zero in the re-plan: the fee itself is
unknown, so the answer names the GPUs it would be paid on and the break-even fee). A change counts only where
the re-plan serves at least as many workloads as the plan.

smallest_target: for a driver with target t, the first candidate is where the node count steps when the plan as
it stands is re-priced with a looser target (bisection to a whole ms on the exact pricing, milliseconds a
step); re-planned there and 1 % tighter, it is the answer when the first lowers the node count and the second
does not (two re-plans). Otherwise the candidate upper bounds are 2 t and each route's p95 alone above t
(where the workload starts to fit another route; the engine's `best_p95_ms`), up to
SearchSettings.smallest_target_max_factor x t, re-planned in increasing order until one lowers the node count;
then bisection between the last that did not and the first that did, to 1 %; then the target 1 % tighter than
the answer is re-planned too, and the answer is kept only where it does not lower the node count. The re-plan
is a search, not a monotone function of the target, so the check is made, not assumed.

stay_on_owned: a greedy search over the node drivers' relaxations (smallest target, target x2, data allowed
to leave) and the licensed stacks whose fee is unknown: each step re-plans every remaining option on top of
the changes taken and keeps the one that lowers the node count to the fewest nodes, then the lowest bill; it
stops when no new node is needed, or no option lowers the count ("none exists" among these options). Changes
the result does not need are then dropped one at a time (each drop re-planned), so the set is the cheapest
the greedy reaches, not the first.

Exploring and whole re-plans. Both searches run first on exploring re-plans (moves from the plan only, no
candidates or restarts) and check their answer on whole re-plans, the search a user who applies it gets; where
the check fails, or moves find no target but a whole re-plan at 2 t lowers the count, the search is made again
on whole re-plans (docs/design/fleet_plan.md). Every re-plan of one answer shares the pools' sizings
(sizing.shared_sizings).

Cost. A whole re-plan ~0.1 s CPU on the sample (sizings shared), an exploring one ~0.08 s; the answer spends at
most SearchSettings.smallest_change_replans whole and smallest_change_light_replans exploring ones, one target's
search at most smallest_target_replans of each. It is
computed when first read (kept in the evaluation's answers), automatically up to
SearchSettings.smallest_change_max_workloads workloads, above that only on demand
(`smallest_change(ev, force=True)`, `hangover evaluate --smallest-change`, the Fleet sizing page's button).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from core.decision import settings as settings_mod
from core.decision.records import NodeDriver, OwnedChange, Relaxation, SmallestChange, StayOnOwned
from core.decision.sizing import shared_sizings
from core.format import integer

if TYPE_CHECKING:
    from core.decision.engine import Evaluation, Scores

TIGHTER = 0.99  # the check: a target 1 % tighter than the answer keeps the node count


@dataclass(frozen=True)
class Change:
    """One relaxation applied in a re-plan: kind "target" (value: the new target in ms, as planned), "policy"
    (data allowed to leave) or "licence" (key: the licensed route id, its fee entered at zero)."""

    kind: str
    key: str
    value: float | None = None


@dataclass(frozen=True)
class Replanned:
    """What the smallest change reads of one re-plan."""

    nodes_needed: int
    total_monthly_usd: float
    served: int
    route_of: dict[str, str]  # workload id -> its verdict route id ("" none)
    gpus_by_route: dict[str, float]


class Replanner:
    """Re-plans of one evaluation with a set of changes, memoised, within a budget (None once it is spent)."""

    def __init__(self, ev: Evaluation, budget: int, light_budget: int = 0):
        self.ev = ev
        self.budget = budget
        self.used = 0
        self._memo: dict[tuple[frozenset[Change], bool], Replanned] = {}
        f = ev.fleet
        if any(d.replicas_added_by_simulation for d in f.deployments):
            # The plan holds replicas its simulation check added; the re-plans do not run the check, so the base
            # they are compared with is the plan without it (one more re-plan).
            from core.decision.engine import _evaluate

            ev = _evaluate(ev.catalog, ev.workloads, ev.scenario, ev.rate, break_even=False, checked=False)
            f = ev.fleet
            self.used += 1
        self.base = Replanned(int(f.nodes_needed), float(f.total_monthly_usd), int((ev.verdict >= 0).sum()),
                              _routes_of(ev), dict(f.gpus_by_route))
        # Exploring re-plans start from the base plan (every relaxation keeps its pairings allowed).
        from core.decision.fleet import plan_start_keys

        self._start = plan_start_keys(ev.plan_inputs, ev.plan.assignment) \
            if ev.plan is not None and ev.plan_inputs is not None else None
        self.light_budget = light_budget
        self.light_used = 0
        # The re-plans differ from one another and from the base in a target, a policy or a fee: most of their
        # pools are the same, and the base's plan sized them (engine.kept_sizings, where it keeps them).
        from core.decision.engine import kept_sizings

        kept = kept_sizings(ev.catalog, ev.scenario, len(ev.workloads))
        self._sizings: dict = kept if kept is not None else {}
        self._scores: Scores | None = None  # the base's route scores: a target or policy change re-scores its rows only
        # One changed row's scores by (row, target as stored, data policy), scored ahead in batches (prescore).
        self._ahead: dict[tuple[int, float, str], Scores] = {}

    def left(self) -> int:
        return self.budget - self.used

    def prescore(self, wid: str, targets) -> None:
        """Score workload `wid`'s row at each of these targets (ms, as planned) in one call, for the re-plans that
        will ask for them. A row's scores read only that row, so each equals the row scored alone; scoring is
        mostly a fixed cost per route and call (~6 stacks x GPU counts of small numpy steps), so a bisection that
        scores its next steps' targets together pays it once for several re-plans."""
        from core.decision.engine import Scores, score_routes

        ev = self.ev
        w = ev.workloads
        i = _row(ev, wid)
        col = w.columns.get_loc("latency_slo_ms")
        policy = str(w.iat[i, w.columns.get_loc("data_policy")])
        todo = sorted({float(t) / ev.scenario.sla_scale for t in targets}
                      - {k[1] for k in self._ahead if k[0] == i and k[2] == policy})
        if len(todo) < 2:
            return  # one target: the re-plan scores it itself (the same call)
        rows = w.iloc[[i] * len(todo)].reset_index(drop=True)
        rows.iloc[:, col] = todo
        got = score_routes(ev.catalog, rows, ev.scenario, ev.rate)
        for k, slo in enumerate(todo):
            self._ahead[(i, slo, policy)] = Scores(got.routes, {n: v[k:k + 1] for n, v in got.a.items()},
                                                   got.value[k:k + 1], got.eff_labels)

    def _rows_scored(self, w, rows: np.ndarray) -> Scores:
        """The scores of these rows of the changed inventory `w`: each row's made ahead (prescore) when one was,
        else all scored here in one call."""
        from core.decision.engine import Scores, score_routes

        slo_col, policy_col = w.columns.get_loc("latency_slo_ms"), w.columns.get_loc("data_policy")
        found = [self._ahead.get((int(i), float(w.iat[i, slo_col]), str(w.iat[i, policy_col]))) for i in rows]
        parts = [p for p in found if p is not None]
        if len(parts) < len(found):
            return score_routes(self.ev.catalog, w.iloc[rows], self.ev.scenario, self.ev.rate)
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        return Scores(first.routes, {n: np.concatenate([p.a[n] for p in parts]) for n in first.a},
                      np.concatenate([p.value for p in parts]), first.eff_labels)

    def __call__(self, changes: frozenset[Change], light: bool = False) -> Replanned | None:
        """The re-plan with `changes` (None once the budget is spent). light: moves from the base plan only
        (an exploring re-plan, a fraction of a search; its own budget); a whole re-plan's answer is used
        where one was made."""
        if not changes:
            return self.base
        if (changes, False) in self._memo:
            return self._memo[(changes, False)]
        light = light and self._start is not None
        if (changes, light) in self._memo:
            return self._memo[(changes, light)]
        if light:
            if self.light_used >= self.light_budget:
                return None
            self.light_used += 1
        else:
            if self.used >= self.budget:
                return None
            self.used += 1
        from core.decision.engine import _evaluate, score_routes

        ev = self.ev
        w = ev.workloads.copy()
        catalog = ev.catalog
        row = {wid: k for k, wid in enumerate(w["workload_id"].astype(str))}
        for c in changes:
            if c.kind == "target":
                w.iloc[row[c.key], w.columns.get_loc("latency_slo_ms")] = float(c.value or 0.0) / ev.scenario.sla_scale
            elif c.kind == "policy":
                w.iloc[row[c.key], w.columns.get_loc("data_policy")] = "external_ok"
            elif c.kind == "licence":
                stacks = tuple(s.model_copy(update={"licence_usd_per_gpu_month": 0.0})
                               if f"owned:{s.stack_id}" == c.key else s for s in catalog.stacks)
                catalog = replace(catalog, stacks=stacks)
        # On the latency model alone, like the base they are compared with (Replanner.__init__): the simulation
        # check cost 38 of the sample's 46 s here, and a relaxation's node count is the model's to judge.
        scores = None
        if catalog is ev.catalog:  # targets and policies only: the other rows' scores are the base's
            if self._scores is None:
                self._scores = score_routes(catalog, ev.workloads, ev.scenario, ev.rate)
            rows = np.array(sorted({row[c.key] for c in changes}), dtype=int)
            scores = self._scores.with_rows(rows, self._rows_scored(w, rows))
        with shared_sizings(self._sizings):
            out = _evaluate(catalog, w, ev.scenario, ev.rate, break_even=False, checked=False,
                            start_keys=self._start if light else None, scores=scores)
        f = out.fleet
        got = Replanned(int(f.nodes_needed), float(f.total_monthly_usd), int((out.verdict >= 0).sum()),
                        _routes_of(out), dict(f.gpus_by_route))
        self._memo[(changes, light)] = got
        return got


def _routes_of(ev) -> dict[str, str]:
    ids = [r.route_id for r in ev.routes] + [""]
    return {str(w): ids[int(v)] for w, v in zip(ev.workloads["workload_id"], ev.verdict, strict=True)}


def _lowers(rp: Replanner, got: Replanned | None, than: int) -> bool:
    return got is not None and got.nodes_needed < than and got.served >= rp.base.served


def smallest_target(rp: Replanner, ev: Evaluation, driver: NodeDriver) -> Relaxation | None:
    """The least-relaxed target of one interactive driver that lowers the node count, verified on whole re-plans
    (None: none found within the search's bound and budget). Searched first on exploring re-plans (moves from the
    plan); the answer stands where the whole re-plan at it lowers the node count and the one 1 % tighter does not,
    else the search is made again on whole re-plans."""
    slo = float(driver.latency_slo_ms or 0.0)
    if slo <= 0:
        return None
    wid = driver.workload_id
    n0 = rp.base.nodes_needed
    found = _target_search(rp, ev, driver, light=True)
    if found is None and rp._start is not None:
        # Moves from the plan find no target that lowers the count within the bound. A whole re-plan can (it may
        # pool differently): one at twice the target decides whether the whole search is worth making.
        probe = rp(frozenset({Change("target", wid, 2.0 * slo)}))
        if not _lowers(rp, probe, n0):
            return None
    elif found is not None:
        hi = found[0]
        hit = rp(frozenset({Change("target", wid, hi)}))
        if hit is None:
            return None
        if _lowers(rp, hit, n0):
            tighter = rp(frozenset({Change("target", wid, TIGHTER * hi)}))
            if tighter is None:
                return None
            if not _lowers(rp, tighter, n0):
                return _relaxation(rp, slo, hi, hit)
    found = _target_search(rp, ev, driver, light=False)
    return None if found is None else _relaxation(rp, slo, *found)


def _relaxation(rp: Replanner, slo: float, hi: float, hit: Replanned) -> Relaxation:
    return Relaxation(f"target {integer(slo)} ms -> {integer(math.ceil(hi))} ms (the smallest that lowers the "
                      f"node count)", "smallest_target", round(rp.base.total_monthly_usd - hit.total_monthly_usd, 2),
                      int(hit.nodes_needed), latency_slo_ms=float(hi))


def _target_search(rp: Replanner, ev: Evaluation, driver: NodeDriver, *,
                   light: bool) -> tuple[float, Replanned] | None:
    """The search of smallest_target (module docstring) on exploring (light) or whole re-plans: the target and
    its re-plan, or None."""
    cut = settings_mod.PLAN
    slo = float(driver.latency_slo_ms or 0.0)
    # The targets' whole re-plans take at most half the answer's budget: the stay-on-owned search needs the rest.
    budget = cut.smallest_target_replans if light else min(rp.left() - rp.budget // 2, cut.smallest_target_replans)
    start = rp.light_used if light else rp.used
    wid = driver.workload_id
    n0 = rp.base.nodes_needed

    def at(t: float) -> Replanned | None:
        if (rp.light_used if light else rp.used) - start >= budget:
            return None
        return rp(frozenset({Change("target", wid, t)}), light=light)

    i = int(np.flatnonzero(ev.workloads["workload_id"].astype(str).to_numpy() == wid)[0])
    alone = ev.a["best_p95_ms"][i]
    top = cut.smallest_target_max_factor * slo
    # Where the workload starts to meet its target alone on another route (rounded up a whole ms), and x2.
    cands = sorted({2.0 * slo} | {float(math.ceil(p + 1e-6)) for p in alone[np.isfinite(alone)] if slo < p <= top})
    lo, hi, hit = slo, None, None
    seed = _priced_breakpoint(ev, i, slo, 2.0 * slo, n0)
    # The targets the first steps may try, scored in one call (Replanner.prescore); the bisection's in its loop.
    first = ([seed, TIGHTER * seed] if seed is not None else []) + cands
    rp.prescore(wid, first + [TIGHTER * c for c in first])
    if seed is not None:
        got = at(seed)
        if got is None:
            return None
        if _lowers(rp, got, n0):
            # Taken as found to 1 %: the check below re-plans 1 % tighter (and bisects below it if that lowers too).
            hi, hit, lo = seed, got, TIGHTER * seed
        else:
            lo = seed
            cands = [c for c in cands if c > seed]
    for c in cands if hi is None else []:
        got = at(c)
        if got is None:
            return None
        if _lowers(rp, got, n0):
            hi, hit = c, got
            break
        lo = c
    if hi is None or hit is None:
        return None
    ahead: set[tuple[float, float]] = set()  # bisection intervals whose targets are scored
    while True:
        while lo < TIGHTER * hi:
            mid = _mid(lo, hi)
            if (lo, hi) not in ahead:
                # The next steps' targets, whichever way each step goes, and the check 1 % tighter than hi.
                todo = _bisection_ahead(lo, hi, BISECTION_AHEAD)
                ahead.update(todo)
                rp.prescore(wid, [_mid(*pair) for pair in todo] + [TIGHTER * hi])
            got = at(mid)
            if got is None:
                return None
            if _lowers(rp, got, n0):
                hi, hit = mid, got
            else:
                lo = mid
        tighter = at(TIGHTER * hi)
        if tighter is None:
            return None
        if not _lowers(rp, tighter, n0):
            break
        # The re-plan is not monotone in the target: 1 % tighter also lowers it; search below that.
        hi, hit, lo = TIGHTER * hi, tighter, slo
    return hi, hit


BISECTION_AHEAD = 3  # bisection steps whose targets one prescore call scores (2^3 - 1 intervals)


def _mid(lo: float, hi: float) -> float:
    """The bisection's next target: a whole ms between lo and hi, or the midpoint where none is left."""
    mid = float(math.ceil((lo + hi) / 2.0))
    return mid if mid < hi else (lo + hi) / 2.0


def _bisection_ahead(lo: float, hi: float, depth: int) -> list[tuple[float, float]]:
    """The intervals the bisection from (lo, hi) may reach within `depth` steps, whichever way each goes."""
    out: list[tuple[float, float]] = []
    frontier = [(lo, hi)]
    for _ in range(depth):
        nxt = []
        for a, b in frontier:
            if a < TIGHTER * b:
                out.append((a, b))
                m = _mid(a, b)
                nxt += [(a, m), (m, b)]
        frontier = nxt
    return out


def _priced_breakpoint(ev: Evaluation, i: int, slo: float, top: float, n0: int) -> float | None:
    """Where the node count steps on the plan as it stands, re-priced (not re-planned: the workload stays on its
    stack and GPU count, any tier of it, as the target_x2 relaxation prices it): the whole ms target between slo and
    top that first needs fewer than n0 nodes, by bisection (~10 pricings of one pool, milliseconds each); None
    where even top does not. A candidate only: smallest_target re-plans it."""
    planner, best = ev.planner, ev.plan
    if planner is None or best is None:
        return None
    v = best.assignment
    group = planner._col_group[int(v[i])]
    tiers = [c for c, k in planner._col_group.items() if k == group and (c == v[i] or planner.inp.allowed[i, c])]

    def nodes(t: float) -> int:
        got = []
        for c in tiers:
            moved = v.copy()
            moved[i] = c
            got.append(planner.price(moved, slo_override=(i, t)))
        ok = [g for g in got if g.feasible]
        return int(min(ok, key=lambda g: g.key).nodes_needed) if ok else n0

    lo, hi = float(math.floor(slo)), float(math.ceil(top))
    if nodes(hi) >= n0:
        return None
    while hi - lo > 1.0:
        mid = float(math.floor((lo + hi) / 2.0))
        if nodes(mid) < n0:
            hi = mid
        else:
            lo = mid
    return hi


def _options(ev: Evaluation, targets: dict[str, Relaxation]) -> list[Change]:
    """The relaxations the stay-on-owned search may combine: per node driver its smallest target and x2, data
    allowed to leave (where it may not), and each licensed stack whose fee is unknown."""
    w = ev.workloads.set_index(ev.workloads["workload_id"].astype(str))
    out: list[Change] = []
    for d in ev.fleet.node_drivers:
        if d.latency_slo_ms is not None:
            rel = targets.get(d.workload_id)
            if rel is not None and rel.latency_slo_ms is not None:
                out.append(Change("target", d.workload_id, rel.latency_slo_ms))
            out.append(Change("target", d.workload_id, 2.0 * d.latency_slo_ms))
        if str(w.loc[d.workload_id, "data_policy"]) == "owned_only":
            out.append(Change("policy", d.workload_id))
    from core.decision.fleet import unknown_fee_routes

    out += [Change("licence", r.route_id) for r in unknown_fee_routes(ev)]
    return out


def _with(state: frozenset[Change], opt: Change) -> frozenset[Change]:
    """The state with one more change; a target replaces the same workload's earlier target."""
    keep = {c for c in state if not (c.kind == opt.kind == "target" and c.key == opt.key)}
    return frozenset(keep | {opt})


def stay_on_owned(rp: Replanner, ev: Evaluation, targets: dict[str, Relaxation]) -> StayOnOwned:
    """The cheapest set of relaxations found that needs no new node (greedy, each step re-planned), or none.
    Searched first on exploring re-plans (moves from the plan); an answer found there stands where its whole
    re-plan needs no new node, else (and where the exploring search finds none) the search is made again on whole
    re-plans."""
    owned = int(ev.fleet.owned_nodes)
    if rp.base.nodes_needed <= owned:
        # Only the simulation check's replicas need a new node: nothing on the latency model to relax.
        f = ev.fleet
        return StayOnOwned(exists=False, owned_nodes=owned, nodes_needed=int(f.nodes_needed), changes=(),
                           total_monthly_usd=round(float(f.total_monthly_usd), 2), bill_change_usd_per_month=0.0,
                           complete=True, replans=rp.used + rp.light_used,
                           simulation_added_replicas=int(sum(d.replicas_added_by_simulation for d in f.deployments)))
    state, cur, complete = _stay_search(rp, ev, targets, light=True)
    if cur.nodes_needed <= owned and state:
        whole = rp(state)
        if whole is not None and whole.nodes_needed <= owned and whole.served >= rp.base.served:
            cur = whole
        else:
            state, cur, complete = _stay_search(rp, ev, targets, light=False)
    else:
        state, cur, complete = _stay_search(rp, ev, targets, light=False)
    return _stay_answer(rp, ev, state, cur, complete)


def _stay_search(rp: Replanner, ev: Evaluation, targets: dict[str, Relaxation], *,
                 light: bool) -> tuple[frozenset[Change], Replanned, bool]:
    """stay_on_owned's greedy search and drops on exploring (light) or whole re-plans: the changes, their
    re-plan, and whether the budget let it finish."""
    owned = int(ev.fleet.owned_nodes)
    state: frozenset[Change] = frozenset()
    cur = rp.base
    complete = True
    options = _options(ev, targets)
    while cur.nodes_needed > owned:
        best: tuple[frozenset[Change], Replanned] | None = None
        for opt in options:
            if opt in state:
                continue
            trial = _with(state, opt)
            got = rp(trial, light=light)
            if got is None:
                complete = False
                break
            if _lowers(rp, got, cur.nodes_needed) and (
                    best is None or (got.nodes_needed, got.total_monthly_usd)
                    < (best[1].nodes_needed, best[1].total_monthly_usd)):
                best = (trial, got)
        if best is None:
            break
        state, cur = best
    if cur.nodes_needed <= owned:
        # Drop what the answer does not need (the greedy's early steps may be made redundant by later ones).
        for c in sorted(state, key=lambda c: (c.kind, c.key, c.value or 0.0)):
            trial = state - {c}
            got = rp(trial, light=light)
            if got is None:
                complete = False
                break
            if got.nodes_needed <= owned and got.served >= rp.base.served \
                    and got.total_monthly_usd <= cur.total_monthly_usd + 0.005:
                state, cur = trial, got
    return state, cur, complete


def _stay_answer(rp: Replanner, ev: Evaluation, state: frozenset[Change], cur: Replanned,
                 complete: bool) -> StayOnOwned:
    """The stay-on-owned record of a set of changes and its re-plan."""
    owned = int(ev.fleet.owned_nodes)
    exists = cur.nodes_needed <= owned
    changes = tuple(_owned_change(ev, c, cur) for c in sorted(state, key=lambda c: (c.kind, c.key)))
    # A licence's fee is unknown: the answer pays while the fee keeps its bill at or under the plan's.
    lic_gpus = sum(c.licence_gpus or 0 for c in changes)
    saves = rp.base.total_monthly_usd - cur.total_monthly_usd
    if lic_gpus:
        changes = tuple(replace(c, break_even_usd_per_gpu_month=round(saves / lic_gpus, 2) if saves > 0 else None)
                        if c.kind == "licence" else c for c in changes)
    return StayOnOwned(exists=exists, owned_nodes=owned, nodes_needed=int(cur.nodes_needed), changes=changes,
                       total_monthly_usd=round(cur.total_monthly_usd, 2),
                       bill_change_usd_per_month=round(cur.total_monthly_usd - rp.base.total_monthly_usd, 2),
                       complete=complete, replans=rp.used + rp.light_used,
                       serves_unserved=tuple(w for w, r in cur.route_of.items() if r and not rp.base.route_of[w]))


def _owned_change(ev: Evaluation, c: Change, got: Replanned) -> OwnedChange:
    """One change of the answer, in words and figures."""
    labels = {r.route_id: r.label for r in ev.routes}
    if c.kind == "target":
        slo = float(ev.plan_inputs.slo_ms[_row(ev, c.key)])
        return OwnedChange("target", f"{c.key}: target {integer(slo)} ms -> {integer(math.ceil(c.value or 0))} ms",
                           c.key, None, slo, c.value, None, None)
    if c.kind == "policy":
        to = got.route_of.get(c.key, "")
        where = f"; it moves to {labels[to]}" if to else ""
        return OwnedChange("policy", f"{c.key}: data allowed to leave (external_ok){where}", c.key, to or None,
                           None, None, None, None)
    # break_even_usd_per_gpu_month is set for the whole answer by stay_on_owned.
    gpus = int(math.ceil(got.gpus_by_route.get(c.key, 0.0) - 1e-9))
    return OwnedChange("licence", f"licence {labels[c.key]}: a fee entered for {integer(gpus)} GPU"
                       f"{'s' if gpus != 1 else ''} (the fee is on top of the bill change)",
                       None, c.key, None, None, gpus, None)


def _row(ev: Evaluation, wid: str) -> int:
    return int(np.flatnonzero(ev.workloads["workload_id"].astype(str).to_numpy() == wid)[0])


def smallest_change(ev: Evaluation, *, force: bool = False) -> SmallestChange | None:
    """The evaluation's smallest change, computed once and kept in `ev.answers`; None when skipped (above
    SearchSettings.smallest_change_max_workloads workloads without force)."""
    def compute() -> SmallestChange | None:
        cut = settings_mod.PLAN
        if not force and len(ev.workloads) > cut.smallest_change_max_workloads:
            return None
        rp = Replanner(ev, cut.smallest_change_replans, cut.smallest_change_light_replans)
        targets: dict[str, Relaxation] = {}
        for d in ev.fleet.node_drivers:
            if d.latency_slo_ms is not None:
                rel = smallest_target(rp, ev, d)
                if rel is not None:
                    targets[d.workload_id] = rel
        stay = stay_on_owned(rp, ev, targets) if ev.fleet.nodes_needed > ev.fleet.owned_nodes else None
        return SmallestChange(targets=targets, stay_on_owned=stay, replans=rp.used + rp.light_used)

    return ev.answers.get("smallest_change", compute)
