"""Shared dashboard plumbing: the store, session defaults, the scenario sidebar and the cached evaluation."""

from __future__ import annotations

import streamlit as st

from core.catalog import Catalog
from core.decision.engine import Evaluation
from core.errors import HangoverError
from core.models import CostBasis, PricingOption, Scenario
from core.service import OWNED_INPUTS, evaluate_store, make_scenario, owned_hardware_defaults
from core.store import Store, open_store

# Scenario widget keys live in session state under this prefix; every page reads the same values.
SCENARIO_DEFAULTS = {
    "sc_gpu": "H100 SXM",
    "sc_fleet_nodes": 1,
    "sc_pricing": PricingOption.SAVINGS_1Y.value,
    "sc_cost_basis": CostBasis.FULL.value,
    "sc_node_usd_per_hour": 0.0,  # 0 = use the dated price snapshot
    "sc_api_price_scale": 1.0,
    "sc_sla_scale": 1.0,
    "sc_max_fallback_share": 0.20,
}


@st.cache_resource(show_spinner=False)
def store() -> Store:
    """The process-wide store; core takes a cursor per unit of work, so sessions (threads) can share it."""
    return open_store()


def data_version() -> int:
    """Bumped whenever a page writes to the store, so cached reads refresh."""
    return st.session_state.setdefault("data_version", 0)


def bump_data_version() -> None:
    """Call after any write (upload, override, import)."""
    st.session_state["data_version"] = data_version() + 1
    st.cache_data.clear()


def init_state() -> None:
    """Session defaults, set once per session (STYLE.md: setdefault in the entrypoint)."""
    for key, value in SCENARIO_DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.session_state.setdefault("data_version", 0)
    for key, value in owned_hardware_defaults(catalog(0), SCENARIO_DEFAULTS["sc_gpu"]).items():
        st.session_state.setdefault(f"sc_own_{key}", value)


@st.cache_data(show_spinner=False)
def catalog(_version: int) -> Catalog:
    """Reference data, re-read when the data version changes."""
    return Catalog.from_store(store())


def scenario() -> Scenario:
    """The scenario the sidebar widgets describe."""
    s = st.session_state
    return make_scenario(
        gpu=s["sc_gpu"],
        fleet_nodes=int(s["sc_fleet_nodes"]),
        pricing_option=s["sc_pricing"],
        cost_basis=s["sc_cost_basis"],
        node_usd_per_hour=float(s["sc_node_usd_per_hour"]) or None,
        api_price_scale=float(s["sc_api_price_scale"]),
        sla_scale=float(s["sc_sla_scale"]),
        max_fallback_share=float(s["sc_max_fallback_share"]),
        owned_inputs={k: float(s[f"sc_own_{k}"]) for k in OWNED_INPUTS if f"sc_own_{k}" in s} or None,
    )


@st.cache_data(show_spinner="Routing every workload…", max_entries=32)
def _evaluate(scenario_json: str, _version: int, inventory_version: int | None) -> Evaluation:
    sc = Scenario.model_validate_json(scenario_json)
    return evaluate_store(store(), sc, version=inventory_version, catalog=catalog(_version))


def evaluation() -> Evaluation | None:
    """The evaluation for the current scenario (cached on the scenario's value); None with a message on error."""
    try:
        sc = scenario()
        return _evaluate(sc.model_dump_json(), data_version(), st.session_state.get("inventory_version"))
    except HangoverError as exc:
        st.error(str(exc))
        return None


def scenario_sidebar() -> None:
    """Scenario controls shared by every page (widgets only; values live in session state)."""
    cat = catalog(data_version())
    with st.sidebar:
        st.header("Scenario")
        st.selectbox("GPU", [g.name for g in cat.gpus], key="sc_gpu")
        st.number_input("Owned or reserved nodes", min_value=0, max_value=10_000, step=1, key="sc_fleet_nodes")
        st.selectbox("Pricing", [o.value for o in PricingOption], key="sc_pricing",
                     format_func=lambda v: {"on_demand": "On-demand", "savings_1y": "1-year savings plan",
                                            "savings_3y": "3-year savings plan", "owned": "Owned hardware"}[v])
        if st.session_state["sc_pricing"] == PricingOption.OWNED.value:
            with st.expander("Owned hardware: your figures", expanded=True):
                st.caption("Prefilled with the seed estimate (an assumption): enter your own.")
                st.number_input("Capex per node, $", min_value=1.0, step=10_000.0, format="%.0f",
                                key="sc_own_capex_usd_per_node")
                st.number_input("Depreciation, years", min_value=0.5, max_value=15.0, step=0.5,
                                key="sc_own_depreciation_years")
                st.number_input("Cost of capital, per year", min_value=0.0, max_value=1.0, step=0.01,
                                format="%.2f", key="sc_own_cost_of_capital_rate")
                st.number_input("Power per node, kW", min_value=0.1, step=0.5, key="sc_own_kw_per_node")
                st.number_input("PUE", min_value=1.0, max_value=3.0, step=0.05, key="sc_own_pue")
                st.number_input("Electricity, $/kWh", min_value=0.0, step=0.01, format="%.3f",
                                key="sc_own_usd_per_kwh")
                st.number_input("Support and colocation, $/year per node", min_value=0.0, step=1_000.0,
                                format="%.0f", key="sc_own_support_usd_per_year")
        st.radio("Cost basis", [c.value for c in CostBasis], key="sc_cost_basis", horizontal=True,
                 format_func=lambda v: "Full allocation" if v == "full" else "Marginal",
                 help="Full: every hour of a node is paid for, idle or not. Marginal: hardware already paid for.")
        st.number_input("Node price override, $/hour (0 = dated snapshot)", min_value=0.0, step=1.0,
                        key="sc_node_usd_per_hour")
        st.slider("API price scale", 0.25, 4.0, step=0.25, key="sc_api_price_scale",
                  help="Multiplies every API list price.")
        st.slider("SLA scale", 0.25, 4.0, step=0.25, key="sc_sla_scale",
                  help="Multiplies every workload's latency target (below 1 = tighter).")
        st.slider("Max fallback share", 0.0, 0.5, step=0.05, key="sc_max_fallback_share",
                  help="Largest share of outputs a cheaper route may escalate to a stronger one to meet a quality floor.")
