"""Where seance keeps files of its own, one rule for the three kinds.

* cache — the index (`core/index.py`, `core/statscache.py`): rebuilt from the sessions, so
  deleting it loses nothing;
* data — the user's pins and tags (`core/marks.py`): not the cache, they cannot be rebuilt;
* config — settings (`core/settings.py`).

Each has an environment override (`SEANCE_CACHE_DIR`, `SEANCE_DATA_DIR`, `SEANCE_CONFIG_DIR`:
tests and benchmarks point them at temporary directories), else the XDG variable on Linux
(platformdirs' rule, without paying for its import on every `seance ls`), else platformdirs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

Kind = Literal["cache", "data", "config"]

_RULES: dict[str, tuple[str, str, str]] = {  # kind -> (override, XDG variable, XDG default)
    "cache": ("SEANCE_CACHE_DIR", "XDG_CACHE_HOME", "~/.cache"),
    "data": ("SEANCE_DATA_DIR", "XDG_DATA_HOME", "~/.local/share"),
    "config": ("SEANCE_CONFIG_DIR", "XDG_CONFIG_HOME", "~/.config"),
}


def user_dir(kind: Kind) -> Path:
    """seance's directory of this kind (not created here)."""
    override, xdg_variable, xdg_default = _RULES[kind]
    given = os.environ.get(override, "").strip()
    if given:
        return Path(given).expanduser()
    if sys.platform.startswith("linux"):
        base = os.environ.get(xdg_variable, "").strip() or os.path.expanduser(xdg_default)
        return Path(base) / "seance"
    import platformdirs

    finder = {"cache": platformdirs.user_cache_dir, "data": platformdirs.user_data_dir}.get(
        kind, platformdirs.user_config_dir
    )
    return Path(finder("seance", appauthor=False))


__all__ = ["Kind", "user_dir"]
