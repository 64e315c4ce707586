"""The showback as a report table (workbook sheet, CSV) and as plain text (the CLI), with its totals row."""

from __future__ import annotations

from core.decision.showback import Showback
from core.presentation.format import integer, money, number
from core.presentation.report.content import Column, Table

TOTAL_LABEL = "Total (the cash bill)"


def showback_columns(by: str) -> list[Column]:
    """The sheet's columns: the group, tokens, $ and the API comparison."""
    return [
        Column("team", by.replace("_", " ").capitalize(), "text", width=28),
        Column("workloads", "Workloads", "int"),
        Column("tokens_per_month", "Tokens a month (in + out)", "int"),
        Column("attributed_usd", "Attributed $ a month", "usd_2"),
        Column("idle_usd", "Idle share $ a month", "usd_2"),
        Column("monthly_usd", "Monthly $", "usd_2"),
        Column("usd_per_mtok", "Internal $/M tokens", "usd_price"),
        Column("api_usd_per_month", "API $ a month (allowed routes)", "usd_2"),
        Column("api_workloads", "Workloads with an allowed API", "int"),
        Column("difference_usd_per_month", "Internal − API $ (those workloads)", "usd_2"),
        Column("unserved_workloads", "Workloads without a route", "int"),
    ]


def showback_table(sb: Showback) -> Table:
    """One row per group, largest monthly $ first; the totals row is `showback_totals` (written as the sheet's
    total row)."""
    rows = [{c.key: getattr(t, c.key) for c in showback_columns(sb.by)} for t in sb.teams]
    return Table(name="Showback", title=f"Showback by {sb.by.replace('_', ' ')}", columns=showback_columns(sb.by),
                 rows=rows, note=showback_note(sb))


def showback_note(sb: Showback) -> str:
    """How the idle is keyed, and what the groups add up to."""
    return (f"Each {sb.by.replace('_', ' ')}: its workloads' attributed shares of the plan plus its share of the "
            f"unallocated {money(sb.unallocated_usd)} ({sb.idle_key_note}), in cents by largest remainder, so the "
            f"rows add up to the cash bill of {money(sb.total_monthly_usd)} a month. Tokens: requests a day × "
            f"(input + output tokens) × 365/12. Estimates from the plan, not metered usage.")


def showback_totals(sb: Showback) -> dict:
    """The totals row: sums of the $ and token columns (in cents), the bill's $/M tokens."""
    def cents(key: str) -> float:
        return sum(round((getattr(t, key) or 0.0) * 100) for t in sb.teams) / 100.0

    tokens = sum(t.tokens_per_month for t in sb.teams)
    has_api = any(t.api_usd_per_month is not None for t in sb.teams)
    return {
        "team": TOTAL_LABEL, "workloads": sum(t.workloads for t in sb.teams), "tokens_per_month": tokens,
        "attributed_usd": cents("attributed_usd"), "idle_usd": cents("idle_usd"), "monthly_usd": cents("monthly_usd"),
        "usd_per_mtok": cents("monthly_usd") / tokens * 1e6 if tokens > 0 else None,
        "api_usd_per_month": sum(t.api_usd_per_month or 0.0 for t in sb.teams) if has_api else None,
        "api_workloads": sum(t.api_workloads for t in sb.teams),
        "difference_usd_per_month": sum(t.difference_usd_per_month or 0.0 for t in sb.teams) if has_api else None,
        "unserved_workloads": sum(t.unserved_workloads for t in sb.teams),
    }


def showback_text(sb: Showback) -> str:
    """The showback as a plain-text table (the CLI's default)."""
    head = (f"{sb.by.replace('_', ' ')[:24]:<24} {'workloads':>9} {'tokens/month':>16} {'$/month':>12} "
            f"{'idle share':>11} {'$/M tok':>9} {'API $/month':>12} {'internal−API':>13}")
    lines = [f"Showback by {sb.by.replace('_', ' ')}; inventory {sb.inventory}", "", head]

    def row(r: dict) -> str:
        return (f"{str(r['team'])[:24]:<24} {integer(r['workloads']):>9} {number(r['tokens_per_month']):>16} "
                f"{money(r['monthly_usd'], decimals=2):>12} {money(r['idle_usd'], decimals=2):>11} "
                f"{money(r['usd_per_mtok']):>9} {money(r['api_usd_per_month'], decimals=2):>12} "
                f"{money(r['difference_usd_per_month'], decimals=2):>13}")

    lines += [row({c.key: getattr(t, c.key) for c in showback_columns(sb.by)}) for t in sb.teams]
    lines += ["-" * len(head), row(showback_totals(sb)), "", showback_note(sb),
              "API $: the cheapest API each workload may use (data policy, quality floor, latency target); "
              "— where none may. Internal − API compares only the workloads that have one.",
              f"Source: {sb.source}"]
    return "\n".join(lines)


def showback_frame_for_page(sb: Showback):
    """The groups and the totals row as one frame (the page's table)."""
    import pandas as pd

    table = showback_table(sb)
    return pd.DataFrame(table.rows + [showback_totals(sb)], columns=[c.key for c in table.columns])
