"""seance's headless core: read, migrate, index, search and write pi-family sessions.

Nothing here imports Textual or Rich (a test enforces it), so the CLI starts fast and an
embedding agent can use the core without a UI.
"""

from .context import ContextMessage, SessionContext, build_session_context
from .session import FileStamp, NotASession, Session, SessionError, load_session, read_session
from .summary import Summary, summarize
from .tree import SessionTree, TreeNode

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
