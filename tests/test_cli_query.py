"""`seance ls --query` answers from the index (`Catalog.matching`, and for `--json`
`Catalog.matching_pi_json`, which decodes no summary at all): the same sessions, in the
same order, as ranking every exact summary (`search` over `Catalog.exact`, the path it
replaced), on a generated corpus and on a copy of the shared corpus, for every kind of term."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from seance.cli import main
from seance.cli.marks import marked_json
from seance.core.catalog import Catalog
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME
from seance.core.marks import Mark, MarkStore
from seance.core.model import SessionSummary
from seance.core.search import parse_query, search


def slow_summaries(catalog: Catalog, query: str, cwd: str | None, marks: dict[str, Mark]) -> list[SessionSummary]:
    """What `ls --query` did before: decode every summary, rank them all (less those whose text
    holds a negated word: `Catalog.text_excluded`)."""
    parsed = parse_query(query)
    summaries = catalog.exact(cwd, full_text=True)  # brings the index (and its text) up to date first
    excluded = catalog.text_excluded(parsed, include_cwd=cwd is None)
    summaries = [summary for summary in summaries if summary.path not in excluded]
    text_hits = {hit.path: hit for hit in catalog.search_text(parsed, include_cwd=cwd is None)}
    return [hit.summary for hit in search(summaries, parsed, text_hits=text_hits, paths=cwd is None, marks=marks)]


def slow_path(catalog: Catalog, query: str, cwd: str | None, marks: dict[str, Mark]) -> list[str]:
    return [summary.path for summary in slow_summaries(catalog, query, cwd, marks)]


def stored_path(catalog: Catalog, query: str, cwd: str | None) -> list[dict] | None:
    """`ls --json --query`'s objects from the stored ones (None: the query needs summaries)."""
    answer = catalog.matching_pi_json(parse_query(query), cwd)
    return None if answer is None else json.loads(answer)


def fast_path(catalog: Catalog, query: str, cwd: str | None, marks: dict[str, Mark]) -> list[str]:
    return [summary.path for summary in catalog.matching(parse_query(query), cwd, marks=marks)]


def folders(root: Path) -> list[Path]:
    """Every folder holding sessions (a root is searched one level deep; the corpus nests deeper)."""
    return sorted({path.parent for path in root.rglob("*.jsonl")})


def compare(root: Path, tmp_path: Path, queries: list[str], marks: dict[str, Mark], cwd: str | None) -> int:
    """Both paths, cold (the fast one reads every file itself) and warm; returns the hits seen."""
    roots = folders(root)
    fast, slow = Catalog(roots, cache_dir=tmp_path / "fast"), Catalog(roots, cache_dir=tmp_path / "slow")
    stored = Catalog(roots, cache_dir=tmp_path / "stored")
    seen = 0
    try:
        for number, query in enumerate(queries):
            for scope in (None, cwd):
                first = number == 0 and scope is None
                objects = stored_path(stored, query, scope)  # the first call reads every file itself
                assert (stored.last_stats.read > 0) == (first and objects is not None)
                got = fast_path(fast, query, scope, marks)
                assert (fast.last_stats.read > 0) == first  # it indexed the corpus itself, then reused it
                expected = slow_summaries(slow, query, scope, marks)
                assert got == [summary.path for summary in expected], (query, scope)
                if objects is not None:  # its objects too: pi's keys, exactly what the summaries say
                    assert objects == [summary.to_pi_json() for summary in expected], (query, scope)
                    seen += 1
                seen += len(got)
        return seen
    finally:
        fast.close()
        slow.close()
        stored.close()


def some_ids(root: Path, count: int) -> list[str]:
    """Session ids to pin and tag (from the 4 KB prefixes: no index involved)."""
    catalog = Catalog(folders(root))
    try:
        return sorted(summary.id for summary in catalog.quick(text=False) if summary.id)[:count]
    finally:
        catalog.close()


def busiest_cwd(root: Path) -> str:
    """The project scope of the comparison: the cwd most sessions have."""
    catalog = Catalog(folders(root))
    try:
        counts = Counter(summary.cwd for summary in catalog.quick(text=False))
    finally:
        catalog.close()
    return counts.most_common(1)[0][0]


GENERATED_QUERIES = [
    "sqlite",  # nearly every session, every tier
    "qlit",  # a substring inside words: titles only, never FTS
    "sqlt",  # fuzzy
    "srch idx",  # two fuzzy tokens
    "go",  # short: substring only
    '"memory latency"',
    '"fix the"',
    "re:^fix",
    "re:sqlite|fts5",
    "!sqlite",
    "cache !bench",
    "tool:grep",
    "bash:git",
    "user:refactor",
    "result:error",
    "thinking:cache",
    "name:fix",
    "cwd:api",
    "path:2025-1",
    "model:gemini index",
    "after:2025-12-01 tree",
    "before:2025-11-01",
    "tag:work",
    "is:pinned",
    "is:tagged sqlite",
    "!tag:work cache",
    "label:keep",
    "api-server",  # the cwd's words: a path hit in the all-projects scope
    "zzqqxx",  # nothing
    "",  # everything
]


def test_ls_query_from_the_index_equals_ranking_every_summary_on_a_generated_corpus(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=120, projects=5, seed=3, mean_bytes=6000)
    ids = some_ids(root, 12)
    marks = {
        ids[0]: Mark(True, ("work",)),
        ids[1]: Mark(True, ()),
        ids[2]: Mark(False, ("work", "x")),
        ids[3]: Mark(False, ("y",)),
    }
    queries = [*GENERATED_QUERIES, ids[5][:6], f"id:{ids[6][:4]}", ids[7]]
    cwd = busiest_cwd(root)
    assert compare(root, tmp_path, queries, marks, cwd) > 500


CORPUS_QUERIES = [
    '"Cannot find module"',
    "u0_a360",
    "shadow-realms",
    "error:cannot",
    "tool:bash",
    "test",
    "fix bug",
    "pi",
    "re:sess(ion)?s?",
    "!test",
    "the !a",
    "is:pinned",
    "tag:work",
    "xyzzy",
]


def test_ls_query_from_the_index_equals_ranking_every_summary_on_the_shared_corpus(
    corpus: Path, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(corpus, root)
    ids = some_ids(root, 4)
    marks = {ids[0]: Mark(True, ("work",)), ids[1]: Mark(False, ("work",))}
    cwd = busiest_cwd(root)
    assert compare(root, tmp_path, CORPUS_QUERIES, marks, cwd) > 0


def test_a_damaged_stored_title_is_folded_again_not_trusted(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=5, mean_bytes=4000)
    catalog = Catalog([*folders(root)], cache_dir=tmp_path / "cache")
    try:
        expected = fast_path(catalog, "sqlt", None, {})
        assert expected
        with sqlite3.connect(tmp_path / "cache" / DB_NAME) as db:  # every title now says nothing
            db.execute("UPDATE files SET title = CAST('x\ny\nz' AS BLOB)")
        assert fast_path(catalog, "sqlt", None, {}) == expected
        assert catalog.matching_pi_json(parse_query("sqlt")) is None  # `ls --json` falls back to `matching`
    finally:
        catalog.close()


def test_ls_query_json_lists_the_ranked_hits_and_a_bad_query_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=2, seed=9, mean_bytes=4000)
    roots = [f"--root={folder}" for folder in folders(root)]
    assert main(["ls", "--all", "--json", *roots, "--query", "sqlt"]) == 0
    listed = json.loads(capsys.readouterr().out)
    catalog = Catalog(folders(root))
    try:
        expected = slow_summaries(catalog, "sqlt", None, {})
        assert len(expected) >= 2
        assert [item["path"] for item in listed] == [summary.path for summary in expected]
        assert listed == [{"pinned": False, "tags": [], **summary.to_pi_json()} for summary in expected]
        # a pinned and a tagged hit: pinned first, each with its marks, as the summaries' path printed them
        pinned, tagged = expected[-1], expected[0]
        store = MarkStore()
        store.set_pinned(pinned.id, True)
        store.set_tags(tagged.id, ("work",))
        assert main(["ls", "--all", "--json", *roots, "--query", "sqlt"]) == 0
        marked = json.loads(capsys.readouterr().out)
        marks = {pinned.id: Mark(True, ()), tagged.id: Mark(False, ("work",))}
        assert marked == [marked_json(summary, marks) for summary in [pinned, *expected[:-1]]]
    finally:
        catalog.close()
    assert main(["ls", "--all", "--json", *roots, "--query", "zzqqxx"]) == 1
    assert capsys.readouterr().out.strip() == "[]"
    assert main(["ls", "--all", *roots, "--query", "re:("]) == 2
    error = capsys.readouterr().err
    assert "bad query" in error and "Traceback" not in error


@pytest.mark.parametrize("query", ["caf\udce9", '"caf\udce9"', "user:caf\udce9"])
def test_a_query_that_is_not_utf8_is_a_bad_query_and_the_index_keeps_its_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str
) -> None:
    """`seance ls -q $'caf\\xe9'` from a terminal that is not UTF-8: SQLite could not take the
    lone surrogate argv made of the byte, the guard took that for a damaged index and emptied
    it (every session read again next time), then said the index could not be rebuilt."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=6, projects=2, seed=5, mean_bytes=3_000)
    assert main(["index", "--root", str(root)]) == 0
    capsys.readouterr()
    for extra in ([], ["--json"]):
        code = main(["ls", "--root", str(root), "--all", *extra, "--query", query])
        err = capsys.readouterr().err
        assert code == 2 and "bad query" in err and "not valid UTF-8" in err, err
        assert "index" not in err
    catalog = Catalog([root])
    try:
        catalog.exact()
        assert (catalog.last_stats.read, catalog.last_stats.reused) == (0, 6)
    finally:
        catalog.close()
