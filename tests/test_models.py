"""Validation of every domain model: good rows pass, bad rows fail on the right field."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import BaseModel, ValidationError

from core.models import (
    DEFAULT_MIN_QUALITY,
    ApiPrice,
    Architecture,
    Benchmark,
    CostBasis,
    GpuSpec,
    NodePrice,
    OwnedHardware,
    PricingOption,
    Scenario,
    ServingStack,
    Workload,
)

SOURCED = {"source": "test fixture", "as_of": "2026-01-01"}
QUALITY = {
    "quality_extraction": 0.9,
    "quality_code_completion": 0.8,
    "quality_chat": 0.85,
    "quality_agentic_step": 0.8,
    "quality_reasoning": 0.75,
}

GOOD: dict[type[BaseModel], dict] = {
    GpuSpec: {
        "name": "H100 SXM", "hbm_gb": 80, "hbm_tb_per_s": 3.35, "bf16_tflops": 989,
        "fp8_tflops": 1979, "tdp_w": 700, **SOURCED,
    },
    NodePrice: {
        "provider": "AWS", "instance": "p5.48xlarge", "gpu": "H100 SXM", "gpus_per_node": 8,
        "pricing_option": "on_demand", "usd_per_node_hour": 55.04, "region": "us-east-1", **SOURCED,
    },
    OwnedHardware: {
        "name": "8xH100 (owned)", "gpu": "H100 SXM", "gpus_per_node": 8,
        "capex_usd_per_node": 300_000, "depreciation_years": 4, "cost_of_capital_rate": 0.08,
        "kw_per_node": 8.0, "pue": 1.3, "usd_per_kwh": 0.10, "support_usd_per_year": 30_000,
        **SOURCED,
    },
    ApiPrice: {
        "provider": "OpenAI", "model": "gpt-4.1-mini", "tier": "mid", "usd_per_mtok_in": 0.40,
        "usd_per_mtok_cached_in": 0.10, "usd_per_mtok_out": 1.60, "ttft_ms": 400,
        "output_tokens_per_s": 100, **QUALITY, **SOURCED,
    },
    ServingStack: {
        "stack_id": "llama70b-fp8", "name": "Llama 3.3 70B (FP8)", "architecture": "autoregressive",
        "params_total_b": 70.6, "params_active_b": 70.6, "bytes_per_param": 1,
        "kv_bytes_per_token": 163_840, **QUALITY, **SOURCED,
    },
    Benchmark: {
        "stack_id": "llama70b-fp8", "gpu": "H100 SXM", "gpus_per_replica": 2, "concurrency": 64,
        "input_tokens": 1000, "output_tokens": 1000, "output_tokens_per_s_total": 4205,
        "provenance": "vendor_claim", **SOURCED,
    },
    Workload: {
        "workload_id": "chat-rt", "name": "Customer chat", "requests_per_day": 10_000,
        "input_tokens": 1500, "output_tokens": 300, "latency_slo_ms": 2000,
        "data_policy": "owned_only", "task_class": "chat",
    },
    Scenario: {},
}

# (model, field, bad value). `MISSING` deletes the field instead.
MISSING = object()
BAD: list[tuple[type[BaseModel], str, object]] = [
    (GpuSpec, "name", ""),
    (GpuSpec, "name", "   "),  # whitespace is stripped, then too short
    (GpuSpec, "hbm_gb", 0),
    (GpuSpec, "hbm_gb", -3),
    (GpuSpec, "hbm_gb", "inf"),
    (GpuSpec, "hbm_gb", "eighty"),
    (GpuSpec, "hbm_tb_per_s", MISSING),
    (GpuSpec, "tdp_w", "nan"),
    (GpuSpec, "source", ""),
    (GpuSpec, "source", MISSING),
    (GpuSpec, "as_of", "2026-13-01"),
    (GpuSpec, "as_of", "last year"),
    (GpuSpec, "as_of", MISSING),
    (GpuSpec, "confidence", "sure"),
    (GpuSpec, "vendor", "NVIDIA"),  # extra columns are refused, not ignored
    (NodePrice, "gpus_per_node", 0),
    (NodePrice, "gpus_per_node", 73),
    (NodePrice, "gpus_per_node", 1.5),
    (NodePrice, "pricing_option", "spot"),
    (NodePrice, "usd_per_node_hour", 0),
    (NodePrice, "usd_per_node_hour", "inf"),
    (NodePrice, "instance", ""),
    (OwnedHardware, "capex_usd_per_node", 0),
    (OwnedHardware, "depreciation_years", 0),
    (OwnedHardware, "depreciation_years", 16),
    (OwnedHardware, "cost_of_capital_rate", -0.01),
    (OwnedHardware, "cost_of_capital_rate", 8),  # 8 meant as 8 %: must be 0.08
    (OwnedHardware, "pue", 0.9),
    (OwnedHardware, "pue", 3.5),
    (OwnedHardware, "usd_per_kwh", -0.1),
    (OwnedHardware, "support_usd_per_year", -1),
    (OwnedHardware, "kw_per_node", MISSING),
    (ApiPrice, "tier", "premium"),
    (ApiPrice, "architecture", "rnn"),
    (ApiPrice, "usd_per_mtok_in", -0.1),
    (ApiPrice, "usd_per_mtok_cached_in", -0.1),
    (ApiPrice, "usd_per_mtok_out", MISSING),
    (ApiPrice, "ttft_ms", 0),
    (ApiPrice, "output_tokens_per_s", 0),
    (ApiPrice, "quality_chat", 1.2),
    (ApiPrice, "quality_chat", -0.1),
    (ApiPrice, "quality_reasoning", MISSING),
    (ServingStack, "stack_id", "Llama 70B"),  # ids are lower-case, no spaces
    (ServingStack, "architecture", "rnn"),
    (ServingStack, "params_total_b", 0),
    (ServingStack, "params_active_b", 80),  # more than the 70.6 B total
    (ServingStack, "bytes_per_param", 0),
    (ServingStack, "bytes_per_param", 8),
    (ServingStack, "kv_bytes_per_token", -1),
    (ServingStack, "spec_acceptance", 1.5),
    (ServingStack, "n_experts", 0),
    (Benchmark, "gpus_per_replica", 0),
    (Benchmark, "concurrency", 0),
    (Benchmark, "concurrency", "inf"),
    (Benchmark, "input_tokens", -1),
    (Benchmark, "output_tokens", 0),
    (Benchmark, "output_tokens_per_s_total", 0),
    (Benchmark, "ttft_ms_p95", -5),
    (Benchmark, "provenance", "guess"),
    (Benchmark, "provenance", MISSING),
    (Workload, "workload_id", ""),
    (Workload, "requests_per_day", -1),
    (Workload, "requests_per_day", "lots"),
    (Workload, "requests_per_day", "inf"),
    (Workload, "peak_factor", 0.5),
    (Workload, "input_tokens", -1),
    (Workload, "output_tokens", 0),
    (Workload, "latency_slo_ms", 0),
    (Workload, "data_policy", "cloud"),
    (Workload, "task_class", "poetry"),
    (Workload, "min_quality", 1.5),
    (Workload, "cached_input_share", -0.1),
    (Scenario, "fleet_nodes", -1),
    (Scenario, "gpus_per_node", 0),
    (Scenario, "pricing_option", "lease"),
    (Scenario, "cost_basis", "average"),
    (Scenario, "node_usd_per_hour", 0),
    (Scenario, "api_price_scale", 0),
    (Scenario, "sla_scale", 101),
    (Scenario, "max_fallback_share", 1.5),
    (Scenario, "near_tie_share", -0.1),
    (Scenario, "sla_percentile", 0.5),
    (Scenario, "sla_percentile", 1.0),
]


def make(model: type[BaseModel], **changes):
    """A good row of `model` with `changes` applied (MISSING deletes a field)."""
    data = dict(GOOD[model])
    for field, value in changes.items():
        if value is MISSING:
            data.pop(field, None)
        else:
            data[field] = value
    return model.model_validate(data)


@pytest.mark.parametrize("model", list(GOOD), ids=lambda m: m.__name__)
def test_good_row_validates_and_is_frozen(model):
    obj = make(model)
    first = next(iter(model.model_fields))
    with pytest.raises(ValidationError):
        setattr(obj, first, getattr(obj, first))


@pytest.mark.parametrize(
    ("model", "field", "value"),
    BAD,
    ids=[f"{m.__name__}.{f}={'missing' if v is MISSING else v!r}" for m, f, v in BAD],
)
def test_bad_value_is_refused_on_its_field(model, field, value):
    with pytest.raises(ValidationError) as info:
        make(model, **{field: value})
    locs = {e["loc"][0] if e["loc"] else "" for e in info.value.errors()}
    assert locs == {field}


def test_strings_are_stripped_and_blank_optionals_stay_none():
    gpu = make(GpuSpec, name="  H100 SXM  ", fp8_tflops=None)
    assert gpu.name == "H100 SXM"
    assert gpu.fp8_tflops is None
    assert gpu.as_of == dt.date(2026, 1, 1)
    assert gpu.confidence == "primary"


def test_node_price_per_gpu_hour():
    """55.04 $/node-hour over 8 GPUs = 6.88 $/GPU-hour."""
    assert make(NodePrice).usd_per_gpu_hour == pytest.approx(6.88)


def test_owned_hardware_round_numbers():
    """Capex 438,000 $ over 5 years, no cost of capital: 87,600 $/year / 8,760 h = 10.00 $/h.

    Power 10 kW x PUE 1.5 x 0.20 $/kWh = 3.00 $/h; support 8,760 $/year = 1.00 $/h.
    Marginal = 3 + 1 = 4.00 $/h; full = 10 + 4 = 14.00 $/h.
    """
    hw = make(
        OwnedHardware, capex_usd_per_node=438_000, depreciation_years=5, cost_of_capital_rate=0,
        kw_per_node=10, pue=1.5, usd_per_kwh=0.20, support_usd_per_year=8_760,
    )
    assert hw.capital_usd_per_hour == pytest.approx(10.0)
    assert hw.power_usd_per_hour == pytest.approx(3.0)
    assert hw.marginal_usd_per_hour == pytest.approx(4.0)
    assert hw.full_usd_per_hour == pytest.approx(14.0)


def test_owned_hardware_seed_like_numbers():
    """8xH100 node: capex 300,000 $, 4 years, 8 % cost of capital, 8 kW, PUE 1.3, 0.10 $/kWh, 30,000 $/year.

    Depreciation 300,000 / 4 = 75,000 $/year; capital charge on the average book value
    300,000 x 0.5 x 0.08 = 12,000 $/year; (75,000 + 12,000) / 8,760 h = 9.93151 $/h.
    Power 8 x 1.3 x 0.10 = 1.04 $/h; support 30,000 / 8,760 = 3.42466 $/h.
    Marginal = 1.04 + 3.42466 = 4.46466 $/h; full = 9.93151 + 4.46466 = 14.39616 $/h.
    """
    hw = make(OwnedHardware)
    assert hw.capital_usd_per_hour == pytest.approx(9.93151, abs=1e-5)
    assert hw.power_usd_per_hour == pytest.approx(1.04)
    assert hw.marginal_usd_per_hour == pytest.approx(4.46466, abs=1e-5)
    assert hw.full_usd_per_hour == pytest.approx(14.39616, abs=1e-5)


def test_api_price_route_id_and_quality_lookup():
    api = make(ApiPrice)
    assert api.route_id == "api:OpenAI/gpt-4.1-mini"
    assert api.architecture is Architecture.AUTOREGRESSIVE
    assert api.quality_for("reasoning") == 0.75
    assert make(ApiPrice, usd_per_mtok_cached_in=None).usd_per_mtok_cached_in is None


# Architecture -> the fields it needs (docs/performance-model.md: each architecture's section).
ARCH_FIELDS = {
    "diffusion": {"diffusion_block_tokens": 32, "diffusion_steps_per_block": 8},
    "speculative": {"spec_draft_tokens": 4, "spec_acceptance": 0.8},
    "moe": {"n_experts": 128, "experts_per_token": 8},
}


@pytest.mark.parametrize("architecture", list(ARCH_FIELDS))
def test_serving_stack_architecture_fields(architecture):
    fields = ARCH_FIELDS[architecture]
    stack = make(ServingStack, architecture=architecture, **fields)
    assert stack.architecture == architecture
    for missing in fields:
        kept = {k: v for k, v in fields.items() if k != missing}
        with pytest.raises(ValidationError) as info:
            make(ServingStack, architecture=architecture, **kept)
        assert f"a {architecture} stack needs {missing}" in str(info.value)


def test_serving_stack_other_rules():
    """Weights: 70.6 B params x 1 byte = 70.6 GB; a diffusion block of 8 tokens cannot take 33 steps."""
    assert make(ServingStack).weight_bytes == pytest.approx(70.6e9)
    with pytest.raises(ValidationError, match="cannot exceed total parameters"):
        make(ServingStack, params_active_b=80)
    with pytest.raises(ValidationError, match="implausibly large"):
        make(ServingStack, architecture="diffusion", diffusion_block_tokens=8, diffusion_steps_per_block=33)


def test_benchmark_needs_some_throughput():
    per_stream = make(Benchmark, output_tokens_per_s_total=None, output_tokens_per_s_per_stream=41)
    assert per_stream.output_tokens_per_s_per_stream == 41
    with pytest.raises(ValidationError, match="needs output_tokens_per_s_total or output_tokens_per_s_per_stream"):
        make(Benchmark, output_tokens_per_s_total=None)


def test_workload_exactly_one_of_slo_or_window():
    interactive = make(Workload)
    offline = make(Workload, latency_slo_ms=None, batch_window_hours=8)
    assert interactive.interactive and not offline.interactive
    for bad in ({"batch_window_hours": 8}, {"latency_slo_ms": None}):
        with pytest.raises(ValidationError, match="exactly one of latency_slo_ms"):
            make(Workload, **bad)
    for window in (0, 169):  # a window may span up to a week (168 h)
        with pytest.raises(ValidationError):
            make(Workload, latency_slo_ms=None, batch_window_hours=window)


def test_workload_quality_floor_defaults_per_task_class():
    assert make(Workload).effective_min_quality == DEFAULT_MIN_QUALITY["chat"]
    assert make(Workload, min_quality=0.95).effective_min_quality == 0.95
    assert make(Workload).peak_factor == 3.0


def test_scenario_defaults_and_nested_owned_hardware():
    sc = Scenario()  # every default passes its own bounds
    assert isinstance(sc.pricing_option, PricingOption) and isinstance(sc.cost_basis, CostBasis)
    owned = Scenario(pricing_option="owned", owned_hardware=GOOD[OwnedHardware])
    assert owned.owned_hardware.full_usd_per_hour == pytest.approx(14.39616, abs=1e-5)
    with pytest.raises(ValidationError) as info:
        Scenario(owned_hardware={**GOOD[OwnedHardware], "pue": 0.5})
    assert [e["loc"] for e in info.value.errors()] == [("owned_hardware", "pue")]
