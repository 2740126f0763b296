"""`Catalog.ranked` (`core.indexquery`, behind a warm `seance ls --json --query`): the same
sessions in the same order as `Catalog.matching_pi_json` (the refreshing path, itself checked
against ranking every summary in tests/test_cli_query.py), and never a stale answer: a file
appended, added or replaced since the index was made sends the query to the refreshing path.

Why one stat per file is the freshness check (and not less): an append changes neither the
directory's mtime nor anything but the file's own size and mtime, so only a stat of every
file can tell that the index still describes it.  A file the index still has but that is
gone is simply not listed (only files found now are)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from ui_sessions import Spec, write_session

from seance.cli import main
from seance.core import indexquery
from seance.core.catalog import Catalog
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME
from seance.core.search import parse_query

QUERIES = [
    "sqlite",  # nearly every session: title tiers, full text, people's words and tools'
    "qlit",  # inside words: titles only
    "sqlt",  # fuzzy
    "srch idx",  # two fuzzy tokens
    "go",  # short: substring only
    '"memory latency"',
    '"fix the"',
    "tool:grep",  # narrowed to a field: the index's hits only
    "bash:git",
    "user:refactor",
    "result:error",
    "api-server",  # the cwd's words: path hits in the all-projects scope
    "2025-1",  # in every path
    "fix sqlite",
    "zzqqxx",
    "<>",  # no word the index can use: titles and paths only
    "sqlité",  # not ASCII, over ASCII titles (searched as bytes)
]
UNSUPPORTED = ["re:^fix", "!sqlite", "cache !bench", "name:fix", "is:pinned", "tag:work", ""]


def folders(root: Path) -> list[Path]:
    return sorted({path.parent for path in root.rglob("*.jsonl")})


def busiest_cwd(catalog: Catalog) -> str:
    return Counter(summary.cwd for summary in catalog.quick(text=False)).most_common(1)[0][0]


def reference(catalog: Catalog, query: str, cwd: str | None) -> list[dict]:
    answer = catalog.matching_pi_json(parse_query(query), cwd)
    assert answer is not None
    return json.loads(answer)


def ranked(catalog: Catalog, query: str, cwd: str | None) -> list[dict] | None:
    answer = catalog.ranked(parse_query(query), cwd)
    if answer is None:
        return None
    return [orjson.loads(item) for chunk in catalog.pi_json_chunks(answer, size=7) for item in chunk]


def forget_kept_rows(database: Path) -> None:
    """Drop the rows a query kept for the next one (`core.queryrows`): the next reads every row."""
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM listings WHERE substr(scope, 1, 11) = CAST('query-rows' || char(0) AS BLOB)")


def compare(root: Path, cache: Path, workers: int = 1) -> int:
    catalog = Catalog(folders(root), cache_dir=cache, workers=workers)
    seen = 0
    try:
        catalog.refresh()  # the index, text included
        cwd = busiest_cwd(catalog)
        for query in QUERIES:
            for scope in (None, cwd):
                expected = reference(catalog, query, scope)
                got = ranked(catalog, query, scope)
                assert got == expected, (query, scope)
                answer = catalog.ranked(parse_query(query), scope)
                assert answer is not None and catalog.index is not None
                assert None not in catalog.index.checked_payloads(answer.rows).values()  # printed as stored
                assert catalog.last_stats.read == 0
                seen += len(got)
        for query in UNSUPPORTED:
            assert catalog.ranked(parse_query(query), None) is None  # the caller takes `matching`
    finally:
        catalog.close()
    return seen


@pytest.mark.parametrize("workers", [1, 2])  # 2: the files are found by a forked child (the CLI's way)
def test_ranked_from_the_index_equals_the_refreshing_path_on_a_generated_corpus(tmp_path: Path, workers: int) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=150, projects=5, seed=3, mean_bytes=6000)
    assert compare(root, tmp_path / "cache", workers) > 500


def test_the_cli_s_answers_never_make_the_highlight_pattern(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI prints no snippet, and the pattern's word syntax is a pass over Unicode (~60 ms
    of a new word's first asking at 100,000 sessions): ranking only reads the hits' fields.
    The same answers, from the index and from the listings that rank summaries."""
    from seance.core.search import query as query_module

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=60, projects=3, seed=5, mean_bytes=4000)
    roots = [f"--root={folder}" for folder in folders(root)]
    commands = [["ls", *scope, *json_flag, *roots] for scope in (["--all"], []) for json_flag in (["--json"], [])]
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        expected = {query: reference(catalog, query, None) for query in QUERIES}
        printed = {}
        for query in QUERIES:
            for command in commands:
                code = main([*command, "--query", query])
                printed[query, *command] = code, capsys.readouterr().out

        def refused(terms: object) -> None:
            raise AssertionError(f"a highlight pattern was made for {terms!r}")

        monkeypatch.setattr(query_module, "words_pattern", refused)
        for query in QUERIES:
            assert ranked(catalog, query, None) == expected[query], query
            for command in commands:
                code = main([*command, "--query", query])
                assert (code, capsys.readouterr().out) == printed[query, *command], (query, command)
        assert any(expected.values()) and any(code == 0 for code, _out in printed.values())
    finally:
        catalog.close()


def test_ranked_from_the_index_equals_the_refreshing_path_on_the_shared_corpus(corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(corpus, root)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        for query in ['"Cannot find module"', "u0_a360", "shadow-realms", "error:cannot", "test", "fix bug", "pi"]:
            for scope in (None, busiest_cwd(catalog)):
                assert ranked(catalog, query, scope) == reference(catalog, query, scope), (query, scope)
    finally:
        catalog.close()


# (id, name, first message, a later message): every title tier a word can take
TIERED = [
    ("c0", None, "kiwi", "x"),  # the whole first message
    ("c1", "kiwi", "hello", "x"),  # the whole name
    ("c2", None, "kiwi pie recipe", "x"),  # starts the first message
    ("c3", "kiwi jam", "hello", "x"),  # starts the name
    ("kiwi-c4", None, "nothing here", "kiwi"),  # starts the id (and in the text)
    ("c5kiwi", None, "nothing here", "x"),  # inside the id only: noise, not a title match
    ("c6", None, "i like kiwi pie", "x"),  # inside the first message
    ("c7", "my kiwi", "hello", "kiwi"),  # inside the name
    ("c8", "pie", "kiwi pie and kiwi", "x"),  # starts it, and inside it again
    ("c9", None, "kiwipie", "x"),  # starts a word that starts it
    ("c10", None, "tell me about kiwi pie", "kiwi"),  # inside, with a full-text hit
    ("c11", "café kiwi", "hello", "x"),  # inside a name that is not ASCII
    ("c12", None, "hello", "kiwi pie later"),  # the text only: the full-text tier
    ("c13", "kiwi-c13 pie", "pie kiwi", "x"),  # starts the name, which holds the id
    ("c14", None, "kwixi", "x"),  # fuzzy only
]
TIERED_QUERIES = ["kiwi", "kiwi pie", '"kiwi pie"', "pie kiwi", "kiw", "kiwi jam", "c1", "iwi", "kiwi-c"]


def _ids_through_rank(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the sessions whose titles go through `rank` from now on (appended as they do)."""
    from seance.core.search import stored

    ids: list[str] = []
    original = stored.rank_hits

    def counted(sessions: list, *args: object, **kwargs: object) -> object:
        ids.extend(title[0] for _session, title in sessions)
        return original(sessions, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stored, "rank_hits", counted)
    return ids


def test_plain_title_substrings_rank_as_rank_puts_them_and_only_the_others_go_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose title holds every term inside its name or first message (starting
    neither, not only in its id) is in the substring tier, found in bulk: only the other
    candidates go through `rank` (at 100,000 sessions a common word's first asking spent
    most of its time there), and every tier comes out in `rank`'s order."""
    root = tmp_path / "sessions"
    for number, (sid, name, first, later) in enumerate(TIERED):
        spec = Spec(sid, "/work/tiers", (first, later), age=timedelta(minutes=number * 7 % 11), name=name)
        write_session(root, spec)
    ranked_ids = _ids_through_rank(monkeypatch)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        for query in TIERED_QUERIES:
            for scope in (None, "/work/tiers"):
                expected = reference(catalog, query, scope)
                assert expected, query
                for _asking in range(3):  # rows read and checked, then kept
                    assert ranked(catalog, query, scope) == expected, (query, scope)
        ranked_ids.clear()
        ids = [item["id"] for item in ranked(catalog, "kiwi", None) or []]
        assert set(ids[:2]) == {"c0", "c1"} and set(ids[2:8]) == {"c2", "c3", "kiwi-c4", "c8", "c9", "c13"}
        # the exact, prefix and id ones, and those with the word only in their id, only
        assert sorted(ranked_ids) == sorted(["c0", "c1", "c2", "c3", "kiwi-c4", "c5kiwi", "c8", "c9", "c13"])
    finally:
        catalog.close()


FUZZY_ONLY = [  # (id, name, first message): "kiwi" in none of them, its letters in some
    ("f0", None, "k-i-w-i jam"),  # a fuzzy hit in the first message (shown: no name)
    ("f1", "kaaaaaaaiaaaaaaawaaaaaaai", "x"),  # every gap within bounds, the whole too wide: no hit
    ("f2", "kaaaaaaaiaaaaaaawaaaaaaai k.i.w.i", "x"),  # too wide at first, a hit further on
    ("f3", "plum", "k-i-w-i jam"),  # the letters in the first message, but the row shows its name
    ("f4", None, "kaaaaaaaiaaaaaaawaaaaaaai"),  # loose in the first message too
    ("f5", "K I W I", "x"),  # folded: a hit in the name
]


def test_only_the_titles_rank_matches_fuzzily_go_through_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A word in no full text whose letters lie loosely in most titles (`tooltip` at 100,000
    sessions: 17,211 titles, 1,032 fuzzy hits) sends only its fuzzy hits through `rank`: the
    titles are searched with `fuzzy_match`'s rule over the line each row shows (every gap
    and the whole span bounded, the name else the first message), and the answer is the
    refreshing path's."""
    root = tmp_path / "sessions"
    for number, (sid, name, first) in enumerate(FUZZY_ONLY):
        write_session(root, Spec(sid, "/work/fuzzy", (first, "nothing"), age=timedelta(minutes=number), name=name))
    ranked_ids = _ids_through_rank(monkeypatch)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        for scope in (None, "/work/fuzzy"):
            expected = reference(catalog, "kiwi", scope)
            for _asking in range(3):  # rows read and checked, then kept
                ranked_ids.clear()
                assert ranked(catalog, "kiwi", scope) == expected, scope
                assert sorted(ranked_ids) == ["f0", "f2", "f5"], scope
        assert sorted(item["id"] for item in expected or []) == ["f0", "f2", "f5"]
    finally:
        catalog.close()


def test_fuzzy_rows_are_fuzzy_match_over_each_shown_line_300_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_Joined.fuzzy_rows`, one scan of the joined titles (forwards, or backwards from the
    term's last letter: both are checked) or each of some titles alone, finds the titles
    `fuzzy_match` matches in the line `rank` shows (the name, else the first message): ASCII
    and not, letters in the id or the hidden line, spans too wide at first."""
    import random

    from seance.core.search.fuzzy import fuzzy_match, fuzzy_pattern

    rng = random.Random(14)
    pieces = ["k", "i", "w", "ab", " ", "kiw", "\u00e9", "\u30c7", "-", "iwi", "xxxxxxx", "s", "q", "wik"]

    def line(limit: int) -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, limit)))

    for trial in range(300):
        titles = [(line(2), line(3) if rng.random() < 0.5 else "", line(8)) for _ in range(rng.randint(1, 30))]
        encoded = ["\n".join(title).encode() for title in titles]
        some = {row for row in range(len(titles)) if rng.random() < 0.5}
        shown = [name or first for _ident, name, first in titles]
        for term in ("kiwi", "kiw", "iwi\u00e9", "sqk", "\u30c7ki", "wiki"):
            pattern = fuzzy_pattern(term)
            expected = {row for row, text in enumerate(shown) if fuzzy_match(pattern, text, len(term))}
            for backwards in (False, True):
                monkeypatch.setattr(indexquery, "_rarer_last", lambda _term, backwards=backwards: backwards)
                joined = indexquery._Joined(encoded)
                assert joined.fuzzy_rows(term) == expected, (trial, term, backwards)
                assert joined.fuzzy_rows(term, some) == expected & some, (trial, term)


def _append_message(path: Path, text: str) -> None:
    """A user message appended as pi would, linked to the last entry."""
    lines = path.read_bytes().splitlines()
    last = json.loads(lines[-1])
    entry = {
        "type": "message",
        "id": "f00dcafe",
        "parentId": last.get("id"),
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1767225600000},
    }
    with path.open("ab") as handle:
        handle.write(json.dumps(entry).encode() + b"\n")


@pytest.mark.parametrize("workers", [1, 2])
def test_an_appended_added_or_removed_file_is_never_answered_from_a_stale_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A file changed since the index was made (appended, added, touched) is read and indexed
    before the answer (a few such files: by `ranked` itself; more: by the refreshing path);
    a file gone is not listed, though the index still has its row."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=20, projects=2, seed=4, mean_bytes=3000)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache", workers=workers)
    try:
        catalog.refresh()
        assert ranked(catalog, "quokkaword", None) == []  # fresh, and nothing has the word
        files = sorted(root.rglob("*.jsonl"))
        _append_message(files[0], "a quokkaword appears")
        assert [item["path"] for item in ranked(catalog, "quokkaword", None) or []] == [str(files[0])]
        assert catalog.index is not None
        row = catalog.index.row(str(files[0]))
        assert row is not None and row.size == files[0].stat().st_size  # it was read and indexed

        added = files[1].with_name("2026-01-02T00-00-00-000Z_0badc0de-0000-4000-8000-000000000000.jsonl")
        shutil.copyfile(files[1], added)
        _append_message(added, "another quokkaword")
        assert len(ranked(catalog, "quokkaword", None) or []) == 2  # a new file
        assert ranked(catalog, "quokkaword", None) == reference(catalog, "quokkaword", None)

        os.utime(files[0], ns=(1, 1))  # same size, another mtime: read again
        assert len(ranked(catalog, "quokkaword", None) or []) == 2

        added.unlink()  # gone: never listed, though the index still has its row
        assert [item["path"] for item in ranked(catalog, "quokkaword", None) or []] == [str(files[0])]

        monkeypatch.setattr("seance.core.catalog._FEW_STALE", 0)  # more changed than it reads itself
        _append_message(files[2], "quokkaword three")
        assert catalog.ranked(parse_query("quokkaword"), None) is None  # the caller refreshes
        assert len(reference(catalog, "quokkaword", None)) == 2
    finally:
        catalog.close()


def test_a_damaged_row_or_title_is_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row is checked before it is ranked (a damaged one sends the query to the
    refreshing path, which reads its file again and heals the index); an object not kept
    from that check (over `PAYLOAD_BUDGET`) is checked again when it is read for printing
    (a damaged one: its file is read)."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=5, mean_bytes=4000)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    database = tmp_path / "cache" / DB_NAME
    lie = 'UPDATE files SET pi_json = CAST(\'{"path":"lie"}\' AS BLOB) WHERE path = ?'
    try:
        catalog.refresh()
        expected = reference(catalog, "sqlite", None)
        assert len(expected) > 5
        for damage, value in [(lie, expected[2]["path"]), ("UPDATE files SET modified_ms = 3.5 WHERE path = ?", None)]:
            # the second query on the same files keeps the checked rows (`core.queryrows`)
            assert ranked(catalog, "sqlite", None) == ranked(catalog, "sqlite", None) == expected
            with sqlite3.connect(database) as db:
                db.execute(damage, (value or expected[-1]["path"],))
            # from the kept rows the damaged value is never used (a lying object fails its
            # check when it is printed: its file is read)
            assert ranked(catalog, "sqlite", None) == expected
            forget_kept_rows(database)
            assert catalog.ranked(parse_query("sqlite"), None) is None  # read again: a row fails its check
            assert reference(catalog, "sqlite", None) == expected  # the refresh reads it again
            assert ranked(catalog, "sqlite", None) == expected  # healed: fresh again
        monkeypatch.setattr(indexquery, "PAYLOAD_BUDGET", 0)  # every object read again to be printed
        answer = catalog.ranked(parse_query("sqlite"), None)
        assert answer is not None and all(row[13] is None for row in answer.rows)  # (13: the object)
        with sqlite3.connect(database) as db:  # damaged between the ranking and the printing
            db.execute(lie, (expected[1]["path"],))
        printed = [orjson.loads(item) for chunk in catalog.pi_json_chunks(answer) for item in chunk]
        assert printed == expected
        with sqlite3.connect(database) as db:  # every title now says nothing
            db.execute("UPDATE files SET title = CAST('x\ny\nz' AS BLOB)")
        forget_kept_rows(database)
        assert catalog.ranked(parse_query("sqlt"), None) is None  # only the summaries can say
    finally:
        catalog.close()


def test_ls_json_query_prints_the_same_bytes_warm_as_the_refreshing_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=60, projects=3, seed=6, mean_bytes=4000)
    roots = [f"--root={folder}" for folder in folders(root)]
    for query in ["sqlite", "sqlt", "zzqqxx"]:
        cold = main(["ls", "--all", "--json", *roots, "--query", query])  # indexes, then answers
        first = capsys.readouterr().out
        warm = main(["ls", "--all", "--json", *roots, "--query", query])  # from the fresh index
        assert (warm, capsys.readouterr().out) == (cold, first)
        kept = main(["ls", "--all", "--json", *roots, "--query", query])  # from the rows kept by the last
        assert (kept, capsys.readouterr().out) == (cold, first)
        assert warm == (1 if query == "zzqqxx" else 0)


def test_ls_query_text_rows_come_from_the_fresh_index_as_the_refreshing_path_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ls --query` (rows, not JSON) decodes the hits `Catalog.ranked` names, not every row
    loaded, checked and filtered by `Catalog.matching` (at 100,000 sessions a missing word
    took 1.5 s, now 0.23 s): the same lines, in every sort, whatever the query.  (A query
    `ranked` cannot answer, `UNSUPPORTED`, still takes `matching`: test_cli_query.py.)"""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=60, projects=3, seed=8, mean_bytes=4000)
    roots = [f"--root={folder}" for folder in folders(root)]
    main(["index", *roots])
    capsys.readouterr()
    catalog = Catalog(folders(root), cache_dir=tmp_path / "probe")
    try:
        project = ["--cwd", busiest_cwd(catalog)]
    finally:
        catalog.close()
    commands = [
        ["ls", *scope, *roots, *sort]
        for scope in (["--all"], project)
        for sort in ([], ["--sort=recent"], ["--sort=created"], ["--sort=threaded"])
    ]
    real_matching = Catalog.matching
    monkeypatch.setattr(Catalog, "ranked_summaries", lambda *args: None)  # the refreshing path's rows
    expected = {}
    for query in QUERIES:
        for command in commands:
            code = main([*command, "--query", query])
            expected[query, *command] = code, capsys.readouterr().out
    monkeypatch.undo()

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("every row loaded for a query the fresh index answers")

    monkeypatch.setattr(Catalog, "matching", refused)
    for query in QUERIES:
        for command in commands:
            code = main([*command, "--query", query])
            assert (code, capsys.readouterr().out) == expected[query, *command], (query, command)
    monkeypatch.setattr(Catalog, "matching", real_matching)
    assert sum(code == 0 for code, _out in expected.values()) > len(expected) // 2
    assert all(expected["sqlite", *command][1].count("\n") > 1 for command in commands), "both scopes list hits"


def test_exact_where_from_a_fresh_index_equals_the_refreshing_path_and_sees_a_new_file(tmp_path: Path) -> None:
    """`resolve`'s lookup (`Catalog.exact_where`) decodes only the kept sessions of a fresh
    index, and a file added since the index was made is read and found."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=3, seed=7, mean_bytes=3000)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    try:
        everything = catalog.exact()  # the index, brought up to date
        assert catalog.exact_where(lambda _path, _title: True) == everything
        assert catalog.last_stats.read == 0 and catalog.last_stats.reused == len(everything)
        wanted = everything[len(everything) // 2]
        titles: list[tuple[str, str, str] | None] = []
        kept = catalog.exact_where(lambda path, title: titles.append(title) or path == wanted.path)
        assert kept == [wanted] and None not in titles  # every stored title passed its check

        files = sorted(root.rglob("*.jsonl"))
        added = files[0].with_name("2026-01-02T00-00-00-000Z_0badc0de-0000-4000-8000-000000000000.jsonl")
        shutil.copyfile(files[0], added)
        found = catalog.exact_where(lambda _path, _title: True)  # a new file: read, then from the index
        assert str(added) in [summary.path for summary in found]
        assert catalog.index is not None and catalog.index.row(str(added)) is not None
        assert found == catalog.exact()
    finally:
        catalog.close()


def test_stored_titles_are_split_in_bulk_as_one_by_one() -> None:
    from seance.core.index import split_title

    titles = [b"0a1b\nname\nfirst message", "é\n\nx".encode(), b"id\n\n"]
    assert indexquery._split_titles(titles) == [split_title(title) for title in titles]
    assert indexquery._split_titles([b"a\nb\nc", b"a\nb\nc\nd", b"a\nb"]) is None  # three titles' lines, shifted
    assert indexquery._split_titles([]) == []


def test_a_signature_check_made_ahead_is_taken_only_for_the_same_full_text_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ls --query`'s discovery child checks the full-text signature ahead (`fts_verdict`);
    the query takes that check as its own only for the same index file, when it matched, and
    when its read transaction sees the same FTS5 structure and stored signature: after a
    write, for another file, or when it did not match, the query counts it itself."""
    from seance.core import index as index_module
    from seance.core.ftscheck import fts_verdict

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=20, projects=2, seed=9, mean_bytes=3000)
    cache = tmp_path / "cache"
    catalog = Catalog(folders(root), cache_dir=cache)
    try:
        catalog.refresh()
        index = catalog.index
        assert index is not None
        counted: list[int] = []
        real = index_module._fts_signature
        monkeypatch.setattr(index_module, "_fts_signature", lambda db: counted.append(1) or real(db))
        full_text = parse_query("sqlite").full_text()
        assert full_text is not None

        def search(verdict: object) -> tuple[dict, int]:
            index._verified.clear()  # as a new process
            counted.clear()
            with index.snapshot():
                index.adopt_fts_verdict(verdict)  # type: ignore[arg-type]
                found = index.best_fields(full_text, include_cwd=True)
            return found, len(counted)

        verdict = fts_verdict(cache)
        assert verdict is not None and verdict[3]
        expected, count = search(None)
        assert expected and count == 1  # counted here
        assert search(verdict) == (expected, 0)  # taken: not counted again
        assert search((str(tmp_path / "other" / DB_NAME), *verdict[1:]))[1] == 1  # another index file's
        assert search((*verdict[:3], False))[1] == 1  # it did not match: counted here
        assert fts_verdict(tmp_path / "nothing-here") is None  # no index: nothing to take (and none made)
        assert not (tmp_path / "nothing-here").exists()

        _append_message(sorted(root.rglob("*.jsonl"))[0], "a quokkaword appears")
        catalog.refresh()  # the full-text index changed since the check
        assert search(verdict)[1] == 1

        with sqlite3.connect(cache / DB_NAME) as db:
            db.execute("DELETE FROM fts_data WHERE rowid IN (SELECT rowid FROM fts_data ORDER BY rowid DESC LIMIT 3)")
        damaged = fts_verdict(cache)
        assert damaged is not None and not damaged[3]
        with pytest.raises(sqlite3.DatabaseError):
            search(damaged)  # not taken: the query's own check refuses the damaged index
    finally:
        catalog.close()


def test_with_no_discovery_child_a_ranked_query_has_a_thread_check_the_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its files found by no child (a resident watcher's listing; here: found in the
    process), a query that ranks has a thread of its own count the full-text signature while
    it ranks (`ftscheck.VerdictAhead`), and takes that check as its own; a query answered from
    its stored answer starts none.  A damaged full-text index is still refused."""
    import threading

    from seance.core import ftscheck
    from seance.core import index as index_module

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=20, projects=2, seed=9, mean_bytes=3000)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache", workers=1)  # no child: found here
    counted: list[str] = []

    def counting(real: Callable[[sqlite3.Connection], int]) -> Callable[[sqlite3.Connection], int]:
        return lambda db: counted.append(threading.current_thread().name) or real(db)

    monkeypatch.setattr(index_module, "_fts_signature", counting(index_module._fts_signature))  # the query's own
    monkeypatch.setattr(ftscheck, "fts_signature", counting(ftscheck.fts_signature))  # the verdict's
    try:
        catalog.refresh()
        expected = reference(catalog, "sqlite", None)
        for asking in range(3):
            assert catalog.index is not None
            catalog.index._verified.clear()  # as a new process
            counted.clear()
            answer = catalog.ranked(parse_query("sqlite"), None, stored_as="sqlite")
            assert answer is not None  # printed (its key kept, then the answer itself)
            printed = orjson.loads(b"".join(catalog.query_json_parts(answer)))
            assert [item["path"] for item in printed] == [item["path"] for item in expected]
            # ranked twice, each with the count in the thread; the kept answer: none counted
            assert counted == (["seance-fts-verdict"] if asking < 2 else []), asking
        with sqlite3.connect(tmp_path / "cache" / DB_NAME) as db:
            db.execute("DELETE FROM fts_data WHERE rowid IN (SELECT rowid FROM fts_data ORDER BY rowid DESC LIMIT 3)")
        catalog.index._verified.clear()
        ahead = ftscheck.VerdictAhead(tmp_path / "cache")
        ahead.start()
        with pytest.raises(sqlite3.DatabaseError), catalog.index.snapshot():  # (as `rank` takes it)
            catalog.index.adopt_fts_verdict(ahead())  # the thread's verdict: no match, not taken
            catalog.index.check_full_text()
        assert ahead() is not None and not ahead()[3]  # type: ignore[index]
    finally:
        catalog.close()


def test_kept_rows_are_updated_from_the_index_s_checks_not_from_an_unchanged_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an append to one file, rows kept for the files before it are updated
    (`indexquery._updated_rows`): the appended file's row is read again, and so is a row
    changed in the index while its file's stat did not (here another session's title put
    on it, with its check): what is used is the index's row, never one trusted for its
    stat; every answer equals one made from every row read again."""
    from seance.core.index import Index, _blob_check

    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=8, mean_bytes=3000)
    catalog = Catalog(folders(root), cache_dir=tmp_path / "cache")
    database = tmp_path / "cache" / DB_NAME
    read: list[list[str]] = []
    original = Index.query_rows

    def counted(index: Index, *args: object, paths: list[str] | None = None, **kwargs: object) -> object:
        read.append(sorted(paths) if paths is not None else ["every row"])
        return original(index, *args, paths=paths, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Index, "query_rows", counted)
    try:
        catalog.refresh()
        for _ in range(3):  # the rows kept (the first query keeps only the files' key)
            ranked(catalog, "sqlite", None)
        files = sorted(root.rglob("*.jsonl"))
        changed, donor, appended = str(files[3]), str(files[11]), files[20]
        with sqlite3.connect(database) as db:
            (title,) = db.execute("SELECT title FROM files WHERE path = ?", (donor,)).fetchone()
            check = _blob_check(title, changed)
            db.execute("UPDATE files SET title = ?, title_check = ? WHERE path = ?", (title, check, changed))
        _append_message(appended, "sqlite zanzibar")
        catalog.refresh()  # (the index catches up with the append, as a watcher would)
        words = ["sqlite", "zanzibar", json.loads(files[11].read_text().splitlines()[0])["id"][:8]]
        for number, word in enumerate(words):
            read.clear()
            answer = ranked(catalog, word, None)
            assert answer is not None
            # the first updates the rows (the two rows read alone), the others use them as kept
            assert read == ([sorted([changed, str(appended)])] if number == 0 else []), (word, read)
            forget_kept_rows(database)
            assert ranked(catalog, word, None) == answer, word  # every row read again
            for _ in range(2):
                ranked(catalog, word, None)  # kept again (the first keeps only the key)
    finally:
        catalog.close()
