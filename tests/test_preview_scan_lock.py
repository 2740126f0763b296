"""`_scan_of` holds `_scan_lock` while it makes a scan; a session let go by the
cyclic collector then (a collection runs at any allocation, in the thread that allocates)
runs its finalizer `_forget` in that same thread, which takes `_scan_lock` again: were the
lock not reentrant, the worker would hang for good, and every later preview with a query
wait on the lock behind it."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from test_ui_preview_match import chatter, message, text, write

from seance.app.widgets import context_preview as cp
from seance.core.session import read_session


def test_a_session_collected_while_a_scan_is_made_does_not_deadlock(tmp_path: Path, monkeypatch) -> None:
    old = read_session(write(tmp_path / "a.jsonl", message("user", text("zebra")), *chatter(5)))
    new = read_session(write(tmp_path / "b.jsonl", message("user", text("zebra")), *chatter(5)))
    cp._scan_of(old, cp.DEFAULT)  # kept, with `_forget` as `old`'s finalizer
    cycle: list[object] = [old]
    cycle.append(cycle)  # (a screen that held the session: Textual's DOM is cyclic)
    del old, cycle  # garbage now, freed at the next collection

    real = cp.context_frame

    def frame(*args):  # a collection that happens to run while the scan is made
        gc.collect()
        return real(*args)

    monkeypatch.setattr(cp, "context_frame", frame)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (cp._scan_of(new, cp.DEFAULT), done.set()), daemon=True)
    thread.start()
    thread.join(5)
    assert done.is_set(), "deadlocked: _forget waits for the _scan_lock its own thread holds"
    assert cp._scan is not None and cp._scan.session() is new
