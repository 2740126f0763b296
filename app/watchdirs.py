"""The directories the live watcher watches, one by one (never a recursive OS watch).

A recursive watch is set up by walking every entry under the roots (watchfiles' notify crate,
inside `RustNotify()`, which holds the GIL throughout): 0.3 s of a frozen UI at 100,000
sessions.  Watching each directory that can hold sessions, non-recursively, costs one
`inotify_add_watch` per directory instead: a root, its project buckets, and the folders
below them (oh-my-pi's session folders `X/` with their subagents, nested up to
`discovery.MAX_NESTING`), found with `os.scandir` that never stats a file.

`DirWalker.dirs(root)` lists them; `under(path)` lists a directory that appeared later and
the ones inside it, when they are within the depth a session can be found at.
"""

from __future__ import annotations

import os

from seance.core.discovery import MAX_NESTING

MAX_DEPTH = 2 + MAX_NESTING  # root (0) / bucket (1) / session folder (2) / nested folders


class DirWalker:
    """Directories worth a watch under some roots (depth counted from the root that holds them)."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = [os.path.abspath(root) for root in roots]

    def depth(self, path: str) -> int | None:
        """How deep `path` is under its root (0: a root), None when it is under none."""
        path = os.path.abspath(path)
        for root in self.roots:
            if path == root:
                return 0
            if path.startswith(root.rstrip(os.sep) + os.sep):
                return path[len(root.rstrip(os.sep)) :].count(os.sep)
        return None

    def dirs(self, root: str) -> list[str]:
        """`root` and every directory under it down to `MAX_DEPTH`."""
        return self._walk(os.path.abspath(root), 0)

    def under(self, path: str) -> list[str]:
        """A directory that appeared under a watched one, and the directories inside it; empty
        when it is too deep (or not under a root) to hold sessions."""
        depth = self.depth(path)
        if depth is None or depth > MAX_DEPTH or not os.path.isdir(path):
            return []
        return self._walk(os.path.abspath(path), depth)

    def _walk(self, top: str, depth: int) -> list[str]:
        found = [top]
        stack = [(top, depth)]
        while stack:
            path, level = stack.pop()
            if level >= MAX_DEPTH:
                continue
            try:
                with os.scandir(path) as scan:
                    # a bucket may be a symlink (discovery follows it); deeper links are not followed
                    subdirs = [
                        entry.path
                        for entry in scan
                        if not entry.name.endswith(".jsonl") and _is_dir(entry, follow=level == 0)
                    ]
            except OSError:  # vanished or unreadable: nothing to watch there
                continue
            found += subdirs
            stack += [(sub, level + 1) for sub in subdirs]
        return found


def _is_dir(entry: os.DirEntry[str], follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def sessions_in(dirs: list[str]) -> list[str]:
    """The `.jsonl` files directly in `dirs` (a new directory's sessions, written before its
    watch was set up)."""
    found: list[str] = []
    for path in dirs:
        try:
            with os.scandir(path) as scan:
                found += [entry.path for entry in scan if entry.name.endswith(".jsonl")]
        except OSError:
            continue
    return found
