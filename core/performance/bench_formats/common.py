"""Shared reading rules for benchmark files: strict numbers, dates, the stack/GPU hints a file states, one run's record."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

from core.errorlog import shorten
from core.errors import InputError

# Dates a benchmark may carry: nothing measured LLM serving before 2015; a year ahead allows clock skew and
# time zones, never "year 9999".
EARLIEST_DATE = dt.date(2015, 1, 1)
FUTURE_DAYS = 365

# Text a tool writes for "no value" (GenAI-Perf writes N/A where a metric does not apply).
_MISSING_WORDS = {"", "n/a", "na", "none", "null", "-"}


class NonFinite:
    """A NaN / Infinity / -Infinity literal as JSON parsed it: refused when a field the import reads holds one."""

    __slots__ = ("literal",)

    def __init__(self, literal: str):
        self.literal = literal

    def __repr__(self) -> str:
        return self.literal


@dataclass
class Raw:
    """One run as read from a file, before the user's settings are applied."""

    label: str = ""
    concurrency: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    total: float | None = None
    per_stream: float | None = None
    ttft_p50: float | None = None
    ttft_p95: float | None = None
    e2e_p50: float | None = None
    e2e_p95: float | None = None
    date: dt.date | None = None
    notes: list[str] = field(default_factory=list)
    hints: dict[str, object] = field(default_factory=dict)  # stack/GPU/GPU count a file states


@dataclass(frozen=True)
class Source:
    """A benchmark file as the format modules see it: its name, its text and, for JSON, the parsed value."""

    file_name: str
    text: str
    obj: object = None
    is_json: bool = False

    @property
    def name(self) -> str:
        """The file name without folders (messages never show a machine path)."""
        return display_name(self.file_name)


@lru_cache(maxsize=256)
def display_name(file_name: str) -> str:
    """The last part of a path, at most 200 characters."""
    base = re.split(r"[\\/]", file_name.rstrip("/\\"))[-1] or file_name
    return shorten(base)


def records(obj: object) -> list[dict]:
    """A JSON object, or a list of objects (vLLM --append-result), as a list; anything else -> []."""
    if isinstance(obj, dict):
        return [obj]
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        return obj
    return []


def _thousands_ok(groups: list[str]) -> bool:
    return bool(groups) and 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


def _text_number(s: str, what: str) -> float | None:
    """A number written as text, with the separators a spreadsheet or a locale writes; ambiguous -> refused.

    '1,383.6' and '1.383,6' are both 1383.6 (the rightmost separator is the decimal one, the other must group
    thousands); '0,85' is 0.85; '1,383' could be either 1383 or 1.383 and is refused, never guessed.
    """
    t = re.sub(r"[\s\u00a0\u202f_']", "", s)
    m = re.fullmatch(r"([+-]?)([\d.,]*\d[\d.,]*|[\d.,]*\d)(?:[eE]([+-]?\d{1,4}))?", t)
    if not m:
        raise InputError(f"{what} is {shorten(repr(s))}, not a number")
    sign, body, exp = m[1], m[2], m[3]
    has_dot, has_comma = "." in body, "," in body
    if has_dot and has_comma:
        dec = "." if body.rfind(".") > body.rfind(",") else ","
        thou = "," if dec == "." else "."
        whole, _, frac = body.rpartition(dec)
        if dec in whole or not _thousands_ok(whole.split(thou)):
            raise InputError(f"{what} is {shorten(repr(s))}: its separators do not form a number (write it like 1383.6)")
        body = whole.replace(thou, "") + "." + frac
    elif has_comma:
        parts = body.split(",")
        if len(parts) > 2:
            if not _thousands_ok(parts):
                raise InputError(f"{what} is {shorten(repr(s))}: its separators do not form a number (write it like 1383.6)")
            body = "".join(parts)
        elif len(parts[1]) == 3 and _thousands_ok(parts):
            raise InputError(
                f"{what} is {shorten(repr(s))}: ambiguous (thousands separator or decimal comma?); "
                "write it without separators, with a '.' for decimals")
        else:
            body = parts[0] + "." + parts[1]
    elif body.count(".") > 1:
        parts = body.split(".")
        if not _thousands_ok(parts):
            raise InputError(f"{what} is {shorten(repr(s))}: its separators do not form a number (write it like 1383.6)")
        body = "".join(parts)
    return float(sign + body + (("e" + exp) if exp else ""))


def number(v: object, what: str) -> float | None:
    """A finite number from a file, None when absent ('N/A', null, missing); InputError naming `what` otherwise.

    Refused: booleans (`true` is not a throughput), NaN / Infinity literals, numbers beyond a float
    (1e400, 400-digit integers), ambiguous separators, and anything that is not a number.
    """
    if v is None:
        return None
    if isinstance(v, bool):
        raise InputError(f"{what} is {str(v).lower()}, not a number")
    if isinstance(v, NonFinite):
        raise InputError(f"{what} is {v.literal}; only finite numbers are accepted")
    if isinstance(v, int):
        if abs(v) > 10**300:
            raise InputError(f"{what} is a {len(str(abs(v))):,}-digit number, beyond any plausible figure")
        return float(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise InputError(f"{what} is {v!r} (a number too large to hold, or not a number); only finite numbers are accepted")
        return v
    if isinstance(v, str):
        s = v.strip()
        if s.lower() in _MISSING_WORDS:
            return None
        if s.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise InputError(f"{what} is {shorten(repr(s))}; only finite numbers are accepted")
        if len(s) > 400:
            raise InputError(f"{what} is text of {len(s):,} characters, not a number")
        x = _text_number(s, what)
        if x is None or not math.isfinite(x):
            raise InputError(f"{what} is {shorten(repr(s))}, beyond any plausible figure")
        return x
    raise InputError(f"{what} is a JSON {type(v).__name__}, not a number")


def date_from(v: object, what: str = "the date") -> dt.date | None:
    """vLLM '20250401-153012', ISO dates, or epoch seconds/milliseconds; None when absent or unreadable."""
    if v is None or isinstance(v, bool | NonFinite):
        return None
    if isinstance(v, int | float):
        if not math.isfinite(v) or v <= 0 or v > 1e14:
            return None
        secs = v / 1000.0 if v > 1e11 else float(v)
        try:
            return dt.datetime.fromtimestamp(secs, tz=dt.UTC).date()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(v, str):
        s = v.strip()[:64]
        m = re.match(r"^(\d{4})(\d{2})(\d{2})-\d{6}$", s)
        if m:
            try:
                return dt.date(int(m[1]), int(m[2]), int(m[3]))
            except ValueError:
                return None
        try:
            return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).date()
        except ValueError:
            return None
    return None


def check_date(d: dt.date, where: str, what: str = "the date") -> None:
    """Refuse a date before 2015 or more than a year ahead, naming the bound."""
    latest = dt.date.today() + dt.timedelta(days=FUTURE_DAYS)
    if not EARLIEST_DATE <= d <= latest:
        raise InputError(f"{where}: {what} {d.isoformat()} is outside {EARLIEST_DATE.isoformat()} to "
                         f"{latest.isoformat()} (today + 1 year); pass --as-of with the date it was measured")


def littles_law(req_per_s: float | None, mean_latency_ms: float | None) -> float | None:
    """Mean requests in flight = arrival rate x mean time in the system."""
    if req_per_s and mean_latency_ms and req_per_s > 0 and mean_latency_ms > 0:
        return round(req_per_s * mean_latency_ms / 1000.0, 2)
    return None


def hints(rec: dict, where: str) -> dict[str, object]:
    """Stack, GPU and GPU count where a file states them (e.g. vLLM --metadata key=value)."""
    out: dict[str, object] = {}
    for key in ("stack_id", "stack", "hangover_stack"):
        if isinstance(rec.get(key), str) and rec[key].strip():
            out["stack_id"] = rec[key].strip()
    for key in ("gpu", "gpu_name", "gpu_type"):
        if isinstance(rec.get(key), str) and rec[key].strip():
            out["gpu"] = rec[key].strip()
    for key in ("gpus_per_replica", "tensor_parallel_size", "tp_size", "tp"):
        n = number(rec.get(key), f"{where}: '{key}'")
        if n is not None:
            out["gpus_per_replica"] = n
            break
    model = rec.get("model_id") or rec.get("model")
    if isinstance(model, str):
        out["model"] = shorten(model)
    return out


def to_ms(v: float | None, unit: str) -> float | None:
    """A latency in ns/us/s as milliseconds (ms and unknown units pass through)."""
    if v is None:
        return None
    return {"ns": v / 1e6, "us": v / 1e3, "s": v * 1e3, "sec": v * 1e3}.get(unit.strip().lower(), v)
