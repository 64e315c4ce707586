"""`hangover actuals`: the plan against measured telemetry (and invoice lines) for a period, variance by component."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `actuals` command."""
    from core.commands.evaluate import add_scenario_arguments

    p = sub.add_parser("actuals", help="plan against actual for a period: GPU-hours, utilization, $/M tokens, "
                                       "variance by mix, utilization, throughput and price",
                       description="The plan's GPU-hours, utilization and $/M tokens for a period beside the "
                                   "measured ones (imported telemetry; optionally the period's invoice lines), and "
                                   "the cost difference split into mix, utilization, throughput and price "
                                   "components that add up to it to the cent (docs/showback.md).")
    add_scenario_arguments(p)
    p.add_argument("--from", dest="date_from", help="first day, YYYY-MM-DD (default: the first sample)")
    p.add_argument("--to", dest="date_to", help="last day, inclusive, YYYY-MM-DD (default: the last sample)")
    p.add_argument("--invoice", metavar="FILE",
                   help="invoice lines CSV: item (node_hours | api | tokens), quantity, usd[, source, date]")
    p.add_argument("--replan", action="store_true",
                   help="plan again on the measured hour-of-day shape and show what it changes")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_actuals)


def cmd_actuals(args: argparse.Namespace) -> int:
    """Print the comparison."""
    from core.commands.evaluate import scenario_and_workloads
    from core.commands.telemetry import _date
    from core.decision.actuals import actuals_json
    from core.presentation.actuals_view import actuals_text
    from core.service import evaluate_store, plan_against_actual
    from core.store import Store, default_db_path

    store = Store(args.db or default_db_path())
    scenario, workloads = scenario_and_workloads(args, store)
    ev = evaluate_store(store, scenario, version=args.version, workloads=workloads)
    result, replan, _ = plan_against_actual(store, ev, _date(args.date_from, "--from"), _date(args.date_to, "--to"),
                                            invoice_path=args.invoice, replan=args.replan)
    if args.format == "json":
        print(json.dumps(actuals_json(result, replan), indent=2, ensure_ascii=False))
    else:
        print(actuals_text(result, replan))
    return 0
