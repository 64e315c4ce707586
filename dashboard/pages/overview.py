"""Overview page: what the store holds (placeholder until the decision engine lands)."""

import streamlit as st

from dashboard.state import store

st.title("GPU Hangover")
st.caption("What each token really costs on your own GPUs, and where each workload should run.")
info = store().info()
st.dataframe(info, hide_index=True, use_container_width=True)
