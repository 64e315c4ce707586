"""The DuckDB store: the only module that talks to the database."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import duckdb
import pandas as pd
from pydantic import BaseModel

from core.errors import StoreError
from core.models import ApiPrice, Benchmark, GpuSpec, NodePrice, OwnedHardware, ServingStack
from core.store import migrations
from core.store.seed import SEED_TABLES, load_seed

M = TypeVar("M", bound=BaseModel)

# Table name -> model of one row (the same tables the seed fills). Everything read back is validated again.
TABLE_MODELS: dict[str, type[BaseModel]] = SEED_TABLES


def default_db_path() -> Path:
    """`HANGOVER_DB`, else the user's data directory (XDG on Linux)."""
    env = os.environ.get("HANGOVER_DB")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "gpu-hangover" / "hangover.duckdb"


class Store:
    """One DuckDB connection per file; each unit of work takes its own cursor.

    DuckDB refuses a connection used from two threads at once ("connection is
    busy"); cursors are independent connections to the same database instance,
    so each Streamlit session (thread) can read and write at the same time.
    """

    def __init__(self, path: Path | str, *, seed: bool = True, migrate_upto: int | None = None):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        # Serialises write() within this process: two sessions re-seeding at once
        # otherwise conflict ("Conflict on tuple deletion") past any short retry.
        self._write_lock = threading.RLock()
        self._con = self._connect()
        with self.cursor() as cur:
            try:
                ran = migrations.migrate(cur, upto=migrate_upto)
            except ValueError as exc:
                self._con.close()
                raise StoreError(str(exc)) from None
        if seed and migrate_upto is None:
            try:
                # A migration may add columns the bundled rows fill: reload them (user rows are kept).
                self.seed(only_if_empty=not ran)
            except BaseException:
                self._con.close()  # a bad seed file stops start-up; do not leak the connection
                raise

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if self.path.exists() and self.path.is_dir():
            raise StoreError(f"cannot open the store at {self.path}: it is a folder, not a file")
        blocker = next((p for p in self.path.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise StoreError(
                f"cannot create the store at {self.path}: {blocker} is a file, not a folder "
                "(choose another --db or HANGOVER_DB)"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for the store {self.path}: {exc.strerror or exc}") from None
        if not os.access(self.path.parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
            raise StoreError(f"cannot write the store at {self.path}: permission denied (choose another --db or HANGOVER_DB)")
        try:
            return duckdb.connect(str(self.path))
        except duckdb.Error as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from None

    def close(self) -> None:
        """Close the connection (cursors die with it)."""
        self._con.close()

    # -- units of work -------------------------------------------------------
    @contextlib.contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh cursor for one unit of work, closed afterwards."""
        with self._lock:  # creating a cursor touches the shared connection
            cur = self._con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside BEGIN/COMMIT; any exception rolls everything back."""
        with self.cursor() as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def write(self, work, *, attempts: int = 5):
        """Run `work(cursor)` in a transaction, retrying DuckDB's optimistic-concurrency conflicts."""
        for attempt in range(attempts):
            try:
                with self._write_lock, self.transaction() as cur:
                    return work(cur)
            except duckdb.TransactionException:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.01 * (2**attempt))
        return None  # pragma: no cover

    # -- reads ---------------------------------------------------------------
    def frame(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        """Run a read query with bound parameters and return a DataFrame."""
        with self.cursor() as cur:
            return cur.execute(sql, list(params)).df()

    def table(self, name: str) -> pd.DataFrame:
        """Every row of a reference table, oldest first, with provenance columns."""
        _check_table(name)
        return self.frame(f"SELECT * FROM {name} ORDER BY row_id")

    def models(self, name: str) -> list[BaseModel]:
        """Rows of a reference table as validated models."""
        model = TABLE_MODELS[name]
        fields = list(model.model_fields)
        df = self.table(name)
        return [model.model_validate(_clean(rec)) for rec in df[fields].to_dict("records")]

    def gpus(self) -> list[GpuSpec]:
        """GPU specs, the latest row per GPU name."""
        return _latest(self.models("gpus"), key=lambda g: g.name)

    def gpu(self, name: str) -> GpuSpec:
        """One GPU by name (case-insensitive), or a StoreError listing the known ones."""
        gpus = {g.name.lower(): g for g in self.gpus()}
        try:
            return gpus[name.strip().lower()]
        except KeyError:
            known = ", ".join(sorted(g.name for g in gpus.values()))
            raise StoreError(f"unknown GPU {name!r}; known GPUs: {known}") from None

    def node_prices(self) -> list[NodePrice]:
        """Node price snapshots, the latest per (provider, instance, pricing option, region)."""
        return _latest(self.models("node_prices"), key=lambda p: (p.provider, p.instance, p.pricing_option, p.region))

    def owned_hardware(self) -> list[OwnedHardware]:
        """Owned-hardware cost figures, the latest per name."""
        return _latest(self.models("owned_hardware"), key=lambda h: h.name)

    def api_prices(self) -> list[ApiPrice]:
        """API prices, the latest per (provider, model)."""
        return _latest(self.models("api_prices"), key=lambda a: (a.provider, a.model))

    def serving_stacks(self) -> list[ServingStack]:
        """Serving stacks, the latest per stack id."""
        return _latest(self.models("serving_stacks"), key=lambda s: s.stack_id)

    def benchmarks(self) -> list[Benchmark]:
        """Every benchmark point (seed and imported)."""
        return list(self.models("benchmarks"))

    def info(self) -> pd.DataFrame:
        """Per table: row count, user rows and the oldest `as_of` (what `hangover db info` prints)."""
        rows = []
        with self.cursor() as cur:
            for name in TABLE_MODELS:
                n, users, oldest = cur.execute(
                    f"SELECT count(*), count(*) FILTER (WHERE origin = 'user'), min(as_of) FROM {name}"
                ).fetchone()
                rows.append({"table": name, "rows": n, "user_rows": users, "oldest_as_of": oldest})
            n, latest = cur.execute("SELECT count(*), max(version) FROM inventory_versions").fetchone()
            w = cur.execute("SELECT count(*) FROM workloads").fetchone()[0]
        rows.append({"table": "inventory_versions", "rows": n, "user_rows": n, "oldest_as_of": None})
        rows.append({"table": "workloads", "rows": w, "user_rows": w, "oldest_as_of": None})
        df = pd.DataFrame(rows)
        df.attrs["latest_inventory_version"] = latest
        return df

    def applied_migrations(self) -> list[str]:
        """Migration names recorded in the store."""
        with self.cursor() as cur:
            return migrations.applied(cur)

    # -- writes --------------------------------------------------------------
    def add(self, table: str, rows: Sequence[BaseModel], *, origin: str = "user", import_id: str | None = None) -> int:
        """Append validated rows to a reference table in one transaction; return the count."""
        if not rows:
            return 0

        def work(cur: duckdb.DuckDBPyConnection) -> int:
            return insert_rows(cur, table, rows, origin=origin, import_id=import_id)

        return self.write(work)

    def seed(self, *, only_if_empty: bool = False) -> dict[str, int]:
        """Load `data/*.csv` (validated) and replace the seed rows; user rows are never touched.

        Everything is read and validated before the transaction starts, so a bad
        seed file leaves the store exactly as it was.
        """
        seeds = load_seed()
        if only_if_empty:
            with self.cursor() as cur:
                have = cur.execute("SELECT count(*) FROM gpus").fetchone()[0]
            if have:
                return {}

        def work(cur: duckdb.DuckDBPyConnection) -> dict[str, int]:
            counts = {}
            for table in SEED_TABLES:
                cur.execute(f"DELETE FROM {table} WHERE origin = 'seed'")
                counts[table] = insert_rows(cur, table, seeds[table], origin="seed")
            return counts

        return self.write(work)


def _check_table(name: str) -> None:
    if name not in TABLE_MODELS:
        raise StoreError(f"unknown table {name!r}")


def insert_rows(cur: duckdb.DuckDBPyConnection, table: str, rows: Sequence[BaseModel], *, origin: str, import_id: str | None = None) -> int:
    """Append validated rows inside the caller's transaction (for a check and its insert in one unit of work)."""
    _check_table(table)
    df = pd.DataFrame([r.model_dump(mode="json") for r in rows])
    df["origin"] = origin
    if table == "benchmarks":
        df["import_id"] = import_id
    cols = list(df.columns)
    # Values travel as a registered frame, never as SQL text; column names are ours.
    cur.register("_rows", df)
    try:
        collist = ", ".join(cols)
        cur.execute(f"INSERT INTO {table} ({collist}) SELECT {collist} FROM _rows")
    finally:
        cur.unregister("_rows")
    return len(df)


def _clean(rec: dict) -> dict:
    """NaN/NaT from pandas -> None, so optional fields validate."""
    return {k: (None if _is_missing(v) else v) for k, v in rec.items()}


def _is_missing(v: object) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _latest(items: list[M], key) -> list[M]:
    """Keep the last row per key (rows arrive oldest first; a user override is newer)."""
    out: dict[object, M] = {}
    for item in items:
        k = key(item)
        prev = out.get(k)
        if prev is None or getattr(item, "as_of", None) is None or item.as_of >= prev.as_of:
            out[k] = item
    return list(out.values())


_STORES: dict[Path, Store] = {}
_STORES_LOCK = threading.Lock()


def open_store(path: Path | str | None = None) -> Store:
    """The process-wide Store for a path (default: `default_db_path()`), made lazily under a lock."""
    p = Path(path).expanduser().resolve() if path else default_db_path().resolve()
    with _STORES_LOCK:
        store = _STORES.get(p)
        if store is None:
            store = Store(p)
            _STORES[p] = store
        return store
