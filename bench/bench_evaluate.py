"""Times `evaluate` on generated inventories of 1k, 10k and 100k workloads; prints rows/s and ratios.

Run by hand: python bench/bench_evaluate.py  (not part of the test suite)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402


def main() -> None:
    """Print a table of median times over 3 runs per size."""
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    scenario = Scenario(fleet_nodes=8)
    evaluate(catalog, synthetic_inventory(100), scenario)  # warm caches (calibration, imports)
    print(f"routes per workload: {len(catalog.stacks) + len(catalog.apis)}")
    print(f"{'workloads':>10} {'median s':>9} {'rows/s':>12} {'x 1k time':>10}")
    base = None
    for n in (1_000, 10_000, 100_000):
        inv = synthetic_inventory(n, seed=n)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            evaluate(catalog, inv, scenario)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        base = base or med
        print(f"{n:>10,} {med:>9.3f} {n / med:>12,.0f} {med / base:>10.1f}")


if __name__ == "__main__":
    main()
