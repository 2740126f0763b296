"""The tree screen's first frame comes before its background work (Pilot, real Textual).

The search index is a pass over every entry in a worker thread; started before the first
rows are drawn, it holds the GIL while the event loop waits for it at every turn, and on a
huge session the rows appear tenths of a second later (bench/huge.py's tree screen row).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from test_ui_tree import SIZE, settle, write_session

from seance.app.app import SeanceApp
from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.tree_model import TreeModel
from seance.app.widgets.tree_view import TreeView

ENTRIES = 20_000


def _custom_line(index: int) -> bytes:
    parent = f"x{index - 1}" if index else "aA2"
    entry = {"type": "custom", "id": f"x{index}", "parentId": parent, "customType": "ext", "data": "d" * 200}
    return orjson.dumps(entry) + b"\n"


async def test_the_search_index_starts_after_the_first_rows_are_drawn(tmp_path: Path, monkeypatch: Any) -> None:
    drawn: list[int] = []  # (a row of the model drawn)
    drawn_when_started: list[bool] = []
    render_line, prepare = TreeView.render_line, TreeModel.prepare_search

    def render_line_recorded(view: TreeView, y: int) -> Any:
        if view.model is not None and view.model.rows:
            drawn.append(y)
        return render_line(view, y)

    def prepare_recorded(model: TreeModel, stop: Any = None) -> bool:
        if model._search_texts is None:
            drawn_when_started.append(bool(drawn))
        return prepare(model, stop)

    monkeypatch.setattr(TreeView, "render_line", render_line_recorded)
    monkeypatch.setattr(TreeModel, "prepare_search", prepare_recorded)
    path = write_session(tmp_path / "session.jsonl")
    with path.open("ab") as handle:  # (a longer chain under the leaf: a load that takes a while)
        handle.write(b"".join(_custom_line(index) for index in range(ENTRIES)))
    app = SeanceApp(lambda: SessionTreeScreen(path, standalone=True, confirm_missing_cwd=False))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionTreeScreen) and screen.model is not None
        assert screen.model._search_texts is not None, "the index was made in the background"
        assert drawn_when_started == [True], "the index started before any row was drawn"
