"""Money: effective $/token, node $/hour by pricing option and cost basis, API cost, break-even, idle cost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.errors import InputError, NoNodePrice
from core.models import (
    HOURS_PER_MONTH,
    ApiPrice,
    CostBasis,
    NodePrice,
    OwnedHardware,
    PricingOption,
    Scenario,
)

DAYS_PER_MONTH = 365.0 / 12.0


def effective_usd_per_mtok(usd_per_hour, tokens_per_s, utilization):
    """Owned $ per million tokens = $/hour / (tokens/s x 3600 x utilization) x 1e6.

    Example: $33/hour at 5,000 tok/s and full utilization is
    33 / (5,000 x 3,600) x 1e6 = $1.83 per million tokens.
    """
    tps = np.asarray(tokens_per_s, dtype=float)
    util = np.asarray(utilization, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(usd_per_hour, dtype=float) / (tps * 3600.0 * util) * 1e6
    out = np.where((tps > 0) & (util > 0), out, np.inf)
    return float(out) if out.ndim == 0 else out


def api_usd_per_request(api: ApiPrice, input_tokens, output_tokens, cached_input_share=0.0, scale: float = 1.0):
    """API cost of one request: input x $/M in (cached share at the cached price) + output x (1 + hidden) x $/M out.

    Reasoning models bill their hidden thinking tokens as output: `hidden_tokens_per_output_token`
    visible-output multiples of them (0 for other models).
    """
    n_in = np.asarray(input_tokens, dtype=float)
    cached = np.nan_to_num(np.asarray(cached_input_share, dtype=float), nan=0.0)
    cached_price = api.usd_per_mtok_cached_in if api.usd_per_mtok_cached_in is not None else api.usd_per_mtok_in
    usd = (
        n_in * (1.0 - cached) * api.usd_per_mtok_in
        + n_in * cached * cached_price
        + np.asarray(output_tokens, dtype=float) * (1.0 + api.hidden_tokens_per_output_token) * api.usd_per_mtok_out
    ) / 1e6
    return usd * scale


def break_even_utilization(usd_per_hour: float, tokens_per_s: float, api_usd_per_mtok: float) -> float:
    """Utilization at which owned $/token equals the API's: u = $/hour / (tok/s x 3600 x API $/tok).

    Above 1 means the owned node can never match the API at that throughput.
    """
    if tokens_per_s <= 0 or api_usd_per_mtok <= 0:
        return float("inf")
    return usd_per_hour / (tokens_per_s * 3600.0 * api_usd_per_mtok / 1e6)


def idle_usd(gpu_hours: float, usd_per_gpu_hour: float, utilization: float) -> float:
    """Idle cost = owned GPU-hours x $/GPU-hour x (1 - utilization)."""
    return gpu_hours * usd_per_gpu_hour * (1.0 - min(max(utilization, 0.0), 1.0))


@dataclass(frozen=True)
class NodeRate:
    """The $/node-hour the scenario uses, and where it came from."""

    usd_per_node_hour: float  # what the engine charges per owned node-hour under the cost basis
    full_usd_per_node_hour: float  # full allocation (for new nodes, always)
    gpus_per_node: int
    label: str
    source: str
    as_of: str
    confidence: str
    basis_note: str
    fleet_usd_per_node_hour: float | None = None  # the owned fleet's own rate, when routes are priced at a blend

    @property
    def owned_fleet_usd_per_node_hour(self) -> float:
        """What one already-owned node costs per hour under the scenario's basis."""
        return self.usd_per_node_hour if self.fleet_usd_per_node_hour is None else self.fleet_usd_per_node_hour

    @property
    def usd_per_gpu_hour(self) -> float:
        """Per GPU-hour under the scenario's cost basis."""
        return self.usd_per_node_hour / self.gpus_per_node


def node_rate(scenario: Scenario, node_prices: list[NodePrice], owned: list[OwnedHardware]) -> NodeRate:
    """Resolve the scenario's node price.

    Order: an explicit override; owned hardware (full = capital + power + ops,
    marginal = power + ops); else the rented price for the GPU and option,
    preferring the scenario's provider, then AWS, then the cheapest. Under the
    marginal basis a reserved (savings-plan) node is already committed, so its
    marginal cost is 0; an on-demand node can be released, so it stays at full.
    """
    if scenario.node_usd_per_hour is not None:
        rate = scenario.node_usd_per_hour
        return NodeRate(rate, rate, scenario.gpus_per_node, "your override", "scenario override", "", "user",
                        "node price entered by you")
    if scenario.pricing_option is PricingOption.OWNED:
        hw = scenario.owned_hardware or next((h for h in owned if h.gpu == scenario.gpu), None)
        if hw is None:
            raise InputError(f"no owned-hardware figures for GPU {scenario.gpu!r}: enter capex, power and PUE")
        full = hw.full_usd_per_hour
        marginal = hw.marginal_usd_per_hour
        use = full if scenario.cost_basis is CostBasis.FULL else marginal
        note = ("full: depreciation + cost of capital + power + support" if scenario.cost_basis is CostBasis.FULL
                else "marginal: power x PUE x $/kWh + support only (hardware already paid for)")
        return NodeRate(use, full, hw.gpus_per_node, hw.name, hw.source, hw.as_of.isoformat(), hw.confidence.value, note)
    rows = [p for p in node_prices if p.gpu == scenario.gpu and p.pricing_option == scenario.pricing_option]
    if not rows:
        options = sorted({p.pricing_option.value for p in node_prices if p.gpu == scenario.gpu})
        raise NoNodePrice(
            f"no {scenario.pricing_option.value} node price for GPU {scenario.gpu!r}"
            + (f"; available options: {', '.join(options)}" if options else "; enter a node price override"),
            scenario.gpu, scenario.pricing_option.value, tuple(options))
    preferred = [p for p in rows if p.provider.lower() == (scenario.node_provider or "aws").lower()]
    price = min(preferred or rows, key=lambda p: p.usd_per_node_hour)
    full = price.usd_per_node_hour
    if scenario.cost_basis is CostBasis.MARGINAL and scenario.pricing_option is not PricingOption.ON_DEMAND:
        use, note = 0.0, "marginal: reserved capacity is already committed, so an extra token costs nothing more"
    else:
        use, note = full, "full allocation: every hour of the node is paid for, idle or not"
    return NodeRate(use, full, price.gpus_per_node, f"{price.provider} {price.instance} ({price.pricing_option.value})",
                    price.source, price.as_of.isoformat(), price.confidence.value, note)


@dataclass(frozen=True, slots=True)
class CashBill:
    """What is paid a month for a plan: every node it holds (at least those owned) at the full node price,
    new ones bought whole, API spend and licence fees; the same under either cost basis (the basis changes only
    how the bill is attributed to workloads).

    owned_usd + new_nodes_usd is nodes_usd up to float rounding; total is nodes_usd + api_usd + licence_usd,
    the figure the plan search minimises.
    """

    owned_usd: float  # the owned nodes, paid whatever runs on them
    new_nodes_usd: float  # nodes bought beyond those owned
    nodes_usd: float  # max(owned, needed) nodes
    api_usd: float
    licence_usd: float
    total: float

    def in_cents(self) -> CashBill:
        """The bill as a report prints it: each part in cents, and the total their sum, so the parts add up."""
        owned, new = round(self.owned_usd, 2), round(self.new_nodes_usd, 2)
        api, licence = round(float(self.api_usd), 2), round(float(self.licence_usd), 2)
        return CashBill(owned, new, round(owned + new, 2), api, licence, round(owned + new + api + licence, 2))


def cash_bill(owned_nodes: int, nodes_needed: int, full_usd_per_node_hour: float, api_usd: float,
              licence_usd: float) -> CashBill:
    """The monthly cash bill of a plan needing `nodes_needed` nodes with `owned_nodes` owned (the one rule).

    Example: 1 owned, 3 needed at $33.02/node-hour: nodes 3 x 33.02 x 730 = $72,313.80 (owned 24,104.60 + new
    48,209.20), plus API spend and licences.
    """
    # Each part as (nodes x $/node-hour) x hours, the order the search prices in, so the totals agree to the bit.
    nodes_usd = max(owned_nodes, nodes_needed) * full_usd_per_node_hour * HOURS_PER_MONTH
    return CashBill(owned_usd=owned_nodes * full_usd_per_node_hour * HOURS_PER_MONTH,
                    new_nodes_usd=max(nodes_needed - owned_nodes, 0) * full_usd_per_node_hour * HOURS_PER_MONTH,
                    nodes_usd=nodes_usd, api_usd=api_usd, licence_usd=licence_usd,
                    total=nodes_usd + api_usd + licence_usd)


def monthly_from_daily(usd_per_day):
    """Daily $ to monthly (365/12 days)."""
    return np.asarray(usd_per_day, dtype=float) * DAYS_PER_MONTH


__all__ = [
    "DAYS_PER_MONTH",
    "HOURS_PER_MONTH",
    "CashBill",
    "NodeRate",
    "api_usd_per_request",
    "break_even_utilization",
    "cash_bill",
    "effective_usd_per_mtok",
    "idle_usd",
    "monthly_from_daily",
    "node_rate",
    "to_cents",
]


def to_cents(x: np.ndarray) -> np.ndarray:
    """x rounded to cents so that the sum of the rounded values is the rounded sum (largest remainder: the rows
    with the largest sub-cent parts round up, ties by row)."""
    cents = np.asarray(x, dtype=float) * 100.0
    ok = np.isfinite(cents)
    low = np.floor(np.where(ok, cents, 0.0))
    up = int(round(float(cents[ok].sum()) - float(low.sum())))
    if up > 0:
        rest = np.where(ok, cents - low, -np.inf)
        low[np.argsort(-rest, kind="stable")[:up]] += 1.0
    return np.where(ok, low / 100.0, x)
