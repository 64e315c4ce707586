"""Every CSV the product writes, formula-neutralised by the one rule the reports use (core.textsafety)."""

from __future__ import annotations

import pandas as pd

from core.textsafety import csv_bytes


def routing_csv(frame: pd.DataFrame) -> bytes:
    """The routing table (Evaluation.verdicts_frame()) as UTF-8 CSV: a cell such as "=cmd|' /C calc'!A0"
    is written as "'=cmd|' /C calc'!A0", shown as text by Excel, LibreOffice and Google Sheets."""
    return csv_bytes(frame)


def routing_parquet(frame: pd.DataFrame) -> bytes:
    """The routing table as Parquet (typed columns; text is data there, so nothing to neutralise)."""
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()
