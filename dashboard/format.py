"""Display helpers for pages: money/percent/thousands words, st.dataframe column formats, provenance badges."""

from __future__ import annotations

import streamlit as st

from core.presentation.views import duration_ms, money, percent, thousands
from core.textsafety import escape_markdown

__all__ = [
    "badge", "count_col", "md", "duration_ms", "money", "money_col", "ms_col", "number_col", "percent",
    "share_bar_col", "text_col", "thousands",
]

# Provenance and confidence words as the data spells them -> (badge colour, label shown).
_BADGES = {
    "measured": ("green", "measured"),
    "calibrated": ("blue", "calibrated estimate"),
    "vendor_claim": ("violet", "vendor claim"),
    "estimated": ("orange", "estimate"),
    "estimate": ("orange", "estimate"),
    "primary": ("green", "primary source"),
    "secondary": ("blue", "secondary source"),
    "unverified": ("orange", "unverified"),
    "user": ("gray", "your figure"),
}


def md(text: object) -> str:
    """Text from data made literal for st.markdown/caption/warning/error: never a link, image or markup.

    '*' in a source path is not italics, '$' is not LaTeX, a URL or an address is not a link
    (core.textsafety.escape_markdown, the one rule for every page).
    """
    return escape_markdown(text)


def badge(word: str) -> str:
    """Markdown badge for a provenance or confidence word, e.g. ':orange-badge[estimate]'."""
    key = "calibrated" if "calibrated" in word else word
    color, label = _BADGES.get(key, ("gray", word))
    return f":{color}-badge[{label}]"


def money_col(label: str, *, precision: int = 0, help: str | None = None):
    """Dollar column: '$%,.0f' for monthly sums, more decimals for per-request prices."""
    return st.column_config.NumberColumn(label, format=f"$%,.{precision}f", help=help)


def number_col(label: str, *, fmt: str = "%,.1f", help: str | None = None):
    """Plain number column with thousands separators."""
    return st.column_config.NumberColumn(label, format=fmt, help=help)


def count_col(label: str, *, help: str | None = None):
    """Whole-number column ('%,d')."""
    return st.column_config.NumberColumn(label, format="%,d", help=help)


def ms_col(label: str = "p95 latency", *, help: str | None = None):
    """Milliseconds with thousands separators."""
    return st.column_config.NumberColumn(label, format="%,.0f ms", help=help)


def share_bar_col(label: str, *, help: str | None = None):
    """A 0-1 share drawn as a bar with its percent."""
    return st.column_config.ProgressColumn(label, format="percent", min_value=0.0, max_value=1.0, help=help)


def text_col(label: str, *, width: str | int | None = None, help: str | None = None):
    """Text column with a chosen width ('small', 'medium', 'large' or pixels)."""
    return st.column_config.TextColumn(label, width=width, help=help)
