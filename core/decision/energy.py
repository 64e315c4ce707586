"""Energy by utilization: the power of owned and bought nodes at the plan's utilization, its own line of the bill.

A node priced at its TCO (pricing option "owned") pays for its electricity. Its draw is not flat: a node draws
its idle power whatever it does, and up to its busy power as its GPUs work:

    kW = idle + (busy - idle) x utilization;  $ a month = kW x PUE x $/kWh x 730 h per node,

utilization being the plan's (GPU-hours busy, batch fill included, over the GPU-hours of the nodes billed).
Idle and busy kW per node come from data/node_power.csv (dated, sourced; busy = the system's datasheet maximum,
idle an estimate); PUE and $/kWh from the owned-hardware figures. A GPU without a row keeps the TCO's average kW.
Cloud prices (reserved, on-demand) include power: no energy line.

In the bill the node lines carry their energy at this draw (the node price with its flat average-kW power
replaced), and `energy_usd_per_month` says how much of them it is; the plan's search itself prices the TCO at
the flat average (the utilization is known only once planned).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from core.decision.economics import HOURS_PER_MONTH
from core.models import OwnedHardware, PricingOption


@dataclass(frozen=True)
class NodePower:
    """Idle and busy draw of one node of a GPU type, with where the figures come from."""

    gpu: str
    idle_kw: float
    busy_kw: float
    source: str
    as_of: str
    confidence: str


@dataclass(frozen=True)
class EnergyLine:
    """The plan's energy: nodes billed, their utilization and draw, $ a month; and the flat figure it replaces."""

    gpu: str
    nodes: int
    utilization: float
    idle_kw: float
    busy_kw: float
    kw_per_node: float  # at the plan's utilization
    pue: float
    usd_per_kwh: float
    usd_per_month: float  # nodes x kW x PUE x $/kWh x 730, in cents
    flat_kw_per_node: float  # the TCO's average draw (what the node price counts)
    flat_usd_per_month: float
    source: str
    as_of: str
    confidence: str

    @property
    def usd_per_node_hour_change(self) -> float:
        """What the draw at the plan's utilization changes in the node price, $ per node-hour."""
        return (self.kw_per_node - self.flat_kw_per_node) * self.pue * self.usd_per_kwh


def energy_usd_per_month(nodes, utilization, idle_kw, busy_kw, pue, usd_per_kwh):
    """nodes x (idle + (busy - idle) x utilization) x PUE x $/kWh x 730 (vectorised; utilization clipped to 0..1).

    Example: 3 H100 nodes at 13 % utilization, idle 2.6 kW, busy 10.2 kW, PUE 1.3, $0.10/kWh:
    2.6 + 7.6 x 0.13 = 3.588 kW; x 1.3 x 0.10 = $0.46644 per node-hour; x 730 x 3 = $1,021.50 a month.
    """
    u = np.clip(np.asarray(utilization, dtype=float), 0.0, 1.0)
    kw = np.asarray(idle_kw, dtype=float) + (np.asarray(busy_kw, dtype=float) - np.asarray(idle_kw, dtype=float)) * u
    return np.asarray(nodes, dtype=float) * kw * pue * usd_per_kwh * HOURS_PER_MONTH


@lru_cache(maxsize=4)
def _table(data_dir: str) -> dict[str, NodePower]:
    from pathlib import Path

    path = Path(data_dir) / "node_power.csv"
    if not path.exists():
        return {}
    t = pd.read_csv(path, dtype={"as_of": str})
    return {str(r.gpu): NodePower(str(r.gpu), float(r.idle_kw_per_node), float(r.busy_kw_per_node), str(r.source),
                                  str(r.as_of), str(r.confidence)) for r in t.itertuples(index=False)}


def node_power(gpu: str) -> NodePower | None:
    """The idle and busy draw of one node of `gpu` (data/node_power.csv); None when not listed."""
    from core.store.seed import data_dir

    return _table(str(data_dir())).get(gpu)


def owned_hardware_of(catalog, sc, gpu: str) -> OwnedHardware | None:
    """The TCO figures pricing nodes of `gpu` when the scenario prices nodes as owned (no override), else None."""
    if sc.pricing_option is not PricingOption.OWNED or sc.node_usd_per_hour is not None:
        return None
    if sc.owned_hardware is not None:
        return sc.owned_hardware
    return next((h for h in catalog.owned_hardware if h.gpu == gpu), None)


def line(hw: OwnedHardware, gpu: str, nodes: int, utilization: float) -> EnergyLine:
    """The energy of `nodes` nodes at `utilization` under the TCO figures `hw` (idle/busy from node_power, else
    the TCO's flat average kW)."""
    p = node_power(gpu)
    u = float(np.clip(utilization, 0.0, 1.0))
    if p is None:
        idle = busy = hw.kw_per_node
        source, as_of, conf = "the owned-hardware figures' average kW (no idle/busy figures for this GPU)", \
            hw.as_of.isoformat(), hw.confidence.value
    else:
        idle, busy, source, as_of, conf = p.idle_kw, p.busy_kw, p.source, p.as_of, p.confidence
    kw = idle + (busy - idle) * u
    usd = round(float(energy_usd_per_month(nodes, u, idle, busy, hw.pue, hw.usd_per_kwh)), 2)
    flat = round(nodes * hw.power_usd_per_hour * HOURS_PER_MONTH, 2)
    return EnergyLine(gpu, nodes, u, idle, busy, kw, hw.pue, hw.usd_per_kwh, usd, hw.kw_per_node, flat, source,
                      as_of, conf)


def plan_utilization(busy: np.ndarray, fill: np.ndarray, nodes: int, gpus_per_node: int) -> float:
    """The plan's mean utilization over the nodes billed: mean over hours of min((busy + fill) / GPUs, 1)."""
    cap = nodes * gpus_per_node
    if cap <= 0:
        return 0.0
    return float(np.mean(np.minimum((np.asarray(busy, dtype=float) + np.asarray(fill, dtype=float)) / cap, 1.0)))


def energy_json(e: EnergyLine | None) -> dict | None:
    """`fleet.energy`: the energy line in detail (None: the node price is a cloud price, power included)."""
    if e is None:
        return None
    return {"gpu": e.gpu, "nodes": e.nodes, "utilization": e.utilization, "idle_kw_per_node": e.idle_kw,
            "busy_kw_per_node": e.busy_kw, "kw_per_node": e.kw_per_node, "pue": e.pue, "usd_per_kwh": e.usd_per_kwh,
            "usd_per_month": e.usd_per_month, "flat_kw_per_node": e.flat_kw_per_node,
            "flat_usd_per_month": e.flat_usd_per_month, "source": e.source, "as_of": e.as_of,
            "confidence": e.confidence,
            "basis": "nodes x (idle + (busy - idle) x utilization) kW x PUE x $/kWh x 730 h; busy = the system's "
                     "datasheet maximum, idle an estimate; the node lines of the bill include it"}
