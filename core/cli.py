"""`hangover` command line: each command group lives in its own module under core/commands."""

from __future__ import annotations

import argparse
import importlib
import sys

from core.errors import HangoverError

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
    "core.commands.scenario",
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


def main(argv: list[str] | None = None) -> int:
    """Run one command; user errors print one line to stderr and exit 2, never a traceback."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except HangoverError as exc:
        print(f"hangover: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and cut short: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
