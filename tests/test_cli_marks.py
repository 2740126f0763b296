"""`seance pin`, `unpin`, `tag`, `marks export|import`, and marks in `seance ls`, through the CLI.

Real session files in a temp root; the marks file in a temp data dir (conftest), the Trash in
a temp `XDG_DATA_HOME`.  Session files are never written: every test checks their bytes.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from ui_sessions import PROJECT, Spec, make_root, session_path

import seance
from seance.cli import main
from seance.cli.errors import ExitCode
from seance.core.marks import MarkStore


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))  # the Trash
    monkeypatch.chdir(tmp_path)
    return make_root(
        tmp_path,
        [
            Spec("s-new", PROJECT, ("newest prompt",), timedelta(minutes=5)),
            Spec("s-mid", PROJECT, ("middle prompt",), timedelta(hours=1)),
            Spec("s-old", PROJECT, ("oldest prompt",), timedelta(days=3)),
            Spec("s-fork", PROJECT, ("a fork of mid",), timedelta(minutes=30), parent="s-mid"),
        ],
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listed(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> list[tuple[str, bool, list[str]]]:
    code, out, _ = run(capsys, "--root", str(root), "ls", "--all", "--json", *extra)
    assert code == 0, out
    return [(row["id"], row["pinned"], row["tags"]) for row in json.loads(out)]


def session_bytes(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(path): (path.read_bytes(), path.stat().st_mtime_ns) for path in sorted(root.rglob("*.jsonl"))}


def test_pin_tag_and_ls_json(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = session_bytes(root)
    assert listed(capsys, root)[0] == ("s-new", False, [])
    code, out, err = run(capsys, "--root", str(root), "pin", "s-old")
    assert code == 0 and out.strip() == str(session_path(root, Spec("s-old", PROJECT)))
    assert "pinned oldest prompt (s-old)" in err
    code, out, _ = run(capsys, "--root", str(root), "tag", "s-mid", "+work", "auth", "-nothing")
    assert code == 0 and out.splitlines() == ["work", "auth"]
    code, out, _ = run(capsys, "--root", str(root), "tag", "s-mid", "-auth")
    assert out.splitlines() == ["work"]
    code, out, _ = run(capsys, "--root", str(root), "tag", "s-mid")  # no edits: print them
    assert code == 0 and out.splitlines() == ["work"]
    # pinned first in every order, fast path (default) and the others alike
    expected_recent = [("s-old", True, []), ("s-new", False, []), ("s-fork", False, []), ("s-mid", False, ["work"])]
    assert listed(capsys, root) == expected_recent
    assert listed(capsys, root, "--quick") == expected_recent
    assert listed(capsys, root, "--sort", "recent", "-q", "prompt")[0] == ("s-old", True, [])
    assert listed(capsys, root, "--sort", "created")[0][0] == "s-old"
    assert listed(capsys, root, "--sort", "relevance", "-q", "prompt")[0][0] == "s-old"
    assert [row[0] for row in listed(capsys, root, "--sort", "threaded")] == ["s-old", "s-new", "s-mid", "s-fork"]
    code, out, _ = run(capsys, "--root", str(root), "ls", "--all")
    assert out.splitlines()[0].split(None, 2)[2].startswith("★ oldest prompt") and "#work" in out
    # unpin, both spellings
    assert run(capsys, "--root", str(root), "pin", "--remove", "s-old")[0] == 0
    assert listed(capsys, root)[0] == ("s-new", False, [])
    run(capsys, "--root", str(root), "pin", "s-old", "s-new")
    assert run(capsys, "--root", str(root), "unpin", "s-old")[0] == 0
    assert [row for row in listed(capsys, root) if row[1]] == [("s-new", True, [])]
    assert session_bytes(root) == before, "no session file was written"


def test_query_filters_from_the_command_line(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "--root", str(root), "pin", "s-old")
    run(capsys, "--root", str(root), "tag", "s-mid", "+Work")
    run(capsys, "--root", str(root), "tag", "s-old", "+home")

    def ids(query: str) -> list[str]:
        return [row[0] for row in listed(capsys, root, "-q", query)]

    assert ids("tag:work") == ["s-mid"]
    assert ids("is:pinned") == ["s-old"]
    assert ids("is:tagged") == ["s-old", "s-mid"]
    assert ids("!tag:work !is:pinned") == ["s-new", "s-fork"]
    assert ids("prompt !tag:home") == ["s-new", "s-mid"]
    code, out, _ = run(capsys, "--root", str(root), "ls", "--all", "-q", "tag:nothing")
    assert code == ExitCode.NOT_FOUND and out == ""
    code, _, err = run(capsys, "--root", str(root), "ls", "--all", "-q", "is:huge")
    assert code == ExitCode.BAD_INPUT and "is: expects pinned or tagged" in err


def test_marks_survive_a_cache_delete_a_move_and_trash_undo(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "--root", str(root), "pin", "s-mid")
    run(capsys, "--root", str(root), "tag", "s-mid", "+keep")
    shutil.rmtree(os.environ["SEANCE_CACHE_DIR"])  # deleting the cache loses nothing
    assert ("s-mid", True, ["keep"]) in listed(capsys, root)
    old = session_path(root, Spec("s-mid", PROJECT))
    moved = old.with_name("renamed-file.jsonl")
    old.rename(moved)  # a move: keyed by the header id, the marks follow
    assert listed(capsys, root)[0] == ("s-mid", True, ["keep"])
    code, _, _ = run(capsys, "--root", str(root), "rm", str(moved))
    assert code == 0 and not moved.exists()
    assert "s-mid" not in [row[0] for row in listed(capsys, root)]
    assert run(capsys, "rm", "--undo")[0] == 0 and moved.exists()
    assert listed(capsys, root)[0] == ("s-mid", True, ["keep"])


def test_marks_export_never_replaces_a_session_file(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`marks export -o FILE` replaced whatever FILE was, a session too (a slip of the shell's
    completion, or a link to one): `-o` is guarded as `seance export -o` is."""
    run(capsys, "--root", str(root), "pin", "s-new")
    session = session_path(root, Spec("s-old", PROJECT))
    link = tmp_path / "marks-backup.json"
    link.symlink_to(session)
    before = session.read_bytes()
    for target in (session, link):
        code, _, err = run(capsys, "marks", "export", "-o", str(target))
        assert code == 2 and "never replaced" in err
        assert session.read_bytes() == before and link.is_symlink()


def test_export_and_import(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "--root", str(root), "pin", "s-new")
    run(capsys, "--root", str(root), "tag", "s-old", "+a", "+b")
    code, out, _ = run(capsys, "marks", "export")
    assert code == 0
    document = json.loads(out)
    assert document == {
        "format": "seance-marks",
        "version": 1,
        "sessions": {"s-new": {"pinned": True, "tags": []}, "s-old": {"pinned": False, "tags": ["a", "b"]}},
    }
    exported = tmp_path / "marks-export.json"
    assert run(capsys, "marks", "export", "-o", str(exported))[0] == 0
    assert json.loads(exported.read_text()) == document
    store = MarkStore()
    store.path.unlink()
    assert listed(capsys, root)[0] == ("s-new", False, [])
    run(capsys, "--root", str(root), "tag", "s-old", "+c")
    code, _, err = run(capsys, "marks", "import", str(exported))
    assert code == 0 and "imported the marks of 2 sessions" in err
    assert store.load()["s-old"].tags == ("c", "a", "b"), "merged with what was there"
    assert run(capsys, "marks", "import", "--replace", str(exported))[0] == 0
    assert json.loads(run(capsys, "marks", "export")[1]) == document
    # bad input: one line, exit 2, nothing written
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "seance-marks", "version": 1, "sessions": {"x": {"tags": ["has space"]}}}')
    saved = store.path.read_bytes()
    code, out, err = run(capsys, "marks", "import", str(bad))
    assert code == ExitCode.BAD_INPUT and "has space" in err and len(err.strip().splitlines()) == 1
    assert store.path.read_bytes() == saved
    assert run(capsys, "marks", "import", str(tmp_path / "missing.json"))[0] == ExitCode.NOT_FOUND
    assert run(capsys, "marks")[0] == ExitCode.BAD_INPUT


def test_bad_tags_and_sessions(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("two words", "esc\x1b[31m", "+"):
        code, out, err = run(capsys, "--root", str(root), "tag", "s-old", bad)
        assert code == ExitCode.BAD_INPUT and out == ""
        assert err.startswith(("seance: tag", "seance: a tag")) and "\x1b" not in err
        assert len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "tag", "s-old", "-old", "--root", str(root))
    assert code == ExitCode.BAD_INPUT and "put options before SESSION" in err
    assert run(capsys, "--root", str(root), "pin", "no-such-session")[0] == ExitCode.NOT_FOUND
    junk = root / "junk.jsonl"
    junk.write_text("not a session\n")
    assert run(capsys, "pin", str(junk))[0] == ExitCode.BAD_INPUT
    assert not MarkStore().path.exists(), "nothing was written"


@pytest.mark.parametrize("version", [True, 1.0, "1"], ids=["true", "float", "string"])
def test_import_refuses_a_version_that_is_not_the_number_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: object
) -> None:
    """`true` and `1.0` equal 1 in Python: a marks file says `"version": 1`, nothing else."""
    bad = {"format": "seance-marks", "version": version, "sessions": {"new": {"pinned": True, "tags": []}}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["marks", "import", str(path)]) == ExitCode.BAD_INPUT
    assert "marks version" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_import_of_an_endless_file_stops_with_one_line(tmp_path: Path, source: str) -> None:
    """`seance marks import /dev/zero` (or `- < /dev/zero`) read without end until the memory
    ran out; a marks document over 64 MB is refused once that much is read."""
    env = {**os.environ, "PYTHONPATH": str(Path(seance.__file__).resolve().parent.parent)}
    args = ["/dev/zero"] if source == "file" else ["-"]
    with open("/dev/zero", "rb") as zero:
        result = subprocess.run(
            [sys.executable, "-m", "seance", "marks", "import", *args],
            stdin=zero if source == "stdin" else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)),  # no machine-wide OOM
        )
    assert result.returncode == ExitCode.BAD_INPUT and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().endswith("not a marks file (over 64 MB); nothing was imported"), result.stderr
    assert not MarkStore().path.exists()
