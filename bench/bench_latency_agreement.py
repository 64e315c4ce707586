"""Analytic against simulated p95 of the plan's owned deployments, by architecture: worst, median and highest ratio.

Run by hand: python bench/bench_latency_agreement.py [--requests N] [--seed 7] [--inventories 3,11,12] [--isolate]
                                                    [--output-p95 K]
--requests: per deployment; default the simulation's own choice (the peak hour, 20,000-200,000), as
`hangover simulate` makes it. --inventories: seeds of the generated 50-workload inventory (3 is the tests').
--output-p95 K: every generated workload's output_tokens_p95 set to K x its mean (3.3: cv 1.5, wide spreads); each
line then also gives the lowest share of a workload's simulated requests within its target.
--isolate: then the worst-agreeing deployment (either way) simulated again with one thing changed at a time (no prefills,
half the prefills, a flat or a linear step curve): where the analytic model's error comes from.
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's core, not an installed one

from test_plan_latency import _generated_inventory  # noqa: E402

import core.store.seed  # noqa: E402
from core.catalog import Catalog  # noqa: E402
from core.decision import simulate  # noqa: E402
from core.decision.checks import check_plan, deployment_loads  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402


def main() -> None:
    """Print one line per inventory and architecture group."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=None)
    ap.add_argument("--inventories", default="3")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--isolate", action="store_true")
    ap.add_argument("--output-p95", type=float, default=None)
    args = ap.parse_args()
    worst: tuple[float, object] | None = None
    s = core.store.seed.load_seed()
    catalog = Catalog(gpus=s["gpus"], stacks=s["serving_stacks"], apis=s["api_prices"], node_prices=s["node_prices"],
                      owned_hardware=s["owned_hardware"], benchmarks=s["benchmarks"])
    inventories = [("sample", pd.read_csv(core.store.seed.sample_workloads_path()))]
    inventories += [(f"generated 50 (seed {k})", _generated_inventory(seed=int(k))) for k in args.inventories.split(",")]
    if args.output_p95 is not None:
        inventories = [(f"{name}, output p95 {args.output_p95:g}x mean", inv.assign(
            output_tokens_p95=inv["output_tokens"] * args.output_p95)) for name, inv in inventories[1:]]
    for name, inv in inventories:
        ev = evaluate(catalog, inv, Scenario(fleet_nodes=1))
        check = check_plan(ev, requests=args.requests, seed=args.seed)
        arch = {d.route_id: d.architecture for d in ev.fleet.deployments}
        groups: dict[str, list[float]] = {}
        lowest_share = min((r["share_within_slo"] for r in check.workloads()), default=float("nan"))
        loads = {d.deployment_id: d for d in deployment_loads(ev)}
        for r in check.workloads():
            kind = "diffusion" if arch[r["deployment_id"].split("@")[0]] == "diffusion" else "autoregressive"
            ratio = r["analytic_p95_ms"] / r["simulated_p95_ms"]
            groups.setdefault(kind, []).append(ratio)
            off = abs(np.log(ratio))  # the worst-agreeing either way: too low or too high
            if worst is None or off > worst[0]:
                worst = (off, loads[r["deployment_id"]])
        for kind, ratios in sorted(groups.items()):
            x = np.array(ratios)
            print(f"{name}, {kind}: {x.size} workloads, analytic / simulated p95 worst-low {x.min():.3f}, "
                  f"median {np.median(x):.3f}, highest {x.max():.3f}")
        print(f"    ({len(check.results)} owned interactive deployments simulated; lowest share of a workload's "
              f"requests within its target {lowest_share:.4f})")
    if args.isolate and worst is not None:
        _isolate(worst[1], max(args.requests or 0, 60_000), args.seed)


def _isolate(load, requests: int, seed: int) -> None:
    """Analytic / simulated p95 of each member of one deployment, as planned and with one thing changed."""
    import dataclasses

    def members(d, change):
        return dataclasses.replace(d, workloads=tuple(dataclasses.replace(w, **change(w)) for w in d.workloads))

    step = np.asarray(load.step_ms, dtype=float)
    cap = load.concurrency_cap
    print(f"{load.deployment_id}: {load.replicas} replica(s) at cap {cap}, {len(load.workloads)} members")
    variants = {
        "as planned": load,
        "no prefills": members(load, lambda w: {"prefill_ms": 0.0}),
        "half the prefills": members(load, lambda w: {"prefill_ms": w.prefill_ms / 2}),
        "flat step curve": dataclasses.replace(load, step_ms=tuple([step[0]] * len(step))),
        "linear step curve": dataclasses.replace(
            load, step_ms=tuple(step[0] + (step[cap - 1] - step[0]) / max(cap - 1, 1) * np.arange(len(step)))),
    }
    for name, d in variants.items():
        an = simulate.analytic_p95(d)
        raw = simulate.simulate_latencies(d, requests, seed)
        ratios = sorted(an[i] / np.percentile(raw.latency_ms[raw.workload == i], 95) for i in range(len(d.workloads)))
        print(f"    {name:18s} analytic / simulated p95: {' '.join(f'{x:.2f}' for x in ratios)}")


if __name__ == "__main__":
    main()
