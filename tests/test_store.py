"""The DuckDB store: migrations, seeding, user rows, transactions, threads and bad paths."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

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


# -- issue 16: driver errors, another process, damaged files, kill -9 -------------------------

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _hold(path, seconds: float) -> subprocess.Popen:
    """Another process (as a dashboard would) holding the store file for `seconds`."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_driver_error_mid_query_is_one_line_with_the_details_in_the_log(store):
    with pytest.raises(StoreError) as info:
        store.frame("SELECT * FROM no_such_table")
    msg = str(info.value)
    assert "\n" not in msg and "Catalog Error" not in msg and "Traceback" not in msg
    assert msg.startswith(f"the store at {store.path}: the database failed (CatalogException)")
    log = store.path.parent / "hangover-errors.log"
    assert f"details in {log}" in msg
    assert "no_such_table" in log.read_text()  # the driver's own words are kept for whoever debugs it


def test_a_full_disk_mid_write_is_named_and_nothing_is_written(store):
    before = _counts(store)

    def work(cur):
        cur.execute("DELETE FROM gpus")
        cur.execute("SELECT error('IO Error: No space left on device')").fetchall()

    with pytest.raises(StoreError, match="the disk holding the store is full .*nothing was committed.*Free some space and try again"):
        store.write(work)
    assert _counts(store) == before


def test_the_file_is_free_between_units_of_work(store):
    """A dashboard's store lets go of the file after each unit of work, so a `hangover` command can run beside it."""
    store.gpus()
    out = subprocess.run([sys.executable, "-m", "core.cli", "--db", str(store.path), "db", "info"],
                         capture_output=True, text=True, timeout=120, env=os.environ | {"HANGOVER_LOCK_WAIT_S": "0"})
    assert out.returncode == 0, out.stderr
    assert "gpus" in out.stdout
    store.add("gpus", [_gpu("After the CLI")])  # and the dashboard writes again afterwards
    assert store.gpu("after the cli").name == "After the CLI"


def test_a_command_waits_for_another_process_then_says_so_in_one_line(tmp_path):
    path = tmp_path / "busy.duckdb"
    Store(path).close()
    proc = _hold(path, 30)
    try:
        started = time.monotonic()
        with pytest.raises(StoreError) as info:
            Store(path, lock_wait_s=0.5)
        assert time.monotonic() - started >= 0.5  # it did wait; how long past that is the machine's load
        msg = str(info.value)
        assert msg == (f"the store {path} is in use by another program (a `hangover` "
                       "command or a dashboard busy writing); waited 0.5 s. Try again when it has finished")
        assert "PID" not in msg and "python" not in msg.lower()
    finally:
        proc.kill()
        proc.wait()


def test_a_command_gets_in_once_the_other_process_lets_go(tmp_path):
    path = tmp_path / "busy.duckdb"
    Store(path).close()
    proc = _hold(path, 1.0)
    try:
        store = Store(path, lock_wait_s=20)
        assert store.gpus()
    finally:
        proc.wait()


def _damage(path, offset_from_end: int) -> None:
    """Overwrite 64 bytes of a block with a pattern that changes its checksum."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size - offset_from_end)
        f.write(bytes(range(7, 71)))


def test_a_damaged_block_refuses_the_store_and_leaves_it_byte_identical(tmp_path):
    path = tmp_path / "damaged.duckdb"
    Store(path).close()
    _damage(path, 100_000)
    before = _sha(path)
    with pytest.raises(StoreError, match=r"is damaged: block \d+ of \d+ fails its checksum .*nothing was written"):
        Store(path)
    assert _sha(path) == before


def test_a_store_damaged_while_open_refuses_the_next_write(tmp_path):
    """The check runs again before a write whenever the file changed since it was last verified."""
    path = tmp_path / "damaged.duckdb"
    store = Store(path)
    store.gpus()
    _damage(path, 100_000)
    before = _sha(path)
    with pytest.raises(StoreError, match="is damaged"):
        store.add("gpus", [_gpu("Onto a damaged file")])
    assert _sha(path) == before


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_truncated_store_is_refused_untouched(tmp_path, keep):
    path = tmp_path / "cut.duckdb"
    Store(path).close()
    with open(path, "r+b") as f:
        f.truncate(int(path.stat().st_size * keep) + 1000)  # part-way through a block
    before = _sha(path)
    with pytest.raises(StoreError, match="is damaged: the file is cut short"):
        Store(path)
    assert _sha(path) == before


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    path = tmp_path / "junk.duckdb"
    path.write_bytes(b"\x00" * 5000 + b"not a database")
    before = _sha(path)
    with pytest.raises(StoreError, match="not a DuckDB database file"):
        Store(path)
    assert _sha(path) == before


KILLED = """
import sys
from core.models import GpuSpec
from core.store import Store
s = Store(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    s.add("gpus", [GpuSpec(name=f"K{i}-{j}", hbm_gb=1, hbm_tb_per_s=1, bf16_tflops=1, tdp_w=1, source="t",
                           as_of="2026-01-01") for j in range(50)], origin="user")
    i += 1
"""


@pytest.mark.parametrize("after_s", [0.3, 1.1])
def test_kill_9_mid_commit_leaves_whole_commits_only(tmp_path, after_s):
    """A process killed with SIGKILL while committing 50-row batches leaves a sound file with whole batches."""
    path = tmp_path / "killed.duckdb"
    Store(path).close()
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(after_s)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = Store(path)  # opens, passes the integrity check, replays the log
    users = int(store.frame("SELECT count(*) AS n FROM gpus WHERE origin = 'user'").n[0])
    assert users % 50 == 0
    store.add("gpus", [_gpu("After the kill")])  # and takes writes again


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="/usr/bin/chromium is absent")
def test_cli_commands_run_while_a_browser_has_the_dashboard_open(tmp_path):
    """issue 16: once a browser opened the dashboard, every `hangover` command on its store failed."""
    pytest.importorskip("playwright.sync_api")
    from tests.e2e_support import chromium_page, streamlit_server, wait_until_idle

    db = tmp_path / "shared.duckdb"
    bench = Path(__file__).parent / "data" / "bench" / "vllm_new.json"
    env = os.environ | {"HANGOVER_DB": str(db)}
    with streamlit_server(db) as url, chromium_page() as page:
        page.goto(url + "/performance")
        wait_until_idle(page)
        for argv in (["db", "info"], ["bench", "import", str(bench), "--stack", "llama8b-bf16", "--gpu", "H100 SXM"],
                     ["bench", "list"]):
            out = subprocess.run([sys.executable, "-m", "core.cli", *argv], capture_output=True, text=True,
                                 timeout=120, env=env, cwd=Path(__file__).resolve().parents[1])
            assert out.returncode == 0, (argv, out.stderr)
        assert "vllm_new.json" in out.stdout
        page.reload()  # and the page reads what the command wrote (the list of imports is read on every run)
        wait_until_idle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Remove an imported file" in page.locator('[data-testid="stMain"]').inner_text()


def test_the_file_signature_moves_on_every_write_and_never_on_a_read(store):
    """The dashboard keys its cached reads on it (issue 16): a read must not invalidate them, a CLI write must."""
    from core.store.integrity import file_signature

    path = store.path
    before = file_signature(path)
    store.gpus()
    store.info()
    with store.cursor() as cur:
        cur.execute("SELECT count(*) FROM workloads").fetchall()
    assert file_signature(path) == before and not path.with_name(path.name + ".wal").exists()
    other = Store(path, seed=False)  # another program's store object on the same file, as a command opens it
    other.add("gpus", [_gpu("Signature GPU")])
    assert file_signature(path) != before


def test_a_part_block_past_the_committed_blocks_is_not_damage(tmp_path):
    """A failed write that grew the file part-way into a new block (disk full) leaves the committed state intact:
    no refusal, and the store reads as before (issue 34)."""
    path = tmp_path / "grown.duckdb"
    Store(path).add("gpus", [_gpu("Kept")])
    with open(path, "ab") as f:
        f.write(b"\x01" * 5000)  # less than a block, past every block the header counts
    store = Store(path)
    assert "Kept" in {g.name for g in store.gpus()}
    store.add("gpus", [_gpu("Written after")])
    assert {"Kept", "Written after"} <= {g.name for g in store.gpus()}


def _store_with_free_blocks_cut_off(path) -> tuple[int, set[int]]:
    """A store whose committed header counts free blocks DuckDB dropped from the file's end (as the kill test's
    store is after every other commit); returns (block size, free block ids)."""
    import struct

    from core.store.integrity import HEADER_BYTES, _free_blocks

    store = Store(path)
    for i in range(20):
        store.add("gpus", [_gpu(f"Row {i}-{j}") for j in range(50)], origin="user")
        store.close()
        with open(path, "rb") as f:
            head = f.read(3 * HEADER_BYTES)
            headers = [struct.unpack_from("<5Q", head, k * HEADER_BYTES + 8) for k in (1, 2)]
            _, _, free_pointer, blocks, block_size = max(headers)
            whole = (path.stat().st_size - 3 * HEADER_BYTES) // block_size
            free = _free_blocks(f, free_pointer, blocks, block_size, whole)
        if free and whole < blocks and set(range(whole, blocks)) <= free:
            return block_size, free
    raise AssertionError("no commit left free blocks cut off the file's end")


def test_the_free_list_read_is_duckdbs_own(tmp_path):
    """The integrity check reads the committed free list itself; DuckDB's `PRAGMA database_size` counts the same."""
    path = tmp_path / "free.duckdb"
    _, free = _store_with_free_blocks_cut_off(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert len(free) == con.execute("SELECT free_blocks FROM pragma_database_size()").fetchone()[0] > 0
    finally:
        con.close()


def test_a_kill_mid_checkpoint_into_a_free_block_is_not_damage(tmp_path):
    """The flake behind `test_kill_9_mid_commit...`: a checkpoint writes its new blocks into the committed free list,
    which may lie past the file's end; a process killed there leaves the file ending part-way through a free block
    (and a torn free block inside it). The committed state is whole: the store opens and reads as before."""
    path = tmp_path / "killed.duckdb"
    block_size, free = _store_with_free_blocks_cut_off(path)
    users = Store(path).frame("SELECT count(*) AS n FROM gpus WHERE origin = 'user'").n[0]
    inside = min(free)
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.write(b"\x01" * (block_size // 3))  # a part-block past the file's whole blocks, all of them free
        if (path.stat().st_size - 3 * 4096) // block_size > inside:
            f.seek(3 * 4096 + inside * block_size + 64)
            f.write(b"\x02" * 4096)  # a torn write inside a free block the file still holds
    store = Store(path)
    assert store.frame("SELECT count(*) AS n FROM gpus WHERE origin = 'user'").n[0] == users
    store.add("gpus", [_gpu("After the kill")])
    assert "After the kill" in {g.name for g in store.gpus()}


def test_a_used_block_missing_from_the_end_is_refused(tmp_path):
    """The other side of reading the free list: a file cut at a block boundary inside the blocks the committed state
    uses is damage, not dropped free blocks."""
    path = tmp_path / "cut.duckdb"
    block_size, free = _store_with_free_blocks_cut_off(path)
    used = max(set(range(min(free))) - free)
    with open(path, "r+b") as f:
        f.truncate(3 * 4096 + used * block_size)
    before = _sha(path)
    with pytest.raises(StoreError, match=f"is damaged: the file is cut short .*before block {used}"):
        Store(path)
    assert _sha(path) == before


def test_a_failed_check_with_a_pending_wal_never_advises_db_init(tmp_path):
    """Changes still in the write-ahead log: the advice is to free space and keep the .wal, never `db init`."""
    path = tmp_path / "pending.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("SET checkpoint_threshold = '10GB'")
    con.execute("CREATE TABLE pending_rows AS SELECT range AS x FROM range(1000)")
    con.close()
    wal = path.with_name(path.name + ".wal")
    assert wal.stat().st_size > 0
    _damage(path, 100_000)
    with pytest.raises(StoreError) as info:
        Store(path)
    msg = str(info.value)
    assert "write-ahead log pending.duckdb.wal" in msg and "Free space" in msg
    assert "do not run `hangover db init`" in msg and "Restore it" not in msg


def test_the_catalog_is_read_in_one_open_of_the_file(store, monkeypatch):
    """Catalog.from_store's six table reads hold the file open once (Store.held), not once per table (~20 ms an
    open), and the store is closed again afterwards for other processes."""
    from core.catalog import Catalog

    opened: list[int] = []
    connect = Store._connect
    monkeypatch.setattr(Store, "_connect", lambda self: opened.append(1) or connect(self))
    cat = Catalog.from_store(store)
    assert cat.gpus and cat.stacks and cat.benchmarks
    assert len(opened) == 1 and store._con is None
