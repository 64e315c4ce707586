"""Served counts beside every bill: the words and tables that keep a plan that serves less from reading as cheaper."""

from __future__ import annotations

import pandas as pd

from core.decision.engine import Evaluation
from core.decision.mixfleet import top
from core.decision.unserved import shown_unserved
from core.presentation.format import integer, money


def served_words(served: int, total: int) -> str:
    """'serves all 7 workloads', 'serves 5 of 7 workloads; 2 unserved'."""
    if served >= total:
        return f"serves all {integer(total)} workloads" if total != 1 else "serves its 1 workload"
    return f"serves {integer(served)} of {integer(total)} workloads; {integer(total - served)} unserved"


def bill_words(monthly_usd: float, served: int, total: int) -> str:
    """'$25,528 a month — serves 3 of 7 workloads; 4 unserved': a bill never shown without what it serves."""
    return f"{money(monthly_usd)} a month — {served_words(served, total)}"


def served_short(served: int, total: int) -> str:
    """'5 of 7' for a table cell or a metric."""
    return f"{integer(served)} of {integer(total)}"


def plan_bill_words(ev: Evaluation) -> str:
    """The plan's bill with its served count ('$73,971 a month — serves 5 of 7 workloads; 2 unserved')."""
    f = top(ev)
    return bill_words(f.total_monthly_usd, f.workloads_served, f.workloads_total)


def unserved_priced_parts(ev: Evaluation, shown: int = 5) -> tuple[str, list[str]] | None:
    """(lead sentence, one line per unserved workload priced): the plan's served count, the bill with its unserved
    work priced, and each workload's cheapest route after the smallest change. None when every workload is served."""
    f = top(ev)
    left = shown_unserved(ev)
    if not left.count:
        return None
    lead = (f"The plan {served_words(f.workloads_served, f.workloads_total)}: the {money(f.total_monthly_usd)} "
            "bill leaves their work out.")
    if left.priced_usd_per_month > 0:
        lead += (f" At the cheapest route after the smallest change that gives each one (standalone estimates), "
                 f"the bill with them would be {money(f.total_monthly_usd + left.priced_usd_per_month)} a month"
                 + (f"; {integer(left.unpriced)} still unpriced (no route at any change tried)" if left.unpriced
                    else "") + ":")
    items = [r.words() for r in left.routes[:shown]]
    if left.count > shown:
        items.append(f"and {integer(left.count - shown)} more (Fleet sizing)")
    return lead, items


def unserved_priced_words(ev: Evaluation, shown: int = 5) -> str | None:
    """unserved_priced_parts as text: the lead, then one '- ' line per workload (None: every workload served)."""
    parts = unserved_priced_parts(ev, shown)
    return None if parts is None else "\n".join([parts[0], *(f"- {i}" for i in parts[1])])


def with_unserved_total(ev: Evaluation) -> float:
    """The plan's bill plus its unserved work priced (estimate): the figure to compare across targets."""
    return float(top(ev).total_monthly_usd + shown_unserved(ev).priced_usd_per_month)


def options_table(options: pd.DataFrame) -> pd.DataFrame:
    """The fleet options with what each serves, its unserved work priced and named, and its bill with that work."""
    out = options.copy()
    out["serves"] = [served_short(s, t) for s, t in zip(out["workloads_served"], out["workloads_total"], strict=True)]
    out["unserved_work"] = [r or "—" for r in out["unserved_routes"]]
    return out


def sweep_table(sweep: pd.DataFrame, option: str = "Recommended mix") -> pd.DataFrame:
    """One fleet option across the SLA sweep: nodes, the cash bill, what it serves, and the bill with its unserved
    work priced (the like-for-like figure: the cash bill alone falls as targets tighten and work goes unserved)."""
    d = sweep[sweep["option"] == option].sort_values("sla_scale").reset_index(drop=True)
    return pd.DataFrame({
        "sla_scale": d["sla_scale"], "owned_nodes": d["owned_nodes"], "monthly_usd": d["monthly_usd"],
        "serves": [served_short(s, t) for s, t in zip(d["workloads_served"], d["workloads_total"], strict=True)],
        "unserved_priced_usd": d["unserved_priced_usd"], "monthly_usd_with_unserved": d["monthly_usd_with_unserved"],
        "unserved_work": [r or "—" for r in d["unserved_routes"]],
    })


def with_unserved_note(option: dict) -> str:
    """'; with its unserved work priced $X/month (estimate)' for a fleet option that leaves work unserved, else ''."""
    if not option.get("workloads_unserved"):
        return ""
    return f"; with its unserved work priced {money(option['monthly_usd_with_unserved'])}/month (estimate)"


def unserved_figures(ev: Evaluation) -> list[tuple[str, str, float, str, str]]:
    """The report's headline figure (key, label, value, kind, note) for the bill with the plan's unserved work
    priced; none when every workload is served. One row, short: the one-pager fits two A4 pages."""
    left = shown_unserved(ev)
    if not left.count:
        return []
    total = float(top(ev).total_monthly_usd) + left.priced_usd_per_month
    unpriced = f"; {integer(left.unpriced)} with no route at any change tried" if left.unpriced else ""
    return [("total_with_unserved_usd", "Cash bill with unserved work priced, $/month (estimate)", total, "usd",
             f"the cash bill and {money(left.priced_usd_per_month)} for {integer(left.count)} unserved workload"
             f"{'s' if left.count != 1 else ''} at their cheapest route after the smallest change (standalone; the "
             f"brief's and workbook's Options table name each route){unpriced}")]
