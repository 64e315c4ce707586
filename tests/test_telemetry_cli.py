"""`hangover telemetry import|list|summary` through core.cli.main; user errors are one line and exit code 2."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from tests.test_telemetry import DATA, nvidia_smi_week, write

KEYS = {"gpus", "samples", "from", "to", "utilization", "hourly_utilization", "idle_usd_per_month", "metric"}


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "h.duckdb")


def test_import_list_summary(db, tmp_path, capsys):
    path = write(tmp_path, "gpu.csv", nvidia_smi_week())
    assert main(["--db", db, "telemetry", "import", str(path), "--node", "bank-node-1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpu.csv (nvidia-smi CSV): 4,032 samples from 4 GPU(s) on bank-node-1, 2026-11-02 00:00")

    assert main(["--db", db, "telemetry", "import", str(path), "--node", "bank-node-1"]) == 0
    assert "already imported" in capsys.readouterr().out

    assert main(["--db", db, "telemetry", "list"]) == 0
    out = capsys.readouterr().out
    assert "gpu.csv" in out and "4,032" in out and out.rstrip().splitlines()[-1].startswith("1 file(s)")

    assert main(["--db", db, "telemetry", "summary", "--node-usd-per-hour", "40"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("measured 2 – 8 Nov 2026 on bank-node-1: 4 GPU(s), 4,032 samples, 672 GPU-hours")
    assert "utilization 29.7%" in out and "idle cost $10,269 a month" in out
    assert [ln.split()[0] for ln in out.splitlines()[5:12]] == ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def test_summary_json_contract(db, tmp_path, capsys):
    """The JSON keys the issue fixes; 24 hourly figures (null where no sample); the window's own dates."""
    main(["--db", db, "telemetry", "import", str(write(tmp_path, "gpu.csv", nvidia_smi_week())), "--node", "n"])
    capsys.readouterr()
    assert main(["--db", db, "telemetry", "summary", "--format", "json", "--from", "2026-11-02", "--to",
                 "2026-11-02", "--node", "n"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= KEYS
    assert out["gpus"] == 4 and out["samples"] == 4 * 24 * 6 and out["metric"] == "gpu_util"
    assert out["from"].startswith("2026-11-02 00:00") and out["to"].startswith("2026-11-02 23:50")
    assert len(out["hourly_utilization"]) == 24 and out["hourly_utilization"][9] == pytest.approx(0.83)
    assert 0 <= out["utilization"] <= 1 and out["idle_usd_per_month"] > 0


def test_dcgm_scrape_with_at_and_json_list(db, capsys):
    assert main(["--db", db, "telemetry", "import", str(DATA / "dcgm_scrape.prom"), "--at", "2026-11-02T09:00"]) == 0
    assert "on bank-node-1" in capsys.readouterr().out
    assert main(["--db", db, "telemetry", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["file_format"] == "DCGM exporter (Prometheus text)" and rows[0]["gpus"] == 2
    assert main(["--db", db, "telemetry", "summary", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metric"] == "sm_active"


def test_user_errors_are_one_message_and_exit_2(db, tmp_path, capsys):
    bad = write(tmp_path, "gpu.csv", "timestamp, index, utilization.gpu [%]\n2026/11/02 09:00:00.000, 0, x %\n")
    assert main(["--db", db, "telemetry", "import", str(bad), "--node", "n"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hangover: error: gpu.csv line 2: utilization.gpu [%] 'x %' is not a number")
    assert main(["--db", db, "telemetry", "summary"]) == 2
    assert "no GPU telemetry" in capsys.readouterr().err
    assert main(["--db", db, "telemetry", "import", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["--db", db, "telemetry", "summary", "--from", "2 Nov"]) == 2
    assert "--from must be a date" in capsys.readouterr().err
    assert main(["--db", db, "telemetry", "import", str(DATA / "dcgm_scrape.prom"), "--at", "9am"]) == 2
    assert "--at must be a date and time" in capsys.readouterr().err
