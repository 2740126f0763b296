"""Alt+E: export a session from the list or the tree view — a path prompt, a worker, a notice.

`ask_and_export` asks for the output file (default `./<session-name-or-id>.html`; the
format is the extension's: .md, .html or .json) and writes the export in a thread worker
(`seance.core.export`: the context at `leaf`, the session's own leaf by default, exactly
what `seance export` writes).  The worker posts `ExportDone` to the screen; the screen's
handler calls `show_export_notice`.  An existing file is never replaced: the notice says so.
`seance.core.export` is imported on the first export, not with the screens (~6 ms of a launch).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.screen import Screen

from seance.core.context import CONTEXT_TYPES
from seance.core.errors import SessionError
from seance.core.session import NotASession, Session, read_session
from seance.core.text import display_text

from .screens.prompt import PromptScreen

EXPORT_HELP = "export the context to a .md, .html or .json file"
OWN_LEAF: Any = object()
"""`ask_and_export`'s default `leaf`: the session's own leaf (`seance.core.export.DEFAULT_LEAF`)."""


@dataclass
class ExportDone(Message):
    """The export was written to `path`, or failed with `error` (one line)."""

    path: Path | None
    error: str | None = None


def export_prompt(default: str, what: str) -> PromptScreen:
    return PromptScreen(
        "Export to (.md, .html or .json)",
        default,
        what,
        placeholder="file name: the extension picks the format",
        required=True,
        empty_error="A file name is needed",
    )


def ask_and_export(
    screen: Screen[Any],
    session_path: Path,
    *,
    name: str | None,
    session_id: str,
    session: Session | None = None,
    leaf: Any = OWN_LEAF,
    what: str = "",
) -> None:
    """Ask for the output path, then export in a worker of `screen` (which handles `ExportDone`)."""
    from seance.core.export import default_file_name

    default = os.path.join(".", default_file_name(name, session_id, "html"))

    def answered(target: str | None) -> None:
        if target:
            screen.run_worker(
                lambda: _export(screen, session_path, session, leaf, target),
                thread=True,
                group="export",
                exit_on_error=False,
                description="export",
            )

    screen.app.push_screen(export_prompt(default, what), answered)


def _export(screen: Screen[Any], path: Path, session: Session | None, leaf: Any, target: str) -> None:
    """The worker: read (unless given), render, write; one message back either way."""
    from seance.core.export import DEFAULT_LEAF, context_document, format_for_path, render, write_export

    fmt = format_for_path(target)
    if fmt is None:
        screen.post_message(ExportDone(None, f"{target}: end the name in .md, .html or .json"))
        return
    try:
        if session is None:
            loaded = read_session(path, digest=False, decoded=CONTEXT_TYPES)  # what the context reads
            if isinstance(loaded, NotASession):
                screen.post_message(ExportDone(None, f"{loaded.path}: not a session ({loaded.reason})"))
                return
            session = loaded
        text = render(context_document(session, DEFAULT_LEAF if leaf is OWN_LEAF else leaf), fmt)
        written = write_export(Path(target).expanduser(), text, source=path)
    except SessionError as error:
        screen.post_message(ExportDone(None, str(error)))
    except OSError as error:
        screen.post_message(ExportDone(None, f"{target}: {error.strerror or error}"))
    else:
        screen.post_message(ExportDone(written))


def show_export_notice(screen: Screen[Any], message: ExportDone) -> None:
    """The notice for a finished export (session text and paths sanitised, never markup)."""
    if message.error is not None:
        screen.notify(display_text(message.error), title="Not exported", severity="error", timeout=8, markup=False)
    else:
        screen.notify(f"Exported to {display_text(message.path)}", title="Exported", timeout=6, markup=False)
