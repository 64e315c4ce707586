"""Times the whole `hangover evaluate` process (read the CSV, plan, write JSON/CSV) at 1k, 10k and 100k workloads.

Run by hand: python bench/bench_evaluate_cli.py [--sizes 1000,10000,100000] [--format json]
             python bench/bench_evaluate_cli.py --against REV [--sizes sample,20,100] [--runs 2]
             python bench/bench_evaluate_cli.py --sizes 100 --flags='--owned "H100 SXM:1" --buy B200'
--flags: more `hangover evaluate` flags for every run, as a shell would split them (a mixed fleet's, say).
A size `sample` is the bundled data/workloads_sample.csv (7 workloads), `archN` bench/gen.py's
archetype_inventory(N) (N copies of the sample's seven, traffic varied); any other size is bench/gen.py's
synthetic_inventory(n, seed=n). Prints wall and CPU seconds per size (CPU = the child process's user + system
time, with the processes it forks and waits for, such as the ranges' end plans: steadier on a loaded machine),
the output size, and each size's ratio to the first. One run of the sample is made first and not counted (a fresh
checkout's first run also compiles numba's loops and fills the fit cache, once).

--against REV: an A/B of this checkout against git revision REV (checked out in a temporary worktree, each with
its own store), the two processes alternating `--runs` times per size, so a machine's drift and load fall on
both alike: CPU seconds of each run, the ratio of the medians (this checkout / REV) and whether the two outputs
are byte for byte the same (a speed change that moves no plan leaves them identical). The first run of a new
worktree also compiles its numba loops: one warm-up run of each is made first and not counted.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import archetype_inventory, synthetic_inventory  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "workloads_sample.csv"


ROOT = Path(__file__).resolve().parent.parent


def run_once(db: Path, csv: Path, out: Path, fmt: str, cwd: Path = ROOT,
             flags: tuple[str, ...] = ()) -> tuple[float, float]:
    """Wall and CPU seconds of one `hangover evaluate` process (of the checkout in `cwd`: `python -m` puts it
    first on the path); `flags`: more evaluate flags."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), "evaluate", "--workloads", str(csv),
                    "--format", fmt, "--detail", "verdicts", "--out", str(out), *flags], check=True, cwd=cwd)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def inventory(size: str, folder: Path) -> Path:
    """The CSV of one size: the bundled sample, bench/gen.py's inventory of that many rows (seed = size), or with
    an `arch` prefix (arch100000) its archetype_inventory: that many copies of the sample's seven."""
    if size == "sample":
        return SAMPLE
    csv = folder / f"inv{size}.csv"
    if size.startswith("arch"):
        archetype_inventory(int(size[4:])).to_csv(csv, index=False)
    else:
        synthetic_inventory(int(size), seed=int(size)).to_csv(csv, index=False)
    return csv


def _label(size: str) -> str:
    """A size as the tables print it: `sample (7)`, `100,000`, `100,000 arch`."""
    if size == "sample":
        return "sample (7)"
    return f"{int(size[4:]):,} arch" if size.startswith("arch") else f"{int(size):,}"


def init_store(db: Path, cwd: Path = ROOT) -> None:
    subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), "db", "init"], check=True,
                   stdout=subprocess.DEVNULL, cwd=cwd)


def against(rev: str, sizes: list[str], runs: int, fmt: str, flags: tuple[str, ...] = ()) -> None:
    """A/B of this checkout against git revision `rev` (module docstring)."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = tmp / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), rev], check=True)
        try:
            sides = {"base": base, "head": ROOT}
            for name, cwd in sides.items():
                init_store(tmp / f"{name}.duckdb", cwd)
            print(f"{'workloads':>10} {rev + ' cpu s':>24} {'this checkout cpu s':>24} {'head / base':>12} {'output':>10}")
            for size in sizes:
                csv = inventory(size, tmp)
                cpu: dict[str, list[float]] = {name: [] for name in sides}
                for k in range(runs + 1):
                    for name, cwd in sides.items():
                        out = tmp / f"{name}.{fmt}"
                        _, c = run_once(tmp / f"{name}.duckdb", csv, out, fmt, cwd, flags)
                        if k:  # run 0 warms each checkout up (numba's compiled loops, the fit cache)
                            cpu[name].append(c)
                same = (tmp / f"base.{fmt}").read_bytes() == (tmp / f"head.{fmt}").read_bytes()
                ratio = statistics.median(cpu["head"]) / statistics.median(cpu["base"])
                label = _label(size)
                print(f"{label:>10} {', '.join(f'{c:.1f}' for c in cpu['base']):>24} "
                      f"{', '.join(f'{c:.1f}' for c in cpu['head']):>24} {ratio:>12.2f} "
                      f"{'identical' if same else 'DIFFERS':>10}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)


def main() -> None:
    """Print a table of wall/CPU seconds per inventory size (or an A/B against a revision: --against)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--format", default="json", choices=["json", "csv", "parquet"])
    ap.add_argument("--against", metavar="REV", help="A/B against this git revision (module docstring)")
    ap.add_argument("--runs", type=int, default=2, help="with --against: counted runs of each side per size")
    ap.add_argument("--flags", default="", help="more evaluate flags for every run (module docstring)")
    args = ap.parse_args()
    sizes = [s.strip() for s in args.sizes.split(",")]
    flags = tuple(shlex.split(args.flags))
    if args.against:
        against(args.against, sizes, max(args.runs, 1), args.format, flags)
        return
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "bench.duckdb"
        init_store(db)
        # One run not counted first, as --against makes: a fresh clone's first evaluate also compiles numba's loops
        # into __pycache__ and fills the fit cache (seconds, once per checkout), which no later run pays.
        run_once(db, SAMPLE, Path(d) / "warmup.json", args.format)
        print(f"{'workloads':>10} {'wall s':>8} {'cpu s':>8} {'output MB':>10} {'x first (cpu)':>14}")
        first = None
        for size in sizes:
            csv = inventory(size, Path(d))
            out = Path(d) / f"out{size}.{args.format}"
            wall, cpu = run_once(db, csv, out, args.format, flags=flags)
            first = first or cpu
            label = _label(size)
            print(f"{label:>10} {wall:>8.2f} {cpu:>8.2f} {os.path.getsize(out) / 1e6:>10.1f} {cpu / first:>14.1f}")


if __name__ == "__main__":
    main()
