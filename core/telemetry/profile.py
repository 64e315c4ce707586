"""Measured utilization from the stored hourly aggregates: the profile the plan can use, and its idle cost.

Each GPU-hour's mean reading counts once (an hour logged every second weighs
as much as one logged every minute); hours with no samples are unknown, not
idle, and count nowhere. Per node the most honest metric present is used
(samples.UTILIZATION_METRICS), and the result names it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from core.decision.economics import NodeRate, idle_usd, node_rate
from core.errors import InputError
from core.format import integer, money, percent, plain
from core.models import HOURS_PER_MONTH, Scenario
from core.store import telemetry as tstore
from core.telemetry.samples import METRIC_SHORT, UTILIZATION_METRICS

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True, eq=False)
class MeasuredUtilization:
    """What the GPUs did, measured: shares 0-1 busy on the named metric (arrays are read-only)."""

    hourly_utilization: np.ndarray  # (24,) mean by hour of day, 0 = midnight; NaN where no GPU-hour was logged
    by_weekday_hour: np.ndarray  # (7, 24) Monday first; NaN where no GPU-hour was logged
    utilization: float  # mean over every measured GPU-hour
    gpus: int  # distinct (node, GPU) pairs measured
    samples: int  # raw samples behind the figures
    gpu_hours: int  # GPU-hours with a reading of the metric used
    date_from: dt.date  # first sample's date
    date_to: dt.date  # last sample's date
    first_ts: dt.datetime
    last_ts: dt.datetime
    nodes: tuple[str, ...]
    metric: str  # one of UTILIZATION_METRICS, or "mixed" when nodes differ (see metric_by_node)
    metric_by_node: tuple[tuple[str, str], ...]
    label: str  # "measured 2 – 9 Nov 2026 on bank-node-1"

    @property
    def metric_label(self) -> str:
        """The metric in words, e.g. 'SM activity'."""
        if self.metric != "mixed":
            return METRIC_SHORT[self.metric]
        return "; ".join(f"{METRIC_SHORT[m]} on {n}" for n, m in self.metric_by_node)

    @property
    def hours_covered(self) -> int:
        """Hours of the day (0-23) with at least one measured GPU-hour."""
        return int(np.isfinite(self.hourly_utilization).sum())


def date_span(first: dt.date, last: dt.date) -> str:
    """'2 – 9 Nov 2026', '28 Oct – 4 Nov 2026', '28 Dec 2025 – 4 Jan 2026' or '2 Nov 2026'."""
    if first == last:
        return f"{first.day} {first:%b %Y}"
    if first.year != last.year:
        return f"{first.day} {first:%b %Y} – {last.day} {last:%b %Y}"
    if first.month != last.month:
        return f"{first.day} {first:%b} – {last.day} {last:%b %Y}"
    return f"{first.day} – {last.day} {last:%b %Y}"


def _nodes_words(nodes: tuple[str, ...]) -> str:
    return ", ".join(nodes) if len(nodes) <= 3 else f"{len(nodes)} nodes"


def measured_profile(store, node: str | None = None, date_from: dt.date | None = None,
                     date_to: dt.date | None = None, *, metric: str | None = None) -> MeasuredUtilization:
    """The measured profile over the stored hourly aggregates (never the raw samples); InputError when none match.

    node: one node, or all. date_from/date_to: inclusive dates on the import's
    clock. metric: force one of UTILIZATION_METRICS (default: per node the
    most honest present).
    """
    if metric is not None and metric not in UTILIZATION_METRICS:
        raise InputError(f"unknown metric {metric!r}; use one of {', '.join(UTILIZATION_METRICS)}")
    with store.held():  # one open of the file for the three reads (the store closes it between units of work)
        cells = tstore.hourly_cells(store, node=node, date_from=date_from, date_to=date_to,
                                    metrics=UTILIZATION_METRICS)
        cover = tstore.coverage(store, node=node, date_from=date_from, date_to=date_to)
    where = (f" for node {node!r}" if node else "") + (
        f" between {date_from or 'the start'} and {date_to or 'the end'}" if date_from or date_to else "")
    if cells.empty:
        raise InputError(f"no GPU telemetry{where}; import some with `hangover telemetry import FILE`")
    chosen: dict[str, str] = {}
    for n, group in cells.groupby("node", sort=True):
        options = [metric] if metric else list(UTILIZATION_METRICS)
        have = [m for m in options if group[f"{m}_gh"].sum() > 0]
        if have:
            chosen[str(n)] = have[0]
    if not chosen:
        what = METRIC_SHORT.get(metric, metric) if metric else "utilization"  # None: any of them
        raise InputError(f"no {what} readings{where}")
    gh = np.zeros((7, 24))
    total = np.zeros((7, 24))
    for m in set(chosen.values()):
        part = cells[cells["node"].isin([n for n, c in chosen.items() if c == m])]
        np.add.at(gh, (part["weekday"].to_numpy(int), part["hour_of_day"].to_numpy(int)), part[f"{m}_gh"].to_numpy(float))
        np.add.at(total, (part["weekday"].to_numpy(int), part["hour_of_day"].to_numpy(int)),
                  part[f"{m}_sum"].to_numpy(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        by_weekday_hour = np.where(gh > 0, total / np.where(gh > 0, gh, 1), np.nan)
        hourly = np.where(gh.sum(0) > 0, total.sum(0) / np.where(gh.sum(0) > 0, gh.sum(0), 1), np.nan)
    by_weekday_hour.setflags(write=False)
    hourly.setflags(write=False)
    used = cover[cover["node"].isin(list(chosen))]
    gpus = int(sum(int(r[f"{chosen[r['node']]}_gpus"]) for _, r in used.iterrows()))
    first, last = used["first_ts"].min().to_pydatetime(), used["last_ts"].max().to_pydatetime()
    nodes = tuple(sorted(chosen))
    kinds = set(chosen.values())
    return MeasuredUtilization(
        hourly_utilization=hourly, by_weekday_hour=by_weekday_hour, utilization=float(total.sum() / gh.sum()),
        gpus=gpus, samples=int(used["samples"].sum()), gpu_hours=int(gh.sum()),
        date_from=first.date(), date_to=last.date(), first_ts=first, last_ts=last, nodes=nodes,
        metric=kinds.pop() if len(kinds) == 1 else "mixed", metric_by_node=tuple(sorted(chosen.items())),
        label=f"measured {date_span(first.date(), last.date())} on {_nodes_words(nodes)}",
    )


@dataclass(frozen=True, eq=False)
class TelemetrySummary:
    """The measured profile priced at a scenario's node rate: what `hangover telemetry summary` prints."""

    profile: MeasuredUtilization
    rate: NodeRate
    usd_per_gpu_hour: float  # the full node price per GPU-hour (an idle hour costs it whatever the basis)
    idle_usd_per_month: float  # measured GPUs x 730 h x $/GPU-hour x (1 - measured utilization)

    def to_json(self) -> dict:
        """The stable JSON: gpus, samples, from, to, utilization, hourly_utilization[24], idle_usd_per_month, metric."""
        p = self.profile
        return {
            "gpus": p.gpus,
            "samples": p.samples,
            "from": p.first_ts.isoformat(sep=" "),
            "to": p.last_ts.isoformat(sep=" "),
            "utilization": round(p.utilization, 6),
            "hourly_utilization": [None if not np.isfinite(x) else round(float(x), 6) for x in p.hourly_utilization],
            "idle_usd_per_month": round(self.idle_usd_per_month, 2),
            "metric": p.metric,
            "metric_label": p.metric_label,
            "nodes": list(p.nodes),
            "gpu_hours": p.gpu_hours,
            "label": p.label,
            "node_price": {"usd_per_gpu_hour": round(self.usd_per_gpu_hour, 6), "label": self.rate.label,
                           "source": self.rate.source, "as_of": self.rate.as_of},
        }


def summarize(store, scenario: Scenario | None = None, *, node: str | None = None, date_from: dt.date | None = None,
              date_to: dt.date | None = None, node_usd_per_hour: float | None = None,
              metric: str | None = None, profile: MeasuredUtilization | None = None) -> TelemetrySummary:
    """Measured utilization and the idle $ a month at the scenario's node price (default Scenario(); an override wins)."""
    sc = scenario or Scenario()
    if node_usd_per_hour is not None:
        if not node_usd_per_hour > 0:
            raise InputError(f"--node-usd-per-hour must be above 0; got {plain(node_usd_per_hour)}")
        sc = sc.model_copy(update={"node_usd_per_hour": float(node_usd_per_hour)})
    with store.held():
        p = profile or measured_profile(store, node, date_from, date_to, metric=metric)
        rate = node_rate(sc, store.node_prices(), store.owned_hardware())
    per_gpu = rate.full_usd_per_node_hour / rate.gpus_per_node
    return TelemetrySummary(p, rate, per_gpu, idle_usd(p.gpus * HOURS_PER_MONTH, per_gpu, p.utilization))


_OVERVIEW_CACHE: dict[tuple, MeasuredUtilization | None] = {}


def measured_vs_plan(store, plan_utilization: float | None, rate: NodeRate) -> str | None:
    """One line for the Overview: measured utilization and idle $ (dated, all nodes) beside the plan's; None without telemetry.

    Reads the hourly aggregates once per change of the stored telemetry (a
    count and the newest import id, about a millisecond to check).
    """
    with store.held():
        stamp = tstore.telemetry_stamp(store)
        if stamp[0] == 0:
            return None
        key = (str(store.path), stamp)
        if key not in _OVERVIEW_CACHE:
            if len(_OVERVIEW_CACHE) > 16:
                _OVERVIEW_CACHE.clear()
            try:
                _OVERVIEW_CACHE[key] = measured_profile(store)
            except InputError:
                _OVERVIEW_CACHE[key] = None
    p = _OVERVIEW_CACHE[key]
    if p is None:
        return None
    per_gpu = rate.full_usd_per_node_hour / rate.gpus_per_node
    idle = idle_usd(p.gpus * HOURS_PER_MONTH, per_gpu, p.utilization)
    plan = ("the plan above models " + percent(plan_utilization) + " (an estimate from your inventory)"
            if plan_utilization is not None else "the plan has no owned nodes to compare")
    return (f"As it is: {percent(p.utilization)} busy, {p.label} ({integer(p.gpus)} GPUs, {p.metric_label}); "
            f"idle {money(idle)} a month at this scenario's node price. As planned: {plan}. Details: Telemetry.")
