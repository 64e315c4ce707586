"""A month's invoice lines as CSV (node-hours and their $, API spend, tokens served), summed for plan against actual.

Columns: item, quantity, usd, and optionally source and date. Items: `node_hours` (quantity = node-hours,
usd = what they cost), `api` (usd = API spend), `tokens` (quantity = tokens served on owned GPUs). Several
lines of one item add up. A bad line stops the read, naming its row; nothing is guessed.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from core.decision.actuals import InvoiceLines
from core.errors import InputError

ITEMS = ("node_hours", "api", "tokens")


def _number(text: str, row: int, column: str) -> float | None:
    text = (text or "").strip().replace(",", "").lstrip("$")
    if not text:
        return None
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"invoice row {row}, column {column!r}: not a number (got {text!r})") from None
    if not math.isfinite(x) or x < 0:
        raise InputError(f"invoice row {row}, column {column!r}: must be a finite number ≥ 0 (got {text!r})")
    return x


def read_invoice(path: str | Path) -> InvoiceLines:
    """The invoice lines of a CSV file, summed by item, with the file (and its sources and dates) as source."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"invoice file {p} does not exist")
    return parse_invoice(p.read_text(encoding="utf-8-sig"), name=p.name)


def parse_invoice(text: str, *, name: str = "invoice") -> InvoiceLines:
    """Invoice CSV text -> InvoiceLines (module docstring)."""
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip().lower() for f in (reader.fieldnames or [])]
    if not {"item", "quantity", "usd"} <= set(fields):
        raise InputError(f"{name}: the invoice needs the columns item, quantity, usd (got {', '.join(fields)})")
    sums: dict[str, float] = {}
    sources: set[str] = set()
    for row_no, raw in enumerate(reader, start=2):
        row = {k.strip().lower(): (v or "") for k, v in raw.items() if k}
        item = row["item"].strip().lower()
        if not item:
            continue
        if item not in ITEMS:
            raise InputError(f"{name} row {row_no}: unknown item {item!r}; use one of {', '.join(ITEMS)}")
        qty, usd = _number(row["quantity"], row_no, "quantity"), _number(row["usd"], row_no, "usd")
        need = {"node_hours": (qty, "quantity"), "api": (usd, "usd"), "tokens": (qty, "quantity")}[item]
        if need[0] is None:
            raise InputError(f"{name} row {row_no}: a {item} line needs its {need[1]}")
        if item == "node_hours":
            sums["node_hours"] = sums.get("node_hours", 0.0) + (qty or 0.0)
            if usd is not None:
                sums["node_usd"] = sums.get("node_usd", 0.0) + usd
        elif item == "api":
            sums["api_usd"] = sums.get("api_usd", 0.0) + (usd or 0.0)
        else:
            sums["tokens"] = sums.get("tokens", 0.0) + (qty or 0.0)
        said = " ".join(x for x in (row.get("source", "").strip(), row.get("date", "").strip()) if x)
        if said:
            sources.add(said)
    if not sums:
        raise InputError(f"{name}: no invoice lines")
    return InvoiceLines(node_hours=sums.get("node_hours"), node_usd=sums.get("node_usd"),
                        api_usd=sums.get("api_usd"), tokens=sums.get("tokens"),
                        source=f"{name}" + (f" ({'; '.join(sorted(sources))})" if sources else ""))
