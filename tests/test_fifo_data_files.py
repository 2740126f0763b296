"""A FIFO where seance keeps a file of its own never blocks it.

A plain `open()` of a FIFO waits for a writer, forever: one named `last-rm.json` hung every
`seance rm` and `rm --undo`, one in the Trash's `.seance-incoming/` every delete (each one
first recovers interrupted moves), and so on for each file below.  Each is read with
`core.safeopen` (`open_regular` / `read_regular`) now; each check runs in a child process
with a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SESSION = '{"type":"session","version":3,"id":"abc","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'

# (name, the FIFO's path under the test's folder, a script run with that folder as argv[1]:
# it prints what the reader made of the FIFO)
READERS = {
    "trash journal": (
        "data/Trash/.seance-incoming/0123456789ab.json",
        "from seance.core.trash import recover_interrupted\nprint(recover_interrupted(base / 'data' / 'Trash'))",
    ),
    "trashinfo": (
        "info.trashinfo",
        "from seance.core.trash import _read_text, read_trashinfo\n"
        "print(_read_text(base / 'info.trashinfo'))\n"
        "try:\n    read_trashinfo(base / 'info.trashinfo')\nexcept OSError as error:\n    print(error.strerror)",
    ),
    "batch journal": (
        "cache/rm-batch-0123456789ab.jsonl",
        "from seance.cli.actions import _saved_batch\n"
        "print(_saved_batch({'batch': [], 'journal': str(base / 'cache' / 'rm-batch-0123456789ab.jsonl')}))",
    ),
    "breadcrumb": (
        "agent/terminal-sessions/term-1",
        "from seance.core.resume import _breadcrumb_lines\nprint(_breadcrumb_lines(base / 'agent', 'term-1'))",
    ),
    "kept file and its note": (
        "kept.bin",
        "import os\nfrom seance.core.keptfile import mapped_file, vouched\n"
        "os.mkfifo(base / 'kept.ok')\n"
        "print(vouched(base / 'kept.bin', b't' * 16, 0, os.stat(base)))\n"
        "try:\n    mapped_file(base / 'kept.bin')\nexcept OSError as error:\n    print(error.strerror)",
    ),
    "older index": (
        "cache/index.sqlite",
        "from seance.core.index import _is_seance_index\nprint(_is_seance_index(base / 'cache' / 'index.sqlite'))",
    ),
    "blob": (
        "blobs/" + "a" * 64,
        "from seance.core.blobs import BlobStore\nprint(BlobStore(base / 'blobs').read('blob:sha256:' + 'a' * 64))",
    ),
}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_fifo_never_blocks_the_reader(tmp_path: Path, kind: str) -> None:
    where, script = READERS[kind]
    fifo = tmp_path / where
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    env = dict(os.environ, SEANCE_CACHE_DIR=str(tmp_path / "cache"), XDG_DATA_HOME=str(tmp_path / "data"))
    code = f"import sys\nfrom pathlib import Path\nbase = Path(sys.argv[1])\n{script}\n"
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=30, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), kind
    assert fifo.exists()  # (left alone)


def _seance(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        SEANCE_CACHE_DIR=str(tmp_path / "cache"),
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return subprocess.run([sys.executable, "-m", "seance", *args], capture_output=True, text=True, timeout=30, env=env)


def test_rm_and_its_undo_with_a_fifo_as_the_undo_list(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    os.mkfifo(tmp_path / "cache" / "last-rm.json")
    undone = _seance(tmp_path, "rm", "--undo")
    assert undone.returncode != 0 and "not a regular file" in undone.stderr, undone.stderr
    session = tmp_path / "s" / "2025-01-01T00-00-00-000Z_abc.jsonl"
    session.parent.mkdir()
    session.write_text(SESSION)
    old = 1_700_000_000
    os.utime(session, (old, old))
    removed = _seance(tmp_path, "rm", str(session))
    assert removed.returncode == 0, removed.stderr
    assert not session.exists()
    assert "could not remember the deletion for --undo" in removed.stderr and "not a regular file" in removed.stderr
