"""`hangover scenario`: save named scenarios in the store, list, show, rename and delete them, compare 2-4 side by side."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `scenario` command group."""
    from core.commands.evaluate import add_scenario_arguments

    p = sub.add_parser("scenario", help="save, list, show, rename, delete and compare named scenarios",
                       description="Named scenarios live in the store with who saved them, when, every input "
                                   "and the inventory version they were saved on.")
    s = p.add_subparsers(dest="scenario_command", metavar="ACTION", required=True)

    save = s.add_parser("save", help="save a scenario under a name (the same flags as `hangover evaluate`)")
    save.add_argument("name", metavar="NAME", help="1-60 characters: letters, digits, spaces, - _ . ( ) + & , '")
    add_scenario_arguments(save)
    save.add_argument("--by", help="who saves it (default: your login name)")
    save.add_argument("--note", default="", help="a line saying what the scenario is for")
    save.add_argument("--replace", action="store_true", help="replace a saved scenario of the same name")
    save.set_defaults(func=cmd_save)

    ls = s.add_parser("list", help="every saved scenario: name, inventory, who, when, settings")
    ls.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    ls.set_defaults(func=cmd_list)

    show = s.add_parser("show", help="one saved scenario with every input")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    show.set_defaults(func=cmd_show)

    rename = s.add_parser("rename", help="rename a saved scenario")
    rename.add_argument("old", metavar="OLD")
    rename.add_argument("new", metavar="NEW")
    rename.set_defaults(func=cmd_rename)

    delete = s.add_parser("delete", help="delete a saved scenario")
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(func=cmd_delete)

    compare = s.add_parser("compare", help="2-4 saved scenarios side by side: bill, nodes, idle, verdict changes")
    compare.add_argument("names", metavar="NAME", nargs="+", help="2 to 4 saved scenario names")
    compare.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    compare.add_argument("--current-inventory", action="store_true",
                         help="evaluate every scenario on the latest inventory (default: the one each was saved on)")
    compare.add_argument("--out", metavar="FILE", action="append", default=[],
                         help="also write the comparison as FILE.xlsx or FILE.md (repeat for several files)")
    compare.set_defaults(func=cmd_compare)


def _store(args: argparse.Namespace):
    from core.store import Store, default_db_path

    return Store(args.db or default_db_path())


def _who(args: argparse.Namespace) -> str:
    if args.by is not None:
        return args.by
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers; the scenario is still saved
        return ""


def cmd_save(args: argparse.Namespace) -> int:
    """Resolve the flags into a Scenario (as `evaluate` does) and save it with the inventory version it runs on."""
    from core.commands.evaluate import scenario_and_workloads
    from core.errors import InputError
    from core.scenarios import save_scenario

    if args.workloads:
        raise InputError("a saved scenario runs on a stored inventory: import the file first "
                         "('hangover workloads import FILE'), then save with --version N or without it")
    store = _store(args)
    scenario, _ = scenario_and_workloads(args, store)  # with --scenario, --version may now be the saved one's
    kwargs = {} if args.version is None else {"inventory_version": args.version}
    if args.workloads:  # --scenario saved on the bundled sample: this one is on the sample too
        kwargs = {"inventory_version": None}
    if args.version is not None:
        from core.inventory.versions import load_version

        load_version(store, args.version)  # an unknown version is refused before anything is saved
    saved = save_scenario(store, args.name, scenario, created_by=_who(args), note=args.note,
                          replace=args.replace, **kwargs)
    print(f"saved {saved.name!r} on the {_inventory_words(saved)}: {_settings(saved)}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """One line per saved scenario."""
    from core.scenarios import list_scenarios

    items = list_scenarios(_store(args))
    if args.format == "json":
        json.dump([s.to_dict() for s in items], sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    if not items:
        print("no scenario is saved yet ('hangover scenario save NAME [flags]' saves one)")
        return 0
    width = max(len(s.name) for s in items)
    print(f"{'name':<{width}}  {'inventory':<14}  {'saved by':<12}  {'saved (UTC)':<16}  settings")
    for s in items:
        when = f"{s.updated_at:%Y-%m-%d %H:%M}" if s.updated_at else ""
        print(f"{s.name:<{width}}  {s.inventory_label:<14}  {s.created_by[:12]:<12}  {when:<16}  {_settings(s)}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Every input of one saved scenario."""
    from core.scenarios import load_scenario

    s = load_scenario(_store(args), args.name)
    if args.format == "json":
        json.dump(s.to_dict(), sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    d = s.to_dict()
    print(f"{s.name}: {_settings(s)}")
    print(f"  inventory   {_inventory_words(s)}")
    print(f"  saved by    {s.created_by or '(unknown)'} on {d['created_at']} UTC; updated {d['updated_at']} UTC")
    if s.note:
        print(f"  note        {s.note}")
    for key, value in _flat(d["scenario"]):
        print(f"  {key:<34} {value}")
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    """Rename one saved scenario."""
    from core.scenarios import rename_scenario

    print(rename_scenario(_store(args), args.old, args.new))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    """Delete one saved scenario."""
    from core.scenarios import delete_scenario

    print(delete_scenario(_store(args), args.name))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Evaluate 2-4 saved scenarios and print them side by side (or the JSON, or write a file too)."""
    from core.errors import InputError
    from core.presentation.report.comparison import (
        COMPARISON_FORMATS,
        comparison_dict,
        comparison_text,
        write_comparison,
    )
    from core.scenarios import compare_scenarios

    outs = [Path(o) for o in args.out]
    # Every file name checked before any work or write: a bad second name must not leave only the first written.
    for o in outs:
        if o.suffix.lower() not in COMPARISON_FORMATS:
            raise InputError(f"--out: cannot write a comparison as {o.name!r}: use a .xlsx or .md file name")
    if len({o.resolve() for o in outs}) < len(outs):
        raise InputError("--out: the same file is named twice")
    cmp = compare_scenarios(_store(args), args.names, current_inventory=args.current_inventory)
    for o in outs:
        path = write_comparison(cmp, o)
        print(f"wrote {path} ({path.stat().st_size:,} bytes)", file=sys.stderr)
    if args.format == "json":
        json.dump(comparison_dict(cmp), sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    print(comparison_text(cmp))
    return 0


def _inventory_words(s) -> str:
    return "bundled sample inventory" if s.inventory_version is None else f"inventory version {s.inventory_version}"


def _settings(s) -> str:
    from core.scenarios import scenario_words

    return scenario_words(s.scenario)


def _flat(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", "-" if v is None else v
