"""Scenarios as people keep them: sidebar inputs <-> Scenario, named scenarios in the store, side-by-side comparison.

- Inputs: the sidebar's values in the units people type (percent for shares),
  converted here, once, to the Scenario model and back.
- Saved scenarios: name, every input (the Scenario's JSON), who saved it, when,
  and the inventory version it was saved on (core.store.scenarios holds the SQL).
- Comparison: 2-4 scenarios evaluated and set side by side: cash bill, nodes,
  idle cost, utilization, API spend, and the verdict of every workload in each.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from pydantic import ValidationError

from core.errors import InputError
from core.models import CostBasis, PricingOption, Scenario
from core.service import OWNED_INPUTS, make_scenario, owned_hardware_defaults
from core.textsafety import clip

if TYPE_CHECKING:
    from core.decision.engine import Evaluation

# --------------------------------------------------------------------------------------------------------------
# sidebar inputs
# --------------------------------------------------------------------------------------------------------------

PRICING_LABELS = {
    PricingOption.ON_DEMAND.value: "On-demand",
    PricingOption.SAVINGS_1Y.value: "1-year savings plan",
    PricingOption.SAVINGS_3Y.value: "3-year savings plan",
    PricingOption.OWNED.value: "Owned hardware",
}
BASIS_LABELS = {CostBasis.FULL.value: "Full allocation", CostBasis.MARGINAL.value: "Marginal"}

# Owned-hardware inputs: sidebar name -> OwnedHardware field. Cost of capital is typed in percent.
OWNED_INPUT_FIELDS: dict[str, str] = {
    ("own_cost_of_capital_pct" if k == "cost_of_capital_rate" else f"own_{k}"): k for k in OWNED_INPUTS
}
_PERCENT_FIELDS = {"cost_of_capital_rate"}


def share_from_percent(pct: float) -> float:
    """20 (percent, as the sidebar shows it) -> 0.20; rounded so 7 % is 0.07, not 0.07000000000000001."""
    return round(float(pct) / 100.0, 12)


def percent_from_share(share: float) -> float:
    """0.20 -> 20.0 (for a percent widget)."""
    return round(float(share) * 100.0, 10)


def parse_share(text: str | float, *, what: str = "share") -> float:
    """A share typed by a person: '95%' or '95' (percent) or 0.95 (a fraction) -> 0.95.

    A number above 1 without a '%' is read as percent (nobody means 9,500 %);
    1 or below is a fraction. Anything else is one clear InputError.
    """
    raw = str(text).strip()
    s = raw.replace(" ", "").replace("\u00a0", "")
    percent = s.endswith("%")
    s = s.rstrip("%")
    if s.count(",") == 1 and "." not in s:  # a decimal comma: "0,95"
        s = s.replace(",", ".")
    try:
        x = float(s)
    except ValueError:
        raise InputError(f"{what}: {raw!r} is not a share; write it as 95%, 95 or 0.95") from None
    if not np.isfinite(x) or x < 0:
        raise InputError(f"{what}: {raw!r} is not a share between 0 % and 100 %")
    share = x / 100.0 if percent or x > 1 else x
    if share > 1:
        raise InputError(f"{what}: {raw!r} is more than 100 %")
    return round(share, 12)


def parse_owned(values: str | Iterable[str]) -> dict[str, int]:
    """Owned nodes per GPU as typed: "H100 SXM:1", repeated or "H100 SXM:1,H200 SXM:2" -> {"H100 SXM": 1, ...}.

    A GPU named twice adds up; a count that is not a whole number of 0 or more is one InputError."""
    out: dict[str, int] = {}
    for value in [values] if isinstance(values, str) else values:
        for part in str(value).split(","):
            if not part.strip():
                continue
            gpu, sep, count = part.rpartition(":")
            if not sep or not gpu.strip() or not count.strip().isdigit():
                raise InputError(f"owned nodes: {clip(part.strip())!r} is not GPU:N (e.g. \"H100 SXM:1\")")
            out[gpu.strip()] = out.get(gpu.strip(), 0) + int(count)
    if not out:
        raise InputError("owned nodes: name at least one GPU:N (e.g. \"H100 SXM:1\")")
    return out


def parse_gpu_list(text: str | Iterable[str], *, what: str = "candidate GPUs") -> tuple[str, ...]:
    """"H100 SXM,H200 SXM, B200" (or a list of such, as a repeated flag gives) -> the names in order, each once;
    none at all is an InputError."""
    parts = [p for t in ([text] if isinstance(text, str) else text) for p in str(t).split(",")]
    names = tuple(dict.fromkeys(p.strip() for p in parts if p.strip()))
    if not names:
        raise InputError(f"{what}: name at least one GPU (e.g. \"H100 SXM,H200 SXM\")")
    return names


def owned_input_defaults(catalog, gpu: str) -> dict[str, float]:
    """The owned-hardware inputs prefilled from the seed estimate for this GPU, in sidebar units."""
    seed = owned_hardware_defaults(catalog, gpu)
    return {name: (percent_from_share(seed[f]) if f in _PERCENT_FIELDS else seed[f])
            for name, f in OWNED_INPUT_FIELDS.items() if f in seed}


def scenario_from_inputs(values: Mapping[str, Any]) -> Scenario:
    """The Scenario the sidebar's values describe (missing ones take DEFAULT_INPUTS); a bad value is an InputError."""
    v = {**DEFAULT_INPUTS, **{k: x for k, x in values.items() if x is not None}}
    owned = None
    if all(name in values for name in OWNED_INPUT_FIELDS):
        owned = {f: (share_from_percent(values[name]) if f in _PERCENT_FIELDS else float(values[name]))
                 for name, f in OWNED_INPUT_FIELDS.items()}
    mix = _mix_inputs(v)
    return make_scenario(
        owned_inputs=owned,
        gpu=str(mix.pop("gpu", v["gpu"])),
        fleet_nodes=int(mix.pop("fleet_nodes", v["fleet_nodes"])),
        pricing_option=str(v["pricing"]),
        cost_basis=str(v["cost_basis"]),
        node_usd_per_hour=float(v["node_usd_per_hour"]) or None,
        api_price_scale=float(v["api_price_scale"]),
        sla_scale=float(v["sla_scale"]),
        max_fallback_share=share_from_percent(v["max_fallback_pct"]),
        traffic_profile=str(v["traffic_profile"]),
        **mix,
    )


def _mix_inputs(v: Mapping[str, Any]) -> dict[str, Any]:
    """The what-to-buy texts as Scenario fields ("" leaves them unset); owned nodes by GPU make their largest type
    the one-kind GPU and count too, as `--owned` does."""
    out: dict[str, Any] = {}
    if str(v.get("owned_by_gpu") or "").strip():
        owned = parse_owned(str(v["owned_by_gpu"]))
        main = max(owned, key=lambda g: owned[g])
        out.update(owned_nodes_by_gpu=owned, gpu=main, fleet_nodes=owned[main])
    if str(v.get("buy_gpus") or "").strip():
        out["buy_gpus"] = parse_gpu_list(str(v["buy_gpus"]))
    return out


def inputs_from_scenario(sc: Scenario) -> dict[str, object]:
    """The sidebar's values for a Scenario (the inverse of scenario_from_inputs); owned figures when it has them."""
    out: dict[str, object] = {
        "gpu": sc.gpu,
        "fleet_nodes": int(sc.fleet_nodes),
        "pricing": sc.pricing_option.value,
        "cost_basis": sc.cost_basis.value,
        "node_usd_per_hour": float(sc.node_usd_per_hour or 0.0),
        "api_price_scale": float(sc.api_price_scale),
        "sla_scale": float(sc.sla_scale),
        "max_fallback_pct": percent_from_share(sc.max_fallback_share),
        "traffic_profile": sc.traffic_profile.value,
    }
    if sc.owned_nodes_by_gpu is not None:  # the what-to-buy texts only when set ("" in DEFAULT_INPUTS)
        out["owned_by_gpu"] = ",".join(f"{g}:{n}" for g, n in sc.owned_nodes_by_gpu.items())
    if sc.buy_gpus is not None:
        out["buy_gpus"] = ",".join(sc.buy_gpus)
    if sc.owned_hardware is not None:
        hw = sc.owned_hardware
        for name, f in OWNED_INPUT_FIELDS.items():
            x = float(getattr(hw, f))
            out[name] = percent_from_share(x) if f in _PERCENT_FIELDS else x
    return out


# The sidebar's inputs and their starting values, in the units a person types: shares are percent
# (20 means 20 %), a node price of 0 means "use the dated snapshot". Read from the Scenario model's field
# defaults, the one source (issue 10). Any: each key holds its own type.
DEFAULT_INPUTS: dict[str, Any] = {**inputs_from_scenario(Scenario()), "owned_by_gpu": "", "buy_gpus": ""}


def settings_the_sidebar_lacks(sc: Scenario) -> list[str]:
    """Settings of a saved scenario the sidebar has no widget for, where they differ from the default."""
    base = Scenario()
    fields = ("gpus_per_node", "node_provider", "near_tie_share", "sla_percentile", "buy_pricing")
    return [f"{f} = {getattr(sc, f)!r}" for f in fields if getattr(sc, f) != getattr(base, f)]


def scenario_words(sc: Scenario) -> str:
    """The scenario in a few words: '3 × H100 SXM nodes · 3-year savings plan · full allocation'."""
    price = (f"your price ${sc.node_usd_per_hour:,.2f}/node-hour" if sc.node_usd_per_hour
             else PRICING_LABELS[sc.pricing_option.value])
    extras = []
    if sc.api_price_scale != 1:
        extras.append(f"API prices × {sc.api_price_scale:g}")
    if sc.sla_scale != 1:
        extras.append(f"latency targets × {sc.sla_scale:g}")
    if sc.max_fallback_share != DEFAULT_INPUTS["max_fallback_pct"] / 100:
        extras.append(f"fallback up to {percent_from_share(sc.max_fallback_share):g} %")
    return " · ".join([f"{sc.fleet_nodes} × {sc.gpu} node{'s' if sc.fleet_nodes != 1 else ''}", price,
                       BASIS_LABELS[sc.cost_basis.value].lower(), *extras])


def url_notes(raw: Mapping[str, object], resolved: Mapping[str, str], *, prefix: str = "sc_") -> list[str]:
    """What a shared link asked for that the sidebar could not use, in plain words.

    `raw` is the link's query parameters as it arrived; `resolved` maps each
    scenario parameter to the value the sidebar shows now (as text). A known
    parameter whose value did not survive (garbled, out of range, an unknown
    option) and an unknown scenario parameter each give one note; parameters
    without the prefix belong to pages and are left alone.
    """
    notes = []
    for key, value in raw.items():
        text = value[-1] if isinstance(value, list) and value else str(value)
        if not key.startswith(prefix):
            continue
        if key not in resolved:
            notes.append(f"the link's setting {clip(key)}={clip(text)!r} is unknown here and was ignored")
        elif not _same(text, resolved[key]):
            notes.append(f"the link's {key}={clip(text)!r} is not a valid value; the sidebar shows {resolved[key]}")
    return notes


def _same(a: str, b: str) -> bool:
    try:
        return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=1e-9))
    except ValueError:
        return a.strip() == b.strip()


# --------------------------------------------------------------------------------------------------------------
# names, saved scenarios
# --------------------------------------------------------------------------------------------------------------

NAME_MAX_CHARS = 60
_NAME_PUNCTUATION = " -_.()+&,'"
NAME_RULE = ("1-60 characters: letters, digits, spaces and - _ . ( ) + & , '; starting with a letter or digit")


def check_name(name: object) -> str:
    """A scenario name, stripped and with inner runs of spaces made one; a bad name is one clear InputError."""
    text = " ".join(str(name if name is not None else "").split())
    if not text:
        raise InputError(f"a saved scenario needs a name ({NAME_RULE})")
    if len(text) > NAME_MAX_CHARS:
        raise InputError(f"scenario name {text[:20]!r}… is {len(text)} characters long; the limit is "
                         f"{NAME_MAX_CHARS}")
    bad = sorted({ch for ch in text if not (ch.isalnum() or ch in _NAME_PUNCTUATION)
                  or unicodedata.category(ch).startswith("C")})
    if bad:
        shown = ", ".join(repr(ch) for ch in bad)
        raise InputError(f"scenario name {clip(text)!r} contains {shown}; use {NAME_RULE}")
    if not text[0].isalnum():
        raise InputError(f"scenario name {text!r} must start with a letter or digit")
    return text


@dataclass(frozen=True)
class SavedScenario:
    """A named scenario as stored: every input, who saved it, when, and on which inventory version."""

    name: str
    scenario: Scenario
    inventory_version: int | None  # None = the bundled sample inventory
    created_by: str
    created_at: dt.datetime | None
    updated_at: dt.datetime | None
    note: str = ""

    @property
    def inventory_label(self) -> str:
        """'version 3' or 'bundled sample' (as evaluations label their inventory)."""
        return "bundled sample" if self.inventory_version is None else f"version {self.inventory_version}"

    def to_dict(self) -> dict:
        """JSON-ready: the name, the inventory, who and when, and every scenario input."""
        return {
            "name": self.name,
            "inventory_version": self.inventory_version,
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(timespec="seconds") if self.created_at else None,
            "updated_at": self.updated_at.isoformat(timespec="seconds") if self.updated_at else None,
            "note": self.note,
            "scenario": self.scenario.model_dump(mode="json"),
        }


def saved_rows(saved: Iterable[SavedScenario]) -> list[dict[str, str]]:
    """The saved scenarios as text rows for a table: name, settings, inventory, who, when (UTC), note."""
    return [{"name": s.name, "settings": scenario_words(s.scenario), "inventory": s.inventory_label,
             "saved by": s.created_by, "saved (UTC)": f"{s.updated_at:%Y-%m-%d %H:%M}" if s.updated_at else "",
             "note": s.note} for s in saved]


_LATEST = object()


def _from_row(row: Mapping) -> SavedScenario:
    try:
        sc = Scenario.model_validate_json(row["scenario_json"])
    except ValidationError as exc:
        raise InputError(f"the saved scenario {row['name']!r} cannot be read by this version of GPU Hangover "
                         f"({exc.errors()[0].get('msg', 'invalid')}); delete it and save it again") from None
    version = row["inventory_version"]
    return SavedScenario(
        name=row["name"], scenario=sc,
        inventory_version=None if version is None or pd.isna(version) else int(version),
        created_by=row["created_by"] or "", created_at=_ts(row["created_at"]), updated_at=_ts(row["updated_at"]),
        note=row["note"] or "",
    )


def _ts(value) -> dt.datetime | None:
    if value is None or (not isinstance(value, dt.datetime) and pd.isna(value)):
        return None
    return pd.Timestamp(value).to_pydatetime()


NOTE_MAX_CHARS = 2000


def check_note(note: object) -> str:
    """A scenario's note, stripped; longer than NOTE_MAX_CHARS is one clear InputError naming the field."""
    text = str(note if note is not None else "").strip()
    if len(text) > NOTE_MAX_CHARS:
        raise InputError(f"note: {len(text):,} characters long; the limit is {NOTE_MAX_CHARS:,}")
    return text


def save_scenario(store, name: str, scenario: Scenario, *, inventory_version: int | None | object = _LATEST,
                  created_by: str = "", note: str = "", replace: bool = False) -> SavedScenario:
    """Save a scenario under a unique name (any case); by default on the latest committed inventory version.

    A name already saved is refused unless `replace`, which keeps the original
    creation time and records the new update time.
    """
    from core.store.scenarios import insert_scenario, latest_inventory_version

    clean = check_name(name)
    note = check_note(note)
    version = (latest_inventory_version(store)[0] if inventory_version is _LATEST
               else cast("int | None", inventory_version))  # anything but the sentinel is the caller's int | None
    insert_scenario(store, name=clean, scenario_json=scenario.model_dump_json(),
                    inventory_version=version, created_by=created_by, note=note, replace=replace)
    return load_scenario(store, clean)


def list_scenarios(store) -> list[SavedScenario]:
    """Every saved scenario, by name."""
    from core.store.scenarios import scenario_rows

    return [_from_row(r) for r in scenario_rows(store).to_dict("records")]


def load_scenario(store, name: str) -> SavedScenario:
    """One saved scenario by name (any case); an unknown name is an InputError listing the saved ones."""
    from core.store.scenarios import scenario_row

    return _from_row(scenario_row(store, str(name).strip()))


def rename_scenario(store, old: str, new: str) -> str:
    """Rename a saved scenario; returns a sentence saying what happened."""
    from core.store.scenarios import rename_scenario_row

    clean = check_name(new)
    was = rename_scenario_row(store, str(old).strip(), clean)
    return f"renamed {was!r} to {clean!r}"


def delete_scenario(store, name: str) -> str:
    """Delete a saved scenario; returns a sentence saying what happened."""
    from core.store.scenarios import delete_scenario_row

    return f"deleted {delete_scenario_row(store, str(name).strip())!r}"


# --------------------------------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------------------------------

MIN_COMPARED, MAX_COMPARED = 2, 4
NOT_IN_INVENTORY = "(not in this inventory)"

# (key, label, format kind as core.presentation.report.numbers names it): the rows of the figures table.
FIGURE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("cash_bill_usd_per_month", "Cash bill per month", "usd"),
    ("served", "Workloads served", "text"),
    ("bill_with_unserved_usd_per_month", "Cash bill with unserved work priced (estimate)", "usd"),
    ("nodes_needed", "Nodes needed", "int"),
    ("owned_nodes", "Nodes owned", "int"),
    ("idle_usd_per_month", "Idle cost per month", "usd"),
    ("utilization", "Utilization", "pct"),
    ("api_usd_per_month", "API spend per month", "usd"),
    ("verdicts_changed", "Workloads routed differently from the first", "int"),
)


@dataclass(frozen=True)
class ScenarioFigures:
    """One compared scenario's headline figures."""

    name: str
    settings: str  # scenario_words()
    inventory: str  # 'version 3', 'bundled sample'
    cash_bill_usd_per_month: float
    nodes_needed: int
    owned_nodes: int
    idle_usd_per_month: float
    utilization: float
    api_usd_per_month: float
    verdicts_changed: int  # workloads whose route differs from the first scenario's
    workloads_served: int = 0
    workloads_total: int = 0
    # The unserved work at its cheapest route after the smallest change (core.decision.unserved), added to the
    # cash bill: the figure two scenarios compare like for like when one serves less.
    bill_with_unserved_usd_per_month: float = 0.0

    @property
    def served(self) -> str:
        """'5 of 7'."""
        return f"{self.workloads_served:,} of {self.workloads_total:,}"


@dataclass(frozen=True)
class Comparison:
    """2-4 scenarios side by side.

    `verdicts` has one row per workload (in any compared inventory): workload_id,
    name, then per scenario i `route_id_i`, `route_i`, `hosting_i`, `monthly_usd_i`,
    and `changed` (True when the route differs between any two scenarios, or the
    workload is missing from one). Rows with a change come first.
    """

    scenarios: tuple[ScenarioFigures, ...]
    verdicts: pd.DataFrame

    @property
    def names(self) -> list[str]:
        """The scenario names, in the order compared."""
        return [s.name for s in self.scenarios]

    @property
    def changed_count(self) -> int:
        """Workloads whose verdict is not the same in every scenario."""
        return int(self.verdicts["changed"].sum())

    def figures_frame(self) -> pd.DataFrame:
        """Rows: the figures (FIGURE_ROWS); columns: key, label, kind, then one column per scenario name."""
        rows = []
        for key, label, kind in FIGURE_ROWS:
            # The first scenario is the baseline of the change count: it has no count of its own.
            rows.append({"key": key, "label": label, "kind": kind,
                         **{s.name: (None if key == "verdicts_changed" and i == 0 else getattr(s, key))
                            for i, s in enumerate(self.scenarios)}})
        return pd.DataFrame(rows)

    def bill_lines(self) -> list[str]:
        """Each scenario's bill against the first's, with what each serves in the same line: a scenario that
        serves less is never called cheaper without it ('Tighter: $25,528 a month, $48,443 (65%) less than Base
        — but serves 3 of 7 workloads against 5; with unserved work priced, $...')."""
        first = self.scenarios[0]
        out = []
        for s in self.scenarios[1:]:
            out.append(bill_line(s, first))
        return out

    def verdicts_table(self, *, only_changed: bool = False) -> pd.DataFrame:
        """workload_id, name, the route in each scenario (columns named after them), changed."""
        v = self.verdicts[self.verdicts["changed"]] if only_changed else self.verdicts
        out = v[["workload_id", "name"]].copy()
        for i, s in enumerate(self.scenarios):
            out[s.name] = v[f"route_{i}"].to_numpy()
        for i, s in enumerate(self.scenarios):
            out[f"{s.name} $/month"] = v[f"monthly_usd_{i}"].to_numpy()
        out["changed"] = v["changed"].to_numpy()
        return out.reset_index(drop=True)


def bill_line(s: ScenarioFigures, first: ScenarioFigures) -> str:
    """One scenario's cash bill against the first's, the served counts and the priced comparison in one line."""
    from core.format import money, percent

    diff = s.cash_bill_usd_per_month - first.cash_bill_usd_per_month
    rel = abs(diff) / first.cash_bill_usd_per_month if first.cash_bill_usd_per_month else None
    how = "the same as" if abs(diff) < 0.5 else ("less than" if diff < 0 else "more than")
    line = f"{s.name}: {money(s.cash_bill_usd_per_month)} a month"
    if how != "the same as":
        line += f", {money(abs(diff))}" + (f" ({percent(rel)})" if rel is not None else "")
    line += f" {how} {first.name}"
    served_both = f"serves {s.served} workloads, {first.name} {first.served}"
    if s.workloads_served == first.workloads_served and s.workloads_total == first.workloads_total:
        return f"{line}; both serve {s.served} workloads."
    priced = s.bill_with_unserved_usd_per_month - first.bill_with_unserved_usd_per_month
    word = "less" if priced < -0.5 else ("more" if priced > 0.5 else "the same")
    tail = (f"with unserved work priced, {money(abs(priced))} {word}" if word != "the same"
            else "with unserved work priced, the same")
    lead = " — but it " if (diff < 0) == (s.workloads_served < first.workloads_served) else " — it "
    return f"{line}{lead}{served_both}; {tail} ({money(s.bill_with_unserved_usd_per_month)} against " \
           f"{money(first.bill_with_unserved_usd_per_month)}, estimates)."


def compare_evaluations(named: Sequence[tuple[str, Evaluation]], *, settings: Sequence[str] | None = None,
                        table: Callable[[Evaluation], pd.DataFrame] | None = None,
                        unserved_usd: Callable[[Evaluation], float] | None = None) -> Comparison:
    """Set evaluations side by side (pure: no store). `named` is (name, Evaluation) in the order to show.

    Uses only the evaluation contract: the fleet record's total_monthly_usd (the cash
    bill), nodes_needed, owned_nodes, idle_usd_per_month, utilization,
    api_monthly_usd and inventory; the routing table's (`table`, by default
    contract.verdicts_frame) workload_id, route_id, route, hosting, monthly_usd; the fleet's served counts, and
    its unserved work priced (`unserved_usd`, by default core.decision.unserved.plan_unserved's total).
    """
    from core.decision.contract import verdicts_frame
    from core.decision.unserved import plan_unserved

    read_table = table or verdicts_frame
    priced = unserved_usd or (lambda ev: plan_unserved(ev).priced_usd_per_month)
    if not MIN_COMPARED <= len(named) <= MAX_COMPARED:
        raise InputError(f"compare {MIN_COMPARED} to {MAX_COMPARED} scenarios (got {len(named)})")
    parts: list[pd.DataFrame] = []
    for i, (_, ev) in enumerate(named):
        vf = read_table(ev)
        part = pd.DataFrame({
            "workload_id": vf["workload_id"].astype(str).to_numpy(),
            f"name_{i}": vf["name"].to_numpy() if "name" in vf else vf["workload_id"].to_numpy(),
            f"route_id_{i}": vf["route_id"].astype(str).to_numpy(),
            f"route_{i}": vf["route"].astype(str).to_numpy(),
            f"hosting_{i}": vf["hosting"].astype(str).to_numpy(),
            f"monthly_usd_{i}": vf["monthly_usd"].to_numpy(dtype=float),
        })
        parts.append(part)
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part, on="workload_id", how="outer", sort=False)
    n = len(named)
    # Column against column, never row by row (inventories reach 100k+ workloads).
    missing = np.column_stack([merged[f"route_id_{i}"].isna().to_numpy() for i in range(n)])
    first = merged["route_id_0"].to_numpy(dtype=object)
    changed = missing.any(axis=1)
    for i in range(1, n):
        changed |= merged[f"route_id_{i}"].to_numpy(dtype=object) != first
    merged["changed"] = changed
    for i in range(n):
        merged.loc[missing[:, i], f"route_{i}"] = NOT_IN_INVENTORY
    name = merged["name_0"].copy()
    for i in range(1, n):  # the first scenario that has the workload names it
        name = name.fillna(merged[f"name_{i}"])
    merged["name"] = name
    merged = merged.drop(columns=[f"name_{i}" for i in range(n)])
    merged = merged.sort_values(["changed", "workload_id"], ascending=[False, True], kind="stable")
    cols = ["workload_id", "name"] + [f"{k}_{i}" for i in range(n) for k in ("route_id", "route", "hosting",
                                                                              "monthly_usd")] + ["changed"]
    merged = merged[cols].reset_index(drop=True)
    first = merged["route_id_0"]
    figures = []
    for i, (name, ev) in enumerate(named):
        f = ev.fleet
        differs = (merged[f"route_id_{i}"] != first) & (merged[f"route_id_{i}"].notna() | first.notna())
        figures.append(ScenarioFigures(
            name=name,
            settings=settings[i] if settings else scenario_words(ev.scenario),
            inventory=str(f.inventory or ""),
            cash_bill_usd_per_month=float(f.total_monthly_usd),
            nodes_needed=int(f.nodes_needed),
            owned_nodes=int(f.owned_nodes),
            idle_usd_per_month=float(f.idle_usd_per_month),
            utilization=float(f.utilization),
            api_usd_per_month=float(f.api_monthly_usd),
            verdicts_changed=int(differs.sum()) if i else 0,
            workloads_served=int(f.workloads_served), workloads_total=int(f.workloads_total),
            bill_with_unserved_usd_per_month=float(f.total_monthly_usd) + priced(ev),
        ))
    return Comparison(scenarios=tuple(figures), verdicts=merged)


def _unique_names(names: Iterable[str]) -> list[str]:
    out, seen = [], set()
    for n in names:
        key = str(n).strip().casefold()
        if key in seen:
            raise InputError(f"scenario {str(n).strip()!r} is named twice; compare different scenarios")
        seen.add(key)
        out.append(str(n).strip())
    return out


def compare_scenarios(store, names: Sequence[str], *, catalog=None, current_inventory: bool = False,
                      evaluate: Callable | None = None) -> Comparison:
    """Load 2-4 saved scenarios, evaluate each, and set them side by side.

    Each is evaluated on the inventory version it was saved with (the bundled
    sample when it was saved on none), so a comparison reproduces what was
    saved; `current_inventory` evaluates them all on the latest inventory instead.
    """
    from core.catalog import Catalog
    from core.service import evaluate_store

    clean = _unique_names(names)
    if not MIN_COMPARED <= len(clean) <= MAX_COMPARED:
        raise InputError(f"compare {MIN_COMPARED} to {MAX_COMPARED} saved scenarios (got {len(clean)})")
    saved = [load_scenario(store, n) for n in clean]
    catalog = catalog or Catalog.from_store(store)
    run = evaluate or evaluate_store
    named = []
    for s in saved:
        if current_inventory:
            ev = run(store, s.scenario, catalog=catalog)
        elif s.inventory_version is None:
            ev = run(store, s.scenario, workloads=_sample_frame(), catalog=catalog)
            ev = ev.with_source("bundled sample", ev.fleet.measured)
        else:
            ev = run(store, s.scenario, version=s.inventory_version, catalog=catalog)
        named.append((s.name, ev))
    return compare_evaluations(named)


def _sample_frame() -> pd.DataFrame:
    from core.inventory import read_inventory
    from core.store.seed import sample_workloads_path

    report = read_inventory(sample_workloads_path())
    if not report.ok:
        raise InputError("the bundled sample inventory is invalid:\n" + "\n".join(report.error_lines()))
    return report.frame


# --------------------------------------------------------------------------------------------------------------
# whose figures, file names, prices the scenario lacks
# --------------------------------------------------------------------------------------------------------------

SAMPLE_LABEL = "Bundled sample inventory (a demo bank)"


def inventory_provenance(store) -> str:
    """Whose figures these are: the bundled sample, or 'Your inventory v3, uploaded by … on …'."""
    from core.store.scenarios import latest_inventory_version

    version, by, when, file_name = latest_inventory_version(store)
    if version is None:
        return f"{SAMPLE_LABEL}: no inventory of yours is uploaded yet"
    who = "in the dashboard" if by in ("", "dashboard") else f"by {by}"
    when_text = f" on {pd.Timestamp(when):%Y-%m-%d %H:%M}" if when is not None else ""
    source = f" from {file_name}" if file_name else ""
    return f"Your inventory v{version}, uploaded {who}{when_text}{source}"


def _slug(text: str) -> str:
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def download_stem(scenario: Scenario, inventory: str, *, saved_name: str | None = None) -> str:
    """A file name stem that differs per scenario, e.g. 'gpu-hangover_plan-a_version-3_3-nodes_savings-3y_full'.

    Pricing option, cost basis, node count and GPU are always in it, so two
    exports of different scenarios never download under the same name.
    """
    parts = ["gpu-hangover"]
    if saved_name:
        parts.append(_slug(saved_name) or "scenario")
    parts += [_slug(inventory) or "inventory", _slug(scenario.gpu), f"{scenario.fleet_nodes}-nodes",
              _slug(scenario.pricing_option.value), _slug(scenario.cost_basis.value)]
    if scenario.node_usd_per_hour:
        parts.append(f"{scenario.node_usd_per_hour:g}-usd-per-node-hour".replace(".", "p"))
    return "_".join(parts)


def comparison_stem(names: Sequence[str]) -> str:
    """File name stem of a comparison: 'gpu-hangover_compare_plan-a_vs_plan-b'."""
    return "gpu-hangover_compare_" + "_vs_".join(_slug(n) or "scenario" for n in names)


def price_problem(catalog, scenario: Scenario) -> str | None:
    """Why the scenario has no node price (and how to fix it), or None when it has one."""
    from core.decision.economics import node_rate

    try:
        node_rate(scenario, list(catalog.node_prices), list(catalog.owned_hardware))
    except InputError:
        option = PRICING_LABELS.get(scenario.pricing_option.value, scenario.pricing_option.value)
        have = sorted({p.pricing_option.value for p in catalog.node_prices
                       if p.gpu.lower() == scenario.gpu.lower()})
        fixes = [f"choose {' or '.join(PRICING_LABELS.get(h, h) for h in have)}"] if have else []
        fixes += ["enter a node price override", "add a dated price on the Pricing page"]
        return (f"No {option.lower()} price for {scenario.gpu} in the dated price snapshot. "
                f"The answer pages need one: {', '.join(fixes[:-1])}, or {fixes[-1]}.")
    return None
