"""Store: the one DuckDB file and the only SQL in the product.

- `store`: the connection, a cursor per unit of work, typed reads of the reference tables.
- `migrations`: ordered, idempotent schema changes recorded in `_migrations`.
- `seed`: the bundled `data/*.csv`, validated row by row.
"""

from core.store.store import TABLE_MODELS, Store, default_db_path, insert_rows, open_store

__all__ = ["TABLE_MODELS", "Store", "default_db_path", "insert_rows", "open_store"]
