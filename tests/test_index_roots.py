"""One index cache shared by several sessions roots: each root's listing, search, `ls --json`,
`ls --query`, `resolve` and first paint reads only its own files (`Index(roots=...)`, path
ranges on the path index, file-id runs for FTS5) and answers exactly what a private cache
gives, for roots whose names are prefixes of each other (`sessions` / `sessions2`), a root
reached through a symbolic link (indexed under that spelling, beside the real one), a session
moved from one root to another, and several roots listed together."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from seance.cli.main import main
from seance.core import firstpaint
from seance.core.catalog import Catalog
from seance.core.discovery import root_path
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME, Index, Writer, root_ranges
from seance.core.search import parse_query

WORDS = ("sqlite", "fixture", "zebra", "refactor parser")


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    """Three stores: `sessions`, `sessions2` (a name that extends the first's) and `real`,
    plus `link`, a symbolic link to `real` (the same files under a second spelling)."""
    base = tmp_path / "x"
    made = {"a": base / "sessions", "b": base / "sessions2", "c": base / "real"}
    for seed, root in enumerate(made.values(), start=1):
        generate_corpus(root, sessions=14, projects=3, seed=seed, mean_bytes=2_500)
    (base / "sessions-old").mkdir()  # sorts between the two: never under either
    generate_corpus(base / "sessions-old", sessions=5, projects=1, seed=9, mean_bytes=2_000)
    made["old"] = base / "sessions-old"
    made["link"] = base / "link"
    made["link"].symlink_to(made["c"], target_is_directory=True)
    return made


def fill(cache: Path, *roots: Path) -> None:
    """Index every root into `cache`, text included, one catalog each (as separate runs do)."""
    for root in roots:
        catalog = Catalog([root], cache_dir=cache)
        catalog.refresh()
        catalog.close()


def listing(roots: list[Path], cache: Path) -> dict[str, object]:
    """What a catalog on `roots` answers from `cache`, warm (the second of each call)."""
    catalog = Catalog(roots, cache_dir=cache)
    try:
        catalog.refresh()
        everything = catalog.refresh()
        cwd = everything[0].cwd
        answers: dict[str, object] = {
            "refresh": everything,
            "exact": catalog.exact(cwd),
            "ls_json": [b"".join(catalog.ls_json_parts(None)) for _ in range(2)],
            "ls_json_cwd": b"".join(catalog.ls_json_parts(cwd)),
            "stored": [summary.path for summary in catalog.stored(None) or []],
            "stored_cwd": [summary.path for summary in catalog.stored(cwd) or []],
            "known": firstpaint.known_session(catalog),
        }
        for word in WORDS:
            answers[f"search {word}"] = sorted((hit.path, hit.field) for hit in catalog.search_text(word))
            answers[f"search {word} limit"] = len(catalog.search_text(word, limit=3))
            hits = catalog.text_hits(parse_query(word))
            answers[f"text_hits {word}"] = sorted((path, hits[path].field) for path in hits)
            within = [summary.path for summary in everything[::2]]
            hits = catalog.text_hits(parse_query(word), within=within)
            answers[f"text_hits within {word}"] = sorted(hits)
            answers[f"matching {word}"] = [summary.path for summary in catalog.matching(parse_query(word))]
            answers[f"ranked {word}"] = ranked_paths(catalog, word)
        answers["where"] = [summary.path for summary in catalog.exact_where(lambda path, title: "1" in path)]
        return answers
    finally:
        catalog.close()


def ranked_paths(catalog: Catalog, word: str) -> list[str] | None:
    ranked = catalog.ranked(parse_query(word))
    return None if ranked is None else [row[1] for row in ranked.rows]


def under(paths: list[str], root: Path) -> bool:
    prefix = root_path(root) + os.sep
    return all(path.startswith(prefix) for path in paths)


def test_root_ranges_keep_name_prefixes_apart_and_merge_nested_roots() -> None:
    ((low, high),) = root_ranges(["/x/sessions"])
    inside = ["/x/sessions/a.jsonl", "/x/sessions/--p--/b.jsonl"]
    outside = ["/x/sessions2/a.jsonl", "/x/sessions-old/a.jsonl", "/x/sessions", "/x/sessionsA/a", "/x/sessions0/a"]
    assert all(low <= path < high for path in inside)
    assert not any(low <= path < high for path in outside)
    assert root_ranges(["/x/sessions2", "/x/sessions", "/x/sessions/--p--"]) == [
        ("/x/sessions/", "/x/sessions0"),
        ("/x/sessions2/", "/x/sessions20"),
    ]
    assert root_ranges(["/", "/x"]) == [("/", "0")]
    assert root_ranges([]) == []


def test_each_root_of_a_shared_cache_answers_as_a_private_cache_does(roots: dict[str, Path], tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    fill(shared, roots["a"], roots["b"], roots["old"], roots["c"], roots["link"])
    assert len(Index(shared).rows()) == 14 * 4 + 5, "the same files under `real` and `link`: two rows each"
    for name in ("a", "b", "c", "link"):
        root = roots[name]
        private = tmp_path / f"private-{name}"
        fill(private, root)
        mine, alone = listing([root], shared), listing([root], private)
        assert mine == alone, name
        assert len(mine["refresh"]) == 14  # type: ignore[arg-type]
        assert under([summary.path for summary in mine["refresh"]], root)  # type: ignore[attr-defined]
        for word in WORDS:
            assert under([path for path, _field in mine[f"search {word}"]], root)  # type: ignore[attr-defined]
            assert under(mine[f"matching {word}"], root)  # type: ignore[arg-type]
        assert any(mine[f"search {word}"] for word in WORDS), "the words are in the corpus"


def test_a_shared_cache_reads_only_the_roots_rows_and_a_lone_root_scans_the_table(
    roots: dict[str, Path], tmp_path: Path
) -> None:
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    fill(shared, roots["a"], roots["b"], roots["c"])
    fill(alone, roots["a"])
    index = Index(shared, roots=[root_path(roots["a"])])
    assert len(index.rows()) == 14 and len(Index(shared).rows()) == 42
    assert {row[1] for row in index.query_rows() or []} == {path for path, _size, _mtime in index.rows()}
    assert len(index.sessions_in(None)) == 14
    assert index._ranges(index.db) == root_ranges([root_path(roots["a"])]), "narrowed"
    lone = Index(alone, roots=[root_path(roots["a"])])
    assert lone._ranges(lone.db) is None, "nothing outside the root: the plain scan of before"
    assert len(lone.rows()) == 14


def test_several_roots_together_list_as_with_a_private_cache(roots: dict[str, Path], tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    fill(shared, roots["a"], roots["b"], roots["old"], roots["link"])
    together = [roots["a"], roots["link"], roots["b"]]
    private = tmp_path / "private"
    fill(private, *together)
    mine = listing(together, shared)
    assert mine == listing(together, private)
    assert len(mine["refresh"]) == 42  # type: ignore[arg-type]
    paths = [summary.path for summary in mine["refresh"]]  # type: ignore[attr-defined]
    assert not any(path.startswith(root_path(roots["old"]) + os.sep) for path in paths)


def test_a_session_moved_to_another_root_is_listed_and_found_there_only(roots: dict[str, Path], tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    fill(shared, roots["a"], roots["b"])
    moved = sorted(roots["a"].rglob("*.jsonl"))[0]
    target = roots["b"] / moved.parent.name / moved.name
    target.parent.mkdir(exist_ok=True)
    first_words = orjson.loads(moved.read_bytes().splitlines()[0])["id"]
    shutil.move(moved, target)
    for name, has in (("a", False), ("b", True), ("a", False)):
        root = roots[name]
        private = tmp_path / f"private-{name}-{has}"
        fill(private, root)
        mine = listing([root], shared)
        assert mine == listing([root], private), name
        paths = [summary.path for summary in mine["refresh"]]  # type: ignore[attr-defined]
        assert (str(target) in paths) is has and str(moved) not in paths
        catalog = Catalog([root], cache_dir=shared)
        assert bool(catalog.search_text(first_words)) is has, "the id row follows the file"
        catalog.close()


def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cache: Path, *argv: str) -> tuple:
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(cache))
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out


def test_cli_ls_query_and_resolve_answer_each_root_as_a_private_cache(
    roots: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    fill(shared, roots["a"], roots["b"], roots["c"], roots["link"])
    for name in ("a", "b", "link"):
        root = str(roots[name])
        private = tmp_path / f"private-{name}"
        fill(private, roots[name])
        key = orjson.loads(sorted(roots[name].rglob("*.jsonl"))[3].read_bytes().splitlines()[0])["id"][:8]
        commands = [
            ["ls", "--all", "--json", "--root", root],
            *(["ls", "--all", "--json", "--root", root, "--query", word] for word in WORDS),
            ["ls", "--all", "--root", root, "--query", "sqlite"],
            ["resolve", key, "--root", root],
        ]
        for argv in commands:
            for _ in range(3):  # cold, warm, and the rows kept by an earlier query (`core.queryrows`)
                got = run_cli(capsys, monkeypatch, shared, *argv)
                assert got == run_cli(capsys, monkeypatch, private, *argv), argv
            if "--json" in argv:
                assert under([item["path"] for item in orjson.loads(got[1])], roots[name]), argv
        assert got[0] == 0 and got[1].strip().startswith(root_path(roots[name]))


def test_cli_ls_of_several_roots_together_answers_as_a_private_cache(
    roots: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared, private = tmp_path / "shared", tmp_path / "private"
    fill(shared, roots["a"], roots["b"], roots["old"], roots["c"], roots["link"])
    fill(private, roots["a"], roots["link"])
    given = ["--root", str(roots["a"]), "--root", str(roots["link"])]
    for argv in (["ls", "--all", "--json", *given], ["ls", "--all", "--json", *given, "--query", "sqlite"]):
        for _ in range(3):
            got = run_cli(capsys, monkeypatch, shared, *argv)
            assert got == run_cli(capsys, monkeypatch, private, *argv), argv
        paths = [item["path"] for item in orjson.loads(got[1])]
        assert paths and all(under([path], roots["a"]) or under([path], roots["link"]) for path in paths), argv


def test_a_root_whose_name_is_not_utf8_is_listed_beside_a_shared_cache(tmp_path: Path) -> None:
    """Its files are never stored (SQLite keeps UTF-8): it has no range and asks nothing,
    and the index is used (not given up on as damaged) for the other roots listed with it."""
    odd, plain, other = tmp_path / os.fsdecode(b"caf\xe9"), tmp_path / "plain", tmp_path / "other"
    for seed, root in enumerate((odd, plain, other), start=1):
        generate_corpus(root, sessions=3 + seed, projects=1, seed=seed, mean_bytes=2_000)
    cache = tmp_path / "cache"
    fill(cache, plain, other)
    assert root_ranges([str(odd)]) == []
    for roots, count in (([odd], 4), ([odd, plain], 9)):
        catalog = Catalog(roots, cache_dir=cache)
        summaries = catalog.refresh()
        hits = {hit.path for hit in catalog.search_text("the")}
        assert len(summaries) == count and catalog.index_problem is None
        assert hits == ({summary.path for summary in summaries if summary.path.startswith(f"{plain}/")})
        catalog.close()


def test_index_rebuild_of_one_root_keeps_the_other_roots_rows(
    roots: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`seance index --rebuild --root A` on a cache that also serves B and `sessions-old`
    reads A's 14 files again and leaves the others' rows as they were: B's next listing
    reads nothing, and every root still answers as a private cache does."""
    shared = tmp_path / "shared"
    fill(shared, roots["a"], roots["b"], roots["old"])
    others = {
        path: row
        for path, row in Index(shared).rows().items()
        if not path[0].startswith(root_path(roots["a"]) + os.sep)
    }
    code, out = run_cli(capsys, monkeypatch, shared, "index", "--rebuild", "--root", str(roots["a"]))
    assert code == 0 and "(14 read, 0 appended, 0 unchanged" in out, out
    after = Index(shared).rows()
    assert {path: row for path, row in after.items() if path in others} == others, "the other roots' rows kept"
    assert len(after) == len(others) + 14
    catalog = Catalog([roots["b"]], cache_dir=shared)
    catalog.refresh()
    assert catalog.last_stats.read == 0 and catalog.last_stats.reused == 14
    catalog.close()
    for name in ("a", "b", "old"):
        private = tmp_path / f"private-{name}"
        fill(private, roots[name])
        assert listing([roots[name]], shared) == listing([roots[name]], private), name


def test_index_rebuild_of_the_only_root_empties_the_cache(
    roots: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing else in the cache, `--rebuild` empties the tables whole (the fast path):
    no row is forgotten file by file, and no full text is indexed again from the cache."""
    cache = tmp_path / "cache"
    fill(cache, roots["a"])
    forgotten: list[object] = []
    forget_under = Writer.forget_under

    def recorded(writer: Writer, ranges: list[tuple[str, str]]) -> None:
        forgotten.append(ranges)
        forget_under(writer, ranges)

    monkeypatch.setattr(Writer, "forget_under", recorded)
    code, out = run_cli(capsys, monkeypatch, cache, "index", "--rebuild", "--root", str(roots["a"]))
    assert code == 0 and "(14 read, 0 appended, 0 unchanged" in out, out
    assert len(Index(cache).rows()) == 14 and forgotten == []
    fill(cache, roots["b"])  # (now the cache holds another root: the other path, seen by the same spy)
    code, out = run_cli(capsys, monkeypatch, cache, "index", "--rebuild", "--root", str(roots["a"]))
    assert code == 0 and len(forgotten) == 1


def test_index_rebuild_of_one_root_repairs_a_silent_fault_in_another_roots_full_text(
    roots: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte changed inside FTS5's posting lists is a fault no check sees (the README's answer:
    `seance index --rebuild`).  With other roots in the cache, `--rebuild --root A` keeps their
    rows, but their full text is indexed again from what the cache holds: B's word is found
    again (before, the fault outlived every rebuild that named another root)."""
    word = "qqxylophonezz"
    project = next(path for path in sorted(roots["b"].iterdir()) if path.is_dir())
    session = project / "2024-01-01T00-00-00-000Z_0190a0a0-0000-7000-8000-000000000001.jsonl"
    stamp = "2024-01-01T00:00:00.000Z"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "0190a0a0-0000-7000-8000-000000000001",
            "timestamp": stamp,
            "cwd": "/w",
        },
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": stamp,
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": f"the word is {word}"}]},
        },
    ]
    session.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    shared = tmp_path / "shared"
    fill(shared, roots["a"], roots["b"])

    def found() -> list[str]:
        catalog = Catalog([roots["b"]], cache_dir=shared)
        try:
            hits = [hit.path for hit in catalog.search_text(word)]
            assert catalog.index_problem is None
            return hits
        finally:
            catalog.close()

    assert found() == [str(session)]
    db = sqlite3.connect(shared / DB_NAME)
    with db:
        damaged = 0
        for block_id, block in db.execute("SELECT id, block FROM fts_data").fetchall():
            at = block.find(word[-6:].encode())
            if at >= 0:  # the term's last letter, inside a leaf of the posting lists
                changed = block[: at + 5] + b"y" + block[at + 6 :]
                db.execute("UPDATE fts_data SET block = ? WHERE id = ?", (changed, block_id))
                damaged += 1
    db.close()
    assert damaged and found() == [], "the fault is silent (the test's premise)"
    code, _out = run_cli(capsys, monkeypatch, shared, "index", "--rebuild", "--root", str(roots["a"]))
    assert code == 0
    assert found() == [str(session)]
