"""The persistent index: reuse, appends, rewrites, corruption, schema, FTS, scopes, threads."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from seance.core.catalog import Cancelled, Catalog
from seance.core.generate import generate_corpus
from seance.core.index import _APPLICATION_ID as SEANCE_APPLICATION_ID
from seance.core.index import DB_NAME, SCHEMA_VERSION, _id_runs
from seance.core.search import parse_query

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2025-01-02T03:04:05.678Z", "cwd": "/proj"}


def line(value: dict) -> str:
    return json.dumps(value) + "\n"


def user(entry_id: str, parent: str | None, text: str, ts: int = 1_700_000_000_000) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-02T03:05:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": ts},
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=12, projects=3, seed=3, mean_bytes=8_000)
    return root


def exact(root: Path, cache: Path) -> list:
    catalog = Catalog([root], cache_dir=cache)
    try:
        return catalog.exact()
    finally:
        catalog.close()


def test_unchanged_files_are_reused(corpus: Path, tmp_path: Path) -> None:
    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    first = catalog.exact()
    assert catalog.last_stats.read == 12
    second = catalog.exact()
    assert (catalog.last_stats.read, catalog.last_stats.reused) == (0, 12)
    assert first == second
    assert all(summary.exact for summary in second)
    assert [summary.modified_ms for summary in second] == sorted((s.modified_ms for s in second), reverse=True)


def test_one_projects_listing_decodes_only_its_sessions(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`seance ls` in a project: the other projects' rows are not decoded (at 100,000 sessions
    that was the whole second), and the answer is the whole listing filtered."""
    import seance.core.catalog as catalog_module

    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    everything = catalog.exact()
    cwd = everything[0].cwd
    project = [summary for summary in everything if summary.cwd == cwd]
    assert 0 < len(project) < len(everything)
    decoded: list[bytes] = []
    real = catalog_module.decode_summary
    monkeypatch.setattr(catalog_module, "decode_summary", lambda blob: decoded.append(blob) or real(blob))
    assert catalog.exact(cwd) == project
    assert len(decoded) == len(project)
    assert (catalog.last_stats.read, catalog.last_stats.reused) == (0, 12)


def test_appended_file_is_read_from_the_offset(corpus: Path, tmp_path: Path) -> None:
    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    catalog.refresh()
    target = Path(catalog.exact()[-1].path)
    with open(target, "a") as handle:
        handle.write(line(user("ffff0001", None, "appended zebracorn words", ts=2_000_000_000_000)))
        handle.write(line({"type": "session_info", "id": "ffff0002", "parentId": "ffff0001", "name": "renamed"}))
    after = catalog.refresh()
    assert (catalog.last_stats.appended, catalog.last_stats.read) == (1, 0)
    fresh = exact(corpus, tmp_path / "other-cache")
    assert after == fresh
    assert after[0].path == str(target) and after[0].name == "renamed"
    assert [hit.path for hit in catalog.search_text('"zebracorn"')] == [str(target)]
    assert [hit.field for hit in catalog.search_text('"renamed"')] == ["name"]


AFTER = line(user("00000003", "00000002", "after", ts=1_700_000_002_000))


@pytest.mark.parametrize(
    ("cut", "rest", "messages"),
    [(0, "\n", 2), (0, "\n" + AFTER, 3), (10, "", 2)],
    ids=["newline", "newline-and-more", "mid-json"],
)
def test_a_torn_last_line_is_indexed_once_when_completed(tmp_path: Path, cut: int, rest: str, messages: int) -> None:
    """A last line without its newline counts in the metadata now; its text is indexed once, when complete.

    `cut` bytes of the torn line are missing (inside its JSON: it does not count until finished)."""
    root = tmp_path / "sessions"
    path = root / "--proj--" / "a.jsonl"
    path.parent.mkdir(parents=True)
    torn = line(user("00000002", "00000001", "torn zebracorn words", ts=1_700_000_001_000)).rstrip("\n")
    rest = (torn[len(torn) - cut :] + "\n" if cut else "") + rest
    path.write_text(line(HEADER) + line(user("00000001", None, "whole line")) + torn[: len(torn) - cut])
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    assert catalog.exact() == exact(root, tmp_path / "before")
    with open(path, "a") as handle:
        handle.write(rest)
    after = catalog.refresh()
    assert catalog.last_stats.appended == 1
    assert after == exact(root, tmp_path / "fresh")
    assert after[0].message_count == messages
    assert [hit.path for hit in catalog.search_text('"zebracorn"')] == [str(path)]
    catalog.close()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    bodies = [body for (body,) in db.execute("SELECT body FROM fts WHERE fts MATCH 'zebracorn'")]
    db.close()
    assert sum(body.count("zebracorn") for body in bodies) == 1


def test_shrunk_or_rewritten_file_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = root / "--proj--" / "a.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(line(HEADER) + line(user("a", None, "first")) + line(user("b", "a", "second")))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    assert catalog.exact()[0].message_count == 2
    path.write_text(line({**HEADER, "id": "s-2"}) + line(user("a", None, "only")))
    result = catalog.exact()
    assert (catalog.last_stats.read, result[0].id, result[0].message_count) == (1, "s-2", 1)
    # same size, different bytes (an in-place rewrite like omp's title slot)
    text = path.read_text().replace("only", "ONLY")
    path.write_text(text)
    assert catalog.exact()[0].first_message == "ONLY"
    assert catalog.search_text('"first"') == []


def test_corrupt_index_is_rebuilt(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = exact(corpus, cache)
    (cache / DB_NAME).write_bytes(b"this is not a database" * 200)
    for suffix in ("-wal", "-shm"):
        (cache / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
    catalog = Catalog([corpus], cache_dir=cache)
    assert catalog.exact() == expected
    assert "corrupt" in (catalog.index_problem or "") or "schema" in (catalog.index_problem or "")


def test_older_schema_is_rebuilt(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    old = sqlite3.connect(cache / DB_NAME)
    old.execute("CREATE TABLE files (path TEXT PRIMARY KEY, summary TEXT)")
    old.execute("INSERT INTO files VALUES ('/nowhere.jsonl', 'stale')")
    old.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    old.commit()
    old.close()
    catalog = Catalog([corpus], cache_dir=cache)
    assert len(catalog.exact()) == 12
    assert catalog.last_stats.read == 12
    assert "schema" in (catalog.index_problem or "")


def test_an_older_seances_index_file_is_deleted_not_emptied_and_its_user_reads_on(corpus: Path, tmp_path: Path) -> None:
    """A new schema starts a new file (`DB_NAME` names the schema): the older seance's
    `index.sqlite` and its WAL files are unlinked, never dropped table by table (a walk of
    every page: ~23 s at 100,000 sessions before the first frame).  A connection still
    open on the old file (an older seance running) reads on, and what it writes goes to
    the deleted file, never into the new index."""
    cache = tmp_path / "cache"
    cache.mkdir()
    older = cache / "index.sqlite"
    holder = sqlite3.connect(older, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute(f"PRAGMA application_id = {SEANCE_APPLICATION_ID}")  # (as every seance stamps it; still in the WAL)
    holder.execute("CREATE TABLE files (path TEXT PRIMARY KEY, summary BLOB)")
    holder.executemany("INSERT INTO files VALUES (?, ?)", [(f"/s/{n}.jsonl", b"x" * 2000) for n in range(500)])
    holder.execute("PRAGMA user_version = 7")
    assert (cache / "index.sqlite-wal").exists()
    catalog = Catalog([corpus], cache_dir=cache)
    assert len(catalog.exact()) == 12 and catalog.last_stats.read == 12
    assert catalog.index_problem == "an older seance's index was deleted; rebuilt"
    assert sorted(name for name in os.listdir(cache) if name.startswith("index")) == [
        name for name in (DB_NAME, f"{DB_NAME}-shm", f"{DB_NAME}-wal") if (cache / name).exists()
    ]
    assert holder.execute("SELECT count(*) FROM files").fetchone() == (500,)
    holder.execute("INSERT INTO files VALUES ('/s/new.jsonl', x'00')")  # into the deleted file
    holder.close()
    catalog.close()
    assert sorted(os.listdir(cache)).count("index.sqlite") == 0
    again = Catalog([corpus], cache_dir=cache)
    assert len(again.exact()) == 12 and again.last_stats.read == 0 and again.index_problem is None
    again.close()


@pytest.mark.parametrize("foreign", ["another programs database", "not a database"])
def test_an_index_sqlite_that_is_not_seances_is_never_deleted(corpus: Path, tmp_path: Path, foreign: str) -> None:
    """Only a file stamped with seance's application id is an older seance's index: a cache
    directory the user chose may hold another program's `index.sqlite`, kept byte for byte."""
    cache = tmp_path / "cache"
    cache.mkdir()
    other = cache / "index.sqlite"
    if foreign == "not a database":
        other.write_bytes(b"notes, not SQLite\n" * 50)
    else:
        with contextlib.closing(sqlite3.connect(other)) as db:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("CREATE TABLE notes (body TEXT)")
            db.execute("INSERT INTO notes VALUES ('keep me')")
            db.commit()
    before = other.read_bytes()
    catalog = Catalog([corpus], cache_dir=cache)
    assert len(catalog.exact()) == 12
    assert catalog.index_problem is None
    catalog.close()
    assert other.read_bytes() == before


def test_an_index_missing_a_table_is_rebuilt_and_says_so(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    Catalog([corpus], cache_dir=cache).exact()
    damaged = sqlite3.connect(cache / DB_NAME)
    damaged.execute("DROP TABLE listings")
    damaged.commit()
    damaged.close()
    catalog = Catalog([corpus], cache_dir=cache)
    assert len(catalog.exact()) == 12 and catalog.last_stats.read == 12
    assert catalog.index_problem == "index tables missing (listings); rebuilt"


def test_deleting_the_cache_loses_nothing(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = exact(corpus, cache)
    shutil.rmtree(cache)
    assert exact(corpus, cache) == first


def test_full_text_finds_what_the_prefix_cannot(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = root / "--proj--" / "a.jsonl"
    path.parent.mkdir(parents=True)
    filler = [user(f"{index:08x}", None, "filler words " * 40) for index in range(20)]
    late = {
        "type": "message",
        "id": "late",
        "parentId": None,
        "timestamp": "2025-01-02T03:05:00.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "the quokka appears late"},
                {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "grep -rn wombat ."}},
            ],
        },
    }
    path.write_text(line(HEADER) + "".join(line(entry) for entry in filler) + line(late))
    assert path.stat().st_size > 4096 * 2
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    assert "quokka" not in catalog.quick()[0].prefix_text
    catalog.exact()  # metadata only: no text yet
    assert catalog.search_text('"quokka"') == []
    catalog.refresh()
    hits = catalog.search_text('"quokka"')
    assert [(hit.path, hit.field) for hit in hits] == [(str(path), "assistant")]
    assert hits[0].snippet[hits[0].spans[0][0] : hits[0].spans[0][1]] == "quokka"
    assert [hit.field for hit in catalog.search_text('"wombat"')] == ["bash"]
    assert [hit.field for hit in catalog.search_text("proj")] == ["cwd"]
    with pytest.raises(ValueError):
        catalog.search_text("quokka re:(")
    catalog.forget(path)
    assert catalog.search_text('"quokka"') == []


def test_a_cwd_hit_does_not_hide_the_text_hit(tmp_path: Path) -> None:
    """The session's text hit is reported before a cwd hit (people's words rank first), and
    where the cwd does not count (one project's scope) a cwd-only session is no hit."""
    root = tmp_path / "sessions"
    path = root / "--proj--" / "a.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(line(HEADER) + line(user("00000001", None, "the proj plan")))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    assert [hit.field for hit in catalog.search_text('"proj"')] == ["user"]
    assert [hit.field for hit in catalog.search_text('"proj"', include_cwd=False)] == ["user"]
    assert catalog.search_text('"nowhere"', include_cwd=False) == []
    catalog.close()


def test_text_hits_map_agrees_with_search_text_and_follows_writes(tmp_path: Path) -> None:
    """The picker's lazy map of every hit (`Catalog.text_hits`) holds the sessions and fields
    `search_text` lists, makes each hit's snippet when asked, and sees a new or forgotten
    file at once (the path table it keeps is read again after a write)."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=5, mean_bytes=6_000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    for text in ("the", "sqlite", '"fix the"', "re", "zzzznothing"):
        query = parse_query(text)
        listed = {hit.path: hit.field for hit in catalog.search_text(query)}
        lazy = catalog.text_hits(query)
        assert dict(lazy.items()).keys() == listed.keys()
        assert {path: hit.field for path, hit in lazy.items()} == listed
        assert all(lazy.field(path) == field for path, field in listed.items())  # type: ignore[attr-defined]
        assert "/not/a/session.jsonl" not in lazy and lazy.get("/not/a/session.jsonl") is None
    some = next(iter(catalog.text_hits(parse_query("the"))))
    assert catalog.text_hits(parse_query("the"))[some].snippet
    late = root / "--late--" / "late.jsonl"
    late.parent.mkdir()
    late.write_text(line(HEADER) + line(user("00000001", None, "a quokkaroo at last")))
    assert str(late) not in catalog.text_hits(parse_query("quokkaroo"))
    catalog.refresh()
    assert list(catalog.text_hits(parse_query("quokkaroo"))) == [str(late)]
    catalog.forget(late)
    assert len(catalog.text_hits(parse_query("quokkaroo"))) == 0
    catalog.close()


def test_a_scoped_text_hits_search_finds_every_hit_in_scope(tmp_path: Path) -> None:
    """`within` (one project's paths) lets the index read only the runs of file ids they span;
    every hit among those paths is still found, with its field, whatever the runs."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=4, seed=9, mean_bytes=4_000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    folders = sorted(path for path in root.iterdir() if path.is_dir())
    for folder in folders:
        within = [str(path) for path in folder.glob("*.jsonl")]
        for text in ("the", "sqlite", "re"):
            query = parse_query(text)
            every = {hit.path: hit.field for hit in catalog.search_text(query) if hit.path in within}
            scoped = catalog.text_hits(query, within=within)
            assert {path: scoped.field(path) for path in within if path in scoped} == every  # type: ignore[attr-defined]
    assert len(catalog.text_hits(parse_query("the"), within=[])) == 0
    catalog.close()


def test_id_runs_split_at_the_widest_gaps() -> None:
    assert _id_runs([5, 1, 2, 3, -1], 1000) == [(1, 5)]  # small gaps stay in one run
    assert _id_runs([1, 2, 500, 501], 1000) == [(1, 2), (500, 501)]
    assert _id_runs([1, 990], 1000) is None  # most of the index: one query without a range
    assert _id_runs([-1], 1000) == []
    many = [step * 100 for step in range(1, 20)]  # 18 wide gaps: only the widest are cuts
    runs = _id_runs(many, 100_000)
    assert runs is not None and len(runs) <= 8 and runs[0][0] == 100 and runs[-1][1] == 1900
    assert all(any(first <= value <= last for first, last in runs) for value in many)


def test_scopes_compare_resolved_header_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "alias").symlink_to(project)
    monkeypatch.chdir(tmp_path)  # a relative header cwd "project" must not be taken as ./project
    root = tmp_path / "sessions"
    for name, cwd in (("a", str(project)), ("b", str(tmp_path / "alias") + "/"), ("c", "/elsewhere"), ("d", "project")):
        path = root / "--anything--" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(line({**HEADER, "id": name, "cwd": cwd}))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    assert sorted(summary.id for summary in catalog.exact(str(project))) == ["a", "b"]
    assert sorted(summary.id for summary in catalog.quick(str(project))) == ["a", "b"]
    assert len(catalog.exact()) == 4


def test_not_sessions_are_remembered_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "--p--").mkdir(parents=True)
    (root / "--p--" / "notes.jsonl").write_text('{"type": "note"}\n')
    (root / "--p--" / "ok.jsonl").write_text(line(HEADER))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    assert len(catalog.exact()) == 1
    assert [path.name for path, _ in catalog.last_stats.skipped] == ["notes.jsonl"]
    catalog.exact()
    assert catalog.last_stats.read == 0
    assert [path.name for path, _ in catalog.last_stats.skipped] == ["notes.jsonl"]
    assert catalog.summary(root / "--p--" / "notes.jsonl") is None
    assert catalog.summary(root / "--p--" / "ok.jsonl").id == "s-1"
    assert catalog.summary(root / "--p--" / "gone.jsonl") is None


def test_scan_states_follow_their_sessions(tmp_path: Path) -> None:
    """A state row exists exactly for each indexed session: none left by a file that stopped
    being a session or went away."""
    root = tmp_path / "sessions"
    bucket = root / "--p--"
    bucket.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (bucket / f"{name}.jsonl").write_text(line({**HEADER, "id": f"s-{name}"}))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.exact()

    def stated() -> set[str]:
        rows = catalog.index.db.execute("SELECT path FROM files JOIN states USING (file_id) WHERE session").fetchall()
        count = catalog.index.db.execute("SELECT count(*) FROM states").fetchone()[0]
        assert count == len(rows)
        return {Path(path).name for (path,) in rows}

    assert stated() == {"a.jsonl", "b.jsonl", "c.jsonl"}
    (bucket / "b.jsonl").write_text('{"type": "note"}\n')
    (bucket / "c.jsonl").unlink()
    assert [summary.id for summary in catalog.exact()] == ["s-a"]
    assert stated() == {"a.jsonl"}


def test_progress_and_cancel(corpus: Path, tmp_path: Path) -> None:
    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    seen: list[tuple[int, int]] = []
    with pytest.raises(Cancelled):
        catalog.refresh(progress=lambda done, total: seen.append((done, total)), cancel=lambda: len(seen) >= 5)
    assert seen == [(index, 12) for index in range(1, 6)]
    catalog.refresh()
    assert (catalog.last_stats.reused, catalog.last_stats.read) == (5, 7)


def test_usable_from_threads_while_building(corpus: Path, tmp_path: Path) -> None:
    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    errors: list[BaseException] = []
    results: list[int] = []

    def build() -> None:
        try:
            results.append(len(catalog.refresh()))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    worker = threading.Thread(target=build)
    worker.start()
    for _ in range(20):
        catalog.search_text('"the"')
        catalog.quick()
    worker.join()
    assert errors == [] and results == [12]
    assert len(catalog.search_text('"dev"')) == 12  # every cwd


def test_json_fast_path_equals_the_summaries(corpus: Path, tmp_path: Path) -> None:
    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    cold = json.loads(catalog.list_pi_json())  # reads every file
    expected = [summary.to_pi_json() for summary in catalog.exact()]
    assert cold == expected
    assert json.loads(catalog.list_pi_json()) == expected  # straight from the index
    cwd = expected[0]["cwd"]
    assert json.loads(catalog.list_pi_json(cwd)) == [row for row in expected if row["cwd"] == cwd]


def test_a_stored_listing_is_only_the_answer_while_no_file_changed(corpus: Path, tmp_path: Path) -> None:
    """`ls --json` keeps its last answer per scope; every kind of change must bring a new one
    (compared with a catalog on a fresh cache each time)."""
    catalog = Catalog([corpus], cache_dir=tmp_path / "cache")
    files = sorted(corpus.rglob("*.jsonl"))
    cwd = json.loads(catalog.list_pi_json())[0]["cwd"]
    fresh_caches = iter(range(100))

    def check(step: str) -> None:
        for scope in (None, cwd):
            reference = Catalog([corpus], cache_dir=tmp_path / f"fresh-{next(fresh_caches)}")
            expected = json.loads(reference.list_pi_json(scope))
            assert json.loads(catalog.list_pi_json(scope)) == expected, step
            stored = json.loads(catalog.list_pi_json(scope))  # unchanged since: the stored answer
            assert stored == expected, step
            assert sorted(map(str, (path for path, _ in catalog.last_stats.skipped))) == sorted(
                map(str, (path for path, _ in reference.last_stats.skipped))
            ), step
            reference.close()

    check("first")
    with open(files[0], "a") as handle:
        handle.write(line(user("ffff0001", None, "appended", ts=2_000_000_000_000)))
    check("appended")
    files[1].write_text('{"type": "note"}\n')
    check("no longer a session")
    files[2].rename(files[2].with_name("renamed.jsonl"))
    check("renamed")
    files[3].unlink()
    check("deleted")
    shutil.copy(files[4], files[4].with_name("copy.jsonl"))
    check("added")
    data = files[5].read_bytes()
    session_id = json.loads(data.split(b"\n", 1)[0])["id"]
    other_id = session_id[:-1] + ("0" if session_id[-1] != "0" else "1")
    files[5].write_bytes(data.replace(session_id.encode(), other_id.encode(), 1))  # same size, new mtime
    check("rewritten in place, same size")


def test_stored_listings_are_kept_per_roots_and_scope(tmp_path: Path) -> None:
    roots = []
    for name in ("a", "b"):
        root = tmp_path / name
        (root / "--p--").mkdir(parents=True)
        (root / "--p--" / "s.jsonl").write_text(line({**HEADER, "id": f"s-{name}"}))
        roots.append(root)
    cache = tmp_path / "cache"
    for _ in range(2):
        for root in roots:
            catalog = Catalog([root], cache_dir=cache)
            assert [row["id"] for row in json.loads(catalog.list_pi_json())] == [f"s-{root.name}"]
            assert [row["id"] for row in json.loads(catalog.list_pi_json("/proj"))] == [f"s-{root.name}"]
            catalog.close()
    check = Catalog(roots, cache_dir=cache)
    assert check.index is not None
    assert check.index.db.execute("SELECT count(*) FROM listings").fetchone()[0] == 4


def test_a_file_that_could_not_be_read_is_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read error is not remembered, by the index or by a stored listing: the same file
    (same size and mtime, e.g. after a chmod) is read again next time."""
    from seance.core import metadata

    root = tmp_path / "sessions"
    (root / "--p--").mkdir(parents=True)
    (root / "--p--" / "flaky.jsonl").write_text(line(HEADER))
    real_scan = metadata.scan_file

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    monkeypatch.setattr(metadata, "scan_file", denied)
    assert json.loads(catalog.list_pi_json()) == []
    assert [(path.name, reason) for path, reason in catalog.last_stats.skipped] == [
        ("flaky.jsonl", "Permission denied")
    ]
    monkeypatch.setattr(metadata, "scan_file", real_scan)
    assert [row["id"] for row in json.loads(catalog.list_pi_json())] == ["s-1"]
    assert catalog.last_stats.skipped == []


def test_worker_processes_give_the_same_results(tmp_path: Path) -> None:
    root = tmp_path / "many"
    generate_corpus(root, sessions=300, projects=5, seed=9, mean_bytes=1_500)
    (root / "--p--" / "junk.jsonl").parent.mkdir(exist_ok=True)
    (root / "--p--" / "junk.jsonl").write_text("no header\n")
    serial = Catalog([root], cache_dir=tmp_path / "serial")
    parallel = Catalog([root], cache_dir=tmp_path / "parallel", workers=2)
    expected = serial.exact()
    seen: list[int] = []
    with pytest.raises(Cancelled):  # a cancel stops the workers and keeps what was read
        parallel.refresh(
            progress=lambda done, total: seen.append(done), cancel=lambda: len(seen) >= 70, full_text=False
        )
    assert parallel.exact() == expected
    assert parallel.last_stats.reused >= 70
    assert [path.name for path, _ in parallel.last_stats.skipped] == ["junk.jsonl"]
    first = Path(expected[0].path)
    with open(first, "a") as handle:
        handle.write(line(user("ffff0009", None, "late words", ts=2_100_000_000_000)))
    assert parallel.exact()[0].message_count == expected[0].message_count + 1


def test_quick_json_from_workers_is_the_serial_one(tmp_path: Path) -> None:
    """`ls --quick --json` parses prefixes in worker processes for big stores: same rows, same
    order (ties in mtime keep discovery order), same skips."""
    root = tmp_path / "many"
    generate_corpus(root, sessions=300, projects=5, seed=11, mean_bytes=1_500)
    (root / "--p--").mkdir(exist_ok=True)
    (root / "--p--" / "junk.jsonl").write_text("no header\n")
    files = sorted(root.rglob("*.jsonl"))
    for path in files[::7]:  # many equal mtimes, so the order of ties is tested
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    serial = Catalog([root], cache_dir=tmp_path / "serial")
    parallel = Catalog([root], cache_dir=tmp_path / "parallel", workers=2)
    expected = serial.quick_pi_json()
    assert parallel.quick_pi_json() == expected
    assert json.loads(expected) == [summary.to_pi_json() for summary in serial.quick(text=False)]
    assert parallel.last_discovery is not None and serial.last_discovery is not None
    assert parallel.last_discovery.skipped == serial.last_discovery.skipped
    assert [path.name for path, _ in parallel.last_discovery.skipped] == ["junk.jsonl"]
    cwd = json.loads(expected)[0]["cwd"]
    assert parallel.quick_pi_json(cwd) == serial.quick_pi_json(cwd)


def test_snippets_are_made_from_the_chunk() -> None:
    from seance.core.search import TextHit, parse_query

    def snippet(body: str, query: str) -> tuple[str, tuple[tuple[int, int], ...]]:
        full_text = parse_query(query).full_text()
        assert full_text is not None
        hit = TextHit("/p", "user", lambda: body, full_text.highlight)
        return hit.snippet, hit.spans

    body = "intro " * 30 + "the Refactoring of\nthe parser and a refactor plan " + "tail " * 40
    text, spans = snippet(body, "refactor !parser")
    assert text.startswith("…") and text.endswith("…") and "\n" not in text
    assert [text[start:end] for start, end in spans] == ["Refactoring", "refactor"]
    text, spans = snippet(body, '"of the parser"')
    assert [text[start:end] for start, end in spans] == ["of\nthe parser".replace("\n", " ")]
    text, spans = snippet("short text", '"missing"')
    assert (text, spans) == ("short text", ())
    assert snippet("a proj b", '"proj"')[1] == ((2, 6),)


def test_a_malformed_match_is_the_querys_fault_not_the_index(tmp_path: Path) -> None:
    """A MATCH FTS5 cannot parse raises FullTextQueryError (the index is kept, not rebuilt)."""
    from seance.core.index import FullTextQueryError, Index
    from seance.core.search import FullText

    index = Index(tmp_path / "cache")
    with pytest.raises(FullTextQueryError):
        index.search(FullText('"unbalanced', None))
    assert index.rebuilt_reason is None
    index.close()


def test_default_cache_dir_follows_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from platformdirs import user_cache_dir

    from seance.core.index import default_cache_dir

    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("SEANCE_CACHE_DIR")
    for xdg in ("", str(tmp_path / "xdg")):
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert default_cache_dir() == Path(user_cache_dir("seance", appauthor=False))


def test_a_locked_index_is_never_thrown_away(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seance.core.index import Index

    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    cache = tmp_path / "cache"
    expected = exact(corpus, cache)
    holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another seance in the middle of a long write
    try:
        # opened while locked: a private index, deleted on close
        private = Catalog([corpus], cache_dir=cache)
        assert private.exact() == expected
        assert "locked" in (private.index_problem or "")
        private.close()
        assert sorted(path.name for path in cache.iterdir() if path.name.startswith("index-")) == []
        # locked after opening: this refresh lists from the files, the shared index stays
        opened = Catalog([corpus], cache_dir=cache)
        holder.execute("ROLLBACK")
        assert opened.exact() == expected
        holder.execute("BEGIN EXCLUSIVE")
        target = Path(expected[-1].path)
        with open(target, "a") as handle:
            handle.write(line(user("ffff0003", None, "while locked", ts=2_200_000_000_000)))
        assert opened.exact()[0].path == str(target)
        assert opened.lock_waits == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert opened.exact()[0].path == str(target)  # and the index catches up once it is free
    assert opened.last_stats.appended == 1


def test_a_private_index_left_by_a_killed_command_is_deleted_by_the_next_open(tmp_path: Path) -> None:
    """A command that found the shared index locked used `index-PID.sqlite`, deleted when it
    ends; killed, it left the files for good (the sweep).  A live process's is kept."""
    from seance.core.index import Index

    cache = tmp_path / "cache"
    cache.mkdir()
    dead, alive = 4_000_000, os.getpid()
    for pid in (dead, alive):
        for suffix in ("", "-wal", "-shm"):
            (cache / f"index-{pid}.sqlite{suffix}").write_bytes(b"x")
    Index(cache).close()
    left = sorted(path.name for path in cache.iterdir() if path.name.startswith("index-"))
    assert left == [f"index-{alive}.sqlite", f"index-{alive}.sqlite-shm", f"index-{alive}.sqlite-wal"]


def test_seance_index_under_a_lock_says_nothing_was_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It worked into a private index, dropped at its end, and said "indexed N sessions" (exit
    0), as if the shared one had them (the sweep)."""
    from seance.cli import main
    from seance.core.index import Index

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=4, projects=1, seed=2, mean_bytes=2_000)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(cache))
    assert main(["index", "--root", str(root)]) == 0
    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        capsys.readouterr()
        code = main(["index", "--root", str(root)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert code == 2 and "locked" in err and "nothing was indexed" in err, err


def test_seance_index_locked_after_it_opened_says_nothing_was_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another seance takes the write lock for longer than the busy timeout after this one
    opened the index (a concurrent rebuild's one long transaction): every write waited it out
    and the answer came from the files, nothing stored, and it said "indexed N sessions"
    (review)."""
    from seance.cli import main
    from seance.core.index import Index

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=4, projects=1, seed=2, mean_bytes=2_000)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(cache))
    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    holders: list[sqlite3.Connection] = []
    heal_text = Catalog.heal_text

    def heal_then_another_seance_writes(self: Catalog, cancel=None) -> int:
        healed = heal_text(self, cancel)
        holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another seance's long write begins
        holders.append(holder)
        return healed

    monkeypatch.setattr(Catalog, "heal_text", heal_then_another_seance_writes)
    try:
        code = main(["index", "--root", str(root)])
    finally:
        for holder in holders:
            holder.execute("ROLLBACK")
            holder.close()
    out, err = capsys.readouterr()
    stored = sqlite3.connect(cache / DB_NAME).execute("SELECT count(*) FROM files").fetchone()[0]
    assert stored == 0  # nothing was kept
    assert code != 0 and "nothing was indexed" in err, (code, out, err)
