"""User-facing errors: one clear message naming what was wrong and where."""

from __future__ import annotations

from pydantic import ValidationError


class HangoverError(Exception):
    """An error the user can fix; its message is shown as is, never as a traceback."""


class StoreError(HangoverError):
    """The store cannot be opened, migrated or written."""


class InputError(HangoverError):
    """A file, row or setting the user gave is not valid."""


class NoNodePrice(InputError):
    """The scenario's GPU has no node price at its purchase option (the options it has: `available`), so each
    front end can name its own way to give one."""

    def __init__(self, message: str, gpu: str, option: str, available: tuple[str, ...]):
        super().__init__(message)
        self.gpu, self.option, self.available = gpu, option, available


def describe_validation_error(err: ValidationError, where: str = "") -> str:
    """Turn a pydantic error into lines a finance reader can act on.

    Each line names the field, what was wrong and (via pydantic's message) what
    is allowed, e.g. ``data/gpus.csv row 4, column 'hbm_gb': '-3' — Input
    should be greater than 0``.
    """
    lines = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "__root__")
        value = e.get("input")
        shown = "" if isinstance(value, dict) or value is None else f" (got {value!r})"
        msg = e.get("msg", "invalid").removeprefix("Value error, ")
        if loc:
            prefix = f"{where}, " if where else ""
            lines.append(f"{prefix}column '{loc}': {msg}{shown}")
        else:
            # A rule across fields (e.g. "exactly one of ..."): no column to name.
            lines.append(f"{where}: {msg}" if where else msg)
    return "\n".join(lines)
