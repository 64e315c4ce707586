"""The measured traffic profile (issue 15): the plan can shape interactive traffic by imported GPU telemetry."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from core.decision.fleet import OFFICE_HOURS, hourly_profile, traffic_shape
from core.errors import InputError
from core.models import Scenario
from core.service import evaluate_store, make_scenario


def _night_shift_log(tmp_path):
    """One GPU of node 'n1' logged hourly for a week: 90 % busy from 22:00 to 05:59, 10 % otherwise."""
    start = dt.datetime(2026, 11, 2)
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"]
    for h in range(24 * 7):
        t = start + dt.timedelta(hours=h)
        util = 90 if t.hour >= 22 or t.hour < 6 else 10
        lines.append(f"{t:%Y/%m/%d %H:%M:%S}.000, 0, {util} %, 1000 MiB, 300.00 W")
    p = tmp_path / "night.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_measured_profile_needs_telemetry(store):
    with pytest.raises(InputError, match="telemetry"):
        evaluate_store(store, make_scenario(traffic_profile="measured"))


@pytest.mark.slow
def test_measured_profile_reshapes_the_plan_traffic(store, tmp_path):
    """A night-shift log: the measured shape peaks at night, so each workload's busiest hour moves there;
    the office-hours shape peaks at 10:00. The fleet record says which shape it used and where it came from."""
    from core.telemetry import import_telemetry

    import_telemetry(store, _night_shift_log(tmp_path), node="n1")
    office = evaluate_store(store, make_scenario())
    night = evaluate_store(store, make_scenario(traffic_profile="measured"))
    assert "office-hours" in office.fleet.traffic_shape
    assert "measured" in night.fleet.traffic_shape and "n1" in night.fleet.traffic_shape
    busiest = int(np.argmax(night.plan_inputs.profile[1]))  # onboarding-rt, peak factor 3
    assert busiest >= 22 or busiest < 6
    assert int(np.argmax(office.plan_inputs.profile[1])) in range(9, 17)
    # Mean 1 and maximum = the peak factor whatever the shape (the peak rate is what sizes replicas).
    p = night.plan_inputs.profile[1]
    assert p.mean() == pytest.approx(1.0) and p.max() == pytest.approx(3.0)


def test_traffic_shape_fills_unlogged_hours_with_the_mean():
    """Hours the logs do not cover are unknown, not idle: they take the mean of the covered hours (0.5 here),
    and the shape is scaled so its busiest hour is 1."""
    shape = tuple([1.0] * 12 + [0.0] * 11 + [None])
    sc = Scenario(traffic_profile="measured", measured_hourly_shape=tuple(0.0 if x is None else x for x in shape))
    s, words = traffic_shape(sc)
    assert s.max() == 1.0 and "measured" in words
    assert np.array_equal(traffic_shape(Scenario())[0], OFFICE_HOURS)
    assert hourly_profile(np.array([2.0]), s).max() == pytest.approx(2.0)


def test_cli_traffic_profile_flag(tmp_path, capsys):
    from core.cli import main

    db = str(tmp_path / "c.duckdb")
    assert main(["--db", db, "evaluate", "--traffic-profile", "measured"]) == 2
    assert "telemetry" in capsys.readouterr().err


@pytest.mark.slow
def test_exports_carry_the_measured_figures_beside_the_plan(store, tmp_path):
    """With telemetry imported, the evaluation carries the measured utilization (dated) and the procurement
    summary shows it beside the plan's estimate: the night-shift log is busy 8 of 24 hours at 90 % and 16 at
    10 %, so (8 x 0.9 + 16 x 0.1) / 24 = 36.7 %."""
    from core.presentation.report import build_summary
    from core.telemetry import import_telemetry

    assert evaluate_store(store, make_scenario()).fleet.measured is None
    import_telemetry(store, _night_shift_log(tmp_path), node="n1")
    ev = evaluate_store(store, make_scenario())
    m = ev.fleet.measured
    assert m.utilization == pytest.approx((8 * 0.9 + 16 * 0.1) / 24) and "n1" in m.label
    s = build_summary(ev)
    assert s.figure("measured_utilization").value == pytest.approx(m.utilization)
    assert "n1" in s.figure("measured_utilization").note
