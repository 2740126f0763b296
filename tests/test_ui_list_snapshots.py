"""Snapshots of the session list: fixed size, theme, clock and data; no blink, animation or watcher."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_harness import picker_app, settled_after
from ui_sessions import OTHER, Spec, make_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def test_current_folder(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=settled_after())


def test_search_highlights_title_matches(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=settled_after(*"auth"))


def test_full_text_hit_snippet(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=settled_after(*"zebra"))


def test_all_projects_with_literal_markup(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=settled_after("tab", "ctrl+s"))


def test_delete_confirm_modal(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=settled_after("down", "down", "ctrl+d"))


def test_rename_modal(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=settled_after("down", "down", "ctrl+r"))


def test_help(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 30), run_before=settled_after("f1"))


def test_narrow_terminal_hides_the_preview(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(80, 20), run_before=settled_after("ctrl+p"))


def test_empty_current_folder(snap_compare, tmp_path: Path) -> None:
    root = make_root(tmp_path, [Spec("elsewhere", OTHER)])
    assert snap_compare(picker_app(root), terminal_size=(100, 16), run_before=settled_after())


def test_invalid_regex_message(snap_compare, root: Path) -> None:
    assert snap_compare(picker_app(root), terminal_size=(120, 16), run_before=settled_after(*"re:(x"))
