"""Pins and tags in core: the marks file, tag rules, the query filters and pinned-first orders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from seance.core import listing
from seance.core.marks import (
    MARKS_NAME,
    Mark,
    MarkError,
    MarkStore,
    annotate_pi_json,
    default_data_dir,
    parse_tag_edits,
    split_tags,
    unmarked_objects,
    validate_tag,
)
from seance.core.model import SessionSummary
from seance.core.search import QueryError, parse_query, search


def summary(sid: str, modified_ms: float, parent: str | None = None) -> SessionSummary:
    return SessionSummary(
        path=f"/s/{sid}.jsonl",
        id=sid,
        cwd="/p",
        name=None,
        parent_session=f"/s/{parent}.jsonl" if parent else None,
        created=None,
        modified="2026-01-01T00:00:00.000Z",
        modified_ms=modified_ms,
        message_count=1,
        first_message=f"prompt of {sid}",
    )


# -- where the file lives ------------------------------------------------------------------------


def test_data_dir_is_the_data_dir_not_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from platformdirs import user_data_dir

    from seance.core.index import default_cache_dir

    monkeypatch.setenv("SEANCE_DATA_DIR", str(tmp_path / "mine"))
    assert default_data_dir() == tmp_path / "mine"
    assert MarkStore().path == tmp_path / "mine" / MARKS_NAME
    monkeypatch.delenv("SEANCE_DATA_DIR")
    monkeypatch.delenv("SEANCE_CACHE_DIR")
    for xdg in ("", str(tmp_path / "xdg")):
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
        assert default_data_dir() == Path(user_data_dir("seance", appauthor=False))
        assert default_data_dir() != default_cache_dir()


# -- tags ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", "two words", "tab\there", "esc\x1bx", 'quo"te', "+plus", "-minus", "!bang", "x" * 65, "nl\n"]
)
def test_bad_tags_are_refused_with_a_clear_message(bad: str) -> None:
    with pytest.raises(MarkError) as error:
        validate_tag(bad)
    message = str(error.value)
    assert "\n" not in message and "\x1b" not in message and "\t" not in message


def test_tag_edits_and_prompt_answers() -> None:
    assert parse_tag_edits(["+work", "-old", "plain", "ünïcode:ok"]) == (["work", "plain", "ünïcode:ok"], ["old"])
    assert split_tags("work, auth  later") == ["work", "auth", "later"]
    with pytest.raises(MarkError):
        parse_tag_edits(["-"])


def test_store_pins_tags_and_keeps_case_but_compares_without_it(tmp_path: Path) -> None:
    store = MarkStore(tmp_path / "d" / MARKS_NAME)
    assert store.load() == {}
    assert store.toggle_pin("a") == Mark(True, ())
    assert store.edit_tags("a", ["Work", "auth"]) == Mark(True, ("Work", "auth"))
    assert store.edit_tags("a", ["work"], ["AUTH"]) == Mark(True, ("Work",))  # no duplicate, removal ignores case
    assert store.toggle_pin("a") == Mark(False, ("Work",))
    assert store.set_tags("a", []) == Mark()
    assert store.load() == {}, "a session without marks is dropped from the file"
    with pytest.raises(MarkError, match="no id"):
        store.set_pinned("", True)


def test_an_unreadable_marks_file_is_never_overwritten(tmp_path: Path) -> None:
    store = MarkStore(tmp_path / MARKS_NAME)
    store.path.write_text("{ this is not json")
    with pytest.raises(MarkError, match="not JSON"):
        store.set_pinned("a", True)
    assert store.path.read_text() == "{ this is not json"


def test_export_import_merge_and_replace(tmp_path: Path) -> None:
    source, target = MarkStore(tmp_path / "a.json"), MarkStore(tmp_path / "b.json")
    source.set_pinned("s1", True)
    source.edit_tags("s2", ["x"])
    target.edit_tags("s2", ["y"])
    target.edit_tags("s3", ["z"])
    assert target.import_marks(source.export(), "export") == 2
    assert target.load() == {"s1": Mark(True, ()), "s2": Mark(False, ("y", "x")), "s3": Mark(False, ("z",))}
    target.import_marks(source.export(), "export", replace=True)
    assert target.load() == source.load()
    for bad in (b"[]", b'{"format": "other"}', b'{"format": "seance-marks", "version": 9, "sessions": {}}',
                b'{"format": "seance-marks", "version": 1, "sessions": {"s": {"tags": ["a b"]}}}',
                b'{"format": "seance-marks", "version": 1, "sessions": {"s": {"pinned": "yes"}}}'):  # fmt: skip
        with pytest.raises(MarkError):
            target.import_marks(bad, "bad.json")
    assert target.load() == source.load(), "a bad import writes nothing"


def test_the_json_fast_path_annotation_equals_decoding(tmp_path: Path) -> None:
    items = [
        {"path": "/a", "id": "a", "firstMessage": 'tricky {"path": text } ,{"path":'},
        {"path": "/b", "id": "b", "firstMessage": "plain"},
    ]
    payload = json.dumps(items, separators=(",", ":")).encode()
    plain = json.loads(annotate_pi_json(payload, {}))
    assert plain == [{"pinned": False, "tags": [], **item} for item in items]
    marked = json.loads(annotate_pi_json(payload, {"b": Mark(True, ("t",))}))
    assert [(row["id"], row["pinned"], row["tags"]) for row in marked] == [("b", True, ["t"]), ("a", False, [])]
    assert marked[1]["firstMessage"] == items[0]["firstMessage"]


def test_unmarked_objects_equal_the_replace_of_their_join() -> None:
    # what `ls --json --query` prints: each stored object with the empty marks, as the byte
    # replace over the joined objects gives it, also when an object does not start as stored
    items = [
        {"path": "/a", "id": "a", "firstMessage": 'tricky {"path": text } ,{"path":'},
        {"path": "/b", "id": "b", "firstMessage": "plain \u202e"},
    ]
    objects = [json.dumps(item, separators=(",", ":")).encode() for item in items]
    for chosen in (objects, objects[:1], [], [*objects, b'{"id":"c","path":"/c"}']):
        assert unmarked_objects(chosen) == annotate_pi_json(b",".join(chosen), {})
    printed = json.loads(b"[" + unmarked_objects(objects) + b"]")
    assert printed == [{"pinned": False, "tags": [], **item} for item in items]


# -- the query language --------------------------------------------------------------------------


def test_tag_and_is_filters() -> None:
    sessions = [summary("a", 3), summary("b", 2), summary("c", 1)]
    marks = {"a": Mark(True, ("Work",)), "b": Mark(False, ("home", "work-ish"))}

    def ids(query: str) -> list[str]:
        return [hit.summary.id for hit in search(sessions, query, marks=marks)]

    assert ids("tag:work") == ["a"]  # the whole tag, case-insensitively (not "work-ish")
    assert ids("TAG:WORK prompt") == ["a"]
    assert ids("!tag:work") == ["b", "c"]
    assert ids("is:pinned") == ["a"]
    assert ids("!is:pinned") == ["b", "c"]
    assert ids("is:tagged") == ["a", "b"]
    assert ids("tag:home !is:pinned") == ["b"]
    assert [hit.summary.id for hit in search(sessions, "is:pinned")] == [], "no marks given: nothing is pinned"
    with pytest.raises(QueryError, match="is: expects pinned or tagged"):
        parse_query("is:big")
    assert parse_query("tag:x").filters == (), "marks filters are not summary filters"


# -- orders --------------------------------------------------------------------------------------


def test_pinned_first_in_every_order() -> None:
    sessions = [summary("new", 3), summary("mid", 2), summary("old", 1), summary("fork", 0.5, parent="mid")]
    pinned = {"old", "fork"}

    def is_pinned(item: SessionSummary) -> bool:
        return item.id in pinned

    assert [s.id for s in listing.pinned_first(listing.by_recent(sessions), is_pinned)] == [
        "old",
        "fork",
        "new",
        "mid",
    ]
    assert [s.id for s in listing.pinned_first(sessions, None)] == ["new", "mid", "old", "fork"]
    rows = listing.threaded(sessions, is_pinned)
    # threads holding a pin first (mid's, for its fork; then old's), the fork stays under its parent
    assert [(row.summary.id, row.depth) for row in rows] == [("mid", 0), ("fork", 1), ("old", 0), ("new", 0)]
    assert [row.summary.id for row in listing.threaded(sessions)] == ["new", "mid", "fork", "old"]


# -- two processes at once -----------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from seance.core.marks import MarkStore
    store = MarkStore(sys.argv[1])
    who = sys.argv[2]
    sys.stdin.read()  # start together
    for number in range(int(sys.argv[3])):
        store.edit_tags("shared", [f"{who}-{number}"])
        store.set_pinned(f"{who}-{number}", True)
    """
)


@pytest.mark.slow
def test_concurrent_writers_lose_nothing_10_trials_4_processes(tmp_path: Path) -> None:
    """Four processes tag one session and pin their own at once: every write lands, and the
    file is whole JSON after every trial (flock'd read-modify-write, atomic replace)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT.parent)}
    per_process = 10
    for trial in range(10):
        path = tmp_path / f"trial{trial}" / MARKS_NAME
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", _WRITER, str(path), f"p{who}", str(per_process)],
                stdin=subprocess.PIPE,
                env=env,
            )
            for who in range(4)
        ]
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.close()
        assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]
        marks = MarkStore(path).load()
        expected_tags = {f"p{who}-{number}" for who in range(4) for number in range(per_process)}
        assert set(marks["shared"].tags) == expected_tags, f"trial {trial}"
        assert {key for key, mark in marks.items() if mark.pinned} == expected_tags
        assert [name for name in os.listdir(path.parent) if name.endswith(".tmp")] == [], "no temp file left"


def test_a_refused_tag_is_named_as_typed_with_only_its_controls_escaped() -> None:
    """The message shows the tag a user typed: `漢字 x`, not `'\\\\u6f22\\\\u5b57 x'` (each
    backslash doubled by a repr of an already escaped text); a control shows as its escape."""
    with pytest.raises(MarkError) as error:
        validate_tag("漢字 x")
    assert "'漢字 x'" in str(error.value)
    with pytest.raises(MarkError) as error:
        validate_tag("a\x1b]0;T\x07\u202eb")
    assert "'a\\e]0;T\\x07\\u202eb'" in str(error.value)
