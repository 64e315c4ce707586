"""Times what explains a purchase beside the plan it reads: node drivers, pool drivers and the purchase's switches.

Run by hand: PYTHONPATH=. python bench/bench_drivers.py [--sizes 100,1000,20000,arch100000] [--owned 8]
A size is bench/gen.py's synthetic_inventory(n, seed=n), or with an `arch` prefix its archetype_inventory(n).
Per inventory, CPU seconds (process time, in process): the whole evaluation; inside it fleet.node_drivers and
why.pool_drivers (each an exact re-pricing per relaxation or pool); then purchase._switch_usd (each workload with an
owned and an API route switched alone, up to purchase.MAX_SWITCH_PRICINGS) and how many it priced.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sizing_parts import SECONDS, timed  # noqa: E402
from gen import archetype_inventory, synthetic_inventory  # noqa: E402

import core.decision.fleet as fleet  # noqa: E402
import core.decision.purchase as purchase  # noqa: E402
from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store.seed import load_seed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,20000,arch100000")
    ap.add_argument("--owned", type=int, default=8, help="owned nodes (Scenario.fleet_nodes)")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    s = load_seed()
    catalog = Catalog(gpus=s["gpus"], stacks=s["serving_stacks"], apis=s["api_prices"], node_prices=s["node_prices"],
                      owned_hardware=s["owned_hardware"], benchmarks=s["benchmarks"])
    spent = SECONDS  # CPU seconds by name (bench_sizing_parts.timed: nested calls too)
    for module, name in ((fleet, "node_drivers"), (fleet, "pool_drivers"), (purchase, "_switch_usd")):
        timed(module, name, name)
    print(f"{'inventory':>12} {'nodes':>6} {'evaluate':>9} {'node drivers':>13} {'pool drivers':>13} "
          f"{'purchase':>9} {'switches':>9} {'priced':>7}")
    for size in args.sizes.split(","):
        n = int(size.removeprefix("arch"))
        inv = archetype_inventory(n) if size.startswith("arch") else synthetic_inventory(n, seed=n)
        spent.clear()
        t = time.process_time()
        ev = evaluate(catalog, inv, Scenario(fleet_nodes=args.owned))
        t_eval = time.process_time() - t
        t = time.process_time()
        p = purchase.purchase(ev)
        t_buy = time.process_time() - t
        priced = 0 if p is None else sum(r["switch_usd_per_month"] is not None for r in p.owned_beats_api)
        print(f"{size:>12} {ev.fleet.nodes_needed:>6} {t_eval:>9.2f} {spent.get('node_drivers', 0.0):>13.2f} "
              f"{spent.get('pool_drivers', 0.0):>13.2f} {t_buy:>9.2f} {spent.get('_switch_usd', 0.0):>9.2f} "
              f"{priced:>7}", flush=True)


if __name__ == "__main__":
    main()
