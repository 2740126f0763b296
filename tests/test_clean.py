"""`seance clean`: the criteria, the dry run, `--yes` as one batch, and `seance rm --undo` of it."""

# ruff: noqa: F811  (`env` is test_cli_actions's fixture: fake HOME, XDG data home (the Trash), sessions root)

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import orjson
import pytest
from conftest import read_only_trash_files
from test_cli_actions import env, run, write_session  # noqa: F401

from seance.core.clean import Criteria, human_size, parse_age, parse_size, plan_clean
from seance.core.model import SessionSummary
from seance.core.trash import TrashBatch, trash_each, trash_session, undo, undo_each

DAY = 86400
HOLD_OPEN = "import sys, time; f = open(sys.argv[1]); print('open', flush=True); time.sleep(60)"
OLD = 1_700_000_000  # 2023: long before any corpus timestamp


def tree_digest(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under `root`: its sha256 and mode, by relative path."""
    found = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
    return found


def corpus_roots(copy: Path) -> list[str]:
    """The copy's sessions roots: pi/, omp/ and each wild/<repo>/ (as the corpus tests read them)."""
    roots = [copy / "pi", copy / "omp", *sorted(path for path in (copy / "wild").iterdir() if path.is_dir())]
    return [argument for root in roots for argument in ("--root", str(root))]


def test_clean_dry_run_lists_exactly_what_yes_trashes_and_rm_undo_restores_it_on_a_corpus_copy(
    env, capsys, corpus
) -> None:
    copy = env / "corpus"
    shutil.copytree(corpus, copy, symlinks=True)  # a copy in a temp dir: the corpus is never touched
    sessions = sorted(copy.rglob("*.jsonl"))
    now = time.time()
    for index, path in enumerate(sessions):  # every other file older than 30 days, the rest 2 days old
        stamp = now - (40 if index % 2 == 0 else 2) * DAY
        os.utime(path, (stamp, stamp))
    old = {str(path) for index, path in enumerate(sessions) if index % 2 == 0}
    before = tree_digest(copy)
    roots = corpus_roots(copy)

    code, out, err = run(capsys, "clean", "--empty", "--older-than", "30d", "--all", *roots, "--json")
    assert code == 0, err
    dry = orjson.loads(out)
    planned = {item["path"] for item in dry["sessions"]}
    assert dry["dryRun"] is True and dry["count"] == len(planned) > 0
    assert planned <= old and all(item["firstMessage"] == "(no messages)" for item in dry["sessions"])
    assert dry["bytes"] == sum(os.path.getsize(path) for path in planned)
    assert tree_digest(copy) == before, "the dry run changed nothing"
    code, text, _ = run(capsys, "clean", "--empty", "--older-than", "30d", "--all", *roots)
    assert code == 0 and text.splitlines()[0].startswith(f"would move {len(planned)} sessions")
    assert {line.rsplit("  ", 1)[1] for line in text.splitlines()[1:]} == planned

    code, out, err = run(capsys, "clean", "--empty", "--older-than", "30d", "--all", *roots, "--yes", "--json")
    assert code == 0, err
    done = orjson.loads(out)
    assert done["dryRun"] is False and {item["path"] for item in done["sessions"]} == planned
    assert done["kept"] == [] and not any(os.path.exists(path) for path in planned)
    assert all(Path(item["trashed"]).is_file() for item in done["sessions"])
    with_folders = [path for path in planned if os.path.isdir(path[: -len(".jsonl")])]
    assert not with_folders, "artifact folders go along"

    code, out, err = run(capsys, "rm", "--undo")
    assert code == 0, err
    assert planned <= set(out.splitlines()) and f"restored {len(planned)} of {len(planned)}" in err
    assert tree_digest(copy) == before, "every file back, byte-identical"
    assert run(capsys, "rm", "--undo")[0] == 1  # one undo restored the whole batch


def test_clean_needs_a_criterion_and_reads_ages_and_sizes(env, capsys) -> None:
    code, out, err = run(capsys, "clean", "--root", str(env / "sessions"))
    assert (code, out) == (2, "") and "needs a criterion" in err and err.count("\n") == 1
    for flag, value in (("--older-than", "90"), ("--older-than", "3y"), ("--larger-than", "ten")):
        code, _, err = run(capsys, "clean", flag, value, "--root", str(env / "sessions"))
        assert code == 2 and "is not" in err and err.count("\n") == 1
    assert (parse_age("90d"), parse_age("2w"), parse_age("12H")) == (90 * DAY, 14 * DAY, 12 * 3600)
    assert (parse_size("10M"), parse_size("500k"), parse_size("1GiB"), parse_size("4096")) == (
        10 << 20,
        500 << 10,
        1 << 30,
        4096,
    )
    assert (human_size(512), human_size(1536), human_size(10 << 20)) == ("512 B", "1.5 KB", "10.0 MB")


def test_clean_scope_query_size_and_the_current_folder_by_default(env, capsys) -> None:
    root = env / "sessions"
    here = write_session(root, "/proj", "aaaa0000", mtime_s=OLD)
    elsewhere = write_session(root, "/other", "bbbb0000", mtime_s=OLD)
    bigger = write_session(root, "/proj", "cccc0000", mtime_s=OLD)
    with open(bigger, "ab") as handle:  # a label: the file grows, the messages stay
        handle.write(orjson.dumps({"type": "label", "id": "l1", "parentId": "a1", "targetId": "u1", "label": "x"}))
        handle.write(b"\n")
    os.utime(bigger, (OLD, OLD))
    size = os.path.getsize(here)

    def planned(*argv: str) -> set[str]:
        code, out, err = run(capsys, "clean", "--root", str(root), "--json", *argv)
        assert code == 0, err
        return {Path(item["path"]).name for item in orjson.loads(out)["sessions"]}

    assert planned("--cwd", "/proj", "--older-than", "1d") == {here.name, bigger.name}
    assert planned("--all", "--older-than", "1d") == {here.name, bigger.name, elsewhere.name}
    assert planned("--cwd", "/proj", "--larger-than", str(size)) == {bigger.name}
    assert planned("--all", "--query", "bbbb0000") == {elsewhere.name}
    assert planned("--all", "--empty") == set()
    code, _, err = run(capsys, "clean", "--root", str(root), "--all", "--query", "re:(")
    assert code == 2 and "bad query" in err


def test_clean_keeps_a_session_an_agent_is_writing_and_says_so(env, capsys) -> None:
    root = env / "sessions"
    idle = write_session(root, "/proj", "dddd0000", mtime_s=OLD)
    busy = write_session(root, "/proj", "eeee0000")  # written just now: an agent may be at it
    code, out, err = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--larger-than", "0")
    assert code == 0 and out.startswith("would move 1 session ") and str(idle) in out and str(busy) not in out
    assert "kept (in use: written" in err and str(busy) in err
    code, out, err = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--larger-than", "0", "--yes")
    assert code == 0 and not idle.exists() and busy.exists()


def test_clean_yes_that_moves_nothing_it_chose_does_not_exit_0(env, capsys) -> None:
    """Every move refused (here the Trash's `files/` is a read-only mount): "moved 0 sessions",
    each "not moved" on stderr, and exit 0, so `seance clean … --yes && echo cleaned` said done."""

    root = env / "sessions"
    idle = write_session(root, "/proj", "dddd0000", mtime_s=OLD)
    files = env / "data" / "Trash" / "files"
    with read_only_trash_files(files):
        code, out, err = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--larger-than", "0", "--yes")
    assert code == 2 and out.startswith("moved 0 sessions") and "not moved" in err and idle.exists()


def test_pinned_sessions_are_kept_unless_included(env, capsys) -> None:
    """A session pinned with `seance pin` (the user's marks file) is never cleaned unless asked."""
    root = env / "sessions"
    pinned = write_session(root, "/proj", "ffff0000", mtime_s=OLD)
    other = write_session(root, "/proj", "ffff1111", mtime_s=OLD)
    assert run(capsys, "pin", str(pinned))[0] == 0
    argv = ("clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d", "--json")
    _, out, _ = run(capsys, *argv)
    answer = orjson.loads(out)
    assert [Path(item["path"]).name for item in answer["sessions"]] == [other.name]
    assert answer["kept"] == [{"path": str(pinned), "reason": "pinned"}]
    _, out, _ = run(capsys, *argv, "--include-pinned")
    assert {Path(item["path"]).name for item in orjson.loads(out)["sessions"]} == {pinned.name, other.name}


def test_clean_output_is_sanitised(env, capsys) -> None:
    root = env / "sessions"
    path = write_session(root, "/proj", "1111\x1b[31mred", mtime_s=OLD)
    text = path.read_text().replace("question in", "question \\u001b]0;pwned\\u0007 in")
    path.write_text(text)
    os.utime(path, (OLD, OLD))
    code, out, err = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d")
    assert code == 0 and "question" in out
    assert "\x1b" not in out + err and "\x07" not in out + err


def test_undo_of_a_batch_restores_what_it_can_and_keeps_the_rest(env, capsys) -> None:
    root = env / "sessions"
    paths = [write_session(root, "/proj", f"{n}{n}{n}{n}2222", mtime_s=OLD) for n in "pqr"]
    contents = [path.read_bytes() for path in paths]
    assert run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d", "--yes")[0] == 0
    paths[1].write_text("someone else's file\n")  # the path is taken now
    code, out, err = run(capsys, "rm", "--undo")
    assert code == 2 and set(out.splitlines()) == {str(paths[0]), str(paths[2])}
    assert "restored 2 of 3" in err and "exists there now" in err
    assert paths[0].read_bytes() == contents[0] and paths[1].read_text() == "someone else's file\n"
    paths[1].unlink()
    code, out, _ = run(capsys, "rm", "--undo")  # the rest stayed on the stack
    assert (code, out) == (0, f"{paths[1]}\n") and paths[1].read_bytes() == contents[1]


def test_an_interrupted_clean_stays_undoable_as_one_batch(env, capsys, monkeypatch) -> None:
    from seance.core.catalog import Catalog

    root = env / "sessions"
    paths = [write_session(root, "/proj", f"{n}{n}{n}{n}3333", mtime_s=OLD) for n in "stuv"]
    real = Catalog.trash
    calls = []

    def trash_then_interrupt(self, path, **kwargs):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, path, **kwargs)

    monkeypatch.setattr(Catalog, "trash", trash_then_interrupt)
    code, _, _ = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d", "--yes")
    assert code == 130 and sum(not path.exists() for path in paths) == 2
    monkeypatch.setattr(Catalog, "trash", real)
    code, out, _ = run(capsys, "rm", "--undo")
    assert code == 0 and len(out.splitlines()) == 2 and all(path.exists() for path in paths)


def test_a_killed_clean_is_undone_from_its_journal(env, capsys) -> None:
    """The stack entry names a journal; a receipt is journalled before its file moves."""
    from seance.cli.actions import BatchRecord

    root = env / "sessions"
    paths = [write_session(root, "/proj", f"{n}{n}{n}{n}4444", mtime_s=OLD) for n in "wx"]
    record = BatchRecord()
    for path in paths:
        trash_session(path, on_reserved=record.reserved)
    assert record.journal.exists() and not any(path.exists() for path in paths)  # killed: no finish()
    code, out, _ = run(capsys, "rm", "--undo")
    assert (code, set(out.splitlines())) == (0, {str(path) for path in paths})
    assert not record.journal.exists()


def test_trash_each_and_undo_each_report_per_file(env) -> None:
    root = env / "sessions"
    good = write_session(root, "/proj", "gggg5555", mtime_s=OLD)
    missing = root / "missing.jsonl"
    moved = trash_each([good, missing])
    assert [receipt.session.original for receipt in moved.batch.receipts] == [good]
    assert [path for path, _ in moved.refused] == [missing] and "no such file" in moved.refused[0][1]
    saved = TrashBatch.from_json(orjson.loads(orjson.dumps(moved.batch.to_json())))
    assert saved == moved.batch
    Path(moved.batch.receipts[0].session.trashed).unlink()  # emptied from the Trash
    outcome = undo_each(saved, undo)
    assert outcome.restored == () and len(outcome.gone) == 1 and outcome.blocked == ()
    with pytest.raises(Exception, match="not a trash batch"):
        TrashBatch.from_json({"items": []})


def test_plan_clean_criteria_combine_and_activity_counts_the_mtime() -> None:
    now = 1_800_000_000.0

    def summary(name: str, *, days: float, mtime_days: float, size: int, messages: str) -> SessionSummary:
        return SessionSummary(
            path=f"/s/{name}.jsonl",
            id=name,
            cwd="/p",
            name=None,
            parent_session=None,
            created=None,
            modified="",
            modified_ms=(now - days * DAY) * 1000,
            message_count=0,
            first_message=messages,
            size=size,
            mtime_ns=int((now - mtime_days * DAY) * 1e9),
            exact=True,
        )

    sessions = [
        summary("old-empty", days=40, mtime_days=40, size=10, messages="(no messages)"),
        summary("touched", days=40, mtime_days=1, size=10, messages="(no messages)"),  # renamed yesterday
        summary("old-talk", days=40, mtime_days=40, size=10, messages="hello"),
        summary("big", days=40, mtime_days=40, size=20 << 20, messages="(no messages)"),
    ]

    def names(criteria: Criteria, **kwargs) -> list[str]:
        plan = plan_clean(sessions, criteria, now=now, busy=lambda path: None, **kwargs)
        return [item.id for item in plan.selected]

    assert names(Criteria(empty=True, older_than=30 * DAY)) == ["old-empty", "big"]
    assert names(Criteria(older_than=30 * DAY)) == ["old-empty", "old-talk", "big"]
    assert names(Criteria(empty=True, larger_than=10 << 20)) == ["big"]
    assert names(Criteria(empty=True), pinned=frozenset({"big"})) == ["old-empty", "touched"]
    assert names(Criteria(empty=True), pinned=frozenset({"big"}), include_pinned=True) == [
        "old-empty",
        "touched",
        "big",
    ]
    busy = plan_clean(
        sessions, Criteria(empty=True), now=now, busy=lambda path: "open in node (pid 1)" if "big" in path else None
    )
    assert [item.id for item, _ in busy.in_use] == ["big"] and busy.total_bytes == 20


def test_clean_keeps_a_session_another_process_holds_open(env, capsys) -> None:
    """The /proc scan is done once for the whole plan (`core.holders.open_files`), and still sees it."""
    import subprocess
    import sys

    from seance.core.holders import can_see_holders

    if not can_see_holders():
        pytest.skip("no /proc: open files cannot be seen here")
    root = env / "sessions"
    held = write_session(root, "/proj", "hhhh6666", mtime_s=OLD)  # an agent keeping its descriptor open
    free = write_session(root, "/proj", "iiii6666", mtime_s=OLD)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; f = open(sys.argv[1]); print('open', flush=True); time.sleep(60)",
            held,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        _, out, _ = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d", "--json")
        answer = orjson.loads(out)
        assert [item["path"] for item in answer["sessions"]] == [str(free)]
        ((kept),) = answer["kept"]
        assert kept["path"] == str(held) and kept["reason"].startswith("in use: open in ")
        assert kept["reason"].endswith(f"(pid {holder.pid})")
    finally:
        holder.kill()
        holder.wait()


def test_clean_says_once_what_an_unfinished_earlier_delete_left_where(env, capsys, monkeypatch) -> None:
    """Each session's move first finishes a delete an earlier process left half-done; when that
    cannot be finished (the Trash's disk full) every session of the clean-up was refused with
    "No space left on device".  Now they all go, and what that delete left where is said once."""
    import errno

    from conftest import unfinished_folder_move

    from seance.core import trash as trash_module

    root = env / "sessions"
    paths = [write_session(root, "/proj", f"{n}{n}{n}{n}4444", mtime_s=OLD) for n in "wxy"]
    aside, journal = unfinished_folder_move(env / "data" / "Trash", env / "elsewhere" / "old-session")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_module.shutil, "copy2", disk_full)
    code, _out, err = run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d", "--yes")
    assert code == 0 and not any(path.exists() for path in paths)
    assert err.count(aside.name) == 1 and "No space left on device" in err
    assert (aside / "late.jsonl").exists() and journal.exists()


def test_undo_of_a_clean_says_once_what_an_unfinished_delete_left_where(env, capsys, monkeypatch) -> None:
    """The batch's undo finishes a delete left half-done before each session it restores;
    when that cannot be done (the Trash's disk full) nothing said so, the aside folder unsaid."""
    import errno

    from conftest import unfinished_folder_move

    from seance.core import trash as trash_module

    root = env / "sessions"
    paths = [write_session(root, "/proj", f"{n}{n}{n}{n}5555", mtime_s=OLD) for n in "wxy"]
    assert run(capsys, "clean", "--root", str(root), "--cwd", "/proj", "--older-than", "1d", "--yes")[0] == 0
    aside, journal = unfinished_folder_move(env / "data" / "Trash", env / "elsewhere" / "old-session")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_module.shutil, "copy2", disk_full)
    code, _out, err = run(capsys, "rm", "--undo")
    assert code == 0 and all(path.exists() for path in paths)
    assert err.count(aside.name) == 1 and "No space left on device" in err
    assert (aside / "late.jsonl").exists() and journal.exists()
