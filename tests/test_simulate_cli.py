"""`hangover simulate` (issue 12): the JSON contract, the table, --deployment, and refusals."""

from __future__ import annotations

import json

import pytest

from core.cli import main

WORKLOAD_KEYS = {"workload_id", "deployment_id", "hosting", "slo_ms", "analytic_p95_ms", "simulated_p95_ms",
                 "simulated_p95_ci_ms", "share_within_slo"}
DEPLOYMENT_KEYS = {"deployment_id", "replicas", "concurrency_cap", "share_within_slo_one_replica_fewer"}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return str(tmp_path_factory.mktemp("sim") / "h.duckdb")


@pytest.fixture(scope="module")
def sample_json(db):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--db", db, "simulate", "--requests", "5000", "--seed", "3", "--format", "json"]) == 0
    return json.loads(buf.getvalue())


def test_json_has_exactly_the_issue_keys(sample_json):
    assert set(sample_json) == {"workloads", "deployments"}
    assert sample_json["workloads"] and sample_json["deployments"]
    for w in sample_json["workloads"]:
        assert set(w) == WORKLOAD_KEYS
        assert w["hosting"] == "owned"
        lo, hi = w["simulated_p95_ci_ms"]
        assert lo <= w["simulated_p95_ms"] <= hi
        assert 0.0 <= w["share_within_slo"] <= 1.0
    ids = {d["deployment_id"] for d in sample_json["deployments"]}
    for d in sample_json["deployments"]:
        assert set(d) == DEPLOYMENT_KEYS
        assert d["replicas"] >= 1 and d["concurrency_cap"] >= 1
        fewer = d["share_within_slo_one_replica_fewer"]
        assert (fewer is None) == (d["replicas"] == 1)
    assert {w["deployment_id"] for w in sample_json["workloads"]} <= ids


def test_same_seed_same_numbers(db, sample_json, capsys):
    assert main(["--db", db, "simulate", "--requests", "5000", "--seed", "3", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == sample_json


def test_table_and_one_deployment(db, sample_json, capsys):
    # A pool of more than one replica, so the table has its one-replica-fewer column (the sample's LLaDA2.0-flash
    # throughput tier runs one).
    dep = next(d for d in sample_json["deployments"] if d["replicas"] > 1)["deployment_id"]
    assert main(["--db", db, "simulate", "--requests", "2000", "--deployment", dep]) == 0
    out = capsys.readouterr().out
    assert "analytic p95" in out and "one replica fewer" in out and dep in out


@pytest.mark.parametrize("argv, message", [
    (["--deployment", "owned:nope"], "no owned interactive deployment"),
    (["--requests", "10"], "between 1,000 and 2,000,000"),
])
def test_refusals_are_one_line(db, capsys, argv, message):
    assert main(["--db", db, "simulate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err


@pytest.mark.slow
def test_fleet_page_check_by_simulation_button(monkeypatch, tmp_path):
    """AppTest: the button runs the check and shows the chart (analytic vs simulated vs target), table and verdicts."""
    from pathlib import Path

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.apptest_support import figures, sweep_on_demand

    sweep_on_demand(monkeypatch)
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    try:
        at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"), default_timeout=240)
        at.run()
        at.switch_page("screens/fleet.py").run()
        assert not at.exception, at.exception
        assert not [c for c in figures(at) if c.startswith("Analytic vs simulated")]  # nothing before the click
        at.button(key="fleet_simulate").click().run()
        assert not at.exception, at.exception
        (chart,) = [c for t, c in figures(at).items() if t.startswith("Analytic vs simulated")]
        names = [tr["name"] for tr in chart["data"]]
        assert names == ["Simulated p95 (95 % interval)", "Analytic p95 (what the plan sized on)", "Target (p95)"]
        (table,) = [d.value for d in at.dataframe if "simulated_p95_ms" in d.value.columns]
        assert len(table) == len(chart["data"][0]["x"]) >= 1
        assert (table["simulated_p95_ms"] > 0).all() and table["share_within_slo"].between(0, 1).all()
        said = " ".join(m.value for m in at.markdown)
        assert "in simulation" in said and "replica" in said
    finally:
        st.cache_resource.clear()
        st.cache_data.clear()
