"""Overview page: the owned fleet, what its idle hours cost, where the work goes, in figures and plain words."""

import streamlit as st

from core.presentation import charts, served, views
from core.service import (
    estimate_range_words,
    owned_vs_api,
    purchase_lines,
    purchase_subject,
    staged_purchase,
    top_fleet,
)
from core.telemetry.profile import measured_vs_plan
from dashboard import state
from dashboard.format import badge, integer, md, money, money_col, percent, signed_money, text_col

st.title("Overview")
st.markdown(state.whose_figures())  # whose figures these are, before any figure (issue 14)
ev = state.evaluation()
if ev is None:
    st.stop()

k = views.overview_kpis(ev)
owned, needed = k["owned_nodes"], k["nodes_needed"]
c1, c2, c3, c4, c5 = st.columns(5)
c1.metric("Owned nodes", integer(owned), help=f"{k['gpus_per_node']} × {k['gpu']} per node (sidebar).")
c2.metric("Utilization", percent(k["utilization"]),
          help="Average share of the GPU-hours of every node in the plan (owned and to buy) busy over the day, "
               "batch fill included (estimate).")
c3.metric("Idle cost a month", money(k["idle_usd_per_month"]),
          help=md("GPU-hours of every node in the plan × full $/GPU-hour × (1 − utilization)."))
eff, api = k["owned_usd_per_mtok_out"], k["api_usd_per_mtok_out"]
gap = None if eff is None or api is None else f"{signed_money(eff - api)} vs API"
c4.metric("Owned $/M output", money(eff), delta=gap, delta_color="inverse",
          help=md(f"Owned fleet $/month ÷ the output tokens it serves, per million. The same tokens from the cheapest "
                  f"API that meets each workload's quality floor: {money(api)}/M (data policy aside)."))
c5.metric("Nodes needed", integer(needed),
          delta=f"{'+' if needed > owned else ''}{integer(needed - owned)} vs owned" if needed != owned else None, delta_color="off",
          help="Nodes that hold every latency target at peak in the recommended mix, batch work filling idle hours.")

if (estimate_range := estimate_range_words(ev)) is not None:
    st.caption(md(estimate_range))

if (unserved := served.unserved_priced_parts(ev)) is not None:
    st.warning("\n".join([md(unserved[0]), *(f"- {md(item)}" for item in unserved[1])]))

# Staged purchase under the ranges (issue 32): what to buy now, and what to hold until a route is measured.
if (staged := staged_purchase(ev)) is not None:
    st.subheader("What to buy")
    # A mixed scenario's figures are the new GPU's plan alone: they say so first (its "owned" is none of that GPU).
    if subject := purchase_subject(ev):
        st.markdown(md(subject.rstrip(": ") + "."))
    b1, b2, b3 = st.columns(3)
    hold = staged.hold_nodes
    b1.metric("Buy now", f"{integer(staged.buy_now_new_nodes)} node{'s' if staged.buy_now_new_nodes != 1 else ''}",
              help=f"Nodes beyond the {integer(staged.owned_nodes)} owned needed in at least "
                   f"{percent(staged.quantile)} of {integer(staged.draws)} draws over the performance, price and "
                   "traffic ranges (estimate).")
    b2.metric("Hold until measured", f"up to {integer(hold)} more",
              help="More nodes the 90th percentile of the draws needs: buy them once the route named below is "
                   "measured (estimate).")
    b3.metric("Nodes needed, 10th–90th percentile", f"{integer(staged.nodes_p10)}–{integer(staged.nodes_p90)}",
              help=f"Median {integer(staged.nodes_p50)}; the plan's central estimate {integer(staged.plan_nodes)}.")
    st.markdown("\n".join(f"- {md(line)}" for line in purchase_lines(staged)))
    vs = owned_vs_api(staged)
    if len(vs):
        with st.expander("Owned against the best allowed API, across the ranges"):
            vs = vs.assign(switch_usd_per_month=vs["switch_usd_per_month"].map(signed_money))
            st.dataframe(vs, hide_index=True, placeholder="—", key="overview_owned_vs_api",
                         column_config={"workload_id": text_col("Workload"),
                                        "p_owned_beats_api": st.column_config.ProgressColumn(
                                            "Chance its owned share is cheaper", format="percent", min_value=0.0,
                                            max_value=1.0,
                                            help="Over the draws: its attributed share of the owned fleet against "
                                                 "the API's price for its traffic (estimates)."),
                                        "api": text_col("Best allowed API"),
                                        "runs_on": text_col("The plan runs it on"),
                                        "switch_usd_per_month": text_col(
                                            "Cash bill a month if it alone switches",
                                            help="The central plan's cash bill a month after this workload alone "
                                                 "moves to the other side (owned to the API, or the API to owned), "
                                                 "less the bill now, re-priced exactly: positive, the side it is on "
                                                 "is cheaper in cash. A workload on capacity held anyway frees no "
                                                 "replica by leaving, whatever its share.")})
    st.caption(md(staged.basis + "."))


with st.expander(f"Cash bill: {served.plan_bill_words(ev)} — line by line"):
    st.dataframe(views.cash_bill(ev), hide_index=True, placeholder="—", key="overview_bill",
                 column_config={"line": text_col("Line"), "what": text_col("What", width="large"),
                                "usd_per_month": money_col("$/month")})

with st.expander("Where these numbers come from (dates, sources, estimates)"):
    for word, line in views.provenance_notes(ev):
        st.markdown(f"- {badge(word)} {md(line)}")

st.subheader("In plain words")
st.markdown("\n".join(f"- {md(line)}" for line in views.overview_summary(ev)))

plan = top_fleet(ev)  # the chosen mix in a mixed scenario
left, right = st.columns([3, 2])
with left:
    st.plotly_chart(charts.utilization_chart(plan.hourly_utilization,
                                             plan.hourly_utilization_without_batch, owned_nodes=owned,
                                             plan_nodes=plan.nodes_in_plan),
                    key="overview_utilization")
    st.caption(md(f"Interactive load follows the {ev.fleet.traffic_shape}, scaled to each workload's peak "
                  "factor; batch work is placed in the idlest hours first. The sidebar's 'Traffic over the day' "
                  "switches to your measured telemetry."))
with right:
    st.plotly_chart(charts.verdict_mix_chart(plan.verdict_mix), key="overview_mix")
    st.caption("Details and reasons per workload: Routing. Nodes per route: Fleet sizing.")
    st.page_link("screens/showback.py", label="Showback by team; plan against actual; measured heatmap and idle $ by node", icon=":material/groups:")

# Measured utilization beside the plan's (issue 15): one line, only once telemetry has been imported.
if (measured := measured_vs_plan(state.store(), k["utilization"], ev.rate)) is not None:
    st.info(md(measured))
