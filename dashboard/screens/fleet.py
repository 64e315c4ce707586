"""Fleet sizing page: nodes by route, architectures side by side, cost of each fleet option, nodes as the SLA tightens."""

import streamlit as st

from core import service
from core.presentation import charts, served, views
from core.service import Evaluation
from dashboard import state
from dashboard.format import (
    count_col,
    integer,
    md,
    md_table,
    money,
    money_col,
    ms_col,
    number_col,
    plain,
    share_bar_col,
    text_col,
)

SWEEP_SCALES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
CHART_WORKLOADS = 12  # grouped bars stay readable up to about a dozen workloads


# One entry per scale, not per range: narrowing or widening the range re-evaluates only the scales not yet swept.
@st.cache_data(show_spinner=False, max_entries=32 * len(SWEEP_SCALES))  # the page's progress bar says which scale
def sla_sweep_rows(scenario_json: str, data_version: int, inventory: str, scale: float, _ev: Evaluation):
    """service.sla_sweep_rows, cached on the scenario's value, the data version and the scale (not on the evaluation)."""
    return service.sla_sweep_rows(_ev, scale)


@st.cache_data(show_spinner=False, max_entries=32)
def side_by_side(scenario_json: str, data_version: int, inventory: str, _ev: Evaluation):
    """Best owned route per architecture per interactive workload, cached like the sweep (it words every refusal)."""
    return views.architecture_side_by_side(service.architecture_comparison(_ev))


@st.cache_resource(show_spinner=False, max_entries=32)
def figures(scenario_json: str, data_version: int, inventory: str, _ev: Evaluation, _side):
    """The page's Plotly figures above the sweep, built once per scenario (building them is most of a rerun's time)."""
    f = service.top_fleet(_ev)
    routes = views.nodes_by_route(_ev)
    top = views.costliest_interactive(_ev, CHART_WORKLOADS)
    return {
        "routes": routes,
        "routes_chart": None if routes.empty else charts.gpus_by_route_chart(
            routes, owned_gpus=f.owned_nodes * f.gpus_per_node),
        "top": top,
        "arch_chart": None if _side.empty else charts.architecture_chart(_side, workloads=top),
    }


@st.cache_resource(show_spinner=False, max_entries=32)
def sweep_chart(scenario_json: str, data_version: int, inventory: str, scales, current_scale: float, _sweep):
    """The sweep's chart, built once per scenario and range of scales."""
    return charts.sla_sweep_chart(_sweep, current_scale=current_scale)


@st.cache_resource(show_spinner="Planning each fleet option…", max_entries=32)
def option_figures(scenario_json: str, data_version: int, inventory: str, _ev: Evaluation):
    """The fleet options (each a plan of its own) and their chart."""
    options = service.fleet_options(_ev)
    return {"options": options, "options_chart": charts.fleet_options_chart(options)}


st.title("Fleet sizing")
ev = state.evaluation()
if ev is None:
    st.stop()
f = service.top_fleet(ev)  # the chosen mix in a mixed scenario

c1, c2, c3, c4, c5 = st.columns(5)
c1.metric("Nodes needed", integer(f.nodes_needed), help="Recommended mix: every latency target held at peak.")
c2.metric("Owned nodes", integer(f.owned_nodes))
c3.metric("For interactive work", integer(f.nodes_needed_interactive),
          help="Replicas sized so that each workload's p95 of wait + service holds its target at the peak "
               "hour, on its deployment's pooled queue (replicas × concurrency cap).")
c4.metric("Cash bill a month", money(f.total_monthly_usd),
          help="max(owned, needed) nodes × the full node price × 730 h + API spend + licences; "
               "the same under either cost basis. Unserved work is not in it.")
c5.metric("Workloads served", served.served_short(f.workloads_served, f.workloads_total),
          delta=f"{integer(f.workloads_unserved)} unserved" if f.workloads_unserved else None, delta_color="red",
          delta_arrow="off",
          help="Workloads the plan gives a route; the others have none under the scenario's targets, policies and "
               "licences, and cost nothing in the bill.")
if (unserved := served.unserved_priced_parts(ev)) is not None:
    st.warning("\n".join([md(unserved[0]), *(f"- {md(item)}" for item in unserved[1])]))


@st.cache_data(show_spinner="Planning each candidate GPU and purchase option…", max_entries=16)
def buy_options(scenario_json: str, data_version: int, inventory: str, _ev: Evaluation):
    """service.buy_options_frame and its chart, cached on the scenario's value (each candidate is a plan)."""
    frame = service.buy_options_frame(_ev)
    return frame, None if frame is None else charts.buy_options_chart(frame), service.buy_options_frame(
        _ev, every=True)


st.subheader("What to buy next")
bought, bought_chart, every_option = buy_options(ev.scenario.model_dump_json(), state.data_version(), views.fingerprint(ev), ev)
if bought is None:
    st.caption("Name owned nodes by GPU and candidate GPUs under **What to buy next** in the sidebar to compare "
               "new nodes of each GPU and purchase option (buy, 3-year, 1-year, on-demand) side by side.")
else:
    best = bought[bought["row"] == "best mix"].iloc[0]
    one = ev.fleet  # the one-kind plan: more of the sidebar's GPU at its pricing
    versus = one.total_monthly_usd - float(best["total_usd"])
    st.markdown(f"**Buy {md(best['buy'])}**: {money(best['total_usd'])} a month in all, owned nodes kept on "
                f"their GPU"
                + (f", {money(versus)} a month less than the one-kind plan ({integer(one.new_nodes)} more "
                   f"{md(one.gpu)} at the sidebar's pricing, {money(one.total_monthly_usd)})" if versus > 0.005 else "")
                + ". Each row is the plan with new nodes of one GPU type that serves the most workloads, then costs "
                  "least; *buy nothing* sends what may leave to APIs and leaves the rest unserved.")
    st.plotly_chart(bought_chart, key="fleet_buy_options")
    md_table(views.table_text(bought, {
        "row": ("Row", "text"), "buy": ("New nodes", "text"), "owned_usd": ("Owned $/month", "usd"),
        "new_nodes_usd": ("New $/month", "usd"),
        "energy_usd": ("of which energy", "usd"),
        "api_usd": ("API $/month", "usd"), "total_usd": ("Bill $/month", "usd"),
        "estimate_range": ("Estimate range", "text"),
        "usd_per_mtok_out": ("$ per M output tokens", "usd_2"), "on_nodes": ("On nodes", "int"),
        "by_api": ("By API", "int"), "unserved": ("Unserved", "int"), "price_source": ("Price (dated)", "text")}),
        hide_index=True)
    with st.expander("Every candidate GPU and purchase option"):
        md_table(views.table_text(every_option, {
            "label": ("GPU, option", "text"), "buy": ("New nodes", "text"), "new_nodes_usd": ("New $/month", "usd"),
            "api_usd": ("API $/month", "usd"), "total_usd": ("Bill $/month", "usd"),
            "unserved": ("Unserved", "int"), "price_source": ("Price (dated)", "text")}), hide_index=True)
    st.caption("Estimates: buy = TCO from the dated seed estimate (capex over depreciation, cost of capital, power "
               "× PUE × $/kWh, support; the power is shown as *of which energy*, at the node's average draw); reserved and on-demand from dated price rows (Pricing page). The plan "
               "fills the owned nodes first, then plans the rest on the candidate GPU (core/decision/mix.py).")

st.subheader("Burst instead of buy")
burst_j, burst_table = service.burst_frame(ev)
if ev.scenario.mixed:  # burst is priced on the one-kind plan's nodes, not on the chosen mix's
    st.caption(md(f"Priced on the one-kind plan ({ev.fleet.gpu}, {money(ev.fleet.total_monthly_usd)} a month), "
                  "not on the chosen mix above."))
st.markdown(md(burst_j["verdict"]))
if burst_table is not None:
    md_table(views.table_text(burst_table, {
        "base_nodes": ("Nodes kept all month", "int"), "rented_nodes_at_peak": ("Rented at the peak", "int"),
        "burst_node_hours": ("Rented node-hours a month", "num_1"), "usd_per_month": ("Nodes $/month", "usd"),
        "vs_all_owned_usd": ("vs owning all", "usd")}), hide_index=True)
if burst_j.get("priced"):
    st.caption(f"Nodes only (API and licences unchanged). On demand: {md(burst_j['on_demand_instance'])}, "
               f"{money(burst_j['on_demand_usd_per_node_hour'], decimals=2)} per node-hour ({md(burst_j['on_demand_source'])}, "
               f"{burst_j['on_demand_as_of']}); {md(burst_j['traffic_shape'])}. An estimate: each pool's replicas "
               "scale with its hourly traffic; batch work stays on the kept nodes; "
               f"{md(burst_j['billing'])}. On-demand 8-GPU capacity is not guaranteed at the hour it is asked for.")

if bought is not None:
    st.caption(f"The figures at the top and below are the chosen mix ({md(f.gpu)}), the best mix row above; the "
               f"one-kind plan (more {md(ev.fleet.gpu)} nodes at the sidebar's pricing) is the row of that GPU and "
               "option under every candidate.")



def pools_needing_nodes() -> None:
    """The pools on the new nodes, each priced as a cause of them (fleet.pool_drivers)."""
    pools = views.pool_drivers(ev)
    if pools.empty:
        return
    st.markdown("**The pools that need them**")
    md_table(views.table_text(pools, {
        "route": ("Pool", "text"), "gpus_per_replica": ("GPUs per replica", "int"), "gpus": ("GPUs", "text"),
        "workloads": ("Workloads", "int"), "nodes_forced": ("Nodes it forces", "int"),
        "elsewhere": ("Its workloads on their next-best routes", "text")}), hide_index=True)
    st.caption("Nodes it forces: how many nodes fewer the plan needs without the pool's workloads. Next-best routes: "
               "off the pool's stack, the plan re-priced exactly with only them moved (the bill's change and the "
               "nodes it then needs). A node bought for a pool of many workloads is seldom forced by one of them.")


if f.nodes_needed > f.owned_nodes and ev.scenario.mixed:
    st.subheader("Why nodes are bought")
    pools_needing_nodes()
    st.caption("For the workloads that hold the most GPUs on the new nodes of the chosen mix: what relaxing each "
               "one's target, or moving it to its best API where policy allows, would save a month (exact re-pricing "
               "of the new nodes' plan).")
    md_table(views.table_text(views.node_drivers(ev), {
        "workload_id": ("Workload", "text"), "route": ("Runs on", "text"), "target": ("Target", "text"),
        "nodes_forced": ("Nodes it forces", "int"), "change": ("If", "text"),
        "saves_usd_per_month": ("Saves a month", "usd")}), hide_index=True)
elif f.nodes_needed > f.owned_nodes:
    st.subheader("Why nodes are bought")
    # Re-plans (bounded): automatic for small inventories, on demand above; kept with the evaluation.
    with st.spinner("Re-planning to find the smallest change that avoids new nodes…"):
        smallest = service.smallest_change(ev, force=st.session_state.get("fleet_smallest_forced") == id(ev))
    pools_needing_nodes()
    st.caption("For the workloads that hold the most GPUs on the new nodes: what relaxing each one's target, or "
               "moving it to its best API where policy allows, would save a month (exact re-pricing of the plan), "
               "and the smallest target that lowers the node count (re-planned).")
    # Static tables (here and below, while short): they wrap long route names and reasons instead of cutting them.
    md_table(views.table_text(views.node_drivers(ev), {
        "workload_id": ("Workload", "text"), "route": ("Runs on", "text"), "target": ("Target", "text"),
        "nodes_forced": ("Nodes it forces", "int"), "change": ("If", "text"),
        "saves_usd_per_month": ("Saves a month", "usd")}), hide_index=True)
    st.caption("Nodes it forces: how many nodes fewer the plan needs without that workload (exact re-pricing).")
    st.markdown("**The smallest change that avoids them**")
    if smallest is None:
        st.caption("Searched automatically for small inventories only: each step is a whole re-plan.")
        if st.button("Find the smallest change", key="fleet_smallest"):
            st.session_state["fleet_smallest_forced"] = id(ev)
            st.rerun()
    else:
        for line in smallest[1]:
            st.markdown(f"- {md(line)}")

st.subheader("Deployments")
st.caption("One deployment per owned route: its workloads share one pooled queue and its replicas; "
           "replicas are packed onto whole nodes.")
md_table(views.table_text(views.deployments(ev), {
    "route": ("Route", "text"), "gpus_per_replica": ("GPUs per replica", "int"), "replicas": ("Replicas", "text"),
    "concurrency_cap": ("Concurrency cap", "int"), "gpus": ("GPUs", "int"), "nodes": ("Nodes (alone)", "int"),
    "offline_gpu_hours_per_day": ("Batch GPU-h a day", "num_1"), "workloads": ("Workloads", "text")}),
    hide_index=True)
why = views.deployment_why(ev)
if why:
    st.markdown("**Why each interactive pool has its replicas**")
    st.markdown("\n".join(f"- {md(line)}" for line in why))
for line in views.licensed_words(ev):
    st.info(md(line))

# Keyed on the result's content too: resource caches are shared by sessions whose data versions differ.
key = (ev.scenario.model_dump_json(), state.data_version(), views.fingerprint(ev))
side = side_by_side(*key, ev)
# The options and the sweep are planned at their own sections, below (the sweep last: each scale is a whole
# evaluation): the charts above never wait for them.
fig = figures(*key, ev, side)

st.subheader("Nodes by route")
routes = fig["routes"]
if routes.empty:
    st.info("No workload runs on owned GPUs in this scenario.")
else:
    st.plotly_chart(fig["routes_chart"], key="fleet_routes")
    st.dataframe(routes, hide_index=True, key="fleet_routes_table", placeholder="—",
                 column_order=["route", "architecture", "gpus", "nodes", "monthly_usd"],
                 column_config={"route": text_col("Route", width=330),
                                "architecture": text_col("Architecture"),
                                "gpus": number_col("GPUs", kind="num_2"),
                                "nodes": count_col("Nodes", help="Interactive routes only; batch work fills idle "
                                                   "hours."),
                                "monthly_usd": money_col("$/month")})
    st.caption("Interactive routes hold their GPUs at the peak hour; batch work counts its average over the day. "
               f"Replicas of 1, 2, 4 or 8 GPUs pack {f.gpus_per_node}-GPU nodes without gaps, so routes "
               f"share nodes: {integer(f.nodes_needed)} in all, not the sum of the rows.")

st.subheader("Architectures side by side, per interactive workload")
if ev.scenario.mixed:  # the sections below re-plan one GPU type: they are the one-kind plan's
    st.info(md(f"From here down the page plans the sidebar's GPU alone ({ev.fleet.gpu}: the one-kind plan, "
               f"{money(ev.fleet.total_monthly_usd)} a month): its architectures, fleet options, SLA sweep and "
               "simulation. The chosen mix above is the plan."))
if side.empty:
    st.info("No interactive workload in the inventory.")
else:
    top = fig["top"]
    st.plotly_chart(fig["arch_chart"], key="fleet_arch")
    if side["workload_id"].nunique() > len(top):
        st.caption(f"The chart shows {len(top)} interactive workloads: those without a route first (up to half "
                   "of them), then those whose verdict costs most a month; the table below lists every one.")
    with st.expander("Best route of each architecture: nodes, concurrency within the SLA, p95, and why not"):
        if len(side) <= views.STATIC_TABLE_ROWS:  # static: the "why not" sentences wrap instead of being cut off
            md_table(views.table_text(side, {
                "workload_id": ("Workload", "text"), "architecture": ("Architecture", "arch"),
                "route": ("Best route", "text"), "nodes": ("Nodes", "int"),
                "max_concurrency_within_sla": ("Slots within the SLA", "int"), "p95_latency_ms": ("p95", "ms"),
                "why_not": ("Why not", "text")}), hide_index=True)
        else:
            st.dataframe(side, hide_index=True, key="fleet_arch_table", placeholder="—",
                         column_order=["workload_id", "architecture", "route", "nodes", "max_concurrency_within_sla",
                                       "p95_latency_ms", "why_not"],
                         column_config={"workload_id": text_col("Workload", width=110),
                                        "architecture": text_col("Architecture", width=100),
                                        "route": text_col("Best route", width=200),
                                        "nodes": count_col("Nodes"),
                                        "max_concurrency_within_sla": count_col("Slots", help="Largest concurrency per "
                                                                                "replica whose p95 meets the SLA."),
                                        "p95_latency_ms": ms_col("p95", help="Estimate; when infeasible, the fastest "
                                                                 "it can go alone on a replica."),
                                        "why_not": text_col("Why not", width=220, help="Hover a cell for the whole "
                                                            "sentence.")})

st.subheader("Monthly cost of each fleet option")
opt_fig = option_figures(*key, ev)
options = opt_fig["options"]
st.plotly_chart(opt_fig["options_chart"], key="fleet_options")
md_table(views.table_text(served.options_table(options), {
    "option": ("Option", "text"), "monthly_usd": ("Cash bill a month", "usd"), "owned_nodes": ("Nodes", "int"),
    "serves": ("Serves", "text"), "unserved_work": ("Unserved work: cheapest route if relaxed or allowed", "text"),
    "monthly_usd_with_unserved": ("With unserved work priced", "usd")}), hide_index=True)
st.caption("An option that cannot serve a workload is cheaper only on paper: it leaves that work undone. The last "
           "column adds that work at its cheapest route after the smallest change (a route outside the option, a "
           "relaxed target, a licence fee entered, data allowed to an API; standalone estimates), so options compare "
           "like for like.")

st.subheader("Nodes needed as the latency targets tighten")
lo, hi = st.select_slider("SLA scales to sweep (× every latency target)", options=SWEEP_SCALES,
                          value=(SWEEP_SCALES[0], SWEEP_SCALES[-1]), key="fleet_sla_scales",
                          format_func=lambda s: f"× {plain(s)}")
scales = tuple(s for s in SWEEP_SCALES if lo <= s <= hi)
asked = st.session_state.setdefault("fleet_sweeps_asked", set())  # scenarios whose sweep was asked for
if service.sla_sweep_automatic(ev) or key in asked:
    bar = st.progress(0.0)
    swept: list[float] = []

    def at_scale(s: float) -> list[dict]:
        bar.progress(len(swept) / len(scales),
                     text=f"Re-planning every workload at × {plain(s)} (scale {len(swept) + 1} of {len(scales)})…")
        swept.append(s)
        return sla_sweep_rows(*key, s, ev)

    sweep = service.sla_sweep(ev, scales, rows_at=at_scale)
    bar.empty()  # cached scales pass through it at once
    st.plotly_chart(sweep_chart(*key, scales, ev.scenario.sla_scale, sweep), key="fleet_sweep")
    st.caption("The recommended mix at each scale: a tighter target can leave work without a route, which drops it "
               "from the cash bill; the last column prices that work at its cheapest route after the smallest change "
               "(a standalone estimate), so the bills compare like for like.")
    md_table(views.table_text(served.sweep_table(sweep), {
        "sla_scale": ("Targets ×", "num_g"), "owned_nodes": ("Nodes", "int"),
        "monthly_usd": ("Cash bill a month", "usd"), "serves": ("Serves", "text"),
        "unserved_work": ("Unserved work: cheapest route if relaxed or allowed", "text"),
        "monthly_usd_with_unserved": ("With unserved work priced", "usd")}), hide_index=True)
else:
    st.caption(f"Swept as the page draws for up to {integer(service.sla_sweep_max_workloads())} workloads only: "
               f"each scale is a whole re-plan of these {integer(len(ev.workloads))} workloads with every fleet "
               "option planned, so the sweep waits until asked.")
    if st.button(f"Sweep {len(scales)} SLA scales", key="fleet_sweep_run"):
        asked.add(key)
        st.rerun()

st.subheader("Check by simulation")
st.caption("Replays the peak hour of every owned deployment that serves interactive work in a discrete-event "
           "simulation of continuous batching (Poisson arrivals, admission up to the concurrency cap, the step "
           "time at the running batch, other requests' prefills), with the planned replicas and with one fewer. "
           "Estimates: it checks the queueing arithmetic the plan sized on, not the physics. The plan itself was "
           "checked this way before it was final: a pool gained a replica where the run showed a member under its "
           "target share beyond the noise of its simulated requests, judged for the pool's members together (the "
           "deployments' reasons above say where); the verdicts below use the same test. \"One replica fewer would "
           "also do\" is said only where the run shows every workload at or above its target share with one "
           "fewer (a cut needs evidence that it holds); where the run shows neither, it says so.")
if st.button("Check by simulation", key="fleet_simulate"):
    bar = st.progress(0.0, text="Simulating…")
    result = service.check_plan(ev, seed=0, progress=lambda done, total, dep: bar.progress(
        done / max(total, 1), text=f"Simulating {dep}…" if dep else "Done"))
    st.session_state["fleet_simulation"] = (id(ev), result)
checked = st.session_state.get("fleet_simulation")
if checked is not None and checked[0] == id(ev):
    sim = checked[1].frame()
    if sim.empty:
        st.info("No owned deployment serves interactive work in this plan: nothing to simulate.")
    else:
        for line in checked[1].verdicts():
            st.markdown(f"- {md(line)}")
        st.plotly_chart(charts.simulation_check_chart(sim), key="fleet_simulation_chart")
        st.dataframe(sim, hide_index=True, key="fleet_simulation_table", placeholder="—",
                     column_order=["workload_id", "deployment_id", "slo_ms", "analytic_p95_ms", "simulated_p95_ms",
                                   "ci_lo_ms", "ci_hi_ms", "share_within_slo", "share_within_slo_one_replica_fewer"],
                     column_config={"workload_id": text_col("Workload", width=120),
                                    "deployment_id": text_col("Deployment", width=180),
                                    "slo_ms": ms_col("Target"),
                                    "analytic_p95_ms": ms_col("Analytic p95", help="What the plan sized on."),
                                    "simulated_p95_ms": ms_col("Simulated p95"),
                                    "ci_lo_ms": ms_col("95 % interval, low"),
                                    "ci_hi_ms": ms_col("95 % interval, high"),
                                    "share_within_slo": share_bar_col("Within target"),
                                    "share_within_slo_one_replica_fewer": share_bar_col(
                                        "Within target, one replica fewer")})
