"""The report's purchase sections: the staged purchase under the ranges and what to buy next (mixed fleets)."""

from __future__ import annotations

from core.decision.engine import Evaluation
from core.presentation.report.content import Column, Table, _plural
from core.presentation.report.numbers import fmt


def purchase_table(ev: Evaluation) -> Table | None:
    """The staged purchase under the ranges (core.decision.purchase): buy now, hold until measured, the spread,
    and each workload's chance that owned beats its best allowed API."""
    from core.decision.purchase import purchase, purchase_words

    p = purchase(ev)
    if p is None:
        return None

    def row(figure, value, kind, note=""):
        return {"figure": figure, "value": value, "value:kind": kind, "note": note}

    rows = [
        row("Buy now, nodes beyond those owned", p.buy_now_new_nodes, "int",
            f"{_plural(p.buy_now_nodes, 'node')} in all: needed in at least {fmt(p.quantile, 'pct')} of "
            f"{fmt(p.draws, 'int')} draws (seed {p.seed})"),
        row("Hold until measured, up to", p.hold_nodes, "int",
            p.measure_what or "no route's range moves the node count"),
        row("Nodes needed, median of the draws", p.nodes_p50, "int",
            f"the plan's central estimate: {_plural(p.plan_nodes, 'node')}"),
        row("Nodes needed, 10th percentile", p.nodes_p10, "int"),
        row("Nodes needed, 90th percentile", p.nodes_p90, "int"),
    ]
    rows += [row(f"Chance owned beats {r['api']}: {r['workload_id']}", r["p_owned_beats_api"], "pct",
                 "over the draws of route speed, traffic and prices")
             for r in p.owned_beats_api if r["p_owned_beats_api"] is not None]
    cols = [Column("figure", "Figure", "text", width=46, wrap=True), Column("value", "Value", "mixed"),
            Column("note", "Note", "text", width=64, wrap=True)]
    rows.append(row("Method", None, "text", f"{p.basis} (estimates)"))
    return Table("Purchase", "Staged purchase under the estimate ranges", cols, rows, purchase_words(p))


def purchase_extras(ev: Evaluation) -> dict:
    """The staged purchase in one line for the one-pager (`extras["purchase_short"]`; absent when not computed)."""
    from core.decision.purchase import purchase, purchase_short

    p = purchase(ev)
    return {} if p is None else {"purchase_short": purchase_short(p)}


def buy_extras(ev: Evaluation) -> dict:
    """The what-to-buy section (a scenario naming owned nodes by GPU or candidates): {"buy": (sentence, table)}."""
    from core.decision import mix

    frame = mix.frame(ev)
    if frame is None:
        return {}
    rows = [{**r, "row": r["row"] if r["row"] != "best for this GPU" else f"best with {r['gpu']}"}
            for r in frame.to_dict("records")]
    best = next(r for r in rows if r["row"] == "best mix")
    cols = [Column("row", "Choice", "text"), Column("buy", "New nodes (GPU, option, count)", "text", width=40),
            Column("total_usd", "Bill $/month", "usd"),
            Column("estimate_range", "Estimate range (bill, new nodes)", "text", width=30, wrap=True),
            Column("usd_per_mtok_out", "$ per M output tokens", "usd_2"),
            Column("on_nodes", "On nodes", "int"), Column("by_api", "By API", "int"),
            Column("unserved", "Unserved", "int")]
    note = ("Owned nodes keep their GPU and are filled first; each row then plans the rest on new nodes of one GPU "
            "type at its best purchase option (buy = TCO estimate; reserved and on-demand from dated price rows). "
            "Buy nothing sends what may leave to APIs and leaves the rest unserved.")
    sentence = (f"Buy {best['buy']}: {fmt(best['total_usd'], 'usd_2')} a month in all, owned nodes kept on their GPU; "
                + "; ".join(f"{r['row']} {fmt(r['total_usd'], 'usd_2')}" for r in rows if r["row"] != "best mix") + ".")
    return {"buy": (sentence, Table("BuyOptions", "What to buy next", cols, rows, note))}


def burst_extras(ev: Evaluation) -> dict:
    """Burst instead of buy for the what-to-buy section (absent when the plan buys nothing): `extras["burst"]` the
    verdict with the on-demand price and its date (the brief), `extras["burst_short"]` the verdict (the one-pager)."""
    from core.decision import burst

    b = burst.of(ev)
    if b is not None and b.nodes_needed <= b.owned_nodes:
        return {}
    od = burst.on_demand_rate(ev)
    short = burst.verdict(b, ev.gpu_name)
    text = "Burst instead of buy: " + short
    if b is not None and od is not None and not b.flat:
        text += (f" On demand at {fmt(od.full_usd_per_node_hour, 'usd_2')} per node-hour ({burst.instance_words(od)}, "
                 f"{od.as_of}); an estimate (replicas scale with the hourly traffic; nodes only).")
    return {"burst": text, "burst_short": short}
