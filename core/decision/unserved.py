"""Unserved work priced: for each workload a plan leaves without a route, the cheapest route it would have after the
smallest change (a route outside a fleet option, a relaxed target, a licence fee entered, an API allowed by policy).

A plan that serves less looks cheaper: its unserved work costs $0. A bill is only comparable with another
beside the work each leaves out, priced. The price here is a standalone estimate (the workload on its own on that
route: replicas x GPUs per replica at the node's full rate, or its API spend), not a pooled plan.

Why the target is relaxed first and in absolute steps: the relaxed targets are multiples of what each route
gives the workload alone (not of its current target), so a workload unserved at two SLA scales
is priced the same at both, and one served at a looser scale costs no more there than the price its unserved self
carried at the tighter one (a route's standalone cost only falls as its target loosens). The bill with unserved
work priced then does not fall as targets tighten, which the cash bill alone does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.decision import engine as eng
from core.decision.fleet import route_permitted
from core.format import duration_ms, money
from core.models import TASK_CLASSES, Weights

# The relaxed targets tried: each route's p95 alone (one request per replica) times these (1.0 is rarely enough:
# a queue needs some room), smallest first.
TARGET_STEPS = (1.05, 1.25, 1.5, 2.0)
# (row, relaxed target) pairs scored in one call at most (bounds the (pairs x routes) arrays of a call).
LADDER_CHUNK_ROWS = 4096
# The rules tried, smallest change first: as they stand, then licensed weights at a fee entered, then an API
# allowed for data that may not leave, then both.
RULES = ((False, False), (True, False), (False, True), (True, True))


@dataclass(frozen=True, slots=True)
class UnservedRoute:
    """One unserved workload's cheapest route after the smallest change that gives it one (None: none found)."""

    workload_id: str
    change: str | None  # what it takes, in words ("target 620 ms, now 250 ms", "outside this option", ...)
    route_id: str | None
    route: str | None
    monthly_usd: float | None  # standalone estimate; a licence of unknown fee is not in it (the change says so)

    def words(self) -> str:
        """'code-completion: Llama 3.3 70B (FP8), $54,210/month (target 620 ms, now 500 ms)'."""
        if self.route is None:
            return f"{self.workload_id}: no route at any change tried"
        return f"{self.workload_id}: {self.route}, {money(self.monthly_usd)}/month ({self.change})"


@dataclass(frozen=True, slots=True)
class UnservedWork:
    """The unserved workloads of one plan or option, each priced where a route exists after some change."""

    routes: tuple[UnservedRoute, ...]

    @property
    def count(self) -> int:
        return len(self.routes)

    @property
    def priced_usd_per_month(self) -> float:
        """The unserved work's estimated monthly cost, over the workloads priced."""
        return round(float(sum(r.monthly_usd or 0.0 for r in self.routes)), 2)

    @property
    def unpriced(self) -> int:
        """Unserved workloads no change tried gives a route."""
        return sum(r.route is None for r in self.routes)

    def words(self, shown: int = 3) -> str:
        """Up to `shown` workloads priced in words, then how many more ('' when nothing is unserved)."""
        if not self.routes:
            return ""
        text = "; ".join(r.words() for r in self.routes[:shown])
        more = len(self.routes) - shown
        return text + (f"; and {more} more" if more > 0 else "")


def plan_unserved(ev: eng.Evaluation) -> UnservedWork:
    """The plan's unserved workloads priced (computed once per evaluation, kept in its answers)."""
    return ev.answers.get("unserved", lambda: priced(ev, ev.verdict < 0))


def shown_unserved(ev: eng.Evaluation) -> UnservedWork:
    """The unserved work of the fleet every page and export shows: the chosen mix's in a mixed scenario (it may
    serve what the one-kind plan leaves out, or the reverse), else the plan's own."""
    from core.decision import mixfleet

    if mixfleet.record(ev) is None:
        return plan_unserved(ev)
    return ev.answers.get("mix_unserved", lambda: priced(ev, mixfleet.unserved_mask(ev)))


def priced(ev: eng.Evaluation, unserved: np.ndarray) -> UnservedWork:
    """The workloads in the boolean mask `unserved`, each priced: first on a route the plan may use as the scenario
    stands (a fleet option's excluded routes), else by the ladder of changes (`_ladder`, computed once per
    evaluation for the workloads no permitted route serves)."""
    rows = np.flatnonzero(unserved)
    if rows.size == 0:
        return UnservedWork(())
    ids = ev.workloads["workload_id"].to_numpy().astype(str)
    permitted = np.array([route_permitted(r) for r in ev.routes], dtype=bool)
    elsewhere = rows[(ev.a["feasible"][rows] & permitted[None, :]).any(axis=1)]
    found: dict[str, UnservedRoute] = {}
    if elsewhere.size:  # served by a route outside the option, priced standalone like every other
        slo = ev.slo_ms[elsewhere]
        feasible, monthly, _, _ = _score(ev, elsewhere, slo, licences=False, policy=False)
        _take(ev, found, elsewhere, feasible, monthly, False, False, None, slo, slo, change="outside this option")
    ladder = ev.answers.get("unserved_ladder", lambda: _ladder(ev))
    return UnservedWork(tuple(found.get(ids[i]) or ladder.get(ids[i]) or UnservedRoute(ids[i], None, None, None, None)
                              for i in rows))


def _ladder(ev: eng.Evaluation) -> dict[str, UnservedRoute]:
    """Each workload no permitted route serves, priced at the first rule set, then the smallest relaxed target,
    that gives it a route.

    The targets tried are absolute: each route's p95 alone (one request per replica) times TARGET_STEPS, above
    the workload's target, smallest first. They do not depend on the current target, so a workload unserved at
    two SLA scales is priced the same at both (see the module docstring)."""
    permitted = np.array([route_permitted(r) for r in ev.routes], dtype=bool)
    rows = np.flatnonzero(~(ev.a["feasible"] & permitted[None, :]).any(axis=1))
    if rows.size == 0 or not ev.routes:
        return {}
    slo = ev.slo_ms[rows]
    found: dict[str, UnservedRoute] = {}
    ids = ev.workloads["workload_id"].to_numpy().astype(str)
    for licences, policy in RULES:
        left = np.array([ids[i] not in found for i in rows])
        if not left.any():
            break
        sub, now = rows[left], slo[left]
        feasible, monthly, _, alone = _score(ev, sub, now, licences=licences, policy=policy)
        if licences or policy:
            _take(ev, found, sub, feasible, monthly, licences, policy, None, now, now)
        ladder = _targets(alone, now)
        # The steps are scored several at once (a call per step scored a few rows each: 118 calls, ~1 s of 14 on a
        # generated 100-workload inventory): scoring is row by row, so each (row, step) is scored as alone, and
        # the steps are still taken in order. Chunked, so a large inventory's unserved rows stay bounded.
        k = 0
        while k < ladder.shape[1]:
            open_ = np.array([ids[i] not in found for i in sub])
            steps: list[int] = []
            pairs = 0
            while k < ladder.shape[1] and (not steps or pairs < LADDER_CHUNK_ROWS):
                pairs += int((open_ & np.isfinite(ladder[:, k])).sum())
                steps.append(k)
                k += 1
            js = [np.flatnonzero(open_ & np.isfinite(ladder[:, s])) for s in steps]
            if not sum(j.size for j in js):
                continue
            j_all = np.concatenate(js)
            t_all = np.concatenate([ladder[j, s] for j, s in zip(js, steps, strict=True)])
            feasible, monthly, _, _ = _score(ev, sub[j_all], t_all, licences=licences, policy=policy)
            at = 0
            for j, s in zip(js, steps, strict=True):
                part = slice(at, at + j.size)
                at += j.size
                if j.size:
                    _take(ev, found, sub[j], feasible[part], monthly[part], licences, policy, s, ladder[j, s], now[j])
    return found


def _targets(alone: np.ndarray, now: np.ndarray) -> np.ndarray:
    """Per row, the relaxed targets to try in order: every route's p95 alone x TARGET_STEPS above the current
    target, distinct, ascending (NaN-padded; none for batch work, which has no target)."""
    cand = (np.where(np.isfinite(alone), alone, np.nan)[:, :, None] * np.array(TARGET_STEPS)[None, None, :])
    cand = cand.reshape(len(now), -1)
    cand = np.where(np.isfinite(now)[:, None] & (cand > now[:, None]), cand, np.nan)
    cand = np.sort(np.round(cand, 1), axis=1)  # NaN last; 0.1 ms apart counts as one target
    width = int(np.isfinite(cand).sum(axis=1).max()) if cand.size else 0
    out = np.full((len(now), width), np.nan)
    for j, row in enumerate(cand):
        u = np.unique(row[np.isfinite(row)])
        out[j, :len(u)] = u
    return out


def _take(ev, found, sub, feasible, monthly, licences, policy, step, target, now, change: str | None = None) -> None:
    """Record, for each row of `sub` with a feasible route, the cheapest one and the change that gave it."""
    ids = ev.workloads["workload_id"].to_numpy().astype(str)
    cost = np.where(feasible, monthly, np.inf)
    for k, i in enumerate(sub):
        if ids[i] in found or not np.isfinite(cost[k]).any():
            continue
        r = int(np.argmin(cost[k]))
        words = change or _change_words(ev.routes[r], licences, policy, step, target[k], now[k])
        found[ids[i]] = UnservedRoute(ids[i], words,
                                      ev.routes[r].route_id, ev.routes[r].label, round(float(cost[k, r]), 2))


def _change_words(route, licences: bool, policy: bool, step, target: float, now: float) -> str:
    parts = []
    if step is not None and np.isfinite(target) and target > now:
        parts.append(f"target {duration_ms(target)}, now {duration_ms(now)}")
    if licences and route.stack is not None and route.stack.weights is Weights.LICENSED \
            and route.stack.licence_usd_per_gpu_month is None:
        parts.append("licence fee entered, not in this price")
    if policy and route.hosting == "api":
        parts.append("its data allowed to leave for a public API")
    return " and ".join(parts) or "the change named"


def _score(ev: eng.Evaluation, rows: np.ndarray, target_ms: np.ndarray, *, licences: bool, policy: bool
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(feasible, monthly $, why-not code, p95 alone) of `rows` on every route with their p95 targets set to `target_ms` (NaN: batch),
    scored by the engine's own route scoring, owned routes at the node's full rate plus any licence fee entered."""
    sc = ev.scenario.model_copy(update={"sla_scale": 1.0})
    w = ev.workloads.iloc[rows].reset_index(drop=True).copy()
    w["latency_slo_ms"] = target_ms
    if policy:
        w["data_policy"] = "external_ok"
    c = eng._Columns.of(w, sc)
    gpu = ev.catalog.gpu(sc.gpu)
    gpu_rate = ev.rate.full_usd_per_node_hour / sc.gpus_per_node
    n, R = len(w), len(ev.routes)
    a = {k: np.full((n, R), np.nan, order="F") for k in (
        "usd_per_request", "monthly_usd", "p95_ms", "concurrency", "gpus_per_replica", "replicas", "nodes",
        "gpu_hours_per_day", "service_s", "wait_budget_s", "best_p95_ms", "best_gpus")}
    a["code"] = np.zeros((n, R), dtype=np.int8, order="F")
    a["quality"] = np.zeros((n, R), order="F")
    for r, route in enumerate(ev.routes):
        a["quality"][:, r] = np.array([route.quality(t) for t in TASK_CLASSES])[c.task_codes]
        if route.hosting == "api" and route.api is not None:
            eng._score_api(a, r, route.api, w, c.n_in, c.n_out, c.cached, c.slo, c.interactive, c.owned_only, sc)
        elif route.stack is not None:
            eng._score_owned(a, r, route.stack, c, ev.catalog, gpu, sc, gpu_rate, {})
            fee = route.stack.licence_usd_per_gpu_month or 0.0
            gpus = np.where(c.interactive, a["replicas"][:, r] * a["gpus_per_replica"][:, r],
                            a["gpu_hours_per_day"][:, r] / 24.0)
            a["monthly_usd"][:, r] += fee * np.nan_to_num(gpus)
    eng._price_and_escalate(a, ev.routes, c, sc)
    permitted = np.array([licences or route_permitted(r) for r in ev.routes], dtype=bool)
    return a["feasible"] & permitted[None, :], a["monthly_usd"], a["code"], a["best_p95_ms"]

