"""A sync answered with the listing's head alone (`SYNC HEAD`, core/watchd.py and
core/watchclient.py): a query whose answer is kept needs the files' key, not 100,000 files.

A real watcher process over real files; the files, when asked for, come from a second sync,
and what changed in between (or a watcher gone meanwhile, or one that does not know the
request) never makes an answer from other files than the ones it says it was made from.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_watchd import Daemon, _env, _ls_query
from write_harness import write_v3

from seance.core.discovery import discover
from seance.core.fileskey import files_key
from seance.core.watchclient import synced_listing
from seance.core.watchproto import SOCKET_NAME

# A watcher that does not know `SYNC HEAD` (one started before it existed): the request's
# name is changed in its process, so it closes that connection unanswered, as an older one does.
OLDER_WATCHER = (
    "import sys; from seance.core import watchd; watchd.SYNC_HEAD = b'(unknown)'; "
    "from seance.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "sessions"
    (root / "--proj--").mkdir(parents=True)
    for number in range(4):
        write_v3(root / "--proj--" / f"s{number}.jsonl", f"{number:04d}cccc-headfirst")
    cache = tmp_path / "cache"
    cache.mkdir()
    return root, cache


@pytest.fixture
def daemon(store: tuple[Path, Path]) -> Iterator[Daemon]:
    running = Daemon(*store)
    try:
        yield running
    finally:
        running.stop()


def _on_disk(root: Path) -> list[tuple]:
    return [tuple(info) for info in discover([root]).infos]


def _asked(cache: Path, line: bytes) -> bytes:
    """Everything the watcher answers to `line`, until it closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(cache / SOCKET_NAME))
        conn.sendall(line + b"\n")
        data = b""
        while chunk := conn.recv(1 << 16):
            data += chunk
    return data


def test_sync_head_is_answered_with_the_files_key_and_no_file(daemon: Daemon) -> None:
    reply = _asked(daemon.cache, b"SYNC HEAD")
    header, newline, rest = reply.partition(b"\n")
    assert newline and not rest  # one line: no listing follows
    fields = json.loads(header)
    on_disk = discover([daemon.root]).infos
    assert fields["bytes"] == 0 and fields["files"] == len(on_disk) == 4
    assert bytes.fromhex(fields["key"]) == files_key(on_disk)
    whole = _asked(daemon.cache, b"SYNC")  # a plain sync still sends the files after its header
    assert json.loads(whole.partition(b"\n")[0])["bytes"] == len(whole.partition(b"\n")[2]) > 0


def test_head_first_listing_gives_the_files_on_demand_and_a_change_in_between_moves_it_6_trials(
    daemon: Daemon,
) -> None:
    bucket = daemon.root / "--proj--"
    for trial in range(6):
        pending = synced_listing(daemon.cache, [daemon.root], True, head_first=True)
        assert pending is not None and pending.known() is None
        head = pending.head()
        assert head.key == files_key(discover([daemon.root]).infos)
        if trial % 2:  # a file appears after the head was answered
            write_v3(bucket / f"late{trial}.jsonl", f"{trial:04d}eeee-late")
        files = [tuple(info) for info in pending().infos]
        assert files == _on_disk(daemon.root), trial  # the files now, never the head's older ones
        assert pending.moved == bool(trial % 2), trial  # an answer made from them is not kept
        assert pending.head().key == files_key(pending().infos)


def test_head_first_listing_whose_watcher_is_gone_finds_the_files_here(daemon: Daemon) -> None:
    pending = synced_listing(daemon.cache, [daemon.root], True, head_first=True)
    assert pending is not None
    key = pending.head().key
    daemon.stop()
    assert [tuple(info) for info in pending().infos] == _on_disk(daemon.root)
    assert not pending.moved and pending.head().key == key
    pending = synced_listing(daemon.cache, [daemon.root], True, head_first=True)
    assert pending is None  # (no watcher now: the caller discovers)


def test_an_older_watcher_without_sync_head_is_asked_a_plain_sync(store: tuple[Path, Path]) -> None:
    root, cache = store
    process = subprocess.Popen(
        [sys.executable, "-c", OLDER_WATCHER, "index", "--watch", "--root", str(root)],
        env=_env(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        while b"watching (" not in process.stderr.readline():
            assert process.poll() is None, "the watcher did not start"
        assert _asked(cache, b"SYNC HEAD") == b""  # it does not know the request
        pending = synced_listing(cache, [root], True, head_first=True)
        assert pending is not None and pending.known() is None  # the plain sync's files, not decoded yet
        assert pending.head().key == files_key(discover([root]).infos)
        assert [tuple(info) for info in pending().infos] == _on_disk(root)
        write_v3(root / "--proj--" / "new.jsonl", "7777eeee-olderwatcher")
        assert _ls_query(root, cache, "olderwatcher") == [str(root / "--proj--" / "new.jsonl")]
    finally:
        process.terminate()
        process.wait(10)
