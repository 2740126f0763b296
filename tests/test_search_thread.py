"""app.search_thread: the picker's searches run in order on one thread (one index connection)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from seance.app.search_thread import SearchThread
from seance.core.catalog import Catalog
from seance.core.search import parse_query


def test_work_runs_in_order_on_one_thread_and_inline_once_closed() -> None:
    searches = SearchThread()
    seen: list[tuple[str, int]] = []

    def slow() -> None:
        time.sleep(0.05)
        seen.append(("warm", threading.get_ident()))

    searches.soon(slow)
    callers = [
        threading.Thread(target=lambda n=n: searches.run(lambda: seen.append((f"search{n}", threading.get_ident()))))
        for n in range(3)
    ]
    for caller in callers:
        caller.start()
        time.sleep(0.01)
    for caller in callers:
        caller.join()
    assert [name for name, _ in seen] == ["warm", "search0", "search1", "search2"]  # queued in order
    assert len({ident for _, ident in seen}) == 1 and seen[0][1] != threading.get_ident()
    searches.close()
    assert searches.run(threading.get_ident) == threading.get_ident()  # closed: in the caller's thread
    searches.soon(lambda: seen.append(("late", 0)))
    assert seen[-1][0] == "search2"
    assert searches.submit(lambda: 7).result() == 7  # a closed thread's future is answered at once


def test_a_submitted_query_runs_beside_the_caller_and_hands_back_its_error() -> None:
    index = SearchThread("seance-index")
    started = threading.Event()

    def query() -> int:
        started.set()
        time.sleep(0.05)
        return 42

    future = index.submit(query)
    assert started.wait(1)  # under way while the caller goes on (the titles are ranked meanwhile)
    assert future.result() == 42
    failed = index.submit(lambda: 1 / 0)
    try:
        failed.result()
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("the error was lost")
    index.close()


def test_index_queries_from_the_search_thread_reuse_one_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each keystroke's worker is a new thread; its index query runs on the search thread,
    whose one connection checks the full-text signature once."""
    from ui_sessions import make_root

    catalog = Catalog([make_root(tmp_path)], cache_dir=tmp_path / "cache")
    catalog.refresh()
    searches = SearchThread()
    index = catalog.index
    assert index is not None
    connected: list[int] = []
    connect = index._connect
    monkeypatch.setattr(index, "_connect", lambda: (connected.append(threading.get_ident()), connect())[1])
    for word in ("auth", "zebra", "release"):
        worker = threading.Thread(target=lambda w=word: searches.run(lambda: catalog.text_hits(parse_query(w))))
        worker.start()
        worker.join()
    assert len(connected) == 1 and connected[0] != threading.get_ident()
    searches.close()
