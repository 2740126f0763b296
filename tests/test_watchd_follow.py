"""A resident watcher of the default roots follows them, and every session directory's watch
follows its inode (review of 0.7.14's default-roots watcher).

A folder renamed or moved keeps its inotify watch under its new path (the kernel answers the
watch an inode has), so unwatching the old path ended the new one's: a renamed omp profile or
project folder was served as exact while its appends went unseen.  A folder made again, or a
symlink pointed elsewhere, kept the dead watch of its path.  Also: a discovery that failed half
way inside a client's sync left the old listing vouched for under the new roots, a session
directory that is also an ancestor of a root lost its sessions' events, a watcher started in a
directory removed since died at its next discovery, and a command could get its head for one
set of roots and its files for another.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_watchd import Daemon, _append_user_line, _env
from write_harness import write_v3

from seance.core.catalog import Catalog
from seance.core.discovery import default_roots, discover
from seance.core.watchclient import synced_discovery
from seance.core.watchd import Watcher


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    for key in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "PI_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SEANCE_WATCH_TIMEOUT", "20")
    for root, sid in ((".pi/agent/sessions", "1414aaaa-pi"), (".omp/profiles/default/agent/sessions", "1515aaaa-omp")):
        (home / root / "--proj--").mkdir(parents=True)
        write_v3(home / root / "--proj--" / "s.jsonl", sid)
    return home


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir()
    return cache


def served(cache: Path) -> list[tuple] | None:
    found = synced_discovery(cache, default_roots(), False)
    return None if found is None else [tuple(info) for info in found.infos]


def on_disk() -> list[tuple]:
    return [tuple(info) for info in discover().infos]


def test_a_watcher_started_in_a_directory_removed_since_goes_on(home: Path, tmp_path: Path, cache: Path) -> None:
    """A watcher started in a directory that is removed later (a project dir, a temp dir):
    its next rediscovery (here a new project) recomputes the default roots, whose pi part
    reads `os.getcwd()` (`roots.pi_session_dir`): FileNotFoundError, the watcher dies."""
    cwd = tmp_path / "started-here"
    cwd.mkdir()
    watch = Daemon(None, cache, cwd=cwd)
    try:
        assert served(cache) == on_disk()
        cwd.rmdir()
        (home / ".pi/agent/sessions/--proj2--").mkdir()
        write_v3(home / ".pi/agent/sessions/--proj2--" / "n.jsonl", "1717aaaa-new")
        got = served(cache)
        time.sleep(0.5)
        assert watch.process.poll() is None, watch.log.read_text()[-3000:]
        assert got == on_disk()
    finally:
        watch.stop()


def test_a_profile_removed_and_made_again_at_once_is_watched_again(home: Path, cache: Path) -> None:
    """`rm -rf ~/.omp/profiles/default` and the profile made again (restored from a backup)
    before the watcher looked: its directories keep their dead watches (`wd_of` by path), so
    an append there is never seen, and the watcher vouches for a stale size."""
    watch = Daemon(None, cache)
    try:
        assert served(cache) == on_disk()
        profile = home / ".omp/profiles/default"
        shutil.rmtree(profile)
        (profile / "agent/sessions/--proj--").mkdir(parents=True)
        session = write_v3(profile / "agent/sessions/--proj--" / "s.jsonl", "1515aaaa-omp")
        assert served(cache) == on_disk()
        time.sleep(1)
        _append_user_line(session, "appended after the profile came back")
        assert served(cache) == on_disk()
    finally:
        watch.stop()


def test_a_symlinked_profile_pointed_elsewhere_is_watched_there(home: Path, tmp_path: Path, cache: Path) -> None:
    """A profile that is a symbolic link (dotfiles) pointed at another directory: the watch
    of its session directories stays on the old target (`wd_of` by path)."""
    for name, sid in (("a", "2121aaaa-a"), ("b", "2222bbbb-b")):
        (tmp_path / name / "agent/sessions/--proj--").mkdir(parents=True)
        write_v3(tmp_path / name / "agent/sessions/--proj--" / "s.jsonl", sid)
    link = home / ".omp/profiles/linked"
    link.symlink_to(tmp_path / "a")
    watch = Daemon(None, cache)
    try:
        assert served(cache) == on_disk()
        new = home / ".omp/profiles/.linked-new"
        new.symlink_to(tmp_path / "b")
        os.rename(new, link)  # (`ln -sfn`, atomically)
        assert served(cache) == on_disk()
        time.sleep(1)
        _append_user_line(link / "agent/sessions/--proj--" / "s.jsonl", "appended in b")
        assert served(cache) == on_disk()
    finally:
        watch.stop()


def test_a_session_dir_that_is_also_the_nearest_existing_source_ancestor(
    home: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi's session dir is `~/.operator` (no `profiles` in it yet): the source
    `~/.operator/profiles`' nearest existing ancestor is that root.  `_watch_above` sets
    ABOVE_MASK on it (same wd, mask replaced) and `take` routes its events as an ancestor's:
    a new project in the root is never seen."""
    root = home / ".operator"
    (root / "--proj--").mkdir(parents=True)
    write_v3(root / "--proj--" / "o.jsonl", "4141aaaa-op")
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(root))
    watch = Daemon(None, cache)
    try:
        assert served(cache) == on_disk()
        (root / "--proj2--").mkdir()
        write_v3(root / "--proj2--" / "n.jsonl", "4242aaaa-new")
        assert served(cache) == on_disk()
    finally:
        watch.stop()


def test_a_head_then_files_across_a_switch_lists_the_commands_roots(home: Path, cache: Path) -> None:
    """`ls` asks the head (SYNC HEAD) for its roots, then the files; a profile made in
    between: the watcher now serves other roots, and `watchclient._fetched` falls back to
    `discover(None)`, i.e. the default roots *now*, not the command's: a file outside every
    root the command has."""
    from seance.core.watchclient import synced_listing

    watch = Daemon(None, cache)
    try:
        roots = default_roots()
        pending = synced_listing(cache, roots, False, head_first=True)
        assert pending is not None
        (home / ".omp/profiles/work/agent/sessions/--proj--").mkdir(parents=True)
        write_v3(home / ".omp/profiles/work/agent/sessions/--proj--/w.jsonl", "5151aaaa-work")
        files = [info.path for info in pending().infos]
        assert files == [info.path for info in discover(roots, given=False).infos]
    finally:
        watch.stop()


def test_a_rediscovery_that_fails_in_a_clients_sync_leaves_nothing_vouched(home: Path, cache: Path) -> None:
    """A new profile; the rediscovery a client's sync makes fails on the way (inotify's
    watch limit: `_watch_dir` raises ENOSPC) after the new roots were taken up: `_client`
    takes the OSError for "the client went away", and the watcher goes on saying `exact`
    with the NEW roots' key over the OLD roots' listing: the next client of the new roots
    is served a listing without the new profile's sessions."""
    import errno
    import json

    from seance.core.catalog import Catalog
    from seance.core.watchd import DIR_MASK, Watcher
    from seance.core.watchproto import decode_listing, roots_key

    catalog = Catalog(None)
    watcher = Watcher(catalog, cache)
    try:
        watcher._start()
        assert watcher.exact
        (home / ".omp/profiles/work/agent/sessions/--proj--").mkdir(parents=True)
        write_v3(home / ".omp/profiles/work/agent/sessions/--proj--/w.jsonl", "5151aaaa-work")
        real = watcher.inotify.add_watch

        def limited(path, mask):  # the watch limit reached at the new profile's directories
            if mask == DIR_MASK and "/work/" in str(path):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(path, mask)

        watcher.inotify.add_watch = limited
        try:
            watcher.sync()  # as `_client` runs it: an OSError there is "the client went away"
        except OSError:
            pass
        watcher.inotify.add_watch = real
        header, blob = watcher.answer()
        header = json.loads(header)
        served_paths = [info.path for info in decode_listing(blob, header["files"])]
        if header["exact"] and header["roots"] == roots_key(default_roots(), False):
            assert served_paths == [info.path for info in discover().infos]
    finally:
        watcher.close()
        catalog.close()


def test_a_profile_renamed_is_watched_under_its_new_name(home: Path, cache: Path) -> None:
    """`mv ~/.omp/profiles/default ~/.omp/profiles/work`: one root goes, one comes, same
    directories.  `_watch_dir` on the new path gets the SAME wd (same inode), then the old
    path, no longer listed, is unwatched: `rm_watch(wd)` ends the new path's watch too."""
    watch = Daemon(None, cache)
    try:
        assert served(cache) == on_disk()
        os.rename(home / ".omp/profiles/default", home / ".omp/profiles/work")
        assert served(cache) == on_disk()
        time.sleep(1)  # (the watcher reads the IN_IGNORED its own rm_watch queued, and rediscovers)
        _append_user_line(home / ".omp/profiles/work/agent/sessions/--proj--/s.jsonl", "appended after the rename")
        assert served(cache) == on_disk()
    finally:
        watch.stop()


def test_a_project_bucket_renamed_is_watched_under_its_new_name(home: Path, cache: Path) -> None:
    """The same within one root (pre-existing): `mv --proj-- --renamed--` in pi's root."""
    watch = Daemon(None, cache)
    try:
        assert served(cache) == on_disk()
        sessions = home / ".pi/agent/sessions"
        os.rename(sessions / "--proj--", sessions / "--renamed--")
        assert served(cache) == on_disk()
        time.sleep(1)  # (the watcher reads the IN_IGNORED its own rm_watch queued, and rediscovers)
        _append_user_line(sessions / "--renamed--" / "s.jsonl", "appended after the rename")
        assert served(cache) == on_disk()
    finally:
        watch.stop()


def _ls_all_paths(cache: Path) -> list[str]:
    import json

    result = subprocess.run(
        [sys.executable, "-m", "seance", "ls", "--all", "--json"],
        env=_env(cache),
        capture_output=True,
        timeout=60,
        check=True,
    )
    return sorted(item["path"] for item in json.loads(result.stdout or b"[]"))


def test_ls_lists_a_session_made_in_a_renamed_profile(home: Path, cache: Path) -> None:
    """What the user sees: after `mv ~/.omp/profiles/default ~/.omp/profiles/work`, a new
    omp session in the renamed profile is missing from `seance ls --all` while the watcher runs."""
    watch = Daemon(None, cache)
    try:
        assert len(_ls_all_paths(cache)) == 2
        os.rename(home / ".omp/profiles/default", home / ".omp/profiles/work")
        assert len(_ls_all_paths(cache)) == 2
        time.sleep(1)
        new = write_v3(home / ".omp/profiles/work/agent/sessions/--proj--/new.jsonl", "7171aaaa-after-rename")
        assert str(new) in _ls_all_paths(cache)
    finally:
        watch.stop()


def test_sessions_moved_into_xdg_data_home_are_watched_there(home: Path, tmp_path: Path, cache: Path) -> None:
    """The commit's own case, by a move: omp's sessions moved (one rename, same inodes) from
    ~/.omp/profiles/default/agent/sessions to $XDG_DATA_HOME/omp/profiles/default/sessions."""
    watch = Daemon(None, cache)
    try:
        assert served(cache) == on_disk()
        target = tmp_path / "xdg-data/omp/profiles/default"
        target.mkdir(parents=True)
        assert served(cache) == on_disk()
        os.rename(home / ".omp/profiles/default/agent/sessions", target / "sessions")
        assert served(cache) == on_disk()
        time.sleep(1)
        write_v3(target / "sessions/--proj--/new.jsonl", "8181aaaa-moved")
        assert served(cache) == on_disk()
    finally:
        watch.stop()


def _kernel_watches(watcher: Watcher) -> list[str]:
    """The inotify descriptor's watches as the kernel lists them (`/proc/self/fdinfo`)."""
    text = Path(f"/proc/self/fdinfo/{watcher.inotify.fileno()}").read_text()
    return [line for line in text.splitlines() if line.startswith("inotify wd:")]


def _served(watcher: Watcher) -> list[tuple]:
    watcher.sync()
    assert watcher.exact, watcher.why_not
    return [tuple(info) for info in watcher.discovery().infos]


def test_a_repointed_symlinked_bucket_lets_its_old_targets_watch_go(tmp_path: Path) -> None:
    """A project bucket that is a symbolic link (root/--proj-- -> elsewhere/one), pointed
    elsewhere (`ln -sfn elsewhere/two`): the new target gets a new watch, and the old target's
    (a live directory outside the roots) is never removed: it is no longer in `wd_of`
    (overwritten, never popped), so no rediscovery ends it.  Each re-pointing leaks a kernel
    watch (fs.inotify.max_user_watches) whose events are read and dropped from then on."""
    root = tmp_path / "sessions"
    root.mkdir()
    one, two = tmp_path / "elsewhere" / "one", tmp_path / "elsewhere" / "two"
    for target, sid in ((one, "2222aaaa-one"), (two, "3333aaaa-two")):
        target.mkdir(parents=True)
        write_v3(target / "s.jsonl", sid)
    bucket = root / "--proj--"
    bucket.symlink_to(one, target_is_directory=True)
    cache = tmp_path / "cache"
    catalog = Catalog([root], cache_dir=cache)
    watcher = Watcher(catalog, cache)
    try:
        watcher._start()
        before = len(_kernel_watches(watcher))
        for target in (two, one, two, one):
            temporary = root / "--proj--.tmp"
            temporary.symlink_to(target, target_is_directory=True)
            os.replace(temporary, bucket)  # (ln -sfn)
            assert _served(watcher) == [tuple(info) for info in discover([root]).infos]
        after = _kernel_watches(watcher)
        assert len(after) == before, f"{len(after) - before} watches more than before:\n" + "\n".join(after)
    finally:
        watcher.close()
        catalog.close()
