"""Presentation: what pages, the CLI and reports show, built from core results (no Streamlit).

- `views`: tables and plain-words summaries of an evaluation.
- `pricing_views`: price snapshots, staleness, owned TCO, break-even, user overrides.
- `charts`, `charts_inputs`: pure Plotly figure builders.
- `report`: the procurement summary (XLSX, HTML, Markdown).
"""
