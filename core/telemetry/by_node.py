"""Measured idle $ by node: each node's GPUs × 730 h × $/GPU-hour × (1 − its measured utilization)."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from core.decision.economics import NodeRate, idle_usd
from core.errors import InputError
from core.models import HOURS_PER_MONTH
from core.store import telemetry as tstore
from core.telemetry.profile import measured_profile


def idle_by_node(store, rate: NodeRate, date_from: dt.date | None = None,
                 date_to: dt.date | None = None) -> pd.DataFrame:
    """One row per node with readings in the period: GPUs, measured utilization, metric, idle $ a month at the
    full node price per GPU (an idle hour costs it whatever the cost basis); largest idle $ first."""
    per_gpu = rate.full_usd_per_node_hour / rate.gpus_per_node
    rows = []
    with store.held():
        for node in tstore.nodes(store):
            try:
                p = measured_profile(store, node, date_from, date_to)
            except InputError:  # no reading of this node in the period
                continue
            rows.append({"node": node, "gpus": p.gpus, "utilization": p.utilization, "metric": p.metric_label,
                         "idle_usd_per_month": float(idle_usd(p.gpus * HOURS_PER_MONTH, per_gpu, p.utilization))})
    frame = pd.DataFrame(rows, columns=["node", "gpus", "utilization", "metric", "idle_usd_per_month"])
    return frame.sort_values(["idle_usd_per_month", "node"], ascending=[False, True], ignore_index=True)
