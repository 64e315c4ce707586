"""Procurement summary export: one evaluated scenario as an XLSX workbook, an HTML one-pager or a Markdown brief.

Build the summary once (`build_summary`, which re-runs the evaluation for the
price-sensitivity cases) and hand it to any of the three builders; each builder
also accepts the evaluation alone and builds the summary itself.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import tempfile
from pathlib import Path

from core.decision.engine import Evaluation
from core.errors import InputError
from core.presentation.report.content import (
    Change,
    Figure,
    ProcurementSummary,
    Table,
    build_summary,
    recommended_changes,
)
from core.presentation.report.numbers import FORMATS, fmt

# File extension -> report format.
REPORT_FORMATS = {".xlsx": "xlsx", ".html": "html", ".htm": "html", ".md": "markdown"}

__all__ = [
    "FORMATS",
    "REPORT_FORMATS",
    "Change",
    "Figure",
    "ProcurementSummary",
    "Table",
    "build_html",
    "build_markdown",
    "build_summary",
    "build_xlsx",
    "fmt",
    "recommended_changes",
    "report_clock",
    "report_format",
    "write_report",
]


def report_clock() -> dt.datetime | None:
    """The time a report says it was made: SOURCE_DATE_EPOCH when set (reproducible files), else None (now).

    SOURCE_DATE_EPOCH is the reproducible-builds convention (seconds since
    1970, UTC); the golden files (tests/golden/regen.py) set it so the dates
    inside the reports do not move from one run to the next.
    """
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    try:
        return dt.datetime.fromtimestamp(int(raw), dt.UTC)
    except (ValueError, OverflowError, OSError):
        raise InputError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970 (got {raw!r})") from None


def _summary(ev: Evaluation, summary: ProcurementSummary | None, generated: dt.datetime | None) -> ProcurementSummary:
    if summary is not None:
        return summary
    return build_summary(ev, generated=generated or report_clock())


def build_xlsx(ev: Evaluation, *, summary: ProcurementSummary | None = None,
               generated: dt.datetime | None = None) -> bytes:
    """The workbook (Summary, Workloads, Fleet, Assumptions, Sensitivity) as .xlsx bytes."""
    from core.presentation.report.xlsx import build_workbook_bytes

    return build_workbook_bytes(_summary(ev, summary, generated))


def build_html(ev: Evaluation, *, summary: ProcurementSummary | None = None,
               generated: dt.datetime | None = None) -> str:
    """The one-pager as a self-contained HTML document (inline SVG charts; opens and prints offline on 2 A4 pages)."""
    from core.presentation.report.html import build_html_text

    return build_html_text(_summary(ev, summary, generated))


def build_markdown(ev: Evaluation, *, summary: ProcurementSummary | None = None,
                   generated: dt.datetime | None = None) -> str:
    """The brief as Markdown, for a ticket or a wiki page."""
    from core.presentation.report.markdown import build_markdown_text

    return build_markdown_text(_summary(ev, summary, generated))


def report_format(path: str | Path) -> str:
    """'xlsx', 'html' or 'markdown' from a file name, or an InputError naming the extensions allowed."""
    ext = Path(path).suffix.lower()
    if ext not in REPORT_FORMATS:
        raise InputError(f"cannot write a report to {Path(path).name!r}: the file name must end in "
                         f"{', '.join(REPORT_FORMATS)}")
    return REPORT_FORMATS[ext]


def write_report(ev: Evaluation, path: str | Path, *, summary: ProcurementSummary | None = None,
                 generated: dt.datetime | None = None) -> Path:
    """Write the report in the format its extension names; returns the path written."""
    p = Path(path)
    kind = report_format(p)
    if not p.parent.is_dir():
        raise InputError(f"cannot write {p}: folder {p.parent} does not exist")
    s = _summary(ev, summary, generated)
    if kind == "xlsx":
        data = build_xlsx(ev, summary=s)
    elif kind == "html":
        data = build_html(ev, summary=s).encode("utf-8")
    else:
        data = build_markdown(ev, summary=s).encode("utf-8")
    try:
        write_atomically(p, data)
    except OSError as exc:
        raise InputError(f"cannot write {p}: {exc.strerror or exc}; no file was written") from None
    return p


def write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, then rename it over `path`: a full disk or a crash leaves the
    old file (or none), never a truncated HTML or a 0-byte XLSX (issue 16)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
