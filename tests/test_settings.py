"""SearchSettings (core.decision.settings): one record of the search's thresholds and the numerics, with help."""

from __future__ import annotations

from dataclasses import fields

import pytest

from core.decision import engine, fleet, latency, sensitivity, simulate
from core.decision.plan import FULL_MOVE_ROWS, RESTART_ROWS
from core.decision.settings import DEFAULT, SearchSettings, current


def test_every_field_says_what_it_steers():
    """Each field has a help text of its own (a sentence, not the field's name)."""
    helps = SearchSettings.help()
    assert list(helps) == [f.name for f in fields(SearchSettings)]
    for name, text in helps.items():
        assert len(text) > 30 and text.rstrip().endswith((".", ")")), name
    assert len(set(helps.values())) == len(helps)


def test_the_cut_offs_live_in_the_record_alone():
    """engine.py, fleet.py and sensitivity.py read their inventory-size cut-offs from the record (no module
    constant a test could patch out of step with it); the latency model's and simulation's numerics are bound
    from it."""
    for module, name in [(sensitivity, "SIDE_BY_SIDE_ROWS"), (sensitivity, "RANGES_MAX_WORKLOADS"),
                         (fleet, "BACKGROUND_ROWS"), (fleet, "BREAK_EVEN_REFINE_ROWS")]:
        assert not hasattr(module, name), f"{module.__name__}.{name} duplicates SearchSettings"
    assert DEFAULT.max_plan_rows == engine.DEFAULT_MAX_PLAN_ROWS  # the documented default, named for messages
    assert DEFAULT.parallel_rows == engine.PARALLEL_ROWS
    assert (DEFAULT.full_move_rows, DEFAULT.restart_rows) == (FULL_MOVE_ROWS, RESTART_ROWS)
    assert DEFAULT.chain_points == latency._CHAIN_POINTS and latency._GL_X.size == DEFAULT.gauss_legendre_nodes
    assert (DEFAULT.min_requests, DEFAULT.max_requests) == (simulate.MIN_REQUESTS, simulate.MAX_REQUESTS)


def test_a_swapped_record_moves_the_plan_size_limit(monkeypatch):
    """The plan-size limit without HANGOVER_MAX_PLAN_ROWS is the record's max_plan_rows, read when asked."""
    from core.decision import settings as settings_mod

    monkeypatch.setattr(settings_mod, "PLAN", DEFAULT.but(max_plan_rows=12))
    assert engine.configured_max_plan_rows({}) == 12


def test_a_changed_copy_leaves_the_default_alone_and_bad_values_fail():
    """but() returns a new record; the default is frozen; a negative count or an unknown name fails loudly."""
    fewer = DEFAULT.but(single_move_rows=10)
    assert (fewer.single_move_rows, DEFAULT.single_move_rows) == (10, 400)
    assert current() is DEFAULT
    with pytest.raises(AttributeError):
        DEFAULT.single_move_rows = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="evict_pricings"):
        DEFAULT.but(evict_pricings=-1)
    with pytest.raises(ValueError, match="speculate_moves"):
        DEFAULT.but(speculate_moves=0)
    with pytest.raises(TypeError):
        DEFAULT.but(no_such_knob=1)

