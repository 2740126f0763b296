"""`seance ls`, `seance index` and id-prefix SESSION arguments, through the real CLI entry point."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
from conftest import corpus_files

from seance.cli import main
from seance.cli.errors import CliError, ExitCode
from seance.cli.scope import session_path
from seance.core.generate import bucket_name
from seance.core.session import SessionError

PI_KEYS = {"path", "id", "cwd", "name", "parentSession", "created", "modified", "messageCount", "firstMessage"}


def make(root: Path, cwd: str, session_id: str, stamp: str, text: str, ts: int, **header: object) -> Path:
    path = root / bucket_name(cwd) / f"{stamp}_{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": cwd,
            **header,
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": ts},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "sessions"
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    old = make(root, str(here), "0aaa1111-0000", "2025-01-01T00-00-00-000Z", "old prompt about otters", 1_000)
    new = make(root, str(here), "0bbb2222-0000", "2025-01-02T00-00-00-000Z", "new prompt about badgers", 3_000)
    other = make(
        root, str(there), "0aaa9999-0000", "2025-01-03T00-00-00-000Z", "elsewhere otters", 5_000, parentSession=str(old)
    )
    for path, ms in ((old, 1_000), (new, 3_000), (other, 5_000)):
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
    (root / "--broken--").mkdir()
    (root / "--broken--" / "junk.jsonl").write_text("not json\n")
    return {"root": root, "here": here, "there": there, "old": old, "new": new, "other": other}


def ls(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["ls", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ls_json_current_project(store, capsys, monkeypatch) -> None:
    monkeypatch.chdir(store["here"])
    code, out, err = ls(capsys, "--root", str(store["root"]), "--json")
    rows = json.loads(out)
    assert code == 0
    assert [row["path"] for row in rows] == [str(store["new"]), str(store["old"])]
    assert set(rows[0]) == PI_KEYS | {"pinned", "tags"}  # pi's keys, and seance's marks
    assert (rows[0]["pinned"], rows[0]["tags"]) == (False, [])
    assert rows[0]["firstMessage"] == "new prompt about badgers"
    assert "junk.jsonl" in err  # skipped and said so


def test_ls_all_quick_and_cwd(store, capsys) -> None:
    _code, out, _ = ls(capsys, "--root", str(store["root"]), "--all", "--json")
    exact = json.loads(out)
    assert [row["id"] for row in exact] == ["0aaa9999-0000", "0bbb2222-0000", "0aaa1111-0000"]
    _, out, _ = ls(capsys, "--root", str(store["root"]), "--all", "--json", "--quick")
    quick = json.loads(out)
    assert [row["id"] for row in quick] == [row["id"] for row in exact]
    _, out, _ = ls(capsys, "--root", str(store["root"]), "--cwd", str(store["there"]), "--json")
    assert [row["id"] for row in json.loads(out)] == ["0aaa9999-0000"]


def test_ls_quick_json_is_the_quick_summaries(store, capsys) -> None:
    """The quick JSON fast path prints what `Catalog.quick` knows, in scope, and reports the skips."""
    from seance.core.catalog import Catalog

    catalog = Catalog([store["root"]])
    for scope in (["--all"], ["--cwd", str(store["here"])]):
        code, out, err = ls(capsys, "--root", str(store["root"]), *scope, "--json", "--quick")
        cwd = None if scope == ["--all"] else str(store["here"])
        expected = [{"pinned": False, "tags": [], **summary.to_pi_json()} for summary in catalog.quick(cwd)]
        assert code == 0 and json.loads(out) == expected
        assert "junk.jsonl" in err
    catalog.close()


def test_ls_query_sort_and_exit_codes(store, capsys) -> None:
    root = str(store["root"])
    code, out, _ = ls(capsys, "--root", root, "--all", "--json", "--query", '"otters"', "--sort", "recent")
    assert code == 0
    assert [row["id"] for row in json.loads(out)] == ["0aaa9999-0000", "0aaa1111-0000"]
    code, out, _ = ls(capsys, "--root", root, "--all", "--query", "no such words anywhere")
    assert code == ExitCode.NOT_FOUND and out == ""
    _, out, _ = ls(capsys, "--root", root, "--all", "--json", "--sort", "created")
    assert len(json.loads(out)) == 3
    _, out, _ = ls(capsys, "--root", root, "--all", "--json", "--sort", "threaded")
    threaded = [(row["id"], row["depth"]) for row in json.loads(out)]
    assert threaded == [("0bbb2222-0000", 0), ("0aaa1111-0000", 0), ("0aaa9999-0000", 1)]
    with pytest.raises(SystemExit) as exit_info:
        main(["ls", "--sort", "sideways"])
    assert exit_info.value.code == 2


def test_ls_text_rows(store, capsys) -> None:
    code, out, _ = ls(capsys, "--root", str(store["root"]), "--all")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert "elsewhere otters" in lines[0] and "there" in lines[0]


def test_root_before_the_command_is_kept(store, capsys) -> None:
    assert main(["--root", str(store["root"]), "ls", "--all", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3


def test_index_command(store, capsys) -> None:
    assert main(["index", "--root", str(store["root"])]) == 0
    assert "indexed 3 sessions" in capsys.readouterr().out
    assert main(["index", "--root", str(store["root"])]) == 0
    assert "(0 read, 0 appended, 3 unchanged, 1 skipped)" in capsys.readouterr().out
    assert main(["index", "--rebuild", "--root", str(store["root"])]) == 0
    assert "3 read" in capsys.readouterr().out


def test_index_command_fails_when_the_index_cannot_be_written(store, capsys, monkeypatch, tmp_path) -> None:
    """A cache dir that cannot hold the index (here a file where the folder should be; a full
    disk or a read-only one the same): `ls` lists from the files, but `seance index`, whose one
    job is the index, said "indexed 3 sessions" and exited 0 with nothing kept."""
    blocked = tmp_path / "cache-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(blocked))
    code = main(["index", "--root", str(store["root"])])
    out, err = capsys.readouterr()
    assert code == 2 and "indexed" not in out
    assert "the index could not be opened or written" in err and "nothing was indexed" in err


def resolve_session_arg(key: str, cwd: str, *, roots: list[Path]) -> Path:
    """SESSION given as an id prefix, resolved as every command resolves it (`--root`, `--cwd`)."""
    return session_path(key, argparse.Namespace(root=[str(root) for root in roots], cwd=cwd))


def test_resolve_session_arg(store, monkeypatch) -> None:
    roots = [store["root"]]
    here = str(store["here"])
    # id prefix, case-insensitive; the current project wins over a newer match elsewhere
    assert resolve_session_arg("0AAA", here, roots=roots) == store["old"]
    assert resolve_session_arg("0aaa", str(store["there"]), roots=roots) == store["other"]
    # file-name prefix, and the id after the file-name timestamp
    assert resolve_session_arg("2025-01-02", here, roots=roots) == store["new"]
    # not in the current project: found in all projects
    assert resolve_session_arg("0aaa9", here, roots=roots) == store["other"]
    with pytest.raises(CliError) as error:
        resolve_session_arg("zzz", here, roots=roots)
    assert error.value.code == ExitCode.NOT_FOUND


def test_resolve_session_arg_follows_the_resume_rule(store) -> None:
    """SESSION lookup is `seance.core.resume.resolve`: a whole file name is a prefix of itself,
    and an empty key is bad input, not a silent "not found"."""
    roots = [store["root"]]
    here = str(store["here"])
    assert resolve_session_arg(store["new"].name.upper(), here, roots=roots) == store["new"]
    with pytest.raises(SessionError) as error:
        resolve_session_arg("  ", here, roots=roots)
    assert getattr(error.value, "code", ExitCode.BAD_INPUT) == ExitCode.BAD_INPUT


def test_show_takes_an_id_prefix(store, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(store["root"].parent))
    monkeypatch.setenv("HOME", str(store["root"].parent))
    monkeypatch.chdir(store["here"])
    assert main(["show", "0bbb", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "0bbb2222-0000"
    assert main(["show", "0ccc", "--json"]) == ExitCode.NOT_FOUND


def test_every_corpus_file_lists(capsys) -> None:
    files = corpus_files()
    if not files:
        pytest.skip("no shared corpus")
    roots = sorted({str(path.parent) for path in files})
    args = [arg for root in roots for arg in ("--root", root)]
    code, out, err = ls(capsys, *args, "--all", "--json")
    rows = json.loads(out)
    assert code == 0
    listed = {row["path"] for row in rows}
    skipped = err.count(".jsonl")
    assert len(listed) >= len(files) - skipped
    assert all(set(row) >= PI_KEYS for row in rows)
    code, out, _ = ls(capsys, *args, "--all", "--json", "--quick")
    assert {row["path"] for row in json.loads(out)} == listed


def test_ls_query_uses_full_text_and_reports_bad_queries(store, capsys) -> None:
    root = str(store["root"])
    with open(store["old"], "a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "message",
                    "id": "b2",
                    "parentId": "a1",
                    "message": {"role": "assistant", "content": "x " * 3000 + "platypus", "timestamp": 1},
                }
            )
            + "\n"
        )
    code, out, _ = ls(capsys, "--root", root, "--all", "--json", "--query", "platypus")
    assert code == 0 and [row["id"] for row in json.loads(out)] == ["0aaa1111-0000"]
    code, out, _ = ls(capsys, "--root", root, "--all", "--json", "--query", "platypus", "--quick")
    assert code == ExitCode.NOT_FOUND  # past the 4 KB prefix: --quick cannot see it
    code, _, err = ls(capsys, "--root", root, "--all", "--query", "re:(")
    assert code == 2 and "bad query" in err


@pytest.mark.parametrize("extra", [[], ["--quick"], ["--query", "otters"]], ids=["recent", "quick", "query"])
def test_an_explicit_children_option_adds_the_key_whatever_the_sort(store, capsys, extra: list[str]) -> None:
    """README: `--children` adds "children" to `ls --json`.  `--children threaded` (the default
    mode, said) left it out with the default sort: the fast paths print pi's keys only."""
    root = str(store["root"])
    for sort in ([], ["--sort", "created"]):
        code, out, _ = ls(capsys, "--root", root, "--all", "--json", "--children", "threaded", *sort, *extra)
        rows = json.loads(out)
        assert code == 0 and rows and all("children" in row for row in rows), (sort, rows)
    code, out, _ = ls(capsys, "--root", root, "--all", "--json", *extra)
    assert not any("children" in row for row in json.loads(out))
