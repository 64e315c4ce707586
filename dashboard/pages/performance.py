"""Performance page (placeholder until built)."""

import streamlit as st

st.title("Performance")
st.info("This page is being built.")
