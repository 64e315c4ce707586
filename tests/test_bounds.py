"""Input bounds, defaults and help read from the pydantic fields (core/bounds.py), one source for widgets and flags."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.bounds import field_bounds, input_limits
from core.models import DEFAULT_GPU, OwnedHardware, Scenario, Workload


def test_bounds_inside_annotated_and_optional_fields():
    """peak_factor is Annotated[float, Field(ge=1, le=24)] = Field(default=3.0, ...); latency_slo_ms is
    Annotated[float, Field(gt=0, le=86,400,000)] | None (the bound sits inside the union)."""
    peak = field_bounds(Workload, "peak_factor")
    assert (peak.min, peak.max, peak.min_exclusive, peak.max_exclusive, peak.default) == (1.0, 24.0, False, False, 3.0)
    assert peak.help.startswith("Peak-hour rate")
    slo = field_bounds(Workload, "latency_slo_ms")
    assert (slo.min, slo.min_exclusive, slo.max, slo.default) == (0.0, True, 86_400_000.0, None)
    assert slo.range_text() == "more than 0, at most 86,400,000"


def test_plain_field_constraints_defaults_and_enum_defaults():
    nodes = field_bounds(Scenario, "fleet_nodes")
    assert (nodes.min, nodes.max, nodes.default) == (0.0, 10_000.0, 1)
    assert field_bounds(Scenario, "gpu").default == DEFAULT_GPU == Scenario().gpu
    assert field_bounds(Scenario, "pricing_option").default == "savings_1y"
    pct = field_bounds(Scenario, "sla_percentile")
    assert pct.range_text() == "more than 0.5, less than 1"
    assert field_bounds(Scenario, "max_fallback_share").range_text(scale=100, unit=" %") == "0 % to 100 %"


@pytest.mark.parametrize(("model", "name", "inside", "outside"), [
    (Workload, "peak_factor", 24.0, 24.5),
    (Scenario, "api_price_scale", 100.0, 0.0),
    (OwnedHardware, "pue", 1.0, 3.01),
])
def test_the_bounds_are_the_ones_the_model_enforces(model, name, inside, outside):
    b = field_bounds(model, name)
    assert b.contains(inside) and not b.contains(outside)
    base = {"Workload": dict(workload_id="w", name="w", requests_per_day=1, input_tokens=1, output_tokens=1,
                             latency_slo_ms=100, data_policy="external_ok", task_class="chat"),
            "Scenario": {},
            "OwnedHardware": dict(name="n", gpu="H100 SXM", gpus_per_node=8, capex_usd_per_node=1, depreciation_years=4,
                                  cost_of_capital_rate=0.08, kw_per_node=10, pue=1.3, usd_per_kwh=0.1,
                                  support_usd_per_year=0, source="s", as_of="2026-01-01", confidence="user")}
    model(**{**base[model.__name__], name: inside})
    with pytest.raises(ValidationError):
        model(**{**base[model.__name__], name: outside})


def test_input_limits_for_widgets():
    assert input_limits(Workload, "output_tokens", whole=True) == {
        "min_value": 1, "max_value": 1_000_000, "help": "Mean output tokens per request."}
    assert input_limits(Scenario, "max_fallback_share", scale=100.0, help=False) == {"min_value": 0.0,
                                                                                    "max_value": 100.0}
