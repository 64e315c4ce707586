"""Generates synthetic workload inventories of any size for the benchmarks (seeded, reproducible)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.models import TASK_CLASSES


def synthetic_inventory(n: int, seed: int = 0) -> pd.DataFrame:
    """n workloads with continuous (not rounded) token lengths, so nothing de-duplicates by accident."""
    rng = np.random.default_rng(seed)
    interactive = rng.random(n) < 0.7
    return pd.DataFrame({
        "workload_id": [f"w{i:07d}" for i in range(n)],
        "name": [f"workload {i}" for i in range(n)],
        "team": rng.choice(["ops", "retail", "risk", "eng"], n),
        "requests_per_day": np.round(rng.lognormal(8, 1.5, n), 1),
        "peak_factor": np.round(rng.uniform(1, 5, n), 2),
        "input_tokens": np.round(rng.lognormal(7, 0.8, n), 1),
        "output_tokens": np.round(rng.lognormal(5, 0.8, n), 1) + 1,
        "latency_slo_ms": np.where(interactive, np.round(rng.uniform(300, 20000, n)), np.nan),
        "batch_window_hours": np.where(interactive, np.nan, np.round(rng.uniform(1, 12, n), 1)),
        "data_policy": rng.choice(["external_ok", "owned_only"], n),
        "task_class": rng.choice(list(TASK_CLASSES), n),
        "min_quality": np.round(rng.uniform(0.6, 0.97, n), 2),
        "cached_input_share": np.round(rng.uniform(0, 0.8, n), 2),
        "notes": None,
    })


def archetype_inventory(n: int, seed: int = 7) -> pd.DataFrame:
    """n workloads drawn from the bundled sample's seven (a real bank's few archetypes, copied), each at a
    thousandth of its daily requests times a lognormal (sigma 0.8), so no two are quite the same."""
    from core.store.seed import sample_workloads_path

    sample = pd.read_csv(sample_workloads_path())
    rng = np.random.default_rng(seed)
    inv = sample.iloc[rng.integers(0, len(sample), n)].reset_index(drop=True)
    inv["workload_id"] = [f"a{i:06d}" for i in range(n)]
    traffic = inv["requests_per_day"] / 1000 * rng.lognormal(0, 0.8, n)
    inv["requests_per_day"] = np.maximum(1, traffic.round()).astype(int)
    return inv
