"""The kept rows and every session's objects brought up to date ahead of the next query
(`Catalog.refresh_kept`, `indexquery.refresh_kept`: what the resident watcher does once the
files are quiet after an agent's append).  Real files, a real index: after it, the query
takes the path of a word asked on unchanged files (the kept rows and the stored objects, as
they are: no row checked again, no object read) and prints a fresh cache's bytes; without
it, the same query updates them itself (the spy sees it)."""

from __future__ import annotations

import time
import zlib
from pathlib import Path

import pytest
from query_harness import fresh_answer, kept_cache, ls_json
from write_harness import append_user_message

from seance.core import catalog as catalog_module
from seance.core.catalog import Catalog
from seance.core.discovery import discover
from seance.core.generate import generate_corpus
from seance.core.index import Index


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return kept_cache(tmp_path, monkeypatch)


class _Reads:
    """What a query reads from the index beyond the kept stores: the update of kept rows
    (`Index.row_checks`, `_updated_rows`), every row read and checked (`Index.query_rows`
    without `paths`), objects read (`checked_payloads`, `scanned_payloads`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in ("row_checks", "query_rows", "checked_payloads", "scanned_payloads"):
            monkeypatch.setattr(Index, name, self._counted(name, getattr(Index, name)))

    def _counted(self, name: str, method: object) -> object:
        def counted(index: Index, *args: object, **kwargs: object) -> object:
            self.calls.append(name if name != "query_rows" or kwargs.get("paths") is None else "query_rows(paths)")
            return method(index, *args, **kwargs)  # type: ignore[operator]

        return counted


def _watchers_work(root: Path, cache: Path, target: Path, *, vouch: bool = False) -> object:
    """What the watcher does after an append: the file indexed (`Watcher._index`), then, once
    quiet, the kept stores refreshed for the files found (discovery's order, as its listing)."""
    catalog = Catalog([root], cache_dir=cache)
    try:
        catalog.summary(target)
        return catalog.refresh_kept(discover([root]).infos, vouch=vouch)
    finally:
        catalog.close()


def test_after_a_refresh_the_query_after_an_append_updates_nothing_and_prints_a_fresh_caches_bytes(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an append and the refresh, a word in every session is printed from the kept
    rows and the stored objects as they are (no row check, no row or object read), other
    words rank on the kept rows without updating them; each answer is a fresh cache's.  A
    second refresh on the same files has nothing to do."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=3, seed=21, mean_bytes=3000)
    for _ in range(3):  # the rows kept, then every session's objects
        ls_json(capsysbinary, root, "the")
    files = sorted(root.rglob("*.jsonl"))
    for trial, target in enumerate([files[4], files[17], files[4]]):
        append_user_message(target, f"the quokka{trial}")
        refreshed = _watchers_work(root, cache, target)
        assert refreshed is not None and refreshed.keep_objects is not None, trial  # type: ignore[attr-defined]
        assert _watchers_work(root, cache, target) is None, trial  # (already these files')
        for word in ["the", f"quokka{trial}", '"the quokka"', "the"]:
            reference = fresh_answer(capsysbinary, monkeypatch, root, word)
            with monkeypatch.context() as patched:
                reads = _Reads(patched)
                assert ls_json(capsysbinary, root, word) == reference, (trial, word)
            assert "row_checks" not in reads.calls and "query_rows" not in reads.calls, (trial, word, reads.calls)
            if word == "the":  # printed from the stored objects: none read
                assert reads.calls == [], (trial, reads.calls)
    assert len(list(cache.glob("query-objects-*.bin"))) == 1


def test_without_the_refresh_the_query_after_an_append_updates_the_kept_rows_itself(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side (what the test above rules out): the appended file indexed but the
    stores not refreshed, the query checks every row's CRCs and reads the appended one's
    row and object (`_updated_rows`, `_spliced_objects`)."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=5, mean_bytes=3000)
    for _ in range(3):
        ls_json(capsysbinary, root, "the")
    target = sorted(root.rglob("*.jsonl"))[7]
    append_user_message(target, "the wombat")
    catalog = Catalog([root], cache_dir=cache)
    try:
        catalog.summary(target)
    finally:
        catalog.close()
    reference = fresh_answer(capsysbinary, monkeypatch, root, "the")
    with monkeypatch.context() as patched:
        reads = _Reads(patched)
        assert ls_json(capsysbinary, root, "the") == reference
    assert reads.calls.count("row_checks") == 1 and "query_rows(paths)" in reads.calls, reads.calls


def test_a_refresh_keeps_the_old_stores_order_so_the_answer_it_was_made_for_stays_whole(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The objects spliced without an answer keep the order of the store before (the big
    answer that made it), the changed session first: that answer, asked again, is printed
    from at most three runs of them, and is a fresh cache's."""
    from seance.core.indexquery import _old_order

    assert _old_order([b"new", 2, 0, b"other", 1], 4) == [0, 3, 2, 4, 1]
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=3, seed=9, mean_bytes=3000)
    for _ in range(3):
        ls_json(capsysbinary, root, "the")
    target = sorted(root.rglob("*.jsonl"))[11]
    append_user_message(target, "the numbat")
    assert _watchers_work(root, cache, target) is not None
    reference = fresh_answer(capsysbinary, monkeypatch, root, "the")
    for _ in range(3):  # its key kept, then its runs
        assert ls_json(capsysbinary, root, "the") == reference
    from test_append_splice import _runs_of

    assert _runs_of("the") <= 6  # (first, last) of each run


@pytest.mark.parametrize("vouch", [True, False])
def test_the_refresh_checks_the_files_it_wrote_once_so_the_next_query_does_not(
    tmp_path: Path,
    cache: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
    vouch: bool,
) -> None:
    """With `vouch` (the watcher's) the refresh reads its kept rows' and objects' files back
    once they settled, checked and noted (`keptfile.vouch`): the query after it computes no
    CRC of either; without, the query checks both (the spy sees two)."""
    from seance.core import keptfile

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=4, mean_bytes=3000)
    for _ in range(3):
        ls_json(capsysbinary, root, "the")
    target = sorted(root.rglob("*.jsonl"))[3]
    append_user_message(target, "the bilby")
    assert _watchers_work(root, cache, target, vouch=vouch) is not None
    reference = fresh_answer(capsysbinary, monkeypatch, root, "the")
    crcs: list[int] = []

    class _Counted:
        @staticmethod
        def crc32(data: bytes, *start: int) -> int:
            crcs.append(len(data))
            return zlib.crc32(data, *start)

    time.sleep(0.15)  # (settled for the query too: without `vouch` it notes them itself)
    with monkeypatch.context() as patched:
        patched.setattr(keptfile, "zlib", _Counted)
        assert ls_json(capsysbinary, root, "the") == reference
    assert len(crcs) == (0 if vouch else 2), crcs


def test_answers_made_again_after_the_refresh_are_printed_as_kept_and_are_a_fresh_caches(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the refresh the answers of the two queries last kept (all projects) are made
    again for the files now (`Catalog.remake_answers`): asked after the append, each is the
    kept answer (nothing ranked: `_answered` refused) and a fresh cache's bytes; a query
    asked before them is not made again, and ranks."""
    from seance.core import indexquery
    from seance.core.fileskey import files_key

    monkeypatch.setattr(catalog_module, "ANSWER_BUDGET", 16 << 20)  # (a small answer kept whole too)
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=3, seed=13, mean_bytes=3000)
    for word in ["error", "error", "the", "the", "the", '"fix the"', '"fix the"']:
        ls_json(capsysbinary, root, word)  # (each kept whole the second time; `the` from the objects)
    target = sorted(root.rglob("*.jsonl"))[5]
    append_user_message(target, "the echidna fix the")
    assert _watchers_work(root, cache, target) is not None
    found = discover([root])
    catalog = Catalog([root], cache_dir=cache)
    try:
        assert catalog.remake_answers(found, files_key(found.infos), 2) == ['"fix the"', "the"]
    finally:
        catalog.close()
    answered = indexquery._answered

    def refused(*args: object, **kwargs: object) -> object:
        raise AssertionError("ranked: the answer was not the kept one")

    for word in ["the", '"fix the"', "error"]:
        reference = fresh_answer(capsysbinary, monkeypatch, root, word)
        with monkeypatch.context() as patched:
            patched.setattr(indexquery, "_answered", refused if word != "error" else answered)
            assert ls_json(capsysbinary, root, word) == reference, word
