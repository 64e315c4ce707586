"""Input bounds, defaults and help texts read from the pydantic field definitions (core/models.py), one source for widgets and CLI flags.

A field such as `peak_factor: Annotated[float, Field(ge=1.0, le=24.0)] =
Field(default=3.0, description="...")` already says everything an input
needs; `field_bounds(Workload, "peak_factor")` hands it to a sidebar widget,
a table column or an argparse flag, so a bound changed in the model changes
everywhere at once.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class FieldBounds:
    """One model field as an input: its limits (None = open), whether each is exclusive, default and help."""

    min: float | None
    max: float | None
    min_exclusive: bool
    max_exclusive: bool
    default: object
    help: str

    def contains(self, value: float) -> bool:
        """True when the model would accept the value as far as its bounds go."""
        if self.min is not None and (value < self.min or (self.min_exclusive and value == self.min)):
            return False
        return not (self.max is not None and (value > self.max or (self.max_exclusive and value == self.max)))

    def range_text(self, scale: float = 1.0, unit: str = "") -> str:
        """'1 to 24', 'more than 0, at most 168', 'at least 0' (values × scale, e.g. 100 for percent)."""
        from core.format import integer, plain

        def word(x: float) -> str:
            return integer(x) if float(x).is_integer() else plain(x)

        lo = None if self.min is None else word(self.min * scale) + unit
        hi = None if self.max is None else word(self.max * scale) + unit
        if lo is not None and hi is not None and not (self.min_exclusive or self.max_exclusive):
            return f"{lo} to {hi}"
        parts = []
        if lo is not None:
            parts.append(f"{'more than' if self.min_exclusive else 'at least'} {lo}")
        if hi is not None:
            parts.append(f"{'less than' if self.max_exclusive else 'at most'} {hi}")
        return ", ".join(parts)


def _constraints(info: FieldInfo) -> list[object]:
    """Every annotated_types constraint on a field, including those inside Annotated[...] | None."""
    found = list(info.metadata)

    def walk(tp) -> None:
        if typing.get_origin(tp) is typing.Annotated:
            for meta in typing.get_args(tp)[1:]:
                found.extend(meta.metadata if isinstance(meta, FieldInfo) else [meta])
            walk(typing.get_args(tp)[0])
        else:
            for arg in typing.get_args(tp):
                walk(arg)

    walk(info.annotation)
    return found


def _num(bound: object) -> float:
    """A constraint's bound as a float (annotated_types types it as a comparison protocol, not a number)."""
    return float(typing.cast(typing.SupportsFloat, bound))


def field_bounds(model: type[BaseModel], name: str) -> FieldBounds:
    """(min, max, exclusiveness, default, help) of one field of a pydantic model; KeyError for an unknown field."""
    info = model.model_fields[name]
    lo = hi = None
    lo_x = hi_x = False
    for c in _constraints(info):
        if isinstance(c, at.Ge):
            lo, lo_x = _num(c.ge), False
        elif isinstance(c, at.Gt):
            lo, lo_x = _num(c.gt), True
        elif isinstance(c, at.Le):
            hi, hi_x = _num(c.le), False
        elif isinstance(c, at.Lt):
            hi, hi_x = _num(c.lt), True
        elif isinstance(c, at.Interval):
            if c.ge is not None:
                lo, lo_x = _num(c.ge), False
            if c.gt is not None:
                lo, lo_x = _num(c.gt), True
            if c.le is not None:
                hi, hi_x = _num(c.le), False
            if c.lt is not None:
                hi, hi_x = _num(c.lt), True
    default = None if info.default is PydanticUndefined else info.default
    default = getattr(default, "value", default)  # an enum default as the text a flag or widget takes
    return FieldBounds(lo, hi, lo_x, hi_x, default, (info.description or "").strip())


def input_limits(model: type[BaseModel], name: str, *, scale: float = 1.0, whole: bool = False,
                 help: bool = True) -> dict[str, object]:
    """min_value / max_value (and help) for a number widget or table column, in the widget's unit (× scale).

    An exclusive bound becomes the widget's inclusive limit (a widget cannot
    say "more than 0"); validation still refuses the bound itself, with the
    model's message. `whole` gives ints, for widgets that hold whole numbers.
    """
    b = field_bounds(model, name)
    cast = int if whole else float
    out: dict[str, object] = {}
    if b.min is not None:
        out["min_value"] = cast(b.min * scale)
    if b.max is not None:
        out["max_value"] = cast(b.max * scale)
    if help and b.help:
        out["help"] = b.help
    return out
