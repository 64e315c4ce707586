"""Named scenarios: sidebar units, names, the store round trip, the comparison, its exports and the CLI."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import openpyxl
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import scenarios as S
from core.cli import main
from core.decision import contract
from core.errors import InputError
from core.models import Scenario
from core.presentation.report.comparison import (
    build_comparison_markdown,
    build_comparison_xlsx,
    comparison_dict,
    write_comparison,
)
from core.service import evaluate_store

# ---------------------------------------------------------------- sidebar units


def test_percent_inputs_become_shares():
    """Cost of capital typed as 8 (%) is 0.08 in the model; fallback 30 (%) is 0.30."""
    values = {"pricing": "owned", "max_fallback_pct": 30.0,
              "own_capex_usd_per_node": 300000.0, "own_depreciation_years": 4.0, "own_cost_of_capital_pct": 8.0,
              "own_kw_per_node": 8.0, "own_pue": 1.3, "own_usd_per_kwh": 0.10, "own_support_usd_per_year": 30000.0}
    sc = S.scenario_from_inputs(values)
    assert sc.max_fallback_share == 0.30
    assert sc.owned_hardware.cost_of_capital_rate == 0.08
    back = S.inputs_from_scenario(sc)
    assert back["own_cost_of_capital_pct"] == 8.0 and back["max_fallback_pct"] == 30.0


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(0, 10_000), pct=st.integers(0, 50), api=st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
       pricing=st.sampled_from(["on_demand", "savings_1y", "savings_3y"]), basis=st.sampled_from(["full", "marginal"]),
       price=st.sampled_from([0.0, 12.5, 98.32]), traffic=st.sampled_from(["office_hours", "measured"]))
def test_inputs_round_trip(nodes, pct, api, pricing, basis, price, traffic):
    values = {"gpu": "H100 SXM", "fleet_nodes": nodes, "pricing": pricing, "cost_basis": basis,
              "node_usd_per_hour": price, "api_price_scale": api, "sla_scale": 1.5, "max_fallback_pct": float(pct),
              "traffic_profile": traffic}
    sc = S.scenario_from_inputs(values)
    assert S.inputs_from_scenario(sc) == values
    assert S.scenario_from_inputs(S.inputs_from_scenario(sc)) == sc


@pytest.mark.parametrize("text, share", [("95%", 0.95), ("95", 0.95), ("0.95", 0.95), (0.95, 0.95), ("0,95", 0.95),
                                         ("8 %", 0.08), ("0.08", 0.08), ("100%", 1.0), ("0", 0.0)])
def test_parse_share_accepts_what_people_type(text, share):
    assert S.parse_share(text) == pytest.approx(share)


@pytest.mark.parametrize("text, words", [("abc", "not a share"), ("-5", "between 0 % and 100 %"),
                                         ("150%", "more than 100 %"), ("nan", "between")])
def test_parse_share_refuses_with_one_message(text, words):
    with pytest.raises(InputError, match=words):
        S.parse_share(text, what="--max-fallback-share")


def test_url_notes_name_garbled_and_unknown_settings():
    raw = {"sc_fleet_nodes": "abc", "sc_gpu": "H100 SXM", "sc_bogus": "1", "tab": "x", "sc_sla_scale": "2"}
    resolved = {"sc_fleet_nodes": "1", "sc_gpu": "H100 SXM", "sc_sla_scale": "2.0"}
    notes = S.url_notes(raw, resolved)
    assert len(notes) == 2
    assert "sc_fleet_nodes='abc'" in notes[0] and "shows 1" in notes[0]
    assert "sc_bogus" in notes[1] and "unknown" in notes[1]


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("bad, words", [
    ("", "needs a name"), ("   ", "needs a name"), ("a/b", "contains '/'"), ("x" * 61, "61 characters"),
    ("-plan", "start with a letter or digit"), ("plan\x07", r"contains '\\x07'"), ("a;b", "contains ';'"),
])
def test_bad_names_are_refused_clearly(bad, words):
    with pytest.raises(InputError, match=words):
        S.check_name(bad)


def test_names_are_tidied():
    assert S.check_name("  Plan   A (3y) ") == "Plan A (3y)"
    assert S.check_name("Dépôt 2027") == "Dépôt 2027"


# ---------------------------------------------------------------- store


def test_save_list_load_rename_delete(store):
    assert "m007_scenarios" in store.applied_migrations()
    three = S.scenario_from_inputs({"fleet_nodes": 3, "pricing": "savings_3y"})
    a = S.save_scenario(store, "Plan A", three, created_by="alice", note="three-year plan")
    assert (a.name, a.inventory_version, a.created_by, a.note) == ("Plan A", None, "alice", "three-year plan")
    assert a.scenario == three and a.created_at is not None
    S.save_scenario(store, "baseline", Scenario(), created_by="bob")
    assert [s.name for s in S.list_scenarios(store)] == ["baseline", "Plan A"]
    assert S.load_scenario(store, "plan a").scenario.fleet_nodes == 3  # any case finds it

    with pytest.raises(InputError, match="already saved"):
        S.save_scenario(store, "PLAN A", Scenario())
    replaced = S.save_scenario(store, "plan a", Scenario(), replace=True, created_by="carol")
    assert replaced.scenario == Scenario() and replaced.created_at == a.created_at
    assert replaced.updated_at >= a.updated_at

    assert S.rename_scenario(store, "plan a", "Plan B") == "renamed 'plan a' to 'Plan B'"
    with pytest.raises(InputError, match="a scenario named 'baseline' is already saved"):
        S.rename_scenario(store, "plan b", "Baseline")
    with pytest.raises(InputError, match="contains '/'"):
        S.rename_scenario(store, "plan b", "a/b")
    assert S.delete_scenario(store, "PLAN B") == "deleted 'Plan B'"
    with pytest.raises(InputError, match="no saved scenario named 'plan b'; saved scenarios: baseline"):
        S.load_scenario(store, "plan b")
    with pytest.raises(InputError, match="no saved scenario"):
        S.delete_scenario(store, "plan b")


def test_saved_on_the_latest_inventory_version_and_provenance(store):
    from core.inventory import read_inventory
    from core.inventory.versions import commit_inventory
    from core.store.seed import sample_workloads_path

    assert S.inventory_provenance(store).startswith("Bundled sample inventory (a demo bank)")
    report = read_inventory(sample_workloads_path())
    commit_inventory(store, report.frame, file_name="bank.csv", created_by="alice")
    label = S.inventory_provenance(store)
    assert label.startswith("Your inventory v1, uploaded by alice on 20") and label.endswith("from bank.csv")
    assert S.save_scenario(store, "on v1", Scenario()).inventory_version == 1
    assert S.save_scenario(store, "on the sample", Scenario(), inventory_version=None).inventory_version is None


# ---------------------------------------------------------------- comparison


def _fake(total, nodes, owned, idle, util, api, routes, scenario=None, served=None):
    """An evaluation as the comparison reads it: ev.fleet, contract.verdicts_frame(ev), ev.scenario."""
    ids = list(routes)
    vf = pd.DataFrame({
        "workload_id": ids, "name": [f"name of {i}" for i in ids],
        "route_id": [routes[i][0] for i in ids], "route": [routes[i][0].upper() for i in ids],
        "hosting": [routes[i][1] for i in ids], "monthly_usd": [routes[i][2] for i in ids],
    })
    fleet = SimpleNamespace(total_monthly_usd=total, nodes_needed=nodes, owned_nodes=owned, idle_usd_per_month=idle,
                            utilization=util, api_monthly_usd=api, inventory="version 2",
                            workloads_served=len(ids) if served is None else served, workloads_total=len(ids))
    return SimpleNamespace(fleet=fleet, verdicts_frame=lambda: vf, scenario=scenario or Scenario())


def _unserved(ev):
    """The fake's unserved work priced: $30,000 a month per workload it leaves unserved."""
    return 30_000.0 * (ev.fleet.workloads_total - ev.fleet.workloads_served)


def _table(ev):
    """The fake's routing table (what contract.verdicts_frame gives for a real evaluation)."""
    return ev.verdicts_frame()


def test_compare_evaluations_marks_each_changed_verdict():
    """w1 keeps its route; w2 moves from owned to API; w3 is only in A's inventory; w4 only in B's.

    Changed: w2, w3, w4 (3 of 4). B differs from A on w2, w3 (missing) and w4 (new): 3.
    """
    a = _fake(10_000.0, 2, 1, 700.0, 0.4, 100.0, {"w1": ("ar", "owned", 50.0), "w2": ("moe", "owned", 60.0),
                                                  "w3": ("ar", "owned", 70.0)})
    b = _fake(12_500.0, 3, 3, 900.0, 0.3, 400.0, {"w1": ("ar", "owned", 55.0), "w2": ("api-x", "api", 300.0),
                                                  "w4": ("ar", "owned", 10.0)})
    cmp = S.compare_evaluations([("A", a), ("B", b)], table=_table, unserved_usd=_unserved)
    assert cmp.names == ["A", "B"]
    assert cmp.changed_count == 3
    v = cmp.verdicts.set_index("workload_id")
    assert list(cmp.verdicts["workload_id"]) == ["w2", "w3", "w4", "w1"]  # changes first
    assert v.loc["w2", "route_0"] == "MOE" and v.loc["w2", "route_1"] == "API-X" and v.loc["w2", "changed"]
    assert v.loc["w3", "route_1"] == S.NOT_IN_INVENTORY and v.loc["w4", "route_0"] == S.NOT_IN_INVENTORY
    assert not v.loc["w1", "changed"] and v.loc["w1", "monthly_usd_1"] == 55.0
    assert v.loc["w4", "name"] == "name of w4"
    fa, fb = cmp.scenarios
    assert (fb.cash_bill_usd_per_month, fb.nodes_needed, fb.owned_nodes, fb.idle_usd_per_month, fb.utilization,
            fb.api_usd_per_month) == (12_500.0, 3, 3, 900.0, 0.3, 400.0)
    assert fa.verdicts_changed == 0 and fb.verdicts_changed == 3
    frame = cmp.figures_frame().set_index("key")
    assert frame.loc["cash_bill_usd_per_month", "B"] == 12_500.0
    assert pd.isna(frame.loc["verdicts_changed", "A"])  # the baseline has no count of its own
    table = cmp.verdicts_table(only_changed=True)
    assert list(table.columns) == ["workload_id", "name", "A", "B", "A $/month", "B $/month", "changed"]
    assert len(table) == 3

    with pytest.raises(InputError, match="compare 2 to 4"):
        S.compare_evaluations([("A", a)], table=_table, unserved_usd=_unserved)


@pytest.mark.slow
def test_compare_saved_scenarios_shows_their_difference(store):
    """Three owned nodes on the 3-year plan against one on the 1-year plan: a different bill, same inventory."""
    S.save_scenario(store, "one node", Scenario())
    S.save_scenario(store, "three nodes 3y", S.scenario_from_inputs({"fleet_nodes": 3, "pricing": "savings_3y"}))
    cmp = S.compare_scenarios(store, ["One Node", "three nodes 3y"])
    assert cmp.names == ["one node", "three nodes 3y"]
    direct = evaluate_store(store, S.scenario_from_inputs({"fleet_nodes": 3, "pricing": "savings_3y"}))
    two = cmp.scenarios[1]
    assert two.cash_bill_usd_per_month == pytest.approx(direct.fleet.total_monthly_usd)
    assert two.owned_nodes == 3 and cmp.scenarios[0].owned_nodes == 1
    assert two.cash_bill_usd_per_month != cmp.scenarios[0].cash_bill_usd_per_month
    assert {s.inventory for s in cmp.scenarios} == {"bundled sample"}
    assert len(cmp.verdicts) == len(contract.verdicts_frame(direct))

    with pytest.raises(InputError, match="named twice"):
        S.compare_scenarios(store, ["one node", "ONE NODE"])
    with pytest.raises(InputError, match="compare 2 to 4"):
        S.compare_scenarios(store, ["one node"])

    # The exports: its own workbook (two sheets, every workload), a Markdown section, JSON.
    wb = openpyxl.load_workbook(io.BytesIO(build_comparison_xlsx(cmp)))
    assert wb.sheetnames == ["Comparison", "Verdicts"]
    cells = [c for row in wb["Comparison"].iter_rows(values_only=True) for c in row if c is not None]
    assert "Cash bill per month" in cells and "three nodes 3y" in cells
    assert pytest.approx(two.cash_bill_usd_per_month) in [c for c in cells if isinstance(c, float)]
    assert wb["Verdicts"].max_row >= len(cmp.verdicts) + 3
    md = build_comparison_markdown(cmp)
    assert md.startswith("## Scenarios compared") and "| Cash bill per month |" in md
    d = comparison_dict(cmp)
    assert d["scenarios"][1]["owned_nodes"] == 3 and len(d["workloads"]) == len(cmp.verdicts)


def test_write_comparison_refuses_other_formats(tmp_path):
    a = _fake(1.0, 1, 1, 0.0, 0.5, 0.0, {"w1": ("ar", "owned", 1.0)})
    cmp = S.compare_evaluations([("A", a), ("B", a)], table=_table, unserved_usd=_unserved)
    with pytest.raises(InputError, match="use a .xlsx or .md"):
        write_comparison(cmp, tmp_path / "x.pdf")
    assert not (tmp_path / "x.pdf").exists()
    assert write_comparison(cmp, tmp_path / "x.md").read_text().startswith("## Scenarios compared")


# ---------------------------------------------------------------- names for files, missing prices


def test_download_names_differ_per_scenario():
    full = S.download_stem(Scenario(), "version 3")
    marginal = S.download_stem(Scenario(cost_basis="marginal"), "version 3")
    assert full == "gpu-hangover_version-3_h100-sxm_1-nodes_savings-1y_full"
    assert marginal != full and marginal.endswith("_marginal")
    named = S.download_stem(Scenario(fleet_nodes=3), "bundled sample", saved_name="Plan A (3y)")
    assert named == "gpu-hangover_plan-a-3y_bundled-sample_h100-sxm_3-nodes_savings-1y_full"


def test_price_problem_names_the_fix(store):
    from core.catalog import Catalog

    cat = Catalog.from_store(store)
    assert S.price_problem(cat, Scenario()) is None
    problem = S.price_problem(cat, Scenario(gpu="L40S"))
    assert problem.startswith("No 1-year savings plan price for L40S") and "node price override" in problem


# ---------------------------------------------------------------- CLI


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow
def test_cli_round_trip(capsys, tmp_path):
    db = str(tmp_path / "cli.duckdb")
    code, out, _ = _run(capsys, "--db", db, "scenario", "list")
    assert code == 0 and "no scenario is saved yet" in out
    code, out, err = _run(capsys, "--db", db, "scenario", "save", "Plan A", "--fleet-nodes", "3", "--pricing",
                          "savings_3y", "--by", "alice", "--note", "board option")
    assert code == 0, err
    assert out.startswith("saved 'Plan A' on the bundled sample inventory: 3 × H100 SXM nodes · 3-year savings plan")
    assert _run(capsys, "--db", db, "scenario", "save", "baseline")[0] == 0

    code, out, _ = _run(capsys, "--db", db, "scenario", "list")
    assert code == 0 and out.splitlines()[1].startswith("baseline") and "alice" in out.splitlines()[2]
    code, out, _ = _run(capsys, "--db", db, "scenario", "show", "plan a", "--format", "json")
    d = json.loads(out)
    assert d["name"] == "Plan A" and d["created_by"] == "alice" and d["note"] == "board option"
    assert d["scenario"]["fleet_nodes"] == 3 and d["scenario"]["pricing_option"] == "savings_3y"
    code, out, _ = _run(capsys, "--db", db, "scenario", "show", "Plan A")
    assert "fleet_nodes" in out and "inventory   bundled sample inventory" in out

    code, out, _ = _run(capsys, "--db", db, "scenario", "compare", "baseline", "Plan A", "--format", "json")
    cmp = json.loads(out)
    assert [s["name"] for s in cmp["scenarios"]] == ["baseline", "Plan A"]
    assert [s["owned_nodes"] for s in cmp["scenarios"]] == [1, 3]
    book = tmp_path / "compare.xlsx"
    code, out, err = _run(capsys, "--db", db, "scenario", "compare", "baseline", "Plan A", "--out", str(book))
    assert code == 0 and "Cash bill per month" in out and "Verdicts that change" in out
    assert err.startswith(f"wrote {book}") and openpyxl.load_workbook(book).sheetnames == ["Comparison", "Verdicts"]

    # --scenario on evaluate gives the saved scenario's figures; a flag on top overrides one input.
    code, out, _ = _run(capsys, "--db", db, "evaluate", "--scenario", "plan a", "--format", "json")
    ev = json.loads(out)
    assert ev["scenario"]["fleet_nodes"] == 3 and ev["scenario"]["pricing_option"] == "savings_3y"
    assert ev["fleet"]["total_monthly_usd"] == pytest.approx(cmp["scenarios"][1]["cash_bill_usd_per_month"])
    code, out, _ = _run(capsys, "--db", db, "evaluate", "--scenario", "plan a", "--fleet-nodes", "5",
                        "--format", "json")
    ev = json.loads(out)
    assert ev["scenario"]["fleet_nodes"] == 5 and ev["scenario"]["pricing_option"] == "savings_3y"
    out_md = tmp_path / "plan-a.md"
    code, out, err = _run(capsys, "--db", db, "report", "--scenario", "Plan A", "--out", str(out_md))
    assert code == 0, err and out_md.exists()

    assert _run(capsys, "--db", db, "scenario", "rename", "plan a", "Plan B")[1].strip() == "renamed 'Plan A' to 'Plan B'"
    assert _run(capsys, "--db", db, "scenario", "delete", "plan b")[1].strip() == "deleted 'Plan B'"
    code, out, _ = _run(capsys, "--db", db, "scenario", "list", "--format", "json")
    assert [s["name"] for s in json.loads(out)] == ["baseline"]


@pytest.mark.parametrize("argv, words", [
    (["scenario", "save", "a/b"], "contains '/'"),
    (["scenario", "save", ""], "needs a name"),
    (["scenario", "show", "nope"], "no saved scenario named 'nope'"),
    (["scenario", "rename", "nope", "x"], "no saved scenario named 'nope'"),
    (["scenario", "delete", "nope"], "no saved scenario named 'nope'"),
    (["scenario", "compare", "nope", "other"], "no saved scenario named 'nope'"),
    (["evaluate", "--scenario", "nope"], "no saved scenario named 'nope'"),
    (["scenario", "save", "x", "--version", "7"], "no inventory version 7"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, words):
    code, out, err = _run(capsys, "--db", str(tmp_path / "bad.duckdb"), *argv)
    assert code == 2 and words in err and err.startswith("hangover: error:") and len(err.strip().splitlines()) == 1
    assert _run(capsys, "--db", str(tmp_path / "bad.duckdb"), "scenario", "list")[1].startswith("no scenario")


def test_cli_names_are_unique_whatever_the_case(capsys, tmp_path):
    db = str(tmp_path / "u.duckdb")
    assert _run(capsys, "--db", db, "scenario", "save", "Plan A")[0] == 0
    code, _, err = _run(capsys, "--db", db, "scenario", "save", "plan a", "--fleet-nodes", "2")
    assert code == 2 and "a scenario named 'Plan A' is already saved" in err
    assert _run(capsys, "--db", db, "scenario", "save", "plan a", "--fleet-nodes", "2", "--replace")[0] == 0
    code, out, _ = _run(capsys, "--db", db, "scenario", "show", "PLAN A", "--format", "json")
    assert json.loads(out)["scenario"]["fleet_nodes"] == 2


def test_cli_share_flags_take_percent_or_fraction(capsys):
    """--max-fallback-share 30% and --cost-of-capital-rate 8 (percent) reach the model as 0.30 and 0.08."""
    code, out, err = _run(capsys, "evaluate", "--format", "json", "--max-fallback-share", "30%", "--pricing", "owned",
                          "--cost-of-capital-rate", "8")
    assert code == 0, err
    sc = json.loads(out)["scenario"]
    assert sc["max_fallback_share"] == 0.30 and sc["owned_hardware"]["cost_of_capital_rate"] == 0.08
    with pytest.raises(SystemExit) as stop:
        main(["evaluate", "--max-fallback-share", "lots"])
    assert stop.value.code == 2 and "not a share; write it as 95%, 95 or 0.95" in capsys.readouterr().err


def test_simulate_takes_a_saved_scenario(capsys, tmp_path):
    db = str(tmp_path / "sim.duckdb")
    assert _run(capsys, "--db", db, "scenario", "save", "Plan A", "--fleet-nodes", "2")[0] == 0
    code, out, err = _run(capsys, "--db", db, "simulate", "--scenario", "plan a", "--requests", "1000",
                          "--format", "json")
    assert code == 0, err
    assert json.loads(out)["workloads"]
    code, _, err = _run(capsys, "--db", db, "simulate", "--scenario", "nope")
    assert code == 2 and "no saved scenario named 'nope'" in err


def test_compare_writes_every_out_file(capsys, tmp_path):
    """`--out a.xlsx --out b.md` writes both files (issue 34: only the last one was written)."""
    db = str(tmp_path / "outs.duckdb")
    assert _run(capsys, "--db", db, "scenario", "save", "baseline")[0] == 0
    assert _run(capsys, "--db", db, "scenario", "save", "three", "--fleet-nodes", "3")[0] == 0
    book, text = tmp_path / "a.xlsx", tmp_path / "b.md"
    code, _, err = _run(capsys, "--db", db, "scenario", "compare", "baseline", "three", "--out", str(book),
                        "--out", str(text))
    assert code == 0, err
    assert openpyxl.load_workbook(book).sheetnames == ["Comparison", "Verdicts"]
    assert "baseline" in text.read_text(encoding="utf-8") and "three" in text.read_text(encoding="utf-8")
    assert [line.split()[1] for line in err.splitlines() if line.startswith("wrote")] == [str(book), str(text)]


@pytest.mark.parametrize("outs, message", [
    (["a.xlsx", "b.txt"], "--out: cannot write a comparison as 'b.txt'"),
    (["a.md", "a.md"], "--out: the same file is named twice"),
])
def test_compare_refuses_a_bad_out_before_writing_any(capsys, tmp_path, outs, message):
    db = str(tmp_path / "bad.duckdb")
    assert _run(capsys, "--db", db, "scenario", "save", "baseline")[0] == 0
    assert _run(capsys, "--db", db, "scenario", "save", "three", "--fleet-nodes", "3")[0] == 0
    argv = [a for o in outs for a in ("--out", str(tmp_path / o))]
    code, _, err = _run(capsys, "--db", db, "scenario", "compare", "baseline", "three", *argv)
    assert code == 2 and message in err and err.count("hangover: error:") == 1
    assert not any((tmp_path / o).exists() for o in outs)


def test_a_note_over_the_limit_is_refused_naming_the_field(store):
    with pytest.raises(InputError, match=r"^note: 2,001 characters long; the limit is 2,000$"):
        S.save_scenario(store, "long note", Scenario(), note="n" * 2001)
    assert S.save_scenario(store, "ok note", Scenario(), note="  n" * 600 + " ").note == ("  n" * 600).strip()


def test_url_notes_quote_a_long_value_clipped():
    notes = S.url_notes({"sc_fleet_nodes": "9" * 5000, "sc_" + "k" * 300: "v"}, {"sc_fleet_nodes": "1"})
    assert len(notes) == 2 and all(len(n) < 300 for n in notes), notes
    assert "(5,000 characters)" in notes[0] and "(303 characters)" in notes[1]


def test_a_scenario_serving_less_is_never_called_cheaper_without_saying_so():
    """A serves its 3 workloads for $10,000 a month; B serves 1 of them for $4,000: $6,000 (60 %) less, but with its
    2 unserved workloads priced at $30,000 each (the fake's price) B is 4,000 + 60,000 = $64,000, $54,000 more
    than A's $10,000. The line says all of it; the figures table and the JSON carry the served counts."""
    routes = {"w1": ("ar", "owned", 50.0), "w2": ("ar", "owned", 60.0), "w3": ("ar", "owned", 70.0)}
    a = _fake(10_000.0, 1, 1, 0.0, 0.5, 0.0, routes)
    b = _fake(4_000.0, 1, 1, 0.0, 0.2, 0.0, routes, served=1)
    cmp = S.compare_evaluations([("A", a), ("B", b)], table=_table, unserved_usd=_unserved)
    assert cmp.bill_lines() == [
        "B: $4,000 a month, $6,000 (60%) less than A — but it serves 1 of 3 workloads, A 3 of 3; with unserved work "
        "priced, $54,000 more ($64,000 against $10,000, estimates)."]
    fig = cmp.figures_frame().set_index("key")
    assert fig.loc["served", "B"] == "1 of 3" and fig.loc["bill_with_unserved_usd_per_month", "B"] == 64_000.0
    d = comparison_dict(cmp)
    assert [s["workloads_served"] for s in d["scenarios"]] == [3, 1]
    assert d["bill_lines"] == cmp.bill_lines()
    same = S.compare_evaluations([("A", a), ("C", a)], table=_table, unserved_usd=_unserved)
    assert same.bill_lines() == ["C: $10,000 a month the same as A; both serve 3 of 3 workloads."]
