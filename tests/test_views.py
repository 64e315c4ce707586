"""Views for people over an evaluation (core/presentation/views.py): the overview summary, chart-ready frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.decision import analysis, contract
from core.presentation import format as fmt
from core.presentation import views
from core.service import evaluate_store, make_scenario
from core.store import Store


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    """The bundled sample inventory on one owned 8×H100 node (the defaults); one evaluation the tests only read.

    Module-scoped: its performance ranges (computed on first use, ~2 s) are then worked out once, not per test.
    """
    s = Store(tmp_path_factory.mktemp("views") / "v.duckdb")
    yield evaluate_store(s, make_scenario())
    s.close()


def test_quiet_window_wraps_past_midnight():
    util = [0.0] * 7 + [0.4] * 12 + [0.0] * 5  # quiet 19:00-07:00
    assert views._quiet_window(util) == (19, 12)
    assert views._quiet_window([0.5] * 24) is None
    assert views._quiet_window([0.0] * 24) is None


def test_group_words_match_the_engine_verdict_mix(ev):
    groups = set(views.routing_map(ev)["group"])
    assert groups == set(ev.fleet.verdict_mix)
    assert views.group_label("moe (owned)") == "MoE, owned"
    assert views.group_label("autoregressive (API)") == "Autoregressive, API"


def test_api_equivalent_weights_owned_workloads_by_output_tokens(ev):
    """Σ value × tokens / Σ tokens over the owned verdicts only (API verdicts such as credit-memos left out)."""
    vf = contract.verdicts_frame(ev)
    num = den = 0.0
    for (_, row), out in zip(vf.iterrows(), ev.workloads["output_tokens"], strict=True):
        if row["hosting"] == "owned" and np.isfinite(row["value_usd_per_mtok"]):
            num += row["value_usd_per_mtok"] * row["requests_per_day"] * out
            den += row["requests_per_day"] * out
    assert (vf["hosting"] == "api").any()  # the case above is really exercised
    assert views.api_equivalent_usd_per_mtok(ev) == pytest.approx(num / den)


def test_the_overview_headline_does_not_wait_for_the_ranges(tmp_path):
    """The KPI row (the headline a sidebar change shows first) plans neither end of the performance ranges:
    with 100 workloads the Overview's headline waited ~8 s for them (the API equivalent read the verdicts frame,
    whose sensitivity columns plan both ends). The ranges come after, for the caption below the KPIs."""
    from core.decision.sensitivity import ranges

    fresh = evaluate_store(Store(tmp_path / "k.duckdb"), make_scenario())
    k = views.overview_kpis(fresh)
    assert fresh.answers.known("ranges") is None
    assert k["api_usd_per_mtok_out"] == pytest.approx(views.api_equivalent_usd_per_mtok(fresh))
    assert ranges(fresh) is not None and fresh.answers.known("ranges") is not None


def test_overview_summary_quotes_the_fleet_figures(ev):
    lines = views.overview_summary(ev)
    f = ev.fleet
    text = " ".join(lines)
    assert fmt.money(f.idle_usd_per_month) in lines[0]
    assert fmt.percent(f.utilization) in lines[0]
    # The sample: 3 nodes, all holding the latency targets (its batch fills their quiet hours).
    assert (f.nodes_needed, f.nodes_needed_interactive, f.nodes_needed_offline_extra) == (3, 3, 0)
    assert "The plan needs 3 nodes (3 hold every latency target at peak): 2 more than you own" in text
    assert "bundled sample" in lines[-1]
    assert "estimates" in lines[-1]
    owned = int((contract.verdicts_frame(ev)["hosting"] == "owned").sum())
    assert f"{owned} of {len(ev.workloads)} workloads run on owned GPUs in the plan" in text
    assert f"cash bill is {fmt.money(f.total_monthly_usd)} a month" in text


def test_overview_summary_without_owned_nodes(store):
    ev = evaluate_store(store, make_scenario(fleet_nodes=0))
    lines = views.overview_summary(ev)
    assert lines[0].startswith("You own no nodes")
    assert not any("idle" in line for line in lines)
    # Utilization covers the nodes the plan would buy (issue 11); none only when the plan holds no node.
    util = views.overview_kpis(ev)["utilization"]
    assert (util is None) == (ev.fleet.nodes_in_plan == 0)


def test_overview_summary_with_spare_nodes(store):
    ev = evaluate_store(store, make_scenario(fleet_nodes=9))
    assert any("could be released" in line for line in views.overview_summary(ev))


def test_provenance_notes_carry_date_source_and_confidence(ev):
    notes = views.provenance_notes(ev)
    node, api, perf, model = (text for _, text in notes)
    p = contract.scenario_dict(ev)["node_price"]
    assert notes[0][0] == p["confidence"]
    assert notes[2][0] in {"estimated", "calibrated"} and notes[3][0] == "estimate"
    assert p["as_of"] in node and p["source"] in node and f"confidence {p['confidence']}" in node
    assert fmt.money(p["usd_per_node_hour"]) + "/hour" in node
    assert "API prices:" in api and "as of" in api
    assert "estimates" in perf
    assert model.startswith("Queueing model: ") and "(estimate)" in model  # the engine names its own model


def test_routing_map_converts_batch_windows_to_ms(ev):
    points = views.routing_map(ev).set_index("workload_id")
    w = ev.workloads.set_index("workload_id")
    batch = w["latency_slo_ms"].isna()
    assert (points.loc[batch, "batchability_ms"] == w.loc[batch, "batch_window_hours"] * 3.6e6).all()
    assert (points.loc[~batch, "batchability_ms"] == w.loc[~batch, "latency_slo_ms"]).all()
    assert set(points.loc[batch, "batchability"]) == {"batch window"}


def test_route_alternatives_group_identical_refusals(ev):
    vf = contract.verdicts_frame(ev)
    i = int(np.flatnonzero(vf["data_policy"] == "owned_only")[0])
    ok, rejected = views.route_alternatives(ev, i)
    assert ok["feasible"].all()
    assert list(ok["usd_per_request"]) == sorted(ok["usd_per_request"])
    apis = [r.label for r in ev.routes if r.hosting == "api"]
    policy = [routes for routes, why in rejected if "may not leave" in why]
    assert policy == [apis]  # every API refused once, in one line
    assert len(ok) + sum(len(r) for r, _ in rejected) == len(ev.routes)


def test_route_alternatives_name_a_route_the_plan_may_not_use(ev):
    """code-completion: Mercury-class (licensed weights, fee not entered) is the cheapest feasible route at
    $6,026 a month without its fee, the verdict LLaDA2.0-flash at $63,234: the cheaper row says it is not in
    the plan; every other row keeps its plain name."""
    i = int(np.flatnonzero(ev.workloads["workload_id"] == "code-completion")[0])
    ok, _ = views.route_alternatives(ev, i)
    assert ok.loc[0, "route"].startswith("Mercury") and not ok.loc[0, "permitted"]  # cheapest first
    assert ok.loc[0, "route"].endswith("(not in the plan: licence fee not entered)")
    assert not ok.loc[ok["permitted"], "route"].str.contains("licence").any()
    assert ev.routes[int(ev.verdict[i])].label in set(ok["route"])


def test_nodes_by_route_and_architecture_side_by_side(ev):
    routes = views.nodes_by_route(ev)
    assert set(routes["route_id"]) == set(ev.fleet.gpus_by_route)
    assert list(routes["gpus"]) == sorted(routes["gpus"], reverse=True)
    side = views.architecture_side_by_side(analysis.architecture_comparison(ev))
    interactive = ev.workloads.loc[ev.workloads["latency_slo_ms"].notna(), "workload_id"]
    assert list(dict.fromkeys(side["workload_id"])) == list(interactive)
    assert (side.groupby("workload_id").size() == 4).all()  # one row per architecture
    # The best row per architecture is the cheapest feasible one the plan may use, where there is one.
    comp = analysis.architecture_comparison(ev)
    for row in side[side["feasible"]].itertuples():
        same = comp[(comp["workload_id"] == row.workload_id) & (comp["architecture"] == row.architecture)
                    & comp["feasible"]]
        usable = same[same["permitted"]]
        assert row.permitted == (not usable.empty)
        assert row.monthly_usd == (usable if not usable.empty else same)["monthly_usd"].min()


def test_side_by_side_never_shows_a_route_the_plan_may_not_use_as_the_best(ev):
    """The sample's code-completion on diffusion: Mercury-class (licensed weights, no fee entered) holds it on
    1 node for $6,026 a month without its fee; LLaDA2.0-flash, which the plan may use, needs 3 nodes alone. The
    row shows LLaDA2.0-flash's 3 nodes: a 1-node bar read as the plan's told a buyer diffusion holds it on one
    node. onboarding-rt has no diffusion route but Mercury-class: shown, marked not permitted, its reason the
    missing fee."""
    comp = analysis.architecture_comparison(ev)
    side = views.architecture_side_by_side(comp).set_index(["workload_id", "architecture"])
    merc = comp[(comp["workload_id"] == "code-completion") & comp["route"].str.startswith("Mercury")].iloc[0]
    assert merc["feasible"] and not merc["permitted"] and merc["nodes"] == 1  # the case as worked out
    row = side.loc[("code-completion", "diffusion")]
    assert row["route"].startswith("LLaDA2.0-flash") and row["permitted"] and row["nodes"] == 3
    lone = side.loc[("onboarding-rt", "diffusion")]
    assert lone["route"].startswith("Mercury") and lone["feasible"] and not lone["permitted"]
    assert "licence" in lone["why_not"] and "Pricing" in lone["why_not"]


def test_routing_csv_has_one_row_per_workload(ev):
    text = views.routing_csv(ev).decode("utf-8").splitlines()
    assert text[0].startswith("workload_id,name,")
    assert len(text) == 1 + len(ev.workloads)


def test_costliest_interactive_gives_half_the_chart_to_unserved_then_the_costliest_served(ev):
    """The sample's interactive workloads: onboarding-rt and agent-steps without a route (in inventory order),
    served code-completion $63,234, lc-clearing $9,080, internal-chat $234 a month. Unserved first, at most
    half of the chart (rounded up) while served ones are left, then the served by cost."""
    vf = contract.verdicts_frame(ev)
    live = vf[vf["interactive"]].set_index("workload_id")["monthly_usd"]
    assert live[["onboarding-rt", "agent-steps"]].isna().all()  # the case as worked out
    assert live["code-completion"] > live["lc-clearing"] > live["internal-chat"]
    assert views.costliest_interactive(ev, 1) == ["onboarding-rt"]
    assert views.costliest_interactive(ev, 2) == ["onboarding-rt", "code-completion"]
    assert views.costliest_interactive(ev, 3) == ["onboarding-rt", "agent-steps", "code-completion"]
    assert views.costliest_interactive(ev, 5) == ["onboarding-rt", "agent-steps", "code-completion", "lc-clearing",
                                                  "internal-chat"]
    assert views.costliest_interactive(ev, 12) == views.costliest_interactive(ev, 5)


def test_table_text_reads_as_words_and_never_infinity():
    """Static tables (issue 14): inf, NaN and None read '—'; 1,247 ms reads '1.2 s'; 'moe' reads 'MoE'; $ whole."""
    frame = pd.DataFrame({"arch": ["moe", "diffusion", None], "p95": [float("inf"), 1247.0, None],
                          "usd": [72314.4, float("nan"), 0.0], "why": ["a long reason, whole", None, ""]})
    out = views.table_text(frame, {"arch": ("Architecture", "arch"), "p95": ("p95", "ms"), "usd": ("$ a month", "usd"),
                                   "why": ("Why not", "text")})
    assert list(out.columns) == ["Architecture", "p95", "$ a month", "Why not"]
    assert out.to_dict("list") == {"Architecture": ["MoE", "Diffusion", "—"], "p95": ["—", "1.2 s", "—"],
                                   "$ a month": ["$72,314", "—", "$0"], "Why not": ["a long reason, whole", "—", "—"]}
