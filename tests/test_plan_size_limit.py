"""One fleet plan covers at most HANGOVER_MAX_PLAN_ROWS workloads (issue 16: bounded memory): a larger inventory is
refused before it is loaded, with one clear line, in the engine, the CLI and the dashboard; the dashboard's shared
evaluations hold a bounded number of workloads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import core.service
from core.cli import main
from core.decision.engine import (
    DEFAULT_MAX_PLAN_ROWS,
    MAX_PLAN_ROWS_ENV,
    check_plan_size,
    configured_max_plan_rows,
    evaluate,
)
from core.errors import InputError
from core.inventory import read_inventory
from core.inventory.versions import commit_inventory
from core.models import Scenario
from core.service import evaluate_store, stored_size
from core.store import Store
from core.store.seed import sample_workloads_path

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"


def _sample() -> pd.DataFrame:
    report = read_inventory(sample_workloads_path())
    assert report.ok
    return report.frame


@pytest.mark.parametrize(("text", "limit"), [
    ("1000", 1000), ("1,000,000", 1_000_000), ("250_000", 250_000), (" 12 ", 12),
    ("", DEFAULT_MAX_PLAN_ROWS), ("0", DEFAULT_MAX_PLAN_ROWS), ("-5", DEFAULT_MAX_PLAN_ROWS),
    ("1e6", DEFAULT_MAX_PLAN_ROWS), ("lots", DEFAULT_MAX_PLAN_ROWS),
])
def test_the_limit_is_read_from_the_environment(text, limit):
    assert configured_max_plan_rows({MAX_PLAN_ROWS_ENV: text}) == limit
    assert configured_max_plan_rows({}) == DEFAULT_MAX_PLAN_ROWS


def test_an_inventory_above_the_limit_is_refused_at_and_below_it_planned(seed_catalog, monkeypatch):
    """The bundled sample has 7 workloads: a limit of 6 refuses it naming both numbers and the setting; 7 plans it."""
    frame = _sample()
    assert len(frame) == 7
    monkeypatch.setenv(MAX_PLAN_ROWS_ENV, "6")
    with pytest.raises(InputError) as err:
        evaluate(seed_catalog, frame, Scenario())
    msg = str(err.value)
    assert "7 workloads" in msg and "at most 6" in msg and MAX_PLAN_ROWS_ENV in msg and "\n" not in msg
    monkeypatch.setenv(MAX_PLAN_ROWS_ENV, "7")
    assert evaluate(seed_catalog, frame, Scenario()).fleet.nodes_needed >= 1


def test_a_stored_version_too_large_is_refused_before_it_is_loaded(tmp_path, monkeypatch):
    """evaluate_store reads the version's size from its record; the workloads are never loaded."""
    store = Store(tmp_path / "s.duckdb")
    try:
        commit_inventory(store, _sample(), file_name="sample.csv")
        assert stored_size(store) == 7 and stored_size(store, 1) == 7

        def no_load(*_a, **_k):
            raise AssertionError("the inventory was loaded")

        monkeypatch.setattr(core.service, "inventory", no_load)
        monkeypatch.setenv(MAX_PLAN_ROWS_ENV, "3")
        for version in (None, 1):
            with pytest.raises(InputError, match="7 workloads; one fleet plan covers at most 3"):
                evaluate_store(store, Scenario(), version=version)
        with pytest.raises(InputError, match="no inventory version 9"):
            stored_size(store, 9)
    finally:
        store.close()


def test_the_command_line_says_it_in_one_line_with_exit_code_2(capsys, monkeypatch):
    monkeypatch.setenv(MAX_PLAN_ROWS_ENV, "5")
    code = main(["evaluate", "--format", "json"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert out.err.count("\n") == 1 and "7 workloads" in out.err and "Traceback" not in out.err


def test_the_dashboard_names_the_limit_and_still_shows_the_workloads(app_db, monkeypatch):
    """Overview, Routing and Fleet sizing show the one line (no traceback); the Workloads page still lists them."""
    store = Store(app_db)
    commit_inventory(store, _sample(), file_name="sample.csv")
    store.close()
    monkeypatch.setenv(MAX_PLAN_ROWS_ENV, "4")
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception
    for page in ("screens/overview.py", "screens/routing.py", "screens/fleet.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        assert any("one fleet plan covers at most 4" in e.value for e in at.error), page
    at.switch_page("screens/workloads.py").run()
    assert not at.exception
    assert not any("fleet plan covers" in e.value for e in at.error)
    listed = [df for df in (x.value for x in at.dataframe) if "workload_id" in df.columns]
    assert listed and len(listed[0]) == 7 and "onboarding-rt" in set(listed[0]["workload_id"])


def test_the_shared_evaluations_hold_a_bounded_number_of_workloads(monkeypatch):
    """Three scenarios of a 90,000-workload inventory under a budget of 200,000: the third would hold 270,000, so
    the cache is emptied first and holds that one only; an evaluation already cached is not counted twice."""
    from dashboard import state

    assert state.EVALUATIONS_HELD_WORKLOADS == 400_000  # ~3.4 GB at ~8.5 KB held per workload
    calls: list[tuple] = []
    cleared: list[int] = []

    class FakeCache:
        def __call__(self, *key):
            calls.append(key)
            return key

        def clear(self):
            cleared.append(len(calls))

    monkeypatch.setattr(state, "_evaluate", FakeCache())
    monkeypatch.setattr(state, "stored_size", lambda _store, _version: 90_000)
    monkeypatch.setattr(state, "store", lambda: None)
    monkeypatch.setattr(state, "_held", {})
    monkeypatch.setattr(state, "_evaluated_on", [])
    monkeypatch.setattr(state, "EVALUATIONS_HELD_WORKLOADS", 200_000)
    state._evaluation_for("a", 1, None)
    state._evaluation_for("b", 1, None)
    state._evaluation_for("a", 1, None)  # cached: nothing added
    assert cleared == [] and sum(state._held.values()) == 180_000
    state._evaluation_for("c", 1, None)
    assert cleared == [3] and state._held == {("c", 1, None): 90_000}
    # A new store stamp drops everything held (the old store's evaluations).
    state._evaluation_for("c", 2, None)
    assert cleared == [3, 4] and state._held == {("c", 2, None): 90_000}
    # Too large to plan: refused before it is counted or loaded.
    monkeypatch.setenv(MAX_PLAN_ROWS_ENV, "80000")
    with pytest.raises(InputError):
        state._evaluation_for("d", 2, None)
    assert ("d", 2, None) not in state._held


def test_check_plan_size_at_the_default():
    check_plan_size(DEFAULT_MAX_PLAN_ROWS)
    with pytest.raises(InputError, match=f"{DEFAULT_MAX_PLAN_ROWS + 1:,} workloads"):
        check_plan_size(DEFAULT_MAX_PLAN_ROWS + 1)
