"""`hangover evaluate`: the table, the JSON contract, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest

from core.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow
def test_table_on_the_bundled_sample(capsys):
    code, out, _ = _run(capsys, "evaluate")
    assert code == 0
    assert "bundled sample" in out and "onboarding-rt" in out and "idle $" in out
    # The bill at both ends of the performance estimates, with what the cheaper-looking end leaves out.
    ranges = next(line for line in out.splitlines() if line.startswith("Estimate range"))
    assert "at the pessimistic end" in ranges and "The pessimistic end's bill leaves out 1 workload" in ranges


def test_json_contract_and_flags(capsys):
    code, out, _ = _run(capsys, "evaluate", "--format", "json", "--fleet-nodes", "3", "--pricing", "on_demand",
                        "--api-price-scale", "2")
    assert code == 0
    d = json.loads(out)
    assert d["scenario"]["fleet_nodes"] == 3
    assert d["scenario"]["node_price"]["usd_per_node_hour"] == pytest.approx(55.04)
    assert d["scenario"]["api_price_scale"] == 2.0
    assert d["fleet"]["owned_nodes"] == 3
    ids = {w["workload_id"] for w in d["workloads"]}
    assert "kyc-overnight" in ids
    for w in d["workloads"]:
        assert w["verdict"] is None or w["verdict"]["hosting"] in ("owned", "api")


@pytest.mark.slow
def test_override_node_price_moves_cost(capsys):
    _, cheap, _ = _run(capsys, "evaluate", "--format", "json", "--node-usd-per-hour", "10")
    _, dear, _ = _run(capsys, "evaluate", "--format", "json", "--node-usd-per-hour", "100")
    assert json.loads(cheap)["fleet"]["owned_monthly_usd"] < json.loads(dear)["fleet"]["owned_monthly_usd"]


def test_workloads_file_flag(capsys, tmp_path):
    src = (tmp_path.parent / "x.csv")
    from core.store.seed import sample_workloads_path

    src.write_text(sample_workloads_path().read_text(encoding="utf-8").splitlines()[0] + "\n"
                   + "w1,One,ops,1000,2,500,100,2000,,external_ok,chat,0.8,0,\n", encoding="utf-8")
    code, out, err = _run(capsys, "evaluate", "--workloads", str(src))
    assert code == 0, err
    assert "w1" in out


@pytest.mark.parametrize("argv, message", [
    (["--gpu", "X100"], "unknown GPU 'X100'"),
    (["--fleet-nodes", "-1"], "fleet_nodes"),
    (["--sla-scale", "0"], "sla_scale"),
    (["--workloads", "/nonexistent/inv.csv"], "does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, _, err = _run(capsys, "evaluate", *argv)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.startswith("hangover: error:")


def test_unknown_pricing_option_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--pricing", "lease"])
    assert exc.value.code == 2
    assert "invalid choice: 'lease'" in capsys.readouterr().err


def test_zero_sla_in_inventory_is_rejected(capsys, tmp_path):
    from core.store.seed import sample_workloads_path

    header = sample_workloads_path().read_text(encoding="utf-8").splitlines()[0]
    f = tmp_path / "bad.csv"
    f.write_text(header + "\nw1,One,ops,1000,2,500,100,0,,external_ok,chat,0.8,0,\n", encoding="utf-8")
    code, _, err = _run(capsys, "evaluate", "--workloads", str(f))
    assert code == 2 and "latency_slo_ms" in err


def test_empty_inventory_is_rejected(capsys, tmp_path):
    from core.store.seed import sample_workloads_path

    f = tmp_path / "empty.csv"
    f.write_text(sample_workloads_path().read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    code, _, err = _run(capsys, "evaluate", "--workloads", str(f))
    assert code == 2 and err.strip().count("\n") <= 1


@pytest.mark.slow
def test_owned_hardware_flags_price_the_node(capsys):
    """Seed 8xH100: full $14.3962/h; capex 300k -> 600k adds (75,000 + 12,000)/8,760 = $9.9315/h -> $24.3277/h."""
    _, seed, _ = _run(capsys, "evaluate", "--format", "json", "--pricing", "owned")
    _, dear, _ = _run(capsys, "evaluate", "--format", "json", "--pricing", "owned", "--capex-usd-per-node", "600000")
    assert json.loads(seed)["scenario"]["node_price"]["usd_per_node_hour"] == pytest.approx(14.3962, abs=1e-3)
    node = json.loads(dear)["scenario"]["node_price"]
    assert node["usd_per_node_hour"] == pytest.approx(24.3277, abs=1e-3)
    assert node["source"] == "your scenario inputs" and node["confidence"] == "user"
    code, _, err = _run(capsys, "evaluate", "--pricing", "owned", "--pue", "0.5")
    assert code == 2 and "pue" in err


@pytest.mark.parametrize("detail, indent", [("routes", 2), ("verdicts", None)])
def test_streamed_json_is_the_contract_to_the_byte(catalog, bank, detail, indent):
    """The JSON is written in pieces as each workload's record is made (the per-route detail of 100,000 workloads
    is ~1.5 GB never held at once): the pieces join to exactly json.dumps of the contract's dict."""
    from core.decision import contract
    from core.decision.engine import evaluate
    from core.models import Scenario

    ev = evaluate(catalog, bank, Scenario())
    whole = json.dumps(contract.to_dict(ev, detail), indent=indent, ensure_ascii=False)
    assert "".join(contract.iter_json(ev, detail, indent=indent)) == whole


def test_json_holds_verdicts_only_above_the_routes_size(capsys, monkeypatch):
    """Above ROUTES_DETAIL_MAX_WORKLOADS workloads (here 3: the sample has 7) the default JSON holds the verdicts,
    says so on standard error with the size the routes would take (7 x 15 KB = ~0 MB), and --detail routes still
    writes every route."""
    from core.commands import evaluate as evaluate_cmd

    monkeypatch.setattr(evaluate_cmd, "ROUTES_DETAIL_MAX_WORKLOADS", 3)
    code, out, err = _run(capsys, "evaluate", "--format", "json")
    assert code == 0
    assert "7 workloads: the JSON holds each workload's verdict only" in err and "--detail routes" in err
    assert all("routes" not in w and "reasons" not in w for w in json.loads(out)["workloads"])
    code, out, err = _run(capsys, "evaluate", "--format", "json", "--detail", "routes")
    assert code == 0 and err == ""
    assert all(len(w["routes"]) > 1 for w in json.loads(out)["workloads"])
