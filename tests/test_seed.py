"""Seed CSVs: every row sourced and dated; a bad cell stops start-up naming file, row and column."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import pytest

import core.store.seed
from core.errors import InputError
from core.models import Confidence
from core.store import Store
from core.store.seed import SEED_TABLES, load_seed

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

SEED_FILES = [DATA_DIR / f"{t}.csv" for t in SEED_TABLES]


def _rows(path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def _set_cell(path, row: int, column: str, value: str) -> None:
    """Overwrite one cell; `row` counts file lines, the header being line 1."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    rows[row - 2][column] = value
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_every_seed_row_has_source_date_and_confidence(path):
    rows = _rows(path)
    assert rows, f"{path.name} is empty"
    assert {"source", "as_of", "confidence", "note"} <= set(rows[0])
    allowed = {c.value for c in Confidence}
    today = dt.date.today()
    for line, row in enumerate(rows, start=2):
        assert row["source"].strip(), f"{path.name} row {line}: empty source"
        as_of = dt.date.fromisoformat(row["as_of"])  # raises on a missing or malformed date
        assert as_of <= today, f"{path.name} row {line}: as_of {as_of} is in the future"
        assert row["confidence"] in allowed, f"{path.name} row {line}: confidence {row['confidence']!r}"


def test_bundled_seed_validates_row_for_row():
    seeds = load_seed()
    for table in SEED_TABLES:
        assert len(seeds[table]) == len(_rows(DATA_DIR / f"{table}.csv")), table


@pytest.mark.parametrize(
    ("file", "row", "column", "value", "expected"),
    [
        ("gpus.csv", 3, "hbm_gb", "-80", "gpus.csv row 3, column 'hbm_gb': Input should be greater than 0 (got '-80')"),
        ("api_prices.csv", 4, "as_of", "2026-02-30", "api_prices.csv row 4, column 'as_of':"),
        ("node_prices.csv", 2, "pricing_option", "spot", "node_prices.csv row 2, column 'pricing_option':"),
        ("node_prices.csv", 5, "gpu", "H900", "node_prices.csv row 5, column 'gpu': unknown GPU 'H900'"),
        ("benchmarks.csv", 2, "source", "", "benchmarks.csv row 2, column 'source': Field required"),
    ],
)
def test_bad_seed_cell_stops_start_up(data_copy, tmp_path, file, row, column, value, expected):
    _set_cell(data_copy / file, row, column, value)
    with pytest.raises(InputError) as info:
        Store(tmp_path / "bad.duckdb")
    assert str(info.value).startswith(expected)


def test_unknown_seed_column_is_named(data_copy, tmp_path):
    path = data_copy / "gpus.csv"
    path.write_text(path.read_text().replace("tdp_w,", "tdp_watts,", 1))
    with pytest.raises(InputError, match="gpus.csv: unknown column\\(s\\) tdp_watts"):
        Store(tmp_path / "bad.duckdb")


def test_bad_reseed_leaves_the_store_as_it_was(data_copy, tmp_path):
    store = Store(tmp_path / "ok.duckdb")
    before = store.info()["rows"].tolist()
    _set_cell(data_copy / "gpus.csv", 2, "tdp_w", "lots")
    core.store.seed._load.cache_clear()  # the good copy was cached when the store opened
    with pytest.raises(InputError, match="gpus.csv row 2, column 'tdp_w'"):
        store.seed()
    assert store.info()["rows"].tolist() == before
    store.close()
