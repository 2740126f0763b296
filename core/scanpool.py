"""Parallel scanning for big cold reads: worker processes, so parsing uses every core.

Parsing JSON lines is CPU-bound Python; threads would share one interpreter lock.  The
catalog hands chunks of files to forked workers and consumes the results in order, writing
the index while the workers parse the next chunks.  A full-text scan's text is extracted
and chunked into FTS rows in the worker too (`scan_one`), so the parent only writes: FTS5
tokenising, on a core of its own, is then what bounds `seance index`.  Forking is only done
where it is safe and cheap: Linux, and only when the caller says so (`Catalog(workers=N)`,
used by the single-threaded CLI).  A UI process with threads keeps the serial path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .discovery import FileInfo
    from .metadata import MetaState

CHUNK = 64  # files per task: big enough to amortise pickling, small enough to balance
MIN_FILES = 256  # below this, start-up costs more than it saves
AHEAD = 4  # chunks in flight per worker: keeps every worker busy, bounds what waits in memory

Item = TypeVar("Item")


def available() -> bool:
    return sys.platform.startswith("linux")


def default_workers() -> int:
    """Workers for a CLI run: `$SEANCE_WORKERS`, else the usable CPUs (at most 4); 1 without fork."""
    import os

    if not available():
        return 1
    override = os.environ.get("SEANCE_WORKERS", "")
    if override.isdigit():
        return max(1, int(override))
    return max(1, min(4, len(os.sched_getaffinity(0))))


def scan_one(info: FileInfo, state: MetaState | None, want_text: bool) -> tuple[Any, ...]:
    """One file's exact metadata, and its full text when `want_text` (as FTS rows,
    `index.text_chunks`), continued from `state` when given:
    ("ok", summary, state_json, continued, chunks or None) | ("not"|"error", reason).
    The one scan of a changed file, in this process or in a worker."""
    from .fulltext import TextCollector
    from .index import text_chunks
    from .metadata import NotSessionFile, scan_file, summary_from_scan

    try:
        if want_text:
            collector = TextCollector()  # the bounds on what of a session is indexed live there
            result = scan_file(info.path, state=state, sink=collector)
            chunks: list[tuple[str, str]] | None = text_chunks(collector.texts)
        else:
            result, chunks = scan_file(info.path, state=state), None
        # Inside the guard: the summary and the encoded state are this file's too.
        return ("ok", summary_from_scan(info.path, result), result.state.to_json(), result.continued, chunks)
    except NotSessionFile as error:
        return ("not", str(error))
    except OSError as error:
        return ("error", error.strerror or str(error))
    except Exception as error:  # one poisoned file must not fail its whole chunk, or lose every other row
        return ("error", f"cannot be read ({type(error).__name__}: {error})")


def scan_chunk(chunk: Sequence[tuple[FileInfo, bytes | None, bool]]) -> list[tuple[Any, ...]]:
    """`scan_one` of each (file, saved state JSON or None, want_text), in a worker: a
    session's text comes back already chunked (fewer, bigger strings to pickle), so the
    parent only writes the index."""
    from .metadata import MetaState

    out: list[tuple[Any, ...]] = []
    for info, saved, want_text in chunk:
        try:
            state = MetaState.from_json(saved) if saved else None
        except Exception as error:  # a saved state that does not decode: the file is unreadable this time
            out.append(("error", f"cannot be read ({type(error).__name__}: {error})"))
            continue
        out.append(scan_one(info, state, want_text))
    return out


def map_chunks(
    function: Callable[[Sequence[Item]], list[Any]], items: Sequence[Item], workers: int, ahead: int = AHEAD
) -> Iterator[tuple[Sequence[Item], list[Any]]]:
    """(chunk, results) in order, computed by `workers` forked processes.

    At most `ahead` chunks per worker are submitted and not yet consumed, and a consumed
    chunk's future is dropped: when the consumer (writing the index) is slower than the
    workers, results would otherwise pile up in memory, all of them, a few KB per file.
    Closing the iterator early (a cancel) drops the chunks not started yet.
    """
    import multiprocessing  # here, not at the top: ~30 ms that a warm `seance ls` never needs
    import os
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor

    chunks = (items[start : start + CHUNK] for start in range(0, len(items), CHUNK))
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    window: deque[tuple[Sequence[Item], Future[list[Any]]]] = deque()
    try:
        for chunk in chunks:
            window.append((chunk, pool.submit(function, chunk)))
            if len(window) >= workers * ahead:
                done, future = window.popleft()
                yield done, future.result()
        while window:
            done, future = window.popleft()
            yield done, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def die_with_parent(parent: int) -> None:
    """A child's start: killed when the process `parent` that started it dies (Linux
    `PR_SET_PDEATHSIG`; the pool's workers, the watcher's refresh process).  A `seance index`
    killed with SIGKILL otherwise left its workers behind for good, each blocked on a task
    queue whose write end it holds itself (so it never sees end of file)."""
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux's libc: the pool ends with its parent's shutdown only
        return
    if os.getppid() != parent:  # the parent died before the call: no signal will come
        os._exit(1)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
