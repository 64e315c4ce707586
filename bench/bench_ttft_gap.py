"""What TTFT under load would add to the latency model: the chunked-prefill share, against each p95 target.

`physics.ttft_under_load` (what `hangover perf` reports) has four parts: half a decode step to join,
the wait behind the other requests' prefills, the own prefill stretched by theirs, and the decode
steps of the others that the own prefill chunks share. The latency chain (core/decision/latency/
chain.py) already has the first three (join_ms, the prefill queue's M/G/1 wait, prefill_stretch);
this prints the fourth, chunks x (decode step at the pool's concurrency cap - a bare step), for every
interactive workload the plan serves on its own GPUs, as a share of its p95 target (the cap is the
largest batch a request can join: an upper bound). Then, as a bound on what the share could move,
the plan again with every target tightened by the worst share.

    HANGOVER_DB=/tmp/t.duckdb python bench/bench_ttft_gap.py              # the bundled sample
    HANGOVER_DB=/tmp/t.duckdb python bench/bench_ttft_gap.py --generated 100   # bench/gen.py seed 100
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen import synthetic_inventory  # noqa: E402
from core.catalog import Catalog  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.performance import physics  # noqa: E402
from core.service import inventory, make_scenario  # noqa: E402
from core.store import Store  # noqa: E402


def shares(ev, cat: Catalog) -> list[tuple[str, str, int, int, float, float]]:
    """(workload, route, g, cap, extra ms, p95 target ms) per interactive owned workload."""
    gpu = cat.gpu(ev.scenario.gpu)
    wl = ev.workloads.set_index("workload_id")
    stacks = {f"owned:{s.stack_id}": s for s in cat.stacks}
    out = []
    for d in ev.fleet.deployments:
        stack = stacks.get(d.route_id)
        if stack is None or d.concurrency_cap is None:
            continue
        eff, _ = cat.efficiency(stack, gpu, d.gpus_per_replica)
        chunk = physics.ENGINES[physics.Engine(stack.engine)].prefill_chunk_tokens
        bare = float(physics.decode_step(stack, gpu, d.gpus_per_replica, 1.0, 0.0, eff)[0])
        for wid in d.workloads:
            r = wl.loc[wid]
            if not r["latency_slo_ms"] > 0:
                continue
            n_in, n_out = float(r["input_tokens"]), float(r["output_tokens"])
            step = float(physics.decode_step(stack, gpu, d.gpus_per_replica, float(d.concurrency_cap),
                                             n_in + 0.5 * n_out, eff)[0])
            extra = float(np.ceil(max(n_in, 1.0) / chunk)) * max(step - bare, 0.0)
            out.append((wid, d.route_id, d.gpus_per_replica, int(d.concurrency_cap), extra,
                        float(r["latency_slo_ms"]) * ev.scenario.sla_scale))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generated", type=int, default=0, help="a generated inventory of N workloads (seed N)")
    args = ap.parse_args()
    store = Store(os.environ.get("HANGOVER_DB", "/tmp/ttft_gap.duckdb"))
    cat = Catalog.from_store(store)
    workloads = synthetic_inventory(args.generated, args.generated) if args.generated else inventory(store)[1]
    ev = evaluate(cat, workloads, make_scenario())
    rows = sorted(shares(ev, cat), key=lambda x: -x[4] / x[5])
    print(f"{len(rows)} interactive workloads on owned pools; chunked-prefill share of TTFT under load at the cap:")
    for wid, route, g, cap, extra, slo in rows[:6]:
        print(f"  {wid:<16} {route:<28} g={g} cap={cap:<4} +{extra:6.1f} ms of {slo:8,.0f} ms ({extra / slo:.1%})")
    if not rows:
        return
    share = np.array([x[4] / x[5] for x in rows])
    print(f"median {np.median(share):.2%}, worst {share.max():.2%}")
    tight = evaluate(cat, workloads, make_scenario(sla_scale=1.0 - float(share.max())))
    print(f"plan: {ev.fleet.nodes_needed} nodes, ${ev.fleet.total_monthly_usd:,.2f} a month; every target tightened by "
          f"{share.max():.2%}: {tight.fleet.nodes_needed} nodes, ${tight.fleet.total_monthly_usd:,.2f}")


if __name__ == "__main__":
    main()
