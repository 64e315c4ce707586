"""CLI command groups, one module each, registered by core.cli."""
