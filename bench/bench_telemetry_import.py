"""Times importing a 10,000,000-row nvidia-smi CSV against DuckDB's own read_csv of the same file; prints the ratio.

Run by hand (not part of the test suite):
    python bench/bench_telemetry_import.py [--rows 10000000] [--repeat 3] [--page]

Issue 15 asks that `hangover telemetry import` (sha256, parse every value with
its unit, write Parquet partitioned by node and month, hourly aggregates and
the imports row in one transaction) takes no more than 3x DuckDB's
`CREATE TABLE AS SELECT * FROM read_csv(file)` into an in-memory database.
Both run in the same process, interleaved, after one warm-up, so the file sits
in the page cache for each; medians are compared. With --page, the Telemetry
page is then timed through AppTest on the store holding those samples.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from core.store import Store  # noqa: E402
from core.telemetry import import_telemetry, measured_profile  # noqa: E402

GPUS = 8


def write_nvidia_smi_csv(path: Path, rows: int, *, interval_s: int = 60) -> None:
    """An 8-GPU node logging every `interval_s` seconds, as nvidia-smi writes it (units, ', ' separators).

    Utilization is 60 % from 09:00 to 17:59 and 5 % otherwise, plus GPU index
    (0-7 points), so the expected profile is known.
    """
    con = duckdb.connect()
    try:
        con.execute(f"""
            COPY (SELECT strftime(TIMESTAMP '2024-01-01 00:00:00' + to_seconds((i // {GPUS}) * {interval_s}),
                                  '%Y/%m/%d %H:%M:%S') || '.' || lpad(CAST((i * 37) % 1000 AS VARCHAR), 3, '0')
                         || ', ' || CAST(i % {GPUS} AS VARCHAR)
                         || ', ' || CAST(CASE WHEN hour(TIMESTAMP '2024-01-01' + to_seconds((i // {GPUS}) * {interval_s}))
                                                   BETWEEN 9 AND 17 THEN 60 ELSE 5 END + i % {GPUS} AS VARCHAR) || ' %'
                         || ', ' || CAST(20000 + (i * 31) % 60000 AS VARCHAR) || ' MiB'
                         || ', ' || printf('%.2f', 90.0 + (i % 600) + 0.25) || ' W'
                         AS line
                  FROM range({int(rows)}) t(i))
            TO '{path}' (HEADER false, QUOTE '', DELIMITER '\t')""")
    finally:
        con.close()
    body = path.read_bytes()
    path.write_bytes(b"timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n" + body)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def duckdb_read_csv(path: Path) -> tuple[float, float]:
    """The baseline: DuckDB's read_csv (sniffing) into a table of an in-memory database; (wall s, CPU s)."""
    t, c = time.perf_counter(), _cpu()
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?)", [str(path)])
    finally:
        con.close()
    return time.perf_counter() - t, _cpu() - c


def our_import(path: Path, folder: Path) -> tuple[float, float, Store]:
    """Ours: a fresh store, then import_telemetry (the store's creation and seeding is not timed); (wall, CPU, store)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    store = Store(folder / "bench.duckdb")
    t, c = time.perf_counter(), _cpu()
    result = import_telemetry(store, path, node="bench-node-1")
    elapsed, cpu = time.perf_counter() - t, _cpu() - c
    assert not result.duplicate and result.samples > 0, result.message
    return elapsed, cpu, store


def time_page(db: Path, reruns: int = 5) -> tuple[float, float, float]:
    """First run, median rerun, and a run after a new date window, of the Telemetry page (AppTest), in ms."""
    from streamlit.testing.v1 import AppTest

    os.environ["HANGOVER_DB"] = str(db)
    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    at = AppTest.from_file(app, default_timeout=120)
    at.run()
    at.switch_page("screens/telemetry.py")
    t = time.perf_counter()
    at.run()
    first = (time.perf_counter() - t) * 1000
    assert not at.exception, at.exception
    times = []
    for _ in range(reruns):
        t = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t) * 1000)
    assert not at.exception, at.exception
    # A new date window misses every cache: the hourly query, the profile and both figures are redone.
    first_day = at.date_input(key="tel_dates").value[0]
    at.date_input(key="tel_dates").set_value((first_day, first_day + dt.timedelta(days=30)))
    t = time.perf_counter()
    at.run()
    window = (time.perf_counter() - t) * 1000
    assert not at.exception, at.exception
    return first, statistics.median(times), window


def main() -> None:
    """Generate, time both (interleaved), print medians and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--interval-s", type=int, default=60, help="seconds between samples of one GPU")
    ap.add_argument("--page", action="store_true", help="then time the Telemetry page on the imported store")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-telemetry-"))
    try:
        csv = work / "gpu.csv"
        t = time.perf_counter()
        write_nvidia_smi_csv(csv, args.rows, interval_s=args.interval_s)
        print(f"generated {args.rows:,} rows ({csv.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:.1f} s")
        duckdb_read_csv(csv)  # warm-up: page cache
        base, ours, base_cpu, ours_cpu, store = [], [], [], [], None
        for k in range(args.repeat):
            wall, cpu = duckdb_read_csv(csv)
            base.append(wall)
            base_cpu.append(cpu)
            if store is not None:
                store.close()
            wall, cpu, store = our_import(csv, work / f"store{k % 2}")
            ours.append(wall)
            ours_cpu.append(cpu)
            print(f"  run {k + 1}: duckdb read_csv {base[-1]:.2f} s (CPU {base_cpu[-1]:.2f} s), "
                  f"telemetry import {ours[-1]:.2f} s (CPU {ours_cpu[-1]:.2f} s)", flush=True)
        b, o = statistics.median(base), statistics.median(ours)
        bc, oc = statistics.median(base_cpu), statistics.median(ours_cpu)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
              f"DuckDB {duckdb.__version__}, load average {os.getloadavg()[0]:.1f}")
        print(f"median of {args.repeat}: duckdb read_csv {b:.2f} s; telemetry import {o:.2f} s; ratio {o / b:.2f}x "
              f"({args.rows / o / 1e6:.2f} M rows/s)")
        print(f"CPU time (user + system, all threads): duckdb read_csv {bc:.2f} s; telemetry import {oc:.2f} s; "
              f"ratio {oc / bc:.2f}x")
        walls = []
        for _ in range(5):
            t = time.perf_counter()
            p = measured_profile(store)
            walls.append((time.perf_counter() - t) * 1000)
        print(f"profile: {p.label}, {p.gpus} GPUs, {p.samples:,} samples, {p.gpu_hours:,} GPU-hours, "
              f"utilization {p.utilization:.4f} ({p.metric}); measured_profile median {statistics.median(walls):.0f} ms")
        if args.page:
            db = store.path
            store.close()
            first, rerun, window = time_page(db)
            print(f"Telemetry page with {p.samples:,} samples stored: first run {first:.0f} ms, "
                  f"median rerun {rerun:.0f} ms, new date window {window:.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
