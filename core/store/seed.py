"""Reads and validates the bundled seed CSVs in `data/` (every row sourced and dated)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ValidationError

from core.errors import InputError, describe_validation_error
from core.models import (
    ApiPrice,
    Benchmark,
    GpuSpec,
    NodePrice,
    OwnedHardware,
    ServingStack,
    Sourced,
)

SEED_TABLES: dict[str, type[Sourced]] = {
    "gpus": GpuSpec,
    "node_prices": NodePrice,
    "owned_hardware": OwnedHardware,
    "api_prices": ApiPrice,
    "serving_stacks": ServingStack,
    "benchmarks": Benchmark,
}


def data_dir() -> Path:
    """`HANGOVER_DATA_DIR`, else the repository's `data/` folder."""
    env = os.environ.get("HANGOVER_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def sample_workloads_path() -> Path:
    """The bundled sample inventory (a bank)."""
    return data_dir() / "workloads_sample.csv"


def read_seed_file(path: Path, model: type[BaseModel]) -> list[BaseModel]:
    """Validate every row of one seed CSV; the error names file, row (as in the file) and column."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"seed file {path} is missing") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"seed file {path} cannot be read: {exc}") from None
    unknown = [c for c in df.columns if c not in model.model_fields]
    if unknown:
        raise InputError(f"{path.name}: unknown column(s) {', '.join(unknown)}; allowed: {', '.join(model.model_fields)}")
    rows = []
    for i, rec in enumerate(df.to_dict("records")):
        clean = {k: v for k, v in rec.items() if v.strip() != ""}
        try:
            rows.append(model.model_validate(clean))
        except ValidationError as exc:
            # +2: the header is line 1 and pandas counts from 0.
            raise InputError(describe_validation_error(exc, where=f"{path.name} row {i + 2}")) from None
    return rows


@lru_cache(maxsize=4)
def _load(directory: str) -> dict[str, tuple[BaseModel, ...]]:
    base = Path(directory)
    return {t: tuple(read_seed_file(base / f"{t}.csv", m)) for t, m in SEED_TABLES.items()}


def load_seed() -> dict[str, tuple[BaseModel, ...]]:
    """All seed tables, validated (cached per data folder)."""
    seeds = _load(str(data_dir()))
    _check_references(seeds)
    return seeds


def _check_references(seeds: dict[str, tuple[Any, ...]]) -> None:
    # Any: rows of several record types, each read here by a field it has (name, gpu, stack_id).
    gpus = {g.name for g in seeds["gpus"]}
    stacks = {s.stack_id for s in seeds["serving_stacks"]}
    for table in ("node_prices", "owned_hardware", "benchmarks"):
        for i, row in enumerate(seeds[table]):
            if row.gpu not in gpus:
                raise InputError(f"{table}.csv row {i + 2}, column 'gpu': unknown GPU {row.gpu!r}; known: {', '.join(sorted(gpus))}")
    for i, row in enumerate(seeds["benchmarks"]):
        if row.stack_id not in stacks:
            raise InputError(f"benchmarks.csv row {i + 2}, column 'stack_id': unknown stack {row.stack_id!r}")
