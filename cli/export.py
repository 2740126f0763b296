"""`seance export`: a session's context (or whole tree) as Markdown, HTML or JSON.

    seance export SESSION [--leaf ID] [--format md|html|json] [-o FILE [--force]] [--tree] [--thinking]

The format defaults to FILE's extension, else Markdown.  Without `-o` the export goes to
stdout: Markdown and JSON through the terminal sanitisers (`safe_multiline`, `json_safe`),
HTML only when stdout is not a terminal (a page of markup is no use there: it says to use
`-o` or a redirect).  `-o` writes atomically and never replaces a file without `--force`
(nor ever a session file).
"""

from __future__ import annotations

import argparse
import sys

from seance.core.export import (
    DEFAULT_LEAF,
    FORMATS,
    ExportExists,
    context_document,
    format_for_path,
    render,
    tree_document,
    write_export,
)
from seance.core.text import json_safe, safe_multiline

from .errors import CliError, ExitCode
from .output import say
from .scope import scope_options
from .session import open_session_arg


def register(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser(
        "export", help="export a session's context (or --tree: its whole tree) as Markdown, HTML or JSON"
    )
    export.add_argument("session", metavar="SESSION", help="session file path or id prefix")
    export.add_argument("--leaf", metavar="ENTRY_ID", help="export the context at this entry (default: the leaf)")
    export.add_argument("--format", choices=FORMATS, help="md, html or json (default: from FILE's extension, else md)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomic; refuses to replace a file)")
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")
    export.add_argument("--tree", action="store_true", help="the whole tree, branches nested, not only the context")
    export.add_argument("--thinking", action="store_true", help="include the model's thinking blocks")
    scope_options(export)
    export.set_defaults(handler=run_export)


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    if args.output:
        found = format_for_path(args.output)
        if found is None:
            raise CliError(f"{args.output}: cannot tell the format from the extension; pass --format md|html|json")
        return found
    return "md"


def run_export(args: argparse.Namespace) -> int:
    fmt = _format(args)
    if not args.output and fmt == "html" and sys.stdout.isatty():
        raise CliError("HTML is not for a terminal: write it with -o FILE.html, or redirect stdout")
    session = open_session_arg(args, decoded=args.tree)  # a whole-tree export reads every entry
    if args.leaf is not None and args.leaf not in session.tree.by_id:
        raise CliError(f"{session.path.name}: no entry {args.leaf!r}")
    leaf = DEFAULT_LEAF if args.leaf is None else args.leaf
    build = tree_document if args.tree else context_document
    text = render(build(session, leaf, thinking=args.thinking), fmt)
    if args.output:
        try:
            written = write_export(args.output, text, force=args.force, source=session.path)
        except ExportExists as error:
            raise CliError(f"{error} (--force replaces it)") from error
        except OSError as error:  # named as asked for (as Alt+E does), not as the temp file beside it
            raise CliError(f"{args.output}: {error.strerror or error}; nothing was written") from error
        say(f"seance: exported {len(text.encode()):,} bytes to {written}")
        return ExitCode.OK
    if fmt == "json":
        sys.stdout.buffer.write(json_safe(text.encode()))
    else:  # Markdown is sanitised already; once more costs nothing and keeps the rule visible here
        sys.stdout.write(safe_multiline(text))
    sys.stdout.flush()
    return ExitCode.OK
