"""`hangover dashboard`: start the Streamlit app on the store."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `dashboard` command."""
    p = sub.add_parser("dashboard", help="start the dashboard in your browser")
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    p.add_argument(
        "--address", default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only). Use 0.0.0.0 only behind a reverse "
        "proxy, with --auth so users sign in (README: sharing the dashboard)",
    )
    p.add_argument("--auth", choices=("off", "header", "oidc"), default=None,
                   help="sign-in: off (default: local single-user mode, every write allowed), header (the user "
                        "named by a header your SSO proxy sets; see --auth-header) or oidc (Streamlit's st.login, "
                        "configured in .streamlit/secrets.toml). Sets HANGOVER_AUTH")
    p.add_argument("--auth-header", default=None,
                   help="the header naming the signed-in user with --auth header (default X-Forwarded-Email). "
                        "Only safe when the proxy strips it from clients' requests and nothing else reaches the port")
    p.add_argument("--headless", action="store_true", help="do not open a browser window")
    p.set_defaults(func=cmd_dashboard)


def streamlit_command(args: argparse.Namespace) -> list[str]:
    """The `streamlit run` command line for these options (loopback unless --address says otherwise)."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(args.port),
           "--server.address", str(args.address)]
    if args.headless:
        cmd += ["--server.headless", "true"]
    return cmd


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Exec `streamlit run dashboard/app.py`, passing the store path through HANGOVER_DB."""
    from core.store import Store, default_db_path

    db = Path(args.db or default_db_path())
    Store(db)  # create and seed now, so errors show here rather than in the browser
    env = dict(os.environ, HANGOVER_DB=str(db.resolve()))
    if args.auth:
        env["HANGOVER_AUTH"] = args.auth
    if args.auth_header:
        env["HANGOVER_AUTH_HEADER"] = args.auth_header
    os.chdir(APP.parents[1])  # Streamlit reads .streamlit/config.toml (the theme) from the working folder
    cmd = streamlit_command(args)
    os.execve(sys.executable, cmd, env)
    return 0  # pragma: no cover
