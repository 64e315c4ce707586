"""Dashboard entrypoint: initialises shared state, draws the scenario sidebar, routes to the pages."""

import streamlit as st

from dashboard.state import init_state, scenario_sidebar

st.set_page_config(page_title="GPU Hangover", page_icon="🍸", layout="wide")
init_state()

pages = {
    "The answer": [
        st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True, url_path="overview"),
        st.Page("pages/routing.py", title="Routing", icon=":material/alt_route:", url_path="routing"),
        st.Page("pages/fleet.py", title="Fleet sizing", icon=":material/dns:", url_path="fleet"),
    ],
    "Your inputs": [
        st.Page("pages/workloads.py", title="Workloads", icon=":material/table_view:", url_path="workloads"),
        st.Page("pages/pricing.py", title="Pricing", icon=":material/payments:", url_path="pricing"),
        st.Page("pages/performance.py", title="Performance", icon=":material/speed:", url_path="performance"),
    ],
    "Share": [
        st.Page("pages/export.py", title="Export", icon=":material/download:", url_path="export"),
    ],
}
nav = st.navigation(pages)
scenario_sidebar()
nav.run()
