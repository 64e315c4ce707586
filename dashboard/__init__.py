"""Streamlit dashboard: thin pages over core."""
