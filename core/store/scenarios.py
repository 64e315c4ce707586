"""Saved scenarios in the store: the SQL behind save, list, get, rename and delete (logic lives in core.scenarios)."""

from __future__ import annotations

import datetime as dt

import duckdb
import pandas as pd

from core.errors import InputError
from core.store.store import Store

_COLUMNS = "name, scenario_json, inventory_version, created_by, created_at, updated_at, note"


def _key(name: str) -> str:
    """Names are unique whatever their case: 'Plan A' and 'plan a' are the same scenario."""
    return name.casefold()


def _names(cur: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in cur.execute("SELECT name FROM saved_scenarios ORDER BY name_key").fetchall()]


def _missing(cur: duckdb.DuckDBPyConnection, name: str) -> InputError:
    have = _names(cur)
    known = f"saved scenarios: {', '.join(have)}" if have else "no scenario is saved yet"
    return InputError(f"no saved scenario named {name!r}; {known}")


def insert_scenario(store: Store, *, name: str, scenario_json: str, inventory_version: int | None,
                    created_by: str, note: str = "", replace: bool = False) -> bool:
    """Save one scenario in one transaction; True if it replaced one of the same name (only with `replace`)."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)  # stored as UTC, like every timestamp we write

    def work(cur: duckdb.DuckDBPyConnection) -> bool:
        row = cur.execute("SELECT name, created_at FROM saved_scenarios WHERE name_key = ?", [_key(name)]).fetchall()
        if row and not replace:
            raise InputError(f"a scenario named {row[0][0]!r} is already saved; choose another name, "
                             "rename or delete the saved one, or replace it")
        created = row[0][1] if row else now
        cur.execute("DELETE FROM saved_scenarios WHERE name_key = ?", [_key(name)])
        cur.execute(
            f"INSERT INTO saved_scenarios (name_key, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [_key(name), name, scenario_json, inventory_version, created_by, created, now, note],
        )
        return bool(row)

    return store.write(work, detail=name)


def scenario_rows(store: Store) -> pd.DataFrame:
    """Every saved scenario, by name (case-insensitive order)."""
    return store.frame(f"SELECT {_COLUMNS} FROM saved_scenarios ORDER BY name_key")


def scenario_row(store: Store, name: str) -> dict:
    """One saved scenario by name (any case), or an InputError listing the saved names."""
    with store.cursor() as cur:
        rows = cur.execute(f"SELECT {_COLUMNS} FROM saved_scenarios WHERE name_key = ?", [_key(name)]).fetchall()
        if not rows:
            raise _missing(cur, name)
    return dict(zip([c.strip() for c in _COLUMNS.split(",")], rows[0], strict=True))


def rename_scenario_row(store: Store, old: str, new: str) -> str:
    """Rename in one transaction (a new name already taken is refused); returns the old name as stored."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)

    def work(cur: duckdb.DuckDBPyConnection) -> str:
        rows = cur.execute("SELECT name FROM saved_scenarios WHERE name_key = ?", [_key(old)]).fetchall()
        if not rows:
            raise _missing(cur, old)
        if _key(new) != _key(old):
            taken = cur.execute("SELECT name FROM saved_scenarios WHERE name_key = ?", [_key(new)]).fetchall()
            if taken:
                raise InputError(f"cannot rename {rows[0][0]!r} to {new!r}: a scenario named {taken[0][0]!r} "
                                 "is already saved")
        cur.execute("UPDATE saved_scenarios SET name_key = ?, name = ?, updated_at = ? WHERE name_key = ?",
                    [_key(new), new, now, _key(old)])
        return rows[0][0]

    return store.write(work, detail=f"{old} -> {new}")


def delete_scenario_row(store: Store, name: str) -> str:
    """Delete one saved scenario; returns its name as stored, or an InputError listing the saved names."""

    def work(cur: duckdb.DuckDBPyConnection) -> str:
        rows = cur.execute("SELECT name FROM saved_scenarios WHERE name_key = ?", [_key(name)]).fetchall()
        if not rows:
            raise _missing(cur, name)
        cur.execute("DELETE FROM saved_scenarios WHERE name_key = ?", [_key(name)])
        return rows[0][0]

    return store.write(work, detail=name)


def latest_inventory_version(store: Store) -> tuple[int | None, str, dt.datetime | None, str]:
    """(version, created_by, created_at, file_name) of the latest committed inventory; version None when none."""
    with store.cursor() as cur:
        rows = cur.execute("SELECT version, created_by, created_at, file_name FROM inventory_versions "
                           "ORDER BY version DESC LIMIT 1").fetchall()
    if not rows:
        return None, "", None, ""
    return rows[0]
