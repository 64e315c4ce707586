"""Roles and the audit trail (issue 34): viewers write nothing, enforced in the core; every write says who and when.

Local mode (no sign-in) stays as before: every write allowed, recorded as local:<OS user>.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from core import access
from core import scenarios as S
from core.access import AccessDenied, Actor, Role, acting_as
from core.cli import main
from core.errors import InputError
from core.models import NodePrice, Scenario
from core.service import audit_trail
from core.store import Store
from core.store.seed import sample_workloads_path
from core.store.stacks import remove_user_stack
from core.telemetry import import_telemetry
from tests.test_telemetry import nvidia_smi_week, write

VIEWER = Actor("val@bank.example", Role.VIEWER, "test")
EDITOR = Actor("eve@bank.example", Role.EDITOR, "test")
ADMIN = Actor("ada@bank.example", Role.ADMIN, "test")


def _price() -> NodePrice:
    return NodePrice(provider="Bank", instance="own-h100", gpu="H100 SXM", gpus_per_node=8, pricing_option="on_demand",
                     usd_per_node_hour=40.0, region="eu", source="our contract", as_of="2026-11-01")


def _import_inventory(store: Store) -> None:
    from core.inventory import commit_inventory, read_inventory

    commit_inventory(store, read_inventory(sample_workloads_path()).frame, file_name="sample.csv")


def test_local_mode_writes_and_records_the_os_user(store):
    """No sign-in: the save goes through and the audit row names local:<user> with the role 'local'."""
    assert access.current() is None
    S.save_scenario(store, "Plan A", S.scenario_from_inputs({}))
    row = audit_trail(store).iloc[0]
    assert row["who"].startswith("local") and row["role"] == "local"
    assert (row["action"], row["detail"]) == ("save scenario", "Plan A")


@pytest.mark.parametrize("write_as", ["save", "delete", "price", "inventory", "telemetry", "stack"])
def test_a_viewer_cannot_write_and_nothing_changes(store, tmp_path, write_as):
    """Import, save, delete, enter a price, add a stack: each refused in the core naming the role; no row, no audit."""
    S.save_scenario(store, "Keep", S.scenario_from_inputs({}))
    before = len(audit_trail(store))
    writes = {
        "save": lambda: S.save_scenario(store, "New", S.scenario_from_inputs({})),
        "delete": lambda: S.delete_scenario(store, "Keep"),
        "price": lambda: store.add("node_prices", [_price()]),
        "inventory": lambda: _import_inventory(store),
        "telemetry": lambda: import_telemetry(store, write(tmp_path, "g.csv", nvidia_smi_week(gpus=1, every_min=60)),
                                              node="n"),
        "stack": lambda: remove_user_stack(store, "llama70b-fp8"),
    }
    with acting_as(VIEWER), pytest.raises(AccessDenied, match=r"^val@bank.example signed in as viewer: .* needs the "
                                                              r"editor role"):
        writes[write_as]()
    assert [s.name for s in S.list_scenarios(store)] == ["Keep"]
    assert len(audit_trail(store)) == before
    assert (store.table("node_prices")["origin"] == "user").sum() == 0


def test_an_editors_write_is_in_the_audit_trail_with_their_name(store):
    with acting_as(EDITOR):
        S.save_scenario(store, "Eve's plan", S.scenario_from_inputs({}))
        store.add("node_prices", [_price()])
    trail = audit_trail(store)
    assert list(trail["who"][:2]) == ["eve@bank.example"] * 2 and list(trail["role"][:2]) == ["editor"] * 2
    assert list(trail["action"][:2]) == ["enter node prices", "save scenario"]  # newest first
    assert access.current() is None  # acting_as restores local mode


def test_only_an_admin_manages_users(store):
    from core.store.users import put_user

    with acting_as(EDITOR), pytest.raises(AccessDenied, match="users add needs the admin role"):
        put_user(store, "x@bank.example", "editor", "eve")
    with acting_as(ADMIN):
        put_user(store, "x@bank.example", "editor", "ada")
    assert access.role_of(store, "X@Bank.example") == Role.EDITOR
    assert access.role_of(store, "nobody@bank.example") == Role.VIEWER  # not listed: a viewer


def test_users_cli_and_audit_export(tmp_path, capsys):
    db = str(tmp_path / "u.duckdb")
    assert main(["--db", db, "users", "add", "Alice@Bank.example", "--role", "editor"]) == 0
    assert main(["--db", db, "users", "add", "bob", "--role", "admin"]) == 0
    assert main(["--db", db, "users", "list"]) == 0
    out = capsys.readouterr().out
    assert "alice@bank.example is editor" in out and "bob" in out
    assert main(["--db", db, "users", "add", "x", "--role", "owner"]) == 2
    assert "role 'owner': choose viewer, editor or admin" in capsys.readouterr().err
    assert main(["--db", db, "users", "add", "<img src=x>", "--role", "viewer"]) == 2
    assert capsys.readouterr().err.startswith("hangover: error: user name '<img src=x>': letters, digits")
    assert main(["--db", db, "users", "remove", "bob"]) == 0
    assert main(["--db", db, "users", "remove", "bob"]) == 2
    assert "user 'bob' is not in the users table" in capsys.readouterr().err
    out_csv = tmp_path / "audit.csv"
    assert main(["--db", db, "users", "audit", "--out", str(out_csv)]) == 0
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [r["action"] for r in rows[:3]] == ["users remove", "users add", "users add"]
    assert rows[0]["detail"] == "bob" and rows[-1]["action"] == "seed reference data"


def test_a_store_from_before_the_users_table_migrates_and_keeps_its_scenarios(tmp_path):
    """A store at migration 9 (no users, no audit) opens with both tables added and its scenario intact."""
    path = tmp_path / "old.duckdb"
    old = Store(path, migrate_upto=9)
    try:
        old.seed()
        S.save_scenario(old, "Old plan", S.scenario_from_inputs({}))  # no audit table yet: written, not recorded
    finally:
        old.close()
    new = Store(path)
    try:
        assert "m010_users_and_audit" in new.applied_migrations()
        assert [s.name for s in S.list_scenarios(new)] == ["Old plan"]
        assert "save scenario" not in set(audit_trail(new)["action"])  # saved before the trail existed
    finally:
        new.close()


def test_with_sign_in_required_a_write_without_an_actor_is_refused(store, monkeypatch):
    """Fail closed: in a dashboard process with sign-in on, a write from a thread without the run's actor (or any
    path that skipped sign-in) is refused instead of passing as local mode."""
    monkeypatch.setattr(access, "_SIGN_IN_REQUIRED", False)
    access.require_sign_in()
    with pytest.raises(AccessDenied, match=r"^save scenario needs a signed-in editor"):
        S.save_scenario(store, "Sneaky", S.scenario_from_inputs({}))
    with acting_as(EDITOR):
        S.save_scenario(store, "Fine", S.scenario_from_inputs({}))
    assert [s.name for s in S.list_scenarios(store)] == ["Fine"]



def test_the_pages_offer_no_write_to_a_run_without_its_actor_when_sign_in_is_on(monkeypatch):
    """The pages' read-only switch fails closed as core does: with sign-in on, a run with no actor set (a thread
    without the run's context) disables every write control; a viewer is read only, an editor is not; with
    sign-in off (local mode, no actor) nothing is disabled."""
    from dashboard.signin import read_only

    monkeypatch.setattr(access, "_SIGN_IN_REQUIRED", False)
    with acting_as(None):
        assert read_only() is False  # local single-user mode
        access.require_sign_in()
        assert read_only() is True
    with acting_as(VIEWER):
        assert read_only() is True
    with acting_as(EDITOR):
        assert read_only() is False

def test_auth_settings_are_off_unless_set():
    assert access.auth_settings({}) == ("off", "X-Forwarded-Email")
    assert access.auth_settings({"HANGOVER_AUTH": "Header", "HANGOVER_AUTH_HEADER": "X-User"}) == ("header", "X-User")
    with pytest.raises(InputError, match=r"HANGOVER_AUTH='saml': choose off, header or oidc"):
        access.auth_settings({"HANGOVER_AUTH": "saml"})


# -- the dashboard behind a trusted-header proxy -----------------------------------------------

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"


@pytest.fixture
def header_app(app_db, monkeypatch):
    """The app with HANGOVER_AUTH=header; `sign_in_as(name)` makes every request carry X-Forwarded-Email: name."""
    import streamlit
    import streamlit.runtime.context as ctx

    monkeypatch.setenv("HANGOVER_AUTH", "header")
    monkeypatch.setattr(access, "_SIGN_IN_REQUIRED", False)  # the app sets it; restored after the test
    sent: dict[str, str] = {}
    # AppTest has no proxy in front of it: the request headers are the ones this test says were sent.
    monkeypatch.setattr(ctx, "_get_client_context", lambda: SimpleNamespace(headers=list(sent.items())))
    s = Store(app_db)
    s.close()
    assert main(["--db", str(app_db), "users", "add", "eve@bank.example", "--role", "editor"]) == 0
    streamlit.cache_resource.clear()
    streamlit.cache_data.clear()
    yield app_db, sent
    streamlit.cache_resource.clear()
    streamlit.cache_data.clear()


def _save_from_page(sent: dict, name: str | None):
    from streamlit.testing.v1 import AppTest

    sent.clear()
    if name:
        sent["X-Forwarded-Email"] = name
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    if name is None:
        return at
    at.switch_page("screens/scenarios.py").run()
    at.text_input(key="sc_save_name").set_value("From the page")  # inside a form: sent with the submit
    save = next(b for b in at.button if b.label == "Save scenario")
    if not save.disabled:  # AppTest, like a browser, cannot press a disabled button
        save.click().run()
    return at


@pytest.mark.slow
def test_trusted_header_viewer_is_refused_and_editor_is_audited(header_app, capsys):
    db, sent = header_app
    at = _save_from_page(sent, None)
    assert any("Sign-in required: the request has no X-Forwarded-Email header" in e.value for e in at.error)
    assert not at.get("plotly_chart")  # no page drawn

    at = _save_from_page(sent, "val@bank.example")  # not listed: a viewer
    assert not at.exception
    # The page disables Save for a viewer and says why (a write that reached core anyway is refused there:
    # test_a_viewer_cannot_write_and_nothing_changes).
    assert next(b for b in at.button if b.label == "Save scenario").disabled
    assert any("Read only: you are signed in as a viewer" in c.value for c in at.caption)
    assert any("Signed in as val@bank.example (viewer)" in c.value.replace("\\", "") for c in at.sidebar.caption)

    at = _save_from_page(sent, "eve@bank.example")
    assert not at.exception and not [e.value for e in at.error]
    at.switch_page("screens/export.py").run()
    trail = next(d.value for d in at.dataframe if "who" in d.value.columns)
    assert trail.iloc[0]["who"] == "eve@bank.example" and trail.iloc[0]["action"] == "save scenario"
    store = Store(db)
    try:
        assert [s.name for s in S.list_scenarios(store)] == ["From the page"]
    finally:
        store.close()


# The controls that write, by page (their keys, or their labels inside a form): each one a viewer sees is disabled.
WRITE_CONTROLS = {
    "screens/scenarios.py": {"Save scenario", "sc_rename", "sc_delete"},
    "screens/telemetry.py": {"tel_import"},
    "screens/performance.py": {"perf_import", "perf_cfg_add", "perf_remove"},
    "screens/pricing.py": {"price_save", "Save licence fee"},
    "screens/workloads.py": {"wl_commit", "wl_save_edits"},
}


@pytest.mark.slow
def test_a_viewer_sees_every_write_control_disabled_and_an_editor_does_not(header_app):
    """Signed in as a viewer, no page offers an enabled control that writes (imports, saves, renames, deletes,
    prices); each page with one says why. An editor gets the same controls enabled (where their inputs are
    given), so the test would fail if a page disabled them for everyone."""
    from streamlit.testing.v1 import AppTest

    db, sent = header_app
    store = Store(db)
    try:  # a saved scenario, so the page shows rename and delete too
        S.save_scenario(store, "Kept", Scenario(), created_by="setup")
    finally:
        store.close()

    def controls(name: str) -> dict[str, bool]:
        sent.clear()
        sent["X-Forwarded-Email"] = name
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.run()
        seen: dict[str, bool] = {}
        for page, wanted in WRITE_CONTROLS.items():
            at.switch_page(page).run()
            assert not at.exception, (page, at.exception)
            for b in at.button:
                ident = b.key if b.key in wanted else b.label
                if ident in wanted:
                    seen[f"{page}:{ident}"] = bool(b.disabled)
            if wanted & {k.split(":", 1)[1] for k in seen if k.startswith(page)}:
                note = any("Read only: you are signed in as a viewer" in c.value for c in at.caption)
                assert note == (name == "val@bank.example"), page
        return seen

    viewer = controls("val@bank.example")
    # Shown without any input first: scenarios' save, rename and delete (a scenario is saved), telemetry's and
    # benchmarks' imports (commit needs an uploaded file).
    assert {"screens/scenarios.py:Save scenario", "screens/scenarios.py:sc_rename", "screens/scenarios.py:sc_delete",
            "screens/telemetry.py:tel_import",
            "screens/performance.py:perf_import"} <= set(viewer)
    assert all(viewer.values()), {k for k, v in viewer.items() if not v}
    editor = controls("eve@bank.example")
    assert set(editor) == set(viewer)
    assert not editor["screens/scenarios.py:Save scenario"]
