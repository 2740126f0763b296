"""core.trash: freedesktop Trash layout, unique names, artifacts folders, refusal and undo."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import read_only_trash_files, unfinished_folder_move

from seance.core import trash as trash_module
from seance.core.session import SessionError
from seance.core.trash import (
    NotASessionFile,
    TrashError,
    TrashReceipt,
    read_trashinfo,
    same_file,
    trash_dir,
    trash_session,
    undo,
)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fake HOME and XDG_DATA_HOME, so nothing touches the real Trash."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "home").mkdir()
    return tmp_path


def make_session(folder: Path, name: str = "2025-01-01T00-00-00-000Z_abc.jsonl", text: str = "x") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(
        '{"type":"session","version":3,"id":"abc","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n' + text + "\n"
    )
    hour_ago = time.time() - 3600  # not an agent's live session (see test_trash_races.py for those)
    os.utime(path, (hour_ago, hour_ago))
    return path


def at_rest(folder: Path) -> None:
    """Every file in a session's folder written an hour ago: no agent is using it (a file
    written in the last minute makes the session in use, see `session_activity`)."""
    hour_ago = time.time() - 3600
    for path in folder.rglob("*"):
        os.utime(path, (hour_ago, hour_ago))


def no_hard_links_beside_the_sessions(monkeypatch) -> None:
    """link(2) refused with EPERM outside the Trash, as on a FAT stick or a network share."""
    crossing = trash_module.os.link

    def link(source, destination, **kwargs):
        if "Trash" not in str(source) and "Trash" not in str(destination):
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return crossing(source, destination, **kwargs)

    monkeypatch.setattr(trash_module.os, "link", link)


def across_filesystems(monkeypatch) -> None:
    """Moves between the sessions and the Trash fail with EXDEV, as between two filesystems."""
    real_rename = os.rename

    def rename(source, destination):
        if ("Trash" in str(source)) != ("Trash" in str(destination)):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(source, destination)

    real_link = os.link

    def link(source, destination, **kwargs):
        if ("Trash" in str(source)) != ("Trash" in str(destination)):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_link(source, destination, **kwargs)

    monkeypatch.setattr(trash_module.os, "rename", rename)
    monkeypatch.setattr(trash_module.os, "link", link)


def test_trash_dir_follows_xdg(home, monkeypatch) -> None:
    assert trash_dir() == home / "data" / "Trash"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert trash_dir() == home / "home" / ".local" / "share" / "Trash"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")  # the spec wants absolute paths
    assert trash_dir() == home / "home" / ".local" / "share" / "Trash"


def test_trash_writes_the_freedesktop_layout(home) -> None:
    session = make_session(home / "sessions" / "--p--", "2025 with space_abc.jsonl")
    content = session.read_bytes()
    receipt = trash_session(session)
    item = receipt.session
    assert not session.exists()
    assert item.trashed == home / "data" / "Trash" / "files" / session.name
    assert item.trashed.read_bytes() == content
    info = item.info.read_text()
    assert info.startswith("[Trash Info]\n")
    assert re.search(r"^Path=.*2025%20with%20space_abc\.jsonl$", info, re.MULTILINE)
    assert re.search(r"^DeletionDate=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$", info, re.MULTILINE)
    original, _date = read_trashinfo(item.info)
    assert original == session


def test_same_name_twice_gets_unique_names(home) -> None:
    first = trash_session(make_session(home / "a"))
    second = trash_session(make_session(home / "b"))
    third = trash_session(make_session(home / "c"))
    names = [receipt.session.trashed.name for receipt in (first, second, third)]
    assert names == [
        "2025-01-01T00-00-00-000Z_abc.jsonl",
        "2025-01-01T00-00-00-000Z_abc.2.jsonl",
        "2025-01-01T00-00-00-000Z_abc.3.jsonl",
    ]
    assert third.session.info.name == "2025-01-01T00-00-00-000Z_abc.3.jsonl.trashinfo"
    assert undo(second) == [home / "b" / "2025-01-01T00-00-00-000Z_abc.jsonl"]
    assert (home / "b" / "2025-01-01T00-00-00-000Z_abc.jsonl").exists()


def test_artifacts_folder_goes_along_and_comes_back(home) -> None:
    session = make_session(home / "s")
    artifacts = session.with_suffix("")
    (artifacts / "sub").mkdir(parents=True)
    (artifacts / "1.bash.log").write_text("log")
    (artifacts / "sub" / "agent.jsonl").write_text("{}")
    at_rest(artifacts)
    receipt = trash_session(session)
    assert [item.original for item in receipt.items] == [session, artifacts]
    assert not artifacts.exists()
    assert (receipt.items[1].trashed / "sub" / "agent.jsonl").read_text() == "{}"
    assert undo(receipt) == [session, artifacts]
    assert (artifacts / "1.bash.log").read_text() == "log"
    assert not any((home / "data" / "Trash" / "info").iterdir())
    assert not any((home / "data" / "Trash" / "files").iterdir())


def test_a_session_whose_subagent_is_writing_in_its_folder_is_in_use(home) -> None:
    """oh-my-pi's subagents write their own sessions in the parent's folder (`X/Alpha.jsonl`)
    while the parent file stays quiet for minutes: the check looked at the parent file only,
    so the folder (and the subagent's live session in it) went to the Trash under it."""
    from seance.core.trash import SessionInUse, session_activity

    session = make_session(home / "s")
    subagent = session.with_suffix("") / "Alpha.jsonl"
    subagent.parent.mkdir()
    subagent.write_text('{"type":"session","version":3,"id":"alpha","timestamp":"2025-01-01T00:00:00Z","cwd":"/p"}\n')
    assert session_activity(session) is not None and "Alpha.jsonl" in session_activity(session)
    with pytest.raises(SessionInUse, match=r"Alpha\.jsonl.*written \d+ s ago"):
        trash_session(session)
    assert session.exists() and subagent.exists()
    hour_ago = time.time() - 3600
    os.utime(subagent, (hour_ago, hour_ago))
    assert session_activity(session) is None
    receipt = trash_session(session)
    assert not subagent.exists() and undo(receipt) and subagent.exists()


def test_the_open_session_is_refused(home) -> None:
    session = make_session(home / "s")
    with pytest.raises(TrashError, match="open session"):
        trash_session(session, open_session=session)
    link = home / "link.jsonl"
    link.symlink_to(session)
    with pytest.raises(TrashError, match="open session"):
        trash_session(session, open_session=link)  # the same file by another name
    assert session.exists()
    assert issubclass(TrashError, SessionError)


def test_missing_and_directory_are_refused(home) -> None:
    with pytest.raises(TrashError, match="no such file"):
        trash_session(home / "nope.jsonl")
    (home / "dir.jsonl").mkdir()
    with pytest.raises(TrashError, match="is a directory"):
        trash_session(home / "dir.jsonl")


def test_undo_refuses_when_something_is_back(home) -> None:
    session = make_session(home / "s")
    receipt = trash_session(session)
    session.write_text("a new file at the same path")
    with pytest.raises(TrashError, match="exists there now"):
        undo(receipt)
    assert session.read_text() == "a new file at the same path"
    assert receipt.session.trashed.exists()  # nothing moved


def test_undo_refuses_when_the_trash_was_emptied(home) -> None:
    receipt = trash_session(make_session(home / "s"))
    receipt.session.trashed.unlink()
    with pytest.raises(TrashError, match="no longer in the Trash"):
        undo(receipt)


def test_undo_recreates_a_vanished_bucket(home) -> None:
    session = make_session(home / "s" / "--bucket--")
    receipt = trash_session(session)
    session.parent.rmdir()
    undo(receipt)
    assert session.exists()


def test_receipt_round_trips_through_json(home) -> None:
    receipt = trash_session(make_session(home / "s"))
    again = TrashReceipt.from_json(receipt.to_json())
    assert again == receipt
    with pytest.raises(TrashError, match="not a trash receipt"):
        TrashReceipt.from_json({"items": []})
    with pytest.raises(TrashError, match="not a trash receipt"):
        TrashReceipt.from_json({"deletedAt": "x"})


def test_cross_device_move_copies_then_removes(home, monkeypatch) -> None:
    session = make_session(home / "s", text="payload")
    artifacts = session.with_suffix("")
    artifacts.mkdir()
    (artifacts / "draft.txt").write_text("draft")
    at_rest(artifacts)
    across_filesystems(monkeypatch)
    receipt = trash_session(session)
    assert not session.exists() and not artifacts.exists()
    assert receipt.session.trashed.read_text().endswith("payload\n")
    assert (receipt.items[1].trashed / "draft.txt").read_text() == "draft"
    undo(receipt)
    assert session.read_text().endswith("payload\n")
    assert (artifacts / "draft.txt").read_text() == "draft"


def test_undo_onto_a_filesystem_without_hard_links(home, monkeypatch) -> None:
    """Sessions on a FAT stick or a network share (link(2) refused with EPERM there), the
    Trash on the home filesystem: the delete copies across, and the undo, which published
    its copy back with a hard link, failed with "Operation not permitted"."""
    session = make_session(home / "s", text="payload")
    across_filesystems(monkeypatch)
    no_hard_links_beside_the_sessions(monkeypatch)
    receipt = trash_session(session)
    assert not session.exists()
    assert undo(receipt) == [session]
    assert session.read_text().endswith("payload\n")
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name], "no temp file left behind"
    assert not receipt.session.trashed.exists() and not receipt.session.info.exists()


@pytest.mark.parametrize("when", ["before", "during"])
def test_undo_onto_a_filesystem_without_hard_links_keeps_pi_s_line_at_the_claimed_path(home, monkeypatch, when) -> None:
    """Without hard links the undo claims the session's path with an empty placeholder, then
    renames its copy over it.  pi's next line, appended at that path meanwhile (before the
    rename, or by an append that opened the path just before it), went into the placeholder
    and was thrown away with it: a line pi wrote, in neither the session nor the Trash."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    line = b'{"type":"message","id":"m2","parentId":"m1"}\n'
    across_filesystems(monkeypatch)
    no_hard_links_beside_the_sessions(monkeypatch)
    receipt = trash_session(session)
    real_replace = os.replace

    def pi_appends_at_the_claimed_path(source, destination, **kwargs):
        if Path(destination) != session:
            return real_replace(source, destination, **kwargs)
        with open(session, "ab") as pi:  # pi's appendFileSync: opens the path, writes, closes
            if when == "before":
                pi.write(line)
            real_replace(source, destination, **kwargs)
            if when == "during":
                pi.write(line)

    monkeypatch.setattr(os, "replace", pi_appends_at_the_claimed_path)
    assert undo(receipt) == [session]
    assert session.read_bytes() == content + line
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name], "no temp file left behind"
    assert not receipt.session.trashed.exists() and not receipt.session.info.exists()


def test_undo_on_one_filesystem_without_hard_links_keeps_pi_s_line_at_the_freed_path(home, monkeypatch) -> None:
    """Sessions and the Trash on one filesystem without hard links (a home on a network
    share): the undo looked that the path was free, then renamed the session over whatever
    was there by then: pi's next line, written at the path in between, was lost."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    line = b'{"type":"message","id":"m2","parentId":"m1"}\n'

    def no_hard_links(*_args, **_kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(trash_module.os, "link", no_hard_links)
    receipt = trash_session(session)
    real_rename, real_replace = os.rename, os.replace

    def pi_appends_first(real):
        def move(source, destination, **kwargs):
            if Path(destination) == session:
                with open(session, "ab") as pi:
                    pi.write(line)
            return real(source, destination, **kwargs)

        return move

    monkeypatch.setattr(os, "rename", pi_appends_first(real_rename))
    monkeypatch.setattr(os, "replace", pi_appends_first(real_replace))
    assert undo(receipt) == [session]
    assert session.read_bytes() == content + line
    assert not receipt.session.trashed.exists() and not receipt.session.info.exists()


def test_a_forced_folder_move_across_filesystems_keeps_a_subagent_s_late_lines(home, monkeypatch) -> None:
    """A "delete anyway" of a session whose subagent is writing in its folder, the Trash on
    another filesystem: the folder is copied, then put aside and removed.  A file copied
    before the subagent's next line, or one it started meanwhile, was removed with the aside
    folder: those lines were in neither the Trash nor the sessions folder."""
    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    (artifacts / "Alpha.jsonl").write_text('{"type":"session","id":"alpha"}\n')
    at_rest(artifacts)
    across_filesystems(monkeypatch)
    real_copytree = shutil.copytree

    def subagent_writes_after_the_copy(source, destination, **kwargs):
        copied = real_copytree(source, destination, **kwargs)
        if Path(source) == artifacts:
            with open(artifacts / "Alpha.jsonl", "a") as handle:
                handle.write('{"type":"message","id":"late"}\n')
            (artifacts / "Beta.jsonl").write_text('{"type":"session","id":"beta"}\n')
        return copied

    monkeypatch.setattr(trash_module.shutil, "copytree", subagent_writes_after_the_copy)
    receipt = trash_session(session, force=True)
    folder = receipt.items[1].trashed
    assert (folder / "Alpha.jsonl").read_text().endswith('{"type":"message","id":"late"}\n')
    assert (folder / "Beta.jsonl").read_text() == '{"type":"session","id":"beta"}\n'
    assert (folder / "draft.txt").read_text() == "draft"
    assert sorted(p.name for p in session.parent.iterdir()) == [], "nothing aside"


def test_a_folder_s_late_file_never_goes_through_a_link_the_copy_holds_at_its_name(home, monkeypatch) -> None:
    """The folder is copied across (its links as links), then a subagent replaces a link in
    it with a file of its own: the catch-up copied that file through the copy's link, over
    the file the link points to, outside the Trash (here a note of the user's)."""
    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    outside = home / "home" / "notes.md"
    outside.write_text("the user's own notes")
    (artifacts / "notes").symlink_to(outside)
    (artifacts / "tree").symlink_to(home / "home")
    across_filesystems(monkeypatch)
    real_copytree = shutil.copytree

    def subagent_replaces_the_links_after_the_copy(source, destination, **kwargs):
        copied = real_copytree(source, destination, **kwargs)
        if Path(source) == artifacts:
            (artifacts / "notes").unlink()
            (artifacts / "notes").write_text("the subagent's notes")
            (artifacts / "tree").unlink()
            (artifacts / "tree").mkdir()
            (artifacts / "tree" / "notes.md").write_text("the subagent's tree")
        return copied

    monkeypatch.setattr(trash_module.shutil, "copytree", subagent_replaces_the_links_after_the_copy)
    receipt = trash_session(session, force=True)
    assert outside.read_text() == "the user's own notes"
    folder = receipt.items[1].trashed
    assert not (folder / "notes").is_symlink() and (folder / "notes").read_text() == "the subagent's notes"
    assert not (folder / "tree").is_symlink() and (folder / "tree" / "notes.md").read_text() == "the subagent's tree"


def copies_failing(monkeypatch, name: str, error: OSError) -> Callable[[], None]:
    """The Trash's copy of one file named `name` fails with `error` (a full disk, an unreadable
    file); returns the function that ends the fault."""
    real_copy2 = shutil.copy2

    def copy2(source, destination, **kwargs):
        if Path(source).name == name:
            raise error
        return real_copy2(source, destination, **kwargs)

    monkeypatch.setattr(trash_module.shutil, "copy2", copy2)
    return lambda: monkeypatch.setattr(trash_module.shutil, "copy2", real_copy2)


def late_line_left_aside(home: Path, monkeypatch) -> tuple[TrashReceipt, Path, Callable[[], None]]:
    """A forced delete across filesystems whose folder's catch-up after the commit fails (the
    disk full) while a subagent's late line waits in the aside folder: the receipt, the aside
    folder, and the function that frees the disk."""
    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    (artifacts / "Alpha.jsonl").write_text('{"type":"session","id":"alpha"}\n')
    at_rest(artifacts)
    across_filesystems(monkeypatch)
    real_sync_tree = trash_module._sync_tree
    ended: list[Callable[[], None]] = []

    def subagent_writes_during_the_last_pass(source: Path, copy: Path, *rest: Any, **options: Any) -> bool:
        if copy.parent.name == "files" and not ended:  # the catch-up after the commit
            with open(source / "Alpha.jsonl", "a") as handle:
                handle.write('{"type":"message","id":"late"}\n')
            ended.append(copies_failing(monkeypatch, "Alpha.jsonl", OSError(errno.ENOSPC, "No space left on device")))
        return real_sync_tree(source, copy, *rest, **options)

    monkeypatch.setattr(trash_module, "_sync_tree", subagent_writes_during_the_last_pass)
    receipt = trash_session(session, force=True)
    (aside,) = session.parent.glob(".seance-trashing-*")
    return receipt, aside, ended[0]


def test_a_folder_s_last_writes_are_kept_when_the_catch_up_after_the_commit_fails(home, monkeypatch) -> None:
    """Across filesystems, a subagent's line that came during the folder's last catch-up pass
    is copied after the commit; on a full disk that copy failed, the error was ignored and the
    aside folder removed: the line was in neither the Trash nor the sessions folder."""
    receipt, aside, free_the_disk = late_line_left_aside(home, monkeypatch)
    assert (aside / "Alpha.jsonl").read_text().endswith('{"type":"message","id":"late"}\n'), "the line is kept"
    (note,) = receipt.notes
    assert aside.name in note and "No space left on device" in note
    folder = receipt.items[1].trashed
    assert (folder / "draft.txt").read_text() == "draft"
    free_the_disk()  # the next trash operation finishes the move (its journal was kept)
    assert trash_module.recover_interrupted(folder.parent.parent) == []
    assert (folder / "Alpha.jsonl").read_text().endswith('{"type":"message","id":"late"}\n')
    assert not aside.exists() and not list((folder.parent.parent / ".seance-incoming").iterdir())


def test_an_undo_waits_for_its_folder_s_last_writes_left_aside(home, monkeypatch) -> None:
    """Undone while the folder's last writes were still aside (the disk full): the folder came
    back without them, and the move's journal, its copy gone from the Trash, could never be
    finished: "an earlier delete could not be finished" at every delete and undo from then on,
    the subagent's line only in a hidden folder.  The undo now refuses until they are in."""
    receipt, aside, free_the_disk = late_line_left_aside(home, monkeypatch)
    with pytest.raises(TrashError, match=re.escape(aside.name)):
        undo(receipt)
    assert receipt.items[1].trashed.exists() and aside.exists(), "nothing moved"
    free_the_disk()
    notes: list[str] = []
    assert undo(receipt, notes) == [item.original for item in receipt.items] and notes == []
    assert (receipt.items[1].original / "Alpha.jsonl").read_text().endswith('{"type":"message","id":"late"}\n')
    assert not aside.exists()


def test_a_folder_s_catch_up_settles_on_a_trash_that_keeps_coarser_times(home, monkeypatch) -> None:
    """A Trash on a filesystem that keeps whole seconds (FAT keeps two, ext3 one): each copy's
    mtime is rounded, so the catch-up found every file of the folder changed, pass after pass,
    and copied the whole folder again each time (50 times) before the commit."""
    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    (artifacts / "Alpha.jsonl").write_text('{"type":"session","id":"alpha"}\n')
    for path in artifacts.iterdir():
        os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    across_filesystems(monkeypatch)
    real_utime = os.utime

    def whole_seconds_in_the_trash(path, *args, ns=None, **kwargs):
        if ns is not None and "Trash" in str(path):
            ns = tuple(value - value % 1_000_000_000 for value in ns)
        return real_utime(path, *args, ns=ns, **kwargs)

    monkeypatch.setattr(os, "utime", whole_seconds_in_the_trash)
    copies: list[str] = []
    real_copy2 = shutil.copy2

    def copy2(source, destination, **kwargs):
        copies.append(Path(source).name)
        return real_copy2(source, destination, **kwargs)

    monkeypatch.setattr(trash_module.shutil, "copy2", copy2)
    receipt = trash_session(session, force=True)
    assert sorted(copies) == ["Alpha.jsonl", "draft.txt"], "each file copied once"
    assert (receipt.items[1].trashed / "Alpha.jsonl").read_text() == '{"type":"session","id":"alpha"}\n'


def test_a_folder_s_file_removed_or_renamed_after_its_copy_is_not_in_the_trash(home, monkeypatch) -> None:
    """A subagent deleted one file and renamed another in the folder between its copy to a
    Trash on another filesystem and the rename aside: the catch-up copied what was new, but the
    deleted file stayed in the Trash's folder, and the renamed one was there under both names
    (and came back so on undo)."""
    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    (artifacts / "sub").mkdir()
    (artifacts / "sub" / "scratch.tmp").write_text("scratch")
    (artifacts / "Alpha.jsonl.part").write_text('{"type":"session","id":"alpha"}\n')
    at_rest(artifacts)
    across_filesystems(monkeypatch)
    real_copytree = shutil.copytree

    def subagent_cleans_up_after_the_copy(source, destination, *args, **kwargs):
        copied = real_copytree(source, destination, *args, **kwargs)  # (and its subfolders, through here)
        if Path(source) == artifacts:
            (artifacts / "sub" / "scratch.tmp").unlink()
            (artifacts / "Alpha.jsonl.part").rename(artifacts / "Alpha.jsonl")
        return copied

    monkeypatch.setattr(trash_module.shutil, "copytree", subagent_cleans_up_after_the_copy)
    receipt = trash_session(session, force=True)
    folder = receipt.items[1].trashed
    assert sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) == ["Alpha.jsonl", "draft.txt", "sub"]
    assert undo(receipt) == [session, artifacts]
    assert sorted(path.name for path in artifacts.iterdir()) == ["Alpha.jsonl", "draft.txt", "sub"]


@pytest.mark.parametrize(
    "fault",
    [OSError(errno.ENOSPC, "No space left on device"), PermissionError(errno.EACCES, "Permission denied")],
    ids=["disk-full", "unreadable"],
)
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "aside"])
def test_a_move_recovery_cannot_finish_never_blocks_the_next_delete_or_undo(
    home, monkeypatch, capsys, fault, committed
) -> None:
    """A folder's move across filesystems killed after its aside was made: recovery (the start
    of every `seance rm` and `rm --undo`) copies what was written in it since.  A file there it
    could not copy (the Trash's disk full, a file it cannot read) made every delete and undo fail
    with that error until the user cleaned up by hand.  Now they go on, the move is left as it
    is (nothing lost), said once on one line, and finished by a later one."""
    from seance.cli import main

    monkeypatch.setenv("SEANCE_CACHE_DIR", str(home / "cache"))
    trash = trash_dir()
    source = home / "s" / "2025-01-01T00-00-00-000Z_old"
    aside, journal = unfinished_folder_move(trash, source, committed=committed)
    end_fault = copies_failing(monkeypatch, "late.jsonl", fault)
    session = make_session(home / "s", "2025-02-02T00-00-00-000Z_new.jsonl")
    content = session.read_bytes()
    assert main(["rm", str(session)]) == 0
    assert not session.exists()
    said = capsys.readouterr().err
    assert "Traceback" not in said
    (line,) = [line for line in said.splitlines() if aside.name in line]
    assert fault.strerror in line and str(source) in line
    assert main(["rm", "--undo"]) == 0
    assert session.read_bytes() == content
    assert aside.name in capsys.readouterr().err, "said again at the undo, which tried again"
    assert (aside / "late.jsonl").exists() and journal.exists(), "left as it is for a later try"
    end_fault()
    assert main(["rm", str(session)]) == 0
    assert aside.name not in capsys.readouterr().err
    moved = trash / "files" / source.name
    assert (moved / "late.jsonl").read_text() == '{"type":"message","id":"late"}\n'
    assert (moved / "draft.txt").read_text() == "draft"
    assert not aside.exists() and not journal.exists()


def test_failed_copy_leaves_the_original(home, monkeypatch) -> None:
    session = make_session(home / "s", text="keep me")

    def broken_copy(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    across_filesystems(monkeypatch)
    monkeypatch.setattr(trash_module, "_copy_stream", broken_copy)
    with pytest.raises(OSError, match="No space"):
        trash_session(session)
    assert session.read_text().endswith("keep me\n")
    trash = home / "data" / "Trash"
    assert list((trash / "files").iterdir()) == [] and list((trash / "info").iterdir()) == []
    assert list((trash / ".seance-incoming").iterdir()) == []


@pytest.mark.parametrize("crossing", [False, True], ids=["same-filesystem", "across-filesystems"])
def test_a_symlinked_session_goes_to_the_trash_as_its_link_and_comes_back_as_it(home, monkeypatch, crossing) -> None:
    """A session that is a relative symlink (sessions kept elsewhere, linked into the root).
    The link goes to the Trash (freedesktop: the link, never its target), where it points
    nowhere: undo checked the deletion through it, failed, and `rm --undo` dropped it for good.
    Across filesystems the target's content was copied in, so undo put a copy where the link was."""
    real = make_session(home / "kept", text="payload")
    content = real.read_bytes()
    link = home / "sessions" / "--p--" / "linked.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(real, link.parent))
    if crossing:
        across_filesystems(monkeypatch)
    receipt = trash_session(link)
    assert not os.path.lexists(link) and real.read_bytes() == content, "the target is never moved"
    assert receipt.session.trashed.is_symlink(), "the link itself is in the Trash"
    restored = undo(TrashReceipt.from_json(receipt.to_json()))  # as `seance rm --undo` reads it back
    assert restored == [link]
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(real, link.parent)
    assert link.read_bytes() == content and not os.path.lexists(receipt.session.trashed)


def test_a_move_that_cannot_reach_the_trash_files_folder_puts_the_session_back(home) -> None:
    """Across filesystems the session is put aside in its folder (`.seance-trashing-*`) before the
    copy is renamed into `files/`.  When that last rename failed (here `files/` is a read-only
    mount: EXDEV then EROFS, as a `files/` that is not writable gives EACCES), the copy and the
    `.trashinfo` were removed but the session stayed aside: gone from every listing, no undo."""

    session = make_session(home / "s", text="keep me")
    content = session.read_bytes()
    artifacts = session.with_suffix("")
    artifacts.mkdir()
    (artifacts / "draft.txt").write_text("draft")
    at_rest(artifacts)
    files = home / "data" / "Trash" / "files"
    with read_only_trash_files(files), pytest.raises(OSError):
        trash_session(session)
    assert sorted(p.name for p in session.parent.iterdir()) == sorted([session.name, artifacts.name]), "nothing aside"
    assert session.read_bytes() == content and (artifacts / "draft.txt").read_text() == "draft"
    trash = home / "data" / "Trash"
    assert list((trash / "info").iterdir()) == [] and list((trash / ".seance-incoming").iterdir()) == []


def commit_refused_after(
    monkeypatch, agent_writes, error: BaseException | None = None, *, folder_only: bool = False
) -> None:
    """Across filesystems, the copy's rename into `files/` (the commit point) fails (EROFS, or
    `error`), and `agent_writes()` runs just before it: after the item was renamed aside, when
    its path is free and an agent's next line re-creates the file.  `folder_only`: only the
    artifacts folder's commit fails (the session file's went through)."""
    across_filesystems(monkeypatch)
    inner = trash_module.os.rename

    def rename(source, destination):
        folder = not str(destination).endswith(".jsonl")
        if ".seance-incoming" in str(source) and Path(destination).parent.name == "files" and folder >= folder_only:
            agent_writes()
            raise error or OSError(errno.EROFS, "Read-only file system")
        return inner(source, destination)

    monkeypatch.setattr(trash_module.os, "rename", rename)


def session_with_folder(home: Path) -> Path:
    """A session whose artifacts folder (oh-my-pi's) holds one file, all written an hour ago."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    artifacts = session.with_suffix("")
    artifacts.mkdir()
    (artifacts / "draft.txt").write_text("draft")
    at_rest(artifacts)
    return session


@pytest.mark.parametrize("linked", [False, True], ids=["file", "symlink"])
def test_a_move_that_fails_after_an_agent_wrote_the_freed_path_merges_its_line_back(home, monkeypatch, linked) -> None:
    """The commit failed after the session was put aside and pi's next line had re-created the
    file: the put-back refused to replace that file, so the session stayed as
    `.seance-trashing-*`, listed nowhere, and the new file held one headerless line.  Now the
    two are merged as undo merges them (a link's target takes the line, the link comes back)."""
    real = make_session(home / "kept" if linked else home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = real.read_bytes()
    session = real
    if linked:
        session = home / "s" / real.name
        session.parent.mkdir()
        session.symlink_to(os.path.relpath(real, session.parent))
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: Path(session).write_text(line))
    with pytest.raises(OSError, match="Read-only"):
        trash_session(session)
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name], "nothing aside, no temp"
    assert session.is_symlink() == linked
    assert session.read_bytes() == content + line.encode()
    trash = home / "data" / "Trash"
    assert list((trash / "info").iterdir()) == [] and list((trash / ".seance-incoming").iterdir()) == []


def test_a_failed_move_put_back_onto_a_filesystem_without_hard_links_keeps_pi_s_line(home, monkeypatch) -> None:
    """Sessions on a filesystem without hard links, the Trash on another: the commit failed
    after the session was put aside, and the put-back looked that its path was still free,
    then renamed the session there: pi's next line, written at the path in between, was lost."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    line = b'{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: None)

    def pi_appends_first(real):
        def move(source, destination, **kwargs):
            if Path(destination) == session:
                with open(session, "ab") as pi:
                    pi.write(line)
            return real(source, destination, **kwargs)

        return move

    no_hard_links_beside_the_sessions(monkeypatch)
    monkeypatch.setattr(os, "rename", pi_appends_first(os.rename))
    monkeypatch.setattr(os, "replace", pi_appends_first(os.replace))
    with pytest.raises(OSError, match="Read-only"):
        trash_session(session)
    assert session.read_bytes() == content + line
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name], "nothing aside, no temp"


def test_a_move_that_fails_with_another_file_at_the_freed_path_names_where_the_session_is(home, monkeypatch) -> None:
    """What appeared at the freed path is not the session's continuation (a new header): it is
    left alone, and the error says where the session was kept, not just why the move failed."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    other = '{"type":"session","version":3,"id":"new","timestamp":"2025-01-02T00:00:00.000Z","cwd":"/p"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(other))
    with pytest.raises(TrashError, match=r"kept beside it as \.seance-trashing-") as refused:
        trash_session(session)
    assert "Read-only file system" in str(refused.value)
    assert session.read_text() == other
    (aside,) = session.parent.glob(".seance-trashing-*")
    assert aside.read_bytes() == content


def test_a_folder_refused_at_its_commit_brings_the_session_back_and_names_the_folder_kept_aside(
    home, monkeypatch
) -> None:
    """After review: the session file reached the Trash, its artifacts folder's commit failed
    and a subagent had made the folder again meanwhile.  The folder's put-back error (a
    TrashError, not an OSError) got past the handler that brings the session file back: it
    stayed in the Trash, with no receipt, and the message called the folder "the session"."""
    session = session_with_folder(home)
    content, artifacts = session.read_bytes(), session.with_suffix("")

    def subagent_writes() -> None:
        artifacts.mkdir()
        (artifacts / "Alpha.jsonl").write_text("{}\n")

    commit_refused_after(
        monkeypatch, subagent_writes, OSError(errno.ENOSPC, "No space left on device"), folder_only=True
    )
    with pytest.raises(TrashError, match=r"the folder is kept beside it as \.seance-trashing-") as refused:
        trash_session(session)
    assert "artifacts folder" in str(refused.value)
    assert session.read_bytes() == content, "the session file is back"
    trash = home / "data" / "Trash"
    assert list((trash / "files").iterdir()) == [] and list((trash / "info").iterdir()) == []
    (aside,) = session.parent.glob(".seance-trashing-*")
    assert (aside / "draft.txt").read_text() == "draft"


def test_a_folder_refused_at_its_commit_merges_the_session_back_with_pi_s_new_line(home, monkeypatch) -> None:
    """After review: the session file reached the Trash, its folder's commit failed, and pi's
    next line had re-created the session file: bringing the session back refused that file,
    so the session stayed in the Trash and the line alone at the path.  Merged, as undo does."""
    session = session_with_folder(home)
    content = session.read_bytes()
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(line), folder_only=True)
    with pytest.raises(TrashError, match="could not move the artifacts folder"):
        trash_session(session)
    assert session.read_bytes() == content + line.encode()
    assert (session.with_suffix("") / "draft.txt").read_text() == "draft"
    assert sorted(p.name for p in session.parent.iterdir()) == sorted([session.name, session.with_suffix("").name])
    trash = home / "data" / "Trash"
    assert list((trash / "files").iterdir()) == [] and list((trash / "info").iterdir()) == []


def test_a_put_back_merged_in_place_is_not_reported_aside_when_what_follows_fails(home, monkeypatch) -> None:
    """After review: the merge renamed the session back into place, then the folder's fsync
    failed (EIO): the put-back reported the session as kept aside, and it was in both places."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(line))
    real_fsync_dir = trash_module.fsync_dir

    def fsync_dir(path):
        if Path(path) == session.parent:
            raise OSError(errno.EIO, "Input/output error")
        return real_fsync_dir(path)

    monkeypatch.setattr(trash_module, "fsync_dir", fsync_dir)
    with pytest.raises(OSError, match="Read-only"):
        trash_session(session)
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name], "no second copy aside"
    assert session.read_bytes() == content + line.encode()


def test_a_first_line_still_being_written_at_the_freed_path_is_waited_for(home, monkeypatch) -> None:
    """After review: pi writes a long line (a big tool result) in one write; read half-way it
    is not JSON yet, and the put-back took the file for another one and left the session aside."""
    import threading

    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    head, tail = '{"type":"message","id":"m2","parentId":"m1","data":"' + "x" * 5000, '"}\n'

    def pi_writes_in_two_halves() -> None:
        session.write_text(head)
        threading.Timer(0.1, lambda: session.open("a").write(tail)).start()

    commit_refused_after(monkeypatch, pi_writes_in_two_halves)
    with pytest.raises(OSError, match="Read-only"):
        trash_session(session)
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name]
    assert session.read_bytes() == content + (head + tail).encode()


def test_an_interrupt_that_leaves_the_session_aside_says_where_it_is(home, monkeypatch) -> None:
    """After review: Ctrl+C at the commit with another file at the freed path left the session
    aside (its journal gone, so no recovery finds it) and the interrupt said nothing of it."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    other = '{"type":"session","version":3,"id":"new","timestamp":"2025-01-02T00:00:00.000Z","cwd":"/p"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(other), KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt) as interrupted:
        trash_session(session)
    (aside,) = session.parent.glob(".seance-trashing-*")
    assert any(aside.name in note for note in getattr(interrupted.value, "__notes__", []))


def test_seance_rm_interrupted_with_the_session_left_aside_says_where(home, monkeypatch, capsys) -> None:
    """Second review: the interrupt's note was never shown (the CLI maps Ctrl+C to exit 130
    silently), so the session sat in a hidden `.seance-trashing-*` that no recovery finds."""
    from seance.cli import main

    monkeypatch.setenv("SEANCE_CACHE_DIR", str(home / "cache"))
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    other = '{"type":"session","version":3,"id":"new","timestamp":"2025-01-02T00:00:00.000Z","cwd":"/p"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(other), KeyboardInterrupt())
    assert main(["rm", str(session)]) == 130
    (aside,) = session.parent.glob(".seance-trashing-*")
    assert aside.name in capsys.readouterr().err


@pytest.mark.parametrize("interrupted", ["file", "folder"])
def test_ctrl_c_after_the_commit_across_filesystems_keeps_the_trash_entry_and_the_undo(
    home, monkeypatch, capsys, interrupted
) -> None:
    """Ctrl+C after the copy was renamed into `files/` (while the aside file was removed):
    the handler for a failed move removed the `.trashinfo` of a move that was done (a Trash
    entry no file manager can restore, the session in a hidden aside file too) and
    `seance rm` dropped its undo record."""
    from seance.cli import main

    monkeypatch.setenv("SEANCE_CACHE_DIR", str(home / "cache"))
    session = session_with_folder(home)
    content = session.read_bytes()
    across_filesystems(monkeypatch)
    remove = trash_module._remove

    def ctrl_c_on_the_aside(path: Path) -> None:
        if path.name.startswith(".seance-trashing-") and path.is_dir() == (interrupted == "folder"):
            raise KeyboardInterrupt
        remove(path)

    monkeypatch.setattr(trash_module, "_remove", ctrl_c_on_the_aside)
    assert main(["rm", str(session)]) == 130
    trash = home / "data" / "Trash"
    assert (trash / "files" / session.name).read_bytes() == content
    assert read_trashinfo(trash / "info" / f"{session.name}.trashinfo")[0] == session
    monkeypatch.setattr(trash_module, "_remove", remove)
    (journal,) = (trash / ".seance-incoming").glob("*.json")  # the process is gone: recovery finishes it
    if interrupted == "folder":
        assert (trash / "files" / session.stem / "draft.txt").read_text() == "draft"
        assert read_trashinfo(trash / "info" / f"{session.stem}.trashinfo")[0] == session.with_suffix("")
    state = json.loads(journal.read_text())
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    journal.write_text(json.dumps({**state, "pid": pid}))
    capsys.readouterr()
    assert main(["rm", "--undo"]) == 0
    assert session.read_bytes() == content
    assert (session.with_suffix("") / "draft.txt").read_text() == "draft"
    assert sorted(p.name for p in session.parent.iterdir()) == sorted([session.name, session.stem]), "no aside left"
    assert not list((trash / "files").iterdir()) and not list((trash / "info").iterdir())


def test_an_undo_stopped_between_the_session_and_its_folder_is_finished_by_the_next(home, monkeypatch) -> None:
    """An undo interrupted once the session file was back, while its folder was still being
    copied back across filesystems (Ctrl+C, or kill -9 before the folder's move began): the
    next undo refused ("the delete did not complete; the file is still in place") and the
    folder was left in the Trash for good."""
    session = session_with_folder(home)
    content = session.read_bytes()
    artifacts = session.with_suffix("")
    across_filesystems(monkeypatch)
    receipt = trash_session(session)
    real_copytree = shutil.copytree

    def ctrl_c_in_the_folder_s_copy(source, destination, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trash_module.shutil, "copytree", ctrl_c_in_the_folder_s_copy)
    with pytest.raises(KeyboardInterrupt):
        undo(receipt)
    assert session.read_bytes() == content and not artifacts.exists()
    monkeypatch.setattr(trash_module.shutil, "copytree", real_copytree)
    assert undo(receipt) == [session, artifacts]
    assert session.read_bytes() == content and (artifacts / "draft.txt").read_text() == "draft"
    trash = home / "data" / "Trash"
    assert not list((trash / "files").iterdir()) and not list((trash / "info").iterdir())


def test_an_undo_killed_while_it_copied_the_folder_back_is_finished_by_the_next(home, monkeypatch) -> None:
    """kill -9 (or power loss) while the undo copied the artifacts folder back across
    filesystems: the half-copied folder at its path made every later undo refuse ("a
    different file exists there now"), the whole folder left in the Trash for good."""
    import signal

    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    (artifacts / "second.txt").write_text("second")
    at_rest(artifacts)
    across_filesystems(monkeypatch)
    receipt = trash_session(session)
    pid = os.fork()
    if pid == 0:
        copied = 0
        real_copytree = shutil.copytree

        def killed_after_one_file(source, destination, **kwargs):
            def copy(*args, **kwargs):
                nonlocal copied
                copied += 1
                if copied == 2:
                    os.kill(os.getpid(), signal.SIGKILL)
                return shutil.copy2(*args, **kwargs)

            return real_copytree(source, destination, copy_function=copy, **kwargs)

        trash_module.shutil.copytree = killed_after_one_file
        try:
            undo(receipt)
        finally:
            os._exit(3)
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert undo(receipt) == [session, artifacts]
    assert sorted(p.name for p in artifacts.iterdir()) == ["draft.txt", "second.txt"]
    assert sorted(p.name for p in session.parent.iterdir()) == sorted([session.name, artifacts.name]), "no temp left"
    trash = home / "data" / "Trash"
    assert not list((trash / "files").iterdir()) and not list((trash / "info").iterdir())


def test_a_linked_session_s_undo_killed_after_its_append_never_doubles_pi_s_lines(home) -> None:
    """A symlinked session: the undo appends pi's lines (written at the freed path) to the
    link's target, then puts the link back.  Killed in between, with pi writing one more line
    before the next undo: that undo saw the target did not end with all of pi's lines and
    appended them all again, the first one twice in the session."""
    import signal

    real = make_session(home / "real", text='{"type":"message","id":"m1","parentId":null}')
    content = real.read_bytes()
    session = home / "s" / real.name
    session.parent.mkdir()
    session.symlink_to(Path("..") / "real" / real.name)
    receipt = trash_session(session)
    first = b'{"type":"message","id":"m2","parentId":"m1"}\n'
    second = b'{"type":"message","id":"m3","parentId":"m2"}\n'
    session.write_bytes(first)  # pi's next line, at the path the delete freed
    pid = os.fork()
    if pid == 0:
        trash_module.os.symlink = lambda *_args, **_kwargs: os.kill(os.getpid(), signal.SIGKILL)
        try:
            undo(receipt)
        finally:
            os._exit(3)
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and real.read_bytes() == content + first
    with open(session, "ab") as pi:
        pi.write(second)
    assert undo(receipt) == [session]
    assert session.is_symlink() and real.read_bytes() == content + first + second


def pi_writes_in_two_halves(session: Path, head: str, tail: str) -> Callable[[], None]:
    """pi's write of one long line, seen half-way: the head now, the rest 0.1 s later."""
    import threading

    def write() -> None:
        session.write_text(head)
        threading.Timer(0.1, lambda: session.open("a").write(tail)).start()

    return write


def test_a_folder_refused_while_pi_writes_a_long_first_line_merges_the_session_back(home, monkeypatch) -> None:
    """Second review: the folder's failure brings the session file back through undo, whose
    plan read pi's first line once: half-written, it was "a different file", and the session
    stayed in the Trash apart from its folder.  Undo's plan waits for the line too."""
    session = session_with_folder(home)
    content = session.read_bytes()
    head, tail = '{"type":"message","id":"m2","parentId":"m1","data":"' + "x" * 5000, '"}\n'
    commit_refused_after(monkeypatch, pi_writes_in_two_halves(session, head, tail), folder_only=True)
    with pytest.raises(TrashError, match="could not move the artifacts folder"):
        trash_session(session)
    assert session.read_bytes() == content + (head + tail).encode()
    assert list((home / "data" / "Trash" / "files").iterdir()) == []


def test_a_folder_left_aside_is_named_when_the_session_file_cannot_come_back(home, monkeypatch) -> None:
    """Second review: the session file could not come back (another session at its path) and
    the folder was left aside (a subagent re-made it): the message was undo's alone."""
    session = session_with_folder(home)
    artifacts = session.with_suffix("")
    other = '{"type":"session","version":3,"id":"new","timestamp":"2025-01-02T00:00:00.000Z","cwd":"/p"}\n'

    def both_write() -> None:
        artifacts.mkdir()
        (artifacts / "Alpha.jsonl").write_text("{}\n")
        session.write_text(other)

    full = OSError(errno.ENOSPC, "No space left on device")
    commit_refused_after(monkeypatch, both_write, full, folder_only=True)
    with pytest.raises(TrashError) as refused:
        trash_session(session)
    (aside,) = session.parent.glob(".seance-trashing-*")
    message = str(refused.value)
    assert aside.name in message and "the session file stays in the Trash" in message, message


def test_a_merge_that_fails_before_its_rename_leaves_the_session_aside(home, monkeypatch) -> None:
    """(From the second review: the two sides of `_holds_session`.)  Nothing changed at the
    path: the session is kept aside and said to be."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(line))

    def copymode(*_args, **_kwargs):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(trash_module.shutil, "copymode", copymode)
    with pytest.raises(TrashError, match="kept beside it"):
        trash_session(session)
    (aside,) = session.parent.glob(".seance-trashing-*")
    assert aside.read_bytes() == content and session.read_text() == line


def test_a_merge_whose_late_lines_fail_after_its_rename_is_done(home, monkeypatch) -> None:
    """The merge is in place, its late lines failed (a full disk): no second copy aside."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    content = session.read_bytes()
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(line))

    def late(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_module, "_late_lines", late)
    with pytest.raises(OSError, match="Read-only"):
        trash_session(session)
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name]
    assert session.read_bytes() == content + line.encode()


def test_undo_keeps_an_agent_s_order_when_fsync_is_slower_than_its_appends(home, monkeypatch) -> None:
    """Second review: the merge's catch-up fsynced every pass, so with an fsync slower than the
    agent's appends (a disk, not tmpfs) every pass found more, the passes ran out, and the
    lines written during the last fsync came after newer ones.  A pass is now a read and a
    write; one fsync, then one last pass.  (An agent like pi's appendFileSync: open, one
    write, close, every 1 ms, in a thread; each fsync 5 ms.)"""
    import threading

    pad = "x" * 500
    body = "".join(
        f'{{"type":"message","id":"m{i:05d}","parentId":{"null" if i == 0 else f"{chr(34)}m{i - 1:05d}{chr(34)}"},'
        f'"pad":"{pad}"}}\n'
        for i in range(4000)
    )
    session = make_session(home / "s", text=body.rstrip("\n"))
    before = [json.loads(line)["id"] for line in session.read_bytes().splitlines()[1:]]
    receipt = trash_session(session, active_seconds=0, force=True)
    real_fsync = os.fsync

    def slow_fsync(fd):
        time.sleep(0.005)
        return real_fsync(fd)

    monkeypatch.setattr(trash_module.os, "fsync", slow_fsync)
    written: list[str] = []
    started = threading.Event()

    def agent() -> None:
        parent = before[-1]
        for number in range(400):
            with open(session, "ab") as handle:
                handle.write(f'{{"type":"message","id":"p{number:04d}","parentId":"{parent}"}}\n'.encode())
            written.append(parent := f"p{number:04d}")
            if number == 2:
                started.set()
            time.sleep(0.001)

    thread = threading.Thread(target=agent)
    thread.start()
    started.wait(5)
    assert undo(receipt) == [session]
    thread.join()
    restored = [json.loads(line)["id"] for line in session.read_bytes().splitlines()[1:]]
    assert sorted(restored) == sorted(before + written), "no line lost or doubled"
    assert restored == before + written, "in the agent's order"


def test_a_second_ctrl_c_during_the_put_back_still_says_where_the_session_is(home, monkeypatch, capsys) -> None:
    """Third review: Ctrl+C at the commit, pi's long first line half-written at the freed path,
    and a second Ctrl+C while the put-back waits for it: the session stayed hidden aside, its
    journal gone, and nothing was said."""
    from seance.cli import main

    monkeypatch.setenv("SEANCE_CACHE_DIR", str(home / "cache"))
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    half = '{"type":"message","id":"m2","parentId":"m1","data":"' + "x" * 5000
    armed: list[bool] = []
    commit_refused_after(monkeypatch, lambda: (session.write_text(half), armed.append(True)), KeyboardInterrupt())
    real_sleep = time.sleep

    def second_ctrl_c(seconds: float) -> None:
        if armed:
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(trash_module.time, "sleep", second_ctrl_c)
    assert main(["rm", str(session)]) == 130
    (aside,) = session.parent.glob(".seance-trashing-*")
    assert aside.name in capsys.readouterr().err


def test_ctrl_c_while_the_folder_moves_brings_the_session_file_back(home, monkeypatch, capsys) -> None:
    """Third review: Ctrl+C during the artifacts folder's move (across file systems, the long
    part) left the session file in the Trash, its folder in place, nothing said, no receipt."""
    from seance.cli import main

    monkeypatch.setenv("SEANCE_CACHE_DIR", str(home / "cache"))
    session = session_with_folder(home)
    content = session.read_bytes()
    commit_refused_after(monkeypatch, lambda: None, KeyboardInterrupt(), folder_only=True)
    assert main(["rm", str(session)]) == 130
    assert session.read_bytes() == content and (session.with_suffix("") / "draft.txt").read_text() == "draft"
    assert list((home / "data" / "Trash" / "files").iterdir()) == []


def test_a_session_back_in_place_is_not_said_to_stay_in_the_trash(home, monkeypatch) -> None:
    """Third review: the folder's commit failed, undo merged the session file back in place,
    then the agent's late lines failed (a full disk): the message said the file stays in the
    Trash, and a second copy did."""
    session = session_with_folder(home)
    content = session.read_bytes()
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    commit_refused_after(monkeypatch, lambda: session.write_text(line), folder_only=True)

    def late(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_module, "_late_lines", late)
    with pytest.raises(TrashError, match="the session file is back, but") as refused:
        trash_session(session)
    assert "stays in the Trash" not in str(refused.value)
    assert session.read_bytes() == content + line.encode()
    assert list((home / "data" / "Trash" / "files").iterdir()) == []


def test_a_late_line_after_a_session_without_a_final_newline_goes_on_a_line_of_its_own(home, monkeypatch) -> None:
    """Third review: undo appended the agent's late lines with a plain write, so after a session
    whose last line has no newline the two entries shared a line (both unreadable)."""
    folder = home / "s"
    folder.mkdir()
    session = folder / "2025-01-01T00-00-00-000Z_abc.jsonl"
    session.write_text(
        '{"type":"session","version":3,"id":"abc","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"m1","parentId":null}'
    )
    hour_ago = time.time() - 3600
    os.utime(session, (hour_ago, hour_ago))
    receipt = trash_session(session, active_seconds=0, force=True)
    session.touch()  # pi's appendFileSync has made the file, its write not done yet
    line = '{"type":"message","id":"m2","parentId":"m1"}\n'
    real = trash_module.shutil.copymode

    def copymode(source, destination, **kwargs):
        with open(session, "ab") as agent:  # pi's line, after the last pass, before the rename
            agent.write(line.encode())
        monkeypatch.setattr(trash_module.shutil, "copymode", real)
        return real(source, destination, **kwargs)

    monkeypatch.setattr(trash_module.shutil, "copymode", copymode)
    assert undo(receipt) == [session]
    lines = session.read_text().splitlines()
    assert lines[-1] == line.strip() and lines[-2].endswith('"parentId":null}'), lines


def test_undo_merging_an_agents_new_lines_keeps_the_sessions_mode(home) -> None:
    """An agent re-created the deleted session's file (a line continuing it); undo merges the
    two into a new file, which was made with the default mode: a private (0600) session came
    back readable by everyone."""
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    os.chmod(session, 0o600)
    hour_ago = time.time() - 3600
    os.utime(session, (hour_ago, hour_ago))
    receipt = trash_session(session)
    session.write_text('{"type":"message","id":"m2","parentId":"m1"}\n')  # the agent's next line
    os.chmod(session, 0o644)
    assert undo(receipt) == [session]
    assert session.read_text().endswith('"id":"m1","parentId":null}\n{"type":"message","id":"m2","parentId":"m1"}\n')
    assert stat.S_IMODE(session.stat().st_mode) == 0o600


def test_a_receipt_of_an_older_version_for_an_absolute_symlink_still_undoes(home) -> None:
    """Older versions recorded the link's target's size and mtime: still restorable."""
    from dataclasses import replace

    real = make_session(home / "kept", text="payload")
    link = home / "sessions" / "linked.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    receipt = trash_session(link)
    target = real.stat()
    old_identity = replace(receipt.session.identity, size=target.st_size, mtime_ns=target.st_mtime_ns)
    old = TrashReceipt((replace(receipt.session, identity=old_identity),), receipt.deleted_at)
    assert undo(old) == [link] and link.is_symlink() and os.readlink(link) == str(real)


def test_a_failed_undo_across_filesystems_leaves_no_partial_copy_beside_the_session(home, monkeypatch) -> None:
    """Undo copies the session back across filesystems into a temp file beside it; a full disk
    there (ENOSPC part-way) left that partial `.seance-restoring-*` in the session folder for
    good.  It goes; the deletion stays undoable and a later undo restores it whole."""
    session = make_session(home / "s", text="payload " * 2000)
    content = session.read_bytes()
    across_filesystems(monkeypatch)
    receipt = trash_session(session)
    real_copy = trash_module._copy_stream

    def disk_fills(reader, data, *, truncate):
        with open(data, "wb") as writer:
            writer.write(reader.read(4096))  # part of it landed, then the disk was full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_module, "_copy_stream", disk_fills)
    with pytest.raises(OSError, match="No space"):
        undo(receipt)
    assert sorted(p.name for p in session.parent.iterdir()) == [], "no partial copy left in the session folder"
    monkeypatch.setattr(trash_module, "_copy_stream", real_copy)
    assert undo(receipt) == [session] and session.read_bytes() == content


@pytest.mark.parametrize("content", ["# README\n", '{"a":1}\n', ""])
def test_a_file_that_is_not_a_session_is_refused_and_its_neighbour_folder_kept(home, content) -> None:
    folder = home / "p"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "keep.txt").write_text("keep")
    path = folder / "data.jsonl"
    path.write_text(content)
    with pytest.raises(NotASessionFile, match="not a session"):
        trash_session(path)
    assert path.read_text() == content and (folder / "data" / "keep.txt").exists()
    assert issubclass(NotASessionFile, TrashError)
    receipt = trash_session(path, force=True)  # forced: the file alone, never the folder beside it
    assert [item.original for item in receipt.items] == [path]
    assert not path.exists() and (folder / "data" / "keep.txt").read_text() == "keep"
    assert undo(receipt) == [path] and path.read_text() == content


def test_same_file(home) -> None:
    session = make_session(home / "s")
    link = home / "link.jsonl"
    link.symlink_to(session)
    hard = home / "hard.jsonl"
    os.link(session, hard)
    assert same_file(session, link) and same_file(str(hard), session)
    assert not same_file(session, home / "other.jsonl")
    assert same_file(home / "gone" / ".." / "gone.jsonl", home / "gone.jsonl")  # neither exists: by path


FIRST = '{"type":"message","id":"m1","parentId":null}'
NEXT = '{"type":"message","id":"m2","parentId":"m1"}\n'


def _linked_session(home: Path, relative: bool) -> tuple[Path, Path]:
    """A session file kept outside the sessions root, listed there through a symlink."""
    real = make_session(home / "kept", text=FIRST)
    link = home / "sessions" / "--p--" / "linked.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(real, link.parent) if relative else real)
    return real, link


@pytest.mark.parametrize("relative", [True, False], ids=["relative-link", "absolute-link"])
def test_undo_of_a_symlinked_session_the_agent_wrote_to_again_keeps_the_link_and_the_line(home, relative) -> None:
    """pi's next line after the delete re-creates the path as a plain file.  Undo puts the link
    back and appends that line to the session it points to: a relative link failed ("No such
    file": read from the Trash it points nowhere) and blocked every undo after it; an absolute
    one was replaced by a copy of its target holding the line, the target left without it."""
    real, link = _linked_session(home, relative)
    receipt = trash_session(link)
    with open(link, "a") as agent:  # (appendFileSync at the path)
        agent.write(NEXT)
    assert undo(TrashReceipt.from_json(receipt.to_json())) == [link]
    assert link.is_symlink() and real.read_text().endswith(NEXT)
    assert not list((home / "sessions" / "--p--").glob(".seance-*"))


def test_a_receipt_saved_before_the_move_still_undoes_a_relative_symlinked_session(home) -> None:
    """`rm` killed after the move (or `clean --yes` stopped) leaves the receipt saved before it,
    which names the session by its header id alone: read through the link as from its folder."""
    real, link = _linked_session(home, relative=True)
    planned: list[TrashReceipt] = []
    trash_session(link, on_reserved=planned.append)
    assert undo(TrashReceipt.from_json(planned[0].to_json())) == [link]
    assert link.is_symlink() and link.read_bytes() == real.read_bytes()


def test_a_private_session_stays_private_in_the_trash_and_back_across_filesystems(home, monkeypatch) -> None:
    session = make_session(home / "s", text=FIRST)
    os.chmod(session, 0o600)
    across_filesystems(monkeypatch)
    receipt = trash_session(session)
    in_trash = stat.S_IMODE(os.stat(receipt.session.trashed).st_mode)
    assert undo(receipt) == [session]
    assert (in_trash, stat.S_IMODE(session.stat().st_mode)) == (0o600, 0o600)


LATE = '{"type":"message","id":"m3","parentId":"m2"}\n'
AGENT_NEXT = '{"type":"message","id":"m4","parentId":"m3"}\n'


def test_a_link_merges_late_lines_without_overwriting_the_agents_next_append(home, monkeypatch) -> None:
    """Once the link is back the agent appends through it to the target, while the undo adds
    the lines that reached the agent's file just before: one O_APPEND write, so an append
    landing between the undo's look at the target's end and its write is kept."""
    real, link = _linked_session(home, relative=False)
    receipt = trash_session(link)
    with open(link, "a") as agent:
        agent.write(NEXT)
    symlink, pread = os.symlink, os.pread
    raced: list[str] = []

    def late_line(source: Any, destination: Any, *args: Any, **kwargs: Any) -> Any:
        if ".seance-restoring-" in str(destination):  # between the read of the agent's file and the rename
            with open(link, "a") as agent:
                agent.write(LATE)
        return symlink(source, destination, *args, **kwargs)

    def agent_appends_first(fd: int, length: int, offset: int) -> bytes:
        if os.path.islink(link) and not raced:  # the late lines' look at the end, after the rename
            raced.append("once")
            with open(link, "a") as agent:
                agent.write(AGENT_NEXT)
        return pread(fd, length, offset)

    monkeypatch.setattr(os, "symlink", late_line)
    monkeypatch.setattr(os, "pread", agent_appends_first)
    assert undo(TrashReceipt.from_json(receipt.to_json())) == [link]
    text = real.read_text()
    assert raced and NEXT in text and LATE in text and AGENT_NEXT in text, text


def test_undo_with_the_links_target_gone_says_so(home) -> None:
    """The link's target moved since and an agent's line at the path: a TrashError (the link
    stays in the Trash), not a raw FileNotFoundError."""
    real, link = _linked_session(home, relative=True)
    receipt = trash_session(link)
    with open(link, "a") as agent:
        agent.write(NEXT)
    real.rename(real.with_name("moved.jsonl"))
    with pytest.raises(TrashError, match="cannot be read"):
        undo(TrashReceipt.from_json(receipt.to_json()))


def test_a_failed_link_merge_keeps_what_another_writer_appended_to_the_target(home, monkeypatch) -> None:
    """A failed merge cuts back only its own lines: not those a second writer of the target
    (pi on the real file) appended after them."""
    real, link = _linked_session(home, relative=True)
    receipt = trash_session(link)
    with open(link, "a") as agent:
        agent.write(NEXT)
    rename = os.rename
    other = '{"type":"message","id":"o1","parentId":"m1"}\n'

    def full_disk(source: Any, destination: Any, *args: Any, **kwargs: Any) -> Any:
        if ".seance-restoring-" in str(source):
            with open(real, "a") as writer:
                writer.write(other)
            raise OSError(errno.ENOSPC, "No space left on device")
        return rename(source, destination, *args, **kwargs)

    monkeypatch.setattr(os, "rename", full_disk)
    with pytest.raises(OSError):
        undo(TrashReceipt.from_json(receipt.to_json()))
    assert other in real.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_read_only_session_the_agent_wrote_to_again_is_undone_as_a_normal_user() -> None:
    """0444 session deleted, pi's next line re-creates the path, undo as a normal user: the
    merged file took the mode before the agent's lines were appended to it (EACCES, every
    time). Run in a child as uid 65534 (root skips the check), in a folder it can reach."""
    base = Path(tempfile.mkdtemp(prefix="seance-nobody-", dir="/tmp"))
    os.chown(base, 65534, 65534)
    try:
        _undo_as_nobody(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _undo_as_nobody(base: Path) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child reports by its exit code)
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.environ["HOME"] = str(base / "home")
            os.environ["XDG_DATA_HOME"] = str(base / "data")
            (base / "home").mkdir()
            session = make_session(base / "s", text=FIRST)
            os.chmod(session, 0o444)
            receipt = trash_session(session)
            with open(session, "w") as agent:
                agent.write(NEXT)
            code = 0 if undo(receipt) == [session] and session.read_text().endswith(NEXT) else 1
        except BaseException as error:
            sys.stderr.write(f"as uid 65534: {type(error).__name__}: {error}\n")
            code = 2
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _dead_journal(trash: Path, **state: object) -> Path:
    """A journal of a delete killed mid-way (its pid gone), holding `state`."""
    from seance.core.trash import INCOMING

    for folder in ("files", "info", INCOMING):
        (trash / folder).mkdir(parents=True, exist_ok=True)
    journal = trash / INCOMING / "4000000-abcdefabcdef.json"
    journal.write_text(json.dumps({"pid": 4_000_000, "info": "", "copied": True, **state}))
    return journal


def test_a_journal_naming_an_aside_elsewhere_never_makes_recovery_remove_it(home) -> None:
    """Recovery after a killed delete removes the journal's aside (a folder: all of it): a
    journal naming another (damaged, not seance's) made the next `seance rm` delete that folder."""
    from seance.core.trash import recover_interrupted

    victim = home / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "file.txt").write_text("precious")
    trash = trash_dir()
    journal = _dead_journal(trash, source=str(home / "src.jsonl"), name="existing.jsonl", aside=str(victim))
    (trash / "files" / "existing.jsonl").write_text("x\n")
    assert recover_interrupted(trash) == []
    assert (victim / "sub" / "file.txt").read_text() == "precious" and journal.exists()


def test_a_journal_whose_name_climbs_out_of_the_trash_never_writes_there(home) -> None:
    """The Trash name is a file name in `files/`: one with `..` made recovery append the aside's
    tail to a file outside the Trash."""
    from seance.core.trash import ASIDE_PREFIX, recover_interrupted

    trash = trash_dir()
    victim = trash.parent / "victim.txt"  # files/../../victim.txt
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_text("precious\n")
    aside = home / f"{ASIDE_PREFIX}4000000-abcdefabcdef"
    aside.write_text("precious\nmore lines\n")
    journal = _dead_journal(trash, source=str(home / "src.jsonl"), name="../../victim.txt", aside=str(aside))
    assert recover_interrupted(trash) == []
    assert victim.read_text() == "precious\n" and aside.exists() and journal.exists()


def _rm_in_read_only_mounts(home: Path, session: Path, *read_only: Path) -> subprocess.CompletedProcess[str]:
    """`seance rm SESSION` with each of `read_only` bind-mounted read-only over itself, in a
    private mount namespace (`unshare -m`; the test is skipped where it is not allowed)."""
    mounts = " && ".join(f"mount --bind -o ro {shlex.quote(str(p))} {shlex.quote(str(p))}" for p in read_only)
    rm = f"{shlex.quote(sys.executable)} -m seance rm {shlex.quote(str(session))}"
    command = f"mount --make-rprivate / && {mounts} && exec {rm}"
    if not shutil.which("unshare") or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("needs `unshare -m` (a private mount namespace)")
    return subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, timeout=60)


def test_rm_in_a_read_only_folder_says_so_in_one_line(home, monkeypatch) -> None:
    """A session in a read-only folder: `seance rm` said first "could not remember the deletion
    for --undo" (about a deletion that never happened), then an EROFS naming seance's own
    `.seance-trashing-…` temp file (after copying the whole session into the Trash for nothing)."""
    cache = home / "cache"
    cache.mkdir()
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(cache))
    session = make_session(home / "sessions" / "--p--", text='{"type":"message","id":"m1","parentId":null}')
    before = session.read_bytes()
    done = _rm_in_read_only_mounts(home, session, session.parent, cache)
    assert done.returncode == 2
    folder = str(session.parent)
    assert done.stderr.splitlines() == [
        f"seance: {session}: cannot be moved to the Trash: its folder {folder} is not writable; nothing changed"
    ]
    assert session.read_bytes() == before and sorted(p.name for p in session.parent.iterdir()) == [session.name]
    trash = home / "data" / "Trash"
    assert not any((trash / "files").iterdir()) if (trash / "files").exists() else True
    assert not any((trash / "info").iterdir()) if (trash / "info").exists() else True


def test_rm_whose_folder_refuses_the_move_says_which_folder(home, monkeypatch, capsys) -> None:
    """The folder refuses the rename only when it is tried (made read-only after the check, an
    immutable flag access() did not see): the same one line, not the temp file's name, and no
    undo-record line for a deletion that did not happen."""
    from seance.cli import main

    blocker = home / "cache"
    blocker.write_text("a file where the cache folder should be")  # the undo record cannot be saved
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(blocker / "sub"))
    session = make_session(home / "s", text='{"type":"message","id":"m1","parentId":null}')
    across_filesystems(monkeypatch)
    rename, access = os.rename, os.access
    checked: list[str] = []

    def refusing_rename(source, destination):
        if Path(source) == session:
            raise OSError(errno.EROFS, "Read-only file system", str(source), None, str(destination))
        return rename(source, destination)

    def access_then_not(path, mode, **kwargs):  # writable when checked first, not when the move failed
        if Path(path) == session.parent:
            checked.append(str(path))
            return len(checked) == 1
        return access(path, mode, **kwargs)

    monkeypatch.setattr(os, "rename", refusing_rename)
    monkeypatch.setattr(os, "access", access_then_not)
    assert main(["rm", str(session)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"seance: {session}: cannot be moved to the Trash: its folder {session.parent} is not writable; nothing changed"
    ]
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name]
    assert not list((home / "data" / "Trash" / "files").iterdir())
    assert not list((home / "data" / "Trash" / "info").iterdir())
