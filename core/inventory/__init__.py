"""Inventory: the team's workload files, validated, and their stored versions.

- `columns`: the contract (columns, bounds read from core.models.Workload, help texts, limits).
- `numbers`: numbers as Excel writes them in every locale; ambiguous ones are never guessed.
- `files`: reading CSV (encodings, delimiters, line ends, quotes) and XLSX (sheet and header found).
- `validate`: whole-column checks; every bad cell becomes one error naming its row and column.
- `report`: InventoryReport, the typed frame and the bounded error table.
- `template`: the CSV/XLSX template with one example per task class.
- `versions`: commit, list, load, diff and restore inventory versions (SQL in core.store.inventories).
"""

from core.inventory.columns import (
    COLUMN_HELP,
    COLUMNS,
    ENUM_VALUES,
    EXAMPLE_ROWS,
    MAX_CELL_CHARS,
    MAX_LISTED_ERRORS,
    MAX_ROWS,
    NUMBER_RULES,
    NUMERIC_COLUMNS,
    REQUIRED_COLUMNS,
    SHARE_COLUMNS,
)
from core.inventory.files import DECIMALS, Progress, read_inventory
from core.inventory.report import InventoryReport, frame_from_arrow
from core.inventory.template import template_bytes, write_template
from core.inventory.validate import validate_frame
from core.inventory.versions import (
    CommitResult,
    checksum,
    commit_inventory,
    diff_versions,
    latest_inventory,
    latest_size,
    list_versions,
    load_version,
    restore_version,
    version_page,
)

__all__ = [
    "COLUMNS", "COLUMN_HELP", "DECIMALS", "ENUM_VALUES", "EXAMPLE_ROWS", "MAX_CELL_CHARS", "MAX_LISTED_ERRORS",
    "MAX_ROWS", "NUMBER_RULES", "NUMERIC_COLUMNS", "REQUIRED_COLUMNS", "SHARE_COLUMNS",
    "CommitResult", "InventoryReport", "Progress", "checksum", "commit_inventory", "diff_versions",
    "frame_from_arrow", "latest_inventory", "latest_size", "list_versions", "load_version", "read_inventory",
    "restore_version", "template_bytes", "validate_frame", "version_page", "write_template",
]
