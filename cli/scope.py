"""What the headless commands share: the scope flags, SESSION arguments and the output exits.

Every line the CLI writes leaves through one of `say` (stderr), `put_line`, `put_path` and
`write_json` / `write_json_bytes` (stdout): ids, names, paths and tool arguments are session
text, and a terminal must print them, never obey them (`seance.core.text`'s sanitisers).

Every command that takes a SESSION (`show`, `tree`, `rm`, `rename`) resolves it here, so
`--root` and `--cwd` mean the same everywhere, before or after the subcommand:

    seance --root R show 0a1b        seance show 0a1b --root R
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .text import json_safe, shell_path, visible


def scope_options(parser: argparse.ArgumentParser) -> None:
    """`--cwd` and `--root` on a subcommand, as copies of the top-level flags."""
    # SUPPRESS: a subcommand default must not overwrite `seance --cwd X show ...`.
    parser.add_argument(
        "--cwd", metavar="DIR", default=argparse.SUPPRESS, help="project directory (default: the current one)"
    )
    parser.add_argument(
        "--root", action="append", metavar="DIR", default=argparse.SUPPRESS, help="sessions root (repeatable)"
    )


def roots(args: argparse.Namespace) -> list[Path] | None:
    """The `--root` directories, or None for the default roots."""
    given = getattr(args, "root", None)
    return [Path(root).expanduser() for root in given] if given else None


def cwd(args: argparse.Namespace) -> str:
    """The project directory: `--cwd`, else the working directory."""
    given = getattr(args, "cwd", None)
    return os.path.abspath(os.path.expanduser(given)) if given else os.getcwd()


def looks_like_path(argument: str) -> bool:
    return "/" in argument or os.sep in argument or argument.endswith(".jsonl")


def session_path(argument: str, args: argparse.Namespace) -> Path:
    """SESSION as a path (which may be a broken file: `rm --force` must reach it) or else as an
    id prefix resolved under `--root` from `--cwd` (`seance.core.resume.resolve`'s rule).

    Raises `CliError(EXIT_NOT_FOUND)` for a missing path or an unknown prefix."""
    from .cli import EXIT_NOT_FOUND, CliError

    path = Path(argument).expanduser()
    if os.path.lexists(path):
        return Path(os.path.abspath(path))
    if looks_like_path(argument):
        raise CliError(f"{argument}: no such session file", EXIT_NOT_FOUND)
    from .cli_catalog import resolve_session_arg

    return resolve_session_arg(argument, cwd(args), roots=roots(args))


def say(message: str) -> None:
    """A message on stderr, on one line: each control in it (a path's, an id's) as an escape."""
    print(visible(message), file=sys.stderr)


def put_line(text: str) -> None:
    """A line of plain output on stdout, each control in it shown as an escape."""
    sys.stdout.write(visible(text) + "\n")


def put_path(path: object) -> None:
    """A path on stdout, alone on its line: as is, or `$'...'`-quoted if it holds a control."""
    sys.stdout.write(shell_path(path) + "\n")


def write_json_bytes(data: bytes) -> None:
    """JSON on stdout, with what JSON leaves raw but a terminal obeys (C1, bidi) escaped."""
    sys.stdout.buffer.write(json_safe(data) + b"\n")
    sys.stdout.flush()


def write_json(payload: Any) -> None:
    """Indented JSON on stdout (the `--json` of show, tree, resolve and continue)."""
    import orjson  # here: a warm `seance ls --json` never parses or encodes JSON itself

    write_json_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))


__all__ = [
    "cwd",
    "looks_like_path",
    "put_line",
    "put_path",
    "roots",
    "say",
    "scope_options",
    "session_path",
    "write_json",
    "write_json_bytes",
]
