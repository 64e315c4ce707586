"""Shared pytest fixtures: an isolated store path per test, a throwaway store, a copy of data/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

import core.store.seed
from core.catalog import Catalog
from core.store import Store

# Every property test draws the same examples on every run: CI decides whether a submission lands, so a
# failure must be reproducible, not a new random draw (a random draw found the fallback case in
# tests/test_engine.py::test_a_tighter_target_makes_a_cheaper_fallback_cheaper_known_case and then spent five
# minutes shrinking it). Exploring new examples is what bench/bench_plan_properties.py is for.
settings.register_profile("hangover", derandomize=True)
settings.load_profile("hangover")

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT / "data"


@pytest.fixture(autouse=True)
def _isolated_store_path(tmp_path_factory, monkeypatch):
    """Point HANGOVER_DB (and XDG_DATA_HOME) at a tmp folder so no test touches the user's home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HANGOVER_DB", str(home / "hangover.duckdb"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg"))
    monkeypatch.delenv("HANGOVER_DATA_DIR", raising=False)
    monkeypatch.setenv("HANGOVER_PEER_CACHE", str(home / "peer-cache.json"))  # AIConfigurator's answers
    monkeypatch.setenv("HANGOVER_FIT_CACHE", str(home / "fits"))  # calibration fits kept across runs
    # The dashboard's error boundary turns a crash into one line for users; in tests it re-raises, so
    # AppTest's `at.exception` still catches a broken page.
    monkeypatch.setenv("HANGOVER_RAISE_ERRORS", "1")


@pytest.fixture
def app_db(monkeypatch, tmp_path):
    """A fresh store path for the dashboard (HANGOVER_DB), with the process-wide Streamlit caches cleared around
    the test (open_store() and the shared evaluations are cached per process, not per path)."""
    import streamlit as st

    path = tmp_path / "pages.duckdb"
    monkeypatch.setenv("HANGOVER_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield path
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def store(tmp_path):
    """A migrated store seeded from the bundled data/, closed after the test."""
    s = Store(tmp_path / "t.duckdb")
    yield s
    s.close()


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A writable copy of data/, used as HANGOVER_DATA_DIR; edit its CSVs to test bad seed data.

    The seed loader caches per folder (core.store.seed._load is lru_cached), so the
    cache is cleared before and after.
    """
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    monkeypatch.setenv("HANGOVER_DATA_DIR", str(target))
    core.store.seed._load.cache_clear()
    yield target
    core.store.seed._load.cache_clear()


@pytest.fixture(scope="session")
def seed_catalog() -> Catalog:
    """The bundled reference data (data/*.csv) as a Catalog, without a store; read once per test session."""
    s = core.store.seed.load_seed()
    return Catalog(gpus=s["gpus"], stacks=s["serving_stacks"], apis=s["api_prices"], node_prices=s["node_prices"],
                   owned_hardware=s["owned_hardware"], benchmarks=s["benchmarks"])


@pytest.fixture(scope="session")
def catalog(seed_catalog) -> Catalog:
    """The seed catalog under the name the engine and plan tests use."""
    return seed_catalog


@pytest.fixture(scope="session")
def bank():
    """The bundled sample inventory (the demo bank's seven workloads), read once; tests copy it to change it."""
    return pd.read_csv(core.store.seed.sample_workloads_path())
