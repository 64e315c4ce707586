"""Plans generated inventories given as rows:seed:owned_nodes and prints nodes, the cash bill, break-even fees and CPU s.

Run by hand: python bench/bench_plan_inventories.py 20:12:1 100:3:8 [--before DIR]
With --before (another checkout of the project, e.g. `git worktree add /tmp/before REV`), each inventory is
planned there and here one after the other (in child processes, so the two trees do not mix), which keeps
a before/after comparison fair on a machine whose speed drifts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _phase_timer(spent: dict[str, float]) -> None:
    """Wrap the fleet plan's phases so that their process time adds up in `spent`."""
    from core.decision import fleet, plan

    depth: dict[str, int] = {}

    def wrap(owner, name, label):
        inner = getattr(owner, name)

        def timed(*a, **k):
            depth[label] = depth.get(label, 0) + 1  # a search on workload classes runs inside another
            t = time.process_time()
            try:
                return inner(*a, **k)
            finally:
                depth[label] -= 1
                if not depth[label]:
                    spent[label] = spent.get(label, 0.0) + time.process_time() - t
        setattr(owner, name, timed)

    wrap(fleet, "build_inputs", "plan inputs")
    wrap(plan.Planner, "__init__", "planner set-up")
    wrap(plan.Planner, "optimise", "search")
    wrap(fleet, "_licensed_routes", "licensed re-plan")
    wrap(fleet, "_apply", "attribution")
    wrap(fleet, "plan_evaluation", "plan")


def plan_one(spec: str, phases: bool = False) -> str:
    """One line: spec, nodes needed, cash bill, CPU s of evaluate, break-even fee per licensed stack."""
    sys.path.insert(0, str(HERE))
    from gen import synthetic_inventory

    from core.catalog import Catalog
    from core.decision.engine import evaluate
    from core.models import Scenario
    from core.store import Store

    spent: dict[str, float] = {}
    if phases:
        _phase_timer(spent)

    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    rows, seed, owned = (int(x) for x in spec.split(":"))
    inv = synthetic_inventory(rows, seed=seed)
    cpu = time.process_time()
    ev = evaluate(catalog, inv, Scenario(fleet_nodes=owned))
    cpu = time.process_time() - cpu
    f = ev.fleet
    fees = ", ".join(f"{r['route_id']} " + ("none" if r["break_even_usd_per_gpu_month"] is None
                                            else f"{r['break_even_usd_per_gpu_month']:,.2f}")
                     for r in f["licensed_routes"])
    line = f"{spec:>16} {f['nodes_needed']:>6} {f['total_monthly_usd']:>16,.2f} {cpu:>8.1f}   {fees}"
    if phases:
        # The licensed re-plan's own search is inside "search" too: shown apart, and taken out of it.
        spent["search"] = spent.get("search", 0.0) - spent.get("licensed re-plan", 0.0)
        spent["scoring"] = cpu - spent.get("plan", 0.0)
        line += "\n" + "".join(f"{'':>24}{k:<18} {v:6.1f} s\n" for k, v in spent.items() if k != "plan").rstrip()
    return line


def main() -> None:
    """Print one line per inventory (two with --before: before, then after)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+", help="rows:seed:owned_nodes (bench/gen.py synthetic_inventory)")
    ap.add_argument("--before", type=Path, help="another checkout to plan each inventory with first")
    ap.add_argument("--phases", action="store_true", help="CPU s per phase of the plan (this tree only)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # child: plan one spec, print it
    args = ap.parse_args()
    if args.one:
        print(plan_one(args.specs[0], args.phases), flush=True)
        return
    print(f"{'tree':>6} {'inventory':>16} {'nodes':>6} {'bill $/month':>16} {'CPU s':>8}   break-even $/GPU-month")
    trees = ([("before", args.before.resolve())] if args.before else []) + [("after" if args.before else "", None)]
    for spec in args.specs:
        for name, root in trees:
            env = dict(os.environ)
            if root is not None:
                env["PYTHONPATH"] = str(root)
            script = (root / "bench" / Path(__file__).name) if root is not None else Path(__file__)
            if root is not None and not script.exists():
                script = Path(__file__)  # an older tree without this script: run this one on its code
            extra = ["--phases"] if args.phases and root is None else []
            out = subprocess.run([sys.executable, str(script), spec, "--one", *extra], env=env, capture_output=True,
                                 text=True, check=True, cwd=root or HERE.parent).stdout.strip()
            print(f"{name:>6} {out}", flush=True)


if __name__ == "__main__":
    main()
