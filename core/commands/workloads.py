"""`hangover workloads template|import|list|diff|restore`: the versioned workload inventory."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from core.presentation.format import percent
from core.store import Store, default_db_path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `workloads` command group."""
    p = sub.add_parser("workloads", help="workload inventory: template, import, versions")
    ws = p.add_subparsers(dest="workloads_command", metavar="ACTION", required=True)

    t = ws.add_parser("template", help="write the inventory template (.csv or .xlsx)")
    t.add_argument("file", help="where to write it; the suffix picks the format")
    t.set_defaults(func=cmd_template)

    i = ws.add_parser("import", help="validate a CSV/XLSX inventory and commit it as a new version")
    i.add_argument("file", help="the inventory file (.csv or .xlsx)")
    i.add_argument("--sheet", help="XLSX sheet to read (default: the sheet whose header names the inventory columns)")
    i.add_argument("--decimal", choices=[",", "."], default=None,
                   help="decimal separator, for a file where a number such as 40.000 could be read two ways "
                        "(default: what the file's own cells show; asked for when they show nothing)")
    i.add_argument("--dry-run", action="store_true", help="validate only; commit nothing")
    i.add_argument("--by", default=None, help="who is committing (default: your login name)")
    i.add_argument("--comment", default="", help="a note stored with the version")
    i.set_defaults(func=cmd_import)

    ws.add_parser("list", help="list inventory versions").set_defaults(func=cmd_list)

    d = ws.add_parser("diff", help="workloads added, removed and changed from version A to version B")
    d.add_argument("a", type=int)
    d.add_argument("b", type=int)
    d.set_defaults(func=cmd_diff)

    r = ws.add_parser("restore", help="make version N current again (adds a new version)")
    r.add_argument("n", type=int)
    r.add_argument("--by", default=None, help="who is restoring (default: your login name)")
    r.set_defaults(func=cmd_restore)


def _open(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db_path())


def _who(args: argparse.Namespace) -> str:
    if args.by is not None:
        return args.by
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers; the version is still recorded
        return ""


def cmd_template(args: argparse.Namespace) -> int:
    """Write the template with one example row per task class."""
    from core.inventory import EXAMPLE_ROWS, write_template

    path = write_template(args.file)
    extra = " and a 'Columns' sheet describing each column" if path.suffix.lower() == ".xlsx" else ""
    print(f"wrote {path} ({len(EXAMPLE_ROWS)} example rows, one per task class{extra})")
    return 0


def progress_line(stream=None):
    """A progress callback that redraws one line on a terminal ('checking every cell of 2,000,000 rows  60 %').

    None when the stream is not a terminal: piped output and logs stay as they were.
    """
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def show(fraction: float, what: str) -> None:
        end = "\n" if fraction >= 1.0 else ""
        stream.write(f"\r\033[K{what}  {percent(fraction):>4}{end}")
        stream.flush()

    return show


def cmd_import(args: argparse.Namespace) -> int:
    """Validate; print every error and exit 2, or commit (unless --dry-run)."""
    from core.inventory import read_inventory
    from core.inventory.versions import commit_inventory

    path = Path(args.file)
    report = read_inventory(path, sheet=args.sheet, decimal=args.decimal, progress=progress_line())
    print(f"{path.name}: {report.dialect}")
    for w in report.warnings:
        print(f"warning: {w}")
    if not report.ok:
        print(f"{path.name}: {report.error_count} error(s); nothing was committed. Fix these and import again:",
              file=sys.stderr)
        for line in report.error_lines():
            print(f"  {line}", file=sys.stderr)
        if report.needs_decimal:
            print(f"  (run again with --decimal , or --decimal . to say how {path.name} writes decimals)",
                  file=sys.stderr)
        return 2
    n = len(report.frame)
    if args.dry_run:
        print(f"valid: {n} workloads; dry run, nothing committed")
        return 0
    result = commit_inventory(_open(args), report.frame, file_name=path.name, created_by=_who(args),
                              comment=args.comment, progress=progress_line())
    print(result.message)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """One line per version; * marks the latest (the one the dashboard uses)."""
    from core.inventory.versions import list_versions

    df = list_versions(_open(args))
    if df.empty:
        print("no inventory version yet; the bundled sample is used ('hangover workloads import FILE' adds one)")
        return 0
    print(f"  {'version':>7}  {'created':<19}  {'by':<12} {'rows':>9}  {'file':<28} comment")
    for r in df.itertuples():
        mark = "*" if r.is_latest else " "
        when = r.created_at.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{mark} {r.version:>7}  {when:<19}  {r.created_by[:12]:<12} {r.row_count:>9}  "
              f"{r.file_name[:28]:<28} {r.comment}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """Lines of '+ added', '- removed', '~ changed: fields', then the counts."""
    from core.inventory.versions import diff_versions

    df = diff_versions(_open(args), args.a, args.b)
    sign = {"added": "+", "removed": "-", "changed": "~"}
    for r in df.itertuples():
        tail = f": {r.fields}" if r.change == "changed" else ""
        print(f"{sign[r.change]} {r.workload_id} ({r.change}){tail}")
    counts = df["change"].value_counts()
    print(f"version {args.a} -> {args.b}: {counts.get('added', 0)} added, {counts.get('removed', 0)} removed, "
          f"{counts.get('changed', 0)} changed")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Restore version N as a new version."""
    from core.inventory.versions import restore_version

    print(restore_version(_open(args), args.n, created_by=_who(args)).message)
    return 0
