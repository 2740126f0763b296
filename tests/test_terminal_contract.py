"""fzf's terminal contract: the UI lives on `/dev/tty`, so pipes and redirections around it just work.

`echo x | seance pick` (keys still come from the terminal, the pipe is never read), `2>file`
(nothing is drawn into the file), `$(seance pick)` (only the answer is captured); and with no
terminal at all, or `TERM=dumb`, one line on stderr and exit 2 at once — never escape codes
into stderr and a hang.  The tmux tests run seance in a real terminal (a private tmux server).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_pick_cli import Terminal
from ui_sessions import PROJECT, Spec, make_root, session_path

from seance.core.settings import save_setting

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
needs_setsid = pytest.mark.skipif(shutil.which("setsid") is None, reason="setsid (util-linux) is not installed")
ESC = "\x1b"


class ShellTerminal(Terminal):
    """A tmux pane running one shell line around `seance`, so the test chooses the redirections."""

    def run(self, shell_line: str, term: str = "xterm-256color") -> None:
        seance = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "seance"))
        env = f"export SEANCE_CACHE_DIR={shlex.quote(str(self.workdir / 'cache'))} TERM={term}"
        script = f"cd {shlex.quote(str(self.workdir))} && {env} && {shell_line.format(seance=seance)}; echo $? > rc.txt"
        self.tmux("new-session", "-d", "-s", "pick", "-x", "120", "-y", "40", script)


@pytest.fixture(autouse=True)
def _children_threaded() -> None:
    """These rows include the standard fork (keys move over it): pi's threaded look, saved as
    the setting the command reads (the default hides child sessions)."""
    save_setting("children", "threaded")


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[ShellTerminal]:
    term = ShellTerminal(tmp_path, f"seance-tty-{os.getpid()}-{tmp_path.name}")
    yield term
    term.tmux("kill-server")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def picked(root: Path) -> str:
    """The session that Down, Down, Enter chooses in the standard root's project."""
    return str(session_path(root, Spec("s-named", PROJECT)))


@needs_tmux
def test_stdin_from_a_pipe_keys_still_come_from_the_terminal(shell: ShellTerminal, root: Path) -> None:
    shell.run(f"echo x | {{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT} > out.txt 2> err.txt")
    screen = shell.wait_for("5 sessions")  # the pipe's "x" did not become a query (it would filter)
    assert "of 5 sessions" not in screen
    shell.keys("Down", "Down", "Enter")
    shell.continue_missing_cwd()
    code, out = shell.result()
    assert (code, out) == (0, picked(root) + "\n")
    assert (shell.workdir / "err.txt").read_text() == ""


@needs_tmux
def test_stdin_closed_keys_still_come_from_the_terminal(shell: ShellTerminal, root: Path) -> None:
    """`<&-`: Python has no sys.stdin at all; Textual's driver asked it for a fd (a traceback)."""
    shell.run(f"{{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT} <&- > out.txt 2> err.txt")
    shell.wait_for("5 sessions")
    shell.keys("Down", "Down", "Enter")
    shell.continue_missing_cwd()
    assert shell.result() == (0, picked(root) + "\n")
    assert (shell.workdir / "err.txt").read_text() == ""


@needs_tmux
def test_stderr_to_a_file_gets_nothing_drawn_into_it(shell: ShellTerminal, root: Path) -> None:
    shell.run(f"{{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT} 2> err.txt > out.txt")
    shell.wait_for("5 sessions")  # drawn on the terminal, not into err.txt
    shell.keys("Down", "Down", "Enter")
    shell.continue_missing_cwd()
    assert shell.result() == (0, picked(root) + "\n")
    assert (shell.workdir / "err.txt").read_bytes() == b""


@needs_tmux
def test_command_substitution_captures_only_the_answer(shell: ShellTerminal, root: Path) -> None:
    pick = f"{{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT}"
    shell.run(f'answer=$({pick}); printf "[%s]" "$answer" > out.txt')
    shell.wait_for("5 sessions")
    shell.keys("Down", "Down", "Enter")
    shell.continue_missing_cwd()
    assert shell.result() == (0, f"[{picked(root)}]")


@needs_tmux
@pytest.mark.parametrize("command", [["pick"], []], ids=["pick", "browse"])
def test_term_dumb_is_a_clear_refusal_not_escape_codes(shell: ShellTerminal, root: Path, command: list[str]) -> None:
    args = " ".join([*command, "--root", shlex.quote(str(root))])
    shell.run(f"{{seance}} {args} > out.txt 2> err.txt", term="dumb")
    code, out = shell.result()
    err = (shell.workdir / "err.txt").read_text()
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "TERM=dumb" in err and ESC not in err


@needs_setsid
@pytest.mark.parametrize("command", [["pick"], [], ["--demo"]], ids=["pick", "browse", "demo"])
def test_no_terminal_at_all_exits_2_at_once_with_one_line(tmp_path: Path, root: Path, command: list[str]) -> None:
    """`setsid`: a new session with no controlling terminal, as under cron or a CI runner."""
    started = time.monotonic()
    result = subprocess.run(
        ["setsid", "-w", sys.executable, "-m", "seance", *command, "--root", str(root), "--cwd", PROJECT],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "SEANCE_CACHE_DIR": str(tmp_path / "cache"), "TERM": "xterm-256color"},
        timeout=60,  # before the fix this hung for good, drawing into stderr
        check=False,
    )
    elapsed = time.monotonic() - started
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("seance: no terminal"), result.stderr
    assert ESC not in result.stderr
    assert elapsed < 10, f"took {elapsed:.1f} s"  # a hang guard; ~0.1 s: refused before Textual is imported


@needs_tmux
def test_tree_view_on_the_terminal_hands_its_answer_to_command_substitution(shell: ShellTerminal, root: Path) -> None:
    session = shlex.quote(picked(root))
    shell.run(f'answer=$({{seance}} tree {session}); printf "[%s]" "$answer" > out.txt')
    shell.wait_for("Session Tree")
    shell.keys("Enter")
    shell.continue_missing_cwd()
    assert shell.result() == (0, f"[{picked(root)}]")


@needs_tmux
def test_sigterm_while_open_restores_the_terminal_and_exits_130(shell: ShellTerminal, root: Path) -> None:
    """`kill PID` / `timeout 60 seance pick`: SIGTERM's default action ended the process in
    application mode — the shell after it was left on the alternate screen, in raw mode, with
    mouse reporting and bracketed paste on.  It now leaves as Esc does: nothing printed, 130,
    the terminal as it was.  What the shell sees afterwards is recorded by the same pane."""
    pick = f"{{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT}"
    flags = "#{{alternate_on}} #{{mouse_any_flag}} #{{mouse_sgr_flag}}"
    shell.run(
        f"sh -c 'echo $$ > pid.txt; exec \"$@\"' sh {pick} > out.txt 2> err.txt; code=$?; stty -a > stty.txt; "
        f"tmux -L {shell.socket} display -p -t pick '{flags}' > flags.txt; head -n 1 > paste.txt; (exit $code)"
    )
    shell.wait_for("5 sessions")
    os.kill(int((shell.workdir / "pid.txt").read_text()), signal.SIGTERM)
    deadline = time.monotonic() + 20
    while not (shell.workdir / "flags.txt").exists() or not (shell.workdir / "flags.txt").read_text():
        assert time.monotonic() < deadline, shell.screen()
        time.sleep(0.1)
    shell.tmux("set-buffer", "PASTED")
    shell.tmux("paste-buffer", "-p", "-t", "pick")  # wrapped in ESC[200~ … ESC[201~ only if the pane still asks
    shell.keys("C-j")
    assert shell.result() == (130, "")
    assert (shell.workdir / "flags.txt").read_text().split() == ["0", "0", "0"]  # main screen, no mouse reporting
    modes = (shell.workdir / "stty.txt").read_text().replace(";", " ").split()
    assert "icanon" in modes and "echo" in modes  # cooked again, not raw
    assert (shell.workdir / "paste.txt").read_text() == "PASTED\n"  # bracketed paste off
    assert (shell.workdir / "err.txt").read_text() == ""


@needs_tmux
@pytest.mark.parametrize("around", ["2> err.txt", "< /dev/null 2> err.txt"], ids=["stderr-to-file", "stdin-null"])
def test_tree_pick_is_the_tree_view_whatever_stdin_and_stderr_are(
    shell: ShellTerminal, root: Path, around: str
) -> None:
    """`tree S --pick` chose between the UI and the text tree by stdin and stderr being a tty
    (the UI's streams before it moved to /dev/tty): with either redirected it printed the text
    tree where the caller reads the chosen entry's JSON."""
    session = shlex.quote(picked(root))
    shell.run(f"{{seance}} tree {session} --pick {around} > out.txt")
    shell.wait_for("Session Tree")
    shell.keys("Enter")
    shell.continue_missing_cwd()
    code, out = shell.result()
    assert code == 0 and json.loads(out)["path"] == picked(root)
    assert (shell.workdir / "err.txt").read_text() == ""


@needs_setsid
def test_tree_pick_without_a_terminal_exits_2_not_the_text_tree(tmp_path: Path, root: Path) -> None:
    result = subprocess.run(
        ["setsid", "-w", sys.executable, "-m", "seance", "tree", picked(root), "--pick"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "SEANCE_CACHE_DIR": str(tmp_path / "cache"), "TERM": "xterm-256color"},
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("seance: no terminal") and result.stderr.count("\n") == 1


@needs_tmux
def test_timeout_from_a_script_still_ends_a_picker_stopped_in_the_background(shell: ShellTerminal, root: Path) -> None:
    """`timeout 3 seance pick` in a script: `timeout` runs it in a process group of its own, in
    the background, so setting the terminal up stops it (SIGTTOU); at 3 s `timeout` sends
    SIGTERM and SIGCONT.  The default action ends it (124), as before seance handled SIGTERM;
    a handler that only the event loop would run left it stopped for good."""
    pick = f"{{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT}"
    shell.run(f"timeout 3 sh -c 'echo $$ > pid.txt; exec \"$@\"' sh {pick} > out.txt 2> err.txt")
    pid_file, rc_file = shell.workdir / "pid.txt", shell.workdir / "rc.txt"
    try:
        deadline = time.monotonic() + 25
        while not (rc_file.exists() and rc_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rc_file.exists() and rc_file.read_text().strip() == "124", "SIGTERM from timeout did not end seance"
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)  # (a picker left stopped: nothing else ends it)
            except (ProcessLookupError, ValueError):
                pass


HUNG_UP_PARENT = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGHUP, lambda *_: None)  # (pi survives its terminal's hang-up)
open("parent.txt", "w").write(str(os.getpid()))
child = subprocess.Popen(sys.argv[1:])  # in the foreground, as pi runs `/seance`
open("pid.txt", "w").write(str(child.pid))
child.wait()
open("child-rc.txt", "w").write(str(child.returncode))
time.sleep(10)
"""


@needs_tmux
def test_a_terminal_that_hangs_up_under_a_surviving_parent_ends_the_picker(shell: ShellTerminal, root: Path) -> None:
    """The kernel sends SIGHUP only to the session's leader: a parent that survives it (pi
    running `/seance`) leaves seance on a hung-up terminal, where Textual's input thread read
    end-of-file in a loop for ever (two such pickers were found spinning at 64% of a core
    each, hours after their terminals closed).  It ends now as SIGHUP would."""
    (shell.workdir / "parent.py").write_text(HUNG_UP_PARENT)
    pick = f"{{seance}} pick --root {shlex.quote(str(root))} --cwd {PROJECT}"
    shell.run(f"exec {shlex.quote(sys.executable)} parent.py {pick} > out.txt 2> err.txt")  # (the leader)
    shell.wait_for("Current Folder")  # (the picker's status line: the UI is up)
    pid = int((shell.workdir / "pid.txt").read_text())
    shell.tmux("kill-server")  # the terminal closes; only the parent gets SIGHUP
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _running(pid):
            time.sleep(0.2)
        assert not _running(pid), "the picker outlived its terminal"
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
    parent_rc = shell.workdir / "child-rc.txt"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not parent_rc.exists():
        time.sleep(0.1)
    assert parent_rc.read_text() == str(-signal.SIGHUP), "ended by SIGHUP, as its default action"
    assert (shell.workdir / "out.txt").read_text() == ""
    os.kill(int((shell.workdir / "parent.txt").read_text()), signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()[:1] != "Z"
    )
