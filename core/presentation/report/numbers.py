"""Report number formats: a re-export of core.presentation.format, kept for the modules that import it from here."""

from __future__ import annotations

from core.presentation.format import (
    FORMATS,
    MISSING,
    NUMERIC_KINDS,
    NumberFormat,
    excel_format,
    fmt,
    is_missing,
)

__all__ = ["FORMATS", "MISSING", "NUMERIC_KINDS", "NumberFormat", "excel_format", "fmt", "is_missing"]
