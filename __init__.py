"""seance — browse, search and resume pi / oh-my-pi coding-agent sessions.

`seance.core` is headless (no Textual, no Rich); `seance.app` holds the Textual screens.
"""

__version__ = "0.1.0"
