"""The words of an evaluation: why a route cannot serve a workload, the reasons for its verdict, its near ties.

Functions of a finished (frozen) evaluation; they read its arrays, fleet record and verdict ranges and write
nothing. Sentences a finance reader can quote: every figure goes through core.format.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.decision.engine import DATA_POLICY, LATENCY, NO_FIT, QUALITY, WINDOW, Evaluation
from core.decision.fleet import route_permitted
from core.decision.records import Deployment, PoolDriver
from core.decision.sensitivity import ranges, sentence
from core.format import duration_ms, integer, money, number, percent, plain

_seconds = duration_ms  # the one formatter's words for a duration in ms
_money = money


def alternatives(ev: Evaluation, i: int) -> tuple[float, list[tuple[int, float]]] | None:
    """(this route's standalone monthly cost, [(other route, its standalone cost)] cheapest first) over the
    routes the plan may use; None when the workload has no verdict."""
    v = int(ev.verdict[i])
    if v < 0 or ev.planner is None:
        return None
    cost = ev.planner.standalone_cost_row(i)  # (C,) over plan columns
    cols = ev.plan_inputs.col_route
    per_route = np.full(len(ev.routes), np.inf)
    np.minimum.at(per_route, cols, cost)
    own = per_route[v]
    others = sorted(((int(k), float(per_route[k])) for k in np.flatnonzero(np.isfinite(per_route)) if k != v),
                    key=lambda t: t[1])
    return float(own), others


def near_ties(ev: Evaluation, i: int) -> list[int]:
    """Routes whose standalone cost is within the scenario's near-tie share of the verdict's."""
    alt = alternatives(ev, i)
    if not alt:
        return []
    own, others = alt
    return [k for k, c in others if c <= own * (1.0 + ev.scenario.near_tie_share) + 1e-9]


def why_not(ev: Evaluation, i: int, r: int) -> str:
    """Plain-words reason why route r cannot serve workload i."""
    w = ev.record(i)
    route = ev.routes[r]
    code = int(ev.a["code"][i, r])
    if code == DATA_POLICY:
        return "Data may not leave the bank's own hardware (owned_only), so no public API can take it."
    if code == NO_FIT:
        return f"{route.label} does not fit on {ev.scenario.gpus_per_node} × {ev.gpu_name} with this context length."
    if code == LATENCY:
        lat = ev.a["best_p95_ms"][i, r]
        slo_eff = ev.slo_ms[i]
        if route.hosting == "api":
            return (f"At a {integer(slo_eff)} ms p95 target, {route.label} typically takes about "
                    f"{_seconds(lat)} for {integer(w['output_tokens'])} output tokens (estimate).")
        return (f"At a {integer(slo_eff)} ms p95 target, {route.label} streams {integer(w['output_tokens'])} tokens "
                f"in about {_seconds(lat)} even alone on a replica of {int(ev.a['best_gpus'][i, r])} "
                f"{ev.gpu_name}; batching cannot help.")
    if code == QUALITY:
        q = ev.values("quality", i, r)
        floor = w["min_quality"]
        f = ev.needed_fallback(i, r)
        tail = (f"lifting it would escalate {percent(f)} of outputs to a better route (limit "
                f"{percent(ev.scenario.max_fallback_share)})" if np.isfinite(f)
                else "no allowed route meets the floor to escalate to")
        return f"Quality {number(q, decimals=2)} on {w['task_class']} is under the {number(floor, decimals=2)} floor (estimate); {tail}."
    if code == WINDOW:
        return f"Cannot finish the queue inside the {plain(w['batch_window_hours'])} h window."
    return ""


def reasons(ev: Evaluation, i: int, *, with_ranges: bool = True) -> list[str]:
    """Sentences a finance reader can quote for workload i's verdict (with_ranges=False: without the sentence on
    the verdict ranges, which would compute them; a chosen mix's stage plans have none of their own)."""
    return _reasons(ev, i, (lambda: _range_reasons(ev, i)) if with_ranges else list)


def _reasons(ev: Evaluation, i: int, tail) -> list[str]:
    """The reasons, ending with `tail()` (the verdict-range sentence or nothing)."""
    w = ev.record(i)
    v = int(ev.verdict[i])
    out: list[str] = []
    slo = w["latency_slo_ms"]
    if v < 0:
        licensed = [r for r in np.flatnonzero(ev.a["feasible"][i]) if not route_permitted(ev.routes[r])]
        if licensed:
            from core.decision.fleet import licensed_routes

            # The break-even where computed (with the plan up to SearchSettings.break_even_max_workloads, or asked).
            fees = {x.route_id: x.break_even_usd_per_gpu_month for x in licensed_routes(ev) or ()
                    if x.break_even_usd_per_gpu_month}
            for r in licensed:
                fee = fees.get(ev.routes[r].route_id)
                out.append(f"{ev.routes[r].label} could serve it, but its weights need a licence whose fee is "
                           "not entered" + (f" (break-even {_money(fee)} per GPU-month)" if fee else "")
                           + "; enter the fee to let the plan use it.")
        out.append("No route the plan may use meets every constraint; the closest failures are listed below.")
        # Data-policy and no-fit refusals say least; show quality and latency misses first.
        rank = np.select([ev.a["code"][i] == QUALITY, ev.a["code"][i] == LATENCY], [0, 1], 2)
        for r in np.lexsort((np.nan_to_num(ev.a["usd_per_request"][i], nan=np.inf), rank))[:3]:
            out.append(f"{ev.routes[r].label}: {why_not(ev, i, int(r))}")
        return out + tail()
    route = ev.routes[v]
    if not w["requests_per_day"] > 0:  # nothing to size: no replica, no cost, no comparison worth reading
        return [f"No traffic: the inventory gives it 0 requests a day, so it holds no replica and costs nothing; "
                f"when traffic comes it would run on {route.label}"
                + (" (owned)." if route.hosting == "owned" else " (public API).")] + tail()
    a = {k: arr[i, v] for k, arr in ev.a.items() if arr.ndim == 2}
    a["usd_per_mtok_out"] = ev.values("usd_per_mtok_out", i, v)
    target = (f"the {integer(ev.slo_ms[i])} ms p95 target" if pd.notna(slo)
              else f"the {plain(w['batch_window_hours'])} h batch window")
    if route.hosting == "owned":
        dep = ev.deployment(i)
        n_others = max(len(dep.workloads) - 1, 0) if dep is not None else 0
        shared = (f", shared with {n_others} other workload{'s' if n_others != 1 else ''} on one pooled queue"
                  if n_others else "")
        if pd.notna(slo):
            out.append(
                f"Runs on the owned {route.label} deployment: {int(a['replicas'])} replica(s) of "
                f"{int(a['gpus_per_replica'])} {ev.gpu_name} at up to {int(a['concurrency'])} requests "
                f"each{shared}; it holds {target} at its peak of "
                f"{number(w['requests_per_day'] * w['peak_factor'] / 86400, decimals=2)} requests/s "
                f"(p95 about {_seconds(a['p95_ms'])}, estimate)."
            )
        else:
            out.append(
                f"Runs on owned {route.label} in batches of {int(a['concurrency'])}{shared}: the day's "
                f"{integer(w['requests_per_day'])} requests take {number(a['gpu_hours_per_day'], decimals=1)} GPU-hours, inside "
                f"{target}, in hours the interactive work leaves idle where they fit."
            )
        if pd.notna(slo) and dep is not None and dep.why is not None:
            out.append(deployment_why_words(dep))
        forced = forced_words(ev, i)
        if forced:
            out.append(forced)
        basis = ("its share of the deployment's reserved GPUs at the peak" if pd.notna(slo) else
                 "the GPU-hours it uses beyond what interactive reservations leave idle (those cost nothing more)")
        out.append(f"Attributed {_money(a['monthly_usd'])} a month ({_money(a['usd_per_request'])} per request): "
                   f"{basis}.")
    else:
        out.append(f"Sent to {route.label} at {_money(a['usd_per_request'])} per request "
                   f"({_money(a['usd_per_mtok_out'])} per million output tokens, list price × {plain(ev.scenario.api_price_scale)}).")
        out.append(f"Costs {_money(a['monthly_usd'])} a month.")
    if a["fallback_share"] > 0:
        out.append(f"Escalates {percent(a['fallback_share'])} of outputs to a stronger route to reach the "
                   f"{number(w['min_quality'], decimals=2)} quality floor; that cost is included.")
    if w["data_policy"] == "owned_only":
        out.append("Data may not leave the bank's hardware, so public APIs were not considered.")
    alt = alternatives(ev, i)
    if alt and alt[1]:
        own, others = alt
        k, usd = others[0]
        out.append(f"Cheapest other route on its own: {ev.routes[k].label} at {_money(usd)} a month, against "
                   f"{_money(own)} for this one on its own (standalone estimates; the plan prices the pool).")
        ties = [ev.routes[k].label for k, c in others
                if c <= own * (1.0 + ev.scenario.near_tie_share) + 1e-9]
        if ties:
            out.append(f"Within {percent(ev.scenario.near_tie_share)} of it on its own: " + ", ".join(ties) + ".")
    return out + tail()


def deployment_why_words(dep: Deployment) -> str:
    """Why an interactive pool has its replicas, in one quotable paragraph ("" when it has no why-figures).

    E.g. "3 replicas × up to 4 requests = 12 slots for 9.43 requests/s at peak, about 2.1 in flight. Its binding
    member, lc-clearing, takes 2.6 s alone (p95; 86% of its 3.0 s target), so each replica may hold only 1 request
    at once and still meet it: 2.1 in flight at 1 each need 3 replicas (rounded up) before any margin for
    queueing."
    """
    y = dep.why
    if y is None:
        return ""
    b = y.requests_per_replica_within_target
    cap = dep.concurrency_cap or b
    only = "only " if b < cap else ""
    head = (f"{dep.label}{f' ({dep.tier})' if dep.tier else ''}: {_plural(dep.replicas, 'replica')} × up to "
            f"{_plural(cap, 'request')} = {integer(y.slots)} slots for "
            f"{number(y.peak_requests_per_s, decimals=2)} requests/s at peak, about "
            f"{number(y.requests_in_flight_at_peak, decimals=1)} in flight.")
    share = y.p95_alone_ms / y.latency_slo_ms if y.latency_slo_ms > 0 else float("nan")
    body = (f" Its binding member, {y.binding_workload}, takes {_seconds(y.p95_alone_ms)} alone (p95; "
            f"{percent(share)} of its {_seconds(y.latency_slo_ms)} target), so each replica may hold {only}"
            f"{_plural(b, 'request')} at once and still meet it: "
            f"{number(y.requests_in_flight_at_peak, decimals=1)} in flight at {integer(b)} each need "
            f"{_plural(y.replicas_for_load, 'replica')} (rounded up) before any margin for queueing")
    extra = dep.replicas - y.replicas_for_load
    if extra > 0:
        body += f"; the other {integer(extra)} keep the queue short enough at the peak for that target"
    elif extra < 0:
        # The per-replica figure reads the p95 alone; most requests finish well inside it, so a replica
        # running a few more of them at once still holds the target's share (the sizing's exact model).
        body += (f"; it runs {integer(dep.replicas)}, as most requests finish well inside the p95 and a replica "
                 "can run a few more of them at once")
    body += "."
    if dep.replicas_added_by_simulation:
        body += (f" {_plural(dep.replicas_added_by_simulation, 'replica')} of these "
                 f"{'were' if dep.replicas_added_by_simulation != 1 else 'was'} added by the plan's simulation "
                 "check: as sized on the latency model, a member held under its target share in the simulated "
                 "peak hour, by more than the run's noise.")
    return head + body


def forced_words(ev: Evaluation, i: int) -> str:
    """How many nodes the plan needs only because of workload i ("" when not priced: not a node driver)."""
    wid = str(ev.workloads["workload_id"].iloc[i])
    for d in ev.fleet.node_drivers:
        if d.workload_id == wid and d.nodes_forced is not None:
            if d.nodes_forced == 0:
                return "Without it the plan would need no node fewer: it runs on capacity bought anyway."
            return f"Without it the plan would need {_plural(d.nodes_forced, 'node')} fewer (exact re-pricing)."
    return ""


def pool_elsewhere_words(p: PoolDriver) -> str:
    """What the pool's workloads would cost on their next-best routes off its stack, in words: "+$49,251 a month
    (5 nodes)", "$0 a month (3 nodes)", "4 of its 10 workloads have no other route" (none, its one) or "not
    priced"."""
    if p.elsewhere_unserved and p.elsewhere_unserved >= p.workloads:
        return ("its one workload has no other route" if p.workloads == 1
                else f"none of its {_plural(p.workloads, 'workload')} has another route")
    if p.elsewhere_unserved:
        return (f"{integer(p.elsewhere_unserved)} of its {_plural(p.workloads, 'workload')} "
                f"{'has' if p.elsewhere_unserved == 1 else 'have'} no other route")
    if p.elsewhere_usd_per_month is None or p.elsewhere_nodes_needed is None:
        return "not priced"
    usd, nodes = p.elsewhere_usd_per_month, _plural(p.elsewhere_nodes_needed, "node")
    if usd >= 0.005:
        return f"+{money(usd)} a month ({nodes})"
    if usd <= -0.005:  # the search did not reach this plan: said, not hidden
        return f"{money(-usd)} a month less ({nodes}): a cheaper plan the search missed"
    return f"$0 a month ({nodes})"


def pool_driver_words(p: PoolDriver) -> str:
    """One pool as a cause of the purchase: "Qwen3-235B-A22B (MoE; FP8) (middle tier) on 4 GPUs a replica (8 GPUs,
    7 workloads): 1 node fewer without it; 5 of its 7 workloads have no other route"."""
    gpus = integer(p.gpus) if abs(p.gpus - round(p.gpus)) < 1e-9 else number(p.gpus, decimals=1)
    head = (f"{p.route} on {_plural(p.gpus_per_replica, 'GPU')} a replica ({gpus} GPU{'' if p.gpus == 1 else 's'}, "
            f"{_plural(p.workloads, 'workload')})")
    forced = ("" if p.nodes_forced is None else
              f": {_plural(p.nodes_forced, 'node')} fewer without it" if p.nodes_forced else ": no node fewer without it")
    if p.elsewhere_unserved:
        rest = pool_elsewhere_words(p)
    elif p.elsewhere_usd_per_month is None:
        rest = "its workloads on other routes not priced"
    else:
        rest = "its workloads on their next-best routes: " + pool_elsewhere_words(p)
    return f"{head}{forced}; {rest}"


def purchase_cause_words(fleet) -> str:
    """Which pools need the nodes beyond those owned, where no single workload does (every node driver's
    nodes_forced is 0): the pools that force a node alone, else the two holding the most GPUs, which need it
    together. "" where a workload forces one (its words say why) or nothing is bought."""
    if not fleet.pool_drivers or any(d.nodes_forced for d in fleet.node_drivers):
        return ""
    alone = [p for p in fleet.pool_drivers if p.nodes_forced]
    if alone:
        return ("No single workload forces the new nodes; these pools do: "
                + "; ".join(pool_driver_words(p) for p in alone[:3]) + ".")
    return ("No single workload or pool forces the new nodes alone; the pools holding the most GPUs need them "
            "together: " + "; ".join(pool_driver_words(p) for p in fleet.pool_drivers[:2]) + ".")


def _plural(n: int, word: str) -> str:
    return f"{integer(n)} {word}{'' if n == 1 else 's'}"


def _range_reasons(ev: Evaluation, i: int) -> list[str]:
    """One sentence when workload i's verdict flips inside the performance ranges (read from `verdict_ranges`)."""
    row = range_row(ev, i)
    text = sentence(row) if row is not None else ""
    return [text] if text else []


def range_row(ev: Evaluation, i: int) -> dict | None:
    """Row i of `ranges()` as a dict (read from its columns: iloc per workload is slow at scale)."""
    rg = ranges(ev)
    return None if rg is None else rg.row(i)


def smallest_change_words(fleet, answer) -> list[str]:
    """The smallest change in sentences (core.decision.smallest): per node driver the smallest target that lowers
    the node count, then what it takes to stay on the nodes owned, or that none of the relaxations tried does."""
    out = []
    needed = int(fleet.nodes_needed)
    for d in fleet.node_drivers:
        rel = answer.targets.get(d.workload_id)
        if rel is None or rel.latency_slo_ms is None or d.latency_slo_ms is None:
            continue
        new, old = float(rel.latency_slo_ms), float(d.latency_slo_ms)
        out.append(f"{d.workload_id}: a target of {integer(np.ceil(new))} ms instead of {integer(old)} ms "
                   f"(+{percent(new / old - 1.0)}) is the smallest that needs {integer(rel.nodes_needed)} "
                   f"node{'s' if rel.nodes_needed != 1 else ''} instead of {integer(needed)}; the bill falls by "
                   f"{money(rel.saves_usd_per_month)} a month (re-planned; {integer(np.floor(new * 0.99))} ms does "
                   "not lower the node count).")
    stay = answer.stay_on_owned
    if stay is None:
        return out
    owned = f"the {integer(stay.owned_nodes)} node{'s' if stay.owned_nodes != 1 else ''} you own"
    if stay.exists:
        licensed = {x.route_id: x for x in fleet.licensed_routes or ()}
        parts = [_owned_change_words(c, licensed.get(c.route_id)) for c in stay.changes]
        change = stay.bill_change_usd_per_month
        bill = (f"{money(-change)} a month less" if change < 0 else f"{money(change)} a month more"
                if change > 0 else "the same")
        fee = " before the licence fee" if any(c.kind == "licence" for c in stay.changes) else ""
        more = (f"; it also serves {', '.join(stay.serves_unserved)}, which the plan leaves without a route"
                if stay.serves_unserved else "")
        out.append(f"To stay on {owned}: {'; '.join(parts)}. The bill becomes {money(stay.total_monthly_usd)} "
                   f"a month ({bill}{fee}{more}); every change re-planned.")
    elif stay.simulation_added_replicas and not stay.changes:
        added, new = stay.simulation_added_replicas, stay.nodes_needed - stay.owned_nodes
        out.append(f"On the latency model the plan fits on {owned}; the {integer(new)} new "
                   f"{'nodes hold' if new != 1 else 'node holds'} the {integer(added)} "
                   f"replica{'s' if added != 1 else ''} the simulation check added where a member fell under its "
                   "target share in the simulated peak hour, beyond the run's noise. No relaxation was searched for them: the smallest "
                   "change re-plans on the latency model, which already fits.")
    else:
        out.append(f"No set of the relaxations tried avoids a new node (the targets of the workloads that force "
                   f"nodes, their data allowed to leave, licences for the licensed stacks): the fewest reached is "
                   f"{integer(stay.nodes_needed)} against {owned}"
                   + ("; the search stopped at its re-plan budget." if not stay.complete else "."))
    return out


def _owned_change_words(c, lic=None) -> str:
    """One change of the stay-on-owned answer, as a clause; a licence's fee names its GPU count beside the plan's
    own break-even for the stack (`lic`, a LicensedRoute), whose figure differs by the GPUs the saving is spread on."""
    if c.kind == "target":
        return (f"relax {c.workload_id}'s target from {integer(c.latency_slo_ms_from)} ms to "
                f"{integer(np.ceil(c.latency_slo_ms))} ms (+{percent(c.latency_slo_ms / c.latency_slo_ms_from - 1.0)})")
    if c.kind == "policy":
        return c.change.replace("data allowed to leave (external_ok)", "allow its data to leave your hardware")
    fee = (f"; this answer costs no more than the plan up to a fee of {money(c.break_even_usd_per_gpu_month)} "
           "per GPU-month" if c.break_even_usd_per_gpu_month else "")
    if fee and c.licence_gpus and lic is not None and lic.break_even_usd_per_gpu_month:
        fee += (f", on {integer(c.licence_gpus)} GPU{'s' if c.licence_gpus != 1 else ''} (the plan's own use of it, "
                f"on {integer(lic.gpus_in_plan)} GPU{'s' if lic.gpus_in_plan != 1 else ''}, breaks even at "
                f"{money(lic.break_even_usd_per_gpu_month)} per GPU-month)")
    return c.change.replace(" (the fee is on top of the bill change)", "") + fee
