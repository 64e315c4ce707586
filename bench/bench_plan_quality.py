"""Plans small generated inventories at several target scales and flags plans a tighter target made cheaper.

Run by hand: python bench/bench_plan_quality.py [--seeds 0:15] [--scales 1.0,0.85,0.7] [--rows 8:40]
Seed s gives an inventory of 8-39 workloads (--rows; bench/gen.py) and 0-2 owned nodes. With the same workloads
served, a tighter target can never make the optimal plan cheaper (the tighter plan is feasible for the
looser targets), so every such pair is a plan the search could have bettered: the count is a measure of
the search, and the bills a comparison between versions of it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402


def main() -> None:
    """One line per inventory: (served, nodes, bill) per target scale, then the inversions found."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0:15", help="first:last (exclusive)")
    ap.add_argument("--scales", default="1.0,0.85,0.7", help="target multipliers, loosest first")
    ap.add_argument("--rows", default="8:40", help="workloads per inventory: low:high (exclusive), drawn per seed")
    args = ap.parse_args()
    first, last = (int(x) for x in args.seeds.split(":"))
    lo, hi = (int(x) for x in args.rows.split(":"))
    scales = [float(x) for x in args.scales.split(",")]
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    inversions = pairs = 0
    total_bill = 0.0
    cpu = time.process_time()
    for seed in range(first, last):
        rng = np.random.default_rng(seed)
        rows, owned = int(rng.integers(lo, hi)), int(rng.integers(0, 3))
        inv = synthetic_inventory(rows, seed=seed)
        plans = []
        for scale in scales:
            ev = evaluate(catalog, inv, Scenario(fleet_nodes=owned, sla_scale=scale))
            f = ev.fleet
            plans.append((int((ev.verdict >= 0).sum()), f["nodes_needed"], round(f["total_monthly_usd"], 2)))
            total_bill += f["total_monthly_usd"]
        flags = []
        for a, b in zip(plans, plans[1:], strict=False):
            if a[0] == b[0]:  # the same number of workloads served
                pairs += 1
                if b[1] < a[1] or b[2] < a[2] - 0.01:
                    inversions += 1
                    flags.append(f"{a[1]} nodes ${a[2]:,.2f} -> {b[1]} nodes ${b[2]:,.2f}")
        cells = "  ".join(f"{p[0]} served {p[1]} nodes ${p[2]:>10,.2f}" for p in plans)
        print(f"seed {seed:>3} {rows:>3} workloads {owned} owned  {cells}"
              + ("   TIGHTER CHEAPER: " + "; ".join(flags) if flags else ""), flush=True)
    print(f"{inversions} of {pairs} pairs with the same workloads served came out cheaper with tighter targets; "
          f"sum of bills ${total_bill:,.2f}; {time.process_time() - cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
