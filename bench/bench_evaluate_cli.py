"""Times the whole `hangover evaluate` process (read the CSV, plan, write JSON/CSV) at 1k, 10k and 100k workloads.

Run by hand: python bench/bench_evaluate_cli.py [--sizes 1000,10000,100000] [--format json]
A size `sample` is the bundled data/workloads_sample.csv (7 workloads); any other size is bench/gen.py's
synthetic_inventory(n, seed=n). Prints wall and CPU seconds per size (CPU = the child process's user + system
time, with the processes it forks and waits for, such as the ranges' end plans: steadier on a loaded machine),
the output size, and each size's ratio to the first.
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

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "workloads_sample.csv"


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
    sizes = [s.strip() for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "bench.duckdb"
        subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), "db", "init"], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"{'workloads':>10} {'wall s':>8} {'cpu s':>8} {'output MB':>10} {'x first (cpu)':>14}")
        first = None
        for size in sizes:
            if size == "sample":
                csv = SAMPLE
            else:
                csv = Path(d) / f"inv{size}.csv"
                synthetic_inventory(int(size), seed=int(size)).to_csv(csv, index=False)
            out = Path(d) / f"out{size}.{args.format}"
            wall, cpu = run_once(db, csv, out, args.format)
            first = first or cpu
            label = "sample (7)" if size == "sample" else f"{int(size):,}"
            print(f"{label:>10} {wall:>8.2f} {cpu:>8.2f} {os.path.getsize(out) / 1e6:>10.1f} {cpu / first:>14.1f}")


if __name__ == "__main__":
    main()
