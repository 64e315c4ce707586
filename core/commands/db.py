"""`hangover db init|info|seed`: create, inspect and re-seed the store."""

from __future__ import annotations

import argparse

from core.store import Store, default_db_path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `db` command group."""
    p = sub.add_parser("db", help="create, inspect and re-seed the store")
    dbsub = p.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    dbsub.add_parser("init", help="create the store and seed it with the bundled data").set_defaults(func=cmd_init)
    dbsub.add_parser("info", help="tables, row counts and the oldest as_of per table").set_defaults(func=cmd_info)
    dbsub.add_parser("seed", help="reload the bundled data (your own rows are kept)").set_defaults(func=cmd_seed)


def _open(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db_path())


def cmd_init(args: argparse.Namespace) -> int:
    """Create (or migrate) the store and seed it on first use."""
    store = _open(args)
    print(f"store ready at {store.path}")
    print("migrations: " + ", ".join(store.applied_migrations()))
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    """Print one line per table."""
    store = _open(args)
    info = store.info()
    print(f"store: {store.path}")
    print(f"{'table':<20} {'rows':>8} {'yours':>6}  oldest as_of")
    for r in info.itertuples():
        oldest = r.oldest_as_of.isoformat() if r.oldest_as_of is not None and hasattr(r.oldest_as_of, "isoformat") else "-"
        print(f"{r.table:<20} {r.rows:>8} {r.user_rows:>6}  {oldest}")
    latest = info.attrs.get("latest_inventory_version")
    print(f"latest inventory version: {latest if latest is not None else 'none (the bundled sample is used)'}")
    return 0


def cmd_seed(args: argparse.Namespace) -> int:
    """Replace seed rows from data/*.csv; user rows survive."""
    store = _open(args)
    counts = store.seed()
    print("seeded: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return 0
