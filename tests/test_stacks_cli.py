"""`hangover stacks add|list|show|remove`: a model brought from its config.json, stored as the user's own row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.store import Store

CONFIGS = Path(__file__).parent / "data" / "configs"


def run(db, *argv, capsys):
    rc = main(["--db", str(db), *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_add_list_show_remove_round_trip(tmp_path, capsys):
    db = tmp_path / "t.duckdb"
    rc, out, err = run(db, "stacks", "add", "--from-config", str(CONFIGS / "qwen3-30b-a3b.json"), "--stack-id", "my-q30",
                       "--precision", "fp8", "--engine", "sglang", "--quality-from", "qwen3-30b-a3b-fp8", capsys=capsys)
    assert rc == 0, err
    assert "added my-q30: moe, 30.53 B params (3.35 B active)" in out and "copied from qwen3-30b-a3b-fp8" in out

    rc, out, _ = run(db, "stacks", "list", capsys=capsys)
    assert rc == 0 and out.splitlines()[1].startswith("my-q30") and " user " in out.splitlines()[1]

    rc, out, _ = run(db, "stacks", "show", "my-q30", "--json", capsys=capsys)
    rec = json.loads(out)
    assert rc == 0
    assert rec["params_total_b"] == pytest.approx(30.5321) and rec["params_active_b"] == pytest.approx(3.353)
    assert rec["kv_bytes_per_token"] == 49152 and rec["n_layers"] == 48 and rec["hidden_size"] == 2048
    assert rec["engine"] == "sglang" and rec["origin"] == "user" and rec["confidence"] == "estimate"
    assert "explicit estimate" in rec["note"] and rec["as_of"]

    # Re-seeding keeps the user's stack; the physics can use it straight away.
    assert run(db, "db", "seed", capsys=capsys)[0] == 0
    rc, out, _ = run(db, "perf", "--stack", "my-q30", "--gpu", "H100 SXM", "--concurrency", "1,8", capsys=capsys)
    assert rc == 0 and "my-q30 (moe)" in out

    rc, out, _ = run(db, "stacks", "remove", "my-q30", capsys=capsys)
    assert rc == 0 and "removed my-q30" in out
    assert "my-q30" not in {s.stack_id for s in Store(db).serving_stacks()}


def test_speculative_stack_with_a_draft_config_and_own_quality(tmp_path, capsys):
    db = tmp_path / "t.duckdb"
    q = ["--quality-extraction", "0.9", "--quality-code-completion", "0.8", "--quality-chat", "0.85",
         "--quality-agentic-step", "0.8", "--quality-reasoning", "0.7", "--quality-source", "our eval 2026-11"]
    rc, _, err = run(db, "stacks", "add", "--from-config", str(CONFIGS / "llama-3.1-8b.json"), "--stack-id", "l8-spec",
                     "--precision", "bf16", "--speculative-method", "draft", "--draft-config",
                     str(CONFIGS / "llama-3.2-1b.json"), *q, capsys=capsys)
    assert rc == 0, err
    rec = json.loads(run(db, "stacks", "show", "l8-spec", "--json", capsys=capsys)[1])
    assert rec["architecture"] == "speculative" and rec["spec_method"] == "draft"
    assert rec["spec_draft_params_b"] == pytest.approx(1.2358, abs=1e-3) and rec["spec_draft_layers"] == 16
    assert rec["quality_reasoning"] == 0.7 and rec["confidence"] == "user" and "our eval 2026-11" in rec["note"]


def test_diffusion_stack(tmp_path, capsys):
    db = tmp_path / "t.duckdb"
    rc, _, err = run(db, "stacks", "add", "--from-config", str(CONFIGS / "llama-3.1-8b.json"), "--stack-id", "l8-diff",
                     "--precision", "bf16", "--diffusion-block", "32", "--diffusion-steps", "8",
                     "--quality-from", "llada-8b", capsys=capsys)
    assert rc == 0, err
    rec = json.loads(run(db, "stacks", "show", "l8-diff", "--json", capsys=capsys)[1])
    assert (rec["architecture"], rec["diffusion_block_tokens"], rec["diffusion_steps_per_block"]) == ("diffusion", 32, 8)


@pytest.mark.parametrize(
    ("setup", "argv", "message"),
    [
        (None, ["--from-config", "missing.json"], "no such file"),
        ("{oops", [], "not JSON"),
        ('{"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 10}', [], "missing key 'num_hidden_layers'"),
        ('{"hidden_size": -1, "num_hidden_layers": 2, "num_attention_heads": 1, "vocab_size": 10}', [], "must be at least 1"),
        ("GOOD", ["--stack-id", "llama8b-bf16"], "already in the store"),
        ("GOOD", ["--stack-id", "Bad Id"], "stack_id"),
        ("GOOD", ["--quality-from", "nope"], "unknown stack 'nope'"),
        ("GOOD", ["--quality-chat", "0.8"], "needs all five"),
        ("GOOD", ["--quality-from", ""], "say where quality comes from"),
        ("GOOD", ["--diffusion-block", "32"], "both --diffusion-block and --diffusion-steps"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(tmp_path, capsys, setup, argv, message):
    db = tmp_path / "t.duckdb"
    cfg = tmp_path / "config.json"
    if setup == "GOOD":
        cfg.write_text((CONFIGS / "llama-3.1-8b.json").read_text())
    elif setup is not None:
        cfg.write_text(setup)
    base = {"--from-config": str(cfg), "--stack-id": "mine", "--precision": "bf16", "--quality-from": "llama8b-bf16"}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        base[flag] = value
    if "--quality-chat" in base or base.get("--quality-from") == "":
        base.pop("--quality-from")
    args = [x for kv in base.items() for x in kv]
    before = len(Store(db).serving_stacks())
    rc, _, err = run(db, "stacks", "add", *args, capsys=capsys)
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert len(Store(db).serving_stacks()) == before


def test_bundled_stacks_cannot_be_removed_and_unknown_ids_are_named(tmp_path, capsys):
    db = tmp_path / "t.duckdb"
    rc, _, err = run(db, "stacks", "remove", "llama8b-bf16", capsys=capsys)
    assert rc == 2 and "bundled stack" in err
    rc, _, err = run(db, "stacks", "show", "nope", capsys=capsys)
    assert rc == 2 and "no stack 'nope'" in err


@pytest.mark.slow
def test_performance_page_adds_a_stack_from_a_pasted_config(monkeypatch, tmp_path):
    """The Performance page's form: paste a config.json, name the stack, add it; it joins the stack list."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "page.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    try:
        at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"), default_timeout=60)
        at.run()
        at.switch_page("screens/performance.py").run()
        assert not at.exception, [e.value for e in at.exception]
        at.text_area(key="perf_cfg_text").set_value((CONFIGS / "mixtral-8x7b.json").read_text())
        at.text_input(key="perf_cfg_id").set_value("my-mixtral")
        at.selectbox(key="perf_cfg_quality").set_value("llama70b-fp8")
        at.run()
        at.button(key="perf_cfg_add").click()
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        flashes = [s.value.replace("\\", "") for s in at.success]  # the page escapes Markdown
        assert any("Added my-mixtral: moe, 46.70 B parameters (12.88 B active)" in f for f in flashes), flashes
        assert any(o.endswith("(my-mixtral)") for o in at.selectbox(key="perf_stack").options)
        # The same id again: one clear error, nothing added.
        at.button(key="perf_cfg_add").click()
        at.run()
        assert any("already in the store" in e.value.replace("\\", "") for e in at.error)
    finally:
        st.cache_resource.clear()
        st.cache_data.clear()
