"""Shared dashboard plumbing: the one store per process (cache_resource)."""

from __future__ import annotations

import streamlit as st

from core.store import Store, open_store


@st.cache_resource(show_spinner=False)
def store() -> Store:
    """The process-wide store; each page call takes its own cursor inside core."""
    return open_store()
