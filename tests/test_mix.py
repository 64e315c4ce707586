"""What to buy next (core.decision.mix): owned nodes keep their GPU, candidates per GPU and option, side by side."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from core.cli import main
from core.decision import mix
from core.decision.engine import evaluate
from core.errors import InputError
from core.models import CostBasis, PricingOption, Scenario
from core.scenarios import inputs_from_scenario, parse_gpu_list, parse_owned, scenario_from_inputs
from core.store.seed import sample_workloads_path

GPUS = ("H100 SXM", "H200 SXM", "B200")
_plans: dict[tuple[bytes, str], object] = {}


def memo_evaluate(catalog, workloads, scenario):
    """engine.evaluate remembered by (inventory, scenario): the properties price the same chains many times."""
    key = (pd.util.hash_pandas_object(workloads, index=False).to_numpy().tobytes(), scenario.model_dump_json())
    if key not in _plans:
        _plans[key] = evaluate(catalog, workloads, scenario)
    return _plans[key]


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return pd.read_csv(sample_workloads_path())


def test_owned_and_candidates_parse_as_typed():
    assert parse_owned(["H100 SXM:1", "H200 SXM:2,H100 SXM:1"]) == {"H100 SXM": 2, "H200 SXM": 2}
    assert parse_gpu_list("H100 SXM, H200 SXM,,B200,H100 SXM") == GPUS
    for bad in ("H100 SXM", "H100 SXM:-1", ":3", "H100 SXM:1.5", ""):
        with pytest.raises(InputError):
            parse_owned(bad)
    sc = scenario_from_inputs({"owned_by_gpu": "H200 SXM:2", "buy_gpus": "B200"})
    assert (sc.gpu, sc.fleet_nodes, sc.owned_nodes_by_gpu, sc.buy_gpus) == ("H200 SXM", 2, {"H200 SXM": 2}, ("B200",))
    assert scenario_from_inputs(inputs_from_scenario(sc)) == sc
    assert not scenario_from_inputs({}).mixed


@pytest.mark.slow
def test_sample_buy_options_golden(seed_catalog, sample):
    """Owned 1 x H100 SXM (the sample bank's), candidates H100 / H200 / B200 at every option.

    The owned node is paid at the scenario's 1-year price whatever is bought: 1 x $33.02 x 730 = $24,104.60.
    One-kind chain at that option is today's plan: 4 H100 nodes, $97,841.90 (owned 24,104.60 + 3 new x 33.02 x
    730 = 72,313.80 + API 1,423.50).
    The best mix buys one B200 at its TCO (seed estimate): capex 450,000 / 4 y = 112,500 a year, cost of
    capital 450,000 x 0.5 x 8 % = 18,000 a year -> 130,500 / 8,760 = $14.8973/h; power 11 kW x 1.3 x $0.10 =
    $1.43/h; support 35,000 / 8,760 = $3.9954/h; $20.3227/h x 730 = $14,835.57 a month. The owned H100 keeps
    the Qwen3-30B-A3B batch pool; the B200 takes the rest but one workload left on its API ($1,423.50).
    Bill 24,104.60 + 14,835.57 + 1,423.50 = $40,363.67.
    """
    sc = Scenario(owned_nodes_by_gpu={"H100 SXM": 1}, buy_gpus=GPUS)
    bo = mix.buy_options(seed_catalog, sample, sc, memo_evaluate)
    assert len(bo.rows) == 12 and not bo.skipped
    today = next(p for p in bo.rows if p.gpu == "H100 SXM" and p.option == "savings_1y")
    assert (today.owned_usd, today.new_nodes_usd, today.api_usd, today.total_usd) == \
        (24104.60, 72313.80, 1423.50, 97841.90)
    assert today.new_nodes[0].nodes == 3
    best = bo.best
    assert (best.gpu, best.option, best.new_nodes[0].nodes) == ("B200", "owned", 1)
    assert (best.owned_usd, best.new_nodes_usd, best.api_usd, best.total_usd) == (24104.60, 14835.57, 1423.50, 40363.67)
    assert round(best.owned_usd + best.new_nodes_usd + best.api_usd + best.licence_usd, 2) == best.total_usd
    # Energy, a line within the node lines: the B200 bought outright draws 11 kW x PUE 1.3 x $0.10/kWh = $1.43/h,
    # x 730 = $1,043.90 a month; the owned H100 is priced at a reserved rate, which includes its power.
    assert best.energy_usd == 1043.90 and best.new_nodes[0].energy_usd_per_month == 1043.90
    assert today.energy_usd == 0.0
    on_owned = {d.gpu for d in best.deployments if d.on_owned_nodes}
    assert on_owned == {"H100 SXM"}  # the owned node stays an H100
    assert {d.gpu for d in best.deployments if not d.on_owned_nodes} == {"B200"}
    # Buying nothing leaves the owned-only work that does not fit unserved, and is no candidate for the best.
    assert bo.buy_nothing.new_node_count == 0 and bo.buy_nothing.unserved > best.unserved


@pytest.mark.slow
@pytest.mark.parametrize(("basis", "nodes"), [(CostBasis.FULL, 1), (CostBasis.MARGINAL, 1), (CostBasis.MARGINAL, 2)])
def test_one_candidate_equal_to_the_owned_gpu_is_todays_plan(seed_catalog, sample, basis, nodes):
    """The goldens' scenarios (sample full, sample marginal, 2-node fleet marginal): with the owned GPU the only
    candidate at the scenario's option, the mix is the one-type plan: same new nodes, same bill to the cent."""
    sc = Scenario(cost_basis=basis, fleet_nodes=nodes)
    today = evaluate(seed_catalog, sample, sc)
    mixed = sc.model_copy(update={"owned_nodes_by_gpu": {sc.gpu: nodes}, "buy_gpus": (sc.gpu,),
                                  "buy_pricing": (sc.pricing_option,)})
    bo = mix.buy_options(seed_catalog, sample, mixed, evaluate)
    (only,) = bo.rows
    assert only.new_nodes[0].nodes == today.fleet.new_nodes
    assert only.total_usd == today.fleet.total_monthly_usd
    assert only.api_usd == today.fleet.api_monthly_usd


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cands=hs.lists(hs.sampled_from(GPUS), min_size=1, max_size=2, unique=True), extra=hs.sampled_from(GPUS),
       opts=hs.lists(hs.sampled_from(list(mix.OPTION_ORDER)), min_size=1, max_size=2, unique=True),
       owned=hs.sampled_from([{"H100 SXM": 1}, {"H200 SXM": 1}, {"H100 SXM": 1, "B200": 1}]))
def test_adding_a_candidate_never_raises_the_bill(seed_catalog, sample, cands, extra, opts, owned):
    """Property: the best mix with one more candidate GPU costs at most what it cost without it."""
    sc = Scenario(owned_nodes_by_gpu=owned, buy_gpus=tuple(cands), buy_pricing=tuple(opts))
    more = sc.model_copy(update={"buy_gpus": tuple(dict.fromkeys([*cands, extra]))})
    before = mix.buy_options(seed_catalog, sample, sc, memo_evaluate).best.total_usd
    after = mix.buy_options(seed_catalog, sample, more, memo_evaluate).best.total_usd
    assert after <= before


@pytest.mark.slow
def test_owned_h100_stays_h100_in_the_json(tmp_path, capsys):
    """`--owned "H100 SXM:1" --buy "H200 SXM"`: the owned node is an H100, new nodes H200, buy_options present;
    one-kind fields keep describing the owned GPU."""
    db = str(tmp_path / "s.duckdb")
    assert main(["--db", db, "evaluate", "--owned", "H100 SXM:1", "--buy", "H200 SXM", "--buy-pricing",
                 "savings_1y", "--format", "json", "--detail", "verdicts"]) == 0
    out = json.loads(capsys.readouterr().out)
    f = out["fleet"]
    assert f["gpu"] == "H100 SXM" and f["owned_nodes_by_gpu"] == {"H100 SXM": 1}
    assert out["scenario"]["buy_gpus"] == ["H200 SXM"]
    assert {n["gpu"] for n in f["new_nodes"]} <= {"H200 SXM"}
    assert {d["gpu"] for d in f["mix"]["deployments"] if d["on_owned_nodes"]} <= {"H100 SXM"}
    assert [r["row"] for r in f["buy_options"]] == ["best for this GPU", "best mix", "buy nothing"]
    assert all(d["gpu"] == "H100 SXM" for d in f["deployments"])


def test_a_gpu_without_a_price_for_an_option_is_skipped_not_fatal(seed_catalog, sample):
    """MI300X has an on-demand row only (RunPod) and no owned-hardware figures: its 1-year option is named as
    skipped, its on-demand one priced."""
    sc = Scenario(owned_nodes_by_gpu={"H100 SXM": 1}, buy_gpus=("MI300X",),
                  buy_pricing=(PricingOption.SAVINGS_1Y, PricingOption.ON_DEMAND))
    bo = mix.buy_options(seed_catalog, sample, sc, memo_evaluate)
    assert [p.option for p in bo.rows] == ["on_demand"]
    assert len(bo.skipped) == 1 and "MI300X" in bo.skipped[0]


@pytest.mark.slow
def test_the_report_names_gpu_option_and_count(tmp_path):
    """The brief's "What to buy next" section names the GPU type, the purchase option and the count bought."""
    db, out = str(tmp_path / "s.duckdb"), tmp_path / "r.md"
    assert main(["--db", db, "report", "--owned", "H100 SXM:1", "--buy", "H100 SXM,B200", "--buy-pricing",
                 "owned,savings_1y", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "## What to buy next" in text
    assert "Buy 1 × B200, bought outright (TCO): \\$40,363.67 a month" in text  # "$" escaped: not Markdown math
    assert "| buy nothing | nothing |" in text


@pytest.mark.slow
def test_fleet_page_shows_the_choice(monkeypatch, tmp_path):
    """Fleet sizing with owned nodes by GPU and candidates typed in the sidebar: the sentence names the best mix,
    the chart holds one bar per row (three GPUs, the best mix, buy nothing) and the table lists them."""
    from pathlib import Path

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.apptest_support import figures

    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"), default_timeout=600)
    at.run()
    at.text_input(key="sc_owned_by_gpu").set_value("H100 SXM:1")
    at.text_input(key="sc_buy_gpus").set_value("H100 SXM,H200 SXM,B200").run()
    at.switch_page("screens/fleet.py").run()
    assert not at.exception, at.exception
    assert any("Buy 1 × B200, bought outright (TCO)" in m.value for m in at.markdown)
    (chart,) = [c for t, c in figures(at).items() if t.startswith("What to buy next")]
    assert len(chart["data"][0]["y"]) == 5
    table = next(t.value for t in at.table if "Row" in t.value.columns)
    assert list(table["Row"]) == ["best for this GPU"] * 3 + ["best mix", "buy nothing"]
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.mark.slow
def test_the_table_names_what_to_buy(tmp_path, capsys):
    """The plain-text output ends with the choice and one line per row; without candidates it has none."""
    db = str(tmp_path / "s.duckdb")
    assert main(["--db", db, "evaluate", "--owned", "H100 SXM:1", "--buy", "B200", "--buy-pricing", "owned"]) == 0
    text = capsys.readouterr().out
    assert "What to buy next: 1 × B200, bought outright (TCO), $40,364/month in all" in text
    assert "  buy nothing: buy nothing: new nothing;" in text
    assert main(["--db", db, "evaluate"]) == 0
    assert "What to buy next" not in capsys.readouterr().out
