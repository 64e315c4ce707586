"""Users, their roles and the audit trail in the store: the SQL behind `hangover users` and the audit page."""

from __future__ import annotations

import datetime as dt

import duckdb
import pandas as pd

from core.errors import InputError


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def find_user(store, name: str) -> str | None:
    """The role of a user (lower-cased name), or None when the users table does not list them."""
    with store.cursor() as cur:
        rows = cur.execute("SELECT role FROM users WHERE name = ?", [name]).fetchall()
    return rows[0][0] if rows else None


def put_user(store, name: str, role: str, added_by: str) -> bool:
    """Add a user or change their role, in one audited write; True when the user was already listed."""

    def work(cur: duckdb.DuckDBPyConnection) -> bool:
        had = bool(cur.execute("SELECT 1 FROM users WHERE name = ?", [name]).fetchall())
        cur.execute("DELETE FROM users WHERE name = ?", [name])
        cur.execute("INSERT INTO users (name, role, added_at, added_by) VALUES (?, ?, ?, ?)",
                    [name, role, _now(), added_by])
        return had

    return store.write(work, action="users add", detail=f"{name} as {role}")


def drop_user(store, name: str) -> None:
    """Remove a user (they read as a viewer afterwards), or InputError when not listed."""

    def work(cur: duckdb.DuckDBPyConnection) -> None:
        if not cur.execute("SELECT 1 FROM users WHERE name = ?", [name]).fetchall():
            raise InputError(f"user {name!r} is not in the users table (see `hangover users list`)")
        cur.execute("DELETE FROM users WHERE name = ?", [name])

    store.write(work, action="users remove", detail=name)


def users_frame(store) -> pd.DataFrame:
    """Every listed user: name, role, when and by whom added."""
    with store.cursor() as cur:
        return cur.execute("SELECT name, role, added_at, added_by FROM users ORDER BY name").df()


def record(cur: duckdb.DuckDBPyConnection, *, who: str, role: str, action: str, detail: str) -> None:
    """One audit row, written with the cursor of the write it describes (so both commit or neither)."""
    cur.execute("INSERT INTO audit_log (written_at, who, role, action, detail) VALUES (?, ?, ?, ?, ?)",
                [_now(), who, role, action, detail[:500]])


def audit_frame(store, limit: int | None = None) -> pd.DataFrame:
    """The audit trail, newest first: written_at (UTC), who, role, action, detail."""
    sql = "SELECT written_at, who, role, action, detail FROM audit_log ORDER BY audit_id DESC"
    with store.cursor() as cur:
        if limit is not None:
            return cur.execute(sql + " LIMIT ?", [int(limit)]).df()
        return cur.execute(sql).df()
