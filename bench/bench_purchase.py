"""Times the staged purchase (issue 32 item 2) against the plan it reads: CPU seconds of each, per inventory.

Run by hand: PYTHONPATH=. python bench/bench_purchase.py [--sizes 1000,5000] [--draws 1000] [--owned 1] [--ends]
(not part of the test suite). --ends also plans the two end plans (core/decision/sensitivity.py) and prints the
all-pessimistic and all-optimistic draws beside them (the approximation's check).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision import purchase  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402
from core.store.seed import sample_workloads_path  # noqa: E402


def main() -> None:
    """Per inventory: the plan (evaluate, no ranges), then the purchase's inputs (grid re-sizing) and draws."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="", help="generated inventories to add to the sample, e.g. 1000,5000")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--owned", type=int, default=1, help="owned nodes (Scenario.fleet_nodes)")
    ap.add_argument("--ends", action="store_true", help="compare the all-end draws with the end plans")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    scenario = Scenario(fleet_nodes=args.owned)
    settings = purchase.PurchaseSettings(draws=args.draws)
    purchase.simulate(purchase.inputs_of(evaluate(catalog, pd.read_csv(sample_workloads_path()), scenario)),
                      settings)  # warm caches (calibration, bounds, imports)
    cases = [("sample (7)", pd.read_csv(sample_workloads_path()))]
    cases += [(f"{int(n):,}", synthetic_inventory(int(n), seed=int(n))) for n in args.sizes.split(",") if n]
    print(f"{'workloads':>10} {'plan CPU s':>11} {'grid CPU s':>11} {'draws CPU s':>12} {'pools':>6} "
          f"{'buy now / p50 / p90':>20}")
    for name, inv in cases:
        t = time.process_time()
        ev = evaluate(catalog, inv, scenario)
        t_plan = time.process_time() - t
        t = time.process_time()
        inp = purchase.inputs_of(ev)
        t_grid = time.process_time() - t
        t = time.process_time()
        p = purchase.simulate(inp, settings)
        t_draws = time.process_time() - t
        print(f"{name:>10} {t_plan:>11.2f} {t_grid:>11.3f} {t_draws:>12.3f} {len(inp.pools):>6} "
              f"{f'{p.buy_now_nodes} / {p.nodes_p50} / {p.nodes_p90}':>20}")
        if args.ends:
            import numpy as np

            from core.decision.sensitivity import ranges

            pr = ranges(ev, force=True).performance
            R = len(inp.routes)

            def at(u: float, inp=inp, R=R) -> int:
                return int(purchase.nodes_for(inp, np.full((1, R), u), np.ones(1))[0])

            print(f"{'':>10} plan {ev.fleet.nodes_needed}, central draw {at(0.0)}; all pessimistic: draw {at(-1.0)}, "
                  f"end plan {pr.nodes_needed_pessimistic}; all optimistic: draw {at(1.0)}, end plan {pr.nodes_needed_optimistic}")


if __name__ == "__main__":
    main()
