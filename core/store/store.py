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

from core.errorlog import log_error
from core.errors import StoreError
from core.models import (
    ApiPrice,
    Benchmark,
    GpuSpec,
    NodePrice,
    OwnedHardware,
    ServingStack,
    Sourced,
)
from core.store import migrations
from core.store.integrity import check_store_file, file_signature
from core.store.seed import SEED_TABLES, load_seed

M = TypeVar("M", bound=Sourced)  # every reference table row is a Sourced record

# Table name -> model of one row (the same tables the seed fills). Everything read back is validated again.
TABLE_MODELS: dict[str, type[Sourced]] = SEED_TABLES


# Seconds a command waits for another process (the dashboard, another command) to let go of the file.
LOCK_WAIT_S = 10.0


class StoreBusy(StoreError):
    """Another process held the store file for longer than the wait allowed."""


class StoreConflict(StoreError):
    """Another session changed the same rows in the same moment (DuckDB's optimistic concurrency); retried."""


def _lock_wait_default() -> float:
    try:
        return max(0.0, float(os.environ.get("HANGOVER_LOCK_WAIT_S", LOCK_WAIT_S)))
    except ValueError:
        return LOCK_WAIT_S


def _close_quietly(con) -> None:
    with contextlib.suppress(Exception):
        con.close()


def _store_error(exc: BaseException, path: Path, *, opening: bool = False, waited_s: float = 0.0) -> StoreError:
    """A driver error as the product's own one-line error; the driver's text (which names the interpreter,
    its PID and internal paths) goes to the log only."""
    text = str(exc)
    low = text.lower()
    if "could not set lock" in low or "conflicting lock" in low:
        return StoreBusy(
            f"the store {path} is in use by another program (a `hangover` command or a dashboard busy writing); "
            f"waited {waited_s:g} s. Try again when it has finished"
        )
    full = "no space left" in low or "disk is full" in low or "disk full" in low or "file too large" in low
    # A commit that cannot write its log is a TransactionException too: a full disk is not a conflict to retry.
    if not full and (isinstance(exc, duckdb.TransactionException) or "conflict" in low):
        return StoreConflict("another session changed the same rows at the same moment; nothing was written, try again")
    if full:
        kind = "the disk holding the store is full (or the file-size limit was reached)"
        advice = "nothing was committed by this step; the store keeps its last committed state. Free some space and try again"
    elif "corrupt" in low or "checksum" in low or "could not read enough bytes" in low:
        kind = "the store file is damaged"
        advice = "restore it from a backup, or move it aside and run `hangover db init` to start a new one"
    elif "not a valid duckdb database" in low or "unable to open database" in low or "not a duckdb" in low:
        kind = "it is not a GPU Hangover store (not a DuckDB database file)"
        advice = "choose another --db or HANGOVER_DB"
    elif isinstance(exc, duckdb.OutOfMemoryException) or "out of memory" in low:
        kind = "the store ran out of memory"
        advice = "close other programs or work on a smaller file"
    elif "permission denied" in low or "read-only file system" in low:
        kind = "permission denied"
        advice = "choose another --db or HANGOVER_DB"
    else:
        kind = f"the database failed ({type(exc).__name__})"
        advice = "nothing was changed by this step"
    log = log_error(f"store {path}: {kind}: {text}", exc, store_path=path)
    where = f"; details in {log}" if log else ""
    verb = "cannot open the store at" if opening else "the store at"
    return StoreError(f"{verb} {path}: {kind}; {advice}{where}")


class GuardedCursor:
    """A DuckDB cursor (or relation) whose every call turns a driver error into a one-line StoreError.

    One wrapper for the whole product (issue 10): a DuckDB error raised mid-query
    used to reach the CLI as a traceback. Calls that return the cursor itself
    return the wrapper, and relations (`cur.sql(...)`) come back wrapped too, so
    `.df()`, `.fetchall()` and `.to_arrow_table()` are guarded as well.
    """

    __slots__ = ("_obj", "_path")

    def __init__(self, obj, path: Path):
        self._obj = obj
        self._path = path

    def __getattr__(self, name: str):
        attr = getattr(self._obj, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            try:
                out = attr(*args, **kwargs)
            except duckdb.Error as exc:
                raise _store_error(exc, self._path) from None
            if out is self._obj:
                return self
            if isinstance(out, duckdb.DuckDBPyRelation):
                return GuardedCursor(out, self._path)
            return out

        call.__name__ = name
        return call

    def __iter__(self):
        return iter(self.fetchall())


def default_db_path() -> Path:
    """`HANGOVER_DB`, else the user's data directory (XDG on Linux)."""
    env = os.environ.get("HANGOVER_DB")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "gpu-hangover" / "hangover.duckdb"


class Store:
    """One DuckDB file; each unit of work takes its own cursor, and the file is held only while work runs.

    DuckDB refuses a connection used from two threads at once ("connection is
    busy"); cursors are independent connections to the same database instance,
    so each Streamlit session (thread) can read and write at the same time.
    DuckDB also locks the file per process: the connection is opened when the
    first unit of work starts and closed when the last one ends (issue 16: a
    dashboard holding the file for its lifetime locked every `hangover` command
    out). Opening waits up to `lock_wait_s` for another process to let go.
    Every driver error surfaces as a one-line StoreError (details in the log).
    """

    def __init__(self, path: Path | str, *, seed: bool = True, migrate_upto: int | None = None,
                 lock_wait_s: float | None = None):
        self.path = Path(path).expanduser()
        self.lock_wait_s = _lock_wait_default() if lock_wait_s is None else float(lock_wait_s)
        self._lock = threading.Lock()
        # Serialises write() within this process: two sessions re-seeding at once
        # otherwise conflict ("Conflict on tuple deletion") past any short retry.
        self._write_lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        self._verified: tuple[int, int, int] | None = None
        self._check_path()
        with self.cursor() as cur:
            self._verify()  # migrations and the seed write: never onto a damaged file
            try:
                ran = migrations.migrate(cur, upto=migrate_upto)
            except ValueError as exc:
                raise StoreError(str(exc)) from None
        if seed and migrate_upto is None:
            # A migration may add columns the bundled rows fill: reload them (user rows are kept).
            self.seed(only_if_empty=not ran)

    def _check_path(self) -> None:
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

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file, waiting (bounded) while another process holds it."""
        self._check_path()
        deadline = time.monotonic() + self.lock_wait_s
        delay = 0.05
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.Error as exc:
                text = str(exc)
                if "lock" in text.lower() and time.monotonic() < deadline:
                    time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
                    delay = min(delay * 2, 0.5)
                    continue
                raise _store_error(exc, self.path, opening=True, waited_s=self.lock_wait_s) from None

    def _verify(self) -> None:
        """Refuse a file that fails the integrity check; re-read only when the file changed since."""
        sig = file_signature(self.path)
        if sig is None or sig == self._verified:
            return
        problem = check_store_file(self.path)
        if problem:
            log_error(f"store {self.path} failed its integrity check: {problem}", store_path=self.path)
            wal = self.path.with_name(self.path.name + ".wal")
            if wal.exists() and wal.stat().st_size > 0:
                # Committed changes still in the write-ahead log: DuckDB replays them once it can write the file
                # (issue 34: advising `db init` here would have thrown away every version).
                raise StoreError(
                    f"the store {self.path} has changes waiting in its write-ahead log {wal.name} that could not "
                    f"be written into the file ({problem}); nothing was written. Free space on its disk and run "
                    "the command again; keep the .wal file beside it and do not run `hangover db init`"
                )
            raise StoreError(
                f"the store {self.path} is damaged: {problem}; nothing was written. Restore it from a backup, "
                "or move it aside and run `hangover db init` to start a new one"
            )
        self._verified = sig

    def close(self) -> None:
        """Let go of the file now if no unit of work is running (the next one opens it again)."""
        with self._lock:
            if self._users == 0 and self._con is not None:
                con, self._con = self._con, None
                _close_quietly(con)

    # -- units of work -------------------------------------------------------
    def _acquire(self) -> duckdb.DuckDBPyConnection:
        with self._lock:  # opening, and creating a cursor, touch the shared connection
            if self._con is None:
                self._con = self._connect()
            try:
                raw = self._con.cursor()
            except duckdb.Error as exc:
                raise _store_error(exc, self.path) from None
            self._users += 1
            return raw

    def _release(self, raw: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            _close_quietly(raw)
            self._users -= 1
            if self._users == 0 and self._con is not None:
                # The last unit of work: close, so another process (CLI or dashboard) can open the file.
                con, self._con = self._con, None
                _close_quietly(con)

    @contextlib.contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh cursor for one unit of work, closed afterwards.

        It is a guarded proxy with the cursor's interface: every DuckDB error it
        raises becomes a StoreError (typed as the cursor for readers and checkers).
        """
        raw = self._acquire()
        try:
            yield GuardedCursor(raw, self.path)  # type: ignore[misc]
        finally:
            self._release(raw)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Keep the file open across several units of work that belong together (one import, one page's reads);
        without it each unit opens and closes the file (about 20 ms each)."""
        raw = self._acquire()
        try:
            yield
        finally:
            self._release(raw)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside BEGIN/COMMIT; any exception rolls everything back."""
        with self.cursor() as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                with contextlib.suppress(Exception):  # a dead connection has nothing left to roll back
                    cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def write(self, work, *, attempts: int = 5, action: str | None = None, detail: str = ""):
        """Run `work(cursor)` in a transaction after the integrity check, retrying DuckDB's write conflicts.

        Every write is checked against the signed-in user's role first (core.access: a viewer's write is refused
        before it starts) and recorded in the audit trail inside the same transaction: who, when, `action`
        (default: named after the function that asked), `detail`.
        """
        from core import access

        what = action or _action_of(work)
        if what != "seed reference data":  # the catalog a new store is filled with is nobody's edit
            access.check_write(what)
        for attempt in range(attempts):
            try:
                with self._write_lock, self.transaction() as cur:
                    self._verify()
                    out = work(cur)
                    self._audit(cur, what, detail)
                    return out
            except StoreConflict:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.01 * (2**attempt))
        return None  # pragma: no cover

    def _audit(self, cur: duckdb.DuckDBPyConnection, action: str, detail: str) -> None:
        from core import access
        from core.store.users import record

        # A store held at an older migration (tests, `migrate_upto`) has no audit table yet.
        if not cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'audit_log'").fetchall()[0][0]:
            return
        actor = access.current()
        record(cur, who=access.who(), role=actor.role.value if actor else "local", action=action, detail=detail)

    # -- reads ---------------------------------------------------------------
    def frame(self, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
        """Run a read query with bound parameters and return a DataFrame."""
        with self.cursor() as cur:
            return cur.execute(sql, list(params)).df()

    def table(self, name: str) -> pd.DataFrame:
        """Every row of a reference table, oldest first, with provenance columns."""
        _check_table(name)
        return self.frame(f"SELECT * FROM {name} ORDER BY row_id")

    def models(self, name: str) -> list[Sourced]:
        """Rows of a reference table as validated models."""
        return self._validated(name, TABLE_MODELS[name])

    def _validated(self, name: str, model: type[M]) -> list[M]:
        """models(name), typed as the table's record class (the one TABLE_MODELS names for it)."""
        fields = list(model.model_fields)
        df = self.table(name)
        return [model.model_validate(_clean(rec)) for rec in df[fields].to_dict("records")]

    def gpus(self) -> list[GpuSpec]:
        """GPU specs, the latest row per GPU name."""
        return _latest(self._validated("gpus", GpuSpec), key=lambda g: g.name)

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
        return _latest(self._validated("node_prices", NodePrice), key=lambda p: (p.provider, p.instance, p.pricing_option, p.region))

    def owned_hardware(self) -> list[OwnedHardware]:
        """Owned-hardware cost figures, the latest per name."""
        return _latest(self._validated("owned_hardware", OwnedHardware), key=lambda h: h.name)

    def api_prices(self) -> list[ApiPrice]:
        """API prices, the latest per (provider, model)."""
        return _latest(self._validated("api_prices", ApiPrice), key=lambda a: (a.provider, a.model))

    def serving_stacks(self) -> list[ServingStack]:
        """Serving stacks, the latest per stack id."""
        return _latest(self._validated("serving_stacks", ServingStack), key=lambda s: s.stack_id)

    def benchmarks(self) -> list[Benchmark]:
        """Every benchmark point (seed and imported) that is valid and finite.

        A row no longer valid (stored by an older version that let NaN, infinity
        or an absurd figure through) is skipped and logged, never raised: one bad
        file must not break every page for everyone (issue 16).
        """
        from core.store.benchmarks import readable_benchmarks

        return readable_benchmarks(self, self.table("benchmarks"))

    def info(self) -> pd.DataFrame:
        """Per table: row count, user rows and the oldest `as_of` (what `hangover db info` prints)."""
        rows = []
        with self.cursor() as cur:
            for name in TABLE_MODELS:
                n, users, oldest = cur.execute(
                    f"SELECT count(*), count(*) FILTER (WHERE origin = 'user'), min(as_of) FROM {name}"
                ).fetchall()[0]  # an aggregate: always one row
                rows.append({"table": name, "rows": n, "user_rows": users, "oldest_as_of": oldest})
            n, latest = cur.execute("SELECT count(*), max(version) FROM inventory_versions").fetchall()[0]
            w = cur.execute("SELECT count(*) FROM workloads").fetchall()[0][0]
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

        return self.write(work, action=f"enter {table.replace('_', ' ')}")

    def seed(self, *, only_if_empty: bool = False) -> dict[str, int]:
        """Load `data/*.csv` (validated) and replace the seed rows; user rows are never touched.

        Everything is read and validated before the transaction starts, so a bad
        seed file leaves the store exactly as it was.
        """
        if only_if_empty:
            with self.cursor() as cur:
                have = cur.execute("SELECT count(*) FROM gpus").fetchall()[0][0]
            if have:
                return {}  # before reading data/: every command opens a seeded store (~0.15 s of the sample's CLI)
        seeds = load_seed()

        def work(cur: duckdb.DuckDBPyConnection) -> dict[str, int]:
            counts = {}
            for table in SEED_TABLES:
                cur.execute(f"DELETE FROM {table} WHERE origin = 'seed'")
                counts[table] = insert_rows(cur, table, seeds[table], origin="seed")
            return counts

        return self.write(work, action="seed reference data")


# What each writer's function does, in the words of the audit trail (others read as their function's name).
_ACTIONS = {
    "_commit": "import inventory", "restore_version": "restore inventory version", "commit_import": "import telemetry",
    "insert_scenario": "save scenario", "rename_scenario_row": "rename scenario",
    "delete_scenario_row": "delete scenario", "insert_user_stack": "add stack", "remove_user_stack": "remove stack",
    "insert_import": "import benchmarks", "remove_import": "remove benchmarks",
}


def _action_of(work) -> str:
    """'save scenario' for the `work` closure of insert_scenario: the audit's name for a write."""
    outer = getattr(work, "__qualname__", "write").split(".<locals>")[0].rsplit(".", 1)[-1]
    return _ACTIONS.get(outer, outer.replace("_", " "))


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
