"""Plan against actual in words and tables: the CLI's text, the page's rows."""

from __future__ import annotations

from core.decision.actuals import COMPONENTS, Actuals, Replan
from core.presentation.format import integer, money, number, percent, signed_money

COMPONENT_WORDS = {
    "mix": "Mix (API spend, owned tokens)",
    "utilization": "Utilization",
    "throughput": "Throughput (tokens per busy GPU-hour)",
    "price": "Price ($ per GPU-hour)",
}


def comparison_rows(a: Actuals) -> list[dict]:
    """Plan and actual side by side, one row per figure (text, for a table)."""
    def row(what, plan, actual):
        return {"figure": what, "plan": plan, "actual": actual}

    p, m = a.plan, a.actual
    return [
        row("GPU-hours paid", integer(p.gpu_hours), integer(m.gpu_hours)),
        row("Utilization", percent(p.utilization, decimals=1), percent(m.utilization, decimals=1)),
        row("Tokens on owned GPUs", number(p.tokens), number(m.tokens)),
        row("Tokens per busy GPU-hour", number(p.tokens_per_busy_gpu_hour), number(m.tokens_per_busy_gpu_hour)),
        row("$ per GPU-hour", money(p.usd_per_gpu_hour), money(m.usd_per_gpu_hour)),
        row("Owned GPUs $", money(p.owned_usd, decimals=2), money(m.owned_usd, decimals=2)),
        row("API $", money(p.api_usd, decimals=2), money(m.api_usd, decimals=2)),
        row("Total $", money(p.total_usd, decimals=2), money(m.total_usd, decimals=2)),
        row("Owned $/M tokens", money(p.usd_per_mtok), money(m.usd_per_mtok)),
    ]


def variance_rows(a: Actuals) -> list[dict]:
    """The components and their total (dollars, cents)."""
    rows = [{"component": COMPONENT_WORDS[c], "usd": a.component(c)} for c in COMPONENTS]
    return rows + [{"component": "Total (actual − plan)", "usd": a.difference_usd}]


def shape_words(a: Actuals, replan: Replan | None) -> str:
    """Whether the measured hour-of-day shape differs from the plan's, and what planning on it changes."""
    s = a.shape
    head = (f"Measured hour-of-day shape vs the plan's {s.planned_words}: mean gap {percent(s.gap)} of the peak "
            f"({'differs' if s.differs else 'close'}).")
    if replan is None:
        return head + (" Plan the next month on the measured shape: --replan (or the page's button)."
                       if s.differs else "")
    words = (f"{head} Planned on the measured shape: {integer(replan.nodes_on_shape)} nodes (now "
             f"{integer(replan.nodes_before)}), cash bill {money(replan.bill_on_shape, decimals=2)} a month "
             f"({signed_money(replan.shape_change)} against {money(replan.bill_before, decimals=2)}).")
    if replan.peak_factor is not None and replan.bill_on_peak is not None:
        words += (f" With the measured peak factor as well ({number(replan.peak_factor, decimals=2)} for the "
                  f"interactive workloads): {integer(replan.nodes_on_peak)} nodes, "
                  f"{money(replan.bill_on_peak, decimals=2)} a month ({signed_money(replan.peak_change)}).")
    return words


def actuals_text(a: Actuals, replan: Replan | None = None) -> str:
    """The comparison as plain text (the CLI's table)."""
    lines = [f"Plan against actual, {a.date_from} to {a.date_to} ({a.days} days); {a.measured_label}"
             + (f"; invoice {a.invoice_source}" if a.invoice_source else ""), "",
             f"{'':<28} {'plan':>18} {'actual':>18}"]
    lines += [f"{r['figure']:<28} {r['plan']:>18} {r['actual']:>18}" for r in comparison_rows(a)]
    lines += ["", "Variance (actual − plan), each factor moved from plan to actual in turn:"]
    lines += [f"  {r['component']:<40} {money(r['usd'], decimals=2):>14}" for r in variance_rows(a)]
    lines += ["", shape_words(a, replan)]
    lines += [f"Assumed: {n}." for n in a.notes]
    lines.append("Formulas: docs/showback.md (Plan against actual).")
    return "\n".join(lines)
