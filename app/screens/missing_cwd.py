"""Before resuming a session whose working directory is gone, ask as pi 0.73.1 does.

pi (`promptForMissingSessionCwd`): "Session cwd not found" / "cwd from session file does not
exist <cwd>, continue in current cwd <cwd>" with Continue / Cancel.  seance asks the same
before it hands such a session back for resuming (a fork is written into the current project,
so it does not ask); `pick --json` says so in `cwdMissing` whatever the answer was.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App

from ..results import cwd_missing
from .confirm import ConfirmScreen


def missing_cwd_dialog(session_cwd: str, current_cwd: str) -> ConfirmScreen:
    """pi's question, in seance's confirm dialog (Enter continues, Esc cancels)."""
    return ConfirmScreen(
        "Session cwd not found",
        confirm_label="Continue",
        lines=("cwd from session file does not exist", session_cwd, "", "continue in current cwd", current_cwd),
    )


def resume_checked(app: App, session_cwd: str | None, current_cwd: str, resume: Callable[[], object]) -> None:
    """Run `resume` now, or, when the session's cwd no longer exists, once the user says Continue."""
    if not cwd_missing(session_cwd):
        resume()
        return

    def answered(yes: bool | None) -> None:
        if yes:
            resume()

    app.push_screen(missing_cwd_dialog(session_cwd or "", current_cwd), answered)
