"""`seance` command line: parse arguments, dispatch, map errors to exit codes.

Exit codes (`ExitCode`): 0 ok, 1 nothing found, 2 bad input, 130 cancelled.  No traceback
ever reaches the user: expected failures are `SessionError`s with a one-line message.

Commands are registered lazily: `seance ls` imports only `cli.catalog` (and what it needs),
never Textual; the UI commands (`pick`, browsing, `--demo`, `tree` on a terminal) import
`seance.app` only when they run.  A plain `seance ls` (`--all`, `--json`, `--root DIR`,
`--query Q` after it, nothing else) is read without argparse at all (`quick_ls_args`).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn, cast

from seance import __version__
from seance.core.childmodes import CHILD_MODES  # (not core.listing: every command builds this parser)
from seance.core.errors import SessionError
from seance.core.gcpause import own_collector, pause_to_the_end

from .errors import CliError, ExitCode
from .output import say

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    Handler = Callable[[argparse.Namespace], int]

# Which module registers each command: `seance ls` imports only cli.catalog (and what it
# needs), not the session reader, the writers, the Trash or the UI.  Order = `--help` order.
COMMAND_MODULES = {
    "show": "session",
    "tree": "session",
    "export": "export",
    "ls": "catalog",
    "index": "catalog",
    "resolve": "actions",
    "continue": "actions",
    "rm": "actions",
    "rename": "actions",
    "pin": "marks",
    "unpin": "marks",
    "tag": "marks",
    "marks": "marks",
    "clean": "clean",
    "pick": "ui",
    "stats": "stats",
}
_VALUED_OPTIONS = ("--root", "--cwd")  # top-level options that take the next argument


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `seance` parser; given `argv`, only the module of the command it names is imported."""
    from .scope import scope_options

    parser = _parser_class()(
        prog="seance",
        description="Browse, search and resume pi / oh-my-pi coding-agent sessions.",
    )
    parser.add_argument("--version", action="version", version=f"seance {__version__}")
    parser.add_argument("--demo", action="store_true", help="browse a generated demo sessions root")
    scope_options(parser, all_projects=True, top=True)
    parser.add_argument(
        "--json", action="store_true", help="print the chosen session as a JSON object (as `pick --json`)"
    )
    parser.add_argument(
        "--children", choices=CHILD_MODES, default=None, help="child sessions: hidden, threaded or flat (Alt+C)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules(_command_in(argv) if argv is not None else None):
        module.register(commands)
    return parser


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser (its subcommands' too), its help as wide as the terminal without
    `shutil`: argparse imports it to size a formatter for every argument added (~3 ms).
    Made when a parser is built: `quick_ls_args` never imports argparse."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def _get_formatter(self) -> argparse.HelpFormatter:
            return self.formatter_class(prog=self.prog, width=_columns() - 2)  # type: ignore[call-arg]

        def error(self, message: str) -> NoReturn:
            """argparse's error, which echoes arguments as typed (`unrecognized arguments: ...`,
            often a name or id a script passes on), with their controls as escapes."""
            from seance.core.text import visible

            super().error(visible(message))

    return _Parser


def _columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS, else stdout's terminal, else 80."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


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


def _command_modules(command: str | None = None) -> list[ModuleType]:
    """The command groups, each a module with `register(subparsers)`: the one that registers
    `command`, or all of them (for `--help`, the browser, or an unknown command's error)."""
    wanted = COMMAND_MODULES.get(command or "")
    names = [wanted] if wanted else list(dict.fromkeys(COMMAND_MODULES.values()))
    return [_module(name) for name in names]


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, except that an unknown option after a command is that
    command's error (`seance ls --bogus` prints `ls`'s usage, not the top level's)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        _command_parser(parser, getattr(args, "command", None)).error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of `command` (the top-level one when there is none)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


# `seance ls` as argparse reads it when only these follow it (tests/test_cli_parser.py
# compares the two): the top level's defaults, then `ls`'s.
_LS_DEFAULTS = {
    "demo": False,
    "all": False,
    "cwd": None,
    "root": None,
    "json": False,
    "children": None,
    "command": "ls",
    "query": None,
    "sort": None,
    "quick": False,
    "skipped": False,
}
_LS_FLAGS = {"--all": "all", "--json": "json"}
_LS_VALUED = {"--root": "root", "--query": "query", "-q": "query"}


def quick_ls_args(argv: list[str]) -> argparse.Namespace | None:
    """`parse_args(build_parser(argv), argv)` for `seance ls` followed only by `--all`,
    `--json`, `--root DIR` and `--query Q` (`-q Q`, `--opt=value`), each value a non-empty
    argument that starts with no `-`: what argparse reads alike, read without importing or
    building it (a fifth of a warm `ls --query`'s own time).  None for anything else (an
    abbreviation, `--help`, another option, an odd value): argparse reads it, and says what
    is wrong."""
    if not argv or argv[0] != "ls":
        return None
    args: dict[str, Any] = dict(_LS_DEFAULTS)
    tokens = iter(argv[1:])
    for token in tokens:
        if token in _LS_FLAGS:
            args[_LS_FLAGS[token]] = True
            continue
        option, equals, value = token.partition("=")
        name = _LS_VALUED.get(option)
        if name is None or (equals and option == "-q"):
            return None
        if not equals:
            value = next(tokens, "")
        if not value or value.startswith("-"):
            return None
        args[name] = [*(args[name] or []), value] if name == "root" else value
    from .catalog import run_ls

    # (a namespace as argparse's: the handlers read attributes, as of argparse's)
    return cast("argparse.Namespace", SimpleNamespace(**args, handler=run_ls))


def _run_browser(args: argparse.Namespace) -> int:
    """`seance` without a command: the browser (or `--demo`'s)."""
    return _module("ui").run_ui(args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `seance` console script and `python -m seance` (`argv` None: this
    process is the command's own, and ends as soon as a command has answered: `exit_now`)."""
    own_process = argv is None
    if argv is None:
        argv = sys.argv[1:]
    own_collector()  # the `seance` command runs this process: it may tune the collector (see gcpause)
    if own_process and _command_in(argv) == "ls":
        pause_to_the_end()  # `ls` pauses it for all its listing: from its imports to the process's end
    args = quick_ls_args(argv) or parse_args(build_parser(argv), argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        return _run(_run_browser, args)
    code = _run(handler, args)
    if own_process:
        exit_now(code)
    return code


def _run(handler: Handler, args: argparse.Namespace) -> int:
    """`handler(args)`, every failure mapped to its exit code (and its one line on stderr)."""
    try:
        return handler(args)
    except CliError as error:
        _say_error(str(error))
        return error.code
    except SessionError as error:
        _say_error(str(error))
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt as interrupt:
        for note in getattr(interrupt, "__notes__", ()):  # (what an interrupted write left where: say it)
            say(note)
        return ExitCode.CANCELLED
    except BrokenPipeError:
        return ExitCode.OK
    except OSError as error:  # a rename's or link's names both: the second is often the folder that refused
        names = " -> ".join(str(name) for name in (error.filename, error.filename2) if name)
        _say_error(f"{error.strerror or error}: {names}".rstrip(": "))
        return ExitCode.BAD_INPUT


def exit_now(code: int) -> None:
    """End the process with `code` once a command has answered, without the interpreter's
    teardown: every module and object freed one by one, and collections of what the command
    built (10-15 ms of a 0.15 s warm `ls`, more than its own answer's lookup).  Only when
    nothing is left to finish: no other thread runs, no profiler or tracer (`python -m
    cProfile`, a debugger, coverage) waits for the end to write what it saw, stdout and
    stderr are flushed, and the `atexit` callbacks run first, as a normal exit runs them.
    Otherwise it returns and the interpreter exits as usual (a failed flush is reported
    there, as before)."""
    import atexit
    import os
    import threading

    if threading.active_count() > 1 or not isinstance(code, int) or sys.gettrace() or sys.getprofile():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    os._exit(code)


def _say_error(message: str) -> None:
    """The one exit of every failure: its message names paths and ids, so it is sanitised here
    (`output.say`) rather than at each raise."""
    say(f"seance: {message}")
