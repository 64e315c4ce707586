"""Time the scenario comparison on large inventories: set 2-4 evaluations side by side and write its exports.

    python bench/bench_scenarios.py [--workloads 100000] [--scenarios 4]

The evaluations are stand-ins carrying only what the comparison reads (the
fleet figures and a verdicts frame with 22 routes drawn at random), so the
figures time the comparison itself, not the engine (bench/bench_evaluate.py).
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd

from core.models import Scenario
from core.presentation.report.comparison import (
    build_comparison_markdown,
    build_comparison_xlsx,
    comparison_dict,
)
from core.scenarios import compare_evaluations


def fake_evaluation(n: int, seed: int) -> SimpleNamespace:
    """An evaluation as compare_evaluations reads it: n workloads, each on one of 22 routes."""
    rng = np.random.default_rng(seed)
    ids = pd.array([f"w{i:06d}" for i in range(n)], dtype=object)
    routes = rng.integers(0, 22, n)
    vf = pd.DataFrame({
        "workload_id": ids, "name": ids, "route_id": [f"route-{r}" for r in routes],
        "route": [f"Route {r}" for r in routes], "hosting": np.where(routes > 10, "api", "owned"),
        "monthly_usd": rng.random(n) * 1_000,
    })
    fleet = {"total_monthly_usd": 1e5, "nodes_needed": 4, "owned_nodes": 2, "idle_usd_per_month": 3e4,
             "utilization": 0.4, "api_monthly_usd": 2e4, "inventory": "version 1"}
    return SimpleNamespace(fleet=fleet, verdicts_frame=lambda: vf, scenario=Scenario())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=100_000)
    ap.add_argument("--scenarios", type=int, default=4)
    args = ap.parse_args()
    named = [(f"S{i}", fake_evaluation(args.workloads, i)) for i in range(args.scenarios)]
    # Wall and CPU seconds: on a shared machine the CPU time is the steadier figure.
    t, c = time.perf_counter(), time.process_time()
    cmp = compare_evaluations(named)
    print(f"compare_evaluations: {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU "
          f"({args.scenarios} x {args.workloads:,} workloads, {cmp.changed_count:,} changed)")
    for what, fn in (("markdown section", build_comparison_markdown), ("JSON dict", comparison_dict),
                     ("XLSX workbook", build_comparison_xlsx)):
        t, c = time.perf_counter(), time.process_time()
        out = fn(cmp)
        size = f", {len(out) / 1e6:.1f} MB" if isinstance(out, bytes) else ""
        print(f"{what}: {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU{size}")


if __name__ == "__main__":
    main()
