"""Where seance's files live inside the package: the one home for the styles/ path."""

from __future__ import annotations

from pathlib import Path

import seance

STYLES = Path(seance.__file__).resolve().parent / "styles"  # the .tcss files, shipped with the package


def stylesheet(name: str) -> str:
    """The text of styles/`name`, for a class's `DEFAULT_CSS` (widgets) or `CSS` (screens):
    Textual scopes both to the class's type, so no seance rule reaches a host's widgets."""
    return (STYLES / name).read_text(encoding="utf-8")
