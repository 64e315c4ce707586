"""Times the verdict-sensitivity runs (issue 13): engine alone vs engine + ranges, and that 100k skips them.

Run by hand: python bench/bench_sensitivity.py  (not part of the test suite)
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision import sensitivity  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402
from core.store.seed import sample_workloads_path  # noqa: E402


def main() -> None:
    """One run per size (the machine is shared): evaluate, then the ranges, then the routing table."""
    warnings.simplefilter("ignore", RuntimeWarning)
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    scenario = Scenario(fleet_nodes=8)
    sensitivity.ranges(evaluate(catalog, synthetic_inventory(100), scenario))  # warm caches (calibration, bounds)
    print(f"{'workloads':>10} {'evaluate s':>11} {'ranges s':>9} {'x':>5} {'flagged':>8}")
    cases = [("sample (7)", pd.read_csv(sample_workloads_path()))]
    cases += [(f"{n:,}", synthetic_inventory(n, seed=n)) for n in (1_000, 5_000, 100_000)]
    for name, inv in cases:
        t = time.perf_counter()
        ev = evaluate(catalog, inv, scenario)
        t_eval = time.perf_counter() - t
        t = time.perf_counter()
        rg = sensitivity.ranges(ev)  # automatic up to RANGES_MAX_WORKLOADS, None above
        t_rng = time.perf_counter() - t
        flagged = "skipped" if rg is None else str(int(rg["sensitive"].sum()))
        print(f"{name:>10} {t_eval:>11.2f} {t_rng:>9.2f} {t_rng / t_eval:>5.1f} {flagged:>8}")
    print(f"(ranges automatic up to {sensitivity.RANGES_MAX_WORKLOADS:,} workloads; above, "
          "hangover evaluate --ranges)")


if __name__ == "__main__":
    main()
