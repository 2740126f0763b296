"""`seance pin`, `unpin`, `tag` and `marks export|import`: the user's pins and tags.

    seance pin SESSION... [--remove]        pin (pinned sessions come first in every sort)
    seance unpin SESSION...                 the same as `pin --remove`
    seance tag SESSION [+TAG|TAG|-TAG]...   add / remove tags; prints the tags now, one a line
                                            (options such as --root go before SESSION)
    seance marks export [-o FILE]           every pin and tag as JSON (stdout, or FILE atomically)
    seance marks import FILE [--replace]    merge a marks JSON (`-`: stdin), or replace them all

The marks live in the user data dir (`core.marks`; `$SEANCE_DATA_DIR` overrides), keyed by
session id; no session file is ever written.  A bad tag or a bad import file is one line
on stderr and exit 2, with nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seance.core.marks import MAX_MARKS_BYTES, NO_MARK, MarkError, Marks, MarkStore, parse_tag_edits
from seance.core.model import SessionSummary
from seance.core.text import display_text

from .errors import CliError, ExitCode
from .output import put_line, put_path, say
from .scope import scope_options, session_path

if TYPE_CHECKING:
    import argparse


def register(commands: argparse._SubParsersAction) -> None:
    import argparse  # (here: `seance ls` reads the marks, and is read without argparse)

    pin = commands.add_parser("pin", help="pin sessions: they come first in every sort (--remove unpins)")
    pin.add_argument("sessions", metavar="SESSION", nargs="+", help="session file path or id prefix")
    pin.add_argument("--remove", action="store_true", help="unpin instead")
    scope_options(pin)
    pin.set_defaults(handler=run_pin, pinned=True)

    unpin = commands.add_parser("unpin", help="unpin sessions (as `pin --remove`)")
    unpin.add_argument("sessions", metavar="SESSION", nargs="+", help="session file path or id prefix")
    scope_options(unpin)
    unpin.set_defaults(handler=run_pin, pinned=False, remove=True)

    tag = commands.add_parser("tag", help="add (+TAG or TAG) and remove (-TAG) a session's tags; prints its tags")
    tag.add_argument("session", metavar="SESSION", help="session file path or id prefix")
    # REMAINDER: `-old` after SESSION is a tag to remove, not an option (options go before SESSION)
    tag.add_argument(
        "edits", metavar="[+|-]TAG", nargs=argparse.REMAINDER, help="+work adds, -old removes; none: print the tags"
    )
    scope_options(tag)
    tag.set_defaults(handler=run_tag)

    marks = commands.add_parser("marks", help="export or import every pin and tag as JSON")
    actions = marks.add_subparsers(dest="marks_action", metavar="ACTION")
    export = actions.add_parser("export", help="print the marks as JSON (or write them to FILE)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    export.set_defaults(handler=run_export)
    load = actions.add_parser("import", help="merge marks from a JSON file (pins OR-ed, tags united)")
    load.add_argument("file", metavar="FILE", help="a file `seance marks export` wrote (- for stdin)")
    load.add_argument("--replace", action="store_true", help="replace every mark instead of merging")
    load.set_defaults(handler=run_import)
    marks.set_defaults(handler=lambda _args: _usage(marks))


def _usage(parser: argparse.ArgumentParser) -> int:
    raise CliError("marks needs an action: `seance marks export [-o FILE]` or `seance marks import FILE`")


def session_summary(argument: str, args: argparse.Namespace) -> SessionSummary:
    """SESSION (a path, an id or a name: `cli.scope.session_path`) as its summary; the header
    id is what marks are keyed by."""
    from seance.core.discovery import stat_file
    from seance.core.metadata import NotSessionFile
    from seance.core.prefix import read_prefix

    path = session_path(argument, args)
    info = stat_file(path)
    if isinstance(info, str):
        raise CliError(f"{argument}: {info}", ExitCode.NOT_FOUND)
    try:
        return read_prefix(info, text=False)
    except NotSessionFile as error:
        raise CliError(f"{argument}: not a session file ({error})") from None


def listing_marks() -> Marks:
    """The marks for `seance ls` (a listing never fails over them: an unreadable file is said)."""
    try:
        return MarkStore().load()
    except (MarkError, OSError) as error:
        say(f"seance: marks not shown: {error}")
        return {}


def marked_json(summary: SessionSummary, marks: Marks) -> dict[str, Any]:
    """`ls --json`'s object: pi's keys, and `pinned` and `tags` first (as `annotate_pi_json`)."""
    mark = marks.get(summary.id, NO_MARK) if summary.id else NO_MARK
    return {"pinned": mark.pinned, "tags": list(mark.tags), **summary.to_pi_json()}


def _described(summary: SessionSummary) -> str:
    return f"{display_text(summary.title, 60)} ({summary.id})"


def run_pin(args: argparse.Namespace) -> int:
    pinned = not args.remove
    summaries = [session_summary(argument, args) for argument in args.sessions]  # all found before any write
    store = MarkStore()
    for summary in summaries:
        store.set_pinned(summary.id, pinned)
        say(f"{'pinned' if pinned else 'unpinned'} {_described(summary)}")
        put_path(summary.path)
    return ExitCode.OK


def run_tag(args: argparse.Namespace) -> int:
    for edit in args.edits:
        if edit.startswith("--"):
            raise CliError(f"tag: {edit} after SESSION reads as a tag; put options before SESSION")
    add, remove = parse_tag_edits(args.edits)  # every tag checked before anything is written
    summary = session_summary(args.session, args)
    store = MarkStore()
    if add or remove:
        mark = store.edit_tags(summary.id, add, remove)
    else:
        mark = store.load().get(summary.id, NO_MARK) if summary.id else NO_MARK
    for tag in mark.tags:
        put_line(tag)
    return ExitCode.OK


def run_export(args: argparse.Namespace) -> int:
    data = MarkStore().export()
    if args.output and args.output != "-":
        from seance.core.export import write_export  # atomic, and never replaces a session file

        write_export(Path(args.output), data.decode("utf-8") + "\n", force=True)
        say(f"seance: marks written to {args.output}")
    else:
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.flush()
    return ExitCode.OK


def run_import(args: argparse.Namespace) -> int:
    if args.file == "-":
        data, where = sys.stdin.buffer.read(MAX_MARKS_BYTES + 1), "stdin"
    else:
        try:  # (a plain open: `<(ssh host seance marks export)` is a pipe, and is read as one)
            with Path(args.file).expanduser().open("rb") as handle:
                data, where = handle.read(MAX_MARKS_BYTES + 1), args.file
        except FileNotFoundError:
            raise CliError(f"{args.file}: no such file", ExitCode.NOT_FOUND) from None
    if len(data) > MAX_MARKS_BYTES:  # (`/dev/zero` was read without end, filling the memory)
        raise CliError(f"{where}: not a marks file (over {MAX_MARKS_BYTES >> 20} MB); nothing was imported")
    count = MarkStore().import_marks(data, where, replace=args.replace)
    say(f"seance: {'replaced the marks with' if args.replace else 'imported'} the marks of {count} sessions")
    return ExitCode.OK
