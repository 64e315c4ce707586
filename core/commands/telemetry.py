"""`hangover telemetry import|list|summary`: GPU utilization logs in, measured utilization and idle cost out."""

from __future__ import annotations

import argparse
import datetime as dt
import json

import numpy as np

from core.errors import InputError
from core.presentation.format import integer, money, number, percent
from core.store import Store, default_db_path
from core.store import telemetry as tstore
from core.telemetry import import_telemetry, summarize
from core.telemetry.profile import WEEKDAYS
from core.telemetry.samples import UTILIZATION_METRICS, parse_at


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `telemetry` command group."""
    p = sub.add_parser("telemetry", help="import GPU utilization logs (nvidia-smi, DCGM) and see what the GPUs did")
    tsub = p.add_subparsers(dest="telemetry_command", metavar="ACTION", required=True)

    imp = tsub.add_parser(
        "import",
        help="import one telemetry file (format detected from its content)",
        description=(
            "Import an nvidia-smi --query-gpu CSV (e.g. nvidia-smi --query-gpu=timestamp,index,utilization.gpu,"
            "memory.used,power.draw --format=csv -l 60), a DCGM exporter scrape (Prometheus text) or a Prometheus "
            "query result (JSON). Importing the same file twice adds nothing; a bad line stops the import and "
            "nothing is written."
        ),
    )
    imp.add_argument("file", help="the telemetry file")
    imp.add_argument("--node", help="the node's name (needed for nvidia-smi logs; else overrides the Hostname label)")
    imp.add_argument("--tz", help="time zone to show DCGM/Prometheus times in, e.g. Europe/London (default UTC; "
                                  "nvidia-smi already writes the node's local time)")
    imp.add_argument("--at", help="time of a DCGM scrape saved without timestamps, e.g. 2026-11-02T09:00")
    imp.add_argument("--gpu", help="the catalog GPU the node holds, e.g. 'H100 SXM': readings above its memory or "
                                   "twice its TDP, or an index past its GPUs per node, are refused (default: the "
                                   "widest bounds of any GPU in the catalog)")
    imp.set_defaults(func=cmd_import)

    lst = tsub.add_parser("list", help="imported telemetry files: nodes, GPUs, samples, dates, metrics")
    lst.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    lst.set_defaults(func=cmd_list)

    summ = tsub.add_parser("summary", help="measured utilization by hour of day and its idle cost a month")
    summ.add_argument("--from", dest="date_from", help="first day, YYYY-MM-DD (default: the first sample)")
    summ.add_argument("--to", dest="date_to", help="last day, inclusive, YYYY-MM-DD (default: the last sample)")
    summ.add_argument("--node", help="only this node")
    summ.add_argument("--metric", choices=UTILIZATION_METRICS,
                      help="force one metric (default: SM activity where measured, else tensor activity, else "
                           "utilization.gpu)")
    summ.add_argument("--node-usd-per-hour", type=float,
                      help="price one node-hour at this (default: the scenario's dated price, 1-year savings plan)")
    summ.add_argument("--format", choices=("table", "json"), default="table")
    summ.set_defaults(func=cmd_summary)


def _open(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db_path())


def _date(text: str | None, flag: str) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{flag} must be a date like 2026-11-02; got {text!r}") from None


def cmd_import(args: argparse.Namespace) -> int:
    """Import one file; print what was added (or that it was already there)."""
    result = import_telemetry(_open(args), args.file, node=args.node, tz=args.tz, at=parse_at(args.at), gpu=args.gpu)
    print(result.message)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print every imported file."""
    df = tstore.list_imports(_open(args))
    if args.json:
        out = df.assign(**{c: df[c].astype(str) for c in ("imported_at", "first_ts", "last_ts")})
        print(json.dumps(out.to_dict("records"), indent=2, default=str))
        return 0
    if df.empty:
        print("no telemetry imported yet; try `hangover telemetry import FILE --node NAME`")
        return 0
    print(f"{'imported':<16} {'file':<28} {'format':<31} {'nodes':<20} {'GPUs':>4} {'samples':>12}  "
          f"{'first':<16} {'last':<16} metrics")
    for r in df.itertuples(index=False):
        print(f"{r.imported_at:%Y-%m-%d %H:%M} {r.file_name[:28]:<28} {r.file_format:<31} {r.nodes[:20]:<20} "
              f"{r.gpus:>4} {integer(r.samples):>12}  {r.first_ts:%Y-%m-%d %H:%M} {r.last_ts:%Y-%m-%d %H:%M} {r.metrics}")
    print(f"{len(df)} file(s); times on each file's clock ({'; '.join(sorted(set(df['time_basis'])))})")
    return 0


def _cell(x: float) -> str:
    return f"{'-' if not np.isfinite(x) else percent(x):>4}"


def cmd_summary(args: argparse.Namespace) -> int:
    """Print the measured utilization, its profile by hour of day and the idle cost a month."""
    s = summarize(_open(args), node=args.node, date_from=_date(args.date_from, "--from"),
                  date_to=_date(args.date_to, "--to"), node_usd_per_hour=args.node_usd_per_hour, metric=args.metric)
    if args.format == "json":
        print(json.dumps(s.to_json(), indent=2))
        return 0
    p = s.profile
    print(f"{p.label}: {p.gpus} GPU(s), {integer(p.samples)} samples, {integer(p.gpu_hours)} GPU-hours")
    print(f"utilization {percent(p.utilization, decimals=1)} (mean over GPUs and hours; metric: {p.metric_label})")
    print(f"idle cost {money(s.idle_usd_per_month)} a month = {p.gpus} GPUs × 730 h × "
          f"{money(s.usd_per_gpu_hour)}/GPU-hour × (1 − {number(p.utilization, decimals=3)}); "
          f"node price: {s.rate.label}, {s.rate.source} ({s.rate.as_of})")
    print("hour  " + " ".join(f"{h:>4}" for h in range(24)))
    print("mean  " + " ".join(_cell(x) for x in p.hourly_utilization))
    for d, row in zip(WEEKDAYS, p.by_weekday_hour, strict=True):
        print(f"{d:<5} " + " ".join(_cell(x) for x in row))
    print("- = no samples in that hour (unknown, not counted as idle)")
    return 0
