"""`seance resolve KEY` (and every SESSION argument given as a key) answers from the index:
`find_session` decodes only the sessions whose path or stored title may match
(`resume.may_name`), and names the same session, or raises the same ambiguity, as the tiers
run over every summary (the 4 KB prefixes for ids and file names, then the exact listing for
names: the path it replaced), for ids, file names, names and their prefixes, in any case,
with odd whitespace and non-ASCII letters whose case folds differently."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from seance.cli.errors import CliError, ExitCode
from seance.cli.scope import find_session
from seance.core.catalog import Catalog, in_project
from seance.core.generate import generate_corpus
from seance.core.resume import AmbiguousKey, bucket_name, resolve, resolve_name, session_file_name
from seance.core.session import SessionError

STAMP = "2025-03-01T10:00:00.000Z"


def write_named(root: Path, cwd: str, sid: str, name: str | None, file_id: str | None = None) -> Path:
    """A session with a `session_info` name after its first exchange (a name set late)."""
    entries: list[dict] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": STAMP, "cwd": cwd},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": STAMP,
            "message": {"role": "user", "content": f"question in {sid}"},
        },
    ]
    if name is not None:
        entries.append({"type": "session_info", "id": "n1", "parentId": "u1", "timestamp": STAMP, "name": name})
    bucket = root / bucket_name(cwd)
    bucket.mkdir(parents=True, exist_ok=True)
    path = bucket / session_file_name(STAMP, file_id or sid)
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    return path


def old_find(key: str, cwd: str, catalog: Catalog) -> str:
    """What `find_session` did before: ids on every 4 KB prefix, names on every exact summary."""
    try:
        everything = catalog.quick(text=False)
        found = resolve(key, in_project(everything, cwd), everything, cwd)
        if found is None:
            everything = catalog.exact()
            found = resolve_name(key, in_project(everything, cwd), everything, cwd)
    except AmbiguousKey as ambiguous:
        return f"ambiguous: {ambiguous}"  # says how many
    except SessionError as error:
        return f"error: {error}"
    return "none" if found is None else f"{found.path} other={found.other_project}"


def new_find(key: str, cwd: str, catalog: Catalog) -> str:
    try:
        found = find_session(key, cwd, catalog)
    except CliError as error:
        if error.code == ExitCode.NOT_FOUND:
            return "none"
        return f"{'ambiguous' if 'sessions; give more' in str(error) else 'error'}: {error}"
    except SessionError as error:
        return f"error: {error}"
    return f"{found.path} other={found.other_project}"


def test_resolve_from_the_index_names_what_every_summary_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=60, projects=3, seed=11, mean_bytes=3000)
    here, there = "/proj/here", "/proj/there"
    write_named(root, here, "aaaa1111-0000-4000-8000-000000000001", "Fix  The Bug")  # two spaces
    write_named(root, there, "aaaa2222-0000-4000-8000-000000000002", "fix the build")
    write_named(root, here, "ABCD3333-0000-4000-8000-000000000003", "Straße Plan")  # casefold: strasse
    write_named(root, there, "bbbb4444-0000-4000-8000-000000000004", "ſpecial run")  # casefold: special
    write_named(root, here, "cccc5555-0000-4000-8000-000000000005", "   padded name  ")
    write_named(root, there, "dddd6666-0000-4000-8000-000000000006", None, file_id="renamed-file")
    write_named(root, here, "eeee7777-0000-4000-8000-000000000007", "x" * 400)  # longer than a stored title
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    generated = [summary for summary in catalog.exact() if summary.cwd not in (here, there)]
    named = [summary.name for summary in generated if summary.name]
    keys = [
        "aaaa",  # an id prefix shared by two: ambiguous
        "aaaa1",
        "AAAA2222",
        "abcd",
        "ABCD3333-0000-4000-8000-000000000003",
        "renamed",  # the file name only
        "dddd6666",  # the id, not in the file name
        "fix  the bug",
        "fix the",  # a name prefix: two sessions
        "FIX THE B",
        "strasse",
        "straße",
        "special",
        "padded",
        "padded name",
        "x" * 350,
        "x" * 401,
        "nothing-like-it",
        "",
        *(summary.id[:6] for summary in generated[:6]),
        *(summary.id.upper() for summary in generated[6:9]),
        *named[:6],
        *(name[:4] for name in named[:4]),
        *(Path(summary.path).name[:12] for summary in generated[9:12]),
    ]
    try:
        outcomes = []
        for key in keys:
            for cwd in (here, there):
                expected = old_find(key, cwd, catalog)
                assert new_find(key, cwd, catalog) == expected, (key, cwd)
                outcomes.append(expected.split(":")[0].split(" ")[0])
        capsys.readouterr()
        assert {"ambiguous", "none", "error"} <= set(outcomes)
        assert sum(outcome.startswith("/") for outcome in outcomes) > len(keys)
    finally:
        catalog.close()


def test_resolve_decodes_only_the_sessions_a_key_may_name(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=80, projects=3, seed=12, mean_bytes=3000)
    write_named(root, "/proj/here", "ffff8888-0000-4000-8000-000000000008", "Rare Name")
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    try:
        catalog.exact()  # the index is warm
        from seance.core.resume import may_name

        assert [summary.id for summary in catalog.exact_where(may_name("ffff88"))] == [
            "ffff8888-0000-4000-8000-000000000008"
        ]
        assert [summary.name for summary in catalog.exact_where(may_name("rare n"))] == ["Rare Name"]
        assert catalog.last_stats.read == 0
    finally:
        catalog.close()
