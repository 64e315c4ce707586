"""Where a plan's pool sizings spend their CPU: `hangover evaluate` in process with timers around each stage.

Run by hand: python bench/bench_sizing_parts.py [--size 100]
Plans bench/gen.py's inventory of --size workloads (seed = size) with the default scenario, as
bench/bench_evaluate_cli.py does, in this process (the ranges' forked end plan is not counted), and prints per
stage its CPU seconds, calls and microseconds a call. Stages nest (a batch's `min_replicas` holds its chain
solves and tail bounds), so the seconds do not add up; the timers themselves add ~1 us a call.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from gen import synthetic_inventory  # noqa: E402

import core.cli as cli  # noqa: E402
from core.collector import settle  # noqa: E402
from core.decision import sizing  # noqa: E402
from core.decision.latency import chain, exact  # noqa: E402

SECONDS: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()


def timed(owner, name: str, label: str) -> None:
    """Replace owner.name with a wrapper adding its CPU time to SECONDS[label] (per call, nested calls too)."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            SECONDS[label] += time.process_time() - t
            CALLS[label] += 1

    setattr(owner, name, wrapper)


STAGES = [
    (sizing.Sizer, "_size_many", "sizing: a batch of pools"),
    (sizing.Sizer, "_size_prepare", "  a pool's fits and model (prepare)"),
    (sizing.Sizer, "_model", "    its step curve (model)"),
    (sizing.Sizer, "_size_loads", "  the batch's loads and caps"),
    (chain.PooledDeployments, "build", "    one build for the batch"),
    (chain.PooledDeployments, "at_caps_many", "    the candidate caps"),
    (sizing, "_binding_candidates", "    members that can bind"),
    (exact, "min_replicas", "  replicas per cap (min_replicas)"),
    (exact, "pooled_state", "    chain solves"),
    (exact, "_p_items", "    tail probabilities"),
    (chain.PooledState, "service", "      service-time arrays"),
    (sizing.Sizer, "_size_finish", "  the cap chosen (finish)"),
    (sizing.Sizer, "_shared_key", "  shared-store keys"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100, help="workloads (bench/gen.py, seed = size)")
    args = ap.parse_args()
    # min_replicas is called through the latency package: time it there too.
    from core.decision import latency

    for owner, name, label in STAGES:
        timed(owner, name, label)
    latency.min_replicas = exact.min_replicas
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "inv.csv"
        synthetic_inventory(args.size, seed=args.size).to_csv(csv, index=False)
        db = Path(d) / "bench.duckdb"
        with contextlib.redirect_stdout(io.StringIO()):
            cli.main(["--db", str(db), "db", "init"])
        parser = cli.build_parser()
        settle()  # as the `hangover` process does (core.cli.run)
        t = time.process_time()
        cli.main(["--db", str(db), "evaluate", "--workloads", str(csv), "--format", "json", "--detail",
                  "verdicts", "--out", str(Path(d) / "out.json")], parser=parser)
        total = time.process_time() - t
    print(f"{args.size} workloads: {total:.2f} CPU s of `evaluate` in this process")
    for _, _, label in STAGES:
        n = CALLS[label]
        print(f"{label:38s} {SECONDS[label]:7.2f} s {n:8,d} calls {1e6 * SECONDS[label] / max(n, 1):9.1f} us a call")


if __name__ == "__main__":
    main()
