"""GPU Hangover core: pure-Python domain, physics, economics and store (no Streamlit)."""

__version__ = "0.1.0"
