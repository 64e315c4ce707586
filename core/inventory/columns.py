"""The inventory contract: its columns, their bounds (read from core.models.Workload), help texts and limits."""

from __future__ import annotations

import os
import re
import typing
from dataclasses import dataclass

import annotated_types
import numpy as np

from core.models import DEFAULT_MIN_QUALITY, TASK_CLASSES, DataPolicy, Workload

COLUMNS: tuple[str, ...] = tuple(Workload.model_fields)
NUMERIC_COLUMNS: tuple[str, ...] = (
    "requests_per_day",
    "peak_factor",
    "input_tokens",
    "output_tokens",
    "output_tokens_p95",
    "latency_slo_ms",
    "batch_window_hours",
    "min_quality",
    "cached_input_share",
)
# Columns that hold a share: "95%" is read as 0.95 here (issue 14), and nowhere else.
SHARE_COLUMNS: tuple[str, ...] = ("min_quality", "cached_input_share")
ENUM_VALUES: dict[str, tuple[str, ...]] = {
    "data_policy": tuple(p.value for p in DataPolicy),
    "task_class": TASK_CLASSES,
}
TEXT_COLUMNS: tuple[str, ...] = ("workload_id", "name", "team", "notes")
OPTIONAL_TEXT_COLUMNS: tuple[str, ...] = ("team", "notes")
REQUIRED_COLUMNS: tuple[str, ...] = tuple(c for c, f in Workload.model_fields.items() if f.is_required())
DEFAULTS: dict[str, float] = {"peak_factor": float(Workload.model_fields["peak_factor"].default)}
SLO_OR_WINDOW = ("latency_slo_ms", "batch_window_hours")

# -- limits (issue 16): stated once, named in every refusal -------------------------------

# Largest inventory one upload may hold: the dashboard keeps a whole inventory in memory per session.
# A server with less memory sets a lower limit in the environment (HANGOVER_MAX_ROWS=500000), read once at start.
DEFAULT_MAX_ROWS = 2_000_000
MAX_ROWS_ENV = "HANGOVER_MAX_ROWS"


def configured_max_rows(environ: typing.Mapping[str, str] = os.environ) -> int:
    """HANGOVER_MAX_ROWS when it is a whole number from 1 to the default (commas or underscores allowed), else the default."""
    text = environ.get(MAX_ROWS_ENV, "").replace(",", "").replace("_", "").strip()
    return int(text) if text.isdigit() and 0 < int(text) <= DEFAULT_MAX_ROWS else DEFAULT_MAX_ROWS


MAX_ROWS = configured_max_rows()
# Above EDITOR_MAX_ROWS rows the dashboard shows an inventory read-only, PAGE_ROWS rows a page: an editor or a
# table sends every row it is given to the browser (issue 16: a 2M-row inventory was a 295 MB message).
EDITOR_MAX_ROWS = 10_000
PAGE_ROWS = 1_000
# Largest cell: Excel's own limit ("Total number of characters that a cell can contain: 32,767",
# Microsoft, Excel specifications and limits, checked 2026-12-01). A longer cell was not written by Excel.
MAX_CELL_CHARS = 32_767
# Errors listed in a report; the rest are counted ("and N more"), so a broken 10,000-column file
# gives a report a person can read, not half a megabyte.
MAX_LISTED_ERRORS = 500
# Echoed cell values and header names are cut to this many characters in messages.
MAX_ECHO_CHARS = 80
# Rows searched for the header under title or blank rows, and header cells that must name a column.
HEADER_SCAN_ROWS = 50
MIN_HEADER_MATCHES = 3


def echo(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """A user's value as shown in a message: at most `limit` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def key(header: object) -> str:
    """Header matching ignores case, spaces, hyphens and underscores."""
    return re.sub(r"[\s_\-]+", "", str(header).lower())


KNOWN: dict[str, str] = {key(c): c for c in COLUMNS}


def known_count(cells: typing.Iterable[object]) -> int:
    """How many distinct contract columns a row of cells names (a header scores high, data rows 0)."""
    return len({KNOWN[k] for k in (key(c) for c in cells if c is not None) if k in KNOWN})


# -- bounds, from the pydantic field definitions --------------------------------------------


@dataclass(frozen=True)
class NumberRule:
    """Allowed range of one numeric column, as core.models.Workload states it."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    allowed: str = ""

    def outside(self, v: np.ndarray) -> np.ndarray:
        """Mask of values outside the range (NaN = blank, never outside)."""
        bad = np.zeros(v.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            if self.ge is not None:
                bad |= v < self.ge
            if self.gt is not None:
                bad |= v <= self.gt
            if self.le is not None:
                bad |= v > self.le
        return bad


def _constraints(annotation: object, metadata: list[object]) -> dict[str, float]:
    """ge/gt/le of a field, wherever pydantic keeps them (field metadata, or inside Optional[Annotated])."""
    found: dict[str, float] = {}
    stack: list[object] = list(metadata)
    todo = [annotation]
    while todo:
        t = todo.pop()
        for arg in typing.get_args(t):
            if hasattr(arg, "metadata"):  # a FieldInfo inside Annotated
                stack.extend(arg.metadata)
            todo.append(arg)
        stack.extend(getattr(t, "__metadata__", ()))
    for m in stack:
        for name, cls in (("ge", annotated_types.Ge), ("gt", annotated_types.Gt), ("le", annotated_types.Le)):
            if isinstance(m, cls):
                found[name] = float(getattr(m, name))
        if hasattr(m, "metadata"):
            found.update(_constraints(None, list(m.metadata)))
    return found


def _number(x: float) -> str:
    return f"{x:,.0f}" if x >= 1e4 and x.is_integer() else f"{x:g}"


# What each number means, in the words of the error message; the bounds come from the model.
_MEANING = {
    "requests_per_day": "requests per day",
    "peak_factor": "peak-hour rate / mean rate; blank = {default}",
    "input_tokens": "mean input tokens per request",
    "output_tokens": "mean output tokens per request",
    "output_tokens_p95": "95th percentile of output tokens, at least the mean; blank = a spread of cv 0.5",
    "latency_slo_ms": "p95 end-to-end target, ms",
    "batch_window_hours": "hours",
    "min_quality": "or blank for the task-class default",
    "cached_input_share": "or blank",
}


def _rule(column: str) -> NumberRule:
    field = Workload.model_fields[column]
    c = _constraints(field.annotation, list(field.metadata))
    meaning = _MEANING[column].format(default=_number(DEFAULTS.get(column, 0.0)))
    if column in SHARE_COLUMNS:
        allowed = f"a share between {_number(c['ge'])} and {_number(c['le'])} (or a percentage such as 95%), {meaning}"
    else:
        low = f">= {_number(c['ge'])}" if "ge" in c else f"> {_number(c['gt'])}"
        high = f" and <= {_number(c['le'])}" if "le" in c else ""
        allowed = f"a number {low}{high} ({meaning})"
    return NumberRule(ge=c.get("ge"), gt=c.get("gt"), le=c.get("le"), allowed=allowed)


NUMBER_RULES: dict[str, NumberRule] = {c: _rule(c) for c in NUMERIC_COLUMNS}

# -- help ----------------------------------------------------------------------------------

# One line per column for the template's "Columns" sheet and the docs (bounds from NUMBER_RULES).
COLUMN_HELP: dict[str, tuple[str, str]] = {
    "workload_id": ("required", "Unique short id, e.g. kyc-overnight. Used to compare versions."),
    "name": ("required", "What the work is, in words a finance reader knows."),
    "team": ("optional", "Owning team."),
    "requests_per_day": ("required", f"Requests per day: {NUMBER_RULES['requests_per_day'].allowed}."),
    "peak_factor": ("optional (3)", f"Peak-hour request rate / mean rate: {NUMBER_RULES['peak_factor'].allowed}."),
    "input_tokens": ("required", f"Mean input (prompt) tokens per request: {NUMBER_RULES['input_tokens'].allowed}."),
    "output_tokens": ("required",
                      f"Mean output (generated) tokens per request: {NUMBER_RULES['output_tokens'].allowed}."),
    "output_tokens_p95": ("optional", f"95th percentile of output tokens per request, at least output_tokens: "
                                      f"{NUMBER_RULES['output_tokens_p95'].allowed}."),
    "latency_slo_ms": (
        "one of two",
        f"Interactive work: {NUMBER_RULES['latency_slo_ms'].allowed}. Leave blank for offline work.",
    ),
    "batch_window_hours": (
        "one of two",
        f"Offline work: hours the queue may take, {NUMBER_RULES['batch_window_hours'].allowed}. "
        "Leave blank for interactive work.",
    ),
    "data_policy": ("required", "external_ok (may use a public API) or owned_only (must stay on your GPUs)."),
    "task_class": ("required", "extraction, code_completion, chat, agentic_step or reasoning."),
    "min_quality": (
        "optional",
        "Quality floor 0-1 (or 95%) as a share of a strong frontier model. Blank = default per task class: "
        + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_MIN_QUALITY.items())
        + ".",
    ),
    "cached_input_share": ("optional", "Share of input tokens served from a prompt cache, 0-1 (or 60%)."),
    "notes": ("optional", "Free text. Unknown extra columns are added here as 'column: value'."),
}
# A field added to the model later still gets a line (its own description) until one is written here.
for _c, _f in Workload.model_fields.items():
    COLUMN_HELP.setdefault(_c, ("required" if _f.is_required() else "optional", _f.description or ""))

# One example per task class; the template shows them and the tests read them back.
EXAMPLE_ROWS: tuple[dict[str, object], ...] = (
    {"workload_id": "invoice-extract", "name": "Overnight invoice field extraction", "team": "Finance ops",
     "requests_per_day": 50000, "peak_factor": 1, "input_tokens": 2500, "output_tokens": 300,
     "batch_window_hours": 8, "data_policy": "owned_only", "task_class": "extraction",
     "cached_input_share": 0, "notes": "Example row: replace with your own"},
    {"workload_id": "ide-complete", "name": "Developer code completion", "team": "Engineering",
     "requests_per_day": 200000, "peak_factor": 4, "input_tokens": 2000, "output_tokens": 60,
     "latency_slo_ms": 500, "data_policy": "owned_only", "task_class": "code_completion",
     "min_quality": 0.8, "cached_input_share": 0.6, "notes": "Example row: replace with your own"},
    {"workload_id": "staff-chat", "name": "Internal chat assistant", "team": "All staff",
     "requests_per_day": 30000, "peak_factor": 3, "input_tokens": 1500, "output_tokens": 350,
     "latency_slo_ms": 8000, "data_policy": "external_ok", "task_class": "chat",
     "cached_input_share": 0.3, "notes": "Example row: replace with your own"},
    {"workload_id": "payments-agent", "name": "Payments operations agent step", "team": "Operations",
     "requests_per_day": 60000, "peak_factor": 3, "input_tokens": 4000, "output_tokens": 150,
     "latency_slo_ms": 2000, "data_policy": "owned_only", "task_class": "agentic_step",
     "min_quality": 0.85, "cached_input_share": 0.5, "notes": "Example row: replace with your own"},
    {"workload_id": "credit-memos", "name": "Credit-decision memos", "team": "Credit risk",
     "requests_per_day": 800, "peak_factor": 2, "input_tokens": 12000, "output_tokens": 1500,
     "batch_window_hours": 4, "data_policy": "external_ok", "task_class": "reasoning",
     "min_quality": 0.95, "notes": "Example row: replace with your own"},
)
