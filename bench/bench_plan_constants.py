"""Plans generated inventories with the search's settings as they are and as --set changes them, side by side.

Run by hand: python bench/bench_plan_constants.py --set dearer_api_rows=0 [--seeds 1000:1016] [--rows 30:150]
            python bench/bench_plan_constants.py --set dearer_api_rows=0 --sizes 1000,3000
Inventory s (bench/gen.py seed s) has --rows workloads drawn from seed s, and 0-2 owned nodes, as
bench/bench_plan_properties.py draws them (its seed k is seed 1000 + k here); --sizes plans n workloads of
seed n on 8 owned nodes instead (as bench/bench_plan_scale.py). Per inventory: nodes needed, the cash bill
and the in-process CPU seconds of the evaluation, first with the default SearchSettings
(core/decision/settings.py), then with --set's (field=VALUE, repeatable; a tuple as comma-separated numbers,
e.g. dearer_apis=1.5), and the difference.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision import settings as settings_mod  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402


def inventories(args) -> list[tuple[str, int, int, int]]:
    """(label, workloads, generator seed, owned nodes) per inventory asked for."""
    if args.sizes:
        return [(f"{n:,} workloads", n, n, 8) for n in (int(x) for x in args.sizes.split(","))]
    first, last = (int(x) for x in args.seeds.split(":"))
    lo, hi = (int(x) for x in args.rows.split(":"))
    out = []
    for seed in range(first, last):
        rng = np.random.default_rng(seed)
        rows, owned = int(rng.integers(lo, hi)), int(rng.integers(0, 3))
        out.append((f"seed {seed} ({rows} workloads, {owned} owned)", rows, seed, owned))
    return out


def _value(current, text: str):
    """text as a value of current's type (a tuple: comma-separated numbers)."""
    if isinstance(current, tuple):
        return tuple(float(x) for x in text.split(","))
    return type(current)(float(text))


def plan(catalog, rows: int, seed: int, owned: int, changes: dict[str, str]) -> tuple[int, float, float]:
    """(nodes needed, bill, CPU s) of one inventory's plan with these settings changed."""
    default = settings_mod.DEFAULT
    # The engine does not take settings yet: the planners it builds read settings.PLAN.
    settings_mod.PLAN = default.but(**{k: _value(getattr(default, k), v) for k, v in changes.items()})
    try:
        cpu = time.process_time()
        ev = evaluate(catalog, synthetic_inventory(rows, seed=seed), Scenario(fleet_nodes=owned))
        cpu = time.process_time() - cpu
    finally:
        settings_mod.PLAN = default
    return ev.fleet.nodes_needed, round(ev.fleet.total_monthly_usd, 2), cpu


def main() -> None:
    """One line per inventory; sums at the end."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a SearchSettings field to change")
    ap.add_argument("--seeds", default="1000:1016", help="first:last (exclusive) generator seeds")
    ap.add_argument("--rows", default="30:150", help="workloads per inventory: low:high (exclusive)")
    ap.add_argument("--sizes", default="", help="instead of seeds: inventory sizes, e.g. 1000,3000")
    args = ap.parse_args()
    changes = {}
    for item in args.set:
        name, _, value = item.partition("=")
        if name not in settings_mod.SearchSettings.help():
            raise SystemExit(f"--set {item}: core/decision/settings.py SearchSettings has no field {name}")
        changes[name] = value
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    label_set = " ".join(args.set) or "(nothing set)"
    sums = np.zeros(4)
    for label, rows, seed, owned in inventories(args):
        n0, b0, c0 = plan(catalog, rows, seed, owned, {})
        n1, b1, c1 = plan(catalog, rows, seed, owned, changes)
        sums += (b0, b1, c0, c1)
        print(f"{label}: as is {n0} nodes ${b0:,.2f} {c0:.1f} s; {label_set}: {n1} nodes ${b1:,.2f} {c1:.1f} s; "
              f"bill {b1 - b0:+,.2f}", flush=True)
    print(f"sum of bills ${sums[0]:,.2f} -> ${sums[1]:,.2f}; CPU {sums[2]:.1f} -> {sums[3]:.1f} s "
          f"({sums[3] / max(sums[2], 1e-9):.2f}x)")


if __name__ == "__main__":
    main()
