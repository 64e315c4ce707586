"""`hangover report`: write the procurement summary of one scenario as XLSX, HTML or Markdown."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.commands.evaluate import add_scenario_arguments, scenario_and_workloads


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `report` command."""
    p = sub.add_parser(
        "report",
        help="write the procurement summary: XLSX workbook, HTML one-pager or Markdown brief",
        description="Evaluate a scenario (same flags as `hangover evaluate`) and write its procurement summary; "
                    "the file name's extension picks the format.",
    )
    p.add_argument("--out", required=True, metavar="FILE", action="append",
                   help="FILE.xlsx, FILE.html or FILE.md; repeat it to write several formats from one evaluation")
    add_scenario_arguments(p)
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Evaluate once, write the summary in each asked format; print one line per file written."""
    from core.commands.evaluate import evaluated
    from core.presentation.report import build_summary, report_clock, report_format, write_report
    from core.store import Store, default_db_path

    outs = args.out if isinstance(args.out, list) else [args.out]
    kinds = [report_format(out) for out in outs]  # a wrong extension fails before any work is done
    store = Store(args.db or default_db_path())
    scenario, workloads = scenario_and_workloads(args, store)
    ev = evaluated(store, scenario, args.version, workloads)
    if args.workloads:
        # The report prints its inventory label; "given" would not tell a reader which file it was.
        ev = ev.with_source(f"file {Path(args.workloads).name}", ev.fleet.measured)
    from core.decision.smallest import smallest_change

    smallest_change(ev)  # the node drivers' section words it (automatic up to 40 workloads)
    from core.decision.fleet import licensed_routes

    licensed_routes(ev, force=True)  # the report is where the break-even is read (computed when first asked)
    from core.decision import mixfleet

    f = mixfleet.top(ev)  # the chosen mix in a mixed scenario
    summary = build_summary(ev, generated=report_clock())  # once: it re-plans the fleet options
    for out, kind in zip(outs, kinds, strict=True):
        path = write_report(ev, out, summary=summary)
        print(f"wrote {path} ({kind}, {path.stat().st_size:,} bytes): {len(ev.workloads)} workloads, "
              f"{f.nodes_needed} nodes needed of {f.owned_nodes} owned, ${f.total_monthly_usd:,.0f}/month")
    return 0
