"""`hangover showback`: the plan's cash bill by team (or any text column), idle recovered, $/M tokens vs API."""

from __future__ import annotations

import argparse
import datetime as dt
import json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `showback` command."""
    from core.commands.evaluate import add_scenario_arguments
    from core.decision.showback import IDLE_KEYS

    p = sub.add_parser("showback", help="monthly $ per team with the idle recovered, its $/M tokens and API price",
                       description="Each team's (or any text column's) monthly $: its workloads' attributed shares "
                                   "of the plan plus its share of the unallocated idle by a stated key; the teams "
                                   "add up to the cash bill to the cent.")
    add_scenario_arguments(p)
    p.add_argument("--by", default="team",
                   help="group by this text column (team, task_class, data_policy, … or an extra column the "
                        "inventory kept in notes as 'column: value', e.g. cost_centre); default team")
    p.add_argument("--idle-key", choices=list(IDLE_KEYS), default="gpu_hours",
                   help="share the unallocated $ by " + " or by ".join(IDLE_KEYS.values()) + "; default gpu_hours")
    p.add_argument("--format", choices=["table", "json", "csv", "xlsx"], default="table")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output (needed for xlsx)")
    p.set_defaults(func=cmd_showback)


def cmd_showback(args: argparse.Namespace) -> int:
    """Print or write the showback."""
    from core.commands.evaluate import _emit, scenario_and_workloads
    from core.decision.showback import showback, showback_json
    from core.errors import InputError
    from core.service import evaluate_store
    from core.store import Store, default_db_path

    if args.format == "xlsx" and not args.out:
        raise InputError("--format xlsx writes a binary file: give --out FILE.xlsx")
    store = Store(args.db or default_db_path())
    scenario, workloads = scenario_and_workloads(args, store)
    ev = evaluate_store(store, scenario, version=args.version, workloads=workloads)
    sb = showback(ev, by=args.by, idle_key=args.idle_key)
    if args.format == "json":
        return _emit((json.dumps(showback_json(sb), indent=2, ensure_ascii=False) + "\n").encode(), args.out)
    if args.format == "csv":
        from core.presentation.csv_export import routing_csv
        from core.presentation.report.showback import showback_frame_for_page

        return _emit(routing_csv(showback_frame_for_page(sb)), args.out)  # the one CSV rule (formula-neutral)
    if args.format == "xlsx":
        from core.presentation.report.xlsx import build_showback_workbook_bytes

        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        return _emit(build_showback_workbook_bytes(sb, f"Generated {stamp}"), args.out)
    from core.presentation.report.showback import showback_text

    return _emit((showback_text(sb) + "\n").encode(), args.out)
