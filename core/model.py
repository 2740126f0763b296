"""Shared value types of the catalog: what one row of the session list knows.

`SessionSummary` is produced by the catalog (from a 4 KB prefix first, then exactly from
the index) and consumed by the CLI and the screens.  It is immutable; an update is a new
summary for the same `path`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .text import display_text


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """Metadata of one session file.  Field names follow pi's `SessionInfo` where they overlap."""

    path: str  # absolute path of the .jsonl file: the identity of a session in seance
    id: str
    cwd: str
    name: str | None
    parent_session: str | None
    created: str | None  # ISO-8601 UTC, as pi's list() gives it
    modified: str  # ISO-8601 UTC: latest user/assistant message, else header, else mtime
    modified_ms: float
    message_count: int
    first_message: str  # "(no messages)" when there is none, as in pi
    size: int = 0
    mtime_ns: int = 0
    exact: bool = False  # False: from the 4 KB prefix only (counts are lower bounds)
    dialect: str = "pi"
    branch_points: int = 0
    labels: tuple[str, ...] = ()
    compactions: int = 0
    models: tuple[str, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    last_stop: str | None = None  # how the last turn ended: stop | toolUse | error | aborted | length | user
    prefix_text: str = ""  # quick summaries only: the user/assistant text inside the 4 KB prefix

    @property
    def title(self) -> str:
        """What a row shows, one clean line: the name, else the first prompt, else the id, else the file name."""
        return session_title(self.name, self.first_message, self.id, self.path)

    def to_pi_json(self) -> dict[str, Any]:
        """The `seance ls --json` object; keys and values match pi's `SessionManager.list()`."""
        return {
            "path": self.path,
            "id": self.id,
            "cwd": self.cwd,
            "name": self.name,
            "parentSession": self.parent_session,
            "created": self.created,
            "modified": self.modified,
            "messageCount": self.message_count,
            "firstMessage": self.first_message,
        }


def session_title(name: str | None, first_message: str | None, session_id: str | None, path: str) -> str:
    """A session's title on one clean line, wherever seance shows one (a list row, the tree's header):
    the name, else the first prompt, else the id, else the file name."""
    prompt = first_message if first_message != "(no messages)" else None
    for candidate in (name, prompt, session_id):
        text = display_text(candidate) if candidate else ""
        if text:
            return text
    return display_text(path.rsplit("/", 1)[-1])
