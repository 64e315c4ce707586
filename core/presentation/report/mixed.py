"""The report's words for a mixed scenario: the chosen mix's purchase, placements and node notes (core.decision.mixfleet)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.decision.engine import Evaluation
from core.models import HOURS_PER_MONTH, PricingOption
from core.presentation.format import plain
from core.presentation.report.content import MAX_MOVES, Change, Figure, _driver_words, _plural
from core.presentation.report.numbers import fmt


def plan_routes(ev: Evaluation) -> pd.DataFrame:
    """Each workload's route id in the chosen mix ("" unserved)."""
    from core.decision import mixfleet

    rows = mixfleet.by_workload(ev)
    return pd.DataFrame({"workload_id": [r["workload_id"] for r in rows],
                         "route_id": [r["route_id"] or "" for r in rows]})


def unserved_rows(ev: Evaluation) -> np.ndarray:
    """Positions of the workloads the chosen mix leaves without a route."""
    from core.decision import mix

    return np.setdiff1d(np.arange(len(ev.workloads)), mix.of(ev).best.served_rows)


def buy_change(ev: Evaluation, f) -> list[Change]:
    """A mixed scenario's purchase: the chosen mix's new nodes by GPU type, option and count (none: keep the
    owned nodes)."""
    from core.decision import mix

    best = mix.of(ev).best
    new = [n for n in best.new_nodes if n.nodes]
    if not new:
        return []
    what = "; ".join(f"{n.nodes} × {n.gpu}, {mix.OPTION_WORDS[PricingOption(n.option)]}" for n in new)
    owned = ", ".join(f"{k} × {g}" for g, k in best.owned_nodes_by_gpu.items()) or "none"
    return [Change("Buy nodes", f"Buy {what}: the chosen mix needs {f.nodes_needed} nodes (owned kept on their GPU: "
                   f"{owned}); about {fmt(f.extra_nodes_monthly_usd, 'usd')}/month for the new nodes."
                   + _driver_words(f), float(f.extra_nodes_monthly_usd))]


def placements(ev: Evaluation) -> list[Change]:
    """Where the chosen mix runs each workload (costliest first): its route, on which GPU, its attributed share."""
    from core.decision import mixfleet

    labels = {r.route_id: r.label for r in ev.routes}
    rows = sorted((r for r in mixfleet.by_workload(ev) if r["route_id"]), key=lambda r: -r["monthly_usd"])
    out = []
    for r in rows[:MAX_MOVES]:
        where = labels.get(r["route_id"], r["route_id"])
        verb = "Run" if r["gpu"] else "Send"
        text = (f"Run {r['workload_id']} on {where} on {r['gpu']}" if r["gpu"] else
                f"Send {r['workload_id']} to {where}")
        out.append(Change(f"{verb} {r['workload_id']}",
                          f"{text} ({fmt(r['monthly_usd'], 'usd')}/month attributed in the chosen mix)."))
    if len(rows) > MAX_MOVES:
        out.append(Change("More workloads", f"…and {_plural(len(rows) - MAX_MOVES, 'more workload')} placed as "
                          "the JSON's fleet.attribution_by_workload lists them."))
    return out


def notes(ev: Evaluation, figs: list[Figure]) -> list[Figure]:
    """A mixed scenario's node figures say what each kind of node costs (the one-kind notes name one price)."""
    from dataclasses import replace

    from core.decision import mix

    best = mix.of(ev).best
    owned = "; ".join(f"{k} × {g}" for g, k in best.owned_nodes_by_gpu.items())
    new = "; ".join(f"{n.nodes} × {n.gpu}, {mix.OPTION_WORDS[PricingOption(n.option)]}, "
                    f"{fmt(n.usd_per_node_hour, 'usd_2')}/node-hour ({n.price}, {n.as_of})"
                    for n in best.new_nodes if n.nodes) or "none"
    notes = {"owned_nodes": f"kept on their GPU: {owned}",
             "owned_monthly_usd": f"{owned}, each at its own node price × {plain(HOURS_PER_MONTH)} h (paid whatever runs "
                                  "on them)",
             "extra_nodes_monthly_usd": new,
             "nodes_needed": f"the chosen mix: {_mix_nodes(best)}",
             "api_monthly_usd": f"{_plural(best.served_by_api, 'workload')} sent to an API in the chosen mix"}
    return [replace(x, note=notes[x.key]) if x.key in notes else x for x in figs]


def _mix_nodes(best) -> str:
    """The mix's nodes in words: '1 owned H100 SXM + 1 new B200'."""
    parts = [f"{k} owned {g}" for g, k in best.owned_nodes_by_gpu.items()]
    parts += [f"{n.nodes} new {n.gpu}" for n in best.new_nodes if n.nodes]
    return " + ".join(parts)
