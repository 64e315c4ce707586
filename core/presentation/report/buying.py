"""The report's purchase sections: the staged purchase under the ranges and what to buy next (mixed fleets)."""

from __future__ import annotations

from core.decision.engine import Evaluation
from core.presentation.report.content import Column, Table, _plural
from core.presentation.report.numbers import fmt


def _purchase(ev: Evaluation):
    """The staged purchase of the plan the report shows: the chosen mix's new nodes in a mixed scenario."""
    from core.decision import mixfleet
    from core.decision.purchase import purchase

    return mixfleet.staged_purchase(ev) if ev.scenario.mixed else purchase(ev)


def purchase_table(ev: Evaluation) -> Table | None:
    """The staged purchase under the ranges (core.decision.purchase): buy now, hold until measured, the spread,
    and each workload's chance that owned beats its best allowed API."""
    from core.decision.purchase import purchase_words

    p = _purchase(ev)
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
    rows += [row(f"Chance its owned share beats {r['api']}: {r['workload_id']}", r["p_owned_beats_api"], "pct",
                 "over the draws of route speed, traffic and prices: its attributed share of the owned fleet "
                 "against the API's price" + _switch_words(r))
             for r in p.owned_beats_api if r["p_owned_beats_api"] is not None]
    cols = [Column("figure", "Figure", "text", width=46, wrap=True), Column("value", "Value", "mixed"),
            Column("note", "Note", "text", width=64, wrap=True)]
    rows.append(row("Method", None, "text", f"{p.basis} (estimates)"))
    return Table("Purchase", "Staged purchase under the estimate ranges", cols, rows, _of_gpu(ev) + purchase_words(p))


def _switch_words(r: dict) -> str:
    """'; on the API now, moving it alone to owned GPUs raises the cash bill by $23,871/month (exact, central
    plan)' ('' where not priced)."""
    usd = r.get("switch_usd_per_month")
    if usd is None:
        return ""
    there = {"owned": "owned GPUs now, moving it alone to the API", "api": "the API now, moving it alone to owned GPUs"}
    move = f"; on {there[r['runs_on']]}" if r.get("runs_on") in there else "; switching it alone"
    if abs(usd) < 0.5:
        return f"{move} leaves the cash bill unchanged (exact, central plan)"
    return f"{move} {'raises' if usd > 0 else 'cuts'} the cash bill by {fmt(abs(usd), 'usd')}/month (exact, central plan)"


def _of_gpu(ev: Evaluation) -> str:
    """A mixed scenario's purchase names the GPU it buys (mixfleet.purchase_subject)."""
    from core.decision.mixfleet import purchase_subject

    return purchase_subject(ev)


def purchase_extras(ev: Evaluation) -> dict:
    """The staged purchase in one line for the one-pager (`extras["purchase_short"]`; absent when not computed)."""
    from core.decision.purchase import purchase_short

    p = _purchase(ev)
    return {} if p is None else {"purchase_short": _of_gpu(ev) + purchase_short(p)}


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
    return {"buy": (sentence, Table("BuyOptions", "What to buy next", cols, rows, note)),
            "buy_sheet": buy_sheet_table(rows), "buy_source": BUY_SOURCE}


BUY_SOURCE = ("owned nodes and API spend from the plan of each row (core.decision.mix, the engine's one-type plans "
              "chained); new nodes priced from the dated rows of the node price table (reserved, on-demand) or the "
              "owned-hardware TCO estimate (bought outright: capex over depreciation, cost of capital, power × PUE "
              "× $/kWh, support), each row's price and date in its Price column; throughput and latency are "
              "estimates unless measured")


def buy_sheet_table(rows: list[dict]) -> Table:
    """The workbook's What to buy sheet: one row per choice (each candidate GPU's best option, the best mix, buy
    nothing) with its new nodes, its bill in lines that add up to it, $ per M output tokens, served of total and
    the estimate range."""
    from core.decision.mix import OPTION_WORDS
    from core.models import PricingOption

    out = []
    for r in rows:
        total = int(r["on_nodes"]) + int(r["by_api"]) + int(r["unserved"])
        out.append({**r, "option_words": OPTION_WORDS[PricingOption(r["option"])] if r["option"] else "",
                    "served_of_total": f"{int(r['on_nodes']) + int(r['by_api'])} of {total}"})
    cols = [Column("row", "Choice", "text", width=18, wrap=True), Column("gpu", "GPU", "text", width=10),
            Column("option_words", "Option", "text", width=20, wrap=True),
            Column("buy", "New nodes (GPU, option, count)", "text", width=34, wrap=True),
            Column("nodes_new", "New nodes", "int"), Column("nodes_owned", "Owned nodes", "int"),
            Column("owned_usd", "Owned nodes $/month", "usd_2"), Column("new_nodes_usd", "New nodes $/month", "usd_2"),
            Column("energy_usd", "of which energy $/month", "usd_2"), Column("api_usd", "API $/month", "usd_2"),
            Column("licence_usd", "Licences $/month", "usd_2"), Column("total_usd", "Bill $/month", "usd_2"),
            Column("usd_per_mtok_out", "$ per M output tokens", "usd_2"),
            Column("served_of_total", "Served of total", "text", width=10),
            Column("on_nodes", "On nodes", "int"), Column("by_api", "By API", "int"),
            Column("unserved", "Unserved", "int"),
            Column("total_usd_optimistic", "Bill $/month, optimistic (estimate)", "usd"),
            Column("total_usd_pessimistic", "Bill $/month, pessimistic (estimate)", "usd"),
            Column("estimate_range", "Estimate range (bill, new nodes)", "text", width=30, wrap=True),
            Column("price_source", "Price (source, date)", "text", width=40, wrap=True)]
    note = ("Owned nodes keep their GPU and are filled first; each row plans the rest on new nodes of one GPU type "
            "at its best purchase option. Owned + new nodes + API + licences = bill (cents); energy is part of the "
            "node lines.")
    return Table("WhatToBuy", "What to buy next", cols, out, note)


def burst_extras(ev: Evaluation) -> dict:
    """Burst instead of buy for the what-to-buy section (absent when the plan buys nothing): `extras["burst"]` the
    verdict with the on-demand price and its date (the brief), `extras["burst_short"]` the verdict (the one-pager)."""
    from core.decision import burst

    b = burst.of(ev)
    if ev.scenario.mixed:  # priced on the one-kind plan's nodes: beside the chosen mix it would describe another plan
        return {}
    if b is not None and b.nodes_needed <= b.owned_nodes:
        return {}
    od = burst.on_demand_rate(ev)
    short = burst.verdict(b, ev.gpu_name)
    text = "Burst instead of buy: " + short
    if b is not None and od is not None and not b.flat:
        text += (f" On demand at {fmt(od.full_usd_per_node_hour, 'usd_2')} per node-hour ({burst.instance_words(od)}, "
                 f"{od.as_of}); an estimate (replicas scale with the hourly traffic; nodes only).")
    return {"burst": text, "burst_short": short}
