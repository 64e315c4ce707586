"""Plan against actual: the plan's GPU-hours, utilization and $/M tokens for a period beside the measured ones,
and the cost difference split into mix, utilization, throughput and price components that add up to it.

For a period of H hours (days × 24), with gpn GPUs per node and a month of 730 hours:

    plan:    G_p = nodes in plan × gpn × H        GPU-hours paid
             u_p = the plan's utilization          (GPU-hours busy / paid)
             T_p = tokens (input + output) the plan sends to owned GPUs × H / 730
             τ_p = T_p / (u_p × G_p)              tokens per busy GPU-hour
             p_p = full node $/hour / gpn          $ per GPU-hour
             A_p = the plan's API spend × H / 730
             C_p = p_p × G_p + A_p
    actual:  G_a = invoiced node-hours × gpn, else measured GPUs × H (a GPU is paid whether or not it is logged)
             u_a = measured utilization (mean over the logged GPU-hours; core.telemetry.profile)
             T_a = invoiced tokens, else T_p (telemetry counts no tokens: the inventory's volume is assumed)
             τ_a = T_a / (u_a × G_a)
             p_a = invoiced node $ / (node-hours × gpn), else p_p
             A_a = invoiced API spend, else A_p
             C_a = p_a × G_a + A_a

Owned cost is p × T / (u × τ), so the difference C_a − C_p is taken one factor at a time (plan → actual), each
step's cost rounded to cents, and every component is the difference of two consecutive steps:

    S0 = C_p                                      (p_p T_p / (u_p τ_p) + A_p)
    S1 = p_p T_a / (u_p τ_p) + A_a                mix       = S1 − S0  (API spend and owned tokens)
    S2 = p_p T_a / (u_a τ_p) + A_a                utilization = S2 − S1
    S3 = p_p T_a / (u_a τ_a) + A_a = p_p G_a + A_a  throughput = S3 − S2
    S4 = p_a G_a + A_a = C_a                      price     = S4 − S3

so mix + utilization + throughput + price = C_a − C_p exactly, in cents. A side with (next to) no busy hour
(u under MIN_UTILIZATION) has no tokens per busy GPU-hour: its step keeps the plan's GPU-hours, so the
utilization step is $0 and throughput carries the change. Where the logged GPUs are not the
plan's fleet (fewer nodes logged than planned), throughput carries that difference: the same tokens on other
GPU-hours. The $/M tokens: plan p_p G_p / T_p × 10⁶, actual p_a G_a / T_a × 10⁶ (owned GPUs only).

Traffic shape: the plan's assumed hour-of-day shape and the measured one, each scaled to a busiest hour of 1;
they differ when the mean absolute gap over the logged hours exceeds SHAPE_GAP. Then the measured traffic is
offered for the next plan, and what it changes is the re-planned bill, in two steps: the measured shape alone
(Scenario.traffic_profile = measured; the plan sizes pools at each workload's peak, so the shape moves the
batch fill and the hourly picture, seldom the nodes), and with the measured peak factor as well (busiest hour
÷ mean hour of the measured utilization, given to the interactive workloads in place of the inventory's).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from core.decision.economics import DAYS_PER_MONTH
from core.models import HOURS_PER_MONTH

MIN_UTILIZATION = 1e-4  # below 0.01 % busy, utilization is not separable: its step is $0, throughput takes it
SHAPE_GAP = 0.10  # mean |measured − planned| of the peak-1 hour-of-day shapes above which they differ
COMPONENTS = ("mix", "utilization", "throughput", "price")


@dataclass(frozen=True, slots=True)
class MeasuredPeriod:
    """What telemetry says of a period (core.telemetry.profile.MeasuredUtilization, reduced to plain numbers)."""

    date_from: dt.date
    date_to: dt.date
    gpus: int
    utilization: float
    gpu_hours_logged: int
    hourly_utilization: tuple[float, ...]  # (24,) NaN where no GPU-hour was logged
    label: str
    metric: str


@dataclass(frozen=True, slots=True)
class InvoiceLines:
    """A period's invoice, summed by kind (None: not on the invoice), with its source."""

    node_hours: float | None = None
    node_usd: float | None = None
    api_usd: float | None = None
    tokens: float | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Side:
    """One side (plan or actual) of the comparison, for the period."""

    gpu_hours: float
    utilization: float
    tokens: float
    tokens_per_busy_gpu_hour: float | None
    usd_per_gpu_hour: float
    owned_usd: float
    api_usd: float
    total_usd: float
    usd_per_mtok: float | None


@dataclass(frozen=True, slots=True)
class ShapeCheck:
    """The plan's hour-of-day shape against the measured one (both peak 1)."""

    planned: tuple[float, ...]
    measured: tuple[float | None, ...]
    gap: float  # mean |measured − planned| over logged hours
    differs: bool
    planned_words: str


@dataclass(frozen=True, slots=True)
class Actuals:
    """Plan against actual for a period: both sides, the variance by component (cents), the shape check."""

    days: int
    date_from: dt.date
    date_to: dt.date
    plan: Side
    actual: Side
    components: tuple[tuple[str, float], ...]  # in COMPONENTS order
    difference_usd: float
    shape: ShapeCheck
    measured_label: str
    invoice_source: str | None
    notes: tuple[str, ...]

    def component(self, name: str) -> float:
        return dict(self.components)[name]


def _cents(x: float) -> int:
    return int(round(x * 100.0))


def plan_against_actual(ev, measured: MeasuredPeriod, invoice: InvoiceLines | None = None) -> Actuals:
    """Both sides for the measured period and the cost difference split by component (module docstring)."""
    f = ev.fleet
    gpn = f.gpus_per_node
    days = (measured.date_to - measured.date_from).days + 1
    hours = 24.0 * days
    share = hours / HOURS_PER_MONTH
    inv = invoice or InvoiceLines()
    notes = []

    p_p = f.full_usd_per_node_hour / gpn
    g_p = f.nodes_in_plan * gpn * hours
    u_p = f.utilization
    t_p = owned_tokens_per_month(ev) * share
    a_p = f.api_monthly_usd * share
    tau_p = t_p / (u_p * g_p) if u_p > 0 and g_p > 0 else None

    if inv.node_hours:
        g_a = inv.node_hours * gpn
    else:
        g_a = measured.gpus * hours
        notes.append("GPU-hours paid: the logged GPUs × the period's hours (no invoiced node-hours)")
    u_a = measured.utilization
    t_a = inv.tokens if inv.tokens is not None else t_p
    if inv.tokens is None:
        notes.append("tokens: the inventory's volume (telemetry counts no tokens; add a tokens line to the invoice)")
    p_a = inv.node_usd / g_a if inv.node_usd is not None and g_a > 0 else p_p
    if inv.node_usd is None:
        notes.append("price: the scenario's node price (no invoiced node $)")
    a_a = inv.api_usd if inv.api_usd is not None else a_p
    if inv.api_usd is None:
        notes.append("API spend: the plan's (no invoiced API spend)")
    tau_a = t_a / (u_a * g_a) if u_a > 0 and g_a > 0 else None

    def owned(p, t, u, tau):  # owned $ = p × T / (u × τ); with (next to) no busy hour the plan's GPU-hours
        return p * t / (u * tau) if u >= MIN_UTILIZATION and tau else p * g_p

    steps = [
        p_p * g_p + a_p,
        owned(p_p, t_a, u_p, tau_p) + a_a,
        owned(p_p, t_a, u_a, tau_p) + a_a,
        p_p * g_a + a_a,
        p_a * g_a + a_a,
    ]
    cents = [_cents(s) for s in steps]
    components = tuple((name, (cents[i + 1] - cents[i]) / 100.0) for i, name in enumerate(COMPONENTS))
    return Actuals(
        days=days, date_from=measured.date_from, date_to=measured.date_to,
        plan=_side(g_p, u_p, t_p, tau_p, p_p, a_p), actual=_side(g_a, u_a, t_a, tau_a, p_a, a_a),
        components=components, difference_usd=(cents[-1] - cents[0]) / 100.0,
        shape=shape_check(ev, measured), measured_label=f"{measured.label}, {measured.metric}",
        invoice_source=inv.source or None if invoice is not None else None, notes=tuple(notes))


def _side(g, u, t, tau, p, a) -> Side:
    owned_usd = _cents(p * g) / 100.0
    api = _cents(a) / 100.0
    return Side(gpu_hours=g, utilization=u, tokens=t, tokens_per_busy_gpu_hour=tau, usd_per_gpu_hour=p,
                owned_usd=owned_usd, api_usd=api, total_usd=_cents(p * g + a) / 100.0,
                usd_per_mtok=p * g / t * 1e6 if t > 0 else None)


def owned_tokens_per_month(ev) -> float:
    """Tokens (input + output) a month the plan sends to owned GPUs."""
    w = ev.workloads
    v = ev.verdict
    owned = np.array([r.hosting == "owned" for r in ev.routes] + [False])[np.where(v >= 0, v, -1)]
    per_day = w["requests_per_day"].to_numpy(dtype=float) * (w["input_tokens"].to_numpy(dtype=float)
                                                             + w["output_tokens"].to_numpy(dtype=float))
    return float(per_day[owned].sum()) * DAYS_PER_MONTH


def shape_check(ev, measured: MeasuredPeriod) -> ShapeCheck:
    """The plan's assumed shape (peak 1) against the measured hour-of-day utilization (peak 1)."""
    from core.decision.fleet import traffic_shape

    planned, words = traffic_shape(ev.scenario)
    m = np.asarray(measured.hourly_utilization, dtype=float)
    ok = np.isfinite(m)
    peak = float(np.nanmax(m)) if ok.any() else 0.0
    scaled = np.where(ok, m / peak, np.nan) if peak > 0 else np.full(24, np.nan)
    gap = float(np.mean(np.abs(scaled[ok] - planned[ok]))) if ok.any() and peak > 0 else 0.0
    return ShapeCheck(planned=tuple(float(x) for x in planned),
                      measured=tuple(None if not np.isfinite(x) else float(x) for x in scaled),
                      gap=gap, differs=gap > SHAPE_GAP, planned_words=words)


def measured_shape_update(measured: MeasuredPeriod) -> dict:
    """The scenario fields that make the next plan follow the measured shape (unlogged hours: the logged mean)."""
    m = np.asarray(measured.hourly_utilization, dtype=float)
    fill = float(np.nanmean(m)) if np.isfinite(m).any() else 0.0
    return {"traffic_profile": "measured",
            "measured_hourly_shape": tuple(float(x) if np.isfinite(x) else fill for x in m),
            "measured_label": f"{measured.label}, {measured.metric}"}


def measured_peak_factor(measured: MeasuredPeriod) -> float | None:
    """Busiest hour of day ÷ the mean over the logged hours, within the inventory's bounds [1, 24] (None: no
    busy hour logged). Read as interactive traffic's peak factor where utilization follows the load."""
    m = np.asarray(measured.hourly_utilization, dtype=float)
    ok = np.isfinite(m)
    if not ok.any() or float(m[ok].mean()) <= 0:
        return None
    return float(min(max(m[ok].max() / m[ok].mean(), 1.0), 24.0))


def with_measured_peak(workloads, peak_factor: float):
    """A copy of the inventory whose interactive workloads take the measured peak factor (batch work keeps its)."""
    out = workloads.copy()
    interactive = out["latency_slo_ms"].notna()
    out.loc[interactive, "peak_factor"] = peak_factor
    return out


@dataclass(frozen=True, slots=True)
class Replan:
    """What planning the next month on the measured traffic changes: nodes and the monthly cash bill, on the
    measured shape alone (the inventory's peak factors), and with the measured peak factor as well."""

    nodes_before: int
    bill_before: float
    nodes_on_shape: int
    bill_on_shape: float
    peak_factor: float | None
    nodes_on_peak: int | None
    bill_on_peak: float | None

    @property
    def shape_change(self) -> float:
        """Bill on the measured shape − the plan's bill (cents)."""
        return (_cents(self.bill_on_shape) - _cents(self.bill_before)) / 100.0

    @property
    def peak_change(self) -> float | None:
        """Bill on the measured shape and peak factor − the plan's bill (cents)."""
        return None if self.bill_on_peak is None else (_cents(self.bill_on_peak) - _cents(self.bill_before)) / 100.0


def actuals_json(a: Actuals, replan: Replan | None = None) -> dict:
    """The `hangover actuals --format json` object."""
    from dataclasses import asdict

    from core.decision.records import jsonable

    out = {
        "from": a.date_from.isoformat(), "to": a.date_to.isoformat(), "days": a.days,
        "plan": asdict(a.plan), "actual": asdict(a.actual),
        "variance": {**dict(a.components), "total": a.difference_usd},
        "shape": {**asdict(a.shape)}, "measured": a.measured_label, "invoice": a.invoice_source,
        "notes": list(a.notes),
    }
    if replan is not None:
        out["replan_on_measured_traffic"] = {**asdict(replan), "shape_change": replan.shape_change,
                                             "peak_change": replan.peak_change}
    return jsonable(out)
