"""SESSION arguments: one resolver for show, tree, rm and rename, honouring --root and --cwd
given before or after the subcommand."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from seance.cli import main
from seance.core.resume import bucket_name, session_file_name
from seance.core.session import load_session

STAMP = "2025-01-01T00:00:00.000Z"


@pytest.fixture
def root(tmp_path: Path, monkeypatch) -> Path:
    """A sessions root outside the default roots (HOME and the agent dirs are empty)."""
    for name in ("home", "data", "agent"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "sessions"
    for cwd, sid, text in (("/one", "abcd-1111", "in project one"), ("/two", "abcd-2222", "in project two")):
        bucket = root / bucket_name(cwd)
        bucket.mkdir(parents=True)
        entries = [
            {"type": "session", "version": 3, "id": sid, "timestamp": STAMP, "cwd": cwd},
            {
                "type": "message",
                "id": "u1",
                "parentId": None,
                "timestamp": STAMP,
                "message": {"role": "user", "content": text},
            },
            {
                "type": "message",
                "id": "a1",
                "parentId": "u1",
                "timestamp": STAMP,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            },
        ]
        (bucket / session_file_name(STAMP, sid)).write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    return root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["show", "tree"])
@pytest.mark.parametrize("placement", ["before", "after"])
def test_show_and_tree_honour_root_and_cwd(root, capsys, command, placement) -> None:
    for cwd, sid in (("/one", "abcd-1111"), ("/two", "abcd-2222")):
        flags = ["--root", str(root), "--cwd", cwd]
        argv = [*flags, command, "abcd", "--json"] if placement == "before" else [command, "abcd", "--json", *flags]
        code, out, err = run(capsys, *argv)
        assert (code, err) == (0, "")
        assert orjson.loads(out)["id"] == sid


def test_flags_after_the_command_win_over_those_before(root, capsys) -> None:
    code, out, _ = run(
        capsys,
        "--cwd",
        "/one",
        "--root",
        str(root / "nowhere"),
        "show",
        "abcd",
        "--json",
        "--root",
        str(root),
        "--cwd",
        "/two",
    )
    assert code == 0 and orjson.loads(out)["id"] == "abcd-2222"


def test_an_unknown_prefix_under_root_is_not_found(root, capsys) -> None:
    code, out, err = run(capsys, "--root", str(root), "show", "zzzz")
    assert (code, out) == (1, "") and 'session "zzzz" not found' in err


def test_rename_and_rm_honour_root_before_the_command(root, capsys) -> None:
    code, out, _ = run(capsys, "--root", str(root), "--cwd", "/two", "rename", "abcd", "New name")
    assert code == 0 and out.strip().endswith("abcd-2222.jsonl")
    for written in root.rglob("*.jsonl"):  # long ago: `rm` refuses a session written in the last minute
        os.utime(written, (1_700_000_000, 1_700_000_000))
    code, out, _ = run(capsys, "--root", str(root), "--cwd", "/one", "rm", "abcd")
    assert code == 0 and out.strip().endswith("abcd-1111.jsonl")
    assert [path.name for path in root.rglob("*.jsonl")] == [session_file_name(STAMP, "abcd-2222")]


def test_a_session_is_found_by_its_name_then_a_unique_name_prefix(root, capsys) -> None:
    code, _, _ = run(capsys, "--root", str(root), "--cwd", "/two", "rename", "abcd", "auth-refactor")
    assert code == 0
    for argv in (["resolve", "auth-refactor"], ["resolve", "AUTH-REF"], ["show", "auth-refactor", "--json"]):
        code, out, err = run(capsys, "--root", str(root), "--cwd", "/one", *argv)
        assert code == 0, err
        assert "abcd-2222" in out
        assert ("another project" in err) == (argv[0] == "resolve")
    code, out, err = run(capsys, "--root", str(root), "resolve", "billing")
    assert (code, out) == (1, "") and "not found" in err


def test_an_ambiguous_session_argument_lists_the_candidates_and_exits_2(root, capsys) -> None:
    for written in root.rglob("*.jsonl"):  # old enough for `rm`: the refusal must be ambiguity's
        os.utime(written, (1_700_000_000, 1_700_000_000))
    before = sorted(path.name for path in root.rglob("*.jsonl"))
    for command in ("rm", "show", "tree", "resolve", "rename"):
        argv = [command, "abcd", *(["x"] if command == "rename" else [])]
        code, out, err = run(capsys, "--root", str(root), "--cwd", "/elsewhere", *argv)
        assert (code, out) == (2, ""), (command, err)
        assert '"abcd" matches 2 sessions' in err
        assert "abcd-1111" in err and "abcd-2222" in err and "/one" in err and "/two" in err
    assert sorted(path.name for path in root.rglob("*.jsonl")) == before  # nothing trashed, nothing renamed


def test_an_empty_name_clears_the_name_only_with_yes(root, capsys) -> None:
    run(capsys, "--root", str(root), "--cwd", "/two", "rename", "abcd", "auth-refactor")
    code, out, err = run(capsys, "--root", str(root), "rename", "auth-refactor", "")  # no terminal to ask on
    assert (code, out) == (2, "") and "--yes" in err
    code, out, err = run(capsys, "--root", str(root), "rename", "auth-refactor", "", "--yes")
    assert code == 0 and out.strip().endswith("abcd-2222.jsonl") and "cleared the name" in err
    code, _, err = run(capsys, "--root", str(root), "resolve", "auth-refactor")
    assert code == 1 and "not found" in err
    code, _, err = run(capsys, "--root", str(root), "--cwd", "/two", "rename", "abcd", "", "--yes")
    assert code == 2 and "no name to clear" in err


def test_resolve_command_prints_the_line_that_resumes_the_session(root, capsys) -> None:
    """The CLI side of the list's Ctrl+Y: `resolve --command`, and `resumeCommand` in `--json`."""
    path = root / bucket_name("/two") / session_file_name(STAMP, "abcd-2222")
    code, out, _ = run(capsys, "--root", str(root), "--cwd", "/two", "resolve", "abcd", "--command")
    assert (code, out) == (0, f"cd /two && pi --session {path}\n")
    code, out, _ = run(capsys, "--root", str(root), "--cwd", "/two", "resolve", "abcd", "--json")
    assert code == 0 and orjson.loads(out)["resumeCommand"] == f"cd /two && pi --session {path}"


@pytest.mark.parametrize("omp_mark", ["header title", "model_change"])
def test_an_omp_session_without_a_title_slot_resumes_with_omp(root, capsys, omp_mark) -> None:
    """oh-my-pi wrote no title slot before 2026-06 (most of a user's sessions): its header's
    `title`, or its `model_change` ("model": "provider/id", every omp session's first entry),
    says whose file it is.  Its resume line must be omp's, not `pi --session`."""
    bucket = root / "-three"  # (omp's own folder name for ~/three)
    bucket.mkdir()
    header = {"type": "session", "version": 3, "id": "0192-omp", "timestamp": STAMP, "cwd": "/three"}
    change = {"type": "model_change", "id": "m1", "parentId": None, "timestamp": STAMP, "model": "anthropic/opus"}
    user = {"type": "message", "id": "u1", "parentId": "m1", "timestamp": STAMP}
    user["message"] = {"role": "user", "content": "hello"}
    if omp_mark == "header title":
        header["title"] = "Fix the login flow"
        change = {**change, "provider": "anthropic", "modelId": "opus"}
        del change["model"]
    path = bucket / session_file_name(STAMP, "0192-omp")
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in (header, change, user)))
    code, out, _ = run(capsys, "--root", str(root), "--cwd", "/three", "resolve", "0192", "--command")
    assert (code, out) == (0, f"cd /three && omp --resume {path}\n")
    assert load_session(path).dialect == "omp"


def test_a_path_that_cannot_be_looked_up_says_why_not_that_it_is_missing(tmp_path: Path, capsys, monkeypatch) -> None:
    """A path behind a symlink loop (or, for a user, a directory without search permission) is
    not "no such session file": `os.path.lexists` hides the reason; the reader names it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # (rm refuses before any Trash; never the real one)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    hidden = tmp_path / "loop" / "s.jsonl"
    for command in (["show"], ["tree", "--text"], ["export"], ["rm"], ["rm", "--force"]):
        assert main([*command, str(hidden)]) == 2
        err = capsys.readouterr().err
        assert "no such session file" not in err and "symbolic links" in err, err
        assert len(err.splitlines()) == 1
    assert main(["show", str(tmp_path / "nothing" / "s.jsonl")]) == 1  # truly missing: still not found
    assert "no such session file" in capsys.readouterr().err
