"""Static SVG charts for the procurement one-pager (monthly cost by route, hourly utilization), in pure Python.

Why SVG and not Plotly: plotly.js inline made the one-pager 4.9 MB, and a
static image would need kaleido and a browser at report time. An inline SVG is
a few kilobytes, opens and prints offline, scales to the page, and needs
nothing but the standard library. Colours come from the one palette, numbers
from the one formatter.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

from core.presentation import palette
from core.presentation.format import fmt, number, percent

# Hosting colours from the one palette (the workbook's charts use the same).
COLORS = {"owned": palette.HOSTING["owned"], "api": palette.HOSTING["api"], "unallocated": palette.UNALLOCATED,
          "interactive": palette.HOSTING["owned"], "batch": palette.BATCH_FILL}
GROUP_NAMES = {"owned": "Owned GPUs", "api": "Public API", "unallocated": "Owned, not attributed"}

# Drawing units: the SVG scales to its box (viewBox), so these are proportions; at the one-pager's half-page
# width (about 90 mm) one unit is about a quarter of a millimetre, and FONT units print at about 7 pt.
WIDTH = 360
FONT = 9.5
SMALL = 8.5
CHAR_W = 0.56  # average glyph width of a sans-serif face, in font sizes: enough to size label columns
FAMILY = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"


def _c(value: float, places: int = 1) -> str:
    """A drawing coordinate as SVG wants it (no thousands separators), through the one formatter."""
    return number(value, decimals=places, grouping=False)


def esc(text: object) -> str:
    """Text for SVG markup, escaped."""
    return html.escape(str(text), quote=True)


def plain_label(text: str, width: int = 30) -> list[str]:
    """Route or workload text wrapped into lines of at most `width` characters (never cut)."""
    return textwrap.wrap(str(text), width, break_long_words=True) or [""]


def _text(x: float, y: float, body: str, *, size: float = FONT, anchor: str = "start", fill: str = palette.INK,
          weight: str | None = None) -> str:
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{_c(x)}" y="{_c(y)}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{bold}>'
            f"{esc(body)}</text>")


def _svg(chart_id: str, title: str, height: float, body: list[str]) -> str:
    """The <svg> element: scales to its container's width, titled for screen readers."""
    return (f'<svg id="{esc(chart_id)}" class="chart-svg" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {WIDTH} {_c(height, 0)}" width="100%" role="img" aria-labelledby="{esc(chart_id)}-title" '
            f'font-family="{esc(FAMILY)}">'
            f'<title id="{esc(chart_id)}-title">{esc(title)}</title>'
            + _text(0, 12, title, size=10.5, weight="600") + "".join(body) + "</svg>")


def _legend(items: Sequence[tuple[str, str]], y: float) -> list[str]:
    """Swatches with their names, left to right from x = 0."""
    out, x = [], 0.0
    for name, color in items:
        out.append(f'<rect x="{_c(x)}" y="{_c(y - 7)}" width="8" height="8" fill="{color}"/>')
        out.append(_text(x + 11, y, name, size=SMALL, fill=palette.MUTED))
        x += 11 + len(name) * SMALL * CHAR_W + 12
    return out


def cost_by_route_svg(*, routes: Sequence[str], monthly_usd: Sequence[float], groups: Sequence[str],
                      title: str = "Monthly cost by route", chart_id: str = "chart-cost-by-route") -> str:
    """Horizontal bars, largest on top, one colour per group ('owned', 'api', 'unallocated'); $ at each bar's end.

    Labels wrap onto as many lines as they need in a column left of the bars;
    each bar's value is written past its end, inside the drawing (the scale
    leaves room for the longest value).
    """
    items = sorted(zip(routes, monthly_usd, groups, strict=True), key=lambda t: -float(t[1]))
    label_chars = 26
    label_w = label_chars * SMALL * CHAR_W + 6
    values = [fmt(v, "usd") for _, v, _ in items]
    value_w = max((len(v) for v in values), default=2) * SMALL * CHAR_W + 6
    bar_x, bar_w = label_w, WIDTH - label_w - value_w
    top = max((float(v) for _, v, _ in items), default=0.0)
    present = [g for g in ("owned", "api", "unallocated") if any(t[2] == g for t in items)]
    body = _legend([(GROUP_NAMES[g], COLORS[g]) for g in present], 28)
    y = 40.0
    line_h = SMALL * 1.2
    for (route, usd, group), text in zip(items, values, strict=True):
        lines = plain_label(route, label_chars)
        row_h = max(14.0, len(lines) * line_h + 4)
        mid = y + row_h / 2
        for k, line in enumerate(lines):
            ty = mid - (len(lines) - 1) * line_h / 2 + k * line_h + SMALL * 0.35
            body.append(_text(label_w - 6, ty, line, size=SMALL, anchor="end"))
        w = bar_w * max(float(usd), 0.0) / top if top > 0 else 0.0
        body.append(f'<rect x="{_c(bar_x)}" y="{_c(mid - 5.5)}" width="{_c(w)}" height="11" fill="{COLORS[group]}">'
                    f"<title>{esc(route)}: {esc(text)}/month</title></rect>")
        body.append(_text(bar_x + w + 3, mid + SMALL * 0.35, text, size=SMALL))
        y += row_h
    body.append(f'<line x1="{_c(bar_x)}" y1="38" x2="{_c(bar_x)}" y2="{_c(y + 2)}" stroke="{palette.LINE}"/>')
    body.append(_text(bar_x, y + 13, "US$ per month (attributed; the last bar is not attributed)"
                      if "unallocated" in present else "US$ per month (attributed)", size=SMALL - 0.5,
                      fill=palette.MUTED))
    return _svg(chart_id, title, y + 18, body)


def hourly_utilization_svg(*, hours: Sequence[str], interactive: Sequence[float], with_batch: Sequence[float],
                           title: str = "Owned fleet utilization by hour (estimate)",
                           chart_id: str = "chart-hourly-utilization") -> str:
    """Stacked bars per hour: interactive load, and the batch work that fills idle hours on top of it (0-100 %)."""
    fill = [max(float(w) - float(i), 0.0) for i, w in zip(interactive, with_batch, strict=True)]
    left, right, plot_top, plot_h = 28.0, 4.0, 40.0, 80.0
    n = max(len(hours), 1)
    step = (WIDTH - left - right) / n
    bar_w = step * 0.8
    base = plot_top + plot_h
    body = _legend([("Interactive", COLORS["interactive"]), ("Batch fill", COLORS["batch"])], 28)
    for share in (0.0, 0.5, 1.0):
        gy = base - plot_h * share
        body.append(f'<line x1="{_c(left)}" y1="{_c(gy)}" x2="{_c(WIDTH - right)}" y2="{_c(gy)}" '
                    f'stroke="{palette.LINE}" stroke-width="{0.8 if share == 0 else 0.4}"/>')
        body.append(_text(left - 3, gy + SMALL * 0.35, percent(share), size=SMALL - 0.5, anchor="end",
                          fill=palette.MUTED))
    for k, (hour, i_share, f_share) in enumerate(zip(hours, interactive, fill, strict=True)):
        x = left + k * step + (step - bar_w) / 2
        i_h = plot_h * min(max(float(i_share), 0.0), 1.0)
        f_h = plot_h * min(max(f_share, 0.0), 1.0 - min(max(float(i_share), 0.0), 1.0))
        tip = f"{hour}: {percent(i_share)} interactive + {percent(f_share)} batch"
        body.append(f'<rect x="{_c(x)}" y="{_c(base - i_h)}" width="{_c(bar_w)}" height="{_c(i_h)}" '
                    f'fill="{COLORS["interactive"]}"><title>{esc(tip)}</title></rect>')
        if f_h > 0:
            body.append(f'<rect x="{_c(x)}" y="{_c(base - i_h - f_h)}" width="{_c(bar_w)}" height="{_c(f_h)}" '
                        f'fill="{COLORS["batch"]}"><title>{esc(tip)}</title></rect>')
        if k % 3 == 0:
            body.append(_text(x + bar_w / 2, base + 11, hour, size=SMALL - 0.5, anchor="middle", fill=palette.MUTED))
    body.append(_text(left, base + 24, "Share of the owned GPUs busy, by hour of day (local time)", size=SMALL - 0.5,
                      fill=palette.MUTED))
    return _svg(chart_id, title, base + 29, body)
