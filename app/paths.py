"""Where seance's files live inside the package: the one home for the styles/ path."""

from __future__ import annotations

from pathlib import Path

import seance

STYLES = Path(seance.__file__).resolve().parent / "styles"  # the .tcss files, shipped with the package
