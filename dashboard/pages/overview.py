"""Overview page (placeholder until built)."""

import streamlit as st

st.title("Overview")
st.info("This page is being built.")
