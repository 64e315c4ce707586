"""Served counts beside every bill: the words and tables that keep a plan that serves less from reading as cheaper."""

from __future__ import annotations

import pandas as pd

from core.decision.engine import Evaluation
from core.decision.unserved import plan_unserved
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
    f = ev.fleet
    return bill_words(f.total_monthly_usd, f.workloads_served, f.workloads_total)


def unserved_priced_words(ev: Evaluation) -> str | None:
    """The plan's unserved work priced and the bill with it, in one paragraph (None: everything is served)."""
    f = ev.fleet
    left = plan_unserved(ev)
    if not left.count:
        return None
    text = (f"Unserved work is not in the {money(f.total_monthly_usd)} bill. Its cheapest route after the smallest "
            f"change that gives it one (standalone estimates): {left.words(shown=5)}.")
    if left.priced_usd_per_month > 0:
        text += (f" With it priced the bill would be {money(f.total_monthly_usd + left.priced_usd_per_month)} a month"
                 + (f" ({integer(left.unpriced)} still unpriced: no route at any change tried)" if left.unpriced
                    else "") + ".")
    return text


def with_unserved_total(ev: Evaluation) -> float:
    """The plan's bill plus its unserved work priced (estimate): the figure to compare across targets."""
    return float(ev.fleet.total_monthly_usd + plan_unserved(ev).priced_usd_per_month)


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
    """The report's headline figures (key, label, value, kind, note) for the plan's unserved work priced and the
    bill with it; none when every workload is served."""
    left = plan_unserved(ev)
    if not left.count:
        return []
    total = float(ev.fleet.total_monthly_usd) + left.priced_usd_per_month
    unpriced = f"; {integer(left.unpriced)} with no route at any change tried" if left.unpriced else ""
    return [("unserved_priced_usd", "Unserved work priced, $/month (estimate; not in the cash bill)",
             left.priced_usd_per_month, "usd", "each unserved workload at its cheapest route after the smallest "
             f"change that gives it one (standalone): {left.words(shown=4)}{unpriced}"),
            ("total_with_unserved_usd", "Cash bill with unserved work priced, $/month (estimate)", total, "usd",
             "the figure to compare across targets and options: the cash bill alone falls as work goes unserved")]
