"""Export a session — the context it resumes with, or its whole tree — as Markdown, HTML or JSON.

    doc = context_document(session, leaf)   # or tree_document(session, leaf)
    text = render(doc, "html")               # md | html | json
    write_export(path, text, force=False)    # atomic; never replaces a file unless forced

The document (`document.py`) is format-neutral; `md.py`, `html_page.py` and `json_doc.py`
lay it out.  Headless: the CLI (`seance export`) and the screens (Alt+E) both call this.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import SessionError
from ..safefile import atomic_write, create_new
from ..text import display_text
from .document import DEFAULT_LEAF, ExportDocument, context_document, image_reference, tree_document
from .html_page import render_html
from .json_doc import render_json
from .md import render_markdown

FORMATS = ("md", "html", "json")
_EXTENSIONS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json"}
_UNSAFE_NAME = re.compile(r"[^\w.+-]+")


def format_for_path(path: str | os.PathLike[str]) -> str | None:
    """The format a file name asks for by its extension (`.md`, `.html`, `.json`), or None."""
    return _EXTENSIONS.get(Path(path).suffix.lower())


def render(doc: ExportDocument, fmt: str) -> str:
    """The document in `fmt` (one of `FORMATS`)."""
    if fmt == "md":
        return render_markdown(doc)
    if fmt == "html":
        return render_html(doc)
    if fmt == "json":
        return render_json(doc)
    raise SessionError(f"unknown export format {display_text(fmt, 40)!r} (md, html or json)")


def default_file_name(name: str | None, session_id: str, fmt: str = "html") -> str:
    """`<session-name-or-id>.<fmt>`, a plain file name: no separator, no control, no leading dot."""
    stem = _UNSAFE_NAME.sub("-", display_text(name or "", 80)).strip("-.") or ""
    if not stem:
        stem = _UNSAFE_NAME.sub("-", display_text(session_id, 80)).strip("-.") or "session"
    return f"{stem}.{fmt}"


class ExportExists(SessionError):
    """The output file exists and replacing it was not asked for."""


def write_export(
    path: str | os.PathLike[str], text: str, *, force: bool = False, source: str | os.PathLike[str] | None = None
) -> Path:
    """Write `text` to `path` atomically (temp + fsync + link/rename; the file is 0600: session
    text is private).  An existing file is refused unless `force`; a session file is never
    replaced, forced or not: the one being exported (`source`), or any `*.jsonl`."""
    target = Path(path).expanduser()
    exists = os.path.lexists(target)
    if source is not None and exists and _same_file(target, Path(source)):
        raise SessionError(f"{target}: is the session being exported; nothing was written")
    if exists and ".jsonl" in (target.suffix.lower(), Path(os.path.realpath(target)).suffix.lower()):
        # (a link's target too: the rewrite replaces the file a symlink points to)
        raise SessionError(f"{target}: an existing .jsonl file (a session?) is never replaced; nothing was written")
    if exists and not force:
        raise ExportExists(f"{target}: already exists; nothing was written")
    if exists and not target.is_file():
        raise SessionError(f"{target}: not a regular file; nothing was written")
    data = text.encode("utf-8")
    if exists:
        atomic_write(target, data, None, private=True)  # (0600 whatever the file it replaces was)
    else:
        try:
            create_new(target, data)
        except SessionError as error:  # appeared meanwhile
            raise ExportExists(f"{target}: already exists; nothing was written") from error
    return target.absolute()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


__all__ = [
    "DEFAULT_LEAF",
    "FORMATS",
    "ExportDocument",
    "ExportExists",
    "context_document",
    "default_file_name",
    "format_for_path",
    "image_reference",
    "render",
    "tree_document",
    "write_export",
]
