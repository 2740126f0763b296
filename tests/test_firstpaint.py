"""The warm picker's first screen from the index (core/firstpaint.py): the project as last
indexed, files gone since left out, files new since read from their prefix, big projects read
only as far as the first screens (and the parents of what they show)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from ui_sessions import OTHER, PROJECT, Spec, make_root, session_path, write_session

from seance.core import listing
from seance.core.catalog import Catalog
from seance.core.firstpaint import known_session, stored_listing


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every session file's bytes and mtime: what browsing must never change."""
    return {str(path): (path.read_bytes(), path.stat().st_mtime_ns) for path in sorted(root.rglob("*.jsonl"))}


def paths(summaries) -> list[str]:
    return [summary.path for summary in summaries]


def test_nothing_stored_yet_cannot_say(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    assert catalog.stored(PROJECT) is None
    assert not known_session(catalog)


def test_the_stored_project_is_the_exact_listing_of_an_unchanged_root(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    before = snapshot(root)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    exact = catalog.exact(PROJECT)

    again = Catalog([root], cache_dir=tmp_path / "cache")  # a new launch
    stored = again.stored(PROJECT)
    assert stored is not None
    assert paths(stored) == paths(exact)
    assert stored == exact, "the same summaries, decoded from the index"
    assert stored.total == len(exact) == 5
    everything = again.stored(None)
    assert everything is not None and everything == catalog.exact(None), "every project alike"
    assert everything.total == 8
    assert known_session(again)
    assert snapshot(root) == before, "nothing wrote a session file"


def test_gone_new_and_changed_files_since_the_index(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    session_path(root, Spec("s-old", PROJECT)).unlink()
    new = write_session(root, Spec("s-new", PROJECT, ("started after the index",), timedelta(minutes=1)))
    changed = write_session(root, Spec("s-docs", PROJECT, ("update the README", "more", "and more"), timedelta(days=2)))
    write_session(root, Spec("s-elsewhere", OTHER, ("another project's new session",), timedelta(minutes=2)))

    stored = Catalog([root], cache_dir=tmp_path / "cache").stored(PROJECT)
    assert stored is not None
    listed = {summary.id: summary for summary in stored}
    assert "s-old" not in listed, "a file gone since is left out"
    assert listed["s-new"].path == str(new) and not listed["s-new"].exact, "a new file: its 4 KB prefix"
    assert "s-elsewhere" not in listed, "another project's new file is not this project's"
    assert listed["s-docs"].message_count == 4, "a changed file shows its indexed state until the refresh"
    assert stored.total == len(stored) == 5
    assert paths(stored)[0] == str(new), "newest first"

    exact = Catalog([root], cache_dir=tmp_path / "cache").exact(PROJECT)
    assert next(summary for summary in exact if summary.path == str(changed)).message_count == 6


def test_a_big_project_reads_only_its_newest_sessions_and_their_parents(tmp_path: Path) -> None:
    specs = [Spec(f"s-{number:03d}", PROJECT, (f"task {number}",), timedelta(hours=number)) for number in range(40)]
    specs.append(Spec("s-fork", PROJECT, ("a fork of an old session",), timedelta(minutes=1), parent="s-039"))
    root = make_root(tmp_path, specs)
    exact = Catalog([root], cache_dir=tmp_path / "cache").exact(PROJECT)

    stored = stored_listing(Catalog([root], cache_dir=tmp_path / "cache"), PROJECT, limit=10)
    assert stored is not None
    assert stored.total == 41
    assert paths(stored)[:10] == paths(exact)[:10]
    assert "s-039" in {summary.id for summary in stored}, "the fork's parent, however old, is read too"
    assert len(stored) == 11
    for mode in ("hidden", "threaded", "flat"):  # the first screen is ordered as the full listing will be
        first = [(row.summary.path, row.prefix, row.children) for row in listing.arrange(stored, "threaded", mode)]
        full = [(row.summary.path, row.prefix, row.children) for row in listing.arrange(exact, "threaded", mode)]
        assert first[:5] == full[:5], mode


def test_known_session_needs_a_file_still_as_indexed(tmp_path: Path) -> None:
    root = make_root(tmp_path, [Spec("s-only", PROJECT)])
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    assert known_session(Catalog([root], cache_dir=tmp_path / "cache"))
    assert not known_session(Catalog([tmp_path / "elsewhere"], cache_dir=tmp_path / "cache")), "other roots"
    only = session_path(root, Spec("s-only", PROJECT))
    os.utime(only, ns=(1, 1))
    assert not known_session(Catalog([root], cache_dir=tmp_path / "cache")), "changed: discovery decides"


def test_a_prefetched_answer_is_taken_once(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.prefetch_stored(PROJECT)
    assert catalog.prefetched(PROJECT) and not catalog.prefetched(OTHER)
    first = catalog.stored(PROJECT)
    assert first is not None and len(first) == 5
    assert not catalog.prefetched(PROJECT)
    assert catalog.stored(PROJECT) == first, "made again when asked again"


def test_a_listing_made_only_in_case_is_not_made_for_a_big_index(tmp_path: Path) -> None:
    """`most`: the picker makes the other scope's stored rows ahead (in case of a Tab) only
    for an index of at most that many files; asked without it (the Tab came), it answers."""
    root = make_root(tmp_path)
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    assert catalog.stored(None, most=7) is None, "8 files: more than 7"
    small = catalog.stored(None, most=8)
    assert small is not None and small.total == 8
    assert catalog.stored(None) == small


def test_a_refresh_after_a_whole_stored_listing_returns_its_summaries_for_unchanged_rows(tmp_path: Path) -> None:
    """The picker lists a scope whole from the index before its exact refresh: that refresh
    reuses the summaries the stored listing decoded for rows unchanged since (the picker then
    keeps its listing by identity), and reads a file changed since anew."""
    root = make_root(tmp_path)
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    catalog = Catalog([root], cache_dir=tmp_path / "cache")  # a new launch
    whole = catalog.stored(None, whole=True)
    assert whole is not None and len(whole) == whole.total == 8
    changed = write_session(root, Spec("s-docs", PROJECT, ("update the README", "more", "and more"), timedelta(days=2)))
    exact = catalog.refresh()
    assert {summary.path for summary in exact} == {summary.path for summary in whole}
    by_path = {summary.path: summary for summary in whole}
    for summary in exact:
        if summary.path == str(changed):
            assert summary is not by_path[summary.path] and summary.message_count == 6, "read again"
        else:
            assert summary is by_path[summary.path], "the stored listing's own summary"
    assert catalog.refresh() == exact, "taken once: the next refresh decodes as before"


def test_the_whole_listing_after_the_first_screens_comes_from_their_read(tmp_path: Path, monkeypatch) -> None:
    """The picker's other scope: its first screens (`stored(..., most=)`), then the whole of it
    (`whole=True`) from the same read of the index: the first screens' summaries are the same
    objects, and the whole listing is what a fresh whole listing gives, a session created or
    deleted between the two listings included (its directory, changed, is listed again)."""
    from seance.core import firstpaint

    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 3)
    root = make_root(tmp_path)
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    catalog = Catalog([root], cache_dir=tmp_path / "cache")  # a new launch
    first = catalog.stored(None, most=100)
    assert first is not None and first.total == 8 and len(first) < 8
    # between the two listings: one session created, one deleted
    created = write_session(root, Spec("s-between", OTHER, ("started meanwhile",), timedelta(minutes=1)))
    gone = session_path(root, Spec("s-old", PROJECT))
    gone.unlink()
    reads: list[object] = []
    read_rows = type(catalog.index).sessions_in

    def counted(index, cwds):  # type: ignore[no-untyped-def]
        reads.append(cwds)
        return read_rows(index, cwds)

    monkeypatch.setattr(type(catalog.index), "sessions_in", counted)
    whole = catalog.stored(None, most=100, whole=True)
    assert reads == [], "the whole listing read no index row again"
    assert whole is not None and whole.total == len(whole) == 8
    fresh = stored_listing(Catalog([root], cache_dir=tmp_path / "cache"), None, 10**9)
    assert fresh is not None and paths(whole) == paths(fresh) and whole == fresh
    assert str(created) in paths(whole) and str(gone) not in paths(whole)
    by_path = {summary.path: summary for summary in whole}
    assert all(by_path[summary.path] is summary for summary in first if summary.path in by_path), "decoded once"
