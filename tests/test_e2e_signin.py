"""Browser end-to-end sign-in (issue 34): OpenID Connect through a local issuer started by the test, and a viewer
behind a trusted-header proxy who cannot reach any write while an editor's write lands in the audit trail."""

from __future__ import annotations

import re
import secrets
import shutil

import pytest

from core import scenarios as S
from core.cli import main
from core.models import Scenario
from core.service import audit_trail
from core.store import Store
from tests.e2e_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO_ROOT,
    VIEWPORT,
    chromium_page,
    free_port,
    header_proxy,
    streamlit_server,
    wait_until_idle,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (Debian's chromium package drives these tests)"),
]
pytest.importorskip("playwright.sync_api", reason="python playwright is not installed (pip install playwright)")


def _sidebar(page) -> str:
    return page.locator('[data-testid="stSidebar"]').inner_text()


def _no_exception(page) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()[:2000]


def _save_scenario(page, url: str, name: str) -> None:
    page.goto(url + "/scenarios")
    wait_until_idle(page)
    _no_exception(page)
    page.locator(".st-key-sc_save_name input").fill(name)
    page.get_by_role("button", name=re.compile("Save scenario")).click()
    wait_until_idle(page)
    _no_exception(page)


def test_sign_in_through_openid_connect_against_a_local_issuer(tmp_path):
    """st.login's whole flow against a real (local) provider: the dashboard asks to sign in and draws nothing
    else; the button goes through the issuer's authorization and token endpoints (client secret, single-use code,
    PKCE, a signed ID token with the nonce) and back; the user is signed in with the role the store gives them,
    and a scenario they save is audited under their e-mail."""
    pytest.importorskip("authlib", reason="Authlib (streamlit[auth]) is not installed")
    from tests.oidc_issuer import Issuer

    db = tmp_path / "oidc.duckdb"
    assert main(["--db", str(db), "users", "add", "alice@bank.example", "--role", "editor"]) == 0
    port = free_port()
    client_secret = secrets.token_hex(16)
    with Issuer("alice@bank.example", "gpu-hangover", client_secret) as issuer:
        site = tmp_path / "site" / ".streamlit"  # Streamlit reads secrets.toml from its working folder
        site.mkdir(parents=True)
        shutil.copy(REPO_ROOT / ".streamlit" / "config.toml", site / "config.toml")
        (site / "secrets.toml").write_text(
            "[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
            f'cookie_secret = "{secrets.token_hex(32)}"\n'
            'client_id = "gpu-hangover"\n'
            f'client_secret = "{client_secret}"\n'
            f'server_metadata_url = "{issuer.url}/.well-known/openid-configuration"\n', encoding="utf-8")
        with streamlit_server(db, env={"HANGOVER_AUTH": "oidc"}, cwd=site.parent, port=port) as url, \
                chromium_page() as page:
            page.goto(url + "/")
            wait_until_idle(page)
            _no_exception(page)
            assert page.get_by_role("button", name="Sign in").is_visible()
            assert page.locator('[data-testid="stMetric"]').count() == 0  # nothing of the store before sign-in
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(re.compile(re.escape(url) + r"/?(\?.*)?$"), timeout=30_000)
            wait_until_idle(page)
            _no_exception(page)
            assert issuer.tokens_issued == 1
            assert "Signed in as alice@bank.example (editor)" in _sidebar(page)
            assert page.get_by_role("button", name="Sign out").is_visible()
            _save_scenario(page, url, "Signed in with OIDC")
    store = Store(db)
    try:
        assert [s.name for s in S.list_scenarios(store)] == ["Signed in with OIDC"]
        trail = audit_trail(store)
        saved = trail[trail["action"] == "save scenario"]
        assert saved["who"].tolist() == ["alice@bank.example"], trail
    finally:
        store.close()


# Buttons that write, by page path: a viewer sees each one disabled (and nothing else that writes enabled).
WRITES = re.compile(r"^(Save|Delete|Rename|Import|Commit|Add|Remove)\b", re.I)
WRITE_PAGES = ("scenarios", "workloads", "telemetry", "performance", "pricing")


def _enabled_writes(page, url: str, path: str) -> list[str]:
    page.goto(f"{url}/{path}")
    wait_until_idle(page)
    _no_exception(page)
    # Every button's label and state in one snapshot of the page: asked one locator at a time, a rerun that
    # re-renders the page between the two questions (a page whose analysis lands after its headline) paired one
    # button's label with another's state (a loaded machine saw a viewer's "Save licence fee" as enabled).
    # (Disabled as Playwright's is_enabled reads it: the element's own disabled, or aria-disabled on it or above.)
    main_area = page.locator('[data-testid="stMain"]')
    snapshot = main_area.evaluate(
        """main => Array.from(main.querySelectorAll('button, [role="button"]')).map(b => [
            b.innerText.trim(), !(b.disabled || b.closest('[aria-disabled="true"]') !== null)])""")
    out = []
    for text, enabled in snapshot:
        label = text.splitlines()[-1].strip() if text else ""
        if WRITES.search(label) and enabled:
            out.append(label)
    # A file uploader is a write path too (an import's first step); one kind of element, nothing to pair.
    for u in main_area.locator('[data-testid="stFileUploaderDropzoneInput"]').all():
        if u.is_enabled():
            out.append("file upload")
    return out


def test_a_viewer_in_a_browser_reaches_no_write_and_an_editors_write_is_audited(tmp_path):
    """Behind a trusted-header proxy (one per user, tests/e2e_support.header_proxy: the header on every request,
    websocket included): a viewer sees every page, but no page offers an enabled button that writes or an enabled
    upload; an editor gets them enabled, saves a scenario, and the audit trail names the editor."""
    from playwright.sync_api import sync_playwright

    db = tmp_path / "header.duckdb"
    assert main(["--db", str(db), "users", "add", "eve@bank.example", "--role", "editor"]) == 0
    store = Store(db)
    try:  # a saved scenario, so the Scenarios page shows rename and delete too
        S.save_scenario(store, "Kept", Scenario(), created_by="setup")
    finally:
        store.close()
    with streamlit_server(db, env={"HANGOVER_AUTH": "header"}) as server, \
            header_proxy(server, "X-Forwarded-Email", "val@bank.example") as viewer_url, \
            header_proxy(server, "X-Forwarded-Email", "eve@bank.example") as editor_url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            def as_user():
                page = browser.new_context(viewport=VIEWPORT).new_page()
                page.set_default_timeout(60_000)
                return page

            url = viewer_url
            viewer = as_user()
            viewer.goto(url + "/")
            wait_until_idle(viewer)
            assert "Signed in as val@bank.example (viewer)" in _sidebar(viewer)
            seen = {path: _enabled_writes(viewer, url, path) for path in WRITE_PAGES}
            assert not any(seen.values()), seen
            assert "Read only: you are signed in as a viewer" in viewer.locator('[data-testid="stMain"]').inner_text()

            url = editor_url
            editor = as_user()
            editor.goto(url + "/")
            wait_until_idle(editor)
            assert "Signed in as eve@bank.example (editor)" in _sidebar(editor)
            assert _enabled_writes(editor, url, "scenarios"), "an editor's Scenarios page offers no write"
            _save_scenario(editor, url, "Saved by an editor")
        finally:
            browser.close()
    store = Store(db)
    try:
        names = sorted(s.name for s in S.list_scenarios(store))
        assert names == ["Kept", "Saved by an editor"]
        trail = audit_trail(store)
        saved = trail[trail["action"] == "save scenario"]
        assert "eve@bank.example" in saved["who"].tolist() and "val@bank.example" not in trail["who"].tolist()
    finally:
        store.close()
