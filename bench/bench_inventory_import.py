"""Times importing a 1,000,000-row inventory CSV against DuckDB's own read_csv into a table; prints the ratio.

Run by hand (not part of the test suite):
    python bench/bench_inventory_import.py [--rows 1000000] [--repeat 5] [--check 3]

Issue 5 asks that read_inventory (read + validate every cell) takes no more
than 3x DuckDB's read_csv into a table on the same machine. Both run in the
same process, interleaved, after one warm-up, so the file sits in the page
cache for each; medians are compared. The commit into the store (one
transaction, a million rows plus the sha256 checksum) is timed separately.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402
import pyarrow  # noqa: E402

from core.inventory import read_inventory  # noqa: E402
from core.inventory.versions import commit_inventory  # noqa: E402
from core.store import Store  # noqa: E402


def write_inventory_csv(path: Path, rows: int, *, semicolon: bool = False) -> None:
    """A valid inventory as Excel would save it: quoted names with commas, blank optional cells.

    semicolon=True writes the continental-European form: ';' between cells and
    decimal commas (0,85), which sends those cells down the careful number path.
    """
    sep = ";" if semicolon else ","
    share = "replace(CAST((i % 100) / 100.0 AS VARCHAR), '.', ',')" if semicolon else "(i % 100) / 100.0"
    peak = "replace(CAST(1 + (i % 40) / 10.0 AS VARCHAR), '.', ',')" if semicolon else "1 + (i % 40) / 10.0"
    con = duckdb.connect()
    try:
        con.execute(f"""
            COPY (SELECT 'wl-' || lpad(CAST(i AS VARCHAR), 7, '0') AS workload_id,
                         'Workload ' || i || ', team ' || (i % 37) AS name,
                         CASE WHEN i % 5 <> 0 THEN 'Team ' || (i % 37) END AS team,
                         (i * 7919) % 1000000 AS requests_per_day,
                         {peak} AS peak_factor,
                         (i * 31) % 20000 AS input_tokens,
                         1 + (i * 17) % 4000 AS output_tokens,
                         CASE WHEN i % 2 = 0 THEN 100 + i % 20000 END AS latency_slo_ms,
                         CASE WHEN i % 2 = 1 THEN 1 + i % 24 END AS batch_window_hours,
                         CASE WHEN i % 3 = 0 THEN 'external_ok' ELSE 'owned_only' END AS data_policy,
                         ['extraction', 'code_completion', 'chat', 'agentic_step', 'reasoning'][1 + i % 5]
                             AS task_class,
                         CASE WHEN i % 4 = 0 THEN {share} END AS min_quality,
                         {share} AS cached_input_share,
                         CASE WHEN i % 7 = 0 THEN 'queue ' || i || ', nightly' END AS notes
                  FROM range({int(rows)}) t(i))
            TO '{path}' (HEADER, DELIMITER '{sep}')""")
    finally:
        con.close()


def duckdb_into_memory(path: Path) -> None:
    """The baseline: DuckDB's read_csv (sniffing types) into a table of an in-memory database."""
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?)", [str(path)])
    finally:
        con.close()


def duckdb_into_file(path: Path, db: Path) -> None:
    """The same into a table of a database file (as the store is), closed so it is on disk."""
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    try:
        con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?)", [str(path)])
    finally:
        con.close()


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    """(seconds, result) of one call."""
    t = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - t, result


def bench_file(path: Path, work: Path, repeat: int) -> dict[str, list[float]]:
    """Interleaved timings of the two baselines, read_inventory, and the commit."""
    report = read_inventory(path)  # warm-up: page cache, imports, allocator
    if not report.ok:
        raise SystemExit("generated file did not validate:\n" + "\n".join(report.error_lines()[:10]))
    duckdb_into_memory(path)
    times: dict[str, list[float]] = {"duckdb_mem": [], "duckdb_file": [], "read_inventory": [], "commit": []}
    for k in range(repeat):
        times["duckdb_mem"].append(timed(duckdb_into_memory, path)[0])
        times["duckdb_file"].append(timed(duckdb_into_file, path, work / "baseline.duckdb")[0])
        seconds, report = timed(read_inventory, path)
        times["read_inventory"].append(seconds)
        store = Store(work / f"store-{path.stem}-{k}.duckdb", seed=False)
        try:
            times["commit"].append(timed(commit_inventory, store, report.frame, file_name=path.name)[0])
        finally:
            store.close()
    return times


def main(argv: list[str] | None = None) -> int:
    """Print the figures and the ratios; with --check R, exit 1 when read_inventory exceeds R x the baseline."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--check", type=float, default=None, help="fail when the median ratio exceeds this")
    ap.add_argument("--no-semicolon", action="store_true", help="skip the semicolon/decimal-comma file")
    args = ap.parse_args(argv)

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"duckdb {duckdb.__version__}, pyarrow {pyarrow.__version__}; load average at start "
          f"{os.getloadavg()[0]:.2f}")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="hangover-bench-") as d:
        work = Path(d)
        files = [("comma, decimal point", work / "inventory.csv", False)]
        if not args.no_semicolon:
            files.append(("semicolon, decimal comma", work / "inventory-de.csv", True))
        for label, path, semicolon in files:
            write_inventory_csv(path, args.rows, semicolon=semicolon)
            size_mb = path.stat().st_size / 1e6
            t = bench_file(path, work, args.repeat)
            med = {k: statistics.median(v) for k, v in t.items()}
            best = {k: min(v) for k, v in t.items()}
            print(f"\n{args.rows:,} rows, {size_mb:.0f} MB, {label}; {args.repeat} runs, median (best) seconds:")
            for k, name in (("duckdb_mem", "DuckDB read_csv -> table, in-memory database"),
                            ("duckdb_file", "DuckDB read_csv -> table, database file"),
                            ("read_inventory", "read_inventory (read + validate every cell)"),
                            ("commit", "commit_inventory (checksum + one transaction)")):
                print(f"  {name:<46} {med[k]:7.3f}  ({best[k]:.3f})")
            ratio_mem = med["read_inventory"] / med["duckdb_mem"]
            ratio_file = med["read_inventory"] / med["duckdb_file"]
            total_file = (med["read_inventory"] + med["commit"]) / med["duckdb_file"]
            print(f"  ratio read_inventory / DuckDB in-memory table:  {ratio_mem:.2f}")
            print(f"  ratio read_inventory / DuckDB file table:       {ratio_file:.2f}")
            print(f"  ratio (read_inventory + commit) / DuckDB file:  {total_file:.2f}")
            if not semicolon:
                worst = max(worst, ratio_mem)
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    if args.check is not None and worst > args.check:
        print(f"FAIL: read_inventory took {worst:.2f}x DuckDB's read_csv (limit {args.check}x)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
