"""The scenario sidebar's owned-hardware inputs: built in core, priced by the engine, moved by the widgets."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core.errors import InputError
from core.service import make_scenario, owned_hardware_defaults
from tests.test_engine import _seed_catalog
from tests.test_pages_answer import APP


def test_owned_inputs_build_a_dated_user_row():
    """Seed 8xH100 figures: full $/hour = (300,000/4 + 300,000 x 0.5 x 0.08)/8,760 + 8 x 1.3 x 0.10 + 30,000/8,760 = $14.3962."""
    values = owned_hardware_defaults(_seed_catalog(), "H100 SXM")
    assert values["capex_usd_per_node"] == 300000
    sc = make_scenario(pricing_option="owned", gpu="H100 SXM", owned_inputs=values)
    assert sc.owned_hardware.confidence.value == "user" and sc.owned_hardware.source == "your scenario inputs"
    assert sc.owned_hardware.full_usd_per_hour == pytest.approx(14.3962, abs=1e-3)
    # Ignored unless the pricing option is "owned".
    assert make_scenario(pricing_option="on_demand", owned_inputs=values).owned_hardware is None
    with pytest.raises(InputError, match="pue"):
        make_scenario(pricing_option="owned", owned_inputs={**values, "pue": 0.5})


@pytest.mark.slow
def test_sidebar_owned_hardware_moves_the_idle_cost(monkeypatch, tmp_path):
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "s.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception

    def idle():
        return float(next(m.value for m in at.metric if m.label == "Idle cost a month").replace("$", "").replace(",", ""))

    rented = idle()
    at.sidebar.selectbox(key="sc_pricing").set_value("owned").run()
    owned = idle()
    assert owned < rented  # $14.40/hour owned against $33.02 rented
    at.sidebar.number_input(key="sc_own_capex_usd_per_node").set_value(600000.0).run()
    assert not at.exception
    assert idle() > owned  # doubling capex raises the hourly cost, and so the idle cost
