"""Analytic against simulated p95 of the plan's owned deployments, by architecture: worst, median and highest ratio.

Run by hand: python bench/bench_latency_agreement.py [--requests 20000] [--seed 7]
The inventories are tests/test_plan_latency.py's: the bundled sample and the generated 50 owned-only workloads
(autoregressive and diffusion deployments). The ratio is analytic / simulated p95 per workload (issue 12: +-10 %).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_plan_latency import _generated_inventory  # noqa: E402

import core.store.seed  # noqa: E402
from core.catalog import Catalog  # noqa: E402
from core.decision.checks import check_plan  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402


def main() -> None:
    """Print one line per inventory and architecture group."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    s = core.store.seed.load_seed()
    catalog = Catalog(gpus=s["gpus"], stacks=s["serving_stacks"], apis=s["api_prices"], node_prices=s["node_prices"],
                      owned_hardware=s["owned_hardware"], benchmarks=s["benchmarks"])
    for name, inv in (("sample", pd.read_csv(core.store.seed.sample_workloads_path())),
                      ("generated 50", _generated_inventory())):
        ev = evaluate(catalog, inv, Scenario(fleet_nodes=1))
        check = check_plan(ev, requests=args.requests, seed=args.seed)
        arch = {d["route_id"]: d["architecture"] for d in ev.fleet["deployments"]}
        groups: dict[str, list[float]] = {}
        for r in check.workloads():
            kind = "diffusion" if arch[r["deployment_id"].split("@")[0]] == "diffusion" else "autoregressive"
            groups.setdefault(kind, []).append(r["analytic_p95_ms"] / r["simulated_p95_ms"])
        for kind, ratios in sorted(groups.items()):
            x = np.array(ratios)
            print(f"{name}, {kind}: {x.size} workloads, analytic / simulated p95 worst-low {x.min():.3f}, "
                  f"median {np.median(x):.3f}, highest {x.max():.3f}")
        print(f"    ({len(check.results)} owned interactive deployments simulated)")


if __name__ == "__main__":
    main()
