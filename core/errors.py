"""`SessionError`, on its own so that raising or catching it imports nothing else.

`seance.core.session` re-exports it (its historical home); the CLI imports it from here, so a
`seance ls` does not load the session reader just to know its error type.
"""

from __future__ import annotations


class SessionError(Exception):
    """A session operation that cannot be carried out; the message is for the user."""


class FileChangedError(SessionError):
    """The file changed on disk (or an agent is writing to it); nothing was written."""


class SessionChangedError(SessionError):
    """A session file was rewritten in place while a view read it by offset (`core.linesource`):
    nothing it would now read can be trusted; the message says to reopen it."""


class Stopped(Exception):
    """A long pass's `stop` (a cancelled worker's) said to give up before it was done."""


__all__ = ["FileChangedError", "SessionChangedError", "SessionError", "Stopped"]
