"""Export page (placeholder until built)."""

import streamlit as st

st.title("Export")
st.info("This page is being built.")
