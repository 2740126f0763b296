"""seance's own settings: one small JSON object in the user config dir, read at start.

`$SEANCE_CONFIG_DIR/settings.json`, else the platform's user config dir for "seance"
(`$XDG_CONFIG_HOME/seance/settings.json`, `~/.config/seance/settings.json` on Linux).  Not the
cache (`SEANCE_CACHE_DIR`): deleting the index must not forget a preference.

Keys: `children` ("hidden" | "threaded" | "flat"): how the picker lists child sessions
(`seance.core.listing.CHILD_MODES`).  Unknown keys are kept when a value is saved.

Reading never raises: a missing, unreadable or malformed file is "no settings" (and `problem`
says why).  Saving replaces the whole file atomically (temp + fsync + rename), and refuses
to replace a file it cannot read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .listing import DEFAULT_CHILD_MODE, ChildMode, child_mode
from .roots import SETTINGS_LIMIT
from .safeopen import read_regular
from .userdirs import user_dir

SETTINGS_FILE = "settings.json"


def config_dir() -> Path:
    """`$SEANCE_CONFIG_DIR`, else the platform's user config dir for "seance" (`core.userdirs`)."""
    return user_dir("config")


def settings_path() -> Path:
    return config_dir() / SETTINGS_FILE


@dataclass
class Settings:
    """The settings file's values (`values`: the whole object, unknown keys included)."""

    values: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # why the file could not be used, if it could not

    @property
    def children(self) -> ChildMode:
        """How the picker lists child sessions; an unknown value is the default."""
        return child_mode(self.values.get("children")) or DEFAULT_CHILD_MODE


def load_settings(path: Path | None = None) -> Settings:
    """The settings, or empty ones (with the reason) if the file is missing or broken."""
    path = path or settings_path()
    try:
        data = read_regular(path, SETTINGS_LIMIT)  # (a FIFO there never blocks the picker's start)
    except FileNotFoundError:
        return Settings()
    except OSError as error:
        return Settings(problem=f"cannot read {path}: {error.strerror or error}")
    try:
        values = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        return Settings(problem=f"{path} is not JSON: {error}")
    if not isinstance(values, dict):
        return Settings(problem=f"{path} is not a JSON object")
    return Settings(values)


def save_setting(key: str, value: Any, path: Path | None = None) -> Path:
    """Set one key, keeping the others; raises `OSError` if the file cannot be written, or is
    there but unreadable or malformed (a file the user is editing is never overwritten)."""
    from .safefile import atomic_write  # writing only: a launch reads the settings (~5 ms less to import)

    path = path or settings_path()
    current = load_settings(path)
    if current.problem is not None:
        raise OSError(current.problem)
    values = dict(current.values)
    values[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(values, indent=2, ensure_ascii=False) + "\n").encode(), None)
    return path
