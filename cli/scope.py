"""Which sessions a command looks at: the scope flags, and SESSION arguments.

The scope flags are declared here once (`scope_options`), for the top level and for every
subcommand, and read here once (`Scope.of`), so `--root`, `--all` and `--cwd` mean the same
everywhere, before or after the subcommand:

    seance --root R show 0a1b        seance show 0a1b --root R

Every command that takes a SESSION (`show`, `tree`, `rm`, `rename`) resolves it with
`session_path`, and a resume key (`resolve`, and SESSION given as an id prefix) with
`find_session`: one rule, `seance.core.resume.resolve`'s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CliError, ExitCode
from .output import say

if TYPE_CHECKING:
    import argparse

    from seance.core.catalog import Catalog
    from seance.core.resume import AmbiguousKey, Resolution

ROOT_HELP = "sessions root (repeatable; default: pi's, oh-my-pi's and the Python port's)"
ALL_HELP = "every project, not only the current one"
CWD_HELP = "project directory (default: the current one)"


def scope_options(
    parser: argparse.ArgumentParser,
    *,
    cwd: bool = True,
    all_projects: bool = False,
    exclusive: bool = False,
    top: bool = False,
) -> None:
    """Declare `--all` and `--cwd` (if asked) and `--root` on `parser`: the one declaration of them.

    `top`: the `seance` parser itself, whose defaults are the defaults.  On a subcommand they
    are SUPPRESSed: its defaults must not overwrite `seance --cwd X show ...`.  `exclusive`:
    `--all` and `--cwd` refuse each other (`ls`, where both would pick the listed projects)."""
    import argparse  # (here: `cli.main.quick_ls_args` reads `seance ls` without it)

    default: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    group = parser.add_mutually_exclusive_group() if exclusive else parser
    if all_projects:
        group.add_argument("--all", action="store_true", help=ALL_HELP, **default)
    if cwd:
        group.add_argument("--cwd", metavar="DIR", help=CWD_HELP, **default)
    parser.add_argument("--root", action="append", metavar="DIR", help=ROOT_HELP, **default)


@dataclass(frozen=True)
class Scope:
    """The scope flags of one command line, read."""

    roots: list[Path] | None  # the `--root` directories, or None for the default roots
    cwd: str  # the project directory: `--cwd`, else the working directory (absolute)
    all_projects: bool  # `--all`

    @classmethod
    def of(cls, args: argparse.Namespace) -> Scope:
        given_roots = getattr(args, "root", None)
        given_cwd = getattr(args, "cwd", None)
        if "" in (given_roots or []) or given_cwd == "":  # `--root "$DIR"` with DIR unset: not "."
            option = "--cwd" if given_cwd == "" else "--root"
            raise CliError(f"{option}: an empty path (give a directory, or leave the option out)")
        return cls(
            roots=[Path(root).expanduser() for root in given_roots] if given_roots else None,
            cwd=os.path.abspath(os.path.expanduser(given_cwd)) if given_cwd else os.getcwd(),
            all_projects=bool(getattr(args, "all", False)),
        )

    @property
    def project(self) -> str | None:
        """The project to list: None with `--all` (every project), else `cwd`."""
        return None if self.all_projects else self.cwd


def given_path(argument: str) -> Path | None:
    """SESSION as a path: the file it names when one is there (absolute), else None — a key,
    which a bare word is (`docs`, even beside a `docs/` folder), and a bare file name
    (`2026-…_id.jsonl`, no directory) not in the working directory (README: "the whole id or
    file name").  Raises `CliError(NOT_FOUND)` for a missing path with a directory in it."""
    path = Path(argument).expanduser()
    with_directory = "/" in argument or os.sep in argument
    if not with_directory and not argument.endswith(".jsonl"):  # (`discovery.SESSION_SUFFIX`)
        return None  # a bare word is a key (an id, a name), even beside a file or folder of that name
    try:
        os.lstat(path)
        return Path(os.path.abspath(path))
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError:  # there, but not to be looked at (a symlink loop, a directory without x): the reader says why
        if with_directory:
            return Path(os.path.abspath(path))
    except ValueError:  # (a NUL byte: no file can have that name)
        pass
    if with_directory:
        raise CliError(f"{argument}: no such session file", ExitCode.NOT_FOUND)
    return None


def session_path(argument: str, args: argparse.Namespace) -> Path:
    """SESSION as a path (which may be a broken file: `rm --force` must reach it) or else as an
    id prefix resolved under `--root` from `--cwd` (`find_session`).

    Raises `CliError(NOT_FOUND)` for a missing path or an unknown prefix."""
    path = given_path(argument)
    if path is not None:
        return path
    from seance.core.catalog import Catalog  # here: `seance show FILE` never opens the catalog

    scope = Scope.of(args)
    catalog = Catalog(scope.roots, watched=True)
    try:
        return find_session(argument, scope.cwd, catalog).path
    finally:
        catalog.close()


def find_session(key: str, cwd: str, catalog: Catalog) -> Resolution:
    """The session a SESSION argument names (`seance.core.resume`: an id or file name, whole
    or a unique prefix, else an exact name, else a unique name prefix; the current project
    first).  `CliError(NOT_FOUND)` if none; `CliError(BAD_INPUT)`, after listing the
    candidates on stderr, if it names several: a command never picks one for the user."""
    from seance.core.catalog import in_project
    from seance.core.gcpause import gc_paused
    from seance.core.resume import AmbiguousKey, may_name, resolve, resolve_name  # `seance ls` never loads these

    try:
        # from the index: only the sessions whose path or stored title may match are decoded
        # (a superset: the tiers decide, on exact summaries; a name may be set anywhere in a file)
        with gc_paused():  # every row's tuples survive: nothing for the collector to do
            everything = catalog.exact_where(may_name(key))
        found = resolve(key, in_project(everything, cwd), everything, cwd)
        if found is None:
            found = resolve_name(key, in_project(everything, cwd), everything, cwd)
    except AmbiguousKey as ambiguous:
        say_candidates(ambiguous)
        raise CliError(str(ambiguous), ExitCode.BAD_INPUT) from None
    if found is None:
        raise CliError(f'session "{key}" not found (no id, file name or name matches)', ExitCode.NOT_FOUND)
    return found


def path_resolution(path: Path, cwd: str) -> Resolution:
    """The session file at `path` (`given_path`) as `find_session` would name it, read whole
    here (it may lie outside every root).  `CliError(BAD_INPUT)` for a file that is no session."""
    from seance.core.metadata import NotSessionFile, scan_file, summary_from_scan
    from seance.core.resume import Resolution, same_project

    try:
        summary = summary_from_scan(str(path), scan_file(path))
    except NotSessionFile as error:
        raise CliError(f"{path}: not a session ({error})", ExitCode.BAD_INPUT) from None
    return Resolution(summary, other_project=not same_project(summary.cwd, cwd))


def say_candidates(ambiguous: AmbiguousKey, shown: int = 20) -> None:
    """The sessions an ambiguous key matches, newest first, one per line on stderr."""
    from seance.core.text import relative_age
    from seance.core.timefmt import now_ms

    now = now_ms()
    for summary in ambiguous.candidates[:shown]:
        say(f"  {summary.id}  {relative_age(summary.modified_ms, now):>4}  {summary.cwd}  {summary.title[:60]}")
    if len(ambiguous.candidates) > shown:
        say(f"  … and {len(ambiguous.candidates) - shown} more")


__all__ = ["Scope", "find_session", "given_path", "path_resolution", "scope_options", "session_path"]
