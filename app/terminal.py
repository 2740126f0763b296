"""The UI's terminal is the controlling terminal, `/dev/tty`, never stdin, stdout or stderr (fzf's contract).

So `echo x | seance pick` (stdin is a pipe), `seance pick 2>log` (stderr is a file) and
`$(seance pick)` (stdout is a pipe) all work: keys are read from `/dev/tty`, the screen is drawn
on it and sized from it, and the three standard streams stay the caller's — stdout receives only
the answer, stderr only seance's own one-line messages (and a crash report, if it comes to that),
and the pipe's bytes on stdin are never read.  A query comes in through `--query`, as with fzf.

How: Textual's `LinuxDriver` reads keys from `sys.__stdin__`'s fd, writes to `sys.__stderr__`
and sizes the screen from stdout (`shutil.get_terminal_size`).  `TerminalDriver` is that driver
with those three pointed at one `/dev/tty` descriptor instead.  The other way — `dup2` the tty
onto fds 0, 1 and 2 while the UI runs — was rejected: Textual's crash report and anything
printed meanwhile would then land on the terminal instead of the caller's `2>log`, and the
descriptors the caller gave us would be swapped under any thread that holds them.

No controlling terminal (a cron job, `setsid`, a CI runner) or `TERM=dumb`: `TerminalUnavailable`,
raised before anything is drawn — the CLI prints its one line and exits 2 at once, instead of
drawing escape codes into whatever stderr is and waiting forever for keys that cannot come.

A terminal that hangs up while the UI runs without a SIGHUP reaching seance (the kernel signals
only the session's leader: pi, which survives it, running `/seance` in a terminal that was
closed) ends it as SIGHUP would: Textual's input thread read end-of-file in a loop for ever,
60% of a core, found hours later (`TerminalDriver._watch_hangup`).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from seance.core.errors import SessionError

TTY_PATH = "/dev/tty"
HANGUP_POLL = 1.0  # seconds between two looks at whether the terminal is still there
HUNG_UP = frozenset({errno.EIO, errno.ENXIO})  # (what a hung-up terminal answers)
_HINT = "`seance ls` lists sessions without one"


class TerminalUnavailable(SessionError):
    """The UI cannot run: no controlling terminal, or one that cannot draw it (exit 2)."""


def check_terminal(environ: dict[str, str] | None = None) -> None:
    """Raise `TerminalUnavailable` unless a UI can run here; opens and closes `/dev/tty`."""
    with controlling_terminal(environ):
        pass


@contextmanager
def controlling_terminal(environ: dict[str, str] | None = None) -> Iterator[int]:
    """Open `/dev/tty` for reading and writing; yield its fd; close it afterwards."""
    term = (os.environ if environ is None else environ).get("TERM", "")
    if term == "dumb":
        raise TerminalUnavailable(f"TERM=dumb: the picker needs a terminal that can draw a screen; {_HINT}")
    try:
        fd = os.open(TTY_PATH, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        reason = error.strerror or str(error)
        raise TerminalUnavailable(f"no terminal to draw on ({TTY_PATH}: {reason}); {_HINT}") from None
    if not os.isatty(fd):  # pragma: no cover - /dev/tty is a terminal wherever it opens
        os.close(fd)
        raise TerminalUnavailable(f"{TTY_PATH} is not a terminal; {_HINT}")
    try:
        yield fd
    finally:
        os.close(fd)


class _TerminalStdin:
    """What `LinuxDriver.__init__` reads from `sys.__stdin__`: a fd, and whether it is a tty."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return True


def driver_for(fd: int) -> type[Any]:
    """A Textual driver class (for `App(driver_class=…)` / `app.driver_class`) bound to terminal `fd`."""
    from textual.drivers.linux_driver import LinuxDriver

    class TerminalDriver(LinuxDriver):
        """`LinuxDriver` reading keys from, drawing on and sized from `fd`; stdin/stdout/stderr untouched."""

        def __init__(self, app: Any, **options: Any) -> None:
            # LinuxDriver.__init__ asks sys.__stdin__ for its fd: None when stdin is closed
            # (`seance pick <&-`).  Let it ask the terminal instead, for that call only.
            # (`sys.__stdin__` is Final to type checkers; swapping it for one call is the point here)
            stdin, sys.__stdin__ = sys.__stdin__, _TerminalStdin(fd)  # type: ignore[misc, assignment]
            try:
                super().__init__(app, **options)
            finally:
                sys.__stdin__ = stdin  # type: ignore[misc]
            self.fileno = fd
            self.input_tty = True
            # utf-8 whatever the locale: the screen is box-drawing characters; the fd stays ours.
            self._file = open(fd, "w", encoding="utf-8", errors="replace", closefd=False)  # type: ignore[assignment]  # noqa: SIM115

        def start_application_mode(self) -> None:
            super().start_application_mode()
            self._watching = threading.Event()
            threading.Thread(
                target=self._watch_hangup, args=(self._watching,), name="seance-hangup", daemon=True
            ).start()

        def stop_application_mode(self) -> None:
            self._stop_watching()
            super().stop_application_mode()

        def _stop_watching(self) -> None:
            watching: threading.Event | None = getattr(self, "_watching", None)
            if watching is not None:
                watching.set()

        def _watch_hangup(self, stopped: threading.Event) -> None:
            """End the process as SIGHUP's default action would once the terminal has hung up
            (see the module's docstring): nothing can be drawn or read any more.  Stopped
            with the application mode (before the terminal's descriptor is closed)."""
            while not stopped.wait(HANGUP_POLL):
                try:
                    os.tcgetpgrp(fd)
                except OSError as error:
                    if error.errno in HUNG_UP and not stopped.is_set():
                        os.kill(os.getpid(), signal.SIGHUP)
                    return

        def _get_terminal_size(self) -> tuple[int, int]:
            try:
                columns, lines = os.get_terminal_size(fd)
            except OSError:
                return 80, 25
            return columns or 80, lines or 25

        def close(self) -> None:
            self._stop_watching()
            super().close()
            if self._file is not None:
                self._file.close()

    return TerminalDriver
