"""seance's writes under faults: SIGKILL mid-write, a full disk, a file of another user.

Findings: 13b (kill -9 leaves seance's temp files), 4a (a failed append leaves a torn line
that the agent's next append is glued onto), 12a (a migration as root hands another user's
file to root).  Each test here fails on the code before this change.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import node_oracle_available, run_node
from write_harness import AT_REST, audit, write_v1, write_v3

from seance.core.errors import SessionError
from seance.core.session import load_session
from seance.core.writes import load_for_write, rename_session, set_label

ROOT = os.geteuid() == 0


def _texts(path: Path) -> list[str]:
    texts = []
    for entry in load_session(path).entries:
        content = entry.get("message", {}).get("content")
        texts.append(content if isinstance(content, str) else json.dumps(content))
    return texts


def _leftover_temps(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def _writer_forever(old_files: list[Path], new_file: Path) -> None:
    """The child: migrate the old files, then label and rename for ever (until SIGKILL)."""
    try:
        for path in old_files:
            load_for_write(path)
        n = 0
        while True:
            n += 1
            target = old_files[n % len(old_files)]
            set_label(target, load_session(target).entries[0]["id"], f"l{n}")
            rename_session(new_file, f"name {n}")
    finally:
        os._exit(0)


@pytest.mark.slow
def test_finding13b_sigkill_at_random_points_of_migrate_label_rename_300_trials(tmp_path, monkeypatch) -> None:
    """Each trial: a forked writer is killed at a random moment.  Every file is then whole
    (the old content or the new, nothing lost, no torn or blank line), and the next write in
    the folder leaves no seance temp file behind."""
    monkeypatch.setenv("SEANCE_WRITE_QUIET_SECONDS", "0")
    rng = random.Random(13)
    for trial in range(300):
        folder = tmp_path / f"t{trial}"
        folder.mkdir()
        old_files = [write_v1(folder / f"old{n}.jsonl", f"kill-{trial}-{n}") for n in range(3)]
        originals = {path: (path.read_bytes(), _texts(path)) for path in old_files}
        new_file = write_v3(folder / "new.jsonl", f"kill-{trial}-new")
        new_before = new_file.read_bytes()
        pid = os.fork()
        if pid == 0:
            _writer_forever(old_files, new_file)
        time.sleep(rng.uniform(0, 0.08))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for path, (raw, texts) in originals.items():
            if path.read_bytes() != raw:
                assert load_session(path).disk_version == 3, f"trial {trial}: {path.name} half migrated"
                assert [t for t in _texts(path) if not t.startswith("l")][: len(texts)] == texts
            assert audit(path, []).blank_lines == 0 and audit(path, []).torn_lines == 0
        assert new_file.read_bytes().startswith(new_before)
        torn = _torn_at_a_page_boundary(new_file)
        after = audit(new_file, [])
        assert after.clean or (torn and after.torn_lines == 2 and not after.blank_lines), f"trial {trial}: {after}"
        set_label(new_file, load_session(new_file).entries[0]["id"], "after the kill")
        if torn:  # the next append starts on a line of its own: only the cut line is skipped
            assert audit(new_file, []).torn_lines == 1 and audit(new_file, []).blank_lines == 0
            assert load_session(new_file).entries[-1].get("label") == "after the kill"
        assert _leftover_temps(folder) == [], f"trial {trial}"


def _torn_at_a_page_boundary(path: Path) -> bool:
    """Whether the file ends in a cut line, cut where a page ends.  A write() that crosses a
    page boundary is stopped between pages when its process gets SIGKILL (the kernel's
    write loop checks for a fatal signal before each page), so no append of a line longer
    than what is left of the last page can be made whole against kill -9; the next write
    must keep the cut line apart, and it does (`appendline`'s torn-line path)."""
    data = path.read_bytes()
    return bool(data) and not data.endswith(b"\n") and len(data) % 4096 == 0


# ---------------------------------------------------------------------------- full disk


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB tmpfs (needs root or CAP_SYS_ADMIN); skipped where mounting is not allowed."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def _pad_to_page_end(path: Path, slack: int) -> None:
    """Grow the session with whole lines until its last page has `slack` bytes free."""
    data = path.read_bytes()
    while (4096 - len(data) % 4096) % 4096 != slack:
        need = (4096 - len(data) % 4096 - slack) % 4096
        filler = {"type": "custom", "id": f"pad{len(data):05d}", "parentId": None, "customType": "pad", "data": ""}
        line_len = len(orjson.dumps(filler)) + 1
        if need < line_len:
            need += 4096
        filler["data"] = "x" * min(need - line_len, 3000)
        data += orjson.dumps(filler) + b"\n"
    path.write_bytes(data)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


@pytest.mark.skipif(not node_oracle_available(), reason="node or tests/oracle/node_modules missing")
def test_finding4a_full_disk_write_is_refused_cleanly_and_pi_appends_after(small_tmpfs) -> None:
    session = write_v3(small_tmpfs / "s.jsonl", "full-disk")
    old = write_v1(small_tmpfs / "old.jsonl", "full-old")
    os.utime(old, (AT_REST, AT_REST))
    _pad_to_page_end(session, 60)  # a label line (~150 bytes) would spill into a new page
    before, old_before = session.read_bytes(), old.read_bytes()
    filler = _fill(small_tmpfs)
    for write in (
        lambda: set_label(session, "fullu001", "a label"),
        lambda: rename_session(session, "a name"),
        lambda: load_for_write(old),
    ):
        with pytest.raises(SessionError) as refused:
            write()
        assert "\n" not in str(refused.value) and "nothing was written" in str(refused.value)
        assert session.read_bytes() == before and old.read_bytes() == old_before
    assert _leftover_temps(small_tmpfs) == []
    filler.unlink()
    appended = json.loads(run_node("append_loop.mjs", str(session), "--count", "2").splitlines()[-1])["ids"]
    assert audit(session, appended).clean
    (pi,) = json.loads(run_node("context_of.mjs", str(session)))
    assert pi["leafId"] == appended[-1] and pi["messages"][-1]["text"] == "agent reply 1"


SHORT_WRITE = r"""
import resource, signal, sys
from seance.core.errors import SessionError
from seance.core.writes import set_label
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path, limit = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
try:
    set_label(path, "shrtu001", "a label that does not fit")
except SessionError as error:
    print("refused:", error)
"""


def test_finding4a_short_write_is_truncated_back(tmp_path) -> None:
    """The kernel accepts only part of the line (RLIMIT_FSIZE: a real short write).  Before: the
    partial line stayed, and pi's next line was glued onto it.  Now it is cut back."""
    session = write_v3(tmp_path / "s.jsonl", "shrt-sess")
    os.utime(session, (AT_REST, AT_REST))
    before = session.read_bytes()
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", SHORT_WRITE, str(session), str(len(before) + 40)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:") and "nothing was written" in done.stdout
    assert session.read_bytes() == before
    # and its time too: cut back "now", it read as written a moment ago (in use for a minute to
    # `rm`, the picker and `clean`; read again by the index) though nothing was written
    assert session.stat().st_mtime == AT_REST


# ---------------------------------------------------------------------------- ownership


@pytest.mark.skipif(not ROOT, reason="chown to another user needs root")
def test_finding12a_migration_as_root_keeps_owner_group_and_mode(tmp_path) -> None:
    path = write_v1(tmp_path / "theirs.jsonl", "owned-by-12345")
    os.chown(path, 12345, 12346)
    os.chmod(path, 0o600)
    os.utime(path, (AT_REST, AT_REST))
    assert load_for_write(path).disk_version == 3
    info = path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (12345, 12346, 0o600)
    assert _leftover_temps(tmp_path) == []


@pytest.mark.skipif(not node_oracle_available(), reason="pi's npm package (tests/oracle) is not installed")
def test_a_cleared_name_is_no_name_for_pi(tmp_path: Path) -> None:
    """`rename S ""` writes what pi's appendSessionInfo("") writes, and pi reads no name after it."""
    session = tmp_path / "s.jsonl"
    write_v3(session, "cleared-1")
    rename_session(session, "temporary")
    (named,) = json.loads(run_node("context_of.mjs", str(session)))
    rename_session(session, "")
    (cleared,) = json.loads(run_node("context_of.mjs", str(session)))
    assert (named["name"], cleared["name"]) == ("temporary", None)


def test_a_live_writer_s_temp_file_with_an_old_mtime_is_not_taken_for_stale(tmp_path: Path) -> None:
    """An undo's copy on its way back across filesystems carries the session's mtime (hours
    old) before it is linked into place: another seance process writing in the folder took
    it for a stale temp by that mtime and removed it under the live undo."""
    from seance.core.safefile import clean_stale_temps, temp_path_for

    temp = temp_path_for(tmp_path / "seance-restoring-s.jsonl")  # (this process's: alive)
    temp.write_bytes(b"the session on its way back\n")
    os.utime(temp, (AT_REST, AT_REST))
    assert clean_stale_temps(tmp_path) == [] and temp.exists()
