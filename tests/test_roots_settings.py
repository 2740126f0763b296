"""Default roots follow pi's and oh-my-pi's settings, not only their default paths.

pi: `PI_CODING_AGENT_SESSION_DIR`, `sessionDir` in the global and the project settings.json —
each case is checked against pi 0.73.1 itself (tests/oracle/session_dir.mjs runs pi's own
settings code in the same home and cwd).  oh-my-pi: `$XDG_DATA_HOME/omp/sessions`, profile
session dirs, `PI_CONFIG_DIR`, and breadcrumbs under `$XDG_STATE_HOME/omp` (omp's dirs.ts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import node_oracle_available, run_node
from ui_sessions import Spec, session_path, write_session

from seance.cli.actions import agent_dirs
from seance.core.discovery import discover
from seance.core.resume import continue_session, write_breadcrumb
from seance.core.roots import default_roots, pi_session_dir

ENV_KEYS = ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "PI_CONFIG_DIR")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean home: no agent env variables, no XDG dirs, a project dir to run in."""
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    return home


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value))


def flat_session(directory: Path, sid: str, cwd: str) -> Path:
    """A session file directly in `directory`, as pi writes into a custom session dir."""
    nested = write_session(directory, Spec(sid, cwd))
    flat = directory / nested.name
    nested.rename(flat)
    nested.parent.rmdir()
    return flat


# Each case: (env, global settings, project settings, the session dir relative to home or None).
# "G" / "P" are written to <agent dir>/settings.json / <cwd>/.pi/settings.json.
PI_CASES = {
    "env-absolute": ({"PI_CODING_AGENT_SESSION_DIR": "{home}/env-sessions"}, None, None, "env-sessions"),
    "env-tilde": ({"PI_CODING_AGENT_SESSION_DIR": "~/env-tilde"}, None, None, "env-tilde"),
    "env-beats-settings": (
        {"PI_CODING_AGENT_SESSION_DIR": "~/env-wins"},
        {"sessionDir": "~/global"},
        {"sessionDir": "~/project"},
        "env-wins",
    ),
    "global-absolute": ({}, {"sessionDir": "{home}/global-abs"}, None, "global-abs"),
    "global-tilde": ({}, {"sessionDir": "~/global-tilde"}, None, "global-tilde"),
    "global-bare-tilde": ({}, {"sessionDir": "~"}, None, "."),
    "global-relative-is-to-the-cwd": ({}, {"sessionDir": "global-rel"}, None, "project/global-rel"),
    "project-beats-global": ({}, {"sessionDir": "~/global"}, {"sessionDir": "~/project-wins"}, "project-wins"),
    "project-relative-is-to-the-cwd": ({}, None, {"sessionDir": ".pi/sessions"}, "project/.pi/sessions"),
    "project-null-clears-global": ({}, {"sessionDir": "~/global"}, {"sessionDir": None}, None),
    "broken-project-file-is-ignored": ({}, {"sessionDir": "~/global-kept"}, "{not json", "global-kept"),
    "non-string-is-ignored": ({}, {"sessionDir": 42}, None, None),
    "nul-is-no-path": ({}, {"sessionDir": "~/a\u0000b"}, None, None),
    "agent-dir-override-has-the-settings": (
        {"PI_CODING_AGENT_DIR": "~/custom-agent"},
        {"sessionDir": "~/from-custom-agent"},
        None,
        "from-custom-agent",
    ),
    "nothing-configured": ({}, None, None, None),
}


@pytest.mark.parametrize("case", sorted(PI_CASES))
def test_pi_session_dir_is_what_pi_itself_resolves(home: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    env, global_settings, project_settings, expected = PI_CASES[case]
    env = {key: value.format(home=home) for key, value in env.items()}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    agent = Path(env["PI_CODING_AGENT_DIR"].replace("~", str(home), 1)) if "PI_CODING_AGENT_DIR" in env else None
    agent = agent or home / ".pi" / "agent"
    cwd = home / "project"
    if global_settings is not None:
        write_json(agent / "settings.json", _format(global_settings, home))
    if project_settings is not None:
        write_json(cwd / ".pi" / "settings.json", _format(project_settings, home))

    ours = pi_session_dir(cwd)
    assert ours == (None if expected is None else (home / expected).resolve())
    roots = default_roots(cwd)
    assert roots[0] == (ours if ours is not None else agent / "sessions")
    assert agent / "sessions" in roots  # sessions written before the setting are still listed

    if node_oracle_available() and case not in ("non-string-is-ignored", "nul-is-no-path"):  # pi throws there
        pi = json.loads(_run_in(cwd, run_node, "session_dir.mjs"))
        assert pi["resolved"] == (None if ours is None else str(ours)), pi
        assert Path(pi["agentDir"]) == agent


def _format(value: object, home: Path) -> object:
    if isinstance(value, dict):
        return {key: item.format(home=home) if isinstance(item, str) else item for key, item in value.items()}
    return value


def _run_in(cwd: Path, function, *args: str) -> str:
    """`function(*args)` with the process in `cwd` (node reads pi's project settings from its cwd)."""
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return function(*args)
    finally:
        os.chdir(before)


@pytest.mark.parametrize("how", ["env", "project-settings"])
def test_seance_ls_finds_sessions_in_the_configured_dir(home: Path, tmp_path: Path, how: str) -> None:
    """The reported bug, end to end: 0 sessions, because the configured dir was never looked at."""
    cwd = home / "project"
    custom = tmp_path / "elsewhere"
    path = flat_session(custom, "s-custom", str(cwd))
    env = {key: value for key, value in os.environ.items() if key not in ENV_KEYS}
    env.update(HOME=str(home), SEANCE_CACHE_DIR=str(tmp_path / "cache"))
    if how == "env":
        env["PI_CODING_AGENT_SESSION_DIR"] = str(custom)
    else:
        write_json(cwd / ".pi" / "settings.json", {"sessionDir": os.path.relpath(custom, cwd)})
    result = subprocess.run(
        [sys.executable, "-m", "seance", "ls", "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert [row["path"] for row in json.loads(result.stdout)] == [str(path)]


@pytest.mark.parametrize("command", [["ls", "--json"], ["stats"], ["continue"], ["index"]])
def test_a_session_dir_setting_with_a_nul_is_no_traceback(home: Path, tmp_path: Path, command: list[str]) -> None:
    """`{"sessionDir": "\\u0000"}` in pi's settings made every command that reads the default
    roots die with "ValueError: embedded null byte"; it counts as no setting now (pi itself
    cannot start with it), so the agent dir's own sessions are still found."""
    cwd = home / "project"
    path = write_session(home / ".pi" / "agent" / "sessions", Spec("s-agent", str(cwd)))
    write_json(home / ".pi" / "agent" / "settings.json", {"sessionDir": "/x\u0000y"})
    env = {key: value for key, value in os.environ.items() if key not in ENV_KEYS}
    env.update(HOME=str(home), SEANCE_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run(
        [sys.executable, "-m", "seance", *command], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in result.stderr and result.returncode == 0, result.stderr
    if command[0] == "ls":
        assert [row["path"] for row in json.loads(result.stdout)] == [str(path)]


def test_omp_xdg_data_home_is_a_root_once_omp_lives_there(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = home / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    assert xdg / "omp" / "sessions" not in default_roots()  # omp itself ignores XDG until omp/ exists
    session = write_session(xdg / "omp" / "sessions", Spec("s-xdg", "/work/x"))
    assert xdg / "omp" / "sessions" in default_roots()
    assert discover().files == [session]


def test_omp_profiles_are_roots_in_home_and_in_xdg(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = home / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    in_home = write_session(home / ".omp" / "profiles" / "work" / "agent" / "sessions", Spec("s-work", "/w"))
    in_xdg = write_session(xdg / "omp" / "profiles" / "play" / "sessions", Spec("s-play", "/p"))
    roots = default_roots()
    assert home / ".omp" / "profiles" / "work" / "agent" / "sessions" in roots
    assert xdg / "omp" / "profiles" / "play" / "sessions" in roots
    assert sorted(discover().files) == sorted([in_home, in_xdg])


def test_omp_config_dir_name_follows_pi_config_dir(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CONFIG_DIR", ".omp-dev")
    session = write_session(home / ".omp-dev" / "agent" / "sessions", Spec("s-dev", "/d"))
    assert home / ".omp-dev" / "agent" / "sessions" in default_roots()
    assert discover().files == [session]


def test_continue_reads_omp_breadcrumbs_under_xdg_state_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = home / "xdg-state"
    (state / "omp").mkdir(parents=True)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    root = home / ".omp" / "agent" / "sessions"
    older = write_session(root, Spec("s-crumb", "/work/x"))
    write_session(root, Spec("s-newer", "/work/x"))  # newest by mtime: what continue picks without a crumb
    assert write_breadcrumb(state / "omp", "/work/x", older, terminal="pts-7") is not None
    assert state / "omp" in agent_dirs()
    assert continue_session("/work/x", [], agent_dirs(), terminal="pts-7") == older
    assert older == session_path(root, Spec("s-crumb", "/work/x"))
