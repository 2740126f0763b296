"""Closing the index while another thread reads from it (the picker exiting under a search
worker; `app/keytable.py` closing its catalog as the warm search still ran): the other
thread's statement runs to its end, and its connection is closed once the thread drops it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import seance

REPO_PARENT = str(Path(seance.__file__).resolve().parent.parent)

# In a child: without the fix the reader's next row raised "Cannot operate on a closed
# database", and at times the process died of a segmentation fault (CI, 2026-11-27).
SCRIPT = textwrap.dedent(
    """
    import gc, os, sqlite3, sys, tempfile, threading, time
    from pathlib import Path
    from seance.core.index import Index

    QUERY = ("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 400000) "
             "SELECT x FROM n")

    def open_files():
        return len(os.listdir("/proc/self/fd"))

    for trial in range(int(sys.argv[1])):
        before = open_files()
        index = Index(Path(tempfile.mkdtemp()))
        started, results = threading.Event(), []

        def reader():
            try:
                db = index.db
                started.set()
                results.append(sum(x for (x,) in db.execute(QUERY)))
            except Exception as error:
                results.append(repr(error))
            finally:
                started.set()

        thread = threading.Thread(target=reader)
        thread.start()
        started.wait()
        time.sleep(0.001 * (trial % 7))
        index.close()
        thread.join()
        assert results == [400000 * 400001 // 2], (trial, results)
        mine = index.db  # this thread connects again after a close, as before
        assert mine.execute("SELECT 1").fetchone() == (1,)
        index.close()
        try:
            mine.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            pass
        else:
            raise AssertionError("close() left this thread's own connection open")
        del thread, mine, index
        gc.collect()
        assert open_files() == before, "a connection outlived its thread and the index"
    print("ok")
    """
)


def test_closing_the_index_leaves_another_threads_running_query_alone_30_trials(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "30"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"PYTHONPATH": REPO_PARENT, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_thread_that_ends_closes_its_connection_while_the_index_stays_open(tmp_path: Path) -> None:
    """A host's long-lived Catalog outlives the threads that query it (each picker's search
    thread): a thread's connection is closed as the thread ends, not kept until `close()`."""
    from seance.core.index import Index

    index = Index(tmp_path)
    used: list = []
    for _ in range(3):
        thread = threading.Thread(target=lambda: used.append(index.db.execute("SELECT count(*) FROM files").fetchone()))
        thread.start()
        thread.join()
    connections: list = []
    thread = threading.Thread(target=lambda: connections.append(index.db))
    thread.start()
    thread.join()
    try:
        connections[0].execute("SELECT 1")
    except sqlite3.ProgrammingError:
        pass
    else:
        raise AssertionError("the ended thread's connection is still open")
    assert used == [(0,)] * 3 and index.db.execute("SELECT 1").fetchone() == (1,)
    index.close()
