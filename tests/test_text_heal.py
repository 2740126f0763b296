"""An index whose stored text predates the current extraction rules heals itself, once.

0.7.8's full-text extraction drops escape sequences (`fulltext.TextCollector`), so the phrase
`"Forwarding HTTP traffic"` in serveo's coloured `\\x1b[32mForwarding HTTP traffic` is found;
with no schema bump, a session indexed by seance <= 0.7.7 kept `32mForwarding` as one word.
`Catalog.heal_text` (run by `seance index`, the resident watcher's start and the picker once
its rows are listed) reads again only the sessions whose stored text holds an escape
introducer and records the rules in the index's `meta` (`Index.text_rules`), so it runs once.

The old index is made here with the old extraction itself: 0.7.7's `TextCollector` is this
one without its `drop_escapes` (the `has_introducer` guard never true), and such an index
has no `text_rules` row.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import node_oracle_available
from test_hostile_text import rendered
from ui_harness import picker_app, settle
from write_harness import Agent

from seance.app.screens.session_list import PickerOptions
from seance.cli import main
from seance.core import fulltext, scanpool
from seance.core.catalog import Catalog
from seance.core.fulltext import TEXT_RULES, stale_under
from seance.core.index import DB_NAME, Index
from seance.core.text import ESCAPE_SEQUENCES, INTRODUCERS, drop_escapes, has_introducer

needs_node = pytest.mark.skipif(
    not node_oracle_available(), reason="node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle"
)

SERVEO = (
    "Warning: Permanently added 'serveo.net' (RSA) to the list of known hosts.\r\n"
    "\x1b[32mForwarding HTTP traffic from https://abc.serveo.net\x1b[0m\n"
)
PHRASE = '"Forwarding HTTP traffic"'
USAGE = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}}


def _session(root: Path, number: int, *, coloured: bool) -> Path:
    """A pi session asking for a tunnel; `coloured`: its bash result is serveo's coloured banner."""
    stamp = f"2026-06-01T11:{number // 60 % 60:02d}:{number % 60:02d}.000Z"
    sid = f"s-{'serveo' if coloured else 'plain'}-{number:04d}"
    output = SERVEO if coloured else "tunnel refused: port 3000 closed\n"
    lines = [
        {"type": "session", "version": 3, "id": sid, "timestamp": stamp, "cwd": "/work/demo/project"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": stamp,
         "message": {"role": "user", "content": "open a tunnel to port 3000", "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": stamp,
         "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
                     "arguments": {"command": "ssh -R 80:localhost:3000 serveo.net"}}],
                     "provider": "anthropic", "model": "claude-test", "usage": USAGE, "stopReason": "toolUse",
                     "timestamp": 2}},
        {"type": "message", "id": "t1", "parentId": "a1", "timestamp": stamp,
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                     "content": [{"type": "text", "text": output}], "isError": False, "timestamp": 3}},
    ]  # fmt: skip
    path = root / "--work-demo-project--" / f"{stamp.replace(':', '-')}_{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _store(root: Path, coloured: int, plain: int) -> tuple[list[Path], list[Path]]:
    return (
        [_session(root, number, coloured=True) for number in range(coloured)],
        [_session(root, 1000 + number, coloured=False) for number in range(plain)],
    )


@contextlib.contextmanager
def _old_extraction(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Index as seance <= 0.7.7 did: `TextCollector` without its `drop_escapes`."""
    with monkeypatch.context() as patch:
        patch.setattr(fulltext, "has_introducer", lambda text: False)
        yield


def _only_escapes_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heal (in this process) told that rules 2's change (`fulltext.stale_fields`: a line
    once per field, not once per session) left the old index made here alone: its lines are
    today's `TextCollector`'s, its escapes alone are old (tests/test_recall.py heals rules 1's
    lines)."""
    monkeypatch.setattr(fulltext, "stale_fields", lambda rules: {})


def _old_index(root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index seance <= 0.7.7 left: its stored text made with the old extraction, and no
    `text_rules` row in `meta` (it did not record one); what is read again is what its escapes
    make stale (`_only_escapes_stale`)."""
    _only_escapes_stale(monkeypatch)
    catalog = Catalog([root], cache_dir=cache)
    try:
        with _old_extraction(monkeypatch):
            catalog.update_index()
    finally:
        catalog.close()
    with contextlib.closing(sqlite3.connect(cache / DB_NAME)) as db, db:
        db.execute("DELETE FROM meta WHERE key = 'text_rules'")


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the session files scanned from here on (in this process)."""
    read: list[str] = []
    real = scanpool.scan_one

    def counted(info, state, want_text):  # (scan_one's own signature)
        read.append(info.path)
        return real(info, state, want_text)

    monkeypatch.setattr(scanpool, "scan_one", counted)
    return read


def _found(root: Path, query: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The paths `seance ls --all --json --query` prints."""
    main(["ls", "--all", "--json", "--root", str(root), "--query", query])
    return sorted(session["path"] for session in json.loads(capsys.readouterr().out or "[]"))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    return tmp_path / "sessions", tmp_path / "cache"


# -- the rules -------------------------------------------------------------------------------------


def test_every_sequence_the_new_rule_drops_starts_with_an_introducer_the_heal_looks_for() -> None:
    """What the old extraction kept and the new one drops is each whole `ESCAPE_SEQUENCES`
    match; each starts with one of `INTRODUCERS`, so a stored chunk without one (in UTF-8)
    is the same under both rules, and `stale_under(0)` sees every one that holds one."""
    for code in range(0x250):  # ASCII, C1 and Latin: every character a sequence could start with
        char = chr(code)
        for tail in ("[0m", "]8;;x\x07", "P1$r\x1b\\", "c", "(B", "\\", "7", "8;;x\x9c", "32m", "q\x9c"):
            if ESCAPE_SEQUENCES.match(char + tail):
                assert char in INTRODUCERS, repr(char + tail)
    for char in INTRODUCERS:
        assert has_introducer(char)
        assert stale_under(0)(f"plain {char}[32m text".encode())
    assert not stale_under(0)("° © ½ — plain text, C2 and C3 bytes \x9c".encode())
    assert not stale_under(TEXT_RULES)(SERVEO.encode())
    assert drop_escapes(SERVEO) != SERVEO


def test_a_new_index_records_the_current_rules_and_never_scans(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = env
    _store(root, 2, 2)
    scans: list[object] = []
    monkeypatch.setattr(Index, "stale_text_ids", lambda self, stale, *_args, **_kw: scans.append(stale) or [])
    catalog = Catalog([root], cache_dir=cache)
    try:
        assert catalog.index is not None and catalog.index.text_rules() == TEXT_RULES
        catalog.update_index()
        assert catalog.heal_text() == 0
        catalog.rebuild_index()  # (every row emptied: the rules recorded again)
        assert catalog.index.text_rules() == TEXT_RULES
    finally:
        catalog.close()
    assert scans == []


# -- healing ----------------------------------------------------------------------------------------


def test_seance_index_heals_an_old_index_and_ls_query_finds_the_phrase(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, cache = env
    coloured, plain = _store(root, 2, 3)
    _old_index(root, cache, monkeypatch)
    assert _found(root, PHRASE, capsys) == []  # the upgraded user's problem
    assert _found(root, "32mForwarding", capsys) == sorted(map(str, coloured))
    read = _reads(monkeypatch)
    assert main(["index", "--root", str(root)]) == 0
    assert "2 read again first for the current text rules" in capsys.readouterr().out
    assert sorted(read) == sorted(map(str, coloured))  # only those: the others' text is the same
    assert _found(root, PHRASE, capsys) == sorted(map(str, coloured))
    assert _found(root, "32mForwarding", capsys) == []
    assert _found(root, "tunnel", capsys) == sorted(map(str, [*coloured, *plain]))
    index = Index(cache)
    try:
        assert index.text_rules() == TEXT_RULES
        assert index.stale_text_files(stale_under(0)) == []  # no escape left in the stored text
    finally:
        index.close()


def test_an_index_without_escaped_text_reads_nothing_and_records_the_rules(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = env
    _store(root, 0, 4)
    _old_index(root, cache, monkeypatch)
    catalog = Catalog([root], cache_dir=cache)
    try:
        index = catalog.index
        assert index is not None and index.text_rules() == 0
        before = (sorted(index.row_checks()), index.db.execute("SELECT value FROM meta WHERE key = 'fts'").fetchone())
        read = _reads(monkeypatch)
        assert catalog.heal_text() == 0
        assert read == []
        after = (sorted(index.row_checks()), index.db.execute("SELECT value FROM meta WHERE key = 'fts'").fetchone())
        assert after == before  # no row and no text written
        assert index.text_rules() == TEXT_RULES
    finally:
        catalog.close()


def test_the_heal_runs_once(env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = env
    coloured, _plain = _store(root, 3, 2)
    _old_index(root, cache, monkeypatch)
    catalog = Catalog([root], cache_dir=cache)
    try:
        read = _reads(monkeypatch)
        assert catalog.heal_text() == 3
        assert sorted(read) == sorted(map(str, coloured))
        read.clear()
        scans: list[object] = []
        monkeypatch.setattr(Index, "stale_text_ids", lambda self, stale, *_args, **_kw: scans.append(stale) or [])
        assert catalog.heal_text() == 0
        catalog.update_index()  # `seance index` again: nothing changed, nothing read
        assert read == [] and scans == []
        assert {hit.path for hit in catalog.search_text(PHRASE)} == set(map(str, coloured))
    finally:
        catalog.close()
    again = Catalog([root], cache_dir=cache)  # another process's catalog: the record is the index's
    try:
        assert again.heal_text() == 0 and read == [] and scans == []
    finally:
        again.close()


def test_the_watchers_start_heals_an_old_index(env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from seance.core.watchd import Watcher, available

    if not available():
        pytest.skip("no inotify here")
    root, cache = env
    coloured, _plain = _store(root, 2, 2)
    _old_index(root, cache, monkeypatch)
    catalog = Catalog([root], cache_dir=cache)
    watcher = Watcher(catalog, cache)
    try:
        watcher.rediscover()
        assert {hit.path for hit in catalog.search_text(PHRASE)} == set(map(str, coloured))
        assert catalog.index is not None and catalog.index.text_rules() == TEXT_RULES
    finally:
        watcher.close()
        catalog.close()


async def test_the_picker_heals_an_old_index_and_its_query_finds_the_phrase(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The picker launched with the phrase as its query on an old index: its rows are listed,
    then the heal runs and the query is asked again, so the session is found without a key."""
    root, cache = env
    _store(root, 1, 3)
    _old_index(root, cache, monkeypatch)
    app = picker_app(root, scope="all", query=PHRASE, cache_dir=cache, options=PickerOptions(watch=False))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, 6)
        text, _stream = rendered(app)
        assert "1 of 4 sessions" in text, text
        assert "hosts. Forwarding HTTP traffic from https://abc.serveo" in text, text  # the hit's snippet
    index = Index(cache)
    try:
        assert index.text_rules() == TEXT_RULES and index.stale_text_files(stale_under(0)) == []
    finally:
        index.close()


# -- while others read and write ---------------------------------------------------------------------


@pytest.mark.slow
def test_ls_query_in_another_process_while_seance_index_heals_never_loses_a_hit(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`seance index` heals in its own process while this one asks `ls --query` again and
    again: a word both rules index the same is found in every session every time (no row is
    forgotten or emptied meanwhile), and the phrase is found in some of the coloured sessions
    (those healed so far), in all once the heal is done."""
    root, cache = env
    coloured, plain = _store(root, 300, 20)
    _old_index(root, cache, monkeypatch)
    every, coloured_paths = sorted(map(str, [*coloured, *plain])), set(map(str, coloured))
    package = str(Path(__file__).resolve().parents[2])  # the directory that holds the `seance` package
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))}
    healer = subprocess.Popen(
        [sys.executable, "-m", "seance", "index", "--root", str(root)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    asked = 0
    try:
        while healer.poll() is None:
            assert _found(root, "tunnel", capsys) == every
            assert set(_found(root, PHRASE, capsys)) <= coloured_paths  # (healed so far: each batch commits whole)
            asked += 1
    finally:
        out, err = healer.communicate(timeout=120)
    assert healer.returncode == 0, err
    assert "320 read again first" in out, out  # (the plain too: `_only_escapes_stale` is this process's)
    assert asked >= 1
    assert _found(root, PHRASE, capsys) == sorted(coloured_paths)
    assert _found(root, "tunnel", capsys) == every


@needs_node
@pytest.mark.slow
def test_heal_while_pi_appends_to_an_affected_file_20_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pi's SessionManager appends to two coloured sessions while the index is made with the
    old extraction and healed, 20 times over: every heal reads them again, leaves no escape in
    their stored text, finds the phrase, never loses a line; once the agent stops the index
    says what a cold read says and finds the agent's last lines."""
    root = tmp_path / "sessions"
    coloured, plain = _store(root, 2, 2)
    warm = Catalog([root], cache_dir=tmp_path / "warm")
    assert warm.index is not None
    agent = Agent(coloured, tmp_path / "stop", interval_us=300)
    counts = {str(path): 0 for path in [*coloured, *plain]}
    try:
        for _trial in range(20):
            warm.rebuild_index()
            with _old_extraction(monkeypatch):
                warm.update_index()
            warm.index.put_text_rules(0)
            _only_escapes_stale(monkeypatch)
            assert set(warm.index.stale_text_files(stale_under(0))) == set(map(str, coloured))
            assert warm.heal_text() == 2
            assert warm.index.stale_text_files(stale_under(0)) == []
            assert {hit.path for hit in warm.search_text(PHRASE)} == set(map(str, coloured))
            assert warm.search_text("32mForwarding") == []
            for summary in warm.refresh():
                assert summary.message_count >= counts[summary.path], "a count went back: a line was lost"
                counts[summary.path] = summary.message_count
    finally:
        appended = agent.finish()
    assert all(appended.get(str(path)) for path in coloured), "the agent appended to every coloured file"
    after = warm.refresh()
    cold = Catalog([root], cache_dir=tmp_path / "cold")
    try:
        comparable = sorted((s.path, s.id, s.modified, s.message_count, s.size) for s in after)
        assert comparable == sorted((s.path, s.id, s.modified, s.message_count, s.size) for s in cold.refresh())
        last = {summary.path: summary.message_count for summary in after}
        for path in coloured:  # every line landed, none twice: 3 of our own, then the agent's
            assert last[str(path)] == 3 + len(appended[str(path)])
        assert {hit.path for hit in warm.search_text('"agent"')} == set(map(str, coloured))
        assert {hit.path for hit in warm.search_text(PHRASE)} == set(map(str, coloured))
    finally:
        cold.close()
        warm.close()
