"""A picker whose index another process empties (`seance index --rebuild`, killed or not yet
done) indexes the sessions it lists that the index lost, so its full-text search finds them.

`Catalog.rebuild_index` is what `seance index --rebuild` runs first (`Index.reset`: the
tables emptied in one transaction, in place: the file keeps its identity, so
`Index.replaced()` does not see it); a rebuild killed right after it leaves the index empty.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from ui_harness import picker_app, settle, wait_until
from ui_sessions import PROJECT, Spec, make_root

from seance.app.screens import session_list
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


@contextlib.asynccontextmanager
async def _searched_while_locked(
    pilot: Any, root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, text: str = PHRASE
) -> AsyncIterator[Any]:
    """The picker settled, its index emptied by another seance that still holds its write lock
    (a rebuild), and `text` searched: the status line says sessions are not in the index."""
    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    await settle(pilot, 4)
    screen = pilot.app.screen
    _emptied_elsewhere(root, cache)
    with _write_locked(cache):
        await pilot.press(*text)
        await settle(pilot, 4)
        await wait_until(pilot, lambda: "not in the full-text index" in screen.status.message)
        yield screen


# -- after review ---------------------------------------------------------------------------


async def test_sessions_not_indexable_while_locked_are_indexed_once_the_lock_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild in another terminal held the lock when the picker tried, then was killed
    (Ctrl-C): nothing stops indexing them now, yet the picker never tries again."""
    monkeypatch.setattr(session_list, "UNINDEXED_RETRY_S", 1.0)
    root, cache = _root(tmp_path), tmp_path / "cache"
    app = picker_app(root, cache_dir=cache)
    async with app.run_test(size=(160, 40)) as pilot:
        async with _searched_while_locked(pilot, root, cache, monkeypatch) as screen:
            pass
        # the other seance is gone: the lock is free, and the retry's while has passed
        await pilot.pause(1.2)
        await pilot.press("backspace", '"')
        await settle(pilot, 4)
        await pilot.press(" ", "backspace")
        await settle(pilot, 4)
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 1)
        assert [row.summary.id for row in screen.session_list.rows] == ["s-first"], screen.status.message


async def test_the_incomplete_search_note_goes_when_the_query_is_cleared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = _root(tmp_path), tmp_path / "cache"
    app = picker_app(root, cache_dir=cache)
    async with (
        app.run_test(size=(160, 40)) as pilot,
        _searched_while_locked(pilot, root, cache, monkeypatch) as screen,
    ):
        screen.search_input.value = ""
        await settle(pilot, 4)
        assert len(screen.session_list.rows) == 3
        assert "Search incomplete" not in screen.status.message, screen.status.message


async def test_a_deleted_session_is_no_incomplete_search(tmp_path: Path) -> None:
    """Watcher off (picker_app's default, `--no-watch`): a listed session deleted and pruned
    from the shared index by another seance's refresh is said to make every search
    incomplete, as an error, for the picker's life."""
    root, cache = _root(tmp_path), tmp_path / "cache"
    app = picker_app(root, cache_dir=cache)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, 4)
        screen = app.screen
        gone = next(row.summary.path for row in screen.session_list.rows if row.summary.id == "s-third")
        Path(gone).unlink()
        other = Catalog([root], cache_dir=cache)
        try:
            other.refresh()
        finally:
            other.close()
        await pilot.press(*PHRASE)
        await settle(pilot, 4)
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 1)
        await settle(pilot, 4)
        assert [row.summary.id for row in screen.session_list.rows] == ["s-first"]
        assert "Search incomplete" not in screen.status.message, (screen.status.message, screen.status.message_is_error)


async def test_the_note_does_not_replace_the_undo_hint_of_a_deletion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctrl+d while a query is typed and the index lost the sessions (locked, or still being
    indexed again): the rows' new search says "Search incomplete" over "ctrl+z to undo"."""
    for name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "env" / name))
    for name in ("SEANCE_CACHE_DIR", "SEANCE_DATA_DIR", "SEANCE_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "env" / name))
    root, cache = _root(tmp_path), tmp_path / "cache"
    app = picker_app(root, cache_dir=cache)
    async with app.run_test(size=(160, 40)) as pilot:
        async with _searched_while_locked(pilot, root, cache, monkeypatch, "the") as screen:
            assert len(screen.session_list.rows) >= 1
        await pilot.press("ctrl+d")
        await settle(pilot, 2)
        if type(app.screen).__name__ == "ConfirmScreen":  # ("delete?" / "in use: delete anyway?")
            await pilot.press("y")
        await settle(pilot, 6)
        await wait_until(
            pilot, lambda: "trash" in screen.status.message or "Search incomplete" in screen.status.message
        )
        await settle(pilot, 4)
        trashed = sorted(p.name for p in (tmp_path / "env").rglob("*.jsonl"))
        listed = sorted(row.summary.id for row in screen.session_list.rows)
        assert "ctrl+z to undo" in screen.status.message, (
            screen.status.message,
            type(app.screen).__name__,
            trashed,
            listed,
        )


def _race_root(tmp_path: Path) -> Path:
    specs = [Spec("s-first", PROJECT, ("fix the login page", "plan the quokka migration"), timedelta(minutes=5))]
    specs += [Spec(f"s-other-{n}", PROJECT, (f"other work {n}",), timedelta(hours=n + 1)) for n in range(5)]
    return make_root(tmp_path, specs)


def test_a_session_indexed_again_while_a_search_runs_is_found_by_the_next_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = _race_root(tmp_path), tmp_path / "cache"
    picker = Catalog([root], cache_dir=cache)
    try:
        within = sorted(summary.path for summary in picker.refresh())
        first = next(path for path in within if "s-first" in path)
        # another seance: `index --rebuild`, killed after it indexed all but s-first
        other = Catalog([root], cache_dir=cache)
        try:
            other.rebuild_index()
            for path in within:
                if path != first:
                    other.summary(Path(path))
        finally:
            other.close()
        query = parse_query(PHRASE)

        answered: list[list[str]] = []
        original = Index._runs_of

        def racing(self: Index, asked, ids, state):  # the picker's index-again worker ends just here
            if not answered:
                worker = threading.Thread(target=lambda: answered.append(picker.index_again(within)))
                worker.start()
                worker.join()
            return original(self, asked, ids, state)

        monkeypatch.setattr(Index, "_runs_of", racing)
        lost = picker.text_hits(query, within=within)
        assert answered == [[]], answered  # the worker indexed s-first
        assert first not in lost and list(lost.unindexed) == [first]  # type: ignore[attr-defined]

        again = picker.text_hits(query, within=within)  # the search the picker asks again
        assert list(again.unindexed) == []  # type: ignore[attr-defined]  # (so the note goes)
        assert first in again, "s-first indexed, yet not found (a term answer of the older snapshot)"
    finally:
        picker.close()
