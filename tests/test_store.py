"""The DuckDB store: migrations, seeding, user rows, transactions, threads and bad paths."""

from __future__ import annotations

import datetime as dt
import hashlib
import threading

import duckdb
import pytest

from core.errors import StoreError
from core.models import GpuSpec, NodePrice
from core.store import TABLE_MODELS, Store, default_db_path, migrations, open_store
from core.store.seed import SEED_TABLES, load_seed

ALL_MIGRATIONS = [m.__name__ for m in migrations.MIGRATIONS]
ALL_TABLES = {*TABLE_MODELS, "inventory_versions", "workloads", "_migrations"}


def _tables(path) -> set[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    finally:
        con.close()


def _counts(store: Store) -> dict[str, int]:
    return {t: int(store.frame(f"SELECT count(*) AS n FROM {t}").n[0]) for t in TABLE_MODELS}


def _gpu(name: str, as_of: str = "2026-01-01") -> GpuSpec:
    return GpuSpec(name=name, hbm_gb=1, hbm_tb_per_s=1, bf16_tflops=1, tdp_w=1, source="test", as_of=as_of)


def test_blank_store_ends_at_current_schema(tmp_path):
    path = tmp_path / "blank.duckdb"
    store = Store(path)
    assert store.applied_migrations() == ALL_MIGRATIONS
    store.close()
    assert _tables(path) >= ALL_TABLES  # other issues' migrations add tables of their own


def test_older_store_is_migrated_forward(tmp_path):
    path = tmp_path / "old.duckdb"
    old = Store(path, migrate_upto=1)
    assert old.applied_migrations() == ["m001_reference_tables"]
    old.close()
    assert "benchmarks" not in _tables(path)

    store = Store(path)
    assert store.applied_migrations() == ALL_MIGRATIONS
    assert _counts(store)["benchmarks"] == len(load_seed()["benchmarks"])
    store.close()
    assert _tables(path) >= ALL_TABLES


def test_migrations_run_twice_apply_nothing(store):
    with store.cursor() as cur:
        assert migrations.migrate(cur) == []
    assert store.applied_migrations() == ALL_MIGRATIONS


def test_store_from_a_newer_version_is_refused_untouched(tmp_path):
    path = tmp_path / "newer.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO _migrations (name) VALUES ('m999_from_the_future')")
    con.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(StoreError, match="newer version of GPU Hangover.*'m999_from_the_future'"):
        Store(path)

    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    con = duckdb.connect(str(path), read_only=True)
    names = [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
    con.close()
    assert names == [*ALL_MIGRATIONS, "m999_from_the_future"]


def test_seed_counts_match_the_csvs_and_reseed_is_idempotent(store):
    expected = {t: len(rows) for t, rows in load_seed().items()}
    assert _counts(store) == expected
    assert store.seed() == expected
    assert store.seed() == expected
    assert _counts(store) == expected


def test_user_rows_survive_a_reseed(store):
    store.add("gpus", [_gpu("My GPU")], origin="user")
    store.seed()
    store.seed()
    info = store.info().set_index("table")
    assert info.loc["gpus", "user_rows"] == 1
    assert info.loc["gpus", "rows"] == len(load_seed()["gpus"]) + 1
    assert store.gpu("my gpu").name == "My GPU"


def test_seed_rows_read_back_equal_the_csv_rows(store):
    seeds = load_seed()
    for table in SEED_TABLES:
        assert store.models(table) == list(seeds[table]), table


def test_newer_user_price_overrides_the_seed_snapshot(store):
    seed_p5 = next(p for p in store.node_prices() if p.instance == "p5.48xlarge" and p.pricing_option == "on_demand")
    mine = {**seed_p5.model_dump(), "usd_per_node_hour": 40.0, "as_of": dt.date(2026, 11, 1), "confidence": "user"}
    store.add("node_prices", [NodePrice.model_validate(mine)])
    latest = [p for p in store.node_prices() if p.instance == "p5.48xlarge" and p.pricing_option == "on_demand"]
    assert [p.usd_per_node_hour for p in latest] == [40.0]


def test_unknown_gpu_lists_the_known_ones(store):
    with pytest.raises(StoreError, match="unknown GPU 'H900'; known GPUs: .*H100 SXM"):
        store.gpu("H900")


def test_failed_write_leaves_the_store_as_it_was(store):
    before = _counts(store)

    def work(cur):
        cur.execute("DELETE FROM gpus")
        raise RuntimeError("upload failed half-way")

    with pytest.raises(RuntimeError):
        store.write(work)
    assert _counts(store) == before


def test_eight_threads_read_and_write_through_one_store(store):
    """8 threads x 10 adds = 80 user rows; two of the threads also re-seed while others read."""
    n_threads, per_thread = 8, 10
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads)

    def session(i: int) -> None:
        try:
            start.wait()
            for j in range(per_thread):
                store.add("gpus", [_gpu(f"T{i}-{j}")], origin="user")
                store.gpus()
                store.info()
                if i < 2 and j % 5 == 0:
                    store.seed()
        except BaseException as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    users = store.frame("SELECT count(*) AS n FROM gpus WHERE origin = 'user'").n[0]
    seeds = store.frame("SELECT count(*) AS n FROM gpus WHERE origin = 'seed'").n[0]
    assert users == n_threads * per_thread
    assert seeds == len(load_seed()["gpus"])


def test_parent_that_is_a_file_gives_a_clear_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="not-a-folder is a file, not a folder"):
        Store(blocker / "sub" / "h.duckdb")


def test_folder_or_garbage_file_as_store_gives_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="it is a folder, not a file"):
        Store(tmp_path)
    junk = tmp_path / "junk.duckdb"
    junk.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(junk)


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "env.duckdb"))
    assert default_db_path() == tmp_path / "env.duckdb"
    monkeypatch.delenv("HANGOVER_DB")
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_db_path() == tmp_path / ".local" / "share" / "gpu-hangover" / "hangover.duckdb"


def test_open_store_shares_one_store_per_path(tmp_path):
    path = tmp_path / "shared.duckdb"
    a = open_store(path)
    assert open_store(str(path)) is a
    assert a.path == path.resolve()
