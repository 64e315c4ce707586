"""AppTest of the Performance page's second opinion: one line where AIConfigurator is absent, the table where asked."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core.performance import peer
from tests.test_peer import FakePeer

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"


@pytest.fixture
def perf_page(monkeypatch, tmp_path):
    """A function that opens the Performance page on a fresh store."""
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    load = peer._load  # the real one: a test may replace it
    load.cache_clear()
    peer.clear_cache()

    def open_page() -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.run()
        at.switch_page("screens/performance.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    yield open_page
    st.cache_resource.clear()
    st.cache_data.clear()
    load.cache_clear()
    peer.clear_cache()


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_page_says_in_one_line_that_the_peer_is_not_installed(perf_page, monkeypatch):
    monkeypatch.setitem(sys.modules, "aiconfigurator", None)
    monkeypatch.setitem(sys.modules, "aiconfigurator.cli.api", None)
    at = perf_page()
    lines = [c.value for c in at.caption if "Second opinion" in c.value]
    assert len(lines) == 1 and "AIConfigurator is not installed" in lines[0]
    assert not [t for t in at.toggle if t.key == "perf_peer"]  # nothing to ask for
    at.selectbox(key="perf_stack").set_value("mercury-class").run()
    assert "does not cover diffusion decoding" in captions(at)  # coverage is said even where it is absent


def test_page_shows_the_peer_beside_the_roofline_when_asked(perf_page, monkeypatch):
    fake = FakePeer()
    monkeypatch.setattr(peer, "_load", lambda: (fake, ""))
    at = perf_page()
    assert fake.calls == []  # never asked on load
    at.selectbox(key="perf_stack").set_value("llama70b-fp8").run()
    at.toggle(key="perf_peer").set_value(True).run()
    assert not at.exception
    assert "Second opinion (estimate): aiconfigurator 9.9.9" in captions(at)
    (table,) = [d.value for d in at.dataframe if "per_stream_ratio" in d.value.columns]
    assert list(table["concurrency"])[:3] == [1.0, 2.0, 4.0]
    row = table.iloc[0]  # 1 stream: the fake's TPOT 5.1 ms -> 196.1 tok/s
    assert row["per_stream_peer"] == pytest.approx(1000 / 5.1)
    assert row["per_stream_ratio"] == pytest.approx(row["per_stream_roofline"] / row["per_stream_peer"])


def test_page_says_where_the_peers_database_is_known_to_err(perf_page, monkeypatch):
    """Qwen3-30B-A3B FP8 runs on vLLM in the bundled data: the peer's figures come with its database's caveat."""
    fake = FakePeer()
    monkeypatch.setattr(peer, "_load", lambda: (fake, ""))
    at = perf_page()
    at.selectbox(key="perf_stack").set_value("qwen3-30b-a3b-fp8").run()
    at.toggle(key="perf_peer").set_value(True).run()
    assert not at.exception
    assert "block-scaled FP8 dense GEMMs" in captions(at) and "likely slow" in captions(at)
