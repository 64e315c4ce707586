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


def test_the_cut_offs_other_modules_still_hold_agree_with_the_record():
    """Until engine.py, fleet.py and sensitivity.py read the record, their own copies must hold its defaults
    (and the latency model's and simulation's numerics are bound from it)."""
    assert DEFAULT.max_plan_rows == engine.DEFAULT_MAX_PLAN_ROWS
    assert DEFAULT.parallel_rows == engine.PARALLEL_ROWS
    assert DEFAULT.side_by_side_rows == sensitivity.SIDE_BY_SIDE_ROWS
    assert DEFAULT.ranges_max_workloads == sensitivity.RANGES_MAX_WORKLOADS
    assert DEFAULT.background_rows == fleet.BACKGROUND_ROWS
    assert DEFAULT.break_even_refine_rows == fleet.BREAK_EVEN_REFINE_ROWS
    assert (DEFAULT.full_move_rows, DEFAULT.restart_rows) == (FULL_MOVE_ROWS, RESTART_ROWS)
    assert DEFAULT.chain_points == latency._CHAIN_POINTS and latency._GL_X.size == DEFAULT.gauss_legendre_nodes
    assert (DEFAULT.min_requests, DEFAULT.max_requests) == (simulate.MIN_REQUESTS, simulate.MAX_REQUESTS)


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

