"""The one number formatter (core/presentation/format.py): hand-worked words, the report kinds, and properties."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.presentation import format as f


@pytest.mark.parametrize(("value", "words"), [
    # whole dollars from $100 (half away from zero, as Excel shows 1234.5)
    (19629.6, "$19,630"), (100.0, "$100"), (-1234.5, "-$1,235"),
    # cents from $1
    (10.427, "$10.43"), (1.04, "$1.04"), (10, "$10.00"),
    # below $1: three significant digits, at least cents, no trailing zeros past them
    (0.73, "$0.73"), (0.4, "$0.40"), (0.025, "$0.025"), (0.275, "$0.275"), (0.00253, "$0.00253"),
    (0.000123, "$0.000123"), (0.0000674, "$0.0000674"), (0.0010, "$0.001"), (0.99951, "$1.00"),
    (0.0, "$0"), (-0.3, "-$0.30"),
    (None, "—"), (float("nan"), "—"), (float("inf"), "—"),
])
def test_money_words(value, words):
    assert f.money(value) == words


def test_the_same_small_cost_reads_the_same_everywhere():
    """Issue 10: $0.000123 read "$0.0001" in a routing reason and "$0.00012" in the overview."""
    assert f.money(0.000123) == f.fmt(0.000123, "usd_price") == "$0.000123"
    assert f.excel_format("usd_price", 0.000123) == '"$"#,##0.000000;-"$"#,##0.000000'


def test_money_fixed_places_and_signs():
    assert f.money(19629.6, decimals=0) == "$19,630"
    assert f.money(33.02, decimals=2) == "$33.02"
    assert f.money(-0.3, decimals=0) == "$0"  # no "-$0": a loss that is not there
    assert f.signed_money(-3) == "-$3.00" and f.signed_money(1204) == "+$1,204" and f.signed_money(0) == "$0"


@pytest.mark.parametrize(("ms", "words"), [
    (832.2, "832 ms"), (999.4, "999 ms"), (999.6, "1.0 s"), (17318, "17.3 s"), (2939, "2.9 s"),
    (59_970, "1.0 min"), (150_000, "2.5 min"), (5.4e6, "1.5 h"), (8 * 3.6e6, "8.0 h"), (None, "—"),
])
def test_durations_one_rule(ms, words):
    """Issue 10: 150 s read "150.0 s" in one place and "2 min" in another; now "2.5 min" everywhere."""
    assert f.duration_ms(ms) == words


def test_duration_in_seconds_and_hours_use_the_same_rule():
    assert f.duration_s(150) == f.duration_ms(150_000) == "2.5 min"
    assert f.duration_h(8) == "8.0 h"


def test_percents_counts_and_settings():
    assert f.percent(0.1856) == "19%" and f.percent(0.1856, decimals=1) == "18.6%"
    assert f.percent(0.125) == "13%"  # half away from zero (Python's format would say 12%)
    assert f.percent(None) == "—"
    assert f.number(1234567.4) == "1,234,567" and f.thousands(1234.56, decimals=1) == "1,234.6"
    assert f.integer(17318.4) == "17,318"
    assert f.number(1.005, decimals=2, grouping=False) == "1.01"  # 15 significant digits first, as Excel
    assert f.plain(1.30) == "1.3" and f.plain(8.0) == "8"
    assert f.hour_of_day(7) == "07:00" and f.hour_of_day(24) == "00:00"
    assert f.date(dt.date(2026, 1, 15)) == "2026-01-15" and f.date(None) == "—"


@pytest.mark.parametrize(("value", "kind", "text"), [
    (19629.6, "usd", "$19,630"), (33.02, "usd_2", "$33.02"), (0.025, "usd_price", "$0.025"),
    (10.0, "usd_price", "$10.00"), (0.1856, "pct", "19%"), (0.08, "pct_1", "8.0%"), (17318.4, "int", "17,318"),
    (8.0, "num_1", "8.0"), (1.25, "num_2", "1.25"), (1.3, "num_g", "1.3"), ("x", "text", "x"),
    (dt.date(2026, 1, 1), "date", "2026-01-01"), (float("nan"), "usd", "—"), ("", "text", "—"),
])
def test_report_kinds(value, kind, text):
    assert f.fmt(value, kind) == text


def test_codes_for_plotly_and_streamlit():
    assert f.hover("y", "pct") == "%{y:.0%}"
    assert f.D3["usd"] == ",.0f"
    assert f.column_format("usd") == "$%,.0f" and f.column_format("ms") == "%,.0f ms"


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1e-7, max_value=1e9, allow_nan=False))
def test_money_keeps_three_significant_digits_below_a_dollar_and_cents_above(x):
    """Reading the words back gives the value within the rule's rounding: 3 significant digits, or 1 cent, or $1."""
    text = f.money(x)
    assert text.startswith("$")
    back = float(text[1:].replace(",", ""))
    if x < 0.9995:
        assert math.isclose(back, x, rel_tol=5e-3)
        assert f.money_decimals(x) == len(text.partition(".")[2]) >= 2
    elif x < 99.995:
        assert abs(back - x) <= 0.005 + 1e-9
    else:
        assert abs(back - x) <= 0.5 + 1e-6 * x


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_durations_never_show_a_unit_past_its_end(ms):
    value, unit = f.duration_ms(ms).replace(",", "").split(" ")
    limit = {"ms": 1000, "s": 60, "min": 60, "h": math.inf}[unit]
    assert float(value) < limit


def test_the_largest_finite_doubles_format_instead_of_raising():
    """1e308 has 309 integer digits: the default 28-digit decimal context could not quantize it."""
    assert f.number(1e308).startswith("100,000,")
    assert len(f.number(1e308).replace(",", "")) == 309
    assert f.money(-1.7e308).startswith("-$170,000,")
    assert f.number(1.5e300, decimals=2).endswith(".00")
