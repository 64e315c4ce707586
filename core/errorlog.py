"""The error log: full details of unexpected errors go to a file next to the store, the user sees one line.

A user reads one line naming what failed and where the details are; whoever
debugs it reads the log (traceback, driver text, time). The log lives in the
folder of the store (the user's data directory by default), is capped at
about 1 MB (the previous log is kept as `.1`), and never holds more than a
truncated copy of any value from a user's file.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import tempfile
import threading
import traceback
from pathlib import Path

LOG_NAME = "hangover-errors.log"
_MAX_BYTES = 1_000_000
_LOCK = threading.Lock()

# Longest echo of a user's value in any message (a 32 MB cell must not become a 32 MB line).
MAX_ECHO = 200


def shorten(text: object, limit: int = MAX_ECHO) -> str:
    """`text` as a string of at most `limit` characters, the cut said with an ellipsis and the full length."""
    s = str(text)
    if len(s) <= limit:
        return s
    return f"{s[:limit]}… ({len(s):,} characters)"


def log_dir(store_path: Path | str | None = None) -> Path:
    """The store's folder (default: where the default store lives)."""
    if store_path is None:
        from core.store.store import default_db_path

        store_path = default_db_path()
    return Path(store_path).expanduser().parent


def log_error(summary: str, exc: BaseException | None = None, *, store_path: Path | str | None = None) -> Path | None:
    """Append one entry (time, summary, traceback) to the log; returns its path, or None if no log can be written."""
    entry = [f"--- {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')} pid {os.getpid()}", summary]
    if exc is not None:
        entry.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
    text = "\n".join(entry) + "\n"
    for folder in (log_dir(store_path), Path(tempfile.gettempdir())):
        path = folder / LOG_NAME
        try:
            with _LOCK:
                folder.mkdir(parents=True, exist_ok=True)
                if path.exists() and path.stat().st_size > _MAX_BYTES:
                    os.replace(path, path.with_name(LOG_NAME + ".1"))
                with open(path, "a", encoding="utf-8", errors="replace") as f:
                    f.write(text)
            return path
        except (OSError, RecursionError, MemoryError):
            continue
    return None


def unexpected_words(exc: BaseException) -> str:
    """What kind of failure an unexpected error is, in words a user can act on (no driver text, no paths)."""
    if isinstance(exc, MemoryError):
        return "ran out of memory"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to read"
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return "the disk is full; nothing more was written"
    if isinstance(exc, OSError):
        return f"a file could not be read or written ({exc.strerror or type(exc).__name__})"
    if isinstance(exc, UnicodeError):
        return "a file is not in the text encoding expected"
    if isinstance(exc, OverflowError):
        return "a number is too large to compute with"
    return f"an unexpected error ({type(exc).__name__})"


def page_error_line(exc: BaseException, page: str = "this page", store_path: Path | str | None = None) -> str:
    """The one line a dashboard page shows for an error, the details logged on the server (never a browser path)."""
    from core.errors import HangoverError

    if isinstance(exc, HangoverError):
        return shorten(str(exc), 2000)
    words = unexpected_words(exc)
    logged = log_error(f"dashboard, {page}: {words}", exc, store_path=store_path)
    where = f" The details are in the server's {LOG_NAME}, next to the store." if logged else ""
    return f"{page[:1].upper()}{page[1:]} could not be shown: {words}.{where}"
