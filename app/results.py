"""Typed results of seance's screens: what a host app receives when the picker closes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PickAction = Literal["resume", "fork"]


@dataclass(frozen=True, slots=True)
class PickResult:
    """The user chose a session: resume it (at `leaf_id`, or its own leaf when None) or fork it.

    `session_id` and `cwd` come from the session header, so a caller can `cd` and resume
    without reading the file again.
    """

    action: PickAction
    path: Path
    leaf_id: str | None = None
    session_id: str | None = None
    cwd: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `seance pick --json` object."""
        return {
            "action": self.action,
            "path": str(self.path),
            "id": self.session_id,
            "leafId": self.leaf_id,
            "cwd": self.cwd,
        }
