"""CPU the plan's simulation check (core.decision.closeloop) adds: the sample and generated inventories planned
with the check on (SearchSettings.close_loop_requests as it is) and off (0), side by side.

Run by hand: python bench/bench_close_loop.py [--sizes 100] [--seed 100] [--owned 1]
Per inventory: nodes needed, the cash bill and the CPU seconds (user + sys, this process and the forked
processes it waited for: the estimate ranges' ends are planned beside the plan) of one evaluation, off then on.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402
from gen import synthetic_inventory  # noqa: E402

import core.store.seed  # noqa: E402
from core.catalog import Catalog  # noqa: E402
from core.decision import settings as settings_mod  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def plan(catalog, inventory: pd.DataFrame, owned: int, requests: int) -> tuple[int, float, float, int]:
    """(nodes, bill, CPU s, replicas added) of one evaluation with the check's request budget set."""
    settings_mod.PLAN = settings_mod.DEFAULT.but(close_loop_requests=requests)
    try:
        cpu = _cpu()
        ev = evaluate(catalog, inventory, Scenario(fleet_nodes=owned))
        cpu = _cpu() - cpu
    finally:
        settings_mod.PLAN = settings_mod.DEFAULT
    added = sum(d.replicas_added_by_simulation for d in ev.fleet.deployments)
    return ev.fleet.nodes_needed, round(ev.fleet.total_monthly_usd, 2), cpu, added


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100", help="generated inventory sizes, comma-separated")
    ap.add_argument("--seed", type=int, default=100, help="bench/gen.py seed of the generated inventories")
    ap.add_argument("--owned", type=int, default=1, help="owned nodes")
    args = ap.parse_args()
    s = core.store.seed.load_seed()
    catalog = Catalog(gpus=s["gpus"], stacks=s["serving_stacks"], apis=s["api_prices"], node_prices=s["node_prices"],
                      owned_hardware=s["owned_hardware"], benchmarks=s["benchmarks"])
    evaluate(catalog, synthetic_inventory(10, seed=1), Scenario())  # warm imports and caches
    cases = [("bundled sample", pd.read_csv(core.store.seed.sample_workloads_path()))]
    cases += [(f"{n} generated (seed {args.seed})", synthetic_inventory(n, seed=args.seed))
              for n in (int(x) for x in args.sizes.split(","))]
    budget = settings_mod.DEFAULT.close_loop_requests
    print(f"{'inventory':<28} {'off: nodes':>10} {'bill':>12} {'CPU s':>7}   {'on: nodes':>9} {'bill':>12} "
          f"{'CPU s':>7} {'added':>5}   {'CPU added':>9}")
    for label, inv in cases:
        n0, b0, c0, _ = plan(catalog, inv, args.owned, 0)
        n1, b1, c1, a1 = plan(catalog, inv, args.owned, budget)
        print(f"{label:<28} {n0:>10} {b0:>12,.2f} {c0:>7.1f}   {n1:>9} {b1:>12,.2f} {c1:>7.1f} {a1:>5}   "
              f"{c1 - c0:>9.1f}")


if __name__ == "__main__":
    main()
