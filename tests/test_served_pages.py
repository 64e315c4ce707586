"""AppTest: the served count beside every bill on Overview, Fleet sizing and the scenario comparison (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import scenarios as S
from core.store import Store
from tests.apptest_support import figures

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"


@pytest.fixture
def app(app_db):
    """The app on a fresh store (the bundled sample: 5 of its 7 workloads have a route), after its first run."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def _plain(text: str) -> str:
    """Page text as read: the markdown escape before a dollar sign dropped."""
    return text.replace("\\$", "$")


def _show(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_overview_shows_the_bill_with_what_it_serves_and_the_unserved_work_priced(app):
    """The sample's plan: $73,971 a month serving 5 of 7; onboarding-rt and agent-steps priced at $96,418 each
    (tests/test_served.py has the arithmetic); with them, $266,808."""
    at = _show(app, "screens/overview.py")
    (warning,) = [_plain(w.value) for w in at.warning]
    assert warning.startswith("The plan serves 5 of 7 workloads; 2 unserved: the $73,971 bill leaves their work out.")
    assert "onboarding-rt" in warning and "agent-steps" in warning and "$266,808 a month" in warning
    assert any(_plain(e.label).startswith("Cash bill: $73,971 a month — serves 5 of 7 workloads; 2 unserved")
               for e in at.expander)
    summary = _plain(" ".join(m.value for m in at.markdown))
    assert "$73,971 a month (it serves 5 of 7 workloads; 2 unserved)" in summary


@pytest.mark.slow
def test_fleet_sizing_shows_served_beside_the_bill_options_and_sweep(app, monkeypatch):
    """Served count as a metric; each option and each SLA scale with what it serves and its bill with the
    unserved work priced. Two scales only (each is an evaluation): x1 serves 5 of 7 for $73,971, $266,808 with the
    rest; x2 serves all 7 for $73,737, the same with nothing unserved."""
    at = app
    at.session_state["fleet_sla_scales"] = (1.0, 2.0)
    at = _show(at, "screens/fleet.py")
    m = {x.label: x.value for x in at.metric}
    assert m["Workloads served"] == "5 of 7" and m["Cash bill a month"] == "$73,971"
    assert any(_plain(w.value).startswith("The plan serves 5 of 7 workloads") for w in at.warning)
    # st.table cells go out escaped (md_table: "$" would open LaTeX); read them as the page shows them.
    tables = [t.value.map(lambda v: _plain(v) if isinstance(v, str) else v).rename(columns=_plain) for t in at.table]
    sweep = next(t for t in tables if "Targets ×" in t.columns).set_index("Targets ×")
    assert sweep.loc["1", "Serves"] == "5 of 7" and sweep.loc["1", "With unserved work priced"] == "$266,808"
    assert sweep.loc["2", "Serves"] == "7 of 7" and sweep.loc["2", "With unserved work priced"] == "$73,737"
    assert sweep.loc["2", "Unserved work: cheapest route if relaxed or allowed"] == "—"
    options = next(t for t in tables if "Option" in t.columns).set_index("Option")
    assert options.loc["All on public APIs", "Serves"] == "2 of 7"
    assert "(outside this option)" in options.loc["All on public APIs",
                                                  "Unserved work: cheapest route if relaxed or allowed"]
    chart = next(c for t, c in figures(at).items() if t.startswith("$ a month"))
    unserved = next(tr for tr in chart["data"] if tr["name"].startswith("Unserved work"))
    assert any("with unserved" in text for text in unserved["text"])


@pytest.mark.slow
def test_a_comparison_says_when_a_cheaper_scenario_serves_less(app_db):
    """Tighter targets (x0.5) cost $25,528 against $73,971 but serve 3 of 7 workloads against 5: the page says so
    in the same line, with both bills with their unserved work priced."""
    store = Store(app_db)
    try:
        S.save_scenario(store, "Base", S.scenario_from_inputs({}), created_by="alice")
        S.save_scenario(store, "Tighter", S.scenario_from_inputs({"sla_scale": 0.5}), created_by="alice")
    finally:
        store.close()
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.run()
    at = _show(at, "screens/scenarios.py")
    table = at.table[1].value.set_index("Figure")
    assert table.loc["Workloads served", "Base"] == "5 of 7" and table.loc["Workloads served", "Tighter"] == "3 of 7"
    (line,) = [_plain(m.value) for m in at.markdown if "Tighter: $25,528 a month" in _plain(m.value)]
    assert "less than Base — but it serves 3 of 7 workloads, Base 5 of 7; with unserved work priced" in line
