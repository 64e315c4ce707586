"""The one place report numbers are formatted: an Excel number format and the same text for HTML/Markdown."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

MISSING = "–"  # shown in HTML/Markdown where a figure does not apply; the XLSX cell stays blank


@dataclass(frozen=True)
class NumberFormat:
    """How one kind of figure is shown: the Excel format code and the decimals the text version rounds to."""

    excel: str
    decimals: int
    currency: bool = False
    percent: bool = False
    thousands: bool = True
    optional_decimals: int = 0  # Excel '#' places: shown only when not zero


FORMATS: dict[str, NumberFormat] = {
    "usd": NumberFormat('"$"#,##0;-"$"#,##0', 0, currency=True),
    "usd_2": NumberFormat('"$"#,##0.00;-"$"#,##0.00', 2, currency=True),
    # Token prices and per-request costs: at least cents, up to four decimals ($0.025, $0.0001).
    "usd_price": NumberFormat('"$"#,##0.00##;-"$"#,##0.00##', 2, currency=True, optional_decimals=2),
    "pct": NumberFormat("0%", 0, percent=True, thousands=False),
    "pct_1": NumberFormat("0.0%", 1, percent=True, thousands=False),
    "int": NumberFormat("#,##0", 0),
    "num_1": NumberFormat("#,##0.0", 1),
    "num_2": NumberFormat("0.00", 2, thousands=False),
    "num_g": NumberFormat("General", -1),  # plain settings such as a 1.3 multiplier
    "date": NumberFormat("yyyy-mm-dd", -1),
    "text": NumberFormat("@", -1),
}

NUMERIC_KINDS = frozenset(k for k in FORMATS if k not in ("date", "text"))


def is_missing(value) -> bool:
    """None, NaN, inf and empty text are shown as missing."""
    if value is None:
        return True
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, str):
        return value == ""
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _excel_round(x: float, places: int) -> Decimal:
    """Round like Excel's display: 15 significant digits first, then half away from zero (2.5 -> 3)."""
    d = Decimal(format(x, ".15g"))
    return d.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def fmt(value, kind: str) -> str:
    """The text a reader sees for a figure; matches what Excel shows for FORMATS[kind].excel."""
    if is_missing(value):
        return MISSING
    f = FORMATS[kind]
    if kind == "date":
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if kind == "text":
        return str(value)
    x = float(value)
    if kind == "num_g":
        return f"{x:g}"
    if f.percent:
        x *= 100.0
    places = f.decimals + f.optional_decimals
    q = _excel_round(abs(x), places)
    text = format(q, ",f" if f.thousands else "f")
    if f.optional_decimals:
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0").ljust(f.decimals, "0")
        text = f"{whole}.{frac}" if frac else whole
    sign = "-" if x < 0 else ""
    if f.currency:
        return f"{sign}${text}"
    return f"{sign}{text}{'%' if f.percent else ''}"


def excel_format(kind: str) -> str:
    """The Excel number format code for a kind of figure."""
    return FORMATS[kind].excel
