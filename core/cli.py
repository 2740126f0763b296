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

from .. import __version__
from .errors import SessionError
from .gcpause import own_collector

EXIT_OK, EXIT_NOT_FOUND, EXIT_BAD_INPUT, EXIT_CANCELLED = 0, 1, 2, 130

Handler = Callable[[argparse.Namespace], int]


class CliError(SessionError):
    """A user-facing failure with an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


# Which module registers each headless command: `seance ls` imports only cli_catalog (and
# what it needs), not the session reader, the writers or the Trash.  Order = `--help` order.
COMMAND_MODULES = {
    "show": "cli_session",
    "tree": "cli_session",
    "ls": "cli_catalog",
    "index": "cli_catalog",
    "resolve": "cli_actions",
    "continue": "cli_actions",
    "rm": "cli_actions",
    "rename": "cli_actions",
}
_VALUED_OPTIONS = ("--root", "--cwd")  # top-level options that take the next argument


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `seance` parser; given `argv`, only the module of the command it names is imported."""
    parser = argparse.ArgumentParser(
        prog="seance",
        description="Browse, search and resume pi / oh-my-pi coding-agent sessions.",
    )
    parser.add_argument("--version", action="version", version=f"seance {__version__}")
    parser.add_argument("--demo", action="store_true", help="browse a generated demo sessions root")
    parser.add_argument("--root", action="append", metavar="DIR", help="sessions root (repeatable)")
    parser.add_argument("--all", action="store_true", help="start in the all-projects scope")
    parser.add_argument("--cwd", metavar="DIR", help="project directory (default: the current one)")
    parser.add_argument(
        "--json", action="store_true", help="print the chosen session as a JSON object (as `pick --json`)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules(_command_in(argv) if argv is not None else None):
        module.register(commands)
    _register_ui(commands)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """The subcommand `argv` names (the first positional argument), or None."""
    takes_value = False
    for token in argv:
        if takes_value:
            takes_value = False
        elif token == "--":
            return None
        elif token.startswith("-"):
            # argparse accepts unambiguous abbreviations (`--ro DIR`)
            takes_value = (
                "=" not in token and len(token) > 2 and any(option.startswith(token) for option in _VALUED_OPTIONS)
            )
        else:
            return token
    return None


def _command_modules(command: str | None = None) -> list:
    """The headless command groups, each a module with `register(subparsers)`: the one that
    registers `command`, or all of them (for `--help`, the UI, or an unknown command's error)."""
    import importlib

    wanted = COMMAND_MODULES.get(command or "")
    if command == "pick":
        names: list[str] = []
    elif wanted:
        names = [wanted]
    else:
        names = list(dict.fromkeys(COMMAND_MODULES.values()))
    modules = []
    for name in names:
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
    pick.add_argument(
        "--root", action="append", metavar="DIR", default=argparse.SUPPRESS, help="sessions root (repeatable)"
    )
    pick.add_argument("--query", "-q", default="", help="initial query")
    pick.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print a JSON object instead of the path"
    )
    pick.set_defaults(handler=_run_ui)


def _run_ui(args: argparse.Namespace) -> int:
    try:
        from seance.app.cli import run_ui
    except ImportError as error:  # pragma: no cover - broken install
        raise CliError(f"the terminal UI is not available: {error}") from error
    return run_ui(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `seance` console script and `python -m seance`."""
    if argv is None:
        argv = sys.argv[1:]
    own_collector()  # the `seance` command runs this process: it may tune the collector (see gcpause)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    handler: Handler = getattr(args, "handler", _run_ui)
    try:
        return handler(args)
    except CliError as error:
        _say_error(str(error))
        return error.code
    except SessionError as error:
        _say_error(str(error))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as error:
        _say_error(f"{error.strerror or error}: {getattr(error, 'filename', '') or ''}".rstrip(": "))
        return EXIT_BAD_INPUT


def _say_error(message: str) -> None:
    """The one exit of every failure: its message names paths and ids, so it is sanitised here
    (`cli_args.say`) rather than at each raise."""
    from .cli_args import say

    say(f"seance: {message}")
