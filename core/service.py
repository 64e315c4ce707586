"""One-call entry points the dashboard, CLI and reports share: load inputs, evaluate, summarise."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import ValidationError

from core.bounds import field_bounds
from core.catalog import Catalog
from core.decision.engine import Evaluation, check_plan_size, evaluate
from core.decision.records import MeasuredUtilization
from core.errors import InputError, describe_validation_error
from core.models import OwnedHardware, Scenario, ServingStack
from core.store import Store, open_store
from core.store.seed import sample_workloads_path

# The owned-hardware figures a user may enter for the "owned" pricing option.
OWNED_INPUTS = ("capex_usd_per_node", "depreciation_years", "cost_of_capital_rate", "kw_per_node", "pue",
                "usd_per_kwh", "support_usd_per_year")


def owned_hardware_defaults(catalog: Catalog, gpu: str) -> dict[str, float]:
    """Starting values for the owned-hardware inputs: the seed estimate for this GPU, else the first one."""
    rows = [h for h in catalog.owned_hardware if h.gpu.lower() == gpu.lower()] or list(catalog.owned_hardware)
    if not rows:
        return {}
    return {k: float(getattr(rows[0], k)) for k in OWNED_INPUTS}


def make_scenario(*, owned_inputs: dict[str, float] | None = None, **settings) -> Scenario:
    """Build a Scenario from loose settings; a bad value becomes one readable InputError.

    With pricing "owned" and `owned_inputs` (capex, depreciation, cost of
    capital, kW, PUE, $/kWh, support), those figures price the node, dated
    today and marked as the user's own.
    """
    clean = {k: v for k, v in settings.items() if v is not None}
    try:
        if clean.get("pricing_option") == "owned" and owned_inputs:
            gpu = clean.get("gpu", field_bounds(Scenario, "gpu").default)
            gpus_per_node = clean.get("gpus_per_node", field_bounds(Scenario, "gpus_per_node").default)
            clean["owned_hardware"] = OwnedHardware.model_validate({
                "name": f"{gpus_per_node}×{gpu} node (your figures)",
                "gpu": gpu, "gpus_per_node": gpus_per_node,
                "source": "your scenario inputs", "as_of": dt.date.today(), "confidence": "user", **owned_inputs})
        return Scenario(**clean)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, where="scenario").replace("\n", "; ")) from None


def read_workloads_file(path: str | Path, sheet: str | None = None) -> pd.DataFrame:
    """A validated inventory frame from a CSV/XLSX file, or an InputError listing every bad cell."""
    from core.inventory import read_inventory

    p = Path(path)
    if not p.exists():
        raise InputError(f"workload file {p} does not exist")
    report = read_inventory(p, file_name=p.name, sheet=sheet)
    if not report.ok:
        lines = [_describe_cell(e) for e in report.errors.itertuples()]
        raise InputError(f"{p.name} has {len(lines)} problem(s):\n" + "\n".join(lines[:50])
                         + ("\n…" if len(lines) > 50 else ""))
    return report.frame


def inventory(store, version: int | None = None) -> tuple[str, pd.DataFrame]:
    """(label, frame): a stored version, the latest one, or the bundled sample when the store has none."""
    try:
        from core.inventory.versions import latest_inventory, load_version
    except ImportError:  # inventory versions not available yet: the bundled sample
        return "bundled sample", pd.read_csv(sample_workloads_path())
    if version is not None:
        return f"version {version}", load_version(store, version)
    v, frame = latest_inventory(store)
    return (f"version {v}" if v is not None else "bundled sample"), frame


def stored_size(store, version: int | None = None) -> int:
    """Workloads in a stored version (None: the latest, or the bundled sample when nothing was committed), read
    from the version's record without loading it."""
    from core.inventory.versions import latest_size, version_rows

    return latest_size(store)[1] if version is None else version_rows(store, version)


def evaluate_store(store, scenario: Scenario, *, version: int | None = None,
                   workloads: pd.DataFrame | None = None, catalog: Catalog | None = None) -> Evaluation:
    """Evaluate an inventory (given, a stored version, the latest, or the sample) under a scenario."""
    catalog = catalog or Catalog.from_store(store)
    if workloads is None:
        check_plan_size(stored_size(store, version))  # before loading a version too large to plan
        label, workloads = inventory(store, version)
    else:
        label = "given"
    scenario = with_measured_profile(store, scenario)
    ev = evaluate(catalog, workloads, scenario)
    return ev.with_source(label, measured_beside_plan(store, ev))


def measured_beside_plan(store, ev: Evaluation) -> MeasuredUtilization | None:
    """The measured utilization and idle $ (dated) to show beside the plan's, when telemetry was imported."""
    from core.decision.economics import idle_usd
    from core.models import HOURS_PER_MONTH
    from core.store.telemetry import telemetry_stamp
    from core.telemetry import measured_profile

    try:
        if telemetry_stamp(store)[0] == 0:
            return None
        p = measured_profile(store)
    except InputError:
        return None
    per_gpu = ev.rate.full_usd_per_node_hour / ev.rate.gpus_per_node
    return MeasuredUtilization(utilization=float(p.utilization), gpus=int(p.gpus), label=p.label,
                               metric=p.metric_label,
                               idle_usd_per_month=float(idle_usd(p.gpus * HOURS_PER_MONTH, per_gpu, p.utilization)))


def with_measured_profile(store, scenario: Scenario) -> Scenario:
    """A scenario asking for the measured traffic profile gets the store's telemetry shape (dated) filled in.

    No telemetry: an InputError saying how to import it. A scenario that already carries a shape (saved
    with one) keeps it, so a saved comparison reproduces what was seen.
    """
    from core.models import TrafficProfile

    if scenario.traffic_profile is not TrafficProfile.MEASURED or scenario.measured_hourly_shape is not None:
        return scenario
    from core.telemetry import measured_profile

    p = measured_profile(store)
    shape = tuple(float(x) if x == x else None for x in p.hourly_utilization)
    known = [x for x in shape if x is not None]
    fill = sum(known) / len(known) if known else 0.0
    return scenario.model_copy(update={"measured_hourly_shape": tuple(fill if x is None else x for x in shape),
                                       "measured_label": f"{p.label}, {p.metric_label}"})


def _describe_cell(e) -> str:
    """'row 4, column 'x': problem (got 'v')', or just the problem for file-level errors."""
    where = []
    if e.row and int(e.row) > 0:
        where.append(f"row {int(e.row)}")
    if e.column:
        where.append(f"column '{e.column}'")
    got = f" (got {e.value!r})" if e.value not in (None, "") else ""
    return (", ".join(where) + ": " if where else "") + f"{e.problem}{got}"


# ---------------------------------------------------------------------------------------------------------------
# what the pages read and write: every page call into the store or the decision modules goes through here
# ---------------------------------------------------------------------------------------------------------------

def open_shared_store() -> Store:
    """The store the dashboard's sessions share (core takes a cursor per unit of work)."""
    return open_store()


def store_stamp(store: Store) -> int:
    """A key that changes whenever the store file (or its write-ahead log) is written: (size, mtime, inode) of
    both (core.store.integrity.file_signature), so a read leaves it as it was."""
    from core.store.integrity import file_signature

    path = store.path
    return hash((file_signature(path), file_signature(path.with_name(path.name + ".wal"))))


def estimate_range_words(ev: Evaluation) -> str | None:
    """The Overview's line on the nodes and bill at both ends of the performance estimates (None: not computed)."""
    from core.decision.sensitivity import estimate_range_words as words

    if ev.scenario.mixed:  # the chosen mix's range
        from core.decision import mixfleet

        return mixfleet.range_words(ev)
    return words(ev)


def staged_purchase(ev: Evaluation):
    """The staged purchase under the ranges at the default settings (core.decision.purchase; None: skipped)."""
    from core.decision.purchase import purchase

    if ev.scenario.mixed:  # the chosen mix's new nodes
        from core.decision import mixfleet

        return mixfleet.staged_purchase(ev)
    return purchase(ev)


def purchase_subject(ev: Evaluation) -> str:
    """What the staged purchase counts, before its sentences: a mixed scenario's new GPU and option ('' for one
    GPU type: its figures are the whole fleet's)."""
    from core.decision.mixfleet import purchase_subject as subject

    return subject(ev)


def purchase_lines(p) -> list[str]:
    """The staged purchase in three sentences: buy now, hold until measured (and how), the spread."""
    from core.decision.purchase import purchase_lines as lines

    return lines(p)


def owned_vs_api(p) -> pd.DataFrame:
    """Per workload with both routes: the chance owned beats its best allowed API across the draws."""
    from core.decision.purchase import owned_vs_api_frame

    return owned_vs_api_frame(p)


def smallest_change(ev: Evaluation, *, force: bool = False):
    """The smallest change that avoids a purchase, and its words (None: above the automatic size and not forced;
    core.decision.smallest)."""
    from core.decision.explain import smallest_change_words
    from core.decision.smallest import smallest_change as answer

    got = answer(ev, force=force)
    return None if got is None else (got, smallest_change_words(ev.fleet, got))


def sla_sweep_rows(ev: Evaluation, scale: float) -> list[dict]:
    """One SLA scale of the sweep: each fleet option re-planned with every latency target × scale."""
    from core.decision.analysis import sla_sweep_rows as rows

    return rows(ev.catalog, ev.workloads, ev.scenario, scale)


def sla_sweep_max_workloads() -> int:
    """Up to how many workloads a page sweeps the SLA scales as it draws (SearchSettings.sla_sweep_max_workloads)."""
    from core.decision import settings as settings_mod

    return int(settings_mod.PLAN.sla_sweep_max_workloads)


def sla_sweep_automatic(ev: Evaluation) -> bool:
    """Whether a page sweeps the SLA scales as it draws; above sla_sweep_max_workloads() workloads only when asked:
    each scale is a whole evaluation with every fleet option planned."""
    return len(ev.workloads) <= sla_sweep_max_workloads()


def sla_sweep(ev: Evaluation, scales, *, rows_at=None) -> pd.DataFrame:
    """Owned nodes each fleet option needs as every latency target is scaled (rows_at: a cache per scale)."""
    from core.decision.analysis import sla_sweep as sweep

    return sweep(ev.catalog, ev.workloads, ev.scenario, scales, rows_at=rows_at)


def architecture_comparison(ev: Evaluation) -> pd.DataFrame:
    """Every owned route side by side for each interactive workload (analysis.architecture_comparison)."""
    from core.decision.analysis import architecture_comparison as compare

    return compare(ev)


def fleet_options(ev: Evaluation) -> pd.DataFrame:
    """The cash bill of each fleet option, planned once per evaluation (analysis.fleet_options)."""
    from core.decision.analysis import fleet_options as options

    return options(ev)


def check_plan(ev: Evaluation, *, seed: int = 0, progress=None):
    """The plan's owned interactive deployments simulated at the peak hour (core.decision.checks)."""
    from core.decision.checks import check_plan as check

    return check(ev, seed=seed, progress=progress)


def benchmark_imports(store: Store) -> pd.DataFrame:
    """The imported benchmark files, newest first (core.store.benchmarks)."""
    from core.store.benchmarks import list_imports

    return list_imports(store)


def set_licence_fee(store: Store, stack_id: str, usd_per_gpu_month: float, *, source: str) -> ServingStack:
    """Enter the licence fee of a stack with licensed weights (dated, with its source)."""
    from core.store.stacks import set_licence_fee as set_fee

    return set_fee(store, stack_id, usd_per_gpu_month, source=source)


def telemetry_stamp(store: Store) -> tuple[int, str]:
    """(imports, newest import id): changes with every telemetry import, whichever process made it."""
    from core.store.telemetry import telemetry_stamp as stamp

    return stamp(store)


def telemetry_overview(store: Store) -> tuple[pd.DataFrame, list[str], pd.DataFrame]:
    """(imports, nodes, coverage) of the stored GPU telemetry, read under one hold of the store."""
    from core.store import telemetry as tstore

    with store.held():
        return tstore.list_imports(store), tstore.nodes(store), tstore.coverage(store)


def verdicts_frame(ev: Evaluation) -> pd.DataFrame:
    """The routing table: one row per workload, its verdict and figures (core.decision.contract)."""
    from core.decision.contract import verdicts_frame as table

    return table(ev)


def reasons(ev: Evaluation, i: int) -> list[str]:
    """Sentences a finance reader can quote for workload i's verdict (core.decision.explain; the chosen mix's in a
    mixed scenario, core.decision.mixrows)."""
    from core.decision.mixrows import plan_reasons

    return plan_reasons(ev, i)


def showback(ev: Evaluation, by: str = "team", idle_key: str = "gpu_hours"):
    """The plan's cash bill by group of a text column, idle recovered by a key (core.decision.showback)."""
    from core.decision.showback import showback as groups

    return groups(ev, by=by, idle_key=idle_key)


def showback_idle_keys() -> dict[str, str]:
    """The keys the unallocated $ may be shared by, and their words."""
    from core.decision.showback import IDLE_KEYS

    return dict(IDLE_KEYS)


def showback_columns(ev: Evaluation) -> list[str]:
    """The text columns a showback may group by (core.decision.showback.group_columns)."""
    from core.decision.showback import group_columns

    return group_columns(ev)


def plan_against_actual(store: Store, ev: Evaluation, date_from: dt.date | None = None,
                        date_to: dt.date | None = None, *, invoice_path: str | Path | None = None,
                        invoice_text: str | None = None, replan: bool = False):
    """(Actuals, Replan or None, the measured profile) for a period with telemetry (core.decision.actuals).

    The period defaults to the telemetry's first and last day. `replan`: plan again on the measured
    hour-of-day shape and say what it changes (nodes, the monthly bill).
    """
    from core.decision.actuals import (
        MeasuredPeriod,
        Replan,
        measured_peak_factor,
        measured_shape_update,
        with_measured_peak,
    )
    from core.decision.actuals import plan_against_actual as compare
    from core.telemetry import measured_profile

    if date_from and date_to and date_to < date_from:
        raise InputError(f"--to {date_to} is before --from {date_from}")
    p = measured_profile(store, date_from=date_from, date_to=date_to)
    period = MeasuredPeriod(date_from=date_from or p.date_from, date_to=date_to or p.date_to, gpus=p.gpus,
                            utilization=p.utilization, gpu_hours_logged=p.gpu_hours,
                            hourly_utilization=tuple(float(x) for x in p.hourly_utilization), label=p.label,
                            metric=p.metric_label)
    invoice = None
    if invoice_path is not None or invoice_text is not None:
        from core.telemetry.invoice import parse_invoice, read_invoice

        invoice = read_invoice(invoice_path) if invoice_path is not None else \
            parse_invoice(invoice_text or "", name="uploaded invoice")
    result = compare(ev, period, invoice)
    again = None
    if replan:
        scenario = Scenario.model_validate({**ev.scenario.model_dump(), **measured_shape_update(period)})
        shaped = evaluate(ev.catalog, ev.workloads, scenario).fleet
        pf = measured_peak_factor(period)
        peaked = evaluate(ev.catalog, with_measured_peak(ev.workloads, pf), scenario).fleet if pf else None
        again = Replan(nodes_before=ev.fleet.nodes_needed, bill_before=ev.fleet.total_monthly_usd,
                       nodes_on_shape=shaped.nodes_needed, bill_on_shape=shaped.total_monthly_usd, peak_factor=pf,
                       nodes_on_peak=peaked.nodes_needed if peaked else None,
                       bill_on_peak=peaked.total_monthly_usd if peaked else None)
    return result, again, p


def telemetry_period(store: Store) -> tuple[dt.date, dt.date] | None:
    """(first day, last day) of the stored telemetry; None when none was imported."""
    from core.store import telemetry as tstore

    with store.held():
        if tstore.telemetry_stamp(store)[0] == 0:
            return None
        cover = tstore.coverage(store)
    if cover.empty:
        return None
    return cover["first_ts"].min().date(), cover["last_ts"].max().date()


def idle_by_node(store: Store, ev: Evaluation, date_from: dt.date | None = None,
                 date_to: dt.date | None = None) -> pd.DataFrame:
    """Measured idle $ a month by node at the evaluation's node price (core.telemetry.by_node)."""
    from core.telemetry.by_node import idle_by_node as by_node

    return by_node(store, ev.rate, date_from, date_to)

def top_fleet(ev: Evaluation):
    """The fleet record pages show: the chosen mix in a mixed scenario (core.decision.mixfleet), else the plan's."""
    from core.decision import mixfleet

    return mixfleet.top(ev)


def buy_options_frame(ev: Evaluation, *, every: bool = False) -> pd.DataFrame | None:
    """What to buy next side by side (core.decision.mix.frame; every: each GPU and option); None when the
    scenario names neither owned nodes by GPU nor candidates."""
    from core.decision import mix

    return mix.frame(ev, every=every)


def burst_frame(ev: Evaluation) -> tuple[dict, pd.DataFrame | None]:
    """Burst instead of buy (core.decision.burst): fleet.burst, and its cost per base fleet as a table (None when
    not priced or the profile is flat): base nodes, rented node-hours a month, $ a month, against owning all."""
    from core.decision import burst

    j = burst.burst_json(ev)
    b = burst.of(ev)
    if b is None or b.flat or b.nodes_needed <= b.owned_nodes:
        return j, None
    bases = np.array([n for n, _ in b.cost_by_base])
    hours = burst.burst_hours(np.array(b.hourly_nodes), bases)
    full = max(b.nodes_needed, b.owned_nodes)
    return j, pd.DataFrame({"base_nodes": bases, "rented_nodes_at_peak": full - bases,
                            "burst_node_hours": np.round(hours, 1),
                            "usd_per_month": [c for _, c in b.cost_by_base],
                            "vs_all_owned_usd": [round(c - b.all_owned_usd, 2) for _, c in b.cost_by_base]})


def audit_trail(store: Store, limit: int | None = None) -> pd.DataFrame:
    """Every write to the store, newest first (core.store.users.audit_frame): written_at (UTC), who, role, action,
    detail."""
    from core.store.users import audit_frame

    return audit_frame(store, limit)
