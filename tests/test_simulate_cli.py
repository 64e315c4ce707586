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
    dep = sample_json["deployments"][0]["deployment_id"]
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
