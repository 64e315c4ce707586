"""Validation errors read as one plain line per problem: where, which field, what was wrong."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.errors import describe_validation_error
from core.models import GpuSpec, Scenario, ServingStack, Workload

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
