"""Dashboard entrypoint: routes to the pages (st.navigation, called once per run)."""

import streamlit as st

st.set_page_config(page_title="GPU Hangover", page_icon="🍸", layout="wide")

pages = {
    "Answer": [
        st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    ],
}
st.navigation(pages).run()
