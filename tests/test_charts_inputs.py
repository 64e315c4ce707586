"""Frames and figures of the input pages (core.presentation.charts_inputs) and the pricing views (core.presentation.pricing_views)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.catalog import Catalog
from core.decision.economics import NodeRate
from core.errors import InputError
from core.models import ApiPrice, NodePrice, OwnedHardware, Scenario
from core.presentation import charts_inputs as ci
from core.presentation import pricing_views as pv
from core.store.seed import load_seed

TODAY = dt.date(2026, 11, 30)
BENCH_DIR = Path(__file__).parent / "data" / "bench"
QUALITY = dict.fromkeys(
    ("quality_extraction", "quality_code_completion", "quality_chat", "quality_agentic_step", "quality_reasoning"), 0.8
)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    """The bundled reference data, without a store."""
    seed = load_seed()
    return Catalog(gpus=tuple(seed["gpus"]), stacks=tuple(seed["serving_stacks"]), apis=tuple(seed["api_prices"]),
                   node_prices=tuple(seed["node_prices"]), owned_hardware=tuple(seed["owned_hardware"]),
                   benchmarks=tuple(seed["benchmarks"]))


def stack(cat, sid):
    return next(s for s in cat.stacks if s.stack_id == sid)


def api(model="m", usd_in=1.0, usd_out=4.0, cached=None, as_of=dt.date(2026, 8, 1), tier="mid") -> ApiPrice:
    return ApiPrice(provider="P", model=model, tier=tier, usd_per_mtok_in=usd_in, usd_per_mtok_cached_in=cached,
                    usd_per_mtok_out=usd_out, ttft_ms=400, output_tokens_per_s=100, source="price page", as_of=as_of,
                    **QUALITY)


def node(gpu="H100 SXM", usd=33.02, as_of=dt.date(2026, 1, 1), provider="AWS", option="savings_1y") -> NodePrice:
    return NodePrice(provider=provider, instance="p5.48xlarge", gpu=gpu, gpus_per_node=8, pricing_option=option,
                     usd_per_node_hour=usd, region="us-east-1", source="price page", as_of=as_of)


# -- staleness and tables ----------------------------------------------------------------


def test_stale_means_older_than_180_days():
    dates = [TODAY - dt.timedelta(days=d) for d in (0, 180, 181, 400)] + [TODAY + dt.timedelta(days=3)]
    assert list(pv.age_days(dates, TODAY)) == [0, 180, 181, 400, -3]
    assert pv.stale_marks(dates, TODAY) == ["", "", "⚠ stale", "⚠ stale", ""]


def test_node_price_table_puts_the_scenario_gpu_first_and_divides_by_gpus():
    rows = [node("B200", 68.36), node("H100 SXM", 33.02), node("A100 40GB SXM", 21.96, option="on_demand")]
    df = pv.node_price_table(rows, TODAY, first_gpu="H100 SXM")
    assert df["gpu"].tolist() == ["H100 SXM", "A100 40GB SXM", "B200"]
    assert df.loc[0, "usd_per_gpu_hour"] == pytest.approx(33.02 / 8)
    assert df.loc[0, "stale"] == "⚠ stale"  # 2026-01-01 is 333 days before TODAY
    assert {"as_of", "source", "confidence"} <= set(df.columns)


def test_api_price_table_orders_by_tier_then_output_price(cat):
    df = pv.api_price_table(cat.apis, TODAY)
    tiers = df["tier"].tolist()
    assert tiers == sorted(tiers, key=["commodity", "mid", "frontier", "diffusion"].index)
    commodity = df[df["tier"] == "commodity"]["usd_per_mtok_out"].tolist()
    assert commodity == sorted(commodity)
    assert len(df) == len(cat.apis) and df["source"].str.len().min() > 0


def test_owned_tco_golden_numbers():
    """8×H100 owned, $300,000, 4 years, 8 %, 8 kW, PUE 1.3, $0.10/kWh, $30,000/year support.

    capital = (300,000 / 4 + 300,000 × 0.5 × 0.08) / 8,760 = 87,000 / 8,760 = $9.9315/h
    power = 8 × 1.3 × 0.10 = $1.04/h; support = 30,000 / 8,760 = $3.4247/h
    marginal = 1.04 + 3.4247 = $4.4647/h; full = 9.9315 + 4.4647 = $14.3962/h; per GPU full = $1.7995/h
    """
    hw = OwnedHardware(name="8×H100", gpu="H100 SXM", gpus_per_node=8, capex_usd_per_node=300_000,
                       depreciation_years=4, cost_of_capital_rate=0.08, kw_per_node=8, pue=1.3, usd_per_kwh=0.10,
                       support_usd_per_year=30_000, source="estimate", as_of=dt.date(2026, 11, 1), confidence="estimate")
    row = pv.owned_tco_table([hw], TODAY).iloc[0]
    assert row["capital_usd_per_hour"] == pytest.approx(87_000 / 8760)
    assert row["power_usd_per_hour"] == pytest.approx(1.04)
    assert row["marginal_usd_per_hour"] == pytest.approx(1.04 + 30_000 / 8760)
    assert row["full_usd_per_hour"] == pytest.approx(87_000 / 8760 + 1.04 + 30_000 / 8760)
    assert row["full_usd_per_gpu_hour"] == pytest.approx(row["full_usd_per_hour"] / 8)
    assert row["stale"] == ""
    assert pv.provenance_lines([hw], TODAY) == ["8×H100: estimate — as of 2026-11-01, estimate"]


# -- break-even --------------------------------------------------------------------------


def ref_10k() -> pv.ReferenceThroughput:
    return pv.ReferenceThroughput("s", "S", "H100 SXM", 8, 4, 2, 256, 5_000.0, 1000.0, 250.0, "estimated")


def test_break_even_golden_numbers():
    """Node $33.02/h making 2 × 5,000 = 10,000 output tok/s; API $1/M in, $4/M out; 1,000 in / 250 out.

    API per request = (1,000 × 1 + 250 × 4) / 1e6 = $0.002; per M output tokens = 0.002 / 250 × 1e6 = $8.
    Break-even u = 33.02 / (10,000 × 3,600 × 8 / 1e6) = 33.02 / 288 = 11.47 %.
    A $0.50/M-out API with $0.10/M in: (100 + 125) / 1e6 per request = $0.90/M out -> u = 33.02 / 32.4 = 101.9 %.
    """
    rate = NodeRate(33.02, 33.02, 8, "AWS", "price page", "2026-01-01", "secondary", "full")
    df = pv.break_even_table(rate, ref_10k(), [api("cheap", 0.10, 0.50), api("dear", 1.0, 4.0)], TODAY)
    assert df["model"].tolist() == ["dear", "cheap"]  # sooner break-even first
    dear, cheap = df.iloc[0], df.iloc[1]
    assert dear["api_usd_per_mtok_out_all_in"] == pytest.approx(8.0)
    assert dear["break_even_utilization"] == pytest.approx(33.02 / 288)
    assert dear["verdict"] == "owned cheaper above 11% utilization"
    assert cheap["break_even_utilization"] == pytest.approx(33.02 / 32.4)
    assert cheap["verdict"].startswith("API cheaper even at 100 % use")
    assert df["owned_usd_per_mtok_at_full_use"].iloc[0] == pytest.approx(33.02 / (10_000 * 3600) * 1e6)


def test_break_even_scales_api_prices_and_handles_free_hours():
    rate = NodeRate(33.02, 33.02, 8, "AWS", "p", "2026-01-01", "secondary", "full")
    base = pv.break_even_table(rate, ref_10k(), [api()], TODAY)["break_even_utilization"].iloc[0]
    doubled = pv.break_even_table(rate, ref_10k(), [api()], TODAY, api_price_scale=2.0)["break_even_utilization"].iloc[0]
    assert doubled == pytest.approx(base / 2)
    free = NodeRate(0.0, 33.02, 8, "AWS", "p", "", "secondary", "marginal")
    row = pv.break_even_table(free, ref_10k(), [api()], TODAY).iloc[0]
    assert row["break_even_utilization"] == 0 and row["verdict"].startswith("owned cheaper at any use")


def test_reference_throughput_takes_the_best_node_configuration(cat):
    h100 = cat.gpu("H100 SXM")
    ref = pv.reference_throughput(stack(cat, "llama70b-fp8"), h100, 8, cat.benchmarks, 1000, 256)
    assert ref.replicas_per_node * ref.gpus_per_replica <= 8
    assert ref.tokens_per_s_per_node == pytest.approx(ref.replicas_per_node * ref.tokens_per_s_per_replica)
    # No other option on the engine's grid gives the node more tokens/s.
    for g in (2, 4, 8):
        curve, _ = ci.curve_view(stack(cat, "llama70b-fp8"), h100, g, 1000, 256, cat.benchmarks)
        fits = curve[curve["fits"] & curve["concurrency"].isin(ci.CONCURRENCY_GRID)]
        assert (8 // g) * fits["output_tokens_per_s_total"].max() <= ref.tokens_per_s_per_node * (1 + 1e-9)
    assert "output tokens/s per node" in ref.describe()


def test_reference_throughput_refuses_a_stack_that_does_not_fit(cat):
    with pytest.raises(InputError, match="does not fit on up to 1 x A100 40GB SXM"):
        pv.reference_throughput(stack(cat, "llama70b-bf16"), cat.gpu("A100 40GB SXM"), 1, cat.benchmarks, 1000, 256)


def test_break_even_view_uses_the_scenario_node_price(cat):
    be = pv.break_even_view(cat, Scenario(node_usd_per_hour=10.0), "llama70b-fp8", 1000, 256, TODAY)
    assert be.rate.usd_per_node_hour == 10.0 and "your override" in be.explanation
    half = pv.break_even_view(cat, Scenario(node_usd_per_hour=5.0), "llama70b-fp8", 1000, 256, TODAY)
    assert np.allclose(half.table["break_even_utilization"], be.table["break_even_utilization"] / 2)
    with pytest.raises(InputError, match="unknown serving stack 'nope'"):
        pv.break_even_view(cat, Scenario(), "nope", 1000, 256, TODAY)


# -- overrides ---------------------------------------------------------------------------


def test_node_override_is_a_new_dated_user_row():
    base = node()
    row = pv.node_price_override(base, 29.5, "  AWS quote Q-1  ", TODAY)
    assert (row.usd_per_node_hour, row.as_of, row.confidence.value, row.source) == (29.5, TODAY, "user", "AWS quote Q-1")
    assert (row.provider, row.instance, row.pricing_option) == (base.provider, base.instance, base.pricing_option)
    assert "33.02" in row.note and "2026-01-01" in row.note
    with pytest.raises(InputError, match="Source"):
        pv.node_price_override(base, 29.5, " ", TODAY)
    with pytest.raises(InputError, match="usd_per_node_hour"):
        pv.node_price_override(base, 0.0, "quote", TODAY)


def test_saved_overrides_win_over_the_snapshot_and_keep_it(store):
    before = {(p.provider, p.instance, p.pricing_option): p for p in store.node_prices()}
    base = before[("AWS", "p5.48xlarge", "savings_1y")]
    msg = pv.save_override(store, pv.node_price_override(base, 29.5, "AWS quote", TODAY))
    assert "29.50" in msg and "stays in the store" in msg
    after = {(p.provider, p.instance, p.pricing_option): p for p in store.node_prices()}
    assert after[("AWS", "p5.48xlarge", "savings_1y")].usd_per_node_hour == 29.5
    table = store.table("node_prices")
    assert ((table["usd_per_node_hour"] == base.usd_per_node_hour) & (table["origin"] == "seed")).any()
    assert (table["origin"] == "user").sum() == 1

    a = next(x for x in store.api_prices() if x.model == "gpt-4.1-mini")
    pv.save_override(store, pv.api_price_override(a, 0.3, 1.2, "contract", TODAY))
    new = next(x for x in store.api_prices() if x.model == "gpt-4.1-mini")
    assert (new.usd_per_mtok_in, new.usd_per_mtok_out, new.confidence.value) == (0.3, 1.2, "user")
    assert new.usd_per_mtok_cached_in == a.usd_per_mtok_cached_in  # untouched fields carry over


# -- performance frames ------------------------------------------------------------------


def test_roofline_frame_places_each_stack_twice_under_the_roof(cat):
    h100 = cat.gpu("H100 SXM")
    df = ci.roofline_frame(cat.stacks, h100, cat.benchmarks)
    assert df.groupby("stack_id").size().eq(2).all() and set(df["stack_id"]) == {s.stack_id for s in cat.stacks}
    pt = df.set_index(["stack_id", "point"])
    # Dense AR at batch 1: 2 FLOPs per parameter over the weight bytes, about 1 for BF16 and 2 for FP8, plus
    # the attention FLOPs over the KV cache the model v2 counts (a few percent at a 1,000-token context).
    assert pt.loc[("llama70b-bf16", "batch 1"), "arithmetic_intensity"] == pytest.approx(1.0, abs=0.05)
    assert pt.loc[("llama70b-fp8", "batch 1"), "arithmetic_intensity"] == pytest.approx(2.0, abs=0.06)
    # Diffusion refines a block per pass: far right of AR even at batch 1.
    assert pt.loc[("llada-8b", "batch 1"), "arithmetic_intensity"] > 10 * pt.loc[("llama8b-bf16", "batch 1"), "arithmetic_intensity"]
    bw = h100.hbm_tb_per_s * 1e12
    roof = np.minimum(df["peak_flops_per_gpu"], bw * df["arithmetic_intensity"])
    assert np.allclose(df["attainable_flops_per_gpu"], roof)
    assert (df["achieved_flops_per_gpu"] <= df["attainable_flops_per_gpu"] * (1 + 1e-9)).all()
    best = df[df["point"] == "best batch"].set_index("stack_id")
    one = df[df["point"] == "batch 1"].set_index("stack_id")
    assert (best["arithmetic_intensity"] >= one["arithmetic_intensity"]).all()
    assert (best["output_tokens_per_s_total"] >= one["output_tokens_per_s_total"]).all()
    assert set(df["precision"]) == {"BF16", "FP8"}
    assert df.attrs["skipped"] == []


def test_roofline_frame_skips_what_does_not_fit(cat):
    small = cat.gpu("A100 40GB SXM").model_copy(update={"name": "16 GB card", "hbm_gb": 16.0})
    df = ci.roofline_frame([stack(cat, "qwen3-235b-a22b-fp8"), stack(cat, "llama8b-bf16")], small)
    assert df.attrs["skipped"] == ["qwen3-235b-a22b-fp8"] and set(df["stack_id"]) == {"llama8b-bf16"}


def test_roofline_chart_draws_the_roofs_and_one_legend_entry_per_stack(cat):
    """No text on the points (labels overprinted each other, issue 14): each stack is named in the legend, its
    architecture's colour, a shape of its own within that architecture; open = batch 1, filled = best batch."""
    h100 = cat.gpu("H100 SXM")
    fig = ci.roofline_chart(ci.roofline_frame(cat.stacks, h100, cat.benchmarks), h100)
    roofs = [t for t in fig.data if t.name.startswith("roof at")]
    # Ridge = peak ÷ bandwidth: 989e12 / 3.35e12 = 295 and 1,979e12 / 3.35e12 = 591 FLOP per byte.
    assert [t.name for t in roofs] == ["roof at BF16 peak (989 TFLOP/s; ridge at 295 FLOP/B)",
                                       "roof at FP8 peak (1,979 TFLOP/s; ridge at 591 FLOP/B)"]
    assert not fig.layout.annotations  # nothing printed over the points
    assert max(roofs[0].y) == pytest.approx(989) and max(roofs[1].y) == pytest.approx(1979)
    x, y = np.asarray(roofs[0].x), np.asarray(roofs[0].y)
    assert np.allclose(y, np.minimum(989, 3.35 * x))  # TB/s × FLOP/byte = TFLOP/s
    stacks = [t for t in fig.data if not t.name.startswith("roof")]
    assert len(stacks) == len(cat.stacks)
    assert all(t.mode == "lines+markers" and not t.text for t in stacks)
    assert {t.legendgroup for t in stacks} == {"autoregressive", "diffusion", "moe", "speculative"}
    spec = next(t for t in stacks if t.name.startswith("llama70b-fp8-spec (speculative, best batch "))
    assert spec.marker.color == ci.ARCH_COLORS["speculative"]
    assert spec.marker.symbol[0] == spec.marker.symbol[1] + "-open"  # batch 1 open, best batch filled
    for arch in ("autoregressive", "diffusion", "moe", "speculative"):
        shapes = [t.marker.symbol[-1] for t in stacks if t.legendgroup == arch]
        assert len(set(shapes)) == len(shapes), arch  # stacks of one colour differ by shape
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def curve_frame() -> pd.DataFrame:
    """A hand-made curve: measured throughput at 4, a vendor claim at 16 with latency, 64 beyond memory."""
    c = np.array([1.0, 4.0, 16.0, 64.0])
    return pd.DataFrame({
        "concurrency": c, "ttft_ms": 100 + c, "e2e_ms": 1000 + 10 * c, "e2e_ms_p95": 1200 + 12 * c,
        "output_tokens_per_s_total": 50 * c, "output_tokens_per_s_per_stream": 50 - c / 2, "requests_per_s": c / 10,
        "arithmetic_intensity": c, "memory_bound": True, "fits": [True, True, True, False],
        "provenance": ["estimated (calibrated to 2 points)", "measured", "vendor_claim", "estimated (calibrated to 2 points)"],
        "measured_fields": ["", "output_tokens_per_s_total", "output_tokens_per_s_total, e2e_ms_p95", ""],
        "source": ["model", "run.json (vllm bench serve)", "vendor blog", "model"],
    })


def traces(fig, name):
    return [t for t in fig.data if t.name == name]


def test_throughput_chart_marks_measured_and_claimed_points_apart_from_the_estimate():
    fig = ci.throughput_chart(curve_frame())
    line = traces(fig, "estimated — tokens/s, whole replica")[0]
    assert list(line.x) == [1, 4, 16] and list(line.y) == [50, 200, 800]  # only where memory allows
    measured, claim = traces(fig, "measured"), traces(fig, "vendor claim")
    assert [list(t.x) for t in measured] == [[4.0], [4.0]]  # total and per stream
    assert list(measured[0].y) == [200.0] and measured[0].showlegend and not measured[1].showlegend
    assert [list(t.x) for t in claim] == [[16.0], [16.0]]
    assert measured[0].marker.symbol != claim[0].marker.symbol != line.marker.symbol
    assert list(traces(fig, "exceeds GPU memory (not feasible)")[0].x) == [64.0]
    # The per-stream axis picks its own round ticks (synced to the left axis's grid they read 14.9, 29.9, ...).
    assert fig.layout.yaxis2.tickmode == "auto" and fig.layout.yaxis2.showgrid is False


def test_latency_chart_marks_only_the_latencies_that_were_measured():
    fig = ci.latency_chart(curve_frame(), "t")
    assert traces(fig, "measured") == []  # the measured point at 4 gave throughput only
    claim = traces(fig, "vendor claim")
    assert len(claim) == 1 and list(claim[0].x) == [16.0] and list(claim[0].y) == [1200 + 12 * 16]
    names = [t.name for t in fig.data]
    assert {"estimated — p95 end-to-end", "estimated — median end-to-end", "estimated — time to first token"} <= set(names)
    assert fig.layout.xaxis.type == "log"
    # 64 does not fit: marked along the top of the feasible range (1.1 x the p95 at 16, 1,392 ms), not at its
    # estimated latencies, which stretched the axis and flattened the curve.
    over = traces(fig, "exceeds GPU memory (not feasible)")
    assert len(over) == 3 and all(list(t.x) == [64.0] and list(t.y) == [pytest.approx(1392 * 1.1)] for t in over)


def test_curve_view_passes_through_a_measured_point_and_reports_the_fit(cat):
    merc = stack(cat, "mercury-class")
    g, n_in, n_out = ci.perf_defaults(merc, cat.gpu("H100 SXM"), cat.benchmarks)
    assert (g, n_in, n_out) == (1, 1000.0, 1000.0)  # where its measured point was taken
    curve, note = ci.curve_view(merc, cat.gpu("H100 SXM"), g, n_in, n_out, cat.benchmarks)
    row = curve[curve["concurrency"] == 1].iloc[0]
    assert row["provenance"] == "measured" and row["output_tokens_per_s_total"] == pytest.approx(1109)
    assert (curve[curve["concurrency"] != 1]["provenance"] == "estimated (calibrated to 1 measured point)").all()
    assert note.startswith("calibrated to 1 measured point: fit error max") and curve.attrs == {}
    fig = ci.throughput_chart(curve)
    assert list(traces(fig, "measured")[0].x) == [1.0]


def test_the_curve_note_gives_the_prefill_share_in_use_on_bf16_cores(cat):
    """A BF16 route's note names the share of the BF16 peak its prefill reaches, 1.3 x the fitted prefill_compute
    (physics.prefill_share; at most the peak), not prefill_compute itself: Llama 3.3 70B BF16 on 8 x A100, fitted
    to its two measured points."""
    from core.performance import calibration

    l70, a100 = stack(cat, "llama70b-bf16"), cat.gpu("A100 40GB SXM")
    cal = calibration.calibrate(l70, a100, 8, cat.benchmarks)
    assert cal.fit is not None
    share = min(cal.efficiency.prefill_compute * 1.3, 1.0)
    _, note = ci.curve_view(l70, a100, 8, 1000, 256, cat.benchmarks)
    assert f"prefill {share:.2f}," in note
    assert f"prefill {cal.efficiency.prefill_compute:.2f}," in cal.fit.describe()


def test_curve_view_without_points_says_it_is_an_estimate(cat):
    l8 = stack(cat, "llama8b-bf16")
    g, n_in, n_out = ci.perf_defaults(l8, cat.gpu("H100 SXM"), cat.benchmarks)
    assert (n_in, n_out) == (1000.0, 256.0) and g in ci.TP_OPTIONS
    curve, note = ci.curve_view(l8, cat.gpu("H100 SXM"), g, n_in, n_out, cat.benchmarks)
    assert (curve["provenance"] == "estimated").all() and "default efficiency" in note
    with pytest.raises(InputError, match="does not fit"):
        ci.curve_view(stack(cat, "qwen3-235b-a22b-fp8"), cat.gpu("H100 SXM"), 1, 1000, 256, cat.benchmarks)


def test_benchmark_table_has_provenance_tool_source_and_date(cat):
    df = ci.benchmark_table(cat.benchmarks, TODAY)
    assert len(df) == len(cat.benchmarks)
    assert {"provenance", "tool", "source", "as_of", "stale", "route", "tokens_in_out"} <= set(df.columns)
    assert set(df["provenance"]) <= {"measured", "vendor_claim", "estimated"}
    merc = df[df["stack_id"] == "mercury-class"].iloc[0]
    assert (merc["route"], merc["tokens_in_out"], merc["stale"]) == ("H100 SXM ×1", "1,000 / 1,000", "⚠ stale")
    assert df["ttft_ms_p50"].dtype == float


def test_break_even_chart_caps_long_bars_and_draws_the_100_percent_line():
    table = pd.DataFrame({"provider": ["P", "P", "P"], "model": ["a", "b", "c"], "tier": ["mid", "commodity", "mid"],
                          "api_usd_per_mtok_out_all_in": [8.0, 0.5, 0.0], "break_even_utilization": [0.25, 2.4, np.inf],
                          "verdict": ["x", "y", "z"]})
    fig = ci.break_even_chart(table, cap=1.5)
    bar = fig.data[0]
    assert list(bar.y) == ["P c", "P b", "P a"]  # reversed: the first row ends on top
    assert list(bar.x) == [1.5, 1.5, 0.25]
    assert list(bar.text) == ["never", "240% ▶", "25%"]
    assert any(s.x0 == 1.0 for s in fig.layout.shapes)


# -- benchmark import through the page's wording -----------------------------------------


def test_import_names_the_page_fields_not_cli_flags(store):
    data = (BENCH_DIR / "vllm_new.json").read_bytes()
    with pytest.raises(InputError) as err:
        ci.import_benchmarks(store, data, "vllm_new.json")
    assert "fill in the 'Serving stack' field" in str(err.value) and "--" not in str(err.value)
    genai = (BENCH_DIR / "genai_perf.csv").read_bytes()
    with pytest.raises(InputError, match="fill in the 'Concurrency' field"):
        ci.import_benchmarks(store, genai, "genai_perf.csv", stack_id="llama8b-bf16", gpu="H100 SXM")
    ok = ci.import_benchmarks(store, data, "vllm_new.json", stack_id="llama70b-fp8", gpu="h100 sxm", gpus_per_replica=2)
    assert ok.rows_added == 1 and not ok.duplicate
    again = ci.import_benchmarks(store, data, "vllm_new.json", stack_id="llama70b-fp8", gpu="H100 SXM", gpus_per_replica=2)
    assert again.duplicate and again.rows_added == 0
    assert sum(b.tool == "vllm bench serve" and b.gpu == "H100 SXM" for b in store.benchmarks()) == 1


def test_data_key_follows_content_not_identity():
    a = [node(usd=33.02), node("B200", 68.36)]
    same = [node(usd=33.02), node("B200", 68.36)]  # other objects, same values
    assert ci.data_key(a, [api()]) == ci.data_key(same, [api()])
    assert ci.data_key(a, [api()]) != ci.data_key([node(usd=29.5), node("B200", 68.36)], [api()])
    assert ci.data_key(a, [api()]) != ci.data_key(a, [api(), api("other")])


def test_default_stack_is_one_with_evidence_on_the_gpu(cat):
    assert ci.default_stack(cat.stacks, cat.gpu("H100 SXM"), cat.benchmarks) == "llama70b-fp8"  # vendor claim at ×2
    assert ci.default_stack(cat.stacks, cat.gpu("A100 40GB SXM"), cat.benchmarks) == "llama70b-bf16"
    assert ci.default_stack(cat.stacks, cat.gpu("B200"), cat.benchmarks) == cat.stacks[0].stack_id  # none: the first
