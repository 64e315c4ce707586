"""Inventory: the team's workload files, validated, and their stored versions.

- `reader`: CSV/XLSX reading, whole-column validation, templates.
- `versions`: commit, list, load, diff and restore inventory versions.
"""

from core.inventory.reader import (
    COLUMN_HELP,
    COLUMNS,
    ENUM_VALUES,
    EXAMPLE_ROWS,
    NUMERIC_COLUMNS,
    REQUIRED_COLUMNS,
    InventoryReport,
    frame_from_arrow,
    read_inventory,
    template_bytes,
    validate_frame,
    write_template,
)
from core.inventory.versions import (
    CommitResult,
    checksum,
    commit_inventory,
    diff_versions,
    latest_inventory,
    list_versions,
    load_version,
    restore_version,
)

__all__ = [
    "COLUMNS", "COLUMN_HELP", "ENUM_VALUES", "EXAMPLE_ROWS", "NUMERIC_COLUMNS", "REQUIRED_COLUMNS",
    "CommitResult", "InventoryReport", "checksum", "commit_inventory", "diff_versions", "frame_from_arrow",
    "latest_inventory", "list_versions", "load_version", "read_inventory", "restore_version",
    "template_bytes", "validate_frame", "write_template",
]
