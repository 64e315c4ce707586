"""Inventory versions in the store: commit, list, load, diff and restore; an upload never overwrites."""

from __future__ import annotations

import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from core.errors import InputError
from core.inventory.columns import COLUMNS
from core.inventory.files import Progress, read_inventory
from core.inventory.raw import release_unused_memory
from core.inventory.report import frame_from_arrow
from core.store import Store, inventories
from core.store.inventories import Cursor
from core.store.seed import sample_workloads_path


@dataclass(frozen=True)
class CommitResult:
    """What a commit or restore did: the version now current, whether it is new, and a sentence saying so."""

    version: int | None
    created: bool
    message: str


# Rows per slice of the checksum and per INSERT of a commit: bounds the copies a commit makes at once
# (a 2,000,000-row commit used to sort a whole copy of the table) and paces its progress.
COMMIT_SLICE_ROWS = 100_000


def checksum(frame: pd.DataFrame, progress: Progress | None = None) -> str:
    """sha256 of the canonical CSV of the rows sorted by workload_id.

    Row order and row numbers are left out, so the same workloads uploaded as
    CSV or XLSX, or in another order, give the same checksum.
    """
    return _checksum(_arrow(frame), progress)


def _checksum(table: pa.Table, progress: Progress | None = None) -> str:
    digest = hashlib.sha256(_csv(table.slice(0, 0), header=True))
    # Rows are written independently of each other, so slices written in parallel and hashed in
    # order give exactly the bytes of one write_csv of the sorted table. Only the sort order is
    # computed for the whole table; each slice is gathered (a copy of its rows) just before it is written.
    order = pc.sort_indices(table, sort_keys=[("workload_id", "ascending")])
    starts = range(0, table.num_rows, COMMIT_SLICE_ROWS)

    def write(start: int) -> bytes:
        return _csv(table.take(order.slice(start, COMMIT_SLICE_ROWS)))

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for k, chunk in enumerate(pool.map(write, starts)):
            digest.update(chunk)
            if progress is not None:
                progress((k + 1) / len(starts), "checksum of the rows")
    return digest.hexdigest()


def _csv(table: pa.Table, header: bool = False) -> bytes:
    buf = io.BytesIO()
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=header))
    return buf.getvalue()


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """The frame's contract columns as an Arrow table with fixed types."""
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"cannot commit: the inventory lacks column(s) {', '.join(missing)}; "
                         "pass the frame from read_inventory or validate_frame")
    arrays = {}
    for c in COLUMNS:
        s = frame[c]
        if pd.api.types.is_float_dtype(s) or pd.api.types.is_integer_dtype(s):
            arrays[c] = pa.array(s.to_numpy(dtype=np.float64), pa.float64(), from_pandas=True)
        elif isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow":
            arrays[c] = pa.array(s.array).cast(pa.string())  # already Arrow underneath: no copy per cell
        else:
            arrays[c] = pa.array(s.to_numpy(dtype=object, na_value=None), pa.string(), from_pandas=True)
    return pa.table(arrays)


def _row_numbers(frame: pd.DataFrame) -> np.ndarray:
    if pd.api.types.is_integer_dtype(frame.index):
        return frame.index.to_numpy(dtype=np.int64)
    return np.arange(1, len(frame) + 1, dtype=np.int64)


def commit_inventory(store: Store, frame: pd.DataFrame, *, file_name: str, created_by: str = "",
                     comment: str = "", progress: Progress | None = None) -> CommitResult:
    """Add the validated frame as a new version, in one transaction; identical to the latest -> nothing.

    Pass `report.frame` from read_inventory or validate_frame (only an ok report's frame).
    `progress(fraction, what)` is called as the checksum and the rows are written
    (a 2,000,000-row commit takes several seconds): the checksum is the first 40 %.
    """
    try:
        return _commit(store, frame, file_name=file_name, created_by=created_by, comment=comment, progress=progress)
    finally:
        release_unused_memory()  # the commit's copies are gone: hand their pages back


def _commit(store: Store, frame: pd.DataFrame, *, file_name: str, created_by: str, comment: str,
            progress: Progress | None) -> CommitResult:
    table = _arrow(frame)
    if table.num_rows == 0:
        raise InputError("cannot commit an empty inventory; the current version is kept")
    digest = _checksum(table, None if progress is None else lambda f, what: progress(0.4 * f, what))
    rows = _row_numbers(frame)

    def work(cur: Cursor) -> CommitResult:
        latest = inventories.latest(cur)
        if latest is not None and latest[1] == digest:
            return CommitResult(latest[0], False, f"identical to the latest version {latest[0]}; nothing committed")
        version = (latest[0] if latest else 0) + 1
        inventories.insert_version(cur, version, created_by=created_by, file_name=file_name,
                                   row_count=table.num_rows, digest=digest, comment=comment)
        inventories.insert_workloads(cur, version, table, rows, slice_rows=COMMIT_SLICE_ROWS,
                                     progress=None if progress is None else
                                     lambda f: progress(0.4 + 0.6 * f, f"writing {table.num_rows:,} rows"))
        return CommitResult(version, True, f"committed version {version}: {table.num_rows} workloads from {file_name}")

    return store.write(work)


def list_versions(store: Store) -> pd.DataFrame:
    """Every version, oldest first, with who/when/file/row count/checksum and which one is the latest."""
    with store.cursor() as cur:
        df = inventories.list_versions(cur)
    df["is_latest"] = df["version"] == df["version"].max() if len(df) else pd.Series([], dtype=bool)
    return df


def _check_version(cur: Cursor, version: int) -> None:
    if inventories.version_info(cur, version) is None:
        have = inventories.version_numbers(cur)
        known = f"versions: {', '.join(map(str, have))}" if have else "the store has no inventory version yet"
        raise InputError(f"no inventory version {version}; {known}")


def load_version(store: Store, version: int | None = None) -> pd.DataFrame:
    """The workloads of one version (None = latest), as read_inventory returns them (index = file row)."""
    with store.cursor() as cur:
        if version is None:
            latest = inventories.latest(cur)
            if latest is None:
                raise InputError("the store has no inventory version yet; import one with "
                                 "'hangover workloads import FILE'")
            version = latest[0]
        _check_version(cur, version)
        table = inventories.load_workloads(cur, version, COLUMNS)
    frame = frame_from_arrow(table, table.column("row_number").to_numpy())
    del table
    release_unused_memory()
    return frame


def latest_size(store: Store) -> tuple[int | None, int]:
    """(latest version, its number of workloads), or (None, the bundled sample's) when nothing was committed yet.

    Reads one row of inventory_versions: a page can decide how to show a large
    inventory before loading any of it.
    """
    with store.cursor() as cur:
        latest = inventories.latest(cur)
        info = inventories.version_info(cur, latest[0]) if latest is not None else None
        if latest is not None and info is not None:
            return latest[0], int(info[1])
    return None, len(latest_inventory(store)[1])


def version_rows(store: Store, version: int) -> int:
    """Number of workloads in one version, from its record (an unknown version is named as load_version does)."""
    with store.cursor() as cur:
        _check_version(cur, version)
        info = inventories.version_info(cur, version)
    return 0 if info is None else int(info[1])


def version_page(store: Store, version: int, offset: int, limit: int) -> pd.DataFrame:
    """`limit` workloads of one version from position `offset` (0 = the first row), index = file row."""
    with store.cursor() as cur:
        _check_version(cur, version)
        table = inventories.load_workloads_page(cur, version, COLUMNS, max(int(offset), 0), max(int(limit), 0))
    return frame_from_arrow(table, table.column("row_number").to_numpy())


def latest_inventory(store: Store) -> tuple[int | None, pd.DataFrame]:
    """(latest version, its workloads), or (None, the bundled sample) when nothing was committed yet."""
    with store.cursor() as cur:
        latest = inventories.latest(cur)
    if latest is not None:
        return latest[0], load_version(store, latest[0])
    report = read_inventory(sample_workloads_path())
    if not report.ok:
        raise InputError("the bundled sample inventory is invalid:\n" + "\n".join(report.error_lines()))
    return None, report.frame


def diff_versions(store: Store, a: int, b: int, limit: int | None = None) -> pd.DataFrame:
    """Workloads added, removed or changed from version a to version b; `fields` names the changed columns.

    With `limit`, the first `limit` changes by workload_id; `attrs["total"]` always counts every change.
    """
    with store.cursor() as cur:
        _check_version(cur, a)
        _check_version(cur, b)
        df = inventories.diff(cur, a, b, COLUMNS, limit=limit)
    total = int(df["total"].iloc[0]) if len(df) else 0
    df = df.drop(columns="total").astype({"workload_id": object, "change": object, "fields": object})
    df.attrs["total"] = total
    return df


def restore_version(store: Store, n: int, created_by: str = "") -> CommitResult:
    """Make version n current again by adding it as a new version (nothing is overwritten)."""

    def work(cur: Cursor) -> CommitResult:
        _check_version(cur, n)
        info, latest = inventories.version_info(cur, n), inventories.latest(cur)
        if info is None or latest is None:  # _check_version just found version n, so neither is None
            raise InputError(f"no inventory version {n}")
        digest, row_count, file_name = info
        if latest[1] == digest:
            return CommitResult(latest[0], False, f"version {n} has the same workloads as the latest version "
                                                  f"{latest[0]}; nothing restored")
        version = latest[0] + 1
        inventories.insert_version(cur, version, created_by=created_by, file_name=file_name, row_count=row_count,
                                   digest=digest, comment=f"restore of version {n}", restored_from=int(n))
        inventories.copy_workloads(cur, n, version, COLUMNS)
        return CommitResult(version, True, f"restored version {n} as version {version} ({row_count} workloads)")

    return store.write(work)
