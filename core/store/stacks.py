"""Serving stacks the user added (origin 'user'): ids, insert (checked in the same transaction), list, remove."""

from __future__ import annotations

import pandas as pd

from core.errors import InputError
from core.models import ServingStack


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
