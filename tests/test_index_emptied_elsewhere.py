"""A picker whose index another process empties (`seance index --rebuild`, killed or not yet
done) indexes the sessions it lists that the index lost, so its full-text search finds them.

`Catalog.rebuild_index` is what `seance index --rebuild` runs first (`Index.reset`: the
tables emptied in one transaction, in place: the file keeps its identity, so
`Index.replaced()` does not see it); a rebuild killed right after it leaves the index empty.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from ui_harness import picker_app, settle, wait_until
from ui_sessions import PROJECT, Spec, make_root

from seance.core.catalog import Catalog
from seance.core.index import DB_NAME, Index
from seance.core.search import parse_query

PHRASE = '"quokka migration"'  # in a later message only: no title tier finds it, the index must


def _root(tmp_path: Path) -> Path:
    return make_root(
        tmp_path,
        [
            Spec("s-first", PROJECT, ("fix the login page", "plan the quokka migration"), timedelta(minutes=5)),
            Spec("s-second", PROJECT, ("write the notes",), timedelta(hours=1)),
            Spec("s-third", PROJECT, ("update the README",), timedelta(days=2)),
        ],
    )


def _emptied_elsewhere(root: Path, cache: Path) -> None:
    """What `seance index --rebuild` does first, from another catalog (its own connection), then
    nothing: a rebuild killed before it indexed a file."""
    other = Catalog([root], cache_dir=cache)
    try:
        other.rebuild_index()
    finally:
        other.close()


async def test_a_search_after_another_process_emptied_the_index_finds_the_session(tmp_path: Path) -> None:
    root, cache = _root(tmp_path), tmp_path / "cache"
    app = picker_app(root, cache_dir=cache)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, 4)
        screen = app.screen
        assert len(screen.session_list.rows) == 3
        _emptied_elsewhere(root, cache)
        await pilot.press(*PHRASE)
        await settle(pilot, 4)
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 1)
        await settle(pilot, 2)
        assert [row.summary.id for row in screen.session_list.rows] == ["s-first"], screen.status.message


def test_the_index_names_the_listed_sessions_it_lost_and_indexes_them_again(tmp_path: Path) -> None:
    """`IndexHits.unindexed`: the paths a search was asked about that the index holds no file
    of; `Catalog.index_again` indexes them, text and all, and answers what it could not (a
    file gone since)."""
    root, cache = _root(tmp_path), tmp_path / "cache"
    catalog = Catalog([root], cache_dir=cache)
    try:
        within = sorted(summary.path for summary in catalog.refresh())
        query = parse_query(PHRASE)
        found = catalog.text_hits(query, within=within)
        assert len(found) == 1 and found.unindexed == []  # type: ignore[attr-defined]
        _emptied_elsewhere(root, cache)
        lost = catalog.text_hits(query, within=within)
        assert len(lost) == 0 and sorted(lost.unindexed) == within  # type: ignore[attr-defined]
        gone = next(path for path in within if "s-third" in path)
        Path(gone).unlink()
        assert catalog.index_again(within) == [gone]
        again = catalog.text_hits(query, within=within)
        assert [path for path in within if path in again] == [next(path for path in within if "s-first" in path)]
        assert again.unindexed == [gone]  # type: ignore[attr-defined]
    finally:
        catalog.close()


@contextlib.contextmanager
def _write_locked(cache: Path) -> Iterator[None]:
    """Another seance holding the index's write lock (a long transaction) meanwhile."""
    holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_sessions_the_picker_cannot_index_again_are_said_and_not_tried_again_and_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index emptied, then locked by another seance for longer than a write waits: the
    sessions cannot be indexed again, so the status line says the search is incomplete, and
    the picker does not try again on every search (each would read them all)."""
    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    asked: list[int] = []
    index_again = Catalog.index_again

    def counted(self: Catalog, paths, cancel=None):  # (index_again's own signature)
        asked.append(len(paths))
        return index_again(self, paths, cancel)

    monkeypatch.setattr(Catalog, "index_again", counted)
    root, cache = _root(tmp_path), tmp_path / "cache"
    app = picker_app(root, cache_dir=cache)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, 4)
        screen = app.screen
        _emptied_elsewhere(root, cache)
        with _write_locked(cache):
            await pilot.press(*PHRASE)
            await settle(pilot, 4)
            await wait_until(pilot, lambda: "not in the full-text index" in screen.status.message)
            assert screen.status.message == "Search incomplete: 3 sessions not in the full-text index"
            assert screen.status.message_is_error and len(screen.session_list.rows) == 0
            await pilot.press("backspace", '"')
            await settle(pilot, 4)
            assert asked == [3]
            assert screen.status.message == "Search incomplete: 3 sessions not in the full-text index"
