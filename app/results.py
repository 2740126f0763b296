"""Typed results of seance's screens: what a host app receives when the picker closes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PickAction = Literal["resume", "fork"]


@dataclass(frozen=True, slots=True)
class PickResult:
    """The user chose a session: resume it (at `leaf_id`, or its own leaf when None) or fork it.

    `session_id` and `cwd` come from the session header, so a caller can `cd` and resume
    without reading the file again.  From the tree view, `entry_id` is the entry the user
    chose (None when the session was picked from the list: its own leaf); choosing a user
    message resumes at its parent with the message offered back as `prefill` (pi's /tree);
    choosing a root user message resumes before the first entry: `reset` is True (pi's
    `resetLeaf()`).  A host with pi's `navigateTree(entry_id)` needs only `entry_id`; the
    derived `leaf_id`/`prefill`/`reset` serve hosts that set the leaf themselves.
    """

    action: PickAction
    path: Path
    leaf_id: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    prefill: str | None = None
    reset: bool = False
    entry_id: str | None = None

    @classmethod
    def from_tree(cls, result: Any, *, path: Path, session_id: str | None, cwd: str | None) -> PickResult:
        """The picker's result for a `TreeResult` (resume at a node of the session's tree)."""
        leaf_id = getattr(result, "leaf_id", None)
        return cls(
            getattr(result, "action", "resume"),
            Path(getattr(result, "path", None) or path),
            leaf_id,
            session_id=session_id,
            cwd=cwd,
            prefill=getattr(result, "prefill", None),
            reset=leaf_id is None,
            entry_id=getattr(result, "entry_id", None),
        )

    @property
    def cwd_missing(self) -> bool:
        """The session's working directory no longer exists (pi asks before resuming such a session)."""
        return cwd_missing(self.cwd)

    def to_json(self) -> dict[str, Any]:
        """The `seance pick --json` object."""
        return {
            "action": self.action,
            "path": str(self.path),
            "id": self.session_id,
            "leafId": self.leaf_id,
            "cwd": self.cwd,
            "prefill": self.prefill,
            "reset": self.reset,
            "entryId": self.entry_id,
            "cwdMissing": self.cwd_missing,
        }


def cwd_missing(cwd: str | None) -> bool:
    """pi's `getMissingSessionCwdIssue` test: the header names a cwd and nothing exists there."""
    return bool(cwd) and not os.path.exists(cwd or "")
