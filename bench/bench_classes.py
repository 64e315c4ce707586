"""Plans an inventory whose rows repeat a few shapes (each workload cut into parts) beside the uncut one.

Run by hand: python bench/bench_classes.py [--workloads 1000] [--parts 100]
The cut inventory has workloads x parts rows of workloads distinct shapes; the plan search runs on one row
per shape (core.decision.classes), so it should cost about what the uncut inventory costs, and give the
same nodes and bill. Prints CPU seconds, nodes and the bill of both, and their ratios.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402


def main() -> None:
    """Print one line per inventory and the ratios."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=1000)
    ap.add_argument("--parts", type=int, default=100)
    ap.add_argument("--fleet-nodes", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    base = synthetic_inventory(args.workloads, seed=args.workloads)
    cut = pd.concat([base.assign(workload_id=base["workload_id"] + f"-{j}",
                                 requests_per_day=base["requests_per_day"] / args.parts)
                     for j in range(args.parts)], ignore_index=True)
    out = {}
    for name, inv in (("uncut", base), ("cut", cut)):
        cpu = time.process_time()
        ev = evaluate(catalog, inv, Scenario(fleet_nodes=args.fleet_nodes))
        cpu = time.process_time() - cpu
        f = ev.fleet
        out[name] = (cpu, f["nodes_needed"], f["total_monthly_usd"])
        print(f"{name:>6}: {len(inv):>9,} rows, {cpu:6.1f} s CPU, {f['nodes_needed']:,} nodes, "
              f"${f['total_monthly_usd']:,.2f}/month")
    (c0, n0, b0), (c1, n1, b1) = out["uncut"], out["cut"]
    print(f"cut / uncut: CPU {c1 / c0:.1f}x, nodes {n1 - n0:+d}, bill {100 * (b1 / b0 - 1):+.4f} %")


if __name__ == "__main__":
    main()
