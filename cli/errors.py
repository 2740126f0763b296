"""The exit codes of every `seance` command, and the failure that carries one."""

from __future__ import annotations

from enum import IntEnum

from seance.core.errors import SessionError


class ExitCode(IntEnum):
    """What `seance` exits with (like grep and fzf)."""

    OK = 0
    NOT_FOUND = 1  # nothing matched, nothing to undo, no session at all
    BAD_INPUT = 2  # a bad argument or file, no terminal for the UI
    CANCELLED = 130  # Esc / Ctrl+C in the UI, or an interrupt


class CliError(SessionError):
    """A user-facing failure with an exit code (its message is printed on one line)."""

    def __init__(self, message: str, code: ExitCode = ExitCode.BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code
