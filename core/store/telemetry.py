"""Telemetry SQL: raw samples to Parquet beside the store, hourly aggregates and imports in it, and the reads.

Layout (docs/telemetry.md): `<db folder>/<db stem>.telemetry/node=<node>/month=<YYYY-MM>/<import_id>.parquet`,
Hive-style, so DuckDB, Spark or Trino read the folder as one partitioned table.
An import is written to a staging folder first, its hourly aggregates are
inserted from there inside one transaction, and the files are moved into place
before that transaction commits; a failure removes them again, so a failed
import leaves neither rows nor files. Readers list files from
`telemetry_imports.files`, never by globbing, so a stray file is never counted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import duckdb
import pandas as pd
import pyarrow as pa

from core.errors import StoreError
from core.telemetry.samples import METRICS, CsvPlan

_TIMESTAMP_FORMATS = ["%Y/%m/%d %H:%M:%S.%g", "%Y/%m/%d %H:%M:%S"]  # nvidia-smi, with and without milliseconds
_HIVE = "hive_partitioning = true, hive_types = {'node': VARCHAR, 'month': VARCHAR}, hive_types_autocast = false"


def telemetry_root(store) -> Path:
    """The folder of raw samples beside the store file: `<db folder>/<db stem>.telemetry`."""
    return store.path.parent / f"{store.path.stem}.telemetry"


def staging_dir(store, import_id: str) -> Path:
    """Where one import's files are written before they are moved into place (removed afterwards)."""
    return telemetry_root(store) / f".staging-{import_id}"


def find_import(store, import_id: str) -> dict | None:
    """The imports row for a file's sha256, or None."""
    with store.cursor() as cur:
        rows = cur.execute(
            "SELECT file_name, imported_at, samples, gpus FROM telemetry_imports WHERE import_id = ?", [import_id]
        ).fetchall()
    if not rows:
        return None
    name, at, samples, gpus = rows[0]
    return {"file_name": name, "imported_at": at, "samples": samples, "gpus": gpus}


# -- staging: raw samples to Parquet ------------------------------------------------------


def _scratch() -> duckdb.DuckDBPyConnection:
    # A private in-memory connection: the bulk read needs none of the store's tables, and its settings
    # (insertion order off, so the CSV is read and written on every core) stay out of the store's.
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    return con


def _sql_path(p: Path) -> str:
    # COPY ... TO takes no bound parameter for its target; the path is ours (store folder + a hex digest).
    return str(p).replace("'", "''")


class OutOfRange(ValueError):
    """A value outside its column's bounds (the caller names the lines)."""


@dataclass(frozen=True)
class Staged:
    """Samples written under a staging folder, and their hourly aggregates (not yet in the store)."""

    folder: Path
    rows: int
    hourly: pa.Table  # node, gpu, hour, samples, first_ts, last_ts, <metric>_n, <metric>_sum


def _hourly_sql(present: tuple[str, ...] = METRICS, *, with_node: bool = True) -> str:
    """Sums by GPU-hour; metrics the file cannot have are constant zeros (a fifth less work for nvidia-smi)."""
    per = [f"count({m}) AS {m}_n, coalesce(sum({m}), 0) AS {m}_sum" if m in present
           else f"CAST(0 AS BIGINT) AS {m}_n, CAST(0 AS DOUBLE) AS {m}_sum" for m in METRICS]
    node = "node, " if with_node else ""
    return (f"SELECT {node}gpu, date_trunc('hour', ts) AS hour, count(*) AS samples, min(ts) AS first_ts, "
            f"max(ts) AS last_ts, {', '.join(per)} FROM _s GROUP BY {node}gpu, date_trunc('hour', ts)")


def partition_folder(node: str, month: str) -> str:
    """`node=<node>/month=<YYYY-MM>`, the node percent-encoded as DuckDB's and Hive's readers decode it."""
    return f"node={quote(node, safe='')}/month={month}"


def _write_and_aggregate(con: duckdb.DuckDBPyConnection, out: Path, present: tuple[str, ...] = METRICS,
                         node: str | None = None) -> Staged:
    """From the table `_s` (node, ts, gpu, METRICS): hourly sums, and one Parquet file per node and month.

    One COPY per (node, month) rather than COPY ... PARTITION_BY: measured on
    10 M rows over 29 months, the partitioned writer took 1.5x the CPU of these
    filtered copies (the table's zone maps skip the other months' row groups).
    The months come from the hourly sums, not another pass over the samples.
    With `node` given, `_s` has no node column (one node's file: not 10 M copies of its name).
    """
    hourly = con.sql(_hourly_sql(present, with_node=node is None)).to_arrow_table()
    if node is not None:
        hourly = hourly.add_column(0, "node", pa.array([node] * hourly.num_rows, pa.string()))
    con.register("_h", hourly)
    rows, = con.execute("SELECT coalesce(sum(samples), 0) FROM _h").fetchall()[0]
    parts = con.execute("SELECT DISTINCT node, date_trunc('month', hour) AS m FROM _h ORDER BY node, m").fetchall()
    for name, month in parts:
        folder = out / partition_folder(name, f"{month:%Y-%m}")
        folder.mkdir(parents=True, exist_ok=True)
        con.execute(
            f"COPY (SELECT ts, gpu, {', '.join(METRICS)} FROM _s WHERE {'true' if node else 'node'} = ? AND ts >= ? "
            f"AND ts < ? + INTERVAL 1 MONTH) TO '{_sql_path(folder / 'samples.parquet')}' "
            # No dictionary pages: readings rarely repeat, and trying costs a fifth of the write's CPU
            # (measured on 10 M rows: 1.8 s against 2.3 s, files 10 % larger). Plain Parquet v1, which
            # every reader (Spark, Trino, pyarrow) takes.
            "(FORMAT parquet, DICTIONARY_SIZE_LIMIT 1)",
            [True if node else name, month, month])
    return Staged(out, int(rows), hourly)


def stage_nvidia_smi(csv_path: Path, plan: CsvPlan, node: str, out: Path, *, strict: bool = True) -> Staged:
    """Parse an nvidia-smi CSV with DuckDB's reader, sum it by GPU-hour and write its samples under `out`.

    Every rule of `core.telemetry.nvidia_smi.check_line` is here as SQL: a
    malformed value raises on the spot, a value out of its bounds raises
    OutOfRange after one min/max pass. DuckDB does not say on which line; the
    caller then asks `diagnose`. Values travel as bound parameters.

    strict=True is the fast path for files as nvidia-smi writes them: cells
    untrimmed, units at the very end, one timestamp format (plan.ts_format).
    Hand-edited spacing or blank lines with spaces fail it; strict=False
    then trims every cell (about a third slower on 10 M rows).
    """
    strict = strict and plan.ts_format is not None
    params: dict[str, object] = {"path": str(csv_path), "header": plan.header_first_cell,
                                 "fmts": plan.ts_format if strict else _TIMESTAMP_FORMATS}
    cols = {f"c{i}": "VARCHAR" for i in range(plan.n_columns)}
    ts, gpu = f"c{plan.ts_position}", f"c{plan.gpu_position}"
    exprs = [f"strptime({ts if strict else f'trim({ts})'}, $fmts) AS ts", f"trim({gpu}) AS gpu"]
    for k, col in enumerate(plan.columns):
        c = f"c{col.position}"
        params[f"div{k}"] = col.divide_by
        if col.unit:  # DuckDB refuses a bound parameter the statement does not use: only what each form reads
            params[f"unit{k}"] = col.unit
            params[f"nounit{k}"] = f"{col.header}: a value lacks its unit {col.unit!r}"
        if col.unit and strict:  # "45 %": cut the unit off the end; the CAST ignores the space before it
            params[f"cut{k}"] = -len(col.unit)
            raw = (f"CASE WHEN ends_with({c}, $unit{k}) THEN CAST(left({c}, $cut{k}) AS DOUBLE) "
                   f"WHEN contains({c}, '[') THEN NULL ELSE error($nounit{k}) END")
        elif col.unit:
            raw = (f"CASE WHEN contains({c}, '[') THEN NULL "
                   f"WHEN ends_with(rtrim({c}), $unit{k}) THEN CAST(replace({c}, $unit{k}, '') AS DOUBLE) "
                   f"ELSE error($nounit{k}) END")
        else:  # [N/A], [Not Supported]: no reading
            raw = f"CASE WHEN contains({c}, '[') THEN NULL ELSE CAST({c} AS DOUBLE) END"
        exprs.append(f"{raw} / $div{k} AS {col.metric}")
    have = {c.metric for c in plan.columns}
    metrics = ", ".join(m if m in have else f"CAST(NULL AS DOUBLE) AS {m}" for m in METRICS)
    csv = (f"read_csv($path, columns = {cols!r}, skip = {int(plan.header_line)}, header = false, delim = ',', "
           "quote = '', escape = '', auto_detect = false, null_padding = true)")
    # A repeated header (a log appended across restarts) is not a sample; nor, when lenient, a line of spaces.
    where = ("c0 <> $header" if strict
             else "trim(c0) <> $header AND NOT (c1 IS NULL AND trim(c0) = '')")
    parsed = f"SELECT {', '.join(exprs)} FROM {csv} WHERE {where}"
    con = _scratch()
    try:
        con.execute(f"CREATE TABLE _s AS SELECT ts, gpu, {metrics} FROM ({parsed})", params)
        _check_bounds(con, plan)
        return _write_and_aggregate(con, out, tuple(c.metric for c in plan.columns), node=node)
    finally:
        con.close()


class Repeated(ValueError):
    """Readings that repeat a (GPU, timestamp) already in the file: how many, and one example (gpu, ts)."""

    def __init__(self, count: int, gpu: str, ts: dt.datetime):
        super().__init__(f"{count} repeated reading(s)")
        self.count, self.gpu, self.ts = count, gpu, ts


def _check_bounds(con: duckdb.DuckDBPyConnection, plan: CsvPlan) -> None:
    """OutOfRange for a value, GPU index or time out of bounds; Repeated for a second reading at one (GPU, time).

    Bounds take one pass over the typed table, not a CASE per cell (max() sorts NaN above everything).
    """
    from core.telemetry.samples import ts_window_naive

    first, last = ts_window_naive()
    parts = [f"min({c.metric}), max({c.metric})" for c in plan.columns] + ["min(ts), max(ts)"]
    row = con.execute("SELECT " + ", ".join(parts) + " FROM _s").fetchall()[0]
    for k, col in enumerate(plan.columns):
        lo, hi = row[2 * k], row[2 * k + 1]
        high = col.high / col.divide_by if col.high is not None else float("inf")
        if lo is not None and (lo < col.low / col.divide_by or not hi <= high):
            raise OutOfRange(f"{col.header}: a value is out of range")
    ts_lo, ts_hi = row[-2:]
    if ts_lo is not None and (ts_lo < first or ts_hi > last):
        raise OutOfRange("timestamp: outside 2000-01-01 .. now + 1 day")
    # The index rule on the distinct GPUs (a handful), not on every row: 0.1 s against 0.4 s CPU on 10 M rows.
    if plan.gpu_is_index and con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT gpu FROM _s) "
            "WHERE NOT regexp_full_match(gpu, '[0-9]{1,4}') OR TRY_CAST(gpu AS INTEGER) >= ?",
            [plan.bounds.gpus_per_node]).fetchall()[0][0]:
        raise OutOfRange("index: not a GPU index")
    # Repeats need a GROUP BY (GPU, time): 1.7-1.9 s CPU on 10 M rows (measured with DuckDB 2.0.1), a quarter of
    # the import; without it a log appended to itself would count every reading twice.
    repeats = con.execute("SELECT sum(n - 1), arg_min(gpu, ts), min(ts) FROM "
                          "(SELECT gpu, ts, count(*) AS n FROM _s GROUP BY gpu, ts HAVING count(*) > 1)").fetchall()[0]
    if repeats[0]:
        raise Repeated(int(repeats[0]), repeats[1], repeats[2])


def stage_table(table: pa.Table, out: Path) -> Staged:
    """Write a sample table (core.telemetry.samples.sample_schema) under `out` and sum it by GPU-hour."""
    con = _scratch()
    try:
        con.register("_samples", table)
        # Cast so every file has one schema whatever the parser's Arrow types (ms timestamps here, µs from CSV).
        con.execute("CREATE TABLE _s AS SELECT CAST(node AS VARCHAR) AS node, CAST(ts AS TIMESTAMP) AS ts, "
                    "CAST(gpu AS VARCHAR) AS gpu, "
                    + ", ".join(f"CAST({m} AS DOUBLE) AS {m}" for m in METRICS) + " FROM _samples")
        return _write_and_aggregate(con, out)
    finally:
        con.close()


# -- commit ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommittedImport:
    """What one import put in the store."""

    nodes: tuple[str, ...]
    gpus: int
    samples: int
    first_ts: dt.datetime
    last_ts: dt.datetime
    metrics: tuple[str, ...]
    files: tuple[str, ...]
    hourly_rows: int
    overlapping_gpu_hours: int  # GPU-hours an earlier import already covered (both are kept and merged)


def commit_import(store, *, import_id: str, staged: Staged, file_name: str, file_format: str, time_basis: str,
                  note: str = "") -> CommittedImport | None:
    """Insert the hourly aggregates and the imports row in one transaction, moving the files into place before it commits.

    Returns None when the same file was imported meanwhile (nothing added).
    On any failure the transaction rolls back and the moved files are removed.
    """
    root = telemetry_root(store)
    staged_files = sorted(p.relative_to(staged.folder) for p in staged.folder.rglob("*.parquet"))
    moved: list[Path] = []
    cols = ", ".join(f"{m}_n, {m}_sum" for m in METRICS)

    def work(cur: duckdb.DuckDBPyConnection) -> CommittedImport | None:
        if cur.execute("SELECT count(*) FROM telemetry_imports WHERE import_id = ?", [import_id]).fetchall()[0][0]:
            return None
        cur.register("_hourly", staged.hourly)
        try:
            cur.execute(f"""
                INSERT INTO telemetry_hourly (import_id, node, gpu, hour, samples, first_ts, last_ts, {cols})
                SELECT ?, node, gpu, hour, samples, first_ts, last_ts, {cols} FROM _hourly""", [import_id])
        finally:
            cur.unregister("_hourly")
        present = ", ".join(f"sum({m}_n) > 0" for m in METRICS)
        row = cur.execute(f"""
            SELECT list(DISTINCT node ORDER BY node), count(DISTINCT (node, gpu)), sum(samples), min(first_ts),
                   max(last_ts), count(*), {present}
            FROM telemetry_hourly WHERE import_id = ?""", [import_id]).fetchall()[0]
        nodes, gpus, samples, first, last, hourly = row[:6]
        metrics = tuple(m for m, has in zip(METRICS, row[6:], strict=True) if has)
        overlap = cur.execute("""
            SELECT count(*) FROM telemetry_hourly n
            WHERE n.import_id = ? AND EXISTS (SELECT 1 FROM telemetry_hourly o WHERE o.import_id <> n.import_id
                  AND o.node = n.node AND o.gpu = n.gpu AND o.hour = n.hour)""", [import_id]).fetchall()[0][0]
        files = []
        for rel in staged_files:
            rel = rel.parent / f"{import_id}.parquet"  # named by the file's sha256: a re-run overwrites, never adds
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged.folder / rel.parent / "samples.parquet", target)
            moved.append(target)
            files.append(str(rel))
        cur.execute("""
            INSERT INTO telemetry_imports (import_id, file_name, file_format, time_basis, nodes, gpus, samples,
                                           first_ts, last_ts, metrics, files, note)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [import_id, file_name, file_format, time_basis, nodes, gpus, samples, first, last,
                     list(metrics), files, note])
        return CommittedImport(tuple(nodes), int(gpus), int(samples), first, last, metrics, tuple(files),
                               int(hourly), int(overlap))

    try:
        # One attempt: a retry would find the staged files already moved.
        return store.write(work, attempts=1)
    except BaseException:
        for p in moved:
            with contextlib.suppress(OSError):
                p.unlink()
        raise


def discard(path: Path) -> None:
    """Remove a staging folder (after a commit, a duplicate or a failure)."""
    shutil.rmtree(path, ignore_errors=True)


# -- reads -----------------------------------------------------------------------------------


def list_imports(store) -> pd.DataFrame:
    """One row per imported file, newest first."""
    with store.cursor() as cur:
        return cur.execute("""
            SELECT import_id, file_name, file_format, time_basis, imported_at, array_to_string(nodes, ', ') AS nodes,
                   gpus, samples, first_ts, last_ts, array_to_string(metrics, ', ') AS metrics, len(files) AS files,
                   note
            FROM telemetry_imports ORDER BY imported_at DESC, import_id""").df()


def telemetry_stamp(store) -> tuple[int, str]:
    """(imports, newest import id): changes whenever telemetry is added, for caches."""
    with store.cursor() as cur:
        n, newest = cur.execute(
            "SELECT count(*), coalesce(max(imported_at)::VARCHAR || arg_max(import_id, imported_at), '') "
            "FROM telemetry_imports").fetchall()[0]
    return int(n), str(newest)


def nodes(store) -> list[str]:
    """Every node with telemetry, sorted."""
    with store.cursor() as cur:
        return [r[0] for r in cur.execute("SELECT DISTINCT node FROM telemetry_hourly ORDER BY node").fetchall()]


def _where(node: str | None, date_from: dt.date | None, date_to: dt.date | None) -> tuple[str, list]:
    clauses = ["true"]
    params: list[object] = []
    if node:
        clauses.append("node = ?")
        params.append(node)
    if date_from:
        clauses.append("hour >= ?")
        params.append(dt.datetime.combine(date_from, dt.time()))
    if date_to:  # inclusive: the whole last day
        clauses.append("hour < ?")
        params.append(dt.datetime.combine(date_to + dt.timedelta(days=1), dt.time()))
    return " AND ".join(clauses), params


def hourly_cells(store, *, node: str | None = None, date_from: dt.date | None = None,
                 date_to: dt.date | None = None, metrics: tuple[str, ...] = METRICS) -> pd.DataFrame:
    """Per (node, weekday 0=Mon, hour of day): GPU-hours, samples, and per metric the GPU-hours with a reading
    and the sum of their hourly means (`<m>_gh`, `<m>_sum`). At most nodes x 168 rows.

    Overlapping imports of the same GPU-hour are merged (their samples pooled) before the means.
    """
    where, params = _where(node, date_from, date_to)
    inner = ", ".join(f"sum({m}_n) AS {m}_n, sum({m}_sum) AS {m}_sum" for m in metrics)
    outer = ", ".join(f"count(*) FILTER (WHERE {m}_n > 0) AS {m}_gh, "
                      f"coalesce(sum({m}_sum / {m}_n) FILTER (WHERE {m}_n > 0), 0) AS {m}_sum" for m in metrics)
    with store.cursor() as cur:
        # Rows of one import are unique per GPU-hour (its primary key), so the merge is needed only where a node
        # has several imports; skipping it saves most of the query (166k GPU-hours: 19 ms against 178 ms).
        shared = cur.execute("SELECT coalesce(max(n), 0) > 1 FROM (SELECT count(*) AS n FROM "
                             "(SELECT unnest(nodes) AS node FROM telemetry_imports) GROUP BY node)").fetchall()[0][0]
        source = (f"(SELECT node, gpu, hour, sum(samples) AS samples, {inner} FROM telemetry_hourly "
                  f"WHERE {where} GROUP BY node, gpu, hour)" if shared
                  else f"(SELECT * FROM telemetry_hourly WHERE {where})")
        return cur.execute(f"""
            SELECT node, isodow(hour) - 1 AS weekday, hour(hour) AS hour_of_day, count(*) AS gpu_hours,
                   sum(samples) AS samples, {outer}
            FROM {source}
            GROUP BY node, weekday, hour_of_day ORDER BY node, weekday, hour_of_day""", params).df()


def coverage(store, *, node: str | None = None, date_from: dt.date | None = None,
             date_to: dt.date | None = None) -> pd.DataFrame:
    """Per node: GPUs, samples, first and last sample, and the GPU count per metric with a reading."""
    where, params = _where(node, date_from, date_to)
    # Per GPU first, then per node: a DISTINCT per metric over every GPU-hour took ten times as long.
    inner = ", ".join(f"sum({m}_n) AS {m}_n" for m in METRICS)
    per = ", ".join(f"count(*) FILTER (WHERE {m}_n > 0) AS {m}_gpus" for m in METRICS)
    with store.cursor() as cur:
        return cur.execute(f"""
            SELECT node, count(*) AS gpus, sum(samples) AS samples, min(first_ts) AS first_ts,
                   max(last_ts) AS last_ts, {per}
            FROM (SELECT node, gpu, sum(samples) AS samples, min(first_ts) AS first_ts, max(last_ts) AS last_ts, {inner}
                  FROM telemetry_hourly WHERE {where} GROUP BY node, gpu)
            GROUP BY node ORDER BY node""", params).df()


def read_samples(store, *, node: str | None = None) -> pd.DataFrame:
    """Raw samples back from the Parquet files the imports table lists (tests, checks; not for pages)."""
    root = telemetry_root(store)
    with store.cursor() as cur:
        files = [str(root / f) for (f,) in cur.execute(
            "SELECT unnest(files) FROM telemetry_imports ORDER BY import_id").fetchall()]
        if not files:
            return pd.DataFrame(columns=["node", "month", "ts", "gpu", *METRICS])
        sql = f"SELECT node, month, ts, gpu, {', '.join(METRICS)} FROM read_parquet(?, {_HIVE})"
        params: list = [files]
        if node:
            sql += " WHERE node = ?"
            params.append(node)
        return cur.execute(sql + " ORDER BY node, ts, gpu", params).df()


def check_writable(store) -> None:
    """StoreError when the telemetry folder cannot be created or written."""
    root = telemetry_root(store)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the telemetry folder {root}: {exc.strerror or exc}") from None
    if not os.access(root, os.W_OK):
        raise StoreError(f"cannot write the telemetry folder {root}: permission denied")
