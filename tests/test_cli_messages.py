"""Honest command-line messages (issue 13): subcommand usage on a bad option, an empty `ls`
says where it looked, `ls --quick` labels its estimates, `ls --skipped` lists what is not
listed, `rename` prints the name really stored, the demo compacts and keeps its own Trash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from seance.cli import main
from seance.cli import ui as cli_ui
from seance.cli.errors import ExitCode
from seance.core.generate import bucket_name
from seance.core.session import load_session
from seance.core.writes import TITLE_SLOT_SIZE, title_slot_bytes

STAMP = "2025-01-01T00:00:00.000Z"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_session(root: Path, cwd: str, sid: str) -> Path:
    entries = [
        {"type": "session", "version": 3, "id": sid, "timestamp": STAMP, "cwd": cwd},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": STAMP,
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": STAMP,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        },
    ]
    path = root / bucket_name(cwd) / f"2025-01-01T00-00-00-000Z_{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    return path


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME and Trash; sessions under tmp/sessions."""
    for name in ("home", "data", "sessions"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


def test_an_unknown_option_of_a_command_prints_that_commands_usage(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["ls", "--bogus"])
    err = capsys.readouterr().err
    assert exit_info.value.code == ExitCode.BAD_INPUT
    assert err.startswith("usage: seance ls ") and "seance ls: error: unrecognized arguments: --bogus" in err
    with pytest.raises(SystemExit):
        main(["--bogus"])
    err = capsys.readouterr().err
    assert err.startswith("usage: seance [") and "seance: error: unrecognized arguments: --bogus" in err


def test_ls_with_no_sessions_says_where_it_looked(env, capsys, monkeypatch) -> None:
    root = env / "sessions"
    monkeypatch.chdir(env)
    for extra in ((), ("--quick",)):
        code, out, err = run(capsys, "ls", "--root", str(root), *extra)
        assert (code, out) == (0, "")
        assert err == f"seance: no sessions for {env} under {root} (--all lists every project)\n"
        code, out, err = run(capsys, "ls", "--root", str(root), "--all", "--json", *extra)
        assert (code, out) == (0, "[]\n") and err == f"seance: no sessions found under {root}\n"
    write_session(root, str(env), "aaaa0000")
    code, out, err = run(capsys, "ls", "--root", str(root))
    assert code == 0 and "hi" in out and "no sessions" not in err


def test_ls_quick_labels_its_ages_and_counts(env, capsys, monkeypatch) -> None:
    root = env / "sessions"
    write_session(root, str(env), "bbbb0000")
    monkeypatch.chdir(env)
    code, out, err = run(capsys, "ls", "--root", str(root), "--quick")
    assert code == 0 and "2+" in out
    assert "ages are the files' modification times" in err and "N+ counts are lower bounds" in err
    code, out, err = run(capsys, "ls", "--root", str(root))
    assert code == 0 and "2+" not in out and err == "", "the exact listing needs no legend"


def test_ls_skipped_lists_every_skipped_file_with_its_reason(env, capsys) -> None:
    root = env / "sessions"
    write_session(root, "/proj", "cccc0000")
    bucket = root / "--junk--"
    bucket.mkdir()
    junk = [bucket / f"junk{number}.jsonl" for number in range(5)]
    for path in junk:
        path.write_text("not json\n")
    (bucket / "dir.jsonl").mkdir()
    code, out, err = run(capsys, "ls", "--root", str(root), "--all")
    assert "skipped 6" in err and "`seance ls --skipped` lists them" in err, "the summary names the way to see all"
    for extra in ((), ("--quick",)):
        code, out, _ = run(capsys, "ls", "--root", str(root), "--skipped", *extra)
        assert code == 0
        lines = out.splitlines()
        assert sorted(line.split(": ", 1)[0] for line in lines) == sorted(
            str(path) for path in [*junk, bucket / "dir.jsonl"]
        )
        assert f"{bucket / 'dir.jsonl'}: a directory named *.jsonl" in lines
        code, out, _ = run(capsys, "ls", "--root", str(root), "--skipped", "--json", *extra)
        items = json.loads(out)
        assert len(items) == 6 and all(set(item) == {"path", "reason"} and item["reason"] for item in items)
    code, _, err = run(capsys, "ls", "--root", str(root), "--skipped", "--query", "x")
    assert code == ExitCode.BAD_INPUT and "--skipped lists files" in err


def test_ls_skipped_with_nothing_skipped(env, capsys) -> None:
    root = env / "sessions"
    write_session(root, "/proj", "dddd0000")
    assert run(capsys, "ls", "--root", str(root), "--skipped") == (0, "", "seance: nothing skipped\n")
    assert run(capsys, "ls", "--root", str(root), "--skipped", "--json") == (0, "[]\n", "")


def test_rename_of_an_omp_file_prints_the_name_it_stored(env, capsys) -> None:
    session = write_session(env / "sessions", "/proj", "eeee0000")
    session.write_bytes(title_slot_bytes("", STAMP) + session.read_bytes())
    long_name = "n" * 400
    code, out, err = run(capsys, "rename", str(session), long_name)
    stored = load_session(session).name
    assert code == 0 and out == f"{session}\n"
    assert stored is not None and 100 < len(stored) < 400 and session.read_bytes()[TITLE_SLOT_SIZE - 1 :][:1] == b"\n"
    assert err == f"renamed {session.name}: {stored} (title slot: the first {len(stored)} of 400 characters)\n"
    code, _, err = run(capsys, "rename", str(session), "short")
    assert err == f"renamed {session.name}: short (title slot)\n"


def test_the_demo_has_compactions_and_its_own_trash(env) -> None:
    demo = env / "demo"
    demo.mkdir()
    catalog = cli_ui.make_demo(demo)
    try:
        summaries = catalog.refresh()
        assert len(summaries) == cli_ui.DEMO_SESSIONS
        assert sum(1 for summary in summaries if summary.compactions) >= 10
        victim = summaries[-1].path
        receipt = catalog.trash(victim, force=True)
        assert receipt.session.trashed.is_relative_to(demo / "trash")
        assert not (env / "data" / "Trash").exists(), "the user's Trash is never touched"
        catalog.restore(receipt)
        assert os.path.exists(victim)
    finally:
        catalog.close()


@pytest.mark.parametrize("outcome", [ExitCode.OK, ExitCode.CANCELLED])
def test_the_demo_dir_is_kept_only_when_a_session_was_chosen(env, capsys, monkeypatch, outcome) -> None:
    """Enter prints a path: the demo keeps it (and says where); Esc removes everything.  The
    terminal UI itself is replaced here by its outcome (tmux tests drive the real one)."""
    made: list[Path] = []

    def pick(catalog, args, cwd, *, enter):
        made.append(Path(catalog.roots[0]).parent)
        return outcome

    monkeypatch.setattr(cli_ui, "check_terminal", lambda: None)
    monkeypatch.setattr(cli_ui, "_pick", pick)
    monkeypatch.setattr(cli_ui, "DEMO_SESSIONS", 4)
    monkeypatch.setattr("tempfile.tempdir", str(env))
    code, _, err = run(capsys, "--demo")
    (demo,) = made
    assert code == outcome
    if outcome == ExitCode.OK:
        assert demo.is_dir() and f"seance: the demo sessions are kept in {demo} (remove it when done)" in err
    else:
        assert not demo.exists() and "are kept in" not in err
