"""`hangover` command line: each command group lives in its own module under core/commands."""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from pathlib import Path

from core.collector import settle
from core.errorlog import log_error, shorten, unexpected_words
from core.errors import HangoverError

# Longest error a command prints (a 10,000-column file once produced 483 KB of errors).
MAX_MESSAGE = 4000

# One module per command group; each exposes register(subparsers). Later issues append here.
COMMAND_MODULES = [
    "core.commands.db",
    "core.commands.dashboard",
    "core.commands.evaluate",
    "core.commands.bench",
    "core.commands.perf",
    "core.commands.stacks",
    "core.commands.workloads",
    "core.commands.report",
    "core.commands.telemetry",
    "core.commands.scenario",
    "core.commands.simulate",
    "core.commands.showback",
    "core.commands.actuals",
    "core.commands.users",
]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (all command groups)."""
    parser = argparse.ArgumentParser(
        prog="hangover",
        description="GPU Hangover: what each LLM token really costs on your own GPUs, and where each workload should run.",
    )
    parser.add_argument("--db", help="store file (default: $HANGOVER_DB or the user data directory)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _store_path(args: argparse.Namespace | None) -> Path | None:
    """The store the command was pointed at (its folder holds the error log)."""
    db = getattr(args, "db", None) if args is not None else None
    if db:
        return Path(db).expanduser()
    try:
        from core.store.store import default_db_path

        return default_db_path()
    except Exception:  # the log then goes to the temporary folder
        return None


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one command; any error prints one line to stderr (exit 2), never a traceback.

    A user error (HangoverError) is shown as it is. Anything else — a database,
    decoding, overflow or recursion error, running out of memory or disk — is one
    line saying what kind of failure it was and where the log with the details is.
    """
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except HangoverError as exc:
        print(f"hangover: error: {shorten(str(exc), MAX_MESSAGE)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and cut short: not an error
        sys.stderr.close()
        return 0
    except BaseException as exc:  # noqa: BLE001 -- the last line of defence: no traceback reaches a user
        if isinstance(exc, SystemExit | GeneratorExit):
            raise
        words = unexpected_words(exc)
        log = log_error(f"hangover {args.command}: {words}", exc, store_path=_store_path(args))
        where = f"; details in {log}" if log else ""
        print(f"hangover: error: {words}{where}", file=sys.stderr)
        return 2


def run() -> int:
    """The `hangover` process (console script, `python -m core.cli`): main() after the imports, with the collector
    settled (core.collector.settle: the objects the imports made frozen, a larger young generation). Not in
    main(): tests call it many times in one process."""
    gc.disable()  # the imports allocate only what stays
    try:
        parser = build_parser()  # imports every command module
    finally:
        gc.enable()
    settle()
    return main(parser=parser)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
