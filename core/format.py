"""The one number formatter: money, percents, counts and durations as words, and the same rules as Excel, Plotly and Streamlit codes.

It sits below decision (the engine words its reasons with it); core.presentation.format re-exports it.

Every figure a person reads (pages, reports, charts, CLI tables, the
engine's reasons) goes through here, so one value reads the same everywhere:

- money: `$19,630` from $100 up (whole dollars); `$10.43` from $1; below $1
  three significant digits with at least two decimals (`$0.40`, `$0.025`,
  `$0.275`, `$0.00253`, `$0.000123`), so dated list prices are never
  rounded away and tiny per-request costs stay legible; `decimals=` fixes the
  places instead (a table column of monthly sums);
- durations from milliseconds: `832 ms` below 1 s, `17.3 s` below 1 min,
  `2.5 min` below 1 h, `8.0 h` from there;
- percents `19%`, counts `1,234,567`, settings `1.3` (general format);
- anything missing (None, NaN, inf, empty text) reads `—`.

Rounding is half away from zero after 15 significant digits, as Excel shows
a cell, so the HTML/Markdown text matches the workbook's display.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext

__all__ = [
    "COLUMN_FORMATS",
    "D3",
    "FORMATS",
    "MISSING",
    "NUMERIC_KINDS",
    "NumberFormat",
    "column_format",
    "date",
    "duration_h",
    "duration_ms",
    "duration_s",
    "excel_format",
    "fmt",
    "hour_of_day",
    "hover",
    "input_format",
    "integer",
    "is_missing",
    "money",
    "money_decimals",
    "number",
    "percent",
    "plain",
    "signed_money",
    "thousands",
]

MISSING = "—"  # a figure that does not apply or is not known; the XLSX cell stays blank instead


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


def _fixed(a: float, places: int, grouping: bool = True) -> str:
    """|a| with `places` decimals, half away from zero after 15 significant digits (Excel's display)."""
    with localcontext() as ctx:
        ctx.prec = 400  # room for every digit of a finite double (1e308) plus its decimals
        q = Decimal(format(abs(a), ".15g")).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return format(q, ",f" if grouping else "f")


def _sign(x: float, text: str) -> str:
    # "-0" and "-$0.00" would read as a loss that is not there.
    return "-" if x < 0 and any(c in "123456789" for c in text) else ""


def _money_text(a: float) -> str:
    """The adaptive money digits (no sign, no $) for |x| = a."""
    if a >= 100 or a == 0:
        return _fixed(a, 0)
    if a >= 1:
        return _fixed(a, 2)
    places = 2 - math.floor(math.log10(a))  # three significant digits below $1
    whole, _, frac = _fixed(a, places).partition(".")
    frac = frac.rstrip("0").ljust(2, "0")  # at least cents; no trailing zeros past them
    return f"{whole}.{frac}"


def money(x, *, decimals: int | None = None) -> str:
    """US dollars: the adaptive rule above ('$19,630', '$10.43', '$0.025', '$0.000123'), or fixed `decimals`."""
    if is_missing(x):
        return MISSING
    x = float(x)
    text = _money_text(abs(x)) if decimals is None else _fixed(x, decimals)
    return f"{_sign(x, text)}${text}"


def money_decimals(x) -> int:
    """How many decimals money(x) shows (0 for missing): a per-cell Excel format uses the same."""
    if is_missing(x):
        return 0
    _, _, frac = _money_text(abs(float(x))).partition(".")
    return len(frac)


def signed_money(x) -> str:
    """A difference in dollars with its sign always shown: '+$1,204', '-$0.25', '$0'."""
    text = money(x)
    return text if text == MISSING or text.startswith("-") or text == "$0" else f"+{text}"


def percent(x, *, decimals: int = 0) -> str:
    """A share as a percent: 0.186 -> '19%'; decimals=1 -> '18.6%'."""
    if is_missing(x):
        return MISSING
    x = float(x) * 100.0
    text = _fixed(x, decimals, grouping=False)
    return f"{_sign(x, text)}{text}%"


def number(x, *, decimals: int = 0, grouping: bool = True) -> str:
    """A count or quantity: 1234567 -> '1,234,567'; decimals=1 -> '1,234,567.0'."""
    if is_missing(x):
        return MISSING
    x = float(x)
    text = _fixed(x, decimals, grouping)
    return f"{_sign(x, text)}{text}"


thousands = number  # the name pages used before the formatter was one


def integer(x) -> str:
    """A whole number with thousands separators: 17318.4 -> '17,318'."""
    return number(x, decimals=0)


def plain(x) -> str:
    """A setting or multiplier in general format, no trailing zeros: 1.30 -> '1.3', 8.0 -> '8'."""
    if is_missing(x):
        return MISSING
    return format(float(x), "g")


def duration_ms(ms) -> str:
    """A duration given in milliseconds: '832 ms', '17.3 s', '2.5 min', '8.0 h' (one rule everywhere)."""
    if is_missing(ms):
        return MISSING
    ms = float(ms)
    a = abs(ms)
    # Each unit ends where its rounded text would reach the next one (59,970 ms is '1.0 min', not '60.0 s').
    if a < 999.5:
        value, unit, places = ms, "ms", 0
    elif a < 59_950:
        value, unit, places = ms / 1_000, "s", 1
    elif a < 3_597_000:
        value, unit, places = ms / 60_000, "min", 1
    else:
        value, unit, places = ms / 3_600_000, "h", 1
    return f"{number(value, decimals=places)} {unit}"


def duration_s(seconds) -> str:
    """A duration given in seconds, by the same rule as duration_ms."""
    return MISSING if is_missing(seconds) else duration_ms(float(seconds) * 1_000)


def duration_h(hours) -> str:
    """A duration given in hours (a batch window), by the same rule as duration_ms."""
    return MISSING if is_missing(hours) else duration_ms(float(hours) * 3_600_000)


def hour_of_day(hour: int) -> str:
    """7 -> '07:00' (a clock hour, local time)."""
    return f"{int(hour) % 24:0>2}:00"


def date(value) -> str:
    """A date as ISO text (2026-01-15); missing -> '—'."""
    if is_missing(value):
        return MISSING
    return value.isoformat() if isinstance(value, dt.date) else str(value)


# -- report kinds: the text above plus the matching Excel number format ---------------------------

@dataclass(frozen=True)
class NumberFormat:
    """How one kind of report figure is shown: the Excel format code and the words function for HTML/Markdown."""

    excel: str
    decimals: int  # -1: not a fixed number of places


FORMATS: dict[str, NumberFormat] = {
    "usd": NumberFormat('"$"#,##0;-"$"#,##0', 0),
    "usd_2": NumberFormat('"$"#,##0.00;-"$"#,##0.00', 2),
    # Token prices and per-request costs: money()'s adaptive rule; the workbook sets each cell's
    # places from its value (excel_format(kind, value)); this code is the fallback for a column.
    "usd_price": NumberFormat('"$"#,##0.00##;-"$"#,##0.00##', -1),
    "pct": NumberFormat("0%", 0),
    "pct_1": NumberFormat("0.0%", 1),
    "int": NumberFormat("#,##0", 0),
    "num_1": NumberFormat("#,##0.0", 1),
    "num_2": NumberFormat("0.00", 2),
    "num_g": NumberFormat("General", -1),  # plain settings such as a 1.3 multiplier
    "date": NumberFormat("yyyy-mm-dd", -1),
    "text": NumberFormat("@", -1),
}
NUMERIC_KINDS = frozenset(k for k in FORMATS if k not in ("date", "text"))


def fmt(value, kind: str) -> str:
    """The text a reader sees for a report figure of a kind (see FORMATS); matches the workbook's display."""
    if is_missing(value):
        return MISSING
    if kind == "date":
        return date(value)
    if kind == "text":
        return str(value)
    words = {
        "usd": lambda v: money(v, decimals=0),
        "usd_2": lambda v: money(v, decimals=2),
        "usd_price": money,
        "pct": percent,
        "pct_1": lambda v: percent(v, decimals=1),
        "int": integer,
        "num_1": lambda v: number(v, decimals=1),
        "num_2": lambda v: number(v, decimals=2, grouping=False),
        "num_g": plain,
    }
    return words[kind](float(value))


def excel_format(kind: str, value=None) -> str:
    """The Excel number format code for a kind of figure; for 'usd_price' with a value, that value's places."""
    if kind == "usd_price" and value is not None and not is_missing(value):
        places = money_decimals(value)
        body = '"$"#,##0' + ("." + "0" * places if places else "")
        return f"{body};-{body}"
    return FORMATS[kind].excel


# -- the same rules as codes for Plotly (d3-format) and Streamlit tables (printf) ------------------

# d3-format specifiers for axis ticks and hover templates (Plotly).
D3: dict[str, str] = {
    "usd": ",.0f",      # with a "$" prefix: tickprefix="$" or "$" before the placeholder
    "usd_2": ",.2f",
    "pct": ".0%",
    "int": ",.0f",
    "num_1": ",.1f",
    "num_2": ",.2f",
    "num_g": "~g",      # general, no trailing zeros (1.3, 0.5, 8)
    "sig3": ",.3~g",    # three significant digits (per-stream tokens/s from 0.3 to 300)
    "grouped": ",",     # thousands separators, the value as it is
}


def hover(ref: str, kind: str) -> str:
    """A Plotly hover placeholder with a D3 format: hover('y', 'pct') -> '%{y:.0%}'."""
    return "%{" + ref + ":" + D3[kind] + "}"


# printf-style formats for st.column_config.NumberColumn (sprintf-js on the page); a table column keeps
# one number of places, so these are the fixed-place kinds of the report, not money()'s adaptive rule.
COLUMN_FORMATS: dict[str, str] = {
    "usd": "$%,.0f",         # monthly sums
    "usd_2": "$%,.2f",       # node-hour prices, $/M output tokens
    "usd_3": "$%.3f",        # list prices per M tokens and per kWh (quoted to a tenth of a cent)
    "usd_price": "$%.6f",    # per-request costs: a millionth of a dollar shows three digits from $0.0001
    "int": "%,.0f",          # counts (rounded, never truncated)
    "num_1": "%,.1f",
    "num_2": "%,.2f",
    "plain": "%,g",          # concurrency 1, 2, 4 ... as it is
    "id": "%d",              # row numbers, versions: no separators
    "ms": "%,.0f ms",
}


def column_format(kind: str) -> str:
    """The Streamlit column format for a kind (see COLUMN_FORMATS)."""
    return COLUMN_FORMATS[kind]


def input_format(decimals: int) -> str:
    """The format of a st.number_input showing `decimals` places (inputs take no thousands separators)."""
    return f"%.{int(decimals)}f"
