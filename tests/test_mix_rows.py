"""A mixed scenario's per-workload verdicts (core.decision.mixrows): JSON, routing table, showback, reasons and the
Routing page all read the chosen mix, and add up to its bill to the cent."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from core.decision import contract, mixfleet, mixrows
from core.decision.engine import evaluate
from core.decision.showback import showback, workload_showback
from core.models import PricingOption, Scenario
from core.store.seed import sample_workloads_path

BILL = 68309.66  # the chosen mix on the sample: tests/test_mix.py's golden


@pytest.fixture(scope="module")
def mixed(seed_catalog):
    """Owned 1 x H100 SXM, candidates H100 / B200 bought outright or 1-year (tests/test_mix.py's report scenario):
    one evaluation for the whole module (~18 CPU s)."""
    sc = Scenario(owned_nodes_by_gpu={"H100 SXM": 1}, buy_gpus=("H100 SXM", "B200"),
                  buy_pricing=(PricingOption.OWNED, PricingOption.SAVINGS_1Y))
    return evaluate(seed_catalog, pd.read_csv(sample_workloads_path()), sc).with_source("bundled sample")


@pytest.mark.slow
def test_workloads_add_up_to_the_mix_bill_and_agree_everywhere(mixed):
    """The best mix (tests/test_mix.py): 1 owned H100 + 3 new B200 bought outright, $68,309.66 a month.

    workloads[].verdict.monthly_usd is each workload's attribution in the mix (tests/test_mix.py works it out):
    kyc-overnight keeps the owned H100's batch pool, 3.30320 GPU-hours a day / 24 x ($24,104.60 / 8 GPUs) =
    $414.70 (the one-kind plan attributes it $0 on its own 3-node fleet); credit-memos its API, $1,423.50;
    onboarding-rt, lc-clearing, code-completion and internal-chat share the B200 pools' 20 of 24 GPUs, $35,651.30
    (internal-chat is on the B200 in the mix, on its API in the one-kind plan; onboarding-rt has a route only on
    the B200); agent-steps has no route (null verdict). Full allocation shares the node money no pool uses,
    68,309.66 - 414.70 - 1,423.50 - 35,651.30 = $30,820.16, by node share: kyc-overnight 414.70 + 354.38 =
    $769.08; the B200 members $66,117.08. Sum = $68,309.66 to the cent, nothing unallocated. The routing table,
    the JSON (both details), fleet.attribution_by_workload and showback name the same route, GPU and $ per
    workload; the teams add up to the mix's bill."""
    doc = contract.to_dict(mixed, "verdicts")
    f = doc["fleet"]
    assert f["total_monthly_usd"] == BILL
    verdicts = {w["workload_id"]: w["verdict"] for w in doc["workloads"]}
    total = sum(v["monthly_usd"] for v in verdicts.values() if v is not None)
    assert round(total, 2) == BILL and f["unallocated_usd_per_month"] == 0.0
    assert (verdicts["kyc-overnight"]["gpu"], verdicts["kyc-overnight"]["monthly_usd"]) == ("H100 SXM", 769.08)
    assert verdicts["credit-memos"]["gpu"] is None and verdicts["credit-memos"]["monthly_usd"] == 1423.50
    assert (verdicts["internal-chat"]["route_id"], verdicts["internal-chat"]["gpu"]) == \
        ("owned:llada2-flash", "B200")
    # The one-kind plan sends internal-chat to its API: the mix moves it onto the B200 capacity it buys.
    assert mixed.routes[int(mixed.verdict[6])].hosting == "api" and mixed.fleet.gpu == "H100 SXM"
    assert (verdicts["onboarding-rt"]["route_id"], verdicts["onboarding-rt"]["gpu"]) == ("owned:llada2-flash", "B200")
    assert verdicts["agent-steps"] is None
    assert "kept on the 1 owned H100 SXM node" in verdicts["kyc-overnight"]["plan"]

    vf = contract.verdicts_frame(mixed)
    sb = workload_showback(mixed).set_index("workload_id")
    for row, att in zip(vf.itertuples(), f["attribution_by_workload"], strict=True):
        v = verdicts[row.workload_id]
        assert (row.route_id or None) == (v and v["route_id"]) == att["route_id"]
        assert (row.gpu or None) == (v and v["gpu"]) == att["gpu"]
        usd = 0.0 if v is None else v["monthly_usd"]
        assert np.nan_to_num(row.monthly_usd) == usd == att["monthly_usd"] == sb.loc[row.workload_id, "attributed_usd"]
    words = {w["workload_id"]: w for w in contract.to_dict(mixed, "routes")["workloads"]}
    assert {k: w["verdict"] for k, w in words.items()} == verdicts
    assert "H100 SXM alone (the one-kind plan)" in words["internal-chat"]["routes_scored_on"]
    teams = showback(mixed)
    assert teams.total_monthly_usd == BILL and teams.sum_usd == BILL
    assert round(sb["monthly_usd"].sum(), 2) == BILL
    assert "the chosen mix B200, bought outright (TCO)" in teams.source


@pytest.mark.slow
def test_the_cli_table_and_csv_show_the_mix(mixed):
    """`hangover evaluate` (table, CSV) on the same evaluation: each workload's line carries the mix's route, its
    $ and GPU (internal-chat: LLaDA2.0-flash on the B200 at $4,995 a month with its share of the idle,
    not the one-kind plan's API)."""
    from core.commands.evaluate import format_table
    from core.presentation.csv_export import routing_csv

    text = format_table(mixed)
    line = next(x for x in text.splitlines() if x.startswith("internal-chat"))
    assert "LLaDA2.0-flash" in line and "$4,995" in line and line.rstrip().endswith("B200")
    table = pd.read_csv(io.BytesIO(routing_csv(contract.verdicts_frame(mixed))))
    att = {r["workload_id"]: r for r in mixfleet.by_workload(mixed)}
    for r in table.itertuples():
        assert (r.route_id if isinstance(r.route_id, str) else None) == att[r.workload_id]["route_id"]
        assert np.nan_to_num(r.monthly_usd) == att[r.workload_id]["monthly_usd"]


@pytest.mark.slow
def test_reasons_are_true_to_the_mix(mixed):
    """kyc-overnight's reasons say where the mix runs it and its mix money ($769 on the owned H100 with its share
    of the idle), not the one-kind plan's $0, and leave out the fill stage's standalone comparisons (priced with new nodes barred);
    the B200 pool's members name the B200 plan; each row's sensitivity is the chain's at the estimate ends."""
    i = {w: k for k, w in enumerate(mixed.workloads["workload_id"])}
    kyc = mixrows.reasons(mixed, i["kyc-overnight"])
    assert any("kept on the 1 owned H100 SXM node" in s for s in kyc)
    assert any(s.startswith("Attributed $769 a month in the chosen mix") for s in kyc)
    assert not any(s.startswith(("Cheapest other route", "Attributed $0")) for s in kyc)
    chat = mixrows.reasons(mixed, i["internal-chat"])
    assert any("LLaDA2.0-flash (diffusion MoE 100B / 6.1B active) on B200, placed by the B200 plan (3 new, bought outright "
               "(TCO))" in s for s in chat)
    assert any(s.startswith("Attributed $4,995 a month in the chosen mix") for s in chat)
    vf = contract.verdicts_frame(mixed)
    central, fast, slow = mixrows.ends(mixed)
    assert list(vf["sensitive"]) == [c != a or c != b for c, a, b in zip(central, fast, slow, strict=True)]


@pytest.mark.slow
def test_the_report_routing_table_follows_the_mix(mixed):
    """The report's routing table rows are the mix's verdicts (route, $/month), its note no longer says they are the
    one-kind plan's, and the options table (still planned on one GPU) keeps its note."""
    import datetime as dt

    from core.presentation.report import build_summary

    s = build_summary(mixed, generated=dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    att = {r["workload_id"]: r for r in mixfleet.by_workload(mixed)}
    for r in s.workloads.rows:
        assert np.nan_to_num(r["monthly_usd"]) == att[r["workload_id"]]["monthly_usd"]
        assert (r["route_id"] or None) == att[r["workload_id"]]["route_id"]
    assert "sidebar's GPU alone" not in s.workloads.note and "chosen mix" in s.workloads.note
    assert "sidebar's GPU alone" in s.options.note


@pytest.mark.slow
def test_routing_and_showback_pages_show_the_mix(monkeypatch, tmp_path):
    """The Routing page in a mixed scenario (owned 1 x H100 SXM, candidates H100 / B200 at every option): the table's
    verdicts and $ are the mix's, the selected workload's reasons name the plan that placed it, the scored routes
    say which plan scored them; the Showback page's teams add up to the mix's bill."""
    import streamlit as st

    from tests.apptest_support import mixed_app

    at = mixed_app(monkeypatch, tmp_path, "H100 SXM,B200", "screens/routing.py")
    table = at.dataframe(key="routing_table").value.set_index("workload_id")
    assert table.loc["internal-chat", "route"].endswith("on B200")
    assert table.loc["kyc-overnight", "monthly_usd"] == 769.08
    assert round(float(np.nansum(table["monthly_usd"])), 2) == BILL  # full allocation: nothing unallocated
    words = " ".join(m.value for m in at.markdown)
    assert "Chosen mix (B200, bought outright (TCO))" in words  # the first row's reasons (kyc-overnight)
    assert any("scored on H100 SXM alone (the one-kind plan" in c.value for c in at.caption)
    at.switch_page("screens/showback.py").run()
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    total = frame.loc[frame["team"] == "Total (the cash bill)", "monthly_usd"].item()
    body = frame[frame["team"] != "Total (the cash bill)"]
    assert total == BILL and round(float(body["monthly_usd"].sum()), 2) == BILL
    st.cache_resource.clear()
    st.cache_data.clear()


def test_a_one_kind_scenario_keeps_its_routing_table(seed_catalog):
    """Without a mix the routing table is the plan's own (no gpu/plan columns), the reasons explain's."""
    from core.decision.explain import reasons

    w = pd.read_csv(sample_workloads_path()).head(2)
    ev = evaluate(seed_catalog, w, Scenario())
    vf = contract.verdicts_frame(ev)
    assert "gpu" not in vf.columns and "plan" not in vf.columns
    assert mixrows.plan_reasons(ev, 0) == reasons(ev, 0)
    assert json.dumps(contract.to_dict(ev, "verdicts")["workloads"][0]["verdict"]).count('"gpu"') == 0


@pytest.mark.slow
def test_the_unserved_work_shown_is_the_mixs(mixed):
    """The mix serves onboarding-rt on the B200s, which the one-kind H100 plan leaves out: the pages, the report
    and the JSON price only what the mix leaves unserved, agent-steps, at its cheapest route after the smallest
    change (Qwen3-235B-A22B at a 3.0 s target, 32 GPUs = 4 x $24,104.60 = $96,418.40), so the bill with it is
    68,309.66 + 96,418.40 = $164,728.06 (it read $261,187, onboarding-rt counted as unserved, before)."""
    from core.presentation import served

    assert (mixed.verdict[list(mixed.workloads["workload_id"]).index("onboarding-rt")]) < 0  # one-kind: unserved
    words = served.unserved_priced_words(mixed).splitlines()
    assert words[0].startswith("The plan serves 6 of 7 workloads; 1 unserved: the $68,310 bill leaves their work out.")
    assert "the bill with them would be $164,728 a month:" in words[0]
    assert len(words) == 2 and words[1].startswith("- agent-steps: Qwen3-235B-A22B (MoE; FP8), $96,418/month")
    assert served.with_unserved_total(mixed) == pytest.approx(164728.06, abs=0.01)
    js = contract.to_dict(mixed, "verdicts")["fleet"]["unserved_work"]
    assert [w["workload_id"] for w in js["workloads"]] == ["agent-steps"]
    assert js["total_monthly_usd_with_unserved"] == pytest.approx(164728.06, abs=0.01)
