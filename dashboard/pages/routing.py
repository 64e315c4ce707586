"""Routing page (placeholder until built)."""

import streamlit as st

st.title("Routing")
st.info("This page is being built.")
