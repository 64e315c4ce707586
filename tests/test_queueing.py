"""Erlang C and replica sizing against published values and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision.queueing import erlang_c, p_wait_exceeds, replicas_for_sla, wait_scale


def test_erlang_c_table_values():
    """Textbook Erlang C for A = 10 Erlangs: c = 11 -> 0.6821, c = 15 -> 0.1020; unstable (c <= A) -> 1."""
    got = erlang_c([11, 15, 10, 5], [10, 10, 10, 10])
    assert got[0] == pytest.approx(0.6821, abs=1e-4)
    assert got[1] == pytest.approx(0.1020, abs=1e-4)
    assert got[2] == 1.0 and got[3] == 1.0


def test_erlang_c_single_server_is_rho():
    """M/M/1: P(wait > 0) = rho."""
    assert erlang_c(1, 0.3) == pytest.approx(0.3)


def test_wait_tail_mm1_golden():
    """M/M/1 with lambda 0.5/s, service 1 s: P(W > 2 s) = rho e^{-(mu - lambda) t} = 0.5 e^{-1} = 0.18394."""
    assert p_wait_exceeds(1, 0.5, 1.0, 2.0) == pytest.approx(0.5 * np.exp(-1.0))


def test_wait_scale_golden_and_limits():
    """Kimura's k on 4 servers at 40 % load, service cv^2 2.25 (lognormal cv 1.5):
    h = 0.5 (1 + 0.6 x 3 x (sqrt(24) - 2) / (16 x 0.4 x 4)) = 0.5 (1 + 5.21816 / 25.6) = 0.601917,
    k = 3.25 / (4.5 - 1.25 / 0.601917) = 3.25 / 2.423302 = 1.341145 (Allen–Cunneen: 1.625).
    One server: Pollaczek–Khinchine's (1 + cv^2) / 2 at any load; exponential service: 1; deterministic
    service near full load: M/D/c's half of M/M/c's."""
    assert wait_scale(4, 0.4, 2.25) == pytest.approx(1.341145, abs=1e-6)
    assert wait_scale([1, 1, 1], [0.2, 0.5, 0.9], [0.0, 0.5, 3.0]) == pytest.approx([0.5, 0.75, 2.0])
    assert wait_scale([2, 8, 64], [0.1, 0.5, 0.9], 1.0) == pytest.approx([1.0, 1.0, 1.0])
    assert wait_scale(16, 1.0, 0.0) == pytest.approx(0.5)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 200), st.floats(0.05, 20), st.sampled_from([1, 2, 4, 8, 16, 64]), st.floats(0, 5))
def test_replicas_are_the_fewest_that_meet_the_tail(lam, svc, slots, budget):
    n = int(replicas_for_sla(lam, svc, slots, budget))
    assert n >= 1
    assert p_wait_exceeds(n * slots, lam, svc, budget) <= 0.05 + 1e-12
    if n > 1:
        assert p_wait_exceeds((n - 1) * slots, lam, svc, budget) > 0.05


def test_replicas_zero_traffic_and_no_budget():
    assert replicas_for_sla([0.0], [1.0], [4], [1.0])[0] == 0
    assert replicas_for_sla([1.0], [1.0], [4], [-0.1])[0] == -1
