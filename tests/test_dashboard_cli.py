"""`hangover dashboard`: the Streamlit command line it builds (loopback unless --address says otherwise)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from core.cli import build_parser
from core.commands.dashboard import APP, streamlit_command


def _option(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_dashboard_listens_on_loopback_by_default():
    args = build_parser().parse_args(["dashboard"])
    cmd = streamlit_command(args)
    assert cmd[1:4] == ["-m", "streamlit", "run"]
    assert _option(cmd, "--server.address") == "127.0.0.1"
    assert _option(cmd, "--server.port") == "8501"
    assert "--server.headless" not in cmd


def test_dashboard_address_and_port_are_passed_through():
    args = build_parser().parse_args(["dashboard", "--address", "0.0.0.0", "--port", "9000", "--headless"])
    cmd = streamlit_command(args)
    assert _option(cmd, "--server.address") == "0.0.0.0"
    assert _option(cmd, "--server.port") == "9000"
    assert _option(cmd, "--server.headless") == "true"


def test_streamlit_config_does_not_override_the_address():
    """The command line wins over config.toml in Streamlit, but a fixed address there would mislead readers."""
    config = tomllib.loads((Path(APP).parents[1] / ".streamlit" / "config.toml").read_text())
    assert "address" not in config.get("server", {})
