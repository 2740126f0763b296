"""A label edited in seance's tree screen is what pi's own SessionManager reads back.

The session is written by pi (the oracle), copied to a temp dir, labelled through the screen
(Shift+L, type, Enter), and re-opened with pi's real `SessionManager.open` (node,
tests/oracle/read_labels.mjs): the same label on the same entry, every other label intact,
and pi's leaf equal to seance's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import node_oracle_available, run_node
from test_ui_tree import TreeApp, model_of, settle

from seance.app.screens.session_tree import SessionTreeScreen
from seance.core.session import load_session

pytestmark = pytest.mark.skipif(
    not node_oracle_available(), reason="node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle"
)


def pi_reads(path: Path) -> dict:
    (record,) = json.loads(run_node("read_labels.mjs", str(path)))
    assert record["labels"] == record["treeLabels"]
    return record


def _branchy_session(pi_oracle: Path, tmp_path: Path) -> Path:
    """A copy of a pi-written session with branches and at least one label."""
    for record in json.loads((pi_oracle / "expected.json").read_text())["sessions"]:
        tree = record["tree"]
        branched = len({node["parentId"] for node in tree}) < len(tree)
        if branched and any(node["label"] for node in tree) and len(tree) >= 10:
            copy = tmp_path / Path(record["path"]).name
            shutil.copyfile(record["path"], copy)
            return copy
    pytest.skip("the oracle wrote no labelled session with branches")


async def _label_through_screen(path: Path, moves: tuple[str, ...], text: str | None) -> str:
    """Open the screen, move, Shift+L, replace the label with `text` (None: clear), Enter."""
    app = TreeApp(path)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        await pilot.press(*moves)
        target = model_of(app).selected_id
        assert target is not None
        await pilot.press("L")
        await pilot.pause()
        field = app.screen.query_one("#seance-prompt-input")
        field.value = ""
        if text:
            await pilot.press(*text)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)
        assert not [note for severity, note in app.notes if severity == "error"]
    return target


async def test_label_set_in_seance_is_read_back_by_pi(pi_oracle: Path, tmp_path: Path) -> None:
    path = _branchy_session(pi_oracle, tmp_path)
    before = pi_reads(path)
    target = await _label_through_screen(path, ("up", "up", "up"), "seance ✨ mark")
    after = pi_reads(path)
    assert after["labels"] == {**before["labels"], target: "seance ✨ mark"}
    assert after["leafId"] == load_session(path).leaf_id  # the label entry became the leaf, for both
    assert load_session(path).tree.labels == after["labels"]


async def test_label_cleared_in_seance_is_cleared_for_pi(pi_oracle: Path, tmp_path: Path) -> None:
    path = _branchy_session(pi_oracle, tmp_path)
    before = pi_reads(path)
    target = await _label_through_screen(path, ("ctrl+l", "end"), None)  # the last labelled row
    assert target in before["labels"]
    after = pi_reads(path)
    expected = dict(before["labels"])
    expected.pop(target)
    assert after["labels"] == expected
    assert load_session(path).tree.labels == after["labels"]
