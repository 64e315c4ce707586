"""Dashboard entrypoint: initialises shared state, draws the scenario sidebar, routes to the pages."""

import streamlit as st

from dashboard.state import init_state, scenario_sidebar

st.set_page_config(page_title="GPU Hangover", page_icon="🍸", layout="wide")
init_state()

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
scenario_sidebar()
nav.run()
