"""Where sessions live when no `--root` is given: every root pi, oh-my-pi or the Python port
would write to, resolved the way each agent resolves it.

pi (0.73.1: dist/config.js, dist/main.js, dist/core/settings-manager.js):
    the session dir is `$PI_CODING_AGENT_SESSION_DIR` (non-empty), else `sessionDir` from
    settings.json — the project's `<cwd>/.pi/settings.json` over the global
    `<agent dir>/settings.json`, key by key; a file that does not parse counts as `{}`, a
    value that is no path (a NUL in it: pi's own start fails on it) as none — else
    `<agent dir>/sessions`.  `~` and `~/…` are expanded (only those: pi's `expandTildePath`);
    a relative path stays relative, i.e. to the cwd pi runs in, for the global file too.
    The agent dir is `$PI_CODING_AGENT_DIR` (non-empty), else `~/.pi/agent`.
    seance lists the configured dir first and still `<agent dir>/sessions` after it: sessions
    written before the setting are still the user's (a missing dir is skipped silently).
oh-my-pi (packages/utils/src/dirs.ts):
    config root `~/$PI_CONFIG_DIR` (default `~/.omp`); sessions in `<root>/agent/sessions` and,
    per profile (`OMP_PROFILE`), `<root>/profiles/<name>/agent/sessions`.  On Linux and macOS,
    once `$XDG_DATA_HOME/omp` exists, sessions move to `$XDG_DATA_HOME/omp/sessions` (the
    `agent/` level flattened) and a profile's to `$XDG_DATA_HOME/omp/profiles/<name>/sessions`
    once that exists; breadcrumbs likewise to `$XDG_STATE_HOME/omp[/profiles/<name>]`.  Every
    profile is listed, not only the active one: a browser shows all of the user's sessions.
The Python port: `~/.operator/profiles/<name>/sessions`.

Nothing here creates a directory or raises: unreadable settings and missing dirs are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

PI_SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"


def expand_tilde(path: str) -> str:
    """`~` and `~/…` to the home directory, as pi's `expandTildePath` (not `~user`)."""
    if path == "~":
        return str(Path.home())
    if path.startswith("~/"):
        return str(Path.home()) + path[1:]
    return path


def agent_dir() -> Path:
    """pi's agent dir: `$PI_CODING_AGENT_DIR` (with `~` expanded), else `~/.pi/agent`."""
    override = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(expand_tilde(override)) if override else Path.home() / ".pi" / "agent"


def pi_session_dir(cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The session dir pi run in `cwd` would use when configured (env or settings), else None."""
    cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
    configured = os.environ.get(PI_SESSION_DIR_ENV) or _settings_session_dir(cwd)
    if not configured:
        return None
    return Path(os.path.join(cwd, expand_tilde(configured)))  # an absolute path replaces cwd


def _settings_session_dir(cwd: str) -> str | None:
    """`sessionDir` of pi's merged settings: the project file's key, if present, wins."""
    merged: dict[str, object] = {}
    for settings in (agent_dir() / "settings.json", Path(cwd) / ".pi" / "settings.json"):
        merged.update(_read_settings(settings))
    value = merged.get("sessionDir")
    # ("\u0000" in JSON is no path: every use of it raised, a traceback from `ls` to `continue`)
    return value if isinstance(value, str) and value and "\0" not in value else None


SETTINGS_LIMIT = 16 << 20  # bytes of a settings file read at most


def _read_settings(path: Path) -> dict[str, object]:
    import json  # here: a listing of explicit roots reads no settings

    from .safeopen import read_regular

    try:
        settings = json.loads(read_regular(path, SETTINGS_LIMIT))  # (a FIFO there never blocks)
    except (OSError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def _omp_root() -> Path:
    return Path.home() / (os.environ.get("PI_CONFIG_DIR") or ".omp")


def _xdg_omp(variable: str) -> Path | None:
    """`$XDG_*_HOME/omp` when omp would use it: the variable is set and the directory exists."""
    base = os.environ.get(variable)
    if not base:
        return None
    root = Path(base) / "omp"
    return root if root.is_dir() else None


def _subdirs(parent: Path) -> list[Path]:
    try:
        return sorted(entry for entry in parent.iterdir() if entry.is_dir())
    except OSError:
        return []


def omp_session_roots() -> list[Path]:
    """oh-my-pi's sessions roots: default, XDG, and every profile's."""
    root = _omp_root()
    roots = [root / "agent" / "sessions"]
    xdg = _xdg_omp("XDG_DATA_HOME")
    if xdg is not None:
        roots.append(xdg / "sessions")
    roots += [profile / "agent" / "sessions" for profile in _subdirs(root / "profiles")]
    if xdg is not None:
        roots += [profile / "sessions" for profile in _subdirs(xdg / "profiles")]
    return roots


def omp_state_dirs() -> list[Path]:
    """oh-my-pi's agent dirs as far as breadcrumbs go (`terminal-sessions/` lives in each)."""
    root = _omp_root()
    dirs = [root / "agent"]
    xdg = _xdg_omp("XDG_STATE_HOME")
    if xdg is not None:
        dirs.append(xdg)
    dirs += [profile / "agent" for profile in _subdirs(root / "profiles")]
    if xdg is not None:
        dirs += _subdirs(xdg / "profiles")
    return dirs


def pi_session_roots(cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """pi's sessions roots: the configured session dir (if any), then `<agent dir>/sessions`."""
    configured = pi_session_dir(cwd)
    return _unique([*([configured] if configured is not None else []), agent_dir() / "sessions"])


def other_agents_roots(cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """The default roots that are not pi's: oh-my-pi's and the Python port's."""
    pi_roots = pi_session_roots(cwd)
    return [root for root in default_roots(cwd) if root not in pi_roots]


def default_roots(cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """pi's, oh-my-pi's and the Python port's sessions roots (existing or not), in that order."""
    roots = pi_session_roots(cwd)
    roots += omp_session_roots()
    roots += [profile / "sessions" for profile in _subdirs(Path.home() / ".operator" / "profiles")]
    return _unique(roots)


def default_root_sources() -> list[Path]:
    """The directories whose entries make some of the default roots (an omp profile, the
    Python port's; `omp` in `$XDG_DATA_HOME`, the dir of the XDG profiles), existing or not:
    the others are fixed paths (but for pi's `sessionDir` setting).  A resident watcher of
    the default roots watches them (or their nearest existing ancestor) to take up a root
    that comes or goes."""
    sources = [_omp_root() / "profiles", Path.home() / ".operator" / "profiles"]
    base = os.environ.get("XDG_DATA_HOME")
    if base:
        sources.append(Path(base) / "omp" / "profiles")  # (its ancestors: `omp` made in `$XDG_DATA_HOME`)
    return sources


def _unique(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))
