"""Checks the fleet plan's properties on small generated inventories and prints every violation found.

Run by hand: python bench/bench_plan_properties.py [--seeds 0:40] [--rows 6:25]
Per seed s, an inventory of bench/gen.py (seed 1000 + s, 6-24 workloads, 0-2 owned nodes) is planned as is
and checked against:
- API prices x1.5: no fewer workloads on owned GPUs;
- one more owned node: the bill rises by at most that node's price;
- targets x0.8 with the same workloads served: no fewer nodes beyond those owned and no lower bill (a search
  miss: the tighter plan is feasible for the looser targets);
- one workload split into 3 with a third of its traffic each: the same nodes and the bill within 1 %;
- the rows shuffled: the same nodes and bill;
- every workload's traffic x1.3 (x0.7) with the same workloads served: no fewer (more) nodes beyond those owned
  and no lower (higher) bill (a search miss: the plan for more traffic holds less);
- the workload ids renamed and the rows reversed: the same nodes and bill.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import HOURS_PER_MONTH, Scenario  # noqa: E402
from core.store import Store  # noqa: E402


def main() -> None:
    """One line per inventory: its plan, then 'ok' or the properties it breaks; a count at the end."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0:40", help="first:last (exclusive)")
    ap.add_argument("--rows", default="6:25", help="workloads per inventory: low:high (exclusive)")
    args = ap.parse_args()
    first, last = (int(x) for x in args.seeds.split(":"))
    lo, hi = (int(x) for x in args.rows.split(":"))
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))

    def plan(inv, **kw):
        ev = evaluate(catalog, inv, Scenario(**kw))
        owned = sum(ev.routes[k].hosting == "owned" for k in ev.verdict if k >= 0)
        return int((ev.verdict >= 0).sum()), ev.fleet.nodes_needed, round(ev.fleet.total_monthly_usd, 2), owned

    broken = 0
    cpu = time.process_time()
    for seed in range(first, last):
        rng = np.random.default_rng(1000 + seed)
        rows, owned = int(rng.integers(lo, hi)), int(rng.integers(0, 3))
        inv = synthetic_inventory(rows, seed=1000 + seed)
        base = plan(inv, fleet_nodes=owned)
        bad = []
        api = plan(inv, fleet_nodes=owned, api_price_scale=1.5)
        if api[3] < base[3]:
            bad.append(f"API x1.5: {base[3]} -> {api[3]} on owned GPUs")
        plus = plan(inv, fleet_nodes=owned + 1)
        if plus[2] - base[2] > 33.02 * HOURS_PER_MONTH + 0.01:
            bad.append(f"one more owned node: ${base[2]:,.2f} -> ${plus[2]:,.2f}")
        tight = plan(inv, fleet_nodes=owned, sla_scale=0.8)
        # Nodes beyond those owned: a plan may use fewer of the nodes already paid for at the same bill.
        if tight[0] == base[0] and (max(tight[1], owned) < max(base[1], owned) or tight[2] < base[2] - 0.01):
            bad.append(f"targets x0.8: {base[1]} nodes ${base[2]:,.2f} -> {tight[1]} nodes ${tight[2]:,.2f}")
        j = int(rng.integers(0, rows))
        part = inv.iloc[[j]]
        parts = [part.assign(workload_id=f"{part['workload_id'].iloc[0]}-{q}",
                             requests_per_day=part["requests_per_day"] / 3) for q in range(3)]
        split = plan(pd.concat([inv.drop(index=j), *parts], ignore_index=True), fleet_nodes=owned)
        if split[1] != base[1] or abs(split[2] - base[2]) > 0.01 * base[2]:
            bad.append(f"row {j} split in 3: {base[1]} nodes ${base[2]:,.2f} -> {split[1]} nodes ${split[2]:,.2f}")
        shuffled = plan(inv.iloc[rng.permutation(rows)].reset_index(drop=True), fleet_nodes=owned)
        if shuffled[1:3] != base[1:3]:
            bad.append(f"rows shuffled: {base[1]} nodes ${base[2]:,.2f} -> {shuffled[1]} nodes ${shuffled[2]:,.2f}")
        for scale, more in ((1.3, True), (0.7, False)):
            scaled = plan(inv.assign(requests_per_day=inv["requests_per_day"] * scale), fleet_nodes=owned)
            if scaled[0] != base[0]:
                continue
            nodes, was = max(scaled[1], owned), max(base[1], owned)
            if (nodes < was or scaled[2] < base[2] - 0.01) if more else (nodes > was or scaled[2] > base[2] + 0.01):
                bad.append(f"traffic x{scale}: {base[1]} nodes ${base[2]:,.2f} -> {scaled[1]} nodes ${scaled[2]:,.2f}")
        renamed = inv.assign(workload_id=[f"r-{w[::-1]}" for w in inv["workload_id"]]).iloc[::-1]
        again = plan(renamed.reset_index(drop=True), fleet_nodes=owned)
        if again[1:3] != base[1:3]:
            bad.append(f"ids renamed, rows reversed: {base[1]} nodes ${base[2]:,.2f} -> {again[1]} nodes ${again[2]:,.2f}")
        broken += bool(bad)
        print(f"seed {seed:>3} {rows:>3} workloads {owned} owned  {base[0]} served {base[1]} nodes ${base[2]:>11,.2f}  "
              + ("; ".join(bad) if bad else "ok"), flush=True)
    print(f"{broken} of {last - first} inventories break a property; {time.process_time() - cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
