"""Times the whole `hangover evaluate` process (read the CSV, plan, write JSON/CSV) at 1k, 10k and 100k workloads.

Run by hand: python bench/bench_evaluate_cli.py [--sizes 1000,10000,100000] [--format json]
Prints wall and CPU seconds per size (CPU = the child process's user + system time, steadier on a loaded
machine), the output size, and each size's ratio to the first.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402


def run_once(db: Path, csv: Path, out: Path, fmt: str) -> tuple[float, float]:
    """Wall and CPU seconds of one `hangover evaluate` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), "evaluate", "--workloads", str(csv),
                    "--format", fmt, "--detail", "verdicts", "--out", str(out)], check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    """Print a table of wall/CPU seconds per inventory size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--format", default="json", choices=["json", "csv", "parquet"])
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "bench.duckdb"
        subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), "db", "init"], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"{'workloads':>10} {'wall s':>8} {'cpu s':>8} {'output MB':>10} {'x first (cpu)':>14}")
        first = None
        for n in sizes:
            csv = Path(d) / f"inv{n}.csv"
            synthetic_inventory(n, seed=n).to_csv(csv, index=False)
            out = Path(d) / f"out{n}.{args.format}"
            wall, cpu = run_once(db, csv, out, args.format)
            first = first or cpu
            print(f"{n:>10,} {wall:>8.2f} {cpu:>8.2f} {os.path.getsize(out) / 1e6:>10.1f} {cpu / first:>14.1f}")


if __name__ == "__main__":
    main()
