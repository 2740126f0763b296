"""seance — browse, search and resume pi / oh-my-pi coding-agent sessions.

`seance.core` is headless (no Textual, no Rich); `seance.app` holds the Textual screens.
"""

# The one place the version lives: pyproject.toml reads it at build time, `seance --version` at
# run time (so a source checkout on PYTHONPATH reports its own version, not an installed one's).
__version__ = "0.7.15"
