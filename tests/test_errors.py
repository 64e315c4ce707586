"""Errors read as one plain line: validation problems (where, which field, what), and no traceback from the CLI."""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

import duckdb
import pytest
from pydantic import ValidationError

import core.commands.db as db_commands
from core.cli import MAX_MESSAGE, main
from core.errors import InputError, describe_validation_error
from core.models import GpuSpec, Scenario, ServingStack, Workload
from core.store import Store

GPU = {"name": "H100 SXM", "hbm_gb": 80, "hbm_tb_per_s": 3.35, "bf16_tflops": 989, "tdp_w": 700,
       "source": "datasheet", "as_of": "2022-03-22"}
WORKLOAD = {"workload_id": "w1", "name": "Chat", "requests_per_day": 100, "input_tokens": 100,
            "output_tokens": 10, "latency_slo_ms": 1000, "data_policy": "owned_only", "task_class": "chat"}


def _describe(model, data, where=""):
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return describe_validation_error(info.value, where=where)


def test_names_place_field_rule_and_value():
    text = _describe(GpuSpec, {**GPU, "hbm_gb": "-3"}, where="gpus.csv row 4")
    assert text == "gpus.csv row 4, column 'hbm_gb': Input should be greater than 0 (got '-3')"


def test_one_line_per_problem():
    text = _describe(Workload, {**WORKLOAD, "requests_per_day": "lots", "task_class": "poetry"}, where="inventory.csv row 7")
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("inventory.csv row 7, column 'requests_per_day': Input should be a valid number")
    assert lines[0].endswith("(got 'lots')")
    # The allowed values are listed, so the reader knows what to type instead.
    assert lines[1].startswith("inventory.csv row 7, column 'task_class': Input should be 'extraction', ")
    assert lines[1].endswith("(got 'poetry')")


def test_missing_field_does_not_dump_the_whole_row():
    text = _describe(GpuSpec, {k: v for k, v in GPU.items() if k != "as_of"})
    assert text == "column 'as_of': Field required"


def test_rule_across_fields_names_the_row_not_a_column():
    text = _describe(Workload, {**WORKLOAD, "batch_window_hours": 8}, where="inventory.csv row 3")
    assert text == (
        "inventory.csv row 3: give exactly one of latency_slo_ms (interactive) "
        "or batch_window_hours (offline)"
    )
    bare = _describe(Workload, {**WORKLOAD, "batch_window_hours": 8})
    assert bare.startswith("give exactly one of")


def test_custom_rule_message_drops_pydantic_prefix():
    stack = {"stack_id": "s", "name": "S", "architecture": "autoregressive", "params_total_b": 8,
             "params_active_b": 70, "bytes_per_param": 2, "kv_bytes_per_token": 0,
             "quality_extraction": 1, "quality_code_completion": 1, "quality_chat": 1,
             "quality_agentic_step": 1, "quality_reasoning": 1, "source": "s", "as_of": "2025-01-01"}
    text = _describe(ServingStack, stack)
    assert text == "column 'params_active_b': active parameters (70.0 B) cannot exceed total parameters (8.0 B) (got 70)"


def test_nested_fields_are_dotted():
    text = _describe(Scenario, {"owned_hardware": {"name": "x"}})
    assert "column 'owned_hardware.capex_usd_per_node': Field required" in text.splitlines()


# -- issue 16: no traceback reaches a user -------------------------------------------------------

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "workloads_sample.csv"


def _raising(exc):
    def cmd(args):
        raise exc
    return cmd


@pytest.mark.parametrize(("exc", "words"), [
    (RecursionError("maximum recursion depth exceeded"), "the input is nested too deeply to read"),
    (MemoryError(), "ran out of memory"),
    (OSError(errno.ENOSPC, "No space left on device"), "the disk is full; nothing more was written"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "a file is not in the text encoding expected"),
    (OverflowError("math range error"), "a number is too large to compute with"),
    (duckdb.IOException('Could not set lock on file "/x": Conflicting lock is held in /usr/bin/python3 (PID 4242)'),
     "an unexpected error (IOException)"),
    (KeyError("boom"), "an unexpected error (KeyError)"),
])
def test_an_unexpected_error_is_one_line_and_a_log(tmp_path, monkeypatch, capsys, exc, words):
    db = tmp_path / "h.duckdb"
    monkeypatch.setattr(db_commands, "cmd_info", _raising(exc))
    assert main(["--db", str(db), "db", "info"]) == 2
    captured = capsys.readouterr()
    log = tmp_path / "hangover-errors.log"
    assert captured.err == f"hangover: error: {words}; details in {log}\n"
    assert "PID" not in captured.err and "Traceback" not in captured.err
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and f"hangover db: {words}" in text


def test_a_long_error_is_truncated(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(db_commands, "cmd_info", _raising(InputError("bad cell " + "x" * 500_000)))
    assert main(["--db", str(tmp_path / "h.duckdb"), "db", "info"]) == 2
    err = capsys.readouterr().err
    assert len(err) < MAX_MESSAGE + 100 and err.rstrip().endswith("(500,009 characters)")


def test_workloads_import_onto_a_damaged_store_commits_nothing(tmp_path, capsys):
    """issue 16: `workloads import` committed onto a store with a corrupt block; now it is refused, file untouched."""
    db = tmp_path / "h.duckdb"
    Store(db).close()
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(size - 100_000)
        f.write(bytes(range(7, 71)))
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    assert main(["--db", str(db), "workloads", "import", str(SAMPLE)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hangover: error: the store {db} is damaged: block ") and err.count("\n") == 1
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_a_failed_report_write_leaves_no_partial_file(tmp_path, monkeypatch):
    """The report is written to a temporary file and renamed: a full disk leaves the old file as it was."""
    from core.presentation import report

    out = tmp_path / "summary.md"
    out.write_text("the old brief")
    monkeypatch.setattr(report, "build_markdown", lambda ev, summary=None: "x" * 10_000)
    monkeypatch.setattr(report, "_summary", lambda ev, summary, generated: None)

    def disk_full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report.os, "replace", disk_full)
    with pytest.raises(InputError, match=r"cannot write .*summary\.md: No space left on device; no file was written"):
        report.write_report(None, out)
    assert out.read_text() == "the old brief"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]  # no temporary file left behind
    monkeypatch.undo()


def test_a_report_write_replaces_the_file_whole(tmp_path, monkeypatch):
    from core.presentation import report

    out = tmp_path / "summary.md"
    monkeypatch.setattr(report, "build_markdown", lambda ev, summary=None: "# brief\n")
    monkeypatch.setattr(report, "_summary", lambda ev, summary, generated: None)
    assert report.write_report(None, out) == out
    assert out.read_text() == "# brief\n"
    assert oct(out.stat().st_mode & 0o777) == "0o644"
