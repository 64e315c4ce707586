"""Dashboard entrypoint: initialises shared state, draws the scenario sidebar, routes to the pages."""

import os

import streamlit as st

from core.errorlog import page_error_line
from core.errors import HangoverError
from dashboard.format import md
from dashboard.signin import sign_in
from dashboard.state import alias_pages, init_state, release_other_pages_state, scenario_sidebar

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


if not _guarded(init_state, "the dashboard") or not _guarded(sign_in, "sign-in"):
    st.stop()

# (section, script, title, icon, URL path). Overview is the default page: Streamlit serves it at "/".
SCREENS = [
    ("The answer", "screens/overview.py", "Overview", ":material/dashboard:", "overview"),
    ("The answer", "screens/routing.py", "Routing", ":material/alt_route:", "routing"),
    ("The answer", "screens/fleet.py", "Fleet sizing", ":material/dns:", "fleet"),
    ("The answer", "screens/showback.py", "Showback", ":material/groups:", "showback"),
    ("Your inputs", "screens/workloads.py", "Workloads", ":material/table_view:", "workloads"),
    ("Your inputs", "screens/pricing.py", "Pricing", ":material/payments:", "pricing"),
    ("Your inputs", "screens/performance.py", "Performance", ":material/speed:", "performance"),
    ("Your inputs", "screens/telemetry.py", "Telemetry", ":material/monitoring:", "telemetry"),
    ("Share", "screens/scenarios.py", "Scenarios", ":material/compare:", "scenarios"),
    ("Share", "screens/export.py", "Export", ":material/download:", "export"),
]
pages: dict[str, list] = {}
for section, script, title, icon, path in SCREENS:
    default = path == "overview"  # its declared path is free for the alias below ("/overview")
    pages.setdefault(section, []).append(
        st.Page(script, title=title, icon=icon, url_path="home" if default else path, default=default))
# Streamlit matches URL paths exactly: hidden pages at /overview, /Routing, /EXPORT, … show the same screens.
pages["Share"] += alias_pages([(script, title, path) for _, script, title, _, path in SCREENS], default="overview")
nav = st.navigation(pages)
release_other_pages_state(nav.url_path)  # an upload's reports are let go once the user is on another page
if _guarded(scenario_sidebar, "the scenario sidebar"):
    _guarded(nav.run, "this page")
