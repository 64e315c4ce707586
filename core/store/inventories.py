"""SQL of the inventory versions: the `inventory_versions` and `workloads` tables, bound parameters only.

The logic (checksums, what a commit or restore means) lives in
core.inventory.versions; these functions run one statement each on a cursor
the caller holds, so a commit stays one transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

Cursor = duckdb.DuckDBPyConnection


def _collist(columns: Sequence[str]) -> str:
    # Column names come from the contract (core.models.Workload), never from user text.
    for c in columns:
        if not c.isidentifier():
            raise ValueError(f"not a column name: {c!r}")
    return ", ".join(columns)


def _one(cur: Cursor, sql: str, params: list[object] | None = None) -> tuple | None:
    """First row or None; fetchall, so the cursor holds no unfinished result."""
    rows = cur.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def latest(cur: Cursor) -> tuple[int, str] | None:
    """(version, checksum) of the latest version, or None."""
    return _one(cur, "SELECT version, checksum FROM inventory_versions ORDER BY version DESC LIMIT 1")


def version_info(cur: Cursor, version: int) -> tuple[str, int, str] | None:
    """(checksum, row_count, file_name) of one version, or None when there is no such version."""
    return _one(cur, "SELECT checksum, row_count, file_name FROM inventory_versions WHERE version = ?", [int(version)])


def version_numbers(cur: Cursor) -> list[int]:
    """Every version number, oldest first."""
    return [r[0] for r in cur.execute("SELECT version FROM inventory_versions ORDER BY version").fetchall()]


def insert_version(cur: Cursor, version: int, *, created_by: str, file_name: str, row_count: int, digest: str,
                   comment: str, restored_from: int | None = None) -> None:
    """One row of inventory_versions."""
    cur.execute(
        "INSERT INTO inventory_versions (version, created_by, file_name, row_count, checksum, comment, restored_from) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [version, created_by, file_name, row_count, digest, comment, restored_from],
    )


def insert_workloads(cur: Cursor, version: int, table: pa.Table, rows: np.ndarray, *, slice_rows: int | None = None,
                     progress: Callable[[float], None] | None = None) -> None:
    """All rows of one version, from registered Arrow slices (values never become SQL text).

    With `slice_rows`, one INSERT per slice of that many rows (zero-copy views
    of the table), all on the caller's cursor, so still one transaction;
    `progress(fraction)` after each.
    """
    cols = _collist(table.column_names)
    data = table.add_column(0, "row_number", pa.array(rows, pa.int64()))
    data = data.add_column(0, "version", pa.array(np.full(len(rows), version, dtype=np.int32)))
    step = slice_rows or max(data.num_rows, 1)
    for start in range(0, max(data.num_rows, 1), step):
        cur.register("_inventory_rows", data.slice(start, step))
        try:
            cur.execute(f"INSERT INTO workloads (version, row_number, {cols}) "
                        f"SELECT version, row_number, {cols} FROM _inventory_rows")
        except BaseException:
            # The failed insert aborted the transaction: unregistering now would fail too and hide its error.
            with contextlib.suppress(Exception):
                cur.unregister("_inventory_rows")
            raise
        cur.unregister("_inventory_rows")
        if progress is not None:
            progress(min(start + step, data.num_rows) / max(data.num_rows, 1))


def copy_workloads(cur: Cursor, source: int, target: int, columns: Sequence[str]) -> None:
    """The workloads of version `source` again under version `target` (a restore)."""
    cols = _collist(columns)
    cur.execute(f"INSERT INTO workloads (version, row_number, {cols}) "
                f"SELECT ?, row_number, {cols} FROM workloads WHERE version = ?", [int(target), int(source)])


def list_versions(cur: Cursor) -> pd.DataFrame:
    """Every version, oldest first, with who/when/file/row count/checksum."""
    return cur.execute(
        "SELECT version, created_at, created_by, file_name, row_count, checksum, comment, restored_from "
        "FROM inventory_versions ORDER BY version").df()


def load_workloads(cur: Cursor, version: int, columns: Sequence[str]) -> pa.Table:
    """row_number and the contract columns of one version, in file order."""
    return cur.sql(f"SELECT row_number, {_collist(columns)} FROM workloads WHERE version = $v ORDER BY row_number",
                   params={"v": int(version)}).to_arrow_table()


def load_workloads_page(cur: Cursor, version: int, columns: Sequence[str], offset: int, limit: int) -> pa.Table:
    """row_number and the contract columns of `limit` rows of one version from `offset`, in file order."""
    return cur.sql(f"SELECT row_number, {_collist(columns)} FROM workloads WHERE version = $v "
                   "ORDER BY row_number LIMIT $limit OFFSET $offset",
                   params={"v": int(version), "limit": int(limit), "offset": int(offset)}).to_arrow_table()


def diff(cur: Cursor, a: int, b: int, columns: Sequence[str], limit: int | None = None) -> pd.DataFrame:
    """workload_id, change (added/removed/changed) and the changed fields from version a to version b.

    `columns[0]` is the key (workload_id); the rest are compared. With `limit`,
    only the first `limit` changes by workload_id; the `total` column counts them all.
    """
    _collist(columns)
    ident, rest = columns[0], columns[1:]
    changed = " OR ".join(f"va.{c} IS DISTINCT FROM vb.{c}" for c in rest)
    fields = ", ".join(f"CASE WHEN va.{c} IS DISTINCT FROM vb.{c} THEN '{c}' END" for c in rest)
    return cur.sql(
        f"""
        WITH va AS (SELECT * FROM workloads WHERE version = $a),
             vb AS (SELECT * FROM workloads WHERE version = $b)
        SELECT coalesce(va.{ident}, vb.{ident}) AS workload_id,
               CASE WHEN va.{ident} IS NULL THEN 'added'
                    WHEN vb.{ident} IS NULL THEN 'removed'
                    ELSE 'changed' END AS change,
               CASE WHEN va.{ident} IS NULL OR vb.{ident} IS NULL THEN ''
                    ELSE concat_ws(', ', {fields}) END AS fields,
               count(*) OVER () AS total
        FROM va FULL OUTER JOIN vb ON va.{ident} = vb.{ident}
        WHERE va.{ident} IS NULL OR vb.{ident} IS NULL OR {changed}
        ORDER BY workload_id
        {"LIMIT $limit" if limit is not None else ""}
        """,
        params={"a": int(a), "b": int(b), **({"limit": int(limit)} if limit is not None else {})},
    ).df()
