"""What the headless commands share: the scope flags, SESSION arguments and JSON output.

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

import orjson


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


def write_json(payload: Any) -> None:
    """Indented JSON on stdout (the `--json` of show, tree, resolve and continue)."""
    sys.stdout.buffer.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


__all__ = ["cwd", "looks_like_path", "roots", "scope_options", "session_path", "write_json"]
