"""`seance resolve / continue / rm / rename` end to end, and rename's race safety."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from conftest import read_only_trash_files

from seance.cli import main
from seance.core import writes
from seance.core.resume import bucket_name, session_file_name, write_breadcrumb
from seance.core.session import SessionError, load_session
from seance.core.writes import TITLE_SLOT_SIZE, FileChangedError, rename_session, title_slot_bytes

STAMP = "2025-01-01T00:00:00.000Z"


@pytest.fixture
def env(tmp_path, monkeypatch) -> Path:
    """Fake HOME, agent dir and Trash; a sessions root at tmp/sessions."""
    for name in ("home", "data", "agent", "sessions"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    for variable in (
        "TMUX_PANE",
        "KITTY_WINDOW_ID",
        "TERM_SESSION_ID",
        "WT_SESSION",
        "ZELLIJ_PANE_ID",
        "WEZTERM_PANE",
        "CMUX_SURFACE_ID",
    ):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def write_session(root: Path, cwd: str, sid: str, *, assistant: bool = True, mtime_s: int | None = None) -> Path:
    entries = [
        {"type": "session", "version": 3, "id": sid, "timestamp": STAMP, "cwd": cwd},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": STAMP,
            "message": {"role": "user", "content": f"question in {sid}"},
        },
    ]
    if assistant:
        entries.append(
            {
                "type": "message",
                "id": "a1",
                "parentId": "u1",
                "timestamp": STAMP,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
            }
        )
    bucket = root / bucket_name(cwd)
    bucket.mkdir(parents=True, exist_ok=True)
    path = bucket / session_file_name(STAMP, sid)
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    if mtime_s is not None:
        os.utime(path, (mtime_s, mtime_s))
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------- resolve


def test_resolve_prints_the_path(env, capsys) -> None:
    root = env / "sessions"
    here = write_session(root, "/proj/here", "aaaa1111-0000", mtime_s=1_000)
    write_session(root, "/proj/other", "aaaa2222-0000", mtime_s=2_000)
    code, out, err = run(capsys, "resolve", "AAAA", "--root", str(root), "--cwd", "/proj/here")
    assert (code, out, err) == (0, f"{here}\n", "")  # the current project wins over a newer one


def test_resolve_other_project_is_reported(env, capsys) -> None:
    root = env / "sessions"
    there = write_session(root, "/proj/other", "bbbb0000-0000")
    code, out, err = run(capsys, "--root", str(root), "--cwd", "/proj/here", "resolve", "bbbb", "--json")
    assert code == 0 and "another project (/proj/other)" in err
    assert orjson.loads(out) == {
        "path": str(there),
        "id": "bbbb0000-0000",
        "cwd": "/proj/other",
        "otherProject": True,
        "forkedFrom": None,
        "resumeCommand": f"cd /proj/other && pi --session {there}",
    }


def test_resolve_fork_copies_into_this_project(env, capsys) -> None:
    root = env / "sessions"
    there = write_session(root, "/proj/other", "cccc0000-0000")
    code, out, err = run(capsys, "resolve", "cccc", "--fork", "--root", str(root), "--cwd", "/proj/here")
    assert code == 0 and "forked" in err
    copy = Path(out.strip())
    assert copy.parent == root / "--proj-here--"
    forked = load_session(copy)
    assert forked.cwd == "/proj/here" and forked.header["parentSession"] == str(there)
    code, out, _ = run(capsys, "resolve", forked.id[:8], "--root", str(root), "--cwd", "/proj/here", "--json")
    assert orjson.loads(out)["otherProject"] is False


def test_resolve_not_found_and_bad_key(env, capsys) -> None:
    root = env / "sessions"
    write_session(root, "/p", "dddd0000")
    code, out, err = run(capsys, "resolve", "zzzz", "--root", str(root))
    assert (code, out) == (1, "") and 'session "zzzz" not found' in err
    code, _, err = run(capsys, "resolve", " ", "--root", str(root))
    assert code == 2 and "empty session key" in err


def test_resolve_takes_a_session_path_as_pi_session_does(env, capsys, monkeypatch) -> None:
    """README: SESSION is a path, or else a key.  `resolve` took every argument as a key: the
    path of a session (one `ls --json` printed, or outside the roots) was "not found", exit 1."""
    root = env / "sessions"
    here = write_session(root, "/proj/here", "eeee0000-0000")
    outside = env / "elsewhere" / "copy.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(write_session(env / "other-root", "/proj/other", "ffff0000-0000").read_bytes())
    scope = ("--root", str(root), "--cwd", "/proj/here")
    assert run(capsys, "resolve", str(here), *scope) == (0, f"{here}\n", "")
    code, out, err = run(capsys, "resolve", str(outside), *scope, "--json")
    assert code == 0 and "another project (/proj/other)" in err
    assert orjson.loads(out) | {"resumeCommand": None} == {
        "path": str(outside),
        "id": "ffff0000-0000",
        "cwd": "/proj/other",
        "otherProject": True,
        "forkedFrom": None,
        "resumeCommand": None,
    }
    monkeypatch.chdir(outside.parent)
    assert run(capsys, "resolve", "./copy.jsonl", *scope, "--command")[:2] == (
        0,
        f"cd /proj/other && pi --session {outside}\n",
    )
    # not a session: bad input (2), as `show` says it; a missing path: not found (1)
    (env / "notes.jsonl").write_text('{"x": 1}\n')
    code, out, err = run(capsys, "resolve", str(env / "notes.jsonl"), *scope)
    assert (code, out) == (2, "") and "not a session" in err
    code, out, err = run(capsys, "resolve", str(env / "gone" / "x.jsonl"), *scope)
    assert (code, out) == (1, "") and "no such session file" in err


def test_a_bare_file_name_is_a_key_for_every_command(env, capsys) -> None:
    """README: a key is "the whole id or file name"; `show`/`rm`/`tree` took a name ending in
    .jsonl for a path in the current directory and said "no such session file"."""
    root = env / "sessions"
    here = write_session(root, "/proj/here", "abab0000-0000")
    scope = ("--root", str(root), "--cwd", "/proj/here")
    code, out, _ = run(capsys, "show", here.name, *scope, "--json")
    assert code == 0 and orjson.loads(out)["path"] == str(here)
    assert run(capsys, "resolve", here.name, *scope)[:2] == (0, f"{here}\n")


# ---------------------------------------------------------------------------- continue


def test_continue_uses_breadcrumb_then_newest(env, capsys, monkeypatch) -> None:
    root = env / "sessions"
    older = write_session(root, "/proj", "old0", mtime_s=1_000)
    newer = write_session(root, "/proj", "new0", mtime_s=2_000)
    code, out, _ = run(capsys, "continue", "--root", str(root), "--cwd", "/proj")
    assert (code, out) == (0, f"{newer}\n")
    monkeypatch.setattr("seance.core.resume._stdin_tty", lambda: None)
    monkeypatch.setenv("TMUX_PANE", "%7")
    write_breadcrumb(env / "agent", "/proj", older)
    assert (env / "agent" / "terminal-sessions" / "tmux-%7").exists()
    code, out, _ = run(capsys, "continue", "--root", str(root), "--cwd", "/proj", "--json")
    assert orjson.loads(out) == {"path": str(older), "cwd": "/proj"}
    code, out, err = run(capsys, "continue", "--root", str(root), "--cwd", "/empty")
    assert (code, out) == (1, "") and "no session in /empty" in err


# ---------------------------------------------------------------------------- rm

OLD = 1_700_000_000  # written long ago: not a session an agent is using (see test_trash_races.py)


def test_rm_moves_to_trash_and_undo_restores(env, capsys) -> None:
    root = env / "sessions"
    session = write_session(root, "/proj", "eeee0000-1111", mtime_s=OLD)
    artifacts = session.with_suffix("")
    artifacts.mkdir()
    (artifacts / "1.bash.log").write_text("log")
    os.utime(artifacts / "1.bash.log", (OLD, OLD))  # (a file written in the last minute: in use)
    content = session.read_bytes()
    code, out, err = run(capsys, "rm", "eeee", "--root", str(root), "--cwd", "/proj")
    trashed = env / "data" / "Trash" / "files" / session.name
    assert (code, out) == (0, f"{trashed}\n") and "rm --undo" in err
    assert not session.exists() and not artifacts.exists()
    assert (env / "data" / "Trash" / "info" / f"{session.name}.trashinfo").exists()
    code, out, _ = run(capsys, "rm", "--undo")
    assert (code, out) == (0, f"{session}\n{artifacts}\n")
    assert session.read_bytes() == content and (artifacts / "1.bash.log").read_text() == "log"
    code, _, err = run(capsys, "rm", "--undo")
    assert code == 1 and "nothing to undo" in err


def test_rm_reaches_a_broken_file_by_path_only_with_force(env, capsys) -> None:
    broken = env / "sessions" / "broken.jsonl"
    broken.write_text("garbage\n")
    code, out, err = run(capsys, "rm", str(broken))
    assert (code, out) == (2, "") and "not a session" in err and "--force" in err and broken.exists()
    code, _, _ = run(capsys, "rm", "--force", str(broken))
    assert code == 0 and not broken.exists()


def test_rm_refuses_any_file_that_is_not_a_session(env, capsys, monkeypatch) -> None:
    project = env / "p"
    (project / "data").mkdir(parents=True)
    (project / "data" / "keep.txt").write_text("keep")
    (project / "README.md").write_text("x\n")
    (project / "data.jsonl").write_text('{"a":1}\n')
    monkeypatch.chdir(env)
    for name in ("p/README.md", "p/data.jsonl"):
        code, _, err = run(capsys, "rm", name)
        assert code == 2 and err.count("\n") == 1 and "not a session" in err
    assert (project / "README.md").exists() and (project / "data.jsonl").exists()
    assert run(capsys, "rm", "--force", "p/data.jsonl")[0] == 0
    assert not (project / "data.jsonl").exists() and (project / "data" / "keep.txt").read_text() == "keep"
    assert run(capsys, "rm", "--undo")[1] == f"{project / 'data.jsonl'}\n"


def test_rm_undo_walks_back_a_stack_of_deletions(env, capsys, monkeypatch) -> None:
    from seance.cli import actions as cli_actions

    monkeypatch.setattr(cli_actions, "RECEIPTS_KEPT", 2)
    root = env / "sessions"
    sessions = [write_session(root, "/proj", f"{n}{n}{n}{n}0000", mtime_s=OLD) for n in "hjk"]
    for session in sessions:
        assert run(capsys, "rm", str(session))[0] == 0
    assert not any(session.exists() for session in sessions)
    assert run(capsys, "rm", "--undo")[1] == f"{sessions[2]}\n"  # the latest first
    assert run(capsys, "rm", "--undo")[1] == f"{sessions[1]}\n"
    code, _, err = run(capsys, "rm", "--undo")  # only the latest 2 are kept
    assert code == 1 and "nothing to undo" in err and not sessions[0].exists()


def test_rm_undo_drops_a_deletion_emptied_from_the_trash(env, capsys) -> None:
    root = env / "sessions"
    first, second = (write_session(root, "/proj", sid, mtime_s=OLD) for sid in ("mmmm0000", "nnnn0000"))
    assert run(capsys, "rm", str(first))[0] == 0
    code, out, _ = run(capsys, "rm", str(second))
    Path(out.strip()).unlink()  # the user emptied the Trash
    code, _, err = run(capsys, "rm", "--undo")
    assert code == 1 and "no longer in the Trash" in err and "dropped" in err
    assert run(capsys, "rm", "--undo")[1] == f"{first}\n"


def test_rm_undo_reads_the_single_receipt_of_older_versions(env, capsys) -> None:
    from seance.cli.actions import receipt_path

    session = write_session(env / "sessions", "/proj", "pppp0000", mtime_s=OLD)
    assert run(capsys, "rm", str(session))[0] == 0
    target = receipt_path()
    (saved,) = orjson.loads(target.read_bytes())
    target.write_bytes(orjson.dumps(saved))  # the format before the stack: one object
    assert run(capsys, "rm", "--undo")[1] == f"{session}\n"
    assert not target.exists()


def test_rm_bad_input(env, capsys) -> None:
    assert run(capsys, "rm")[0] == 2
    assert run(capsys, "rm", "x", "--undo")[0] == 2
    code, _, err = run(capsys, "rm", str(env / "missing.jsonl"))
    assert code == 1 and "no such session file" in err
    code, _, err = run(capsys, "rm", "ffff", "--root", str(env / "sessions"))
    assert code == 1 and "not found" in err


def test_rm_names_the_trash_folder_it_could_not_write(env, capsys) -> None:
    """An error between two paths (a rename into the Trash) named only the first: a temp file
    in `.seance-incoming` (or the session itself), never the `files/` folder that refused."""

    session = write_session(env / "sessions", "/proj", "ffff0000", mtime_s=OLD)
    files = env / "data" / "Trash" / "files"
    with read_only_trash_files(files):
        code, _, err = run(capsys, "rm", str(session))
    assert code == 2 and f"-> {files}/{session.name}" in err and session.exists()


def test_rm_undo_refuses_when_the_path_is_taken(env, capsys) -> None:
    root = env / "sessions"
    session = write_session(root, "/proj", "gggg0000", mtime_s=OLD)
    assert run(capsys, "rm", str(session))[0] == 0
    session.write_text("new content")
    code, _, err = run(capsys, "rm", "--undo")
    assert code == 2 and "exists there now" in err
    assert session.read_text() == "new content"


# ---------------------------------------------------------------------------- rename


def test_rename_pi_appends_session_info(env, capsys) -> None:
    root = env / "sessions"
    session = write_session(root, "/proj", "hhhh0000")
    before = session.read_bytes()
    code, out, err = run(capsys, "rename", "hhhh", "  Release prep  ", "--root", str(root), "--cwd", "/proj")
    assert (code, out) == (0, f"{session}\n") and "session_info" in err
    after = session.read_bytes()
    assert after.startswith(before)
    entry = orjson.loads(after[len(before) :])
    assert entry["type"] == "session_info" and entry["name"] == "Release prep" and entry["parentId"] == "a1"
    assert load_session(session).name == "Release prep"


def test_rename_refused_before_the_first_assistant_message(env, capsys) -> None:
    session = write_session(env / "sessions", "/proj", "iiii0000", assistant=False)
    before = session.read_bytes()
    code, _, err = run(capsys, "rename", str(session), "name")
    assert code == 2 and "no assistant reply yet" in err
    assert session.read_bytes() == before


def test_rename_omp_rewrites_the_title_slot_in_place(env, capsys) -> None:
    session = write_session(env / "sessions", "/proj", "jjjj0000")
    session.write_bytes(title_slot_bytes("", STAMP) + session.read_bytes())
    size, tail = session.stat().st_size, session.read_bytes()[TITLE_SLOT_SIZE:]
    code, _, err = run(capsys, "rename", str(session), "Ünïcode title ✓")
    assert code == 0 and "title slot" in err
    data = session.read_bytes()
    assert len(data) == size and data[TITLE_SLOT_SIZE:] == tail
    assert load_session(session).name == "Ünïcode title ✓"


def test_rename_bad_input(env, capsys) -> None:
    session = write_session(env / "sessions", "/proj", "kkkk0000")
    assert run(capsys, "rename", str(session), "   ")[0] == 2
    assert run(capsys, "rename", str(env / "nope.jsonl"), "x")[0] == 1


def _append_after_read(monkeypatch, line: bytes) -> None:
    """Make rename's read return the file as it was, then let an 'agent' append to it."""
    real_load = writes.load_session

    def load_then_append(path):
        session = real_load(path)
        with open(path, "ab") as handle:
            handle.write(line)
        return session

    monkeypatch.setattr(writes, "load_session", load_then_append)


def test_rename_race_pi_append_lands_below_the_agent_line(env, monkeypatch) -> None:
    session = write_session(env / "sessions", "/proj", "llll0000")
    late = b'{"type":"message","id":"u2","parentId":"a1","timestamp":"x","message":{"role":"user","content":"hi"}}\n'
    expected = session.read_bytes() + late
    _append_after_read(monkeypatch, late)
    assert rename_session(session, "racy") == "session_info"
    data = session.read_bytes()
    assert data.startswith(expected)  # the agent's line is kept, and ours comes after it
    written = orjson.loads(data[len(expected) :])
    assert written["type"] == "session_info" and written["parentId"] == "u2" and written["name"] == "racy"


def test_rename_race_omp_slot_keeps_the_appended_line(env, monkeypatch) -> None:
    session = write_session(env / "sessions", "/proj", "mmmm0000")
    session.write_bytes(title_slot_bytes("Old", STAMP) + session.read_bytes())
    late = b'{"type":"custom","id":"c9","parentId":"a1","timestamp":"x","customType":"session_exit"}\n'
    body = session.read_bytes()[TITLE_SLOT_SIZE:] + late
    _append_after_read(monkeypatch, late)
    assert rename_session(session, "racy") == "title-slot"
    data = session.read_bytes()
    assert data[TITLE_SLOT_SIZE:] == body  # slot rewritten in place, everything after it untouched
    assert orjson.loads(data[:TITLE_SLOT_SIZE])["title"] == "racy"


def test_rename_race_omp_slot_rewritten_meanwhile_is_refused(env, monkeypatch) -> None:
    session = write_session(env / "sessions", "/proj", "nnnn0000")
    session.write_bytes(title_slot_bytes("Old", STAMP) + session.read_bytes())
    real_load = writes.load_session

    def load_then_omp_renames(path):
        loaded = real_load(path)
        with open(path, "r+b") as handle:
            handle.write(title_slot_bytes("Theirs", STAMP))
        return loaded

    monkeypatch.setattr(writes, "load_session", load_then_omp_renames)
    expected = title_slot_bytes("Theirs", STAMP) + session.read_bytes()[TITLE_SLOT_SIZE:]
    with pytest.raises(FileChangedError, match="nothing was written"):
        rename_session(session, "racy")
    assert session.read_bytes() == expected
    assert issubclass(FileChangedError, SessionError)


@pytest.mark.parametrize("beside", ["folder", "file"])
def test_a_key_is_a_key_beside_a_file_or_folder_of_that_name(env: Path, capsys, monkeypatch, beside: str) -> None:
    """`seance resolve docs` in a project holding `docs/` (or a file `docs`) looks the key up,
    as before `resolve` took paths: only a name with a directory, or a session file's name,
    is a path."""
    root = env / "sessions"
    session = write_session(root, "/proj/here", "docs0000-0000")
    project = env / "project"
    project.mkdir()
    if beside == "folder":
        (project / "docs").mkdir()
    else:
        (project / "docs").write_text("notes\n")
    monkeypatch.chdir(project)
    for command in ("resolve", "show"):
        code, out, err = run(capsys, command, "docs", "--root", str(root), "--cwd", "/proj/here")
        assert code == 0, (command, err)
        assert command != "resolve" or out == f"{session}\n"


@pytest.mark.parametrize(
    "journal", ["victim", 5, "other-dir"], ids=["a-file", "not-a-string", "a-journal-name-elsewhere"]
)
def test_rm_undo_removes_no_file_the_undo_list_merely_names_as_a_journal(
    env, capsys, journal: object, tmp_path: Path
) -> None:
    """A batch's journal is only ever `rm-batch-*.jsonl` beside the undo list, and undo deletes
    it: a damaged or foreign list naming another path made undo delete that file (the sweep's
    run deleted /etc/passwd), and a number printed a traceback."""
    from seance.cli.actions import receipt_path

    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    elsewhere = tmp_path / "elsewhere" / "rm-batch-0123456789ab.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text("{}\n")
    named = {"victim": str(victim), "other-dir": str(elsewhere)}.get(journal, journal)  # type: ignore[arg-type]
    receipts = receipt_path()
    receipts.parent.mkdir(parents=True, exist_ok=True)
    receipts.write_bytes(orjson.dumps([{"batch": [], "journal": named}]))
    code, _, err = run(capsys, "rm", "--undo")
    assert code == 1 and "nothing to undo" in err and "Traceback" not in err
    assert victim.read_text() == "keep me" and elsewhere.exists()


def test_a_name_that_is_not_utf8_is_refused_in_one_line_and_nothing_is_written(env, capsys) -> None:
    """`seance rename S $'caf\\xe9'` (a terminal that is not UTF-8): the byte reached the JSON
    encoder deep in the append as a lone surrogate, and a traceback came out (the sweep)."""
    session = write_session(env / "sessions", "/proj", "nnnn0000", mtime_s=OLD)
    before = session.read_bytes()
    code, out, err = run(capsys, "rename", str(session), "caf\udce9")
    assert (code, out) == (2, "") and "not valid UTF-8" in err and "Traceback" not in err
    assert session.read_bytes() == before


def test_a_fork_from_a_directory_whose_name_is_not_utf8_gets_the_cwd_pi_would_write(env, capsys) -> None:
    """pi (Node) reads such a directory as U+FFFD for each bad byte; seance wrote the lone
    surrogate argv made of it into JSON: a traceback, and an empty bucket left behind."""
    root = env / "sessions"
    write_session(root, "/proj/other", "ffff0000-0000")
    code, out, err = run(capsys, "resolve", "ffff", "--fork", "--root", str(root), "--cwd", "/proj/caf\udce9")
    assert code == 0 and "Traceback" not in err
    copy = Path(out.strip())
    assert load_session(copy).cwd == "/proj/caf\ufffd"
    assert copy.parent == root / bucket_name("/proj/caf\ufffd")
    assert sorted(path.name for path in root.iterdir()) == sorted(["--proj-other--", bucket_name("/proj/caf\ufffd")])


def test_rm_that_cannot_remember_the_deletion_does_not_offer_the_undo(env, capsys, monkeypatch) -> None:
    """The cache cannot be written: the delete works, `rm --undo` cannot know it, and the
    message said so and then offered `seance rm --undo` all the same (the sweep)."""
    blocker = env / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(blocker / "cache"))
    root = env / "sessions"
    session = write_session(root, "/proj", "uuuu0000", mtime_s=OLD)
    code, out, err = run(capsys, "rm", str(session), "--root", str(root))
    assert code == 0 and not session.exists() and out.strip().endswith(session.name)
    assert "could not remember the deletion" in err and "rm --undo" not in err.split("could not remember")[1]
    assert "restore it from the Trash" in err


def test_resolve_fork_json_names_the_copys_cwd(env, capsys) -> None:
    """`resolve --fork --json` gave the fork's path and id with the source's cwd (review)."""
    root = env / "sessions"
    write_session(root, "/proj/other", "dddd0000-0000")
    code, out, _ = run(capsys, "resolve", "dddd", "--fork", "--json", "--root", str(root), "--cwd", "/proj/here")
    answer = orjson.loads(out)
    assert code == 0 and answer["cwd"] == "/proj/here" and load_session(answer["path"]).cwd == "/proj/here"
    assert answer["forkedFrom"] and answer["resumeCommand"].startswith("cd /proj/here && ")
