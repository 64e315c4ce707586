"""Display helpers for pages: the number words (core.presentation.format), st.dataframe columns, provenance badges."""

from __future__ import annotations

import streamlit as st

from core.presentation.format import (
    column_format,
    duration_ms,
    integer,
    money,
    percent,
    plain,
    signed_money,
    thousands,
)
from core.textsafety import escape_markdown, escape_markdown_frame

__all__ = [
    "badge", "count_col", "md", "md_table", "duration_ms", "integer", "money", "money_col", "ms_col", "number_col", "percent",
    "plain", "share_bar_col", "signed_money", "text_col", "thousands",
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


def md_table(frame, **kwargs) -> None:
    """st.table with every text cell and header made literal: st.table renders its cells as Markdown."""
    st.table(escape_markdown_frame(frame), **kwargs)


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


def money_col(label: str, *, kind: str = "usd", help: str | None = None):
    """Dollar column: 'usd' whole dollars (monthly sums), 'usd_2' cents, 'usd_price' three significant digits."""
    return st.column_config.NumberColumn(label, format=column_format(kind), help=help)


def number_col(label: str, *, kind: str = "num_1", help: str | None = None):
    """Plain number column with thousands separators ('num_1' one decimal, 'num_2' two)."""
    return st.column_config.NumberColumn(label, format=column_format(kind), help=help)


def count_col(label: str, *, help: str | None = None):
    """Whole-number column with thousands separators."""
    return st.column_config.NumberColumn(label, format=column_format("int"), help=help)


def ms_col(label: str = "p95 latency", *, help: str | None = None):
    """Milliseconds with thousands separators."""
    return st.column_config.NumberColumn(label, format=column_format("ms"), help=help)


def share_bar_col(label: str, *, help: str | None = None):
    """A 0-1 share drawn as a bar with its percent."""
    return st.column_config.ProgressColumn(label, format="percent", min_value=0.0, max_value=1.0, help=help)


def text_col(label: str, *, width: str | int | None = None, help: str | None = None):
    """Text column with a chosen width ('small', 'medium', 'large' or pixels)."""
    return st.column_config.TextColumn(label, width=width, help=help)
