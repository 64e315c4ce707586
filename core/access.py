"""Who is writing: roles (viewer, editor, admin) from the store's users table, the check every write passes.

Without sign-in configured nobody is signed in (`current()` is None): the
local single-user mode, where every write is allowed and recorded as the
operating-system user. A signed-in dashboard session sets its actor for the
run (`acting_as`); `Store.write` then refuses a viewer's write before it
starts and records who wrote and when in the audit table, in the same
transaction as the write.
"""

from __future__ import annotations

import contextlib
import contextvars
import getpass
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

from core.errors import HangoverError, InputError


class Role(StrEnum):
    """What a signed-in user may do."""

    VIEWER = "viewer"  # reads every page and export; writes nothing
    EDITOR = "editor"  # imports, saves, deletes, enters prices
    ADMIN = "admin"  # an editor who may also manage users


class AccessDenied(HangoverError):
    """A write the signed-in user's role does not allow (a one-line error on the CLI and on a page)."""



@dataclass(frozen=True)
class Actor:
    """A signed-in user: the name the sign-in gave, the role the users table gives, how they signed in."""

    name: str
    role: Role
    via: str  # "trusted header X-Forwarded-Email", "OpenID Connect"


_ACTOR: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("hangover_actor", default=None)
# Set once by a dashboard process with sign-in on: a write with no actor (a thread that did not inherit the run's
# context, a run that skipped sign-in) is then refused rather than taken for local mode. The CLI never sets it.
_SIGN_IN_REQUIRED = False


def require_sign_in() -> None:
    """From now on in this process, a write without a signed-in actor is refused (fail closed)."""
    global _SIGN_IN_REQUIRED
    _SIGN_IN_REQUIRED = True


def sign_in_required() -> bool:
    """Whether this process requires sign-in (require_sign_in was called): a run without an actor is then not
    local mode but a run whose user is unknown."""
    return _SIGN_IN_REQUIRED


def current() -> Actor | None:
    """The signed-in user of this thread's run, or None in local single-user mode."""
    return _ACTOR.get()


@contextlib.contextmanager
def acting_as(actor: Actor | None) -> Iterator[None]:
    """Run a block as `actor` (None: local mode); the previous actor is restored after it."""
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def set_actor(actor: Actor | None) -> None:
    """Make `actor` this thread's user until changed (a dashboard run sets it first thing)."""
    _ACTOR.set(actor)


def who() -> str:
    """The name an audit row records: the signed-in user, else `local:<OS user>`."""
    actor = current()
    if actor is not None:
        return actor.name
    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (containers)
        return "local"


def check_write(action: str) -> None:
    """AccessDenied when the signed-in user may not do `action`; nothing in local mode."""
    actor = current()
    if actor is None:
        if _SIGN_IN_REQUIRED:
            raise AccessDenied(f"{action} needs a signed-in editor: this dashboard requires sign-in")
        return
    admin_only = action.startswith("users")
    if actor.role == Role.VIEWER or (admin_only and actor.role != Role.ADMIN):
        needed = "admin" if admin_only else "editor"
        raise AccessDenied(f"{actor.name} signed in as {actor.role.value}: {action} needs the {needed} role "
                           f"(an admin grants it with `hangover users add {actor.name} --role {needed}`)")


# -- the users table -----------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}$")


def check_user_name(name: object) -> str:
    """A user name as sign-in gives it (an e-mail address or a login), or InputError naming the field."""
    text = str(name if name is not None else "").strip()
    if not _NAME.match(text):
        raise InputError(f"user name {text[:60]!r}: letters, digits and . _ @ + - only, starting with a letter or "
                         "digit, at most 200 characters (an e-mail address or a login)")
    return text.lower()


def check_role(role: object) -> Role:
    """A role by name, or InputError naming the field and the choices."""
    try:
        return Role(str(role).strip().lower())
    except ValueError:
        raise InputError(f"role {str(role)[:40]!r}: choose viewer, editor or admin") from None


def role_of(store, name: str) -> Role:
    """The user's role from the users table; a user not in it is a viewer (reads, never writes)."""
    from core.store.users import find_user

    found = find_user(store, check_user_name(name))
    return Role(found) if found else Role.VIEWER


AUTH_MODES = ("off", "header", "oidc")
DEFAULT_HEADER = "X-Forwarded-Email"


def auth_settings(env: dict[str, str]) -> tuple[str, str]:
    """(mode, header) from HANGOVER_AUTH and HANGOVER_AUTH_HEADER; off unless set; InputError naming a bad mode."""
    mode = (env.get("HANGOVER_AUTH") or "off").strip().lower()
    if mode not in AUTH_MODES:
        raise InputError(f"HANGOVER_AUTH={mode[:40]!r}: choose off, header or oidc")
    return mode, (env.get("HANGOVER_AUTH_HEADER") or DEFAULT_HEADER).strip()


def signed_in(store, raw_name: object, via: str) -> Actor:
    """The Actor for a name sign-in gave: its role from the users table (viewer when not listed)."""
    name = check_user_name(raw_name)
    return Actor(name, role_of(store, name), via)
