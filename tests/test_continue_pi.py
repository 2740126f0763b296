"""`seance continue` prints what `pi --continue` opens: pi 0.73.1's `continueRecent`.

pi looks only in its folder for the cwd (`<agent dir>/sessions/--<cwd>--/`, or its configured
`sessionDir` as it is), takes every `*.jsonl` there whatever its header cwd, and passes over a
file whose header line is not whole in its first 512 bytes (`isValidSessionFile`).  Each case
is checked against pi itself when node and pi's package are installed (tests/oracle/
continue_recent.mjs runs main.js's session-dir expression and `continueRecent` in the same
home and cwd); the expected file is asserted either way.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import node_oracle_available, run_node
from ui_sessions import Spec, session_path, write_session

from seance.cli import main

ENV_KEYS = ("PI_CODING_AGENT_SESSION_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "PI_CONFIG_DIR")
TERMINAL_KEYS = ("TMUX_PANE", "KITTY_WINDOW_ID", "TERM_SESSION_ID", "WT_SESSION", "ZELLIJ_PANE_ID", "WEZTERM_PANE")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with pi's agent dir in it, a project dir to run in, and no terminal breadcrumb."""
    home = Path(os.path.realpath(tmp_path)) / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / ".pi" / "agent"))
    for key in (*ENV_KEYS, *TERMINAL_KEYS):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr("seance.core.resume._stdin_tty", lambda: None)
    return home


def sessions(home: Path) -> Path:
    return home / ".pi" / "agent" / "sessions"


def session(root: Path, sid: str, cwd: Path | str, hours_ago: float, **spec: str) -> Path:
    return write_session(root, Spec(sid, str(cwd), age=timedelta(hours=hours_ago), **spec))


def moved(path: Path, folder: Path) -> Path:
    """`path` moved into `folder` (its mtime kept): a file whose folder and header cwd disagree."""
    folder.mkdir(parents=True, exist_ok=True)
    return path.rename(folder / path.name)


def seance_continue(capsys: pytest.CaptureFixture[str], project: Path, *options: str) -> str | None:
    code = main(["continue", "--cwd", str(project), *options])
    out = capsys.readouterr().out
    return out.strip() if code == 0 else None


def pi_continue(project: Path) -> str | None:
    """What pi 0.73.1 run in `project` opens with --continue (None: a new session)."""
    before = os.getcwd()
    os.chdir(project)
    try:
        return json.loads(run_node("continue_recent.mjs"))["opened"]
    finally:
        os.chdir(before)


def assert_continues(capsys: pytest.CaptureFixture[str], project: Path, expected: Path | None) -> None:
    """seance prints `expected`, and so does pi where it is installed."""
    assert seance_continue(capsys, project) == (str(expected) if expected else None)
    if node_oracle_available():
        assert pi_continue(project) == (str(expected) if expected else None)


def test_a_fork_whose_header_pi_cannot_read_is_passed_over(home: Path, capsys) -> None:
    """A header over 512 bytes (a fork's long parentSession): pi opens the older session."""
    project = home / "project"
    older = session(sessions(home), "older", project, 10)
    fork = session(sessions(home), "fork", project, 1, parent="p" * 500)
    assert len(fork.read_bytes().split(b"\n")[0]) > 512
    assert_continues(capsys, project, older)
    assert seance_continue(capsys, project, "--root", str(sessions(home))) == str(older)  # one rule


def test_only_the_projects_folder_counts_not_the_header_cwd(home: Path, capsys) -> None:
    """A newer session of this project in another folder, or under oh-my-pi's root: pi never sees it."""
    project = home / "project"
    ours = session(sessions(home), "ours", project, 10)
    moved(session(sessions(home), "elsewhere", project, 1), sessions(home) / "--elsewhere--")
    session(home / ".omp" / "agent" / "sessions", "omp", project, 1)
    assert_continues(capsys, project, ours)


def test_every_file_of_the_projects_folder_counts(home: Path, capsys) -> None:
    """A newer file in this project's folder whose header names another cwd: pi opens it."""
    project = home / "project"
    session(sessions(home), "ours", project, 10)
    stray = moved(
        session(sessions(home), "stray", "/tmp/renamed-project", 1),
        session_path(sessions(home), Spec("x", str(project))).parent,
    )
    assert_continues(capsys, project, stray)


def test_a_configured_session_dir_is_one_folder_for_every_project(home: Path, capsys) -> None:
    """pi's `sessionDir` setting: pi keeps every project's sessions in it and opens the newest."""
    project = home / "project"
    shared = home / "shared-sessions"
    (home / ".pi" / "agent").mkdir(parents=True)
    (home / ".pi" / "agent" / "settings.json").write_text(json.dumps({"sessionDir": str(shared)}))
    session(sessions(home), "before-the-setting", project, 1)  # newest here, but not where pi looks
    moved(session(shared, "ours", project, 10), shared)
    newest = moved(session(shared, "other-project", "/tmp/other-project", 5), shared)
    assert_continues(capsys, project, newest)


def test_without_a_pi_session_here_oh_my_pi_s_newest_of_the_project(home: Path, capsys) -> None:
    """pi would start a new session: seance names oh-my-pi's newest session of the project
    (omp's folders are named and moved its own way: the header cwd decides)."""
    project = home / "project"
    omp_root = home / ".omp" / "agent" / "sessions"
    session(omp_root, "omp-old", project, 10)
    newest = moved(session(omp_root, "omp-new", project, 1), omp_root / "-project")
    session(omp_root, "omp-other", "/tmp/other-project", 0.5)
    moved(session(sessions(home), "pi-elsewhere", project, 0.5), sessions(home) / "--elsewhere--")
    assert seance_continue(capsys, project) == str(newest)
    if node_oracle_available():
        assert pi_continue(project) is None
    assert seance_continue(capsys, home) is None  # nothing at all for this cwd: exit 1


def with_mtime_ns(path: Path, mtime_ns: int) -> Path:
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_files_in_the_same_millisecond_pi_opens_the_first_by_name(home: Path, capsys) -> None:
    """pi compares `mtime.getTime()` (Node rounds to the nearest millisecond) with a stable
    sort over the names libuv lists sorted: a tie goes to the first name, not the newer ns."""
    project = home / "project"
    second = 1_780_000_000 * 10**9
    first_by_name = with_mtime_ns(session(sessions(home), "a", project, 1), second + 100_000)
    with_mtime_ns(session(sessions(home), "b", project, 1), second + 400_000)  # the same ms
    assert_continues(capsys, project, first_by_name)
    rounded_up = with_mtime_ns(session(sessions(home), "c", project, 1), second + 499_999)  # ms + 1
    assert_continues(capsys, project, rounded_up)


def test_a_file_name_that_is_not_utf8_is_passed_over(home: Path, capsys) -> None:
    """Node reads such a name with U+FFFD in it, cannot open that path, and pi skips the file."""
    project = home / "project"
    ours = session(sessions(home), "ours", project, 10)
    named_badly = ours.with_name(os.fsdecode(b"\xff-newer.jsonl"))
    session(sessions(home), "newer", project, 1).rename(named_badly)
    assert_continues(capsys, project, ours)
