"""seance's headless core: read, migrate, index, search and write pi-family sessions.

Nothing here imports Textual or Rich (a test enforces it), so the CLI starts fast and an
embedding agent can use the core without a UI.  The names below are imported on first use
(PEP 562), so `seance ls` does not pay for the session reader, the tree or the context.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ContextMessage": "context",
    "SessionContext": "context",
    "build_session_context": "context",
    "FileStamp": "session",
    "NotASession": "session",
    "Session": "session",
    "SessionError": "errors",
    "load_session": "session",
    "read_session": "session",
    "Summary": "summary",
    "summarize": "summary",
    "SessionTree": "tree",
    "TreeNode": "tree",
}

__all__ = [
    "ContextMessage",
    "FileStamp",
    "NotASession",
    "Session",
    "SessionContext",
    "SessionError",
    "SessionTree",
    "Summary",
    "TreeNode",
    "build_session_context",
    "load_session",
    "read_session",
    "summarize",
]

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from .context import ContextMessage, SessionContext, build_session_context
    from .session import FileStamp, NotASession, Session, SessionError, load_session, read_session
    from .summary import Summary, summarize
    from .tree import SessionTree, TreeNode


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
