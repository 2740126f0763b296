"""Pins and tags: the user's own marks on sessions, in a small file beside the index.

The marks live in `marks.json` in the user *data* dir (`$SEANCE_DATA_DIR` overrides; on
Linux `$XDG_DATA_HOME/seance`, else `~/.local/share/seance`), never in the cache (deleting
the cache loses nothing) and never in a session file (pi would not write them there).
They are keyed by the session id of the file's header, so a mark follows its session
through a move, the Trash and back, and a rename of the file.

    {"format": "seance-marks", "version": 1,
     "sessions": {"<session id>": {"pinned": true, "tags": ["work", "auth"]}}}

Every write is a read-modify-write under an exclusive `flock` on `marks.json.lock` (two
seance processes pinning at once both land), replaced atomically (temp + fsync + rename,
`core.safefile.atomic_write`).  A file that cannot be read is never overwritten: the write
is refused with a `MarkError` that names it.  `export` writes the same document; `import`
merges one (pins OR-ed, tags united) or replaces everything.

Tags are words: no whitespace, no control characters, none of `"`, and not starting with
`+`, `-` or `!` (the tag command's and the query's operators); at most 64 characters.
They keep the case they were typed in and match case-insensitively (`tag:Work` = `tag:work`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from .errors import SessionError
from .safeopen import read_regular
from .text import json_safe, visible
from .userdirs import user_dir

MARKS_NAME = "marks.json"
FORMAT = "seance-marks"
VERSION = 1
MAX_TAG_CHARS = 64
MAX_MARKS_BYTES = 64 << 20  # a marks document read at most (~100 bytes a marked session)


class MarkError(SessionError):
    """A bad tag, an unreadable marks file or a bad import; the message is for the user."""


@dataclass(frozen=True, slots=True)
class Mark:
    """One session's marks."""

    pinned: bool = False
    tags: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.pinned and not self.tags

    def to_json(self) -> dict[str, Any]:
        return {"pinned": self.pinned, "tags": list(self.tags)}


NO_MARK = Mark()
Marks = Mapping[str, Mark]  # session id -> its marks (a snapshot; ids without marks are absent)


def default_data_dir() -> Path:
    """`$SEANCE_DATA_DIR`, else the platform's user data dir for "seance": not the cache (`core.userdirs`)."""
    return user_dir("data")


# ---------------------------------------------------------------------------- tags


_FORBIDDEN = frozenset('"')
_OPERATORS = ("+", "-", "!")


def validate_tag(text: str) -> str:
    """`text` as a tag, or `MarkError` saying what is wrong with it (one line)."""
    if not text:
        raise MarkError("a tag cannot be empty")
    shown = visible(text[:80])  # the message shows it as typed, controls escaped
    if len(text) > MAX_TAG_CHARS:
        raise MarkError(f"tag '{shown}' is longer than {MAX_TAG_CHARS} characters")
    if any(char.isspace() or not char.isprintable() or char in _FORBIDDEN for char in text):
        raise MarkError(f"tag '{shown}': a tag is one word (no spaces, quotes or control characters)")
    if text.startswith(_OPERATORS):
        raise MarkError(f"tag '{shown}' cannot start with +, - or !")
    return text


def tag_key(tag: str) -> str:
    """What two tags are compared by (case-insensitively)."""
    return tag.casefold()


def parse_tag_edits(words: Iterable[str]) -> tuple[list[str], list[str]]:
    """`+work -old plain` -> (["work", "plain"], ["old"]): what to add and what to remove."""
    add: list[str] = []
    remove: list[str] = []
    for word in words:
        if word.startswith("-"):
            remove.append(validate_tag(word[1:]))
        else:
            add.append(validate_tag(word[1:] if word.startswith("+") else word))
    return add, remove


def with_tags(mark: Mark, add: Iterable[str] = (), remove: Iterable[str] = ()) -> Mark:
    """`mark` with `add` appended (unless already there) and `remove` taken out."""
    gone = {tag_key(tag) for tag in remove}
    tags = [tag for tag in mark.tags if tag_key(tag) not in gone]
    seen = {tag_key(tag) for tag in tags}
    for tag in add:
        if tag_key(tag) not in seen and tag_key(tag) not in gone:
            tags.append(tag)
            seen.add(tag_key(tag))
    return Mark(mark.pinned, tuple(tags))


def retagged(mark: Mark, shown: Iterable[str], tags: Iterable[str]) -> Mark:
    """`mark` with `tags` typed over `shown` (the tags a prompt showed, read earlier): the typed
    ones in their order and case, then tags the file gained since that the user never saw
    (another process's `seance tag`), which a plain replace would silently drop."""
    tags = list(tags)
    seen = {tag_key(tag) for tag in [*shown, *tags]}
    return with_tags(Mark(mark.pinned), [*tags, *(tag for tag in mark.tags if tag_key(tag) not in seen)])


def split_tags(text: str) -> list[str]:
    """The tag prompt's answer (`work, auth  later`) as validated tags, in order."""
    return [validate_tag(word) for word in text.replace(",", " ").split()]


# ---------------------------------------------------------------------------- the document


def encode(marks: Marks) -> bytes:
    """The marks document; ids are session text, so C1 and bidi in them are `\\uXXXX`
    escapes (`json_safe`: the same JSON value) wherever the bytes go: the file, `-o FILE`, stdout."""
    import orjson

    sessions = {key: mark.to_json() for key, mark in sorted(marks.items()) if not mark.empty}
    data = orjson.dumps({"format": FORMAT, "version": VERSION, "sessions": sessions}, option=orjson.OPT_INDENT_2)
    return json_safe(data)


def decode(data: bytes, where: str) -> dict[str, Mark]:
    """A marks document (the file, or one to import) -> marks; `MarkError` if it is not one."""
    import orjson

    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise MarkError(f"{where}: not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise MarkError(f'{where}: not a seance marks file (no "format": "{FORMAT}")')
    version = document.get("version")
    if type(version) is not int or version != VERSION:  # (not `true` or `1.0`: equal to 1 in Python)
        raise MarkError(f"{where}: marks version {version!r} is not {VERSION}")
    sessions = document.get("sessions")
    if not isinstance(sessions, dict):
        raise MarkError(f'{where}: "sessions" must be an object of session id -> marks')
    marks: dict[str, Mark] = {}
    for key, value in sessions.items():
        if not key:
            raise MarkError(f"{where}: a session id is empty")
        if not isinstance(value, dict):
            raise MarkError(f"{where}: the marks of session {key!r} must be an object")
        pinned, tags = value.get("pinned", False), value.get("tags", [])
        if not isinstance(pinned, bool) or not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise MarkError(f'{where}: session {key!r}: "pinned" must be true/false and "tags" a list of strings')
        try:
            mark = with_tags(Mark(pinned), [validate_tag(tag) for tag in tags])
        except MarkError as error:
            raise MarkError(f"{where}: session {key!r}: {error}") from None
        if not mark.empty:
            marks[key] = mark
    return marks


def merged(old: Marks, new: Marks) -> dict[str, Mark]:
    """`old` with `new` added: a pin from either side, the tags of both."""
    result = dict(old)
    for key, mark in new.items():
        before = result.get(key, NO_MARK)
        result[key] = with_tags(Mark(before.pinned or mark.pinned, before.tags), mark.tags)
    return result


# ---------------------------------------------------------------------------- the store


class MarkStore:
    """The marks file: read a snapshot, or change it under a lock (any thread, any process)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_data_dir() / MARKS_NAME

    def load(self) -> dict[str, Mark]:
        """The marks now ({} when there is no file yet); `MarkError` if the file is unreadable."""
        try:
            data = read_regular(self.path, MAX_MARKS_BYTES)  # (a FIFO there never blocks `ls`)
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise MarkError(f"{self.path}: cannot read the marks ({error.strerror})") from None
        return decode(data, str(self.path))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on `marks.json.lock` (the data file itself is replaced by rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def update(self, change: Callable[[dict[str, Mark]], dict[str, Mark] | None]) -> dict[str, Mark]:
        """Read, `change` (in place, or return a new dict), write back atomically; the new marks."""
        from .safefile import atomic_write

        with self._locked():
            marks = self.load()
            changed = change(marks)
            if changed is not None:
                marks = changed
            marks = {key: mark for key, mark in marks.items() if not mark.empty}
            atomic_write(self.path, encode(marks), None)
        return marks

    def _edit(self, session_id: str, edit: Callable[[Mark], Mark]) -> Mark:
        if not session_id:
            raise MarkError("this session has no id in its header: it cannot be marked")
        result: list[Mark] = []

        def change(marks: dict[str, Mark]) -> None:
            mark = edit(marks.get(session_id, NO_MARK))
            marks[session_id] = mark
            result.append(mark)

        self.update(change)
        return result[0]

    def set_pinned(self, session_id: str, pinned: bool) -> Mark:
        return self._edit(session_id, lambda mark: Mark(pinned, mark.tags))

    def toggle_pin(self, session_id: str) -> Mark:
        return self._edit(session_id, lambda mark: Mark(not mark.pinned, mark.tags))

    def edit_tags(self, session_id: str, add: Iterable[str] = (), remove: Iterable[str] = ()) -> Mark:
        add, remove = list(add), list(remove)
        return self._edit(session_id, lambda mark: with_tags(mark, add, remove))

    def set_tags(self, session_id: str, tags: Iterable[str], *, shown: Iterable[str] | None = None) -> Mark:
        """Replace the session's tags with `tags`; with `shown` (what the user was shown and
        edited) only those are replaced: tags added elsewhere since stay (`retagged`)."""
        tags = list(tags)
        if shown is None:
            return self._edit(session_id, lambda mark: with_tags(Mark(mark.pinned), tags))
        was = list(shown)
        return self._edit(session_id, lambda mark: retagged(mark, was, tags))

    def export(self) -> bytes:
        """The marks as a JSON document (what `import_marks` takes back)."""
        return encode(self.load())

    def import_marks(self, data: bytes, where: str, *, replace: bool = False) -> int:
        """Merge (or with `replace`, replace every mark with) a marks document; how many sessions
        it marks.  The document is checked whole before anything is written."""
        incoming = decode(data, where)
        self.update(lambda marks: dict(incoming) if replace else merged(marks, incoming))
        return len(incoming)


# ---------------------------------------------------------------------------- `ls --json`


def annotate_pi_json(payload: bytes, marks: Marks) -> bytes:
    """An `ls --json` array (as the catalog stores it) with `pinned` and `tags` on every
    object, pinned sessions first (otherwise in the given order).

    Without marks this is one byte replace: the objects are flat and `{"path":` can only be
    an object's start (inside a JSON string a quote is escaped), so no decoding is needed on
    the warm fast path.  With marks the array is decoded, annotated and encoded again.
    """
    if not marks:
        return payload.replace(_OBJECT_START, _UNMARKED_START)
    import orjson

    items = []
    for item in orjson.loads(payload):
        mark = marks.get(item.get("id") or "", NO_MARK)
        items.append({"pinned": mark.pinned, "tags": list(mark.tags), **item})  # the keys where the byte path puts them
    items.sort(key=lambda item: not item["pinned"])  # stable: the order within each part stays
    return orjson.dumps(items)


_OBJECT_START, _UNMARKED_START = b'{"path":', b'{"pinned":false,"tags":[],"path":'


def marked_json_parts(parts: list[bytes]) -> list[bytes]:
    """`annotate_pi_json`'s answer without marks, part by part (`parts` cut between objects:
    `{"path":` starts an object only, see there): what `Catalog.ls_json_parts` stores."""
    return [part.replace(_OBJECT_START, _UNMARKED_START) for part in parts]


def unmarked_objects(objects: list[bytes]) -> bytes:
    """`annotate_pi_json(b",".join(objects), {})` for stored `ls --json` objects, without
    scanning the joined bytes for object starts: a stored object is flat, so `{"path":` is
    its start and nowhere else in it (see `annotate_pi_json`).  Objects that do not all
    start so are joined and replaced as there."""
    size = len(_OBJECT_START)
    if set(map(itemgetter(slice(0, size)), objects)) != {_OBJECT_START}:
        return b",".join(objects).replace(_OBJECT_START, _UNMARKED_START)
    return _UNMARKED_START + (b"," + _UNMARKED_START).join(map(itemgetter(slice(size, None)), objects))


def unmarked_sized(objects: list[bytes]) -> tuple[bytes, list[int]]:
    """`unmarked_objects(objects)` and the length of each object in it (`core.queryobjects`
    prints runs of them): each unmarked as the whole would be."""
    size = len(_OBJECT_START)
    if set(map(itemgetter(slice(0, size)), objects)) <= {_OBJECT_START}:
        grown = len(_UNMARKED_START) - size
        return unmarked_objects(objects) if objects else b"", [len(item) + grown for item in objects]
    each = [item.replace(_OBJECT_START, _UNMARKED_START) for item in objects]
    return b",".join(each), list(map(len, each))


def unmarked_json(payload: bytes) -> bytes:
    """`marked_json_parts`' parts (or a whole array) back to pi's keys only."""
    return payload.replace(_UNMARKED_START, _OBJECT_START)


def marked_pieces(parts: Iterable[bytes], marks: Marks) -> Iterator[bytes]:
    """`annotated_pieces` of parts already annotated without marks (`Catalog.ls_json_parts`):
    without marks the parts themselves (small ones joined into pieces of about
    `PIECE_BYTES`), else pi's array marked as `annotate_pi_json` marks it."""
    if marks:
        yield annotate_pi_json(unmarked_json(b"".join(parts)), marks)
        return
    yield from _pieces(parts)


PIECE_BYTES = 1 << 20


def annotated_pieces(parts: list[bytes], marks: Marks) -> Iterator[bytes]:
    """`annotate_pi_json(b"".join(parts), marks)` in pieces of about `PIECE_BYTES`, to be
    written one after the other (`parts`: an `ls --json` array cut between its objects, e.g.
    `Catalog.list_pi_json_parts`).  Without marks the answer of 100,000 sessions (70 MB) is
    never copied whole: each piece starts at an object or between them, so the byte replace
    cannot straddle a cut."""
    if marks:
        yield annotate_pi_json(b"".join(parts), marks)
        return
    for piece in _pieces(parts):
        yield from _cut(piece)


def _pieces(parts: Iterable[bytes]) -> Iterator[bytes]:
    """`parts` as pieces of about `PIECE_BYTES`: small parts joined, a big one on its own."""
    group: list[bytes] = []
    size = 0
    for part in parts:
        if len(part) >= PIECE_BYTES and group:
            yield b"".join(group)
            group, size = [], 0
        group.append(part)
        size += len(part)
        if size >= PIECE_BYTES:
            yield group[0] if len(group) == 1 else b"".join(group)
            group, size = [], 0
    if group:
        yield group[0] if len(group) == 1 else b"".join(group)


def _cut(payload: bytes) -> Iterator[bytes]:
    """An unmarked piece annotated, a big one in pieces cut before an object."""
    start, size = 0, len(payload)
    while start < size:
        cut = payload.find(b"," + _OBJECT_START, start + PIECE_BYTES) if start + PIECE_BYTES < size else -1
        end = size if cut < 0 else cut
        yield payload[start:end].replace(_OBJECT_START, _UNMARKED_START)
        start = end


__all__ = [
    "MARKS_NAME",
    "NO_MARK",
    "Mark",
    "MarkError",
    "MarkStore",
    "Marks",
    "annotate_pi_json",
    "annotated_pieces",
    "default_data_dir",
    "marked_json_parts",
    "marked_pieces",
    "parse_tag_edits",
    "retagged",
    "split_tags",
    "unmarked_json",
    "validate_tag",
    "with_tags",
]
