"""Workloads page (placeholder until built)."""

import streamlit as st

st.title("Workloads")
st.info("This page is being built.")
