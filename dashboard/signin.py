"""Sign-in for a shared dashboard: a trusted header from the company's SSO proxy, or OpenID Connect (st.login).

Off by default (HANGOVER_AUTH unset): local single-user mode, exactly as
without this module. The role comes from the store's users table
(core.access); the write checks live in core, so a viewer is refused there
whatever the page shows.
"""

import os

import streamlit as st

from core import access
from dashboard import state
from dashboard.format import md


def sign_in() -> None:
    """Set this run's actor from the configured sign-in, or stop the page with how to sign in."""
    mode, header = access.auth_settings(dict(os.environ))
    if mode == "off":
        access.set_actor(None)
        return
    access.require_sign_in()  # a write that somehow runs without this run's actor is refused, not taken as local
    access.set_actor(None)  # nothing of a previous run's user carries over while this one is resolved
    if mode == "header":
        raw = st.context.headers.get(header)
        if not raw:
            st.error(md(f"Sign-in required: the request has no {header} header. Open the dashboard through your "
                        "company's sign-in proxy."))
            st.stop()
        via = f"trusted header {header}"
    else:
        if not st.user.is_logged_in:
            st.title("GPU Hangover")
            st.button("Sign in", on_click=st.login, type="primary")
            st.stop()
        raw, via = st.user.get("email") or st.user.get("name"), "OpenID Connect"
    actor = access.signed_in(state.store(), raw, via)
    access.set_actor(actor)
    st.sidebar.caption(md(f"Signed in as {actor.name} ({actor.role.value})")
                       + (" · read only" if actor.role == access.Role.VIEWER else ""))
    if mode == "oidc":
        st.sidebar.button("Sign out", on_click=st.logout, key="auth_logout")


def read_only() -> bool:
    """True when this run's signed-in user is a viewer: the pages disable every control that writes (core refuses
    the write anyway; a disabled button is the honest answer before the click). Fails closed like core: with
    sign-in on, a run whose actor is not known (none set in this thread's context) offers no write either."""
    actor = access.current()
    if actor is None:
        return access.sign_in_required()
    return actor.role == access.Role.VIEWER


READ_ONLY_HELP = "Read only: you are signed in as a viewer (an admin grants the editor role)."


def read_only_note() -> None:
    """One caption, where a page's write controls are, saying why they are disabled for this user."""
    if read_only():
        st.caption(f":material/lock: {READ_ONLY_HELP}")
