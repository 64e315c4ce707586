"""Helpers for AppTest page tests: read Plotly figures back from a page."""

from __future__ import annotations

import base64
import json

import numpy as np
from streamlit.testing.v1 import AppTest


def figures(at: AppTest) -> dict[str, dict]:
    """Plotly charts on the page by title, as JSON with numeric arrays decoded."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for trace in spec["data"]:
            for k, v in list(trace.items()):
                if isinstance(v, dict) and "bdata" in v:
                    trace[k] = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
        out[spec["layout"]["title"]["text"]] = spec
    return out
