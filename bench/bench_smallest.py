"""Times the smallest change (issue 32): CPU seconds of the answer (smallest_target per node driver and
stay_on_owned) beside the evaluation it is read from, on the sample and a generated inventory.

Run by hand: python bench/bench_smallest.py  (not part of the test suite)
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.decision.smallest import smallest_change  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402
from core.store.seed import sample_workloads_path  # noqa: E402


def main() -> None:
    """One run per case (the machine may be shared: CPU seconds of this process, not wall time)."""
    warnings.simplefilter("ignore", RuntimeWarning)
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    evaluate(catalog, pd.read_csv(sample_workloads_path()), Scenario())  # warm the calibration caches
    print(f"{'inventory':>22} {'nodes':>9} {'evaluate cpu s':>15} {'smallest cpu s':>15} {'re-plans':>9} "
          f"{'targets':>8} {'stay on owned':>14}")
    cases = [("sample, 1 owned", pd.read_csv(sample_workloads_path()), 1),
             ("100 generated, 1 owned", synthetic_inventory(100, seed=0), 1)]
    for name, inv, owned in cases:
        t = time.process_time()
        ev = evaluate(catalog, inv, Scenario(fleet_nodes=owned))
        t_eval = time.process_time() - t
        t = time.process_time()
        answer = smallest_change(ev, force=True)  # the sample is automatic; 100 workloads only on demand
        t_small = time.process_time() - t
        stay = answer.stay_on_owned
        said = "-" if stay is None else ("exists" if stay.exists else "none exists") + \
            ("" if stay is None or stay.complete else " (budget)")
        print(f"{name:>22} {ev.fleet.owned_nodes:>3} -> {ev.fleet.nodes_needed:<3} {t_eval:>15.2f} {t_small:>15.2f} "
              f"{answer.replans:>9} {len(answer.targets):>8} {said:>14}")


if __name__ == "__main__":
    main()
