"""Browser test plumbing: a headless Streamlit server on a free port and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1440, "height": 900}


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it), from this pytest-xdist worker's own share.

    The suite runs on several xdist workers at once. Between the pick and the
    server binding the port (seconds), another worker could pick the same port,
    and its health check could then be answered by this worker's server. So
    worker k of n keeps only ports with (port // 2) % n == k (not port % n:
    Linux hands bind() odd ports only, keeping even ones for connect()).
    """
    n = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw0", "gw1", ...; unset when not under xdist
    k = int(worker[2:]) if worker[:2] == "gw" and worker[2:].isdigit() else 0
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if (port // 2) % n == k:
            return port
    raise RuntimeError(f"no free port in xdist worker {worker}'s share after 1000 tries")


def wait_for_health(url: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    """Poll /_stcore/health until it answers "ok"; fail early (with the server's output) if the server died."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"streamlit exited with {proc.returncode} before it was healthy:\n{out[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200 and r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"streamlit at {url} was not healthy after {timeout_s:.0f} s")


@contextlib.contextmanager
def streamlit_server(db_path: Path, *, app: str = "dashboard/app.py", env: dict[str, str] | None = None,
                     cwd: Path | None = None, port: int | None = None) -> Iterator[str]:
    """Run `python -m streamlit run <app>` headless on a free port with HANGOVER_DB=db_path; yield its base URL.

    env: more environment (HANGOVER_AUTH, ...); cwd: the folder Streamlit reads .streamlit/ (config, secrets)
    from (default the checkout); port: a port picked beforehand (a redirect URI names it).
    The server is killed (its whole process group) when the block ends, even on failure.
    """
    port = port or free_port()
    env = {**os.environ, "HANGOVER_DB": str(db_path), "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    cmd = [sys.executable, "-m", "streamlit", "run", str(REPO_ROOT / app), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    proc = subprocess.Popen(cmd, cwd=cwd or REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=5)
        if proc.stdout:
            proc.stdout.close()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes from src to dst until either side closes."""
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    for s in (src, dst):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


def _forward_requests(client: socket.socket, upstream: socket.socket, header: bytes, value: bytes) -> None:
    """Client to server: each request's head with `header: value` put in (a copy the client sent taken out), its
    Content-Length body as is; after a WebSocket upgrade, the raw stream."""
    buf = b""
    with contextlib.suppress(OSError):
        while True:
            while b"\r\n\r\n" not in buf:
                data = client.recv(65536)
                if not data:
                    raise OSError("client closed")
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = [x for x in head.split(b"\r\n") if not x.lower().startswith(header.lower() + b":")]
            upstream.sendall(b"\r\n".join([lines[0], header + b": " + value, *lines[1:]]) + b"\r\n\r\n")
            fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(b":") for x in lines[1:])}
            if fields.get(b"upgrade", b"").lower() == b"websocket":
                upstream.sendall(buf)
                _pipe(client, upstream)
                return
            need = int(fields.get(b"content-length", b"0") or 0)
            while len(buf) < need:
                data = client.recv(65536)
                if not data:
                    raise OSError("client closed")
                buf += data
            upstream.sendall(buf[:need])
            buf = buf[need:]
    for s in (client, upstream):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def header_proxy(upstream_url: str, header: str, value: str) -> Iterator[str]:
    """A sign-in proxy in front of the server at upstream_url: every request, the WebSocket upgrade included, reaches
    the server with `header: value` (what a company's proxy adds after its own sign-in; a copy sent by the browser
    is dropped). Yields the proxy's base URL. A browser's own extra headers are not enough: whether Chromium sends
    them on a WebSocket upgrade depends on its version (150 does not)."""
    host, port = upstream_url.removeprefix("http://").split(":")
    listener = socket.create_server(("127.0.0.1", free_port()))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection((host, int(port)))
            threading.Thread(target=_forward_requests, args=(client, upstream, header.encode(), value.encode()),
                             daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


@contextlib.contextmanager
def chromium_page() -> Iterator[object]:
    """A Playwright page in headless Debian Chromium at 1440 x 900 (never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
            page = context.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def wait_until_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the app is connected and its script has stopped running (as streamlit's e2e conftest does).

    The app root carries data-test-script-state ("initial", "running",
    "notRunning", ...). A short wait first lets a just-triggered rerun start,
    so a click is not mistaken for an idle app.
    """
    page.wait_for_timeout(250)
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms,
                           state="attached")
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms,
                           state="attached")
    page.wait_for_timeout(150)


def screenshot_dir(default: Path) -> Path:
    """$HANGOVER_SCREENSHOTS if set, else `default`; created."""
    d = Path(os.environ.get("HANGOVER_SCREENSHOTS") or default)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _content_height(page) -> int:
    return int(page.evaluate(
        "() => { const m = document.querySelector('[data-testid=stMain]');"
        " const c = m && m.firstElementChild;"
        " return Math.max(m ? m.scrollHeight : 0, c ? c.scrollHeight : 0, document.body.scrollHeight); }"))


def full_screenshot(page, path: Path, *, width: int = VIEWPORT["width"]) -> Path:
    """Screenshot the whole page at `width` px: Streamlit scrolls inside its main block, so grow the viewport until it all fits.

    Tables and charts draw after the script stops (canvas grids, Plotly) and
    may grow the page, so the height is measured again until it settles.
    """
    height = VIEWPORT["height"]
    page.set_viewport_size({"width": width, "height": height})
    for _ in range(5):
        page.wait_for_timeout(800)
        need = max(VIEWPORT["height"], _content_height(page) + 40)
        if need <= height:
            break
        height = need
        page.set_viewport_size({"width": width, "height": height})
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(VIEWPORT)
    return path


# The widths a page is reviewed at (issue 14): a common laptop and a common desktop.
SCREENSHOT_WIDTHS = (1280, 1440)


def screenshots_wanted() -> Path | None:
    """$HANGOVER_SCREENSHOTS as a created folder, or None: the suite takes no screenshots unless asked (time)."""
    raw = os.environ.get("HANGOVER_SCREENSHOTS")
    return screenshot_dir(Path(raw)) if raw else None


def screenshot_widths(page, folder: Path | None, name: str) -> list[Path]:
    """<name>-1280.png and <name>-1440.png of the whole page in `folder`; nothing when folder is None."""
    if folder is None:
        return []
    return [full_screenshot(page, folder / f"{name}-{w}.png", width=w) for w in SCREENSHOT_WIDTHS]
