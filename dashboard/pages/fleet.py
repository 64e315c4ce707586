"""Fleet page (placeholder until built)."""

import streamlit as st

st.title("Fleet")
st.info("This page is being built.")
