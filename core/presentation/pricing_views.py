"""Pricing page views: dated price tables with staleness, owned-hardware TCO, break-even against APIs, user overrides."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from pydantic import ValidationError

from core.decision.economics import (
    NodeRate,
    api_usd_per_request,
    break_even_utilization,
    effective_usd_per_mtok,
    node_rate,
)
from core.decision.engine import CONCURRENCY_GRID, TP_OPTIONS
from core.errors import InputError, describe_validation_error
from core.models import (
    ApiPrice,
    Benchmark,
    Confidence,
    GpuSpec,
    NodePrice,
    OwnedHardware,
    Scenario,
    ServingStack,
    Sourced,
)
from core.performance import physics
from core.performance.calibration import performance_curve
from core.presentation.format import integer, money, percent, plain

# A snapshot older than this is flagged: list prices and discounts move within half a year.
STALE_AFTER_DAYS = 180
STALE_MARK = "⚠ stale"

S = TypeVar("S", bound=Sourced)


_OPTION_LABELS = {"on_demand": "on-demand", "savings_1y": "1-year plan", "savings_3y": "3-year plan", "owned": "owned"}


def option_words(option: str) -> str:
    """A pricing option id in words, as the sidebar says it: 'savings_1y' -> '1-year savings plan'."""
    from core.scenarios import PRICING_LABELS

    words = PRICING_LABELS.get(option, option)
    return words if option == "on_demand" else words[:1].lower() + words[1:]


def node_rate_label(rate) -> str:
    """A node price's name in words: 'AWS p5.48xlarge (1-year savings plan)', never '(savings_1y)'.

    Takes the NodeRate, or its label as text.
    """
    label = rate if isinstance(rate, str) else rate.label
    for option in _OPTION_LABELS:
        label = label.replace(f"({option})", f"({option_words(option)})")
    return label


# -- staleness ---------------------------------------------------------------------------


def age_days(as_of: Iterable[dt.date], today: dt.date) -> np.ndarray:
    """Days between each `as_of` and `today` (negative for a date in the future)."""
    dates = pd.to_datetime(pd.Series(list(as_of), dtype=object))
    return (pd.Timestamp(today) - dates).dt.days.to_numpy(dtype=np.int64)


def stale_marks(as_of: Iterable[dt.date], today: dt.date, limit_days: int = STALE_AFTER_DAYS) -> list[str]:
    """'⚠ stale' for figures older than `limit_days`, '' otherwise."""
    return [STALE_MARK if d > limit_days else "" for d in age_days(as_of, today)]


def _sourced_columns(rows: Sequence[Sourced], today: dt.date) -> dict[str, object]:
    as_of = [r.as_of for r in rows]
    return {
        "as_of": as_of,
        "age_days": age_days(as_of, today) if rows else np.array([], dtype=np.int64),
        "stale": stale_marks(as_of, today) if rows else [],
        # The date with its stale mark, one column: the tables fit the page at 1280 px (issue 14).
        "dated": [f"{d.isoformat()} ⚠" if m else d.isoformat() for d, m in zip(as_of, stale_marks(as_of, today),
                                                                                  strict=True)] if rows else [],
        "source": [r.source for r in rows],
        "confidence": [r.confidence.value for r in rows],
        "note": [r.note or "" for r in rows],
    }


# -- tables ------------------------------------------------------------------------------


def node_price_table(prices: Sequence[NodePrice], today: dt.date, first_gpu: str | None = None) -> pd.DataFrame:
    """One row per node price snapshot with $/GPU-hour, age and a stale flag; `first_gpu`'s rows first, cheapest first."""
    df = pd.DataFrame({
        "gpu": [p.gpu for p in prices],
        "provider": [p.provider for p in prices],
        "instance": [p.instance for p in prices],
        "pricing_option": [p.pricing_option.value for p in prices],
        "option": [option_words(p.pricing_option.value) for p in prices],
        "gpus_per_node": [p.gpus_per_node for p in prices],
        "usd_per_node_hour": [p.usd_per_node_hour for p in prices],
        "usd_per_gpu_hour": [p.usd_per_gpu_hour for p in prices],
        "region": [p.region for p in prices],
        **_sourced_columns(prices, today),
    })
    df["_other"] = df["gpu"] != first_gpu
    return (df.sort_values(["_other", "gpu", "pricing_option", "usd_per_node_hour"], kind="stable")
            .drop(columns="_other").reset_index(drop=True))


def api_price_table(apis: Sequence[ApiPrice], today: dt.date) -> pd.DataFrame:
    """One row per API price snapshot with age and a stale flag; by tier, then output price."""
    tier_order = {"commodity": 0, "mid": 1, "frontier": 2, "diffusion": 3}
    df = pd.DataFrame({
        "provider": [a.provider for a in apis],
        "model": [a.model for a in apis],
        "tier": [a.tier.value for a in apis],
        "usd_per_mtok_in": [a.usd_per_mtok_in for a in apis],
        "usd_per_mtok_cached_in": [a.usd_per_mtok_cached_in for a in apis],
        "usd_per_mtok_out": [a.usd_per_mtok_out for a in apis],
        "ttft_ms": [a.ttft_ms for a in apis],
        "output_tokens_per_s": [a.output_tokens_per_s for a in apis],
        **_sourced_columns(apis, today),
    })
    df["_tier"] = df["tier"].map(tier_order).fillna(9)
    return df.sort_values(["_tier", "usd_per_mtok_out"], kind="stable").drop(columns="_tier").reset_index(drop=True)


def owned_tco_table(owned: Sequence[OwnedHardware], today: dt.date) -> pd.DataFrame:
    """Each owned-hardware row: the capex and power inputs, then full and marginal $/hour per node and per GPU.

    Full = depreciation + cost of capital on the average book value + power x PUE
    + support; marginal = power and support only (core.models.OwnedHardware).
    """
    df = pd.DataFrame({
        "name": [h.name for h in owned],
        "gpu": [h.gpu for h in owned],
        "gpus_per_node": [h.gpus_per_node for h in owned],
        "capex_usd_per_node": [h.capex_usd_per_node for h in owned],
        "depreciation_years": [h.depreciation_years for h in owned],
        "cost_of_capital_rate": [h.cost_of_capital_rate for h in owned],
        "kw_per_node": [h.kw_per_node for h in owned],
        "pue": [h.pue for h in owned],
        "usd_per_kwh": [h.usd_per_kwh for h in owned],
        "support_usd_per_year": [h.support_usd_per_year for h in owned],
        "capital_usd_per_hour": [h.capital_usd_per_hour for h in owned],
        "power_usd_per_hour": [h.power_usd_per_hour for h in owned],
        "marginal_usd_per_hour": [h.marginal_usd_per_hour for h in owned],
        "full_usd_per_hour": [h.full_usd_per_hour for h in owned],
        **_sourced_columns(owned, today),
    })
    df["full_usd_per_gpu_hour"] = df["full_usd_per_hour"] / df["gpus_per_node"]
    df["marginal_usd_per_gpu_hour"] = df["marginal_usd_per_hour"] / df["gpus_per_node"]
    return df


def provenance_lines(rows: Sequence[OwnedHardware], today: dt.date) -> list[str]:
    """One line per row: its name, source, date and confidence, with ⚠ when stale (for sources too long for a table)."""
    marks = stale_marks([r.as_of for r in rows], today) if rows else []
    return [f"{r.name}: {r.source} — as of {r.as_of.isoformat()}, {r.confidence.value}" + (f" {m}" if m else "")
            for r, m in zip(rows, marks, strict=True)]


# -- break-even --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReferenceThroughput:
    """The best output throughput one node reaches with a reference stack, and how it was found."""

    stack_id: str
    stack_name: str
    gpu: str
    gpus_per_node: int
    gpus_per_replica: int
    replicas_per_node: int
    concurrency: float
    tokens_per_s_per_replica: float
    input_tokens: float
    output_tokens: float
    provenance: str

    @property
    def tokens_per_s_per_node(self) -> float:
        """Output tokens/s of the whole node: replicas x tokens/s per replica."""
        return self.replicas_per_node * self.tokens_per_s_per_replica

    def describe(self) -> str:
        """One line a reader can quote."""
        return (
            f"{self.stack_name} on {self.gpu}: {self.replicas_per_node} replica(s) of {self.gpus_per_replica} GPU(s) "
            f"per {self.gpus_per_node}-GPU node at concurrency {plain(self.concurrency)}, "
            f"{integer(self.tokens_per_s_per_node)} output tokens/s per node "
            f"({integer(self.input_tokens)} in / {integer(self.output_tokens)} out tokens; {self.provenance})"
        )


def reference_throughput(
    stack: ServingStack,
    gpu: GpuSpec,
    gpus_per_node: int,
    benchmarks: Iterable[Benchmark],
    input_tokens: float,
    output_tokens: float,
) -> ReferenceThroughput:
    """Best node throughput over the engine's concurrencies and GPUs-per-replica options (calibrated where measured).

    Only concurrencies whose KV cache fits count. Raises InputError when the
    stack fits on no option up to the node's GPU count.
    """
    benchmarks = tuple(benchmarks)
    best: ReferenceThroughput | None = None
    for g in TP_OPTIONS:
        if g > gpus_per_node or physics.max_concurrency(stack, gpu, g, input_tokens + output_tokens) < 1:
            continue
        curve = performance_curve(stack, gpu, g, CONCURRENCY_GRID, input_tokens, output_tokens, benchmarks,
                                  include_measured=False)
        fit = curve[curve["fits"]]
        if fit.empty:
            continue
        row = fit.loc[fit["output_tokens_per_s_total"].idxmax()]
        cand = ReferenceThroughput(
            stack_id=stack.stack_id, stack_name=stack.name, gpu=gpu.name, gpus_per_node=gpus_per_node,
            gpus_per_replica=g, replicas_per_node=gpus_per_node // g, concurrency=float(row["concurrency"]),
            tokens_per_s_per_replica=float(row["output_tokens_per_s_total"]),
            input_tokens=float(input_tokens), output_tokens=float(output_tokens), provenance=str(row["provenance"]),
        )
        if best is None or cand.tokens_per_s_per_node > best.tokens_per_s_per_node:
            best = cand
    if best is None:
        raise InputError(
            f"{stack.stack_id} does not fit on up to {gpus_per_node} x {gpu.name} with "
            f"{integer(input_tokens + output_tokens)} tokens of context; pick a smaller reference stack or another GPU"
        )
    return best


def break_even_table(
    rate: NodeRate,
    ref: ReferenceThroughput,
    apis: Sequence[ApiPrice],
    today: dt.date,
    *,
    cached_input_share: float = 0.0,
    api_price_scale: float = 1.0,
) -> pd.DataFrame:
    """Owned node vs each API for the reference request shape: the utilization where their $/token meet.

    The API's cost of one request (input + output, cached share at the cached
    price) divided by its output tokens gives an all-in $ per million output
    tokens, the unit the owned node's throughput is counted in. Break-even
    utilization u = node $/hour / (node output tok/s x 3,600 x API $/token)
    (core.decision.economics.break_even_utilization); above 100 % the node cannot match
    the API even when busy every hour.
    """
    tps = ref.tokens_per_s_per_node
    per_request = np.array([
        float(api_usd_per_request(a, ref.input_tokens, ref.output_tokens, cached_input_share, api_price_scale))
        for a in apis
    ])
    api_usd_per_mtok = per_request / ref.output_tokens * 1e6
    be = np.array([break_even_utilization(rate.usd_per_node_hour, tps, p) for p in api_usd_per_mtok])
    owned_full_util = float(effective_usd_per_mtok(rate.usd_per_node_hour, tps, 1.0))
    df = pd.DataFrame({
        "provider": [a.provider for a in apis],
        "model": [a.model for a in apis],
        "tier": [a.tier.value for a in apis],
        "api_usd_per_request": per_request,
        "api_usd_per_mtok_out_all_in": api_usd_per_mtok,
        "owned_usd_per_mtok_at_full_use": owned_full_util,
        "break_even_utilization": be,
        "verdict": [_verdict(u) for u in be],
        "as_of": [a.as_of for a in apis],
        "stale": stale_marks([a.as_of for a in apis], today) if apis else [],
        "source": [a.source for a in apis],
    })
    return df.sort_values("break_even_utilization", kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class BreakEven:
    """Everything the break-even section shows: the node rate used, the reference throughput, the table, the words."""

    rate: NodeRate
    ref: ReferenceThroughput
    table: pd.DataFrame
    explanation: str


def break_even_view(catalog, scenario: Scenario, stack_id: str, input_tokens: float, output_tokens: float,
                    today: dt.date) -> BreakEven:
    """Break-even of the scenario's owned node (its price and cost basis) against every API, with a reference stack.

    Raises InputError for an unknown stack, a GPU without a price, or a stack that does not fit the node.
    """
    stacks = {s.stack_id: s for s in catalog.stacks}
    if stack_id not in stacks:
        raise InputError(f"unknown serving stack {stack_id!r}; known: {', '.join(sorted(stacks))}")
    gpu = catalog.gpu(scenario.gpu)
    rate = node_rate(scenario, list(catalog.node_prices), list(catalog.owned_hardware))
    ref = reference_throughput(stacks[stack_id], gpu, rate.gpus_per_node, catalog.benchmarks, input_tokens, output_tokens)
    table = break_even_table(rate, ref, catalog.apis, today, api_price_scale=scenario.api_price_scale)
    dated = f", {rate.as_of}" if rate.as_of else ""
    scale = f" API prices x{plain(scenario.api_price_scale)} (sidebar)." if scenario.api_price_scale != 1 else ""
    explanation = (
        f"Node: {node_rate_label(rate)} at {money(rate.usd_per_node_hour, decimals=2)}/node-hour ({rate.basis_note}; source: {rate.source}"
        f"{dated}, {rate.confidence}). Throughput: {ref.describe()}. At 100 % use the node makes a million output "
        f"tokens for {money(float(effective_usd_per_mtok(rate.usd_per_node_hour, ref.tokens_per_s_per_node, 1.0)))}. "
        f"Break-even utilization = node $/hour ÷ (node tokens/s × 3,600 × API $ per output token, input included at "
        f"the API's list price for {integer(ref.input_tokens)} input tokens per {integer(ref.output_tokens)} output).{scale}"
    )
    return BreakEven(rate, ref, table, explanation)


def _verdict(u: float) -> str:
    if not np.isfinite(u):
        return "no owned throughput: the API always wins"
    if u <= 0:
        return "owned cheaper at any use (the node's hours cost nothing extra on this basis)"
    shown = percent(u) if u >= 0.01 else percent(u, decimals=1)
    if u > 1:
        return f"API cheaper even at 100 % use (needs {shown})"  # short: it fits its column at 1280 px
    return f"owned cheaper above {shown} utilization"


# -- user overrides ----------------------------------------------------------------------


def node_price_label(p: NodePrice) -> str:
    """How a node price is named in the override form."""
    region = f", {p.region}" if p.region else ""
    return (f"{p.provider} {p.instance} ({p.gpu}, {_OPTION_LABELS.get(p.pricing_option.value, p.pricing_option.value)}"
            f"{region}) — {money(p.usd_per_node_hour, decimals=2)}/node-hour, {p.as_of.isoformat()}")


def api_price_label(a: ApiPrice) -> str:
    """How an API price is named in the override form."""
    return (f"{a.provider} {a.model} — {money(a.usd_per_mtok_in)} in / {money(a.usd_per_mtok_out)} out per M tokens, "
            f"{a.as_of.isoformat()}")


def _overridden(base: S, changes: dict[str, object], source: str, today: dt.date, what: str) -> S:
    source = (source or "").strip()
    if not source:
        raise InputError("say where the new price comes from (a quote, a contract, an invoice) in 'Source'")
    was = ", ".join(f"{k} {getattr(base, k)!r}" for k in changes)
    data = base.model_dump()
    data.update(changes)
    data.update(source=source, as_of=today, confidence=Confidence.USER,
                note=f"your override (was {was}, {base.source}, {base.as_of.isoformat()})")
    try:
        return type(base).model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, where=what).replace("\n", "; ")) from None


def node_price_override(base: NodePrice, usd_per_node_hour: float, source: str, today: dt.date) -> NodePrice:
    """A new dated row replacing a node price: your price and source, as of today, confidence 'user'."""
    return _overridden(base, {"usd_per_node_hour": float(usd_per_node_hour)}, source, today, "node price")


def api_price_override(base: ApiPrice, usd_per_mtok_in: float, usd_per_mtok_out: float, source: str,
                       today: dt.date) -> ApiPrice:
    """A new dated row replacing an API price: your input/output prices and source, as of today."""
    return _overridden(base, {"usd_per_mtok_in": float(usd_per_mtok_in), "usd_per_mtok_out": float(usd_per_mtok_out)},
                       source, today, "API price")


def save_override(store, row: NodePrice | ApiPrice) -> str:
    """Append the override as a user row (never replacing the snapshot it supersedes); return a message."""
    table = "node_prices" if isinstance(row, NodePrice) else "api_prices"
    store.add(table, [row], origin="user")
    if isinstance(row, NodePrice):
        what = (f"{row.provider} {row.instance} ({option_words(row.pricing_option.value)}) at "
                f"{money(row.usd_per_node_hour, decimals=2)}/node-hour")
    else:
        what = f"{row.provider} {row.model} at {money(row.usd_per_mtok_in)} in / {money(row.usd_per_mtok_out)} out per M tokens"
    return f"saved {what} as of {row.as_of.isoformat()} (source: {row.source}); the earlier snapshot stays in the store"


__all__ = [
    "STALE_AFTER_DAYS",
    "STALE_MARK",
    "BreakEven",
    "ReferenceThroughput",
    "age_days",
    "api_price_label",
    "api_price_override",
    "api_price_table",
    "break_even_table",
    "break_even_view",
    "node_price_label",
    "node_price_override",
    "node_price_table",
    "owned_tco_table",
    "provenance_lines",
    "reference_throughput",
    "save_override",
    "stale_marks",
]
