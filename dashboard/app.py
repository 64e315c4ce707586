"""Dashboard entrypoint: initialises shared state, draws the scenario sidebar, routes to the pages."""

import os

import streamlit as st

from core.errorlog import page_error_line
from core.errors import HangoverError
from dashboard.format import md
from dashboard.state import init_state, scenario_sidebar

st.set_page_config(page_title="GPU Hangover", page_icon="🍸", layout="wide")


def _guarded(step, what: str) -> bool:
    """Error boundary (issue 16): an error is one st.error line, the details go to the server's log; never a traceback.

    st.stop() and st.rerun() raise BaseExceptions, which pass through. With HANGOVER_RAISE_ERRORS set (the
    test suite's AppTests), unexpected errors are raised, so `at.exception` still catches a broken page.
    """
    try:
        step()
        return True
    except Exception as exc:
        if os.environ.get("HANGOVER_RAISE_ERRORS") and not isinstance(exc, HangoverError):
            raise
        st.error(md(page_error_line(exc, what)))
        return False


if not _guarded(init_state, "the dashboard"):
    st.stop()

pages = {
    "The answer": [
        st.Page("screens/overview.py", title="Overview", icon=":material/dashboard:", default=True, url_path="overview"),
        st.Page("screens/routing.py", title="Routing", icon=":material/alt_route:", url_path="routing"),
        st.Page("screens/fleet.py", title="Fleet sizing", icon=":material/dns:", url_path="fleet"),
    ],
    "Your inputs": [
        st.Page("screens/workloads.py", title="Workloads", icon=":material/table_view:", url_path="workloads"),
        st.Page("screens/pricing.py", title="Pricing", icon=":material/payments:", url_path="pricing"),
        st.Page("screens/performance.py", title="Performance", icon=":material/speed:", url_path="performance"),
    ],
    "Share": [
        st.Page("screens/export.py", title="Export", icon=":material/download:", url_path="export"),
    ],
}
nav = st.navigation(pages)
if _guarded(scenario_sidebar, "the scenario sidebar"):
    _guarded(nav.run, "this page")
