"""Snapshots at the small sizes pi users try first (60×20, 80×24): the list, the tree and help.

Fixed theme, clock and data (the list's standard root, the tree's fixture session); no blink,
animation or watcher.  What each proves is written next to it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_ui_tree import TreeApp, write_session
from test_ui_tree import settle as settle_tree
from ui_harness import picker_app, settled_after
from ui_sessions import make_root

from seance.app.screens.session_list import PickerOptions

SIZES = {"60x20": (60, 20), "80x24": (80, 24)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def _list_then(*keys: str):
    return settled_after(*keys)


def _tree_then(*keys: str):
    return settled_after(*keys, settle_with=settle_tree)


@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_list(snap_compare, root: Path, size: str) -> None:
    """The browser: the footer keeps Enter, Tab, Sort, Tree and F1 Help (the rest give way)."""
    app = picker_app(root, options=PickerOptions(watch=False, enter="tree"))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_list_then())


@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_list_help(snap_compare, root: Path, size: str) -> None:
    """Help fits the terminal, scrolls, and wraps each description under its own column."""
    assert snap_compare(picker_app(root), terminal_size=SIZES[size], run_before=_list_then("f1"))


def test_list_help_scrolled_to_the_end_at_60x20(snap_compare, root: Path) -> None:
    """…and the rows after Ctrl+Z are reachable."""
    assert snap_compare(picker_app(root), terminal_size=(60, 20), run_before=_list_then("f1", "end"))


@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_tree(snap_compare, tmp_path: Path, size: str) -> None:
    """The tree: the first prompt as the title, pi's key line (F1 early), ├⊟/└⊟ at the branch point."""
    app = TreeApp(write_session(tmp_path / "session.jsonl"))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_tree_then())


@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_tree_help(snap_compare, tmp_path: Path, size: str) -> None:
    app = TreeApp(write_session(tmp_path / "session.jsonl"))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_tree_then("f1"))


@pytest.fixture
def utc(monkeypatch):
    """pi shows label times in local time: UTC here, whatever the machine's zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_tree_label_times(snap_compare, tmp_path: Path, utc) -> None:
    """Shift+T: the label's time after it, `+label time` in the status line."""
    app = TreeApp(write_session(tmp_path / "session.jsonl"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_tree_then("T"))
