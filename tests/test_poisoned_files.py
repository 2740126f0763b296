"""One malformed file among good ones: every good row is listed, the bad one is reported, nothing raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seance.cli import main
from seance.core import metadata
from seance.core.catalog import Catalog
from seance.core.metadata import MAX_MS, iso_ms, parse_time_ms
from seance.core.session import NotASession, Session, read_session

STAMP = "2025-01-01T00:00:00.000Z"
HEADER = {"type": "session", "version": 3, "cwd": "/p", "timestamp": STAMP}


def user(entry_id: str, text: str, **extra: object) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": STAMP,
        "message": {"role": "user", "content": text},
        **extra,
    }


def write(path: Path, *values: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(value) + "\n" for value in values))
    return path


@pytest.fixture
def poisoned_root(tmp_path: Path) -> Path:
    """Two good sessions and every poison the review found, in one bucket."""
    bucket = tmp_path / "sessions" / "--p--"
    write(bucket / "good1.jsonl", {**HEADER, "id": "good-1"}, user("u", "first good"))
    write(bucket / "good2.jsonl", {**HEADER, "id": "good-2"}, user("u", "second good"))
    write(bucket / "list-type.jsonl", {**HEADER, "id": "lt"}, {"type": ["message"], "id": "a", "parentId": None})
    write(bucket / "list-header.jsonl", {**HEADER, "type": ["session"], "id": "lh"})
    write(bucket / "huge-header.jsonl", {**HEADER, "id": "hh", "timestamp": 1e300}, user("u", "huge header"))
    write(
        bucket / "huge-message.jsonl",
        {**HEADER, "id": "hm"},
        {**user("u", "huge message"), "message": {"role": "user", "content": "x", "timestamp": 1e300}},
    )
    return tmp_path / "sessions"


def test_time_out_of_range_is_unparseable() -> None:
    assert parse_time_ms(1e300) is None and parse_time_ms(-1e300) is None and parse_time_ms(10**40) is None
    assert parse_time_ms(1_700_000_000_000) == 1_700_000_000_000
    assert iso_ms(10**30) == iso_ms(MAX_MS) == "9999-12-31T23:59:59.999Z"


@pytest.mark.parametrize("quick", [False, True])
def test_listing_keeps_every_good_row(poisoned_root: Path, tmp_path: Path, quick: bool) -> None:
    catalog = Catalog([poisoned_root], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.quick() if quick else catalog.exact()
        skipped = catalog.last_discovery.skipped if quick else catalog.last_stats.skipped
    finally:
        catalog.close()
    ids = sorted(summary.id for summary in summaries)
    assert ids == ["good-1", "good-2", "hh", "hm", "lt"]
    assert [path.name for path, _reason in skipped] == ["list-header.jsonl"]
    by_id = {summary.id: summary for summary in summaries}
    if not quick:
        assert by_id["hh"].created is None  # an out-of-range header time counts as none
        assert by_id["hm"].modified == STAMP  # the bogus message time is ignored
        assert by_id["lt"].message_count == 0


def test_an_unexpected_error_skips_only_that_file(poisoned_root: Path, tmp_path: Path, monkeypatch) -> None:
    real_scan = metadata.scan_file

    def scan(path, **kwargs):
        if str(path).endswith("good2.jsonl"):
            raise RuntimeError("boom")
        return real_scan(path, **kwargs)

    monkeypatch.setattr(metadata, "scan_file", scan)
    catalog = Catalog([poisoned_root], cache_dir=tmp_path / "cache")
    try:
        ids = sorted(summary.id for summary in catalog.refresh())
        reasons = dict((path.name, reason) for path, reason in catalog.last_stats.skipped)
    finally:
        catalog.close()
    assert ids == ["good-1", "hh", "hm", "lt"]
    assert "RuntimeError: boom" in reasons["good2.jsonl"]


def test_cli_lists_and_reports(poisoned_root: Path, capsys) -> None:
    assert main(["--root", str(poisoned_root), "ls", "--all"]) == 0
    out, err = capsys.readouterr()
    assert "first good" in out and "second good" in out
    assert "skipped 1" in err and "list-header.jsonl" in err and "Traceback" not in err


def test_read_session_types_are_checked(poisoned_root: Path) -> None:
    bucket = poisoned_root / "--p--"
    result = read_session(bucket / "list-type.jsonl")
    assert isinstance(result, Session) and result.entries == []
    assert isinstance(read_session(bucket / "list-header.jsonl"), NotASession)


def test_show_on_a_poisoned_header_exits_2_with_one_line(poisoned_root: Path, capsys) -> None:
    assert main(["show", str(poisoned_root / "--p--" / "list-header.jsonl")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "not a session" in err


def test_index_counts_each_file_once(poisoned_root: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cli-cache"))
    for expected in ("5 read, 0 appended, 0 unchanged, 1 skipped", "0 read, 0 appended, 5 unchanged, 1 skipped"):
        assert main(["index", "--root", str(poisoned_root)]) == 0
        assert expected in capsys.readouterr().out
    catalog = Catalog([poisoned_root], cache_dir=tmp_path / "cache")
    try:
        catalog.exact()
        assert catalog.last_stats.skipped is not catalog.last_discovery.skipped
        assert catalog.last_discovery.skipped == []  # discovery itself skipped nothing
    finally:
        catalog.close()
