"""`hangover users add|list|remove|audit`: who may write when sign-in is on, and the trail of every write."""

from __future__ import annotations

import argparse
from pathlib import Path

from core import access
from core.errors import InputError
from core.format import integer
from core.store import Store, default_db_path
from core.store import users as ustore
from core.textsafety import csv_bytes


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `users` command group."""
    p = sub.add_parser("users", help="roles of signed-in dashboard users (viewer, editor, admin) and the audit trail")
    usub = p.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    add = usub.add_parser("add", help="list a user with a role (or change their role)",
                          description="Users not listed read as viewers. Roles: viewer (reads only), editor "
                                      "(imports, saves, deletes, enters prices), admin (an editor who manages users).")
    add.add_argument("name", help="the name sign-in gives: an e-mail address or a login")
    add.add_argument("--role", required=True, help="viewer, editor or admin")
    add.set_defaults(func=cmd_add)
    lst = usub.add_parser("list", help="listed users and their roles")
    lst.set_defaults(func=cmd_list)
    rm = usub.add_parser("remove", help="remove a user (they read as a viewer afterwards)")
    rm.add_argument("name")
    rm.set_defaults(func=cmd_remove)
    audit = usub.add_parser("audit", help="the audit trail: who wrote what and when (UTC), newest first")
    audit.add_argument("--out", help="write it as CSV to this file instead of printing it")
    audit.add_argument("--limit", type=int, help="only the newest N rows")
    audit.set_defaults(func=cmd_audit)


def _open(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db_path())


def cmd_add(args: argparse.Namespace) -> int:
    """List a user with a role."""
    name, role = access.check_user_name(args.name), access.check_role(args.role)
    had = ustore.put_user(_open(args), name, role.value, access.who())
    print(f"{name} is {'now ' if had else ''}{role.value}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print every listed user."""
    df = ustore.users_frame(_open(args))
    if df.empty:
        print("no users listed: with sign-in on, everyone reads as a viewer; add one with "
              "`hangover users add NAME --role editor`")
        return 0
    for r in df.itertuples(index=False):
        print(f"{r.name:<40} {r.role:<7} added {r.added_at:%Y-%m-%d %H:%M} UTC by {r.added_by}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove a user."""
    name = access.check_user_name(args.name)
    ustore.drop_user(_open(args), name)
    print(f"{name} removed (reads as a viewer)")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    """Print the audit trail, or write it as CSV."""
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1; got {args.limit}")
    df = ustore.audit_frame(_open(args), args.limit)
    if args.out:
        Path(args.out).write_bytes(csv_bytes(df))
        print(f"wrote {args.out} ({integer(len(df))} audit rows)")
        return 0
    for r in df.itertuples(index=False):
        print(f"{r.written_at:%Y-%m-%d %H:%M:%S} {r.who:<30} {r.role:<7} {r.action:<28} {r.detail}")
    print(f"{integer(len(df))} row(s); times UTC")
    return 0
