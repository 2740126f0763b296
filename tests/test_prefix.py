"""Prefix metadata: what one stat and 4 KB can tell, and the display-name fallbacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seance.core.discovery import stat_file
from seance.core.metadata import NotSessionFile
from seance.core.prefix import PREFIX_BYTES, pi_json_from_prefix, quick_pi_json, quick_summaries, read_prefix

HEADER = {
    "type": "session",
    "version": 3,
    "id": "0190abcd-1111",
    "timestamp": "2025-01-02T03:04:05.678Z",
    "cwd": "/proj",
}


def write(path: Path, *values: object) -> Path:
    path.write_text("".join(json.dumps(value) + "\n" for value in values))
    return path


def user(entry_id: str, text: str) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": "2025-01-02T03:05:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def prefix(path: Path):
    info = stat_file(path)
    assert not isinstance(info, str)
    return read_prefix(info)


def test_small_file_is_read_like_a_full_one(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        {**HEADER, "parentSession": "/p.jsonl"},
        user("a", "hello there"),
        {"type": "session_info", "id": "n", "name": "My name"},
    )
    result = prefix(path)
    assert (result.id, result.cwd, result.name, result.parent_session) == (
        "0190abcd-1111",
        "/proj",
        "My name",
        "/p.jsonl",
    )
    assert (result.first_message, result.message_count, result.created) == ("hello there", 1, HEADER["timestamp"])
    assert not result.exact
    assert result.modified_ms == path.stat().st_mtime_ns // 1_000_000
    assert result.prefix_text == "hello there"


def test_count_is_a_lower_bound_including_the_cut_off_line(tmp_path: Path) -> None:
    entries = [user(f"{index:08x}", "word " * 60) for index in range(40)]
    path = write(tmp_path / "s.jsonl", HEADER, *entries)
    assert path.stat().st_size > PREFIX_BYTES
    result = prefix(path)
    complete_lines = path.read_bytes()[:PREFIX_BYTES].count(b"\n") - 1
    assert result.message_count == complete_lines + 1  # the marker on the cut-off line counts too
    assert result.message_count < 40


def test_first_prompt_found_in_a_cut_off_line(tmp_path: Path) -> None:
    long_prompt = "needle " + "x" * 6000
    path = write(tmp_path / "s.jsonl", HEADER, user("a", long_prompt))
    result = prefix(path)
    assert result.first_message.startswith("needle xxx")
    assert result.message_count == 1


def test_giant_header_is_read_tolerantly(tmp_path: Path) -> None:
    header = {**HEADER, "title": "Big one", "blob": "y" * 5000}
    path = write(tmp_path / "s.jsonl", header, user("a", "later"))
    result = prefix(path)
    assert (result.id, result.cwd, result.name) == ("0190abcd-1111", "/proj", "Big one")


def test_not_a_session(tmp_path: Path) -> None:
    with pytest.raises(NotSessionFile):
        prefix(write(tmp_path / "a.jsonl", {"type": "message"}))
    path = tmp_path / "b.jsonl"
    path.write_bytes(b"x" * 5000)
    with pytest.raises(NotSessionFile):
        prefix(path)


def test_display_name_fallbacks(tmp_path: Path) -> None:
    named = prefix(write(tmp_path / "a.jsonl", {**HEADER, "title": "Header\x1b[31m title"}, user("a", "p")))
    assert named.title == "Header title"  # the escape sequence dropped whole
    prompt = prefix(write(tmp_path / "b.jsonl", HEADER, user("a", "first\nprompt")))
    assert prompt.title == "first prompt"
    only_id = prefix(write(tmp_path / "c.jsonl", HEADER))
    assert only_id.title == "0190abcd-1111"
    no_id = prefix(write(tmp_path / "2025_x.jsonl", {**HEADER, "id": ""}))
    assert no_id.title == "2025_x.jsonl"


def test_without_text_only_the_prefix_text_is_left_out(tmp_path: Path) -> None:
    """`text=False` (a plain listing) changes nothing but `prefix_text`, on every corpus file too."""
    from dataclasses import replace

    from conftest import corpus_files

    assistant = {
        "type": "message",
        "id": "b",
        "parentId": "a",
        "timestamp": "2025-01-02T03:06:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "answer words"}]},
    }
    made = [write(tmp_path / "s.jsonl", HEADER, assistant, user("a", "the first prompt"), user("c", "second"))]
    checked = 0
    for path in made + corpus_files():
        info = stat_file(path)
        if isinstance(info, str):
            continue
        try:
            with_text = read_prefix(info)
        except NotSessionFile:
            continue
        assert read_prefix(info, text=False) == replace(with_text, prefix_text=""), path
        checked += 1
    assert checked >= 1
    assert "answer words" in read_prefix(stat_file(made[0])).prefix_text


def test_the_quick_json_path_equals_the_summaries(tmp_path: Path) -> None:
    """`ls --quick --json` builds pi's objects without summaries: the same objects, order and skips."""
    from conftest import corpus_files

    long_header = {**HEADER, "cwd": "/p" + "x" * (PREFIX_BYTES + 10)}  # only the tolerant scanner reads it
    made = [
        write(tmp_path / "a.jsonl", HEADER, user("a", "first")),
        write(tmp_path / "b.jsonl", long_header),
        write(tmp_path / "c.jsonl", {"type": "message"}),  # not a session
        write(tmp_path / "d.jsonl", {**HEADER, "id": "d"}, {"type": "session_info", "id": "n", "name": "N"}),
    ]
    infos = [info for info in map(stat_file, made + corpus_files()) if not isinstance(info, str)]
    for info in infos:
        with open(info.path, "rb") as handle:
            raw = handle.read(PREFIX_BYTES)
        try:
            expected = read_prefix(info).to_pi_json()
        except NotSessionFile:
            continue
        assert pi_json_from_prefix(info, raw) == expected, info.path
    skipped_summaries: list[tuple[str, str]] = []
    skipped_json: list[tuple[str, str]] = []
    summaries = quick_summaries(infos, skipped_summaries, text=False)
    assert [json.loads(item) for _ms, _cwd, item in quick_pi_json(infos, skipped_json)] == [
        s.to_pi_json() for s in summaries
    ]
    assert skipped_json == skipped_summaries and [path for path, _ in skipped_json] == [str(made[2])]


def test_a_bom_before_the_header_is_read_as_the_full_reader_reads_it(tmp_path: Path) -> None:
    """pi (`trim()`) and the full reader drop a UTF-8 BOM before the header: `ls --quick` and
    the picker's first paint must list the file too, not skip it as "not a session header"."""
    path = tmp_path / "bom.jsonl"
    lines = json.dumps(HEADER) + "\n" + json.dumps(user("a", "behind a bom")) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + lines.encode())
    summary = prefix(path)
    assert (summary.id, summary.cwd, summary.first_message) == (HEADER["id"], "/proj", "behind a bom")
    info = stat_file(path)
    assert not isinstance(info, str)
    assert pi_json_from_prefix(info, path.read_bytes())["id"] == HEADER["id"]
