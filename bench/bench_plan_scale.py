"""Plans generated inventories and prints nodes needed, the cash bill, the pools and CPU seconds per size.

Run by hand: python bench/bench_plan_scale.py [--sizes 1000,10000] [--top 5]
The generated inventories (bench/gen.py) have targets spread from 300 ms to 20 s, so some workloads sit at
the edge of what the hardware does alone: the case where one pool per route bought several times the nodes.
"""

from __future__ import annotations

import argparse
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
    """Print one block per inventory size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--top", type=int, default=5, help="pools listed per size (most GPUs first)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    for n in (int(x) for x in args.sizes.split(",")):
        inv = synthetic_inventory(n, seed=n)
        cpu = time.process_time()
        ev = evaluate(catalog, inv, Scenario(fleet_nodes=8))
        cpu = time.process_time() - cpu
        f = ev.fleet
        served = int((ev.verdict >= 0).sum())
        print(f"{n:,} workloads: {f['nodes_needed']:,} nodes needed, cash bill ${f['total_monthly_usd']:,.0f}/month, "
              f"{served:,} served, {len(f['deployments'])} pools, {cpu:.1f} s CPU")
        for dep in sorted(f["deployments"], key=lambda x: -x["gpus"])[: args.top]:
            print(f"    {dep['route_id']} x{dep['gpus_per_replica']} {dep.get('tier') or ''}: "
                  f"{len(dep['workloads'])} workloads, cap {dep['concurrency_cap']}, {dep['replicas']} replicas, "
                  f"{dep['gpus']} GPUs")


if __name__ == "__main__":
    main()
