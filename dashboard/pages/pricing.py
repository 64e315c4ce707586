"""Pricing page (placeholder until built)."""

import streamlit as st

st.title("Pricing")
st.info("This page is being built.")
