"""Serving stacks the user added (origin 'user'): ids, insert (checked in the same transaction), list, remove."""

from __future__ import annotations

import datetime as dt
import math

import pandas as pd

from core.errors import InputError
from core.models import Confidence, ServingStack, Weights

# A fee above this per GPU-month is a typo (an 8-GPU node rents for about $24,000 a month).
MAX_LICENCE_USD_PER_GPU_MONTH = 1_000_000.0


def stack_ids(store) -> set[str]:
    """Every stack id in the store, bundled or the user's."""
    return set(store.frame("SELECT DISTINCT stack_id FROM serving_stacks")["stack_id"])


def insert_user_stack(store, stack: ServingStack) -> None:
    """Store one user stack; refused if the id appeared meanwhile (checked inside the transaction)."""
    from core.store import store as store_module

    def work(cur) -> None:
        n = cur.execute("SELECT count(*) FROM serving_stacks WHERE stack_id = ?", [stack.stack_id]).fetchall()[0][0]
        if n:
            raise InputError(f"stack id {stack.stack_id!r} is already in the store; choose another")
        store_module.insert_rows(cur, "serving_stacks", [stack], origin="user")

    store.write(work)


def stack_origins(store) -> pd.DataFrame:
    """stack_id, origin and created_at of the latest row per stack id."""
    return store.frame(
        "SELECT stack_id, arg_max(origin, row_id) AS origin, max(created_at) AS created_at "
        "FROM serving_stacks GROUP BY stack_id ORDER BY stack_id"
    )


def remove_user_stack(store, stack_id: str) -> int:
    """Delete the user's rows of one stack; a bundled stack or an unknown id is one InputError."""

    def work(cur) -> int:
        rows = cur.execute("SELECT origin, count(*) FROM serving_stacks WHERE stack_id = ? GROUP BY origin",
                           [stack_id]).fetchall()
        by_origin = dict(rows)
        if not by_origin:
            raise InputError(f"no stack {stack_id!r} in the store (hangover stacks list shows them)")
        if not by_origin.get("user"):
            raise InputError(f"{stack_id!r} is a bundled stack (data/serving_stacks.csv); only your own stacks can be removed")
        cur.execute("DELETE FROM serving_stacks WHERE stack_id = ? AND origin = 'user'", [stack_id])
        return int(by_origin["user"])

    return store.write(work)


def set_licence_fee(store, stack_id: str, usd_per_gpu_month: float, *, source: str,
                    as_of: dt.date | None = None) -> ServingStack:
    """Enter the licence fee of a licensed stack as the user's own dated row (the latest row per stack wins).

    The fee is per GPU per month; NaN, infinite, negative or absurd values (over $1,000,000 per GPU-month,
    far above any node's price) are refused with one line, and nothing is written.
    """
    fee = float(usd_per_gpu_month)
    if not math.isfinite(fee) or fee < 0 or fee > MAX_LICENCE_USD_PER_GPU_MONTH:
        raise InputError("licence fee must be a number from 0 to 1,000,000 $ per GPU-month "
                         f"(got {usd_per_gpu_month!r})")
    if not source or not source.strip():
        raise InputError("say where the licence fee comes from (--source, e.g. 'vendor quote 2026-11')")
    stacks = {s.stack_id: s for s in store.serving_stacks()}
    if stack_id not in stacks:
        raise InputError(f"no stack {stack_id!r} in the store (hangover stacks list shows them)")
    current = stacks[stack_id]
    if current.weights is Weights.API_ONLY:
        raise InputError(f"{stack_id!r} is api_only: its weights cannot be hosted, so no licence fee applies")
    day = as_of or dt.date.today()
    if day < current.as_of:
        raise InputError(f"the fee's date {day} is older than the stack's current row ({current.as_of}); "
                         "give today's date or a later one")
    row = current.model_copy(update={
        "weights": Weights.LICENSED, "licence_usd_per_gpu_month": fee, "as_of": day, "source": source.strip(),
        "confidence": Confidence.USER,
        "note": f"licence fee entered by you ({source.strip()}); other figures from: {current.source}"})
    row = ServingStack.model_validate(row.model_dump())  # validated again, as every stored row is
    store.add("serving_stacks", [row], origin="user")
    return row
