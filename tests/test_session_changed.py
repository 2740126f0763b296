"""A big session read by offset (`core.linesource`): entries are read back from the file held
open, so what happens when the file changes under the reader matters.

* An in-place rewrite (truncate + write, Node's `writeFileSync`, which pi's migration uses)
  between the load and a read back raises `SessionChangedError` with one clear message: the
  CLI prints it as one line, the tree screen as a notification; never a traceback, never
  another entry's data.
* pi appending (its real `SessionManager`, tests/oracle/append_loop.mjs) moves no byte the
  reader recorded: every entry reads back equal to a fresh eager read.
* No descriptor outlives its session.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import node_oracle_available
from textual.widgets import Static
from write_harness import Agent, write_v3

from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.tree_model import CHANGED_SUMMARY, TreeModel
from seance.cli import session as cli_session
from seance.cli.errors import ExitCode
from seance.cli.main import main
from seance.cli.session import show_payload
from seance.core import session as session_module
from seance.core.errors import SessionChangedError, SessionError
from seance.core.session import Session, read_session

STAMP = "2026-01-01T00:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "changed-1", "timestamp": STAMP, "cwd": "/p"}
CHANGED = "the session file changed on disk while it was open; reopen it"

needs_node = pytest.mark.skipif(
    not node_oracle_available(), reason="node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle"
)


def _lines(count: int, *, pad: int = 200, shift: str = "", name: str | None = None, customs: bool = False) -> bytes:
    """A header and a chain of `count` user messages (`shift` added to the first one's text;
    with `customs`, only every tenth is a message, the others `custom` entries), then a
    `session_info` naming it `name` (if given: `show` reads it back)."""
    out = [orjson.dumps(HEADER)]
    parent = None
    for index in range(count):
        text = f"prompt {index} " + "x" * pad + (shift if index == 0 else "")
        entry = {"type": "message", "id": f"e{index}", "parentId": parent, "timestamp": STAMP}
        if customs and index % 10:
            out.append(orjson.dumps({**entry, "type": "custom", "customType": "ext", "data": text}))
        else:
            out.append(orjson.dumps({**entry, "message": {"role": "user", "content": text}}))
        parent = entry["id"]
    if name is not None:
        out.append(orjson.dumps({"type": "session_info", "id": "n", "parentId": parent, "name": name}))
    return b"\n".join(out) + b"\n"


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """What `fs.writeFileSync(path, data)` does: the same inode truncated, then written."""
    descriptor = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def _by_offset(path: Path, **options: Any) -> Session:
    session = read_session(path, digest=False, by_offset=True, **options)
    assert isinstance(session, Session), getattr(session, "reason", "")
    return session


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- an in-place rewrite ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(lambda: _lines(400, shift=" moved"), id="every-offset-shifted"),
        pytest.param(lambda: _lines(400).replace(b'"id":"e300"', b'"id":"E300"'), id="same-length-other-id"),
        pytest.param(lambda: _lines(100), id="shrunk"),
        pytest.param(lambda: b"", id="emptied"),
    ],
)
def test_a_rewrite_in_place_between_load_and_read_back_raises_the_clear_error(tmp_path: Path, new: Any) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(400))
    session = _by_offset(path)
    assert session.entries.by_offset
    assert session.entries[2]["id"] == "e2"  # (a read back before the rewrite: fine)
    _rewrite_in_place(path, new())
    with pytest.raises(SessionChangedError) as raised:
        for position in range(len(session.entries)):  # (past the first read's window)
            session.entries.peek(position)
    assert str(raised.value) == f"{path}: {CHANGED}"
    assert isinstance(raised.value, SessionError)  # what every caller already reports as one line


def test_a_rewrite_with_the_same_bytes_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(400))
    session = _by_offset(path)
    _rewrite_in_place(path, _lines(400))  # (pi rewriting a file it did not change)
    assert list(session.entries) == list(_by_offset(path, decoded=True).entries)


def test_the_cli_prints_a_rewrite_as_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(400, name="named"))
    real = cli_session.read_session

    def read_then_rewritten(*args: Any, **options: Any) -> Any:
        result = real(*args, **{**options, "by_offset": True})
        _rewrite_in_place(path, _lines(400, shift=" moved", name="named"))  # another program, right after the load
        return result

    monkeypatch.setattr(cli_session, "read_session", read_then_rewritten)
    code = main(["show", str(path)])  # (its name is read back: the session_info entry)
    out, err = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT and out.count("\n") == 1 and out.startswith("session  changed-1")  # (header)
    assert err.strip().count("\n") == 0 and CHANGED in err and "Traceback" not in err


# -- appends by pi ----------------------------------------------------------------------------


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize("held_fd", [False, True], ids=["reopen-per-line", "held-fd"])
def test_pi_appending_while_entries_are_read_back_300_trials(tmp_path: Path, held_fd: bool) -> None:
    """pi's SessionManager appends to 3 files while each is loaded by offset and, a moment
    later (more lines appended meanwhile, maybe one half written), read back in full: every
    read back equals the same entries read eagerly afterwards; none raises."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    paths = [write_v3(folder / f"s{n}.jsonl", f"{n:02d}race-sess") for n in range(3)]
    agent = Agent(paths, folder / "stop", held_fd=held_fd, interval_us=1_000)
    trials = 0
    first = {path: len(_by_offset(path).entries) for path in paths}
    grown = 0  # entries the agent added while the trials ran (they read faster than it appends)
    deadline = time.monotonic() + 120
    try:
        while trials < 300 or (grown <= 300 and time.monotonic() < deadline):
            sizes = {}
            for path in paths:
                session = _by_offset(path)
                time.sleep(0.001)
                lazy = [session.entries.peek(position) for position in range(len(session.entries))]
                eager = _by_offset(path, decoded=True)
                assert lazy == list(eager.entries)[: len(lazy)], path.name
                sizes[path] = len(eager.entries)
                trials += 1
            grown = sum(sizes[path] - first[path] for path in paths)
    finally:
        appended = agent.finish()
    assert sum(len(ids) for ids in appended.values()) > 300, "the agent appended while the trials ran"
    final = [_by_offset(path) for path in paths]
    assert all(len(session.entries) > 2 for session in final)


# -- descriptors ------------------------------------------------------------------------------


def test_no_descriptor_outlives_its_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(300))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not json\n")
    gc.collect()
    before = _open_descriptors()
    for _ in range(50):
        session = _by_offset(path)
        assert session.entries.by_offset and session.entries[-1]["id"] == "e299"
        assert _open_descriptors() == before + 1  # held while the session lives
        del session  # dropped: closed at once (no cycle keeps it)
        assert _open_descriptors() == before
        assert not read_session(bad, digest=False, by_offset=True)  # not a session: nothing held
        kept = _by_offset(path, decoded=True)  # every entry kept: nothing to read back, nothing held
        assert not kept.entries.by_offset and _open_descriptors() == before
    session = _by_offset(path)
    tree = session.tree
    session.close()  # closed on demand: a later read back says so instead of reading another file
    assert _open_descriptors() == before
    with pytest.raises(SessionChangedError):
        tree.by_id["e150"]
    session.close()  # (twice is fine)
    del session, tree, kept
    gc.collect()
    assert _open_descriptors() == before


def test_a_big_read_only_load_is_by_offset_and_a_write_load_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(300))
    monkeypatch.setattr(session_module, "BY_OFFSET_MIN_BYTES", path.stat().st_size)
    big = read_session(path, digest=False)
    assert isinstance(big, Session) and big.entries.by_offset
    for options in ({"digest": True}, {"digest": False, "decoded": True}):
        other = read_session(path, **options)
        assert isinstance(other, Session) and not other.entries.by_offset
    monkeypatch.setattr(session_module, "BY_OFFSET_MIN_BYTES", path.stat().st_size + 1)
    small = read_session(path, digest=False)
    assert isinstance(small, Session) and not small.entries.by_offset
    assert list(small.entries) == list(big.entries)
    assert show_payload(small) == show_payload(big)


# -- the tree screen --------------------------------------------------------------------------


def test_the_tree_model_says_so_in_the_rows_and_tells_its_screen_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(400, customs=True))
    session = _by_offset(path)
    model = TreeModel(session.tree, every_entry=True)
    told: list[SessionChangedError] = []
    model.on_source_changed = told.append
    assert model.summary("e399").text == "[custom: ext]"
    _rewrite_in_place(path, _lines(400, shift=" moved", customs=True))
    assert model.summary("e1") == CHANGED_SUMMARY and model.summary("e2") == CHANGED_SUMMARY
    assert model.summary("e399").text == "[custom: ext]"  # (made before: as it was read)
    model.prepare_search()  # nothing searchable now, and no second word to the screen
    assert model.search_text("e5") == "" and len(told) == 1 and CHANGED in str(told[0])


async def test_the_tree_screen_shows_a_rewrite_as_a_notification(tmp_path: Path, monkeypatch) -> None:
    from test_ui_tree import TreeApp, model_of, settle

    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(3_000, customs=True))  # ~750 KB: a user message every ten entries
    monkeypatch.setattr(session_module, "BY_OFFSET_MIN_BYTES", 0)
    app = TreeApp(path)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionTreeScreen) and screen.session is not None
        assert screen.session.entries.by_offset
        model = model_of(app)
        assert model.summary("e2990").text.startswith("prompt 2990")  # drawn: the leaf's rows
        _rewrite_in_place(path, _lines(3_000, shift=" moved", customs=True))
        # Every entry shown, from the top, the cursor on a custom entry: previewing it (and
        # resuming at it) reads it back, never decoded before (the search index peeked at it
        # and kept only its row), from the rewritten file.
        await pilot.press("ctrl+a", "home", "down")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen), "the screen is still up"
        assert model.selected_id == "e1" and model.source_changed is not None
        assert model.summary("e1").text == "[custom: ext]"  # (its row, made while the file was whole)
        notes = [note for severity, note in app.notes if severity == "error"]
        assert len(notes) == 1 and CHANGED in notes[0]
        await pilot.press("enter")  # resuming needs the entry: refused, said once already
        await settle(pilot)
        assert app.results == [] and isinstance(app.screen, SessionTreeScreen)
        title = str(app.screen.query_one("#seance-tree-title", Static).render())
        assert "3,000 entries" in title


if sys.platform != "linux":  # (/proc/self/fd)
    pytestmark = pytest.mark.skip(reason="counts descriptors through /proc")


def test_a_line_source_reads_every_range_as_the_file_holds_it(tmp_path: Path) -> None:
    """Forwards, backwards, jumps, straddling a window's end: the bytes are the file's."""
    import random

    from seance.core.linesource import WINDOW_BYTES, LineSource

    path = tmp_path / "data"
    data = bytes(random.Random(7).randrange(256) for _ in range(5 * WINDOW_BYTES))
    path.write_bytes(data)
    source = LineSource(os.open(path, os.O_RDONLY), path)
    ranges = [(offset, 100) for offset in range(0, len(data) - 100, 997)]  # a pass forwards
    ranges += [(offset, 300) for offset in range(len(data) - 300, 0, -1_201)]  # a pass backwards
    generator = random.Random(3)
    ranges += [(generator.randrange(len(data) - 5_000), generator.randrange(1, 5_000)) for _ in range(300)]
    ranges += [(WINDOW_BYTES - 10, 50), (WINDOW_BYTES + 30, 20), (0, len(data))]  # straddling, the whole file
    for offset, length in ranges:
        assert bytes(source.read(offset, length)) == data[offset : offset + length], (offset, length)
    with pytest.raises(SessionChangedError):
        source.read(len(data) - 10, 20)  # past the end: the file is not what was read
    source.close()
