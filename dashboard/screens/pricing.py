"""Pricing page: dated node and API price snapshots, staleness, your overrides, owned-hardware TCO, break-even vs APIs."""

import datetime as dt

import streamlit as st

from core.bounds import input_limits
from core.errors import HangoverError
from core.models import REFERENCE_TOKENS, Scenario, Workload
from core.presentation.charts_inputs import break_even_chart, data_key
from core.presentation.format import column_format, input_format
from core.presentation.pricing_views import (
    STALE_AFTER_DAYS,
    api_price_label,
    api_price_override,
    api_price_table,
    break_even_view,
    node_price_label,
    node_price_override,
    node_price_table,
    owned_tco_table,
    provenance_lines,
    save_override,
)
from core.service import set_licence_fee
from dashboard import signin
from dashboard.format import md
from dashboard.state import bump_data_version, catalog, data_version, lacks_price, scenario, store

# Column widths in pixels keep each table inside the ~980 px main column at 1440 px (no sideways scrolling).
MONEY = column_format("usd_2")
PER_MTOK = column_format("usd_3")
SOURCED = {
    "dated": st.column_config.TextColumn("as of", width=105, help=f"⚠ = older than {STALE_AFTER_DAYS} days: check "
                                          "it before you quote it"),
    "as_of": st.column_config.DateColumn("as of", format="YYYY-MM-DD", width=90),
    "stale": st.column_config.TextColumn("stale?", width=68,
                                         help=f"⚠ = older than {STALE_AFTER_DAYS} days: check it before you quote it"),
    "source": st.column_config.TextColumn("source", width=180, help="Where the figure came from"),
    "confidence": st.column_config.TextColumn("confidence", width=82,
                                              help="primary, secondary, unverified, estimate, or user (yours)"),
}


# A resource, not data: the figure is shared as is (unpickling a Plotly figure re-validates it, ~0.1 s+).
# Shared by all sessions, so keyed on the data's content (data_key), not on a session's data version.
@st.cache_resource(show_spinner=False, max_entries=16)
def _break_even(scenario_json: str, key: int, stack_id: str, n_in: float, n_out: float, today: str, _cat):
    """The break-even view and its chart, per scenario value, reference data and reference stack."""
    be = break_even_view(_cat, Scenario.model_validate_json(scenario_json), stack_id, n_in, n_out,
                         dt.date.fromisoformat(today))
    return be, break_even_chart(be.table)


today = dt.date.today()
cat = catalog(data_version())

st.title("Pricing")
st.caption(f"Every price is a dated snapshot with its source and confidence. **⚠ stale** marks a figure older than "
           f"{STALE_AFTER_DAYS} days (before {today - dt.timedelta(days=STALE_AFTER_DAYS):%Y-%m-%d}): prices and "
           "discounts move, so check those before quoting them. Your own figures are saved as new dated rows "
           "(confidence *user*); the snapshot they replace stays in the store.")

if saved := st.session_state.pop("price_saved", None):
    st.success(md(saved))

# -- node prices -----------------------------------------------------------------------
st.subheader("Node prices (renting)")
nodes = node_price_table(cat.node_prices, today, first_gpu=st.session_state["sc_gpu"])
st.dataframe(
    nodes, hide_index=True, placeholder="—", width="stretch", height="content", key="price_nodes_table",
    # Widths fit the main column at 1280 px (issue 14); the source column takes what is left.
    column_order=["gpu", "provider", "instance", "option", "usd_per_node_hour", "usd_per_gpu_hour",
                  "dated", "confidence", "source"],
    column_config={
        "gpu": st.column_config.TextColumn("GPU", width=100),
        "provider": st.column_config.TextColumn("provider", width=78),
        "instance": st.column_config.TextColumn("instance", width=120),
        "option": st.column_config.TextColumn("option", width=122),
        "usd_per_node_hour": st.column_config.NumberColumn("$/node-hour", format=MONEY, width=85),
        "usd_per_gpu_hour": st.column_config.NumberColumn("$/GPU-hour", format=MONEY, width=80),
        **SOURCED,
    },
)
st.caption(f"{(nodes['stale'] != '').sum()} of {len(nodes)} node prices are stale. Savings-plan rows marked "
           "*unverified* or *estimate* are assumed discounts off on-demand, not quotes.")

# -- API prices ------------------------------------------------------------------------
st.subheader("API prices")
apis = api_price_table(cat.apis, today)
st.dataframe(
    apis, hide_index=True, width="stretch", height="content", key="price_apis_table", placeholder="—",
    column_order=["provider", "model", "tier", "usd_per_mtok_in", "usd_per_mtok_cached_in", "usd_per_mtok_out",
                  "dated", "confidence", "source"],
    column_config={
        "provider": st.column_config.TextColumn("provider", width=80),
        "model": st.column_config.TextColumn("model", width=185),
        "tier": st.column_config.TextColumn("tier", width=80),
        "usd_per_mtok_in": st.column_config.NumberColumn("$/M in", format=PER_MTOK, width=70),
        "usd_per_mtok_cached_in": st.column_config.NumberColumn("$/M cached", format=PER_MTOK, width=82,
                                                                help="— = no cached-input price"),
        "usd_per_mtok_out": st.column_config.NumberColumn("$/M out", format=PER_MTOK, width=75),
        **SOURCED,
    },
)
st.caption("List prices per million tokens. Typical speed and quality per task class (used for routing) are "
           "estimates; see each row's note in the store.")

# -- overrides -------------------------------------------------------------------------
st.subheader("Your own price")
signin.read_only_note()
with st.container(border=True):
    kind = st.radio("Replace", ["Node price", "API price"], horizontal=True, key="price_kind")
    try:
        if kind == "Node price":
            i = st.selectbox("Node price to replace", range(len(cat.node_prices)), key="price_node_row",
                             format_func=lambda k: node_price_label(cat.node_prices[k]))
            base = cat.node_prices[i]
            new = st.number_input("New price, $ per node-hour", min_value=0.0, step=0.5, format=input_format(2),
                                  value=float(base.usd_per_node_hour), key=f"price_node_usd_{i}")
        else:
            i = st.selectbox("API price to replace", range(len(cat.apis)), key="price_api_row",
                             format_func=lambda k: api_price_label(cat.apis[k]))
            base = cat.apis[i]
            c1, c2 = st.columns(2)
            new_in = c1.number_input("New $ per M input tokens", min_value=0.0, step=0.01, format=input_format(3),
                                     value=float(base.usd_per_mtok_in), key=f"price_api_in_{i}")
            new_out = c2.number_input("New $ per M output tokens", min_value=0.0, step=0.01, format=input_format(3),
                                      value=float(base.usd_per_mtok_out), key=f"price_api_out_{i}")
        source = st.text_input("Source", placeholder="e.g. AWS quote Q-1234, 2026 EDP contract, March invoice",
                               key="price_source")
        if st.button("Save as a new dated row", key="price_save", type="primary", disabled=signin.read_only()):
            row = (node_price_override(base, new, source, today) if kind == "Node price"
                   else api_price_override(base, new_in, new_out, source, today))
            st.session_state["price_saved"] = save_override(store(), row)
            bump_data_version()
            st.rerun()
    except HangoverError as exc:
        st.error(md(str(exc)))

# -- owned hardware --------------------------------------------------------------------
st.subheader("Owned hardware: what an hour costs")
tco = owned_tco_table(cat.owned_hardware, today)
st.markdown("**Inputs** (per node)")
st.dataframe(
    tco, hide_index=True, placeholder="—", width="stretch", key="price_tco_inputs",
    column_order=["name", "capex_usd_per_node", "depreciation_years", "cost_of_capital_rate", "kw_per_node", "pue",
                  "usd_per_kwh", "support_usd_per_year", "dated", "confidence"],
    column_config={
        "name": st.column_config.TextColumn("hardware", width=180),
        "capex_usd_per_node": st.column_config.NumberColumn("capex", format=column_format("usd"), width=85),
        "depreciation_years": st.column_config.NumberColumn("years", format=column_format("num_1"), width=80,
                                                            help="straight-line depreciation period"),
        "cost_of_capital_rate": st.column_config.NumberColumn("capital %", format="percent", width=75,
                                                              help="annual cost of capital"),
        "kw_per_node": st.column_config.NumberColumn("kW (avg)", format=column_format("num_1"), width=65),
        "pue": st.column_config.NumberColumn("PUE", format=column_format("num_2"), width=50),
        "usd_per_kwh": st.column_config.NumberColumn("$/kWh", format=PER_MTOK, width=65),
        "support_usd_per_year": st.column_config.NumberColumn("support $/yr", format=column_format("usd"), width=110,
                                                              help="support, colocation and operations per node"),
        **SOURCED,
    },
)
st.caption("Sources:\n" + "\n".join(f"- {line}" for line in provenance_lines(cat.owned_hardware, today)))
st.markdown("**Cost per hour** (every hour of the year, busy or idle)")
st.dataframe(
    tco, hide_index=True, placeholder="—", width="stretch", key="price_tco_outputs",
    column_order=["name", "capital_usd_per_hour", "power_usd_per_hour", "marginal_usd_per_hour", "full_usd_per_hour",
                  "full_usd_per_gpu_hour", "marginal_usd_per_gpu_hour"],
    column_config={
        "name": st.column_config.TextColumn("hardware", width="medium"),
        "capital_usd_per_hour": st.column_config.NumberColumn("capital $/h", format=MONEY,
                                                              help="depreciation + cost of capital on half the capex"),
        "power_usd_per_hour": st.column_config.NumberColumn("power $/h", format=MONEY, help="kW × PUE × $/kWh"),
        "marginal_usd_per_hour": st.column_config.NumberColumn("marginal $/node-hour", format=MONEY,
                                                               help="power + support: hardware already paid for"),
        "full_usd_per_hour": st.column_config.NumberColumn("full $/node-hour", format=MONEY,
                                                           help="capital + power + support"),
        "full_usd_per_gpu_hour": st.column_config.NumberColumn("full $/GPU-hour", format=MONEY),
        "marginal_usd_per_gpu_hour": st.column_config.NumberColumn("marginal $/GPU-hour", format=MONEY),
    },
)
st.caption("Full = straight-line depreciation + cost of capital on the average book value (half the capex) + "
           "power (kW × PUE × $/kWh) + support and colocation, spread over 8,760 hours. Marginal = power + support "
           "only. The seed figures are estimates: choose *Owned hardware* in the sidebar to use them.")

# -- break-even ------------------------------------------------------------------------
st.subheader("Break-even utilization: owned node vs each API")
stack_ids = [s.stack_id for s in cat.stacks]
c1, c2, c3 = st.columns([2, 1, 1])
ref_stack = c1.selectbox("Reference stack on the node", stack_ids, key="price_ref_stack",
                         index=stack_ids.index("llama70b-fp8") if "llama70b-fp8" in stack_ids else 0)
n_in = c2.number_input("Input tokens per request", value=int(REFERENCE_TOKENS[0]), step=100, key="price_in_tokens",
                       **input_limits(Workload, "input_tokens", whole=True))
n_out = c3.number_input("Output tokens per request", value=int(REFERENCE_TOKENS[1]), step=32, key="price_out_tokens",
                        **input_limits(Workload, "output_tokens", whole=True))
try:
    sc = scenario()
    key = data_key(cat.gpus, cat.stacks, cat.benchmarks, cat.node_prices, cat.apis, cat.owned_hardware)
    be, be_fig = _break_even(sc.model_dump_json(), key, ref_stack, float(n_in), float(n_out), today.isoformat(), cat)
    st.plotly_chart(be_fig, width="stretch", key="price_be_chart")
    st.caption(md(be.explanation) + " All throughput figures are estimates unless the provenance says measured.")
    st.dataframe(
        be.table, hide_index=True, placeholder="—", width="stretch", height="content", key="price_be_table",
        # Fits the main column at 1280 px (issue 14: the verdict was cut off); each API's date and staleness are
        # in the API prices table above.
        column_order=["provider", "model", "tier", "api_usd_per_mtok_out_all_in", "verdict"],
        column_config={
            "provider": st.column_config.TextColumn("provider", width=90),
            "model": st.column_config.TextColumn("model", width=185),
            "tier": st.column_config.TextColumn("tier", width=80),
            "api_usd_per_mtok_out_all_in": st.column_config.NumberColumn(
                "API $/M out, all-in", format=MONEY, width=125,
                help="one request's input + output cost ÷ its output tokens"),
            "verdict": st.column_config.TextColumn("verdict", width=340),
        },
    )
except HangoverError as exc:
    if not lacks_price("The break-even"):  # a missing node price is explained once, in the sidebar
        st.error(md(str(exc)))

# -- licence fees ------------------------------------------------------------------------
st.subheader("Licensed weights: your licence fee")
licensed = [s for s in cat.stacks if s.weights.value == "licensed"]
if not licensed:
    st.caption("No serving stack in the store needs a licence.")
else:
    st.caption("A stack whose weights need a licence is scored and shown, but the plan uses it only once you enter "
               "its fee (per GPU per month, dated, with its source). Overview and Fleet sizing show the break-even fee.")
    with st.form("price_licence_form"):
        c1, c2, c3 = st.columns([2, 1, 2])
        lic_stack = c1.selectbox("Stack", [s.stack_id for s in licensed], key="price_licence_stack")
        lic_fee = c2.number_input("$ per GPU-month", min_value=0.0, max_value=1_000_000.0, value=0.0, step=100.0,
                                  key="price_licence_fee")
        lic_source = c3.text_input("Source (quote, contract)", key="price_licence_source")
        if st.form_submit_button("Save licence fee", disabled=signin.read_only()):
            try:
                set_licence_fee(store(), lic_stack, lic_fee, source=lic_source)
            except HangoverError as exc:
                st.error(md(str(exc)))
            else:
                bump_data_version()
                st.success(md(f"Saved the licence fee of {lic_stack}, dated today."))
