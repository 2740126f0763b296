"""The live watcher watches directory by directory (no recursive OS watch, app/watchdirs.py):
a session in a project folder or an oh-my-pi session folder that appears after the watch
started is still reported, and so is a file appended in a folder watched from the start."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from textual.message import Message
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import OTHER, PROJECT, Spec, make_root, session_path, write_session

from seance.app.messages import SessionsChanged, Watching
from seance.app.screens.session_list import PickerOptions
from seance.app.watcher import SHARD_DIRS, RootWatcher
from seance.core.catalog import Catalog

WAIT_S = 8.0  # the watcher debounces ~200 ms; a loaded CI machine gets plenty more


class Posted:
    """The messages a `RootWatcher` posts, collected from its thread."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._arrived = threading.Condition()

    def __call__(self, message: Message) -> None:
        with self._arrived:
            self.messages.append(message)
            self._arrived.notify_all()

    def changed_paths(self) -> set[str]:
        return {
            summary.path
            for message in self.messages
            if isinstance(message, SessionsChanged)
            for summary in message.changed
        }

    def wait_for(self, condition: Callable[[], bool], timeout: float = WAIT_S) -> bool:
        with self._arrived:
            return self._arrived.wait_for(condition, timeout)


def watching(root: Path, tmp_path: Path) -> tuple[RootWatcher, Posted]:
    posted = Posted()
    watcher = RootWatcher(Catalog([root], cache_dir=tmp_path / "cache"), posted)
    watcher.start()
    assert posted.wait_for(lambda: any(isinstance(message, Watching) for message in posted.messages))
    return watcher, posted


def session_bytes(tmp_path: Path, sid: str, cwd: str = PROJECT) -> bytes:
    """A valid pi session's bytes, written aside (to be put in place in one step)."""
    return write_session(tmp_path / "aside", Spec(sid, cwd, ("a child's work",), timedelta(seconds=1))).read_bytes()


def test_a_session_in_a_project_folder_created_after_the_watch_started_is_reported(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    watcher, posted = watching(root, tmp_path)
    try:
        fresh = write_session(root, Spec("s-new-project", "/work/demo/brand-new", ("first words",)))
        assert posted.wait_for(lambda: str(fresh) in posted.changed_paths())
        again = write_session(root, Spec("s-new-project-2", "/work/demo/brand-new", ("second session",)))
        assert posted.wait_for(lambda: str(again) in posted.changed_paths()), "the new folder is watched too"
    finally:
        assert watcher.stop()


def test_oh_my_pi_session_folders_created_after_the_watch_started_are_reported(tmp_path: Path) -> None:
    """`X/Alpha.jsonl` and `X/Alpha/Alpha.Gamma.jsonl` beside `X.jsonl`: the folders appear with
    their files already in them (written before any watch on them could be set up)."""
    root = make_root(tmp_path)
    watcher, posted = watching(root, tmp_path)
    try:
        parent = write_session(root, Spec("s-omp", PROJECT, ("spawn subagents",)))
        folder = parent.with_suffix("")
        nested = folder / "Alpha"
        nested.mkdir(parents=True)
        child, grandchild = folder / "Alpha.jsonl", nested / "Alpha.Gamma.jsonl"
        child.write_bytes(session_bytes(tmp_path, "s-alpha"))
        grandchild.write_bytes(session_bytes(tmp_path, "s-gamma"))
        wanted = {str(parent), str(child), str(grandchild)}
        assert posted.wait_for(lambda: wanted <= posted.changed_paths())

        later = nested / "Alpha.Delta.jsonl"  # into a folder watched by now
        later.write_bytes(session_bytes(tmp_path, "s-delta"))
        assert posted.wait_for(lambda: str(later) in posted.changed_paths())
    finally:
        assert watcher.stop()


def test_a_session_appended_in_a_folder_watched_from_the_start_is_reported(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    docs = session_path(root, Spec("s-docs", PROJECT))
    watcher, posted = watching(root, tmp_path)
    try:
        before = Catalog([root], cache_dir=tmp_path / "other-cache").summary(docs)
        assert before is not None
        write_session(root, Spec("s-docs", PROJECT, ("update the README", "one more", "and another")))

        def grown() -> bool:
            return any(
                summary.path == str(docs) and summary.message_count > before.message_count
                for message in posted.messages
                if isinstance(message, SessionsChanged)
                for summary in message.changed
            )

        assert posted.wait_for(grown)
    finally:
        assert watcher.stop()


def test_more_project_folders_than_one_watch_takes_are_all_watched(tmp_path: Path) -> None:
    """Past `SHARD_DIRS` directories the watch is split; a change in the first and the last
    folder, and in a folder recreated after it was deleted, is reported."""
    specs = [Spec(f"s-{number:03d}", f"/work/demo/p{number:03d}") for number in range(SHARD_DIRS * 2 + 5)]
    root = make_root(tmp_path, specs)
    watcher, posted = watching(root, tmp_path)
    try:
        first = write_session(root, Spec("s-first", specs[0].cwd, ("in the first folder",)))
        last = write_session(root, Spec("s-last", specs[-1].cwd, ("in the last folder",)))
        assert posted.wait_for(lambda: {str(first), str(last)} <= posted.changed_paths())

        shutil.rmtree(session_path(root, specs[1]).parent)
        time.sleep(0.5)  # the deletion seen (its batch posted) before the folder is back
        back = write_session(root, Spec("s-back", specs[1].cwd, ("a folder deleted and made again",)))
        assert posted.wait_for(lambda: str(back) in posted.changed_paths())
    finally:
        assert watcher.stop()
    assert not watcher.alive


async def test_a_session_in_a_new_project_folder_is_listed_in_the_picker(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = picker_app(root, scope="all", options=PickerOptions(watch=True), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        deadline = time.monotonic() + WAIT_S
        while not screen.watching and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert screen.watching
        write_session(root, Spec("s-elsewhere", "/work/demo/elsewhere", ("a project never seen before",)))
        while time.monotonic() < deadline + WAIT_S:
            if any(row.summary.id == "s-elsewhere" for row in screen.session_list.rows):
                break
            await pilot.pause(0.1)
        assert any(row.summary.id == "s-elsewhere" for row in screen.session_list.rows)
    assert os.path.isdir(root / "--work-demo-elsewhere--")


# -- folders that go (review of the picker's gone folders) ---------------------------------------


def _changes_while(root: Path, tmp_path: Path, act: Callable[[], None]) -> list[SessionsChanged]:
    """What a live watcher over `root` posts while `act` runs (and a second after)."""
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    posted: list[object] = []
    watching = threading.Event()

    def post(message: object) -> None:
        posted.append(message)
        if isinstance(message, Watching):
            watching.set()

    watcher = RootWatcher(catalog, post)
    watcher.start()
    try:
        assert watching.wait(10)
        act()
        time.sleep(1.0)
    finally:
        watcher.stop()
        catalog.close()
    return [message for message in posted if isinstance(message, SessionsChanged)]


def test_a_deleted_file_that_is_no_session_posts_no_change(tmp_path: Path) -> None:
    """A stray file (an editor's swap file, a lock file) made and deleted in a session folder
    touches no session: nothing is posted (review: it was taken for a folder gone, and the
    screen rebuilt its list, a new search of the query at 100,000 sessions)."""
    root = make_root(tmp_path)
    stray = session_path(root, Spec("s-other1", OTHER)).parent / ".notes.txt.swp"

    def act() -> None:
        stray.write_text("x")
        stray.unlink()

    changes = _changes_while(root, tmp_path, act)
    assert changes == [], [(m.changed, m.removed, m.gone_dirs) for m in changes]


async def test_a_folder_deleted_and_made_again_in_one_batch_keeps_its_marks(tmp_path: Path) -> None:
    """A folder gone and back within one batch (a sync tool, `git checkout`, an undo of a
    Trash): its sessions come in the same message; the screen keeps them, and their marks
    (review: dropped, then added back, the selection lost)."""
    root = make_root(tmp_path)
    app = picker_app(root, scope="all", options=PickerOptions(watch=False), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        folder = session_path(root, Spec("s-other1", OTHER)).parent
        row = next(r for r in screen.session_list.rows if r.summary.id == "s-other1")
        screen.model.selection.toggle(row.summary)
        assert row.path in screen.model.selection
        # what the watcher posts for: step 1 sees `folder` gone, step 2 sees it back with its files
        screen.post_message(SessionsChanged(changed=[row.summary], gone_dirs=[str(folder)]))
        await settle(pilot)
        assert any(r.path == row.path for r in screen.session_list.rows), "the row stays"
        assert row.path in screen.model.selection, "the mark on a session still there is kept"


def test_the_watcher_posts_a_folder_gone_that_is_back(tmp_path: Path) -> None:
    """A folder moved away and back ~70 ms later (two steps, one batch) is there when the batch
    is posted: not reported gone (review)."""
    root = make_root(tmp_path)
    folder = session_path(root, Spec("s-other1", OTHER)).parent
    away = tmp_path / "away"

    def act() -> None:
        folder.rename(away)
        time.sleep(0.07)
        away.rename(folder)

    changes = _changes_while(root, tmp_path, act)
    assert folder.is_dir()
    reported_gone = [m for m in changes if str(folder) in m.gone_dirs]
    assert not reported_gone, [(len(m.changed), m.removed, m.gone_dirs) for m in changes]


# -- roots not there (yet) -----------------------------------------------------------------------


async def test_a_sessions_root_made_after_the_picker_opened_is_listed_live(tmp_path: Path) -> None:
    """A new user's picker: no `~/.pi/agent/sessions` when it opens; an agent started in another
    terminal makes the root (and the folders above it) and writes its session, which the open
    picker lists (it used to watch only the roots there at launch, and never listed it)."""
    home = tmp_path / "home"
    home.mkdir()
    root = home / ".pi" / "agent" / "sessions"
    app = picker_app(root, scope="all", options=PickerOptions(watch=True), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        deadline = time.monotonic() + WAIT_S
        while not screen.watching and time.monotonic() < deadline:  # (asserted below: the list is the point)
            await pilot.pause(0.05)
        assert screen.session_list.rows == []
        write_session(root, Spec("s-first-ever", PROJECT, ("the first session of a new user",)))
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if any(row.summary.id == "s-first-ever" for row in screen.session_list.rows):
                break
            await pilot.pause(0.1)
        assert [row.summary.id for row in screen.session_list.rows] == ["s-first-ever"]
        assert screen.watching


def test_a_root_made_one_folder_at_a_time_is_watched_once_there(tmp_path: Path) -> None:
    """The folders above a missing root appear one by one: the watch waiting for it moves down
    with them (the folder made in a folder made after the watch started is seen too)."""
    home = tmp_path / "home"
    home.mkdir()
    root = home / ".omp" / "agent" / "sessions"
    watcher, posted = watching(root, tmp_path)
    try:
        for folder in (home / ".omp", home / ".omp" / "agent", root):
            folder.mkdir()
            time.sleep(0.2)  # each seen on its own
        fresh = write_session(root, Spec("s-omp-first", PROJECT, ("made in a root made just now",)))
        assert posted.wait_for(lambda: str(fresh) in posted.changed_paths())
    finally:
        assert watcher.stop()


def test_a_root_deleted_and_made_again_is_watched_again(tmp_path: Path) -> None:
    """A root deleted while watched (its watch is gone with it) is waited for again: made
    again, later or at once, its sessions are reported."""
    root = make_root(tmp_path)
    watcher, posted = watching(root, tmp_path)
    try:
        shutil.rmtree(root)
        time.sleep(0.5)  # the deletion seen (its batch posted) before the root is back
        back = write_session(root, Spec("s-back", PROJECT, ("a root deleted and made again",)))
        assert posted.wait_for(lambda: str(back) in posted.changed_paths())

        shutil.rmtree(root)
        at_once = write_session(root, Spec("s-at-once", PROJECT, ("deleted and made again at once",)))
        assert posted.wait_for(lambda: str(at_once) in posted.changed_paths())
        later = write_session(root, Spec("s-later", OTHER, ("into the root made again",)))
        assert posted.wait_for(lambda: str(later) in posted.changed_paths())
    finally:
        assert watcher.stop()


# -- after review: a root lost while its ancestor's watch reports too; no watches piled up ------------


def _inotify_fds() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "inotify" in os.readlink(f"/proc/self/fd/{fd}"):
                n += 1
        except OSError:
            pass
    return n


def _two_roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A typical pi user: pi's root there, oh-my-pi's default root not (waited for at $HOME)."""
    home = tmp_path / "home"
    pi_root = make_root(home / ".pi" / "agent")
    omp_root = home / ".omp" / "agent" / "sessions"
    return home, pi_root, omp_root


def _watching_roots(roots: list[Path], tmp_path: Path) -> tuple[RootWatcher, Posted]:
    posted = Posted()
    watcher = RootWatcher(Catalog(roots, cache_dir=tmp_path / "cache"), posted)
    watcher.start()
    assert posted.wait_for(lambda: any(isinstance(m, Watching) for m in posted.messages))
    return watcher, posted


def test_pi_dir_deleted_while_omp_root_is_waited_for_at_home(tmp_path: Path) -> None:
    """`rm -rf ~/.pi` (a reset), pi then makes its root again: the deletion of ~/.pi is seen
    by the watch on $HOME (waiting for ~/.omp/agent/sessions) in the same step as the root's
    own DELETED, so `_roots_lost` is never asked (`above or ...` short-circuits)."""
    home, pi_root, omp_root = _two_roots(tmp_path)
    watcher, posted = _watching_roots([pi_root, omp_root], tmp_path)
    try:
        shutil.rmtree(home / ".pi")
        time.sleep(0.5)
        back = write_session(pi_root, Spec("s-back", PROJECT, ("pi made its root again",)))
        assert posted.wait_for(lambda: str(back) in posted.changed_paths())
    finally:
        assert watcher.stop()


def test_root_deleted_while_home_churns(tmp_path: Path) -> None:
    """The root deleted while something writes in $HOME (a shell's history) in the same step."""
    home, pi_root, omp_root = _two_roots(tmp_path)
    watcher, posted = _watching_roots([pi_root, omp_root], tmp_path)
    try:
        shutil.rmtree(pi_root)
        (home / ".zsh_history").write_text("rm -rf ~/.pi/agent/sessions\n")
        time.sleep(0.5)
        back = write_session(pi_root, Spec("s-back", PROJECT, ("made again",)))
        assert posted.wait_for(lambda: str(back) in posted.changed_paths())
    finally:
        assert watcher.stop()


def test_a_root_deleted_and_made_again_does_not_pile_up_os_watches(tmp_path: Path) -> None:
    """A root of 100 projects deleted and made again a few times (a sync tool, a restore from
    a backup): each time its folders are added as new shards beside the old shards of the
    deleted folders, past MAX_SHARDS; each shard is an inotify instance and a thread (the
    user's limit, shared by every program, is often 128)."""
    from seance.app.watcher import MAX_SHARDS

    def populate(root: Path) -> Path:
        last = None
        for n in range(100):
            last = write_session(root, Spec(f"s-{n}", f"/work/demo/p{n}", ("work",)))
        return last

    root = tmp_path / "sessions"
    populate(root)
    before = _inotify_fds()
    watcher, posted = watching(root, tmp_path)
    try:
        for _ in range(6):
            shutil.rmtree(root)
            last = str(populate(root))
            assert posted.wait_for(lambda last=last: last in posted.changed_paths())
            time.sleep(0.5)
        shards = len(watcher._shards)
        fds = _inotify_fds() - before
        assert shards <= MAX_SHARDS and fds <= MAX_SHARDS + 1, (shards, fds)
    finally:
        assert watcher.stop()
