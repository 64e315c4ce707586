"""Times the verdict-sensitivity runs (issue 13): engine alone vs engine + ranges, and that 100k skips them; with
--seeds, each generated inventory's central plan beside its range ends.

Run by hand (not part of the test suite):
    python bench/bench_sensitivity.py
    python bench/bench_sensitivity.py --seeds 0:16 --rows 10:80   (ends planned for the central plan's work, and
        where an end could serve more, that end serving it too; flags an optimistic end above the central plan)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import synthetic_inventory  # noqa: E402

from core.catalog import Catalog  # noqa: E402
from core.decision import sensitivity  # noqa: E402
from core.decision import settings as settings_mod  # noqa: E402
from core.decision.engine import evaluate  # noqa: E402
from core.models import Scenario  # noqa: E402
from core.store import Store  # noqa: E402
from core.store.seed import sample_workloads_path  # noqa: E402


def main() -> None:
    """One run per size (the machine is shared): evaluate, then the ranges, then the routing table."""
    warnings.simplefilter("ignore", RuntimeWarning)
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    scenario = Scenario(fleet_nodes=8)
    sensitivity.ranges(evaluate(catalog, synthetic_inventory(100), scenario))  # warm caches (calibration, bounds)
    print(f"{'workloads':>10} {'evaluate s':>11} {'ranges s':>9} {'x':>5} {'flagged':>8}")
    cases = [("sample (7)", pd.read_csv(sample_workloads_path()))]
    cases += [(f"{n:,}", synthetic_inventory(n, seed=n)) for n in (1_000, 5_000, 100_000)]
    for name, inv in cases:
        t = time.perf_counter()
        ev = evaluate(catalog, inv, scenario)
        t_eval = time.perf_counter() - t
        t = time.perf_counter()
        rg = sensitivity.ranges(ev)  # automatic up to RANGES_MAX_WORKLOADS, None above
        t_rng = time.perf_counter() - t
        flagged = "skipped" if rg is None else str(int(rg.sensitive.sum()))
        print(f"{name:>10} {t_eval:>11.2f} {t_rng:>9.2f} {t_rng / t_eval:>5.1f} {flagged:>8}")
    print(f"(ranges automatic up to {settings_mod.PLAN.ranges_max_workloads:,} workloads; above, "
          "hangover evaluate --ranges)")


def ends(seeds: range, rows: tuple[int, int]) -> None:
    """Per generated inventory (rows drawn from the seed, seed % 3 owned nodes): the central plan, each end for
    the central plan's work, and the optimistic end serving the workloads only it could serve."""
    import numpy as np

    warnings.simplefilter("ignore", RuntimeWarning)
    with tempfile.TemporaryDirectory() as d:
        catalog = Catalog.from_store(Store(Path(d) / "bench.duckdb"))
    above = 0
    for seed in seeds:
        n = int(np.random.default_rng(seed).integers(rows[0], rows[1]))
        ev = evaluate(catalog, synthetic_inventory(n, seed=seed), Scenario(fleet_nodes=seed % 3))
        pr = sensitivity.ranges(ev, force=True).performance
        f = ev.fleet
        more = pr.with_added_at("optimistic")
        flag = pr.nodes_needed_optimistic > f.nodes_needed or pr.total_monthly_usd_optimistic > f.total_monthly_usd + 0.01
        above += flag
        print(f"seed {seed} ({n} workloads, {seed % 3} owned): central {f.nodes_needed} nodes "
              f"${f.total_monthly_usd:,.2f}; optimistic {pr.nodes_needed_optimistic} ${pr.total_monthly_usd_optimistic:,.2f}"
              + (f" (+{pr.added_optimistic} it could serve: {more[0]} nodes ${more[1]:,.2f})" if more else "")
              + f"; pessimistic {pr.nodes_needed_pessimistic} ${pr.total_monthly_usd_pessimistic:,.2f}"
              + (f" (-{pr.dropped_pessimistic} it cannot serve)" if pr.dropped_pessimistic else "")
              + ("  <- optimistic above central" if flag else ""), flush=True)
    print(f"{above} of {len(seeds)} optimistic ends above the central plan")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", help="A:B: generated inventories of seeds A..B-1 (the ends beside the central plan)")
    ap.add_argument("--rows", default="10:80", help="lo:hi workloads, drawn per seed")
    args = ap.parse_args()
    if args.seeds:
        lo, hi = map(int, args.seeds.split(":"))
        ends(range(lo, hi), tuple(map(int, args.rows.split(":"))))  # type: ignore[arg-type]
    else:
        main()
