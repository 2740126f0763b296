"""Unicode whitespace at a file's ends, read as pi reads it: `content.trim().split("\\n")`.

pi (0.73.1, `loadEntriesFromFile` and `buildSessionInfo`) trims the whole file with
JavaScript's `trim()` — every Unicode space, \\v, \\f, U+FEFF, U+2028/2029 — before it splits
the lines, skips a line that is nothing but such whitespace, and `JSON.parse`s the others as
they are (which allows only " \\t\\r\\n" around a value).  So a no-break space before the header
or after the last line's `}` is dropped; the same character inside the file makes its line
unreadable.  seance dropped only a single BOM: a session starting with a no-break space was
"not a session" to `show` and `ls`, and one ending with one lost its last entry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import node_oracle_available, run_node

from seance.core.discovery import FileInfo
from seance.core.metadata import NotSessionFile, scan_file
from seance.core.prefix import read_prefix
from seance.core.session import Session, read_session

HEADER = {"type": "session", "version": 3, "id": "sess-ws", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def _message(entry_id: str, parent: str | None, text: str) -> bytes:
    message = {"role": "user", "content": text, "timestamp": 1767225601000}
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z"}
    return orjson.dumps({**entry, "message": message})


H, A, B = orjson.dumps(HEADER), _message("a", None, "one"), _message("b", "a", "two")
SPACES = {
    "nbsp": "\u00a0",
    "vt": "\v",
    "ff": "\f",
    "two-boms": "\ufeff\ufeff",
    "line-separator": "\u2028",
    "ideographic": "\u3000",
}
PLACES = {  # where the character goes: pi reads a and b, or (inside a line) only b
    "file-start": lambda c: c + H + b"\n" + A + b"\n" + B + b"\n",
    "last-line-end": lambda c: H + b"\n" + A + b"\n" + B + c + b"\n",
    "last-line-end-no-newline": lambda c: H + b"\n" + A + b"\n" + B + c,
    "own-line-first": lambda c: c + b"\n" + H + b"\n" + A + b"\n" + B + b"\n",
    "own-line-middle": lambda c: H + b"\n" + c + b"\n" + A + b"\n" + B + b"\n",
    "own-line-last": lambda c: H + b"\n" + A + b"\n" + B + b"\n" + c + b"\n",
    "end-and-own-line": lambda c: H + b"\n" + A + b"\n" + B + c + b"\n" + c + b"\n",
    "middle-line-start": lambda c: H + b"\n" + c + A + b"\n" + B + b"\n",
    "middle-line-end": lambda c: H + b"\n" + A + c + b"\n" + B + b"\n",
    "between-tokens": lambda c: H + b"\n" + A.replace(b'"id":', b'"id":' + c, 1) + b"\n" + B + b"\n",
}


def _files(directory: Path) -> dict[str, Path]:
    directory.mkdir(exist_ok=True)
    out = {}
    for space_name, space in SPACES.items():
        for place, build in PLACES.items():
            path = directory / f"{space_name}--{place}.jsonl"
            path.write_bytes(build(space.encode()))
            out[path.name] = path
    return out


def _seance_reading(path: Path) -> tuple[list[str] | None, int | None, int | None]:
    """(entry ids of the full reader, message count of the metadata scan, of the 4 KB prefix)."""
    session = read_session(path)
    ids = [entry["id"] for entry in session.entries] if isinstance(session, Session) else None
    try:
        count: int | None = scan_file(path).final.message_count
    except NotSessionFile:
        count = None
    info = os.stat(path)
    try:
        quick: int | None = read_prefix(FileInfo(str(path), info.st_size, info.st_mtime_ns)).message_count
    except NotSessionFile:
        quick = None
    return ids, count, quick


@pytest.mark.skipif(not node_oracle_available(), reason="needs node and pi's npm package")
def test_every_reader_reads_what_pi_reads(tmp_path: Path) -> None:
    files = _files(tmp_path / "mine")
    copies = tmp_path / "pi"  # (pi's open may rewrite a file it finds no session in)
    shutil.copytree(tmp_path / "mine", copies)
    pi = {
        Path(item["path"]).name: [node["id"] for node in item["nodes"]]
        for item in json.loads(run_node("context_of.mjs", *(str(copies / name) for name in sorted(files))))
    }
    wrong = {}
    for name, path in sorted(files.items()):
        want = pi[name]
        got = _seance_reading(path)
        if got != (want, len(want), len(want)):
            wrong[name] = (want, got)
    assert not wrong
    assert pi["nbsp--file-start.jsonl"] == ["a", "b"] and pi["nbsp--between-tokens.jsonl"] == ["b"]


def test_the_same_without_node(tmp_path: Path) -> None:
    """pi's answers, as the oracle above gives them, for a machine without node."""
    unreadable = ("middle-line-start", "middle-line-end", "between-tokens")  # the line of a, inside the file
    for name, path in _files(tmp_path).items():
        want = ["b"] if path.stem.rsplit("--", 1)[1] in unreadable else ["a", "b"]
        assert _seance_reading(path) == (want, len(want), len(want)), name
        session = read_session(path)
        assert isinstance(session, Session)
        if want == ["a", "b"]:  # a line of whitespace only is skipped unread, as pi skips it: no problem
            assert not session.skipped, (name, session.skipped)


def test_show_and_ls_read_a_session_that_starts_with_a_no_break_space(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--p--"
    root.mkdir(parents=True)
    path = root / "2026-01-01T00-00-00-000Z_sess-ws.jsonl"
    path.write_bytes(PLACES["file-start"](b"\xc2\xa0"))
    env = dict(os.environ, NO_COLOR="1")
    shown = subprocess.run(
        [sys.executable, "-m", "seance", "show", str(path)], capture_output=True, text=True, timeout=60, env=env
    )
    assert shown.returncode == 0, shown.stderr
    assert "one" in shown.stdout and "two" in shown.stdout
    for quick in ([], ["--quick"]):
        listed = subprocess.run(
            [sys.executable, "-m", "seance", "ls", "--all", "--root", str(tmp_path / "sessions"), "--json", *quick],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert listed.returncode == 0, listed.stderr
        (item,) = json.loads(listed.stdout)
        assert item["id"] == "sess-ws" and item["messageCount"] == 2, quick


def test_a_trimmed_last_line_is_read_again_once_a_line_follows_it(tmp_path: Path) -> None:
    """pi trims the last line's no-break space only while it is the last: once an entry is
    appended after it, pi no longer reads it, and a continued metadata scan must agree."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(H + b"\n" + A + b"\xc2\xa0\n")
    first = scan_file(path)
    assert first.final.message_count == 1
    with open(path, "ab") as handle:
        handle.write(B + b"\n")
    again = scan_file(path, state=first.state)
    fresh = scan_file(path)
    assert again.final.message_count == fresh.final.message_count == 1  # only b: a's line is now unreadable
    assert again.final.bad_lines == fresh.final.bad_lines == 1


def test_the_usual_file_has_nothing_to_cut(tmp_path: Path) -> None:
    from seance.core.jsonl import content_bounds

    path = tmp_path / "s.jsonl"
    path.write_bytes(b" \r\n" + H + b"\r\n" + A + b"\n\n \t\n")  # only what JSON.parse skips itself
    descriptor = os.open(path, os.O_RDONLY)
    try:
        assert content_bounds(descriptor, path.stat().st_size) is None
    finally:
        os.close(descriptor)
    long = tmp_path / "long.jsonl"  # a run of whitespace longer than the first read at each end
    long.write_bytes(b"\xc2\xa0" * 500 + H + b"\n" + A + b"\xe3\x80\x80" * 500 + b"\n")
    descriptor = os.open(long, os.O_RDONLY)
    try:
        assert content_bounds(descriptor, long.stat().st_size) == (1000, 1000 + len(H) + 1 + len(A))
    finally:
        os.close(descriptor)
    assert _seance_reading(long) == (["a"], 1, 1)


@pytest.mark.parametrize("ending", [b"\xc2\xa0\n", b"\xe3\x80\x80"], ids=["nbsp-newline", "ideographic-no-newline"])
def test_no_entry_is_appended_after_a_last_line_pi_reads_only_at_the_end(tmp_path: Path, ending: bytes) -> None:
    """b's line is read only while it is the last (pi trims the file's end).  A label (or a
    name) appended after it would make it a middle line pi refuses: pi would lose b for good,
    whatever the new line hung from.  The write is refused, the file left as it was."""
    from seance.core.errors import SessionError
    from seance.core.writes import set_label

    path = tmp_path / "s.jsonl"
    original = H + b"\n" + A + b"\n" + B + ending
    path.write_bytes(original)
    assert [entry["id"] for entry in read_session(path).entries] == ["a", "b"]  # (b read: last line)
    with pytest.raises(SessionError, match="would make pi lose that entry"):
        set_label(path, "a", "kept")
    assert path.read_bytes() == original
    if node_oracle_available():
        (pi,) = json.loads(run_node("context_of.mjs", str(path)))
        assert pi["leafId"] == "b"
