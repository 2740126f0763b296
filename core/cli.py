"""`seance` command line: parse arguments, dispatch, map errors to exit codes.

Exit codes: 0 ok, 1 nothing found, 2 bad input, 130 cancelled.  No traceback ever reaches
the user: expected failures are `SessionError`s with a one-line message.

Headless commands live in `core` and never import Textual, so `seance ls` starts fast;
the UI commands (`pick`, browsing, `--demo`, `tree` without `--json`) import `seance.app`
only when they run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .session import SessionError

EXIT_OK, EXIT_NOT_FOUND, EXIT_BAD_INPUT, EXIT_CANCELLED = 0, 1, 2, 130

Handler = Callable[[argparse.Namespace], int]


class CliError(SessionError):
    """A user-facing failure with an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seance",
        description="Browse, search and resume pi / oh-my-pi coding-agent sessions.",
    )
    parser.add_argument("--demo", action="store_true", help="browse a generated demo sessions root")
    parser.add_argument("--root", action="append", metavar="DIR", help="sessions root (repeatable)")
    parser.add_argument("--all", action="store_true", help="start in the all-projects scope")
    parser.add_argument("--cwd", metavar="DIR", help="project directory (default: the current one)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(commands)
    _register_ui(commands)
    return parser


def _command_modules() -> list:
    """The headless command groups, each a module with `register(subparsers)`."""
    import importlib

    modules = []
    for name in ("cli_session", "cli_catalog", "cli_actions"):
        try:
            modules.append(importlib.import_module(f"{__package__}.{name}"))
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.{name}":
                raise
    return modules


def _register_ui(commands: argparse._SubParsersAction) -> None:
    pick = commands.add_parser("pick", help="pick a session (fzf-like: path on stdout, exit code)")
    # SUPPRESS: `seance --all pick` and `seance pick --all` mean the same; the subcommand's
    # defaults must not overwrite flags given before it.
    pick.add_argument("--all", action="store_true", default=argparse.SUPPRESS, help="start in the all-projects scope")
    pick.add_argument("--cwd", metavar="DIR", default=argparse.SUPPRESS, help="project directory (default: here)")
    pick.add_argument("--root", action="append", metavar="DIR", default=argparse.SUPPRESS,
                      help="sessions root (repeatable)")
    pick.add_argument("--query", "-q", default="", help="initial query")
    pick.add_argument("--json", action="store_true", help="print a JSON object instead of the path")
    pick.set_defaults(handler=_run_ui)


def _run_ui(args: argparse.Namespace) -> int:
    try:
        from seance.app.cli import run_ui
    except ImportError as error:  # pragma: no cover - broken install
        raise CliError(f"the terminal UI is not available: {error}") from error
    return run_ui(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `seance` console script and `python -m seance`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = getattr(args, "handler", _run_ui)
    try:
        return handler(args)
    except CliError as error:
        print(f"seance: {error}", file=sys.stderr)
        return error.code
    except SessionError as error:
        print(f"seance: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as error:
        print(f"seance: {error.strerror or error}: {getattr(error, 'filename', '') or ''}".rstrip(": "),
              file=sys.stderr)
        return EXIT_BAD_INPUT
