"""The scanning workers of a process killed with SIGKILL (`kill -9` of a `seance index`) end with
it: before, each stayed blocked for good on a task queue whose write end it holds itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seance.core import scanpool

pytestmark = pytest.mark.skipif(not scanpool.available(), reason="forked workers: Linux only")

SCRIPT = """
import os, sys, time
from seance.core import scanpool

def slow(chunk):
    time.sleep(0.05)
    return [os.getpid()] * len(chunk)

for _chunk, results in scanpool.map_chunks(slow, list(range(scanpool.CHUNK * 100_000)), 2):
    print(results[0], flush=True)
"""


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by init, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_workers_die_with_a_parent_killed_with_sigkill_3_trials(tmp_path: Path) -> None:
    package_parent = str(Path(scanpool.__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=package_parent)
    for _trial in range(3):
        parent = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True, env=env)
        assert parent.stdout is not None
        workers: set[int] = set()
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:
            workers.add(int(parent.stdout.readline()))
        assert len(workers) == 2, workers
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in workers if _alive(pid)]
        for pid in left:  # (never leave them behind, even when the test fails)
            os.kill(pid, signal.SIGKILL)
        assert not left, f"workers outlived their killed parent: {left}"
