"""The second opinion (AIConfigurator): absent package, coverage rules, the cache, the side-by-side table, a real run."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from core.cli import main
from core.models import Architecture, Engine
from core.performance import peer
from core.performance.peer import PeerConfig, PeerError, PeerPoint
from core.presentation.peer_view import peer_blocker, side_by_side, text_lines


@pytest.fixture(autouse=True)
def _fresh_peer():
    """Each test starts with no loaded package and no in-process answers (the file cache is per test, conftest)."""
    peer._load.cache_clear()
    peer.clear_cache()
    yield
    peer._load.cache_clear()
    peer.clear_cache()


@pytest.fixture
def absent(monkeypatch):
    """The import of aiconfigurator fails, as where the optional extra is not installed."""
    monkeypatch.setitem(sys.modules, "aiconfigurator", None)
    monkeypatch.setitem(sys.modules, "aiconfigurator.cli", None)
    monkeypatch.setitem(sys.modules, "aiconfigurator.cli.api", None)
    peer._load.cache_clear()


class FakePeer:
    """A peer whose TPOT is 5 ms + 0.1 ms per stream and TTFT 40 ms + 2 ms per stream; counts its calls."""

    def __init__(self, version="9.9.9", refuse_above=None):
        self.version = version
        self.calls: list[tuple[PeerConfig, int]] = []
        self.refuse_above = refuse_above

    def point(self, config: PeerConfig, concurrency: int) -> PeerPoint:
        self.calls.append((config, concurrency))
        if self.refuse_above is not None and concurrency > self.refuse_above:
            raise PeerError("OOM: does not fit")
        tpot = 5.0 + 0.1 * concurrency
        return PeerPoint(concurrency, 1000.0 / tpot, 40.0 + 2.0 * concurrency, tpot,
                         concurrency * 1000.0 / tpot, "db-1.0")


def _stack(seed_catalog, sid):
    return next(s for s in seed_catalog.stacks if s.stack_id == sid)


# -- absent ------------------------------------------------------------------------------


def test_absent_package_is_one_line_and_perf_still_works(absent, capsys):
    assert not peer.available()
    reason = peer.unavailable_reason()
    assert reason.startswith("AIConfigurator is not installed") and "\n" not in reason
    assert 'pip install -e ".[peer]"' in reason
    assert main(["perf", "--stack", "llama8b-bf16", "--gpu", "H100 SXM", "--concurrency", "1,8", "--peer"]) == 0
    out = capsys.readouterr().out
    assert "tok/s/stream" in out  # the roofline's table is there
    assert out.rstrip().splitlines()[-1].startswith("Second opinion: AIConfigurator is not installed")


def test_absent_package_json_says_so_and_keeps_the_curve(absent, capsys):
    assert main(["perf", "--stack", "llama8b-bf16", "--gpu", "H100 SXM", "--concurrency", "1,8", "--peer",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["concurrency"] for r in doc["curve"]] == [1, 8]
    assert doc["peer"]["rows"] is None and "not installed" in doc["peer"]["line"]


def test_without_peer_flag_json_is_the_plain_records(absent, capsys):
    assert main(["perf", "--stack", "llama8b-bf16", "--gpu", "H100 SXM", "--concurrency", "1", "--json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


# -- coverage ----------------------------------------------------------------------------


@pytest.mark.parametrize(("sid", "gpu", "words"), [
    ("mercury-class", "H100 SXM", "does not cover diffusion"),
    ("llada2-flash", "H100 SXM", "does not cover diffusion"),
    ("llama70b-fp8-spec", "H100 SXM", "does not cover draft-model speculative"),
    ("llama70b-fp8", "MI300X", "no kernel database for MI300X"),
])
def test_configurations_it_does_not_cover_are_refused_with_the_reason(seed_catalog, sid, gpu, words):
    fake = FakePeer()
    est = peer.peer_estimate(_stack(seed_catalog, sid), gpu, 1, [1, 8], 1000, 256, peer=fake)
    assert not est.covered and words in est.reason and "\n" not in est.reason
    assert fake.calls == []  # refused before asking
    assert peer_blocker(_stack(seed_catalog, sid), gpu).endswith(est.reason)


def test_an_unmapped_model_is_refused(seed_catalog):
    stack = _stack(seed_catalog, "llama8b-bf16").model_copy(update={"stack_id": "my-own-model"})
    est = peer.peer_estimate(stack, "H100 SXM", 1, [1], 1000, 256, peer=FakePeer())
    assert "no AIConfigurator model mapped to stack 'my-own-model'" in est.reason


def test_covered_stacks_map_to_the_engine_and_moe_flag(seed_catalog):
    cfg, why = peer.coverage(_stack(seed_catalog, "qwen3-235b-a22b-fp8"), "H200 SXM")
    assert why == "" and (cfg.model_path, cfg.system, cfg.backend, cfg.moe) == (
        "Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "trtllm", True)
    cfg, _ = peer.coverage(_stack(seed_catalog, "llama8b-bf16"), "H100 SXM")
    assert (cfg.backend, cfg.moe) == ("vllm", False)
    assert _stack(seed_catalog, "llama8b-bf16").architecture is Architecture.AUTOREGRESSIVE


# -- the cache ---------------------------------------------------------------------------


def test_second_call_does_not_ask_the_peer_again(seed_catalog):
    fake = FakePeer()
    stack = _stack(seed_catalog, "llama70b-fp8")
    first = peer.peer_estimate(stack, "H100 SXM", 2, [1, 8, 8.0], 1000, 256, peer=fake)
    assert [c for _, c in fake.calls] == [1, 8]  # 8 and 8.0 are one configuration
    again = peer.peer_estimate(stack, "H100 SXM", 2, [1, 8], 1000, 256, peer=fake)
    assert len(fake.calls) == 2 and again.points == first.points[:2]


def test_the_file_cache_answers_a_new_process_and_is_keyed_by_version(seed_catalog, monkeypatch, tmp_path):
    monkeypatch.setenv("HANGOVER_PEER_CACHE", str(tmp_path / "c.json"))
    stack = _stack(seed_catalog, "llama70b-fp8")
    peer.peer_estimate(stack, "H100 SXM", 2, [4], 1000, 256, peer=FakePeer())
    peer.clear_cache()  # as a new process would start
    fake = FakePeer()
    est = peer.peer_estimate(stack, "H100 SXM", 2, [4], 1000, 256, peer=fake)
    assert fake.calls == [] and est.points[0].tpot_ms == pytest.approx(5.4)
    newer = FakePeer(version="10.0.0")
    peer.peer_estimate(stack, "H100 SXM", 2, [4], 1000, 256, peer=newer)
    assert len(newer.calls) == 1  # another version is another key
    peer.peer_estimate(stack, "H100 SXM", 2, [4], 2000, 256, peer=newer)
    assert len(newer.calls) == 2  # other lengths too


def test_cache_off_asks_every_new_process(seed_catalog, monkeypatch):
    monkeypatch.setenv("HANGOVER_PEER_CACHE", "off")
    assert peer.cache_path() is None
    stack = _stack(seed_catalog, "llama70b-fp8")
    fake = FakePeer()
    peer.peer_estimate(stack, "H100 SXM", 2, [4], 1000, 256, peer=fake)
    peer.clear_cache()
    peer.peer_estimate(stack, "H100 SXM", 2, [4], 1000, 256, peer=fake)
    assert len(fake.calls) == 2


def test_refused_points_are_cached_and_named(seed_catalog):
    fake = FakePeer(refuse_above=16)
    stack = _stack(seed_catalog, "llama70b-fp8")
    est = peer.peer_estimate(stack, "H100 SXM", 1, [8, 64, 128], 1000, 256, peer=fake)
    assert est.covered and [p.concurrency for p in est.points] == [8]
    assert est.note == "AIConfigurator could not estimate 64 streams: OOM: does not fit"
    peer.peer_estimate(stack, "H100 SXM", 1, [8, 64, 128], 1000, 256, peer=fake)
    assert len(fake.calls) == 3
    none = peer.peer_estimate(stack, "H100 SXM", 1, [64], 1000, 256, peer=fake)
    assert not none.covered and none.reason.endswith("OOM: does not fit")


def test_a_known_flaw_of_the_peers_database_is_said_beside_its_figures(seed_catalog):
    """Qwen3-30B-A3B FP8 (block-scaled) on vLLM: the peer's vLLM FP8 block-GEMM table is a fixed ~60 us a call,
    so its figures carry a caveat, in the side-by-side note and the CLI's table; the same checkpoint on
    TensorRT-LLM, and the per-tensor Llama-3.1-70B FP8, carry none."""
    qwen = _stack(seed_catalog, "qwen3-30b-a3b-fp8")
    assert qwen.engine is Engine.VLLM
    fake = FakePeer(refuse_above=4)
    est = peer.peer_estimate(qwen, "H100 SXM", 1, [1, 8], 1000, 256, peer=fake)
    assert est.covered and "block-scaled FP8" in est.caveat and "likely slow" in est.caveat
    curve = pd.DataFrame({"concurrency": [1.0], "output_tokens_per_s_per_stream": [150.0], "ttft_ms": [30.0],
                          "output_tokens_per_s_total": [150.0]})
    view = side_by_side(curve, est)
    # Both notes, each once: the refused load and the database's flaw.
    assert view.note.startswith("AIConfigurator could not estimate 8 streams") and est.caveat.rstrip(".") in view.note
    assert any(line.startswith("  note: ") and "block-scaled FP8" in line for line in text_lines(view))
    on_trt = peer.peer_estimate(qwen.model_copy(update={"engine": Engine.TRTLLM}), "H100 SXM", 1, [1], 1000, 256,
                                peer=fake)
    assert on_trt.covered and on_trt.caveat == ""
    llama = peer.peer_estimate(_stack(seed_catalog, "llama70b-fp8"), "H100 SXM", 2, [1], 1000, 256, peer=fake)
    assert llama.covered and llama.caveat == "" and side_by_side(curve, llama).note == ""


# -- side by side ------------------------------------------------------------------------


def test_side_by_side_ratios(seed_catalog):
    """Fake peer at 4 streams: TPOT 5 + 0.4 = 5.4 ms -> 185.19 tok/s per stream, TTFT 40 + 8 = 48 ms,
    total 4 x 185.19 = 740.74 tok/s. Roofline row: 200 tok/s/stream, TTFT 60 ms, 800 tok/s total.
    Ratios: 200 / 185.19 = 1.08; 60 / 48 = 1.25; 800 / 740.74 = 1.08. The 3-stream row has no peer point."""
    est = peer.peer_estimate(_stack(seed_catalog, "llama70b-fp8"), "H100 SXM", 2, [4], 1000, 256, peer=FakePeer())
    curve = pd.DataFrame({"concurrency": [3.0, 4.0], "output_tokens_per_s_per_stream": [210.0, 200.0],
                          "ttft_ms": [55.0, 60.0], "output_tokens_per_s_total": [630.0, 800.0]})
    view = side_by_side(curve, est)
    (row,) = view.table.to_dict("records")
    assert row["per_stream_peer"] == pytest.approx(185.185, rel=1e-4)
    assert row["per_stream_ratio"] == pytest.approx(1.08, rel=1e-9)
    assert row["ttft_ratio"] == pytest.approx(1.25, rel=1e-9)
    assert row["total_ratio"] == pytest.approx(1.08, rel=1e-9)
    assert "estimate" in view.line and "llama70b" not in view.line and "9.9.9" in view.line
    lines = text_lines(view)
    assert lines[2].split()[:4] == ["4", "200.0", "185.2", "1.08"]


# -- the real peer -----------------------------------------------------------------------


@pytest.mark.slow
def test_real_aiconfigurator_qwen3_30b_on_one_h100(seed_catalog):
    """AIConfigurator 0.12.0, trtllm 1.3.0rc20 database, Qwen3-30B-A3B-FP8, 1 x H100 SXM, 1,000/256 tokens,
    aggregated: TPOT 4.90 ms at 1 stream (204 tok/s) and 7.92 ms at 8 (126.3 tok/s); TTFT 59 and 71 ms
    (`aiconfigurator cli estimate --model-path Qwen/Qwen3-30B-A3B-FP8 --system h100_sxm --backend trtllm
    --isl 1000 --osl 256 --batch-size 8 --tp-size 1 --moe-tp-size 1 --moe-ep-size 1`)."""
    pytest.importorskip("aiconfigurator")
    assert peer.available() and peer.unavailable_reason() == ""
    stack = _stack(seed_catalog, "qwen3-30b-a3b-fp8").model_copy(update={"engine": Engine.TRTLLM})
    est = peer.peer_estimate(stack, "H100 SXM", 1, [1, 8], 1000, 256)
    assert est.covered and est.version == "0.12.0" and "trtllm 1.3.0rc20 kernel database, h100_sxm" in est.source
    one, eight = est.points
    assert one.per_stream_tok_s == pytest.approx(204.0, rel=0.01)
    assert eight.per_stream_tok_s == pytest.approx(126.3, rel=0.01)
    assert eight.ttft_ms == pytest.approx(71.2, rel=0.02)
    assert eight.total_tok_s > 7 * eight.per_stream_tok_s * 0.9  # 8 streams, less the prefill share


def test_widening_stretches_the_range_to_contain_the_peer():
    """Range 80-120 and 400-600 tok/s at two loads; the peer says 60 and 700: low end x 60/80 = 0.75,
    high end x 700/600 = 1.1667. A peer inside the range (100, 500) changes nothing; missing figures are skipped."""
    assert peer.widening([80, 400], [120, 600], [60, 700]) == pytest.approx((0.75, 700 / 600))
    assert peer.widening([80, 400], [120, 600], [100, 500]) == (1.0, 1.0)
    assert peer.widening([80, 400], [120, 600], [float("nan"), 0.0]) == (1.0, 1.0)


def test_the_peer_is_an_optional_extra_only():
    """`pip install -e .` installs [project].dependencies: aiconfigurator must be only in the [peer] extra, pinned."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("aiconfigurator")]
    assert project["optional-dependencies"]["peer"] == [f"aiconfigurator=={peer.PINNED_VERSION}"]
    assert not [d for d in project["optional-dependencies"]["test"] if "aiconfigurator" in d]


def test_a_failed_download_is_not_kept(seed_catalog):
    """No network is not an answer: the next call asks again (an out-of-memory refusal is kept, above)."""

    class Offline(FakePeer):
        def point(self, config, concurrency):
            self.calls.append((config, concurrency))
            raise PeerError("Failed to download x's config.json from HuggingFace: no network")

    fake = Offline()
    stack = _stack(seed_catalog, "llama70b-fp8")
    est = peer.peer_estimate(stack, "H100 SXM", 2, [1], 1000, 256, peer=fake)
    assert not est.covered and "Failed to download" in est.reason
    peer.peer_estimate(stack, "H100 SXM", 2, [1], 1000, 256, peer=fake)
    assert len(fake.calls) == 2


def test_the_cli_table_says_whether_the_range_contains_the_peer(seed_catalog):
    """Range of total tok/s 700-900 at 4 streams; the fake peer says 740.74 (inside). At 8: range 1000-1200, the
    peer 8 x 1000 / 5.8 = 1379.3 (above): the high end would move x 1379.3 / 1200 = 1.15; the low end stays."""
    est = peer.peer_estimate(_stack(seed_catalog, "llama70b-fp8"), "H100 SXM", 2, [4, 8], 1000, 256, peer=FakePeer())
    curve = pd.DataFrame({"concurrency": [4.0, 8.0], "output_tokens_per_s_per_stream": [200.0, 137.5],
                          "ttft_ms": [60.0, 60.0], "output_tokens_per_s_total": [800.0, 1100.0],
                          "output_tokens_per_s_total_low": [700.0, 1000.0],
                          "output_tokens_per_s_total_high": [900.0, 1200.0]})
    view = side_by_side(curve, est)
    assert view.range_line == ("the roofline's range of total tok/s contains AIConfigurator at 1 of 2 loads; to "
                               "contain it everywhere, the high end x1.15 (the verdict ranges do not read this)")
    assert text_lines(view)[-1] == f"  {view.range_line}"


# -- ranges widened to the peer (cache only) ---------------------------------------------------


def test_ranges_widen_to_a_cached_peer_answer_without_the_package(seed_catalog, monkeypatch):
    """A fake cache says Llama-3.1-8B BF16 on one H100 runs at 0.7x the range's slow end at 1, 8 and 64 streams
    (1000/256 tokens) and at 1.1x its fast end at batch 1 (4000/512). peer.widening gives slow = min(0.7) = 0.70
    and fast = max(1.1) = 1.10; the widened ends (physics.scaled_speed by those) then contain every cached figure,
    the central estimate does not move, and nothing imports or asks the package. Off by default."""
    from dataclasses import asdict

    from core.catalog import Catalog
    from core.performance import physics

    monkeypatch.setitem(sys.modules, "aiconfigurator", None)  # as where the extra is not installed
    stack, gpu = _stack(seed_catalog, "llama8b-bf16"), seed_catalog.gpu("H100 SXM")
    plain = seed_catalog.efficiency_bounds(stack, gpu, 1)

    def per_stream(eff, c, n_in, n_out):
        return float(physics.estimate(stack, gpu, 1, c, n_in, n_out, eff)["output_tokens_per_s_per_stream"])

    cached = {(c, 1000, 256): 0.7 * per_stream(plain.low, c, 1000, 256) for c in (1, 8, 64)}
    cached[(1, 4000, 512)] = 1.1 * per_stream(plain.high, 1, 4000, 512)
    base, _ = peer.coverage(stack, gpu.name)
    entries = {}
    for (c, n_in, n_out), v in cached.items():
        cfg = PeerConfig(base.model_path, base.system, base.backend, 1, n_in, n_out)
        point = PeerPoint(c, v, 50.0, 1000.0 / v, v * c, "db-test")
        entries[peer._key(peer._cached_version(), cfg, c)] = {"ok": asdict(point)}
    peer._file_put(entries)

    fresh = Catalog(gpus=seed_catalog.gpus, stacks=seed_catalog.stacks, apis=seed_catalog.apis,
                    node_prices=seed_catalog.node_prices, owned_hardware=seed_catalog.owned_hardware,
                    benchmarks=seed_catalog.benchmarks)
    assert fresh.efficiency_bounds(stack, gpu, 1) == plain  # off by default
    wide = fresh.at_efficiency_end("central", peer_ranges=True).efficiency_bounds(stack, gpu, 1)
    assert wide.central == plain.central and "widened to include aiconfigurator" in wide.basis
    assert "x0.70 slow end, x1.10 fast end" in wide.basis
    for (c, n_in, n_out), v in cached.items():
        assert per_stream(wide.low, c, n_in, n_out) <= v * 1.01 and per_stream(wide.high, c, n_in, n_out) >= v * 0.99
    # The ends the sensitivity runs read follow the flag.
    low_end, _ = fresh.at_efficiency_end("low", peer_ranges=True).efficiency(stack, gpu, 1)
    assert low_end == wide.low
    # A route the cache has nothing for keeps its own range.
    other = _stack(seed_catalog, "llama70b-bf16")
    assert fresh.at_efficiency_end("central", peer_ranges=True).efficiency_bounds(other, gpu, 2) == \
        seed_catalog.efficiency_bounds(other, gpu, 2)
    assert peer._load.cache_info().misses == 0  # the package was never looked for
