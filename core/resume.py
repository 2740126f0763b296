"""Resume, continue and switch: which session file an agent should open, and opening it.

* `resolve(key, ...)` — a SESSION argument: the whole id (or file name), else a
  case-insensitive prefix of the id, of the file name, or of the id after the file-name
  timestamp (`<ts>_<id>.jsonl`); `resolve_name` — else an exact session name, else a unique
  name prefix.  Each tier looks in the current project first, then in all; a match in
  another project says so.  Two or more matches in a tier raise `AmbiguousKey` listing them:
  a command never picks one of several sessions for the user (`rm 019e62` must not trash
  whichever of seven is newest).
* `fork_into(path, cwd, sessions_dir)` — copy a session into a project: a new id,
  `parentSession` = the source path, the new cwd, the same entries (after the in-memory
  migration), written atomically as `<ts>_<id>.jsonl` in the cwd's `--<cwd>--` bucket.
* `continue_session(...)` — the terminal breadcrumb (`<agent dir>/terminal-sessions/<terminal
  id>`: cwd, then session path), valid only if its cwd matches and the file exists; else what
  pi's `--continue` opens (the newest file of pi's folder for the cwd whose header pi reads);
  else the newest of the other agents' sessions whose header cwd is the project.
* `switch_session(path, agent_dir)` — an embedding agent's set-session-file: load, persist a
  pending migration race-safely, initialise a missing or empty target as a new session, and
  write the breadcrumb (best effort).
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import dialects
from .catalog import same_dir
from .jsonl import LineError, loads_line
from .listing import folder_parent
from .model import SessionSummary
from .roots import agent_dir as pi_agent_dir
from .roots import pi_session_dir
from .safeopen import open_regular, read_regular
from .session import FileStamp, NotASession, Session, SessionError, load_session, read_session
from .text import is_utf8
from .writes import atomic_write, create_new, dumps_line, now_iso, persist_migration

BREADCRUMB_DIR = "terminal-sessions"
BREADCRUMB_LIMIT = 1 << 20  # a breadcrumb is two paths and a word: anything bigger is not one


# ---------------------------------------------------------------------------- resolve


@dataclass(frozen=True, slots=True)
class Resolution:
    """The session a resume key named, and whether it belongs to another project."""

    summary: SessionSummary
    other_project: bool

    @property
    def path(self) -> Path:
        return Path(self.summary.path)


def same_project(left: str, right: str) -> bool:
    """Two cwds name the same directory: the catalog's rule (`same_dir`), so `resolve` and
    `in_project` never disagree; an empty cwd is no project."""
    return bool(left) and bool(right) and same_dir(left, right)


class AmbiguousKey(SessionError):
    """A SESSION argument that names more than one session; `candidates` lists them."""

    def __init__(self, key: str, candidates: Sequence[SessionSummary]) -> None:
        self.key = key
        self.candidates = sorted(candidates, key=lambda summary: summary.modified_ms, reverse=True)
        super().__init__(f'"{key}" matches {len(self.candidates)} sessions; give more of the id, or the path')


Matcher = Callable[[str, SessionSummary], bool]


def _file_keys(summary: SessionSummary) -> tuple[str, str, str]:
    """The id, the file name and the id part of a `<ts>_<id>.jsonl` name, case-folded."""
    name = os.path.basename(summary.path).casefold()
    return summary.id.casefold(), name, name.removesuffix(".jsonl").rpartition("_")[2]


def key_is(key: str, summary: SessionSummary) -> bool:
    """`key` (already case-folded) is the whole id, file name or id in the file name."""
    session_id, name, tail = _file_keys(summary)
    return key in (session_id, name, name.removesuffix(".jsonl"), tail)


def key_matches(key: str, summary: SessionSummary) -> bool:
    """`key` (already case-folded) prefixes the id, the file name, or the id in the file name."""
    session_id, name, tail = _file_keys(summary)
    return session_id.startswith(key) or name.startswith(key) or tail.startswith(key)


def name_is(key: str, summary: SessionSummary) -> bool:
    """`key` (already case-folded and trimmed) is the session's name."""
    return summary.name is not None and summary.name.strip().casefold() == key


def name_starts(key: str, summary: SessionSummary) -> bool:
    """`key` (already case-folded and trimmed) begins the session's name."""
    return summary.name is not None and summary.name.strip().casefold().startswith(key)


def _first_unique(
    key: str,
    matchers: Sequence[Matcher],
    summaries_current: Sequence[SessionSummary],
    summaries_all: Sequence[SessionSummary],
    cwd: str,
) -> Resolution | None:
    """The only session the first matching tier finds (current project, then all); None if
    no tier matches; `AmbiguousKey` if the first one that matches finds several."""
    needle = key.strip().casefold()
    if not needle:
        raise SessionError("an empty session key matches every session; give an id prefix or a name")
    for matches_key in matchers:
        for scope in (summaries_current, summaries_all):
            matches = list({summary.path: summary for summary in scope if matches_key(needle, summary)}.values())
            if len(matches) > 1:
                raise AmbiguousKey(key.strip(), matches)
            if matches:
                return Resolution(matches[0], other_project=not same_project(matches[0].cwd, cwd))
    return None


def resolve(
    key: str, summaries_current: Sequence[SessionSummary], summaries_all: Sequence[SessionSummary], cwd: str
) -> Resolution | None:
    """The session `key` names by id or file name: a whole one, else a unique prefix.

    Raises `SessionError` for an empty key (it would match everything) and `AmbiguousKey`
    when a prefix matches several sessions.
    """
    return _first_unique(key, (key_is, key_matches), summaries_current, summaries_all, cwd)


def resolve_name(
    key: str, summaries_current: Sequence[SessionSummary], summaries_all: Sequence[SessionSummary], cwd: str
) -> Resolution | None:
    """The session `key` names by its name (case-insensitive): an exact name, else a unique
    prefix of one.  The summaries must be exact ones: a name may be set late in the file."""
    return _first_unique(key, (name_is, name_starts), summaries_current, summaries_all, cwd)


def may_name(key: str) -> Callable[[str, tuple[str, str, str] | None], bool]:
    """Whether a session (its path and the index's folded title, `Catalog.exact_where`) may
    be named by `key` in any tier of `resolve` or `resolve_name`: a superset, so only those
    are decoded, and the tiers then decide on their summaries.

    The file-name tiers are decided on the path itself.  The stored id and name are folded
    (lower-cased, one line, the name cut at `TITLE_LIMIT`): compared only when that cannot
    lose a match (ASCII on both sides, where lower() is casefold(), and a short key, made one
    line as they are); otherwise the session is kept.  (The one loss: a name whose first
    1,200 characters fold to fewer than the key's, e.g. a thousand spaces before the words.)
    """
    from .search.haystack import TITLE_LIMIT, one_line

    needle = key.strip().casefold()
    plain = one_line(needle)
    comparable = needle.isascii() and len(plain) < TITLE_LIMIT // 2

    def keep(path: str, title: tuple[str, str, str] | None) -> bool:
        name = os.path.basename(path).casefold()
        if name.startswith(needle) or name.removesuffix(".jsonl").rpartition("_")[2].startswith(needle):
            return True
        if title is None or not comparable:
            return True
        ident, folded_name, _first = title
        if not (ident.isascii() and folded_name.isascii()):
            return True
        # one_line keeps prefixes: if an id or name starts with the key, its one line starts
        # with the key's (outer whitespace, which a stripped key cannot start with, aside)
        return ident.startswith(plain) or folded_name.startswith(plain)

    return keep


# Which agent resumes a session of each dialect, and how (`pi --session <path|id>`, pi's
# README; oh-my-pi: `omp --resume <path>`, a path-like value is opened as is).
_RESUME_FLAGS = {"omp": ("omp", "--resume")}
_DEFAULT_RESUME = ("pi", "--session")


def resume_command(summary: SessionSummary) -> str:
    """The shell line that resumes `summary` in its agent, from its own directory:
    `cd <cwd> && pi --session <path>`; every word quoted for pasting (it is session text)."""
    from .text import shell_word

    agent, flag = _RESUME_FLAGS.get(summary.dialect, _DEFAULT_RESUME)
    command = f"{agent} {flag} {shell_word(summary.path)}"
    return f"cd {shell_word(summary.cwd)} && {command}" if summary.cwd else command


# ---------------------------------------------------------------------------- fork


def bucket_name(cwd: str) -> str:
    """pi's per-project folder: `--<cwd>--`, one leading / or \\ stripped, / \\ : as -."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + trimmed.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def session_file_name(timestamp: str, session_id: str) -> str:
    """pi's `<ISO timestamp with : and . as ->_<id>.jsonl`."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def node_text(text: str) -> str:
    """`text` (a path from argv or the OS: its bytes that are not UTF-8 held as lone
    surrogates) as Node.js decodes those bytes, each bad sequence a U+FFFD: what pi's
    `process.cwd()` gives in such a directory, and all a JSON line can hold."""
    return text if is_utf8(text) else os.fsencode(text).decode("utf-8", "replace")


def fork_into(path: str | os.PathLike[str], cwd: str, sessions_dir: str | os.PathLike[str]) -> Path:
    """Copy a session into `cwd`'s bucket under `sessions_dir` as a new session; returns its path.

    The copy has a new id, `parentSession` = the source path, `cwd` = the new cwd and every
    entry of the source (migrated in memory; the source file is not touched).  An oh-my-pi
    title slot becomes the header's `title`, so pi can read the copy.
    """
    source = load_session(path)
    cwd = node_text(cwd)  # (a directory whose name is not UTF-8: as pi, run there, writes it)
    new_id = str(uuid.uuid4())
    timestamp = now_iso()
    header: dict[str, Any] = {
        **source.header,
        "type": "session",
        "id": new_id,
        "timestamp": timestamp,
        "cwd": cwd,
        "parentSession": str(source.path),
    }
    if source.title_slot is not None:  # (omp names it by the slot: a header title is stale)
        header.pop("title", None)
        header.pop("titleSource", None)
        slot_title = dialects.slot_title(source.title_slot)
        if slot_title:
            header["title"] = slot_title
    bucket = Path(sessions_dir) / bucket_name(cwd)
    bucket.mkdir(parents=True, exist_ok=True)
    target = bucket / session_file_name(timestamp, new_id)
    if os.path.lexists(target):
        raise SessionError(f"{target}: already exists")
    data = dumps_line(header) + b"".join(dumps_line(entry) for entry in source.entries)
    create_new(target, data)  # never over a file created meanwhile
    return target


# ---------------------------------------------------------------------------- breadcrumbs

# oh-my-pi's order (it writes the breadcrumbs seance reads): the most specific pane first.
_TERMINAL_ENV = (
    ("TMUX_PANE", "tmux"),
    ("CMUX_SURFACE_ID", "cmux"),
    ("KITTY_WINDOW_ID", "kitty"),
    ("WEZTERM_PANE", "wezterm"),
    ("TERM_SESSION_ID", "apple"),
    ("WT_SESSION", "wt"),
)


def _stdin_tty() -> str | None:
    """The path of the terminal on stdin (`/dev/pts/3`), or None."""
    try:
        if not os.isatty(0):
            return None
    except OSError:
        return None
    try:
        return os.readlink("/proc/self/fd/0")
    except OSError:
        try:
            return os.ttyname(0)
        except OSError:
            return None


def terminal_id(env: Mapping[str, str] | None = None, tty: str | None = None) -> str | None:
    """Which terminal this is, as oh-my-pi names it: `pts-3`, else `tmux-%3`, `kitty-1` ...

    `tty` defaults to the terminal on stdin; None (no terminal, no known variable) means
    breadcrumbs are not used.
    """
    env = os.environ if env is None else env
    tty = _stdin_tty() if tty is None else tty
    if tty and tty.startswith("/dev/"):
        return _safe(tty.removeprefix("/dev/"))
    zellij = env.get("ZELLIJ_PANE_ID")
    if zellij:
        session = env.get("ZELLIJ_SESSION_NAME")
        return _safe(f"zellij-{session}-{zellij}" if session else f"zellij-{zellij}")
    for variable, prefix in _TERMINAL_ENV:
        value = env.get(variable)
        if value:
            return _safe(f"{prefix}-{value}")
    return None


def _safe(name: str) -> str:
    cleaned = name.replace("/", "-").replace("\\", "-").replace("\x00", "")
    return cleaned if cleaned not in ("", ".", "..") else "-"


def breadcrumb_path(agent_dir: str | os.PathLike[str], terminal: str) -> Path:
    return Path(agent_dir) / BREADCRUMB_DIR / terminal


def write_breadcrumb(
    agent_dir: str | os.PathLike[str], cwd: str, session_path: str | os.PathLike[str], terminal: str | None = None
) -> Path | None:
    """Remember this terminal's session (best effort: returns None instead of raising)."""
    terminal = terminal or terminal_id()
    if terminal is None:
        return None
    crumb = breadcrumb_path(agent_dir, terminal)
    try:
        crumb.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(crumb, f"{cwd}\n{os.path.abspath(session_path)}\n".encode(), None)
    except OSError:
        return None
    return crumb


def read_breadcrumb(agent_dir: str | os.PathLike[str], cwd: str, terminal: str | None = None) -> Path | None:
    """The session this terminal last used in `cwd`, if the breadcrumb is valid."""
    lines = _breadcrumb_lines(agent_dir, terminal)
    if lines is None or not same_project(lines[0], cwd):
        return None
    session = Path(lines[1].strip())
    return _interactive_root(session) if session.is_absolute() and session.is_file() else None


def fresh_boundary(agent_dir: str | os.PathLike[str], terminal: str | None = None) -> bool:
    """Whether this terminal's breadcrumb marks oh-my-pi's `/new` whose session was never
    written (a third line `fresh`, no file): omp's `--continue` then starts a new session,
    whatever the cwd, rather than resume the conversation before `/new`."""
    lines = _breadcrumb_lines(agent_dir, terminal)
    if lines is None or len(lines) < 3 or lines[2].strip() != "fresh":
        return False
    return not Path(lines[1].strip()).is_file()


def _breadcrumb_lines(agent_dir: str | os.PathLike[str], terminal: str | None) -> list[str] | None:
    """This terminal's breadcrumb in `agent_dir` (cwd, session file, maybe `fresh`), if any."""
    terminal = terminal or terminal_id()
    if terminal is None:
        return None
    try:
        data = read_regular(breadcrumb_path(agent_dir, terminal), BREADCRUMB_LIMIT)  # (a FIFO never blocks)
        lines = data.decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    return lines if len(lines) >= 2 else None


def _interactive_root(session: Path) -> Path:
    """The session a breadcrumb's file belongs to: a subagent's transcript in a session's own
    folder (`X/Alpha.jsonl`, nested) is that session's (`X.jsonl`), walked up at most 8
    levels as oh-my-pi does: an omp from before its fix left such crumbs behind.  A file
    directly in `/` has no folder to belong to (omp finds no `/.jsonl`): it is its own."""
    for _ in range(8):
        if not session.parent.name:
            break
        parent = session.parent.with_name(session.parent.name + ".jsonl")
        if not parent.is_file():
            break
        session = parent
    return session


def newest_by_mtime(summaries: Iterable[SessionSummary]) -> SessionSummary | None:
    """The most recently written session file (its mtime, as oh-my-pi's `--continue`)."""
    best: tuple[int, SessionSummary] | None = None
    for summary in summaries:
        mtime = summary.mtime_ns
        if not mtime:
            try:
                mtime = os.stat(summary.path).st_mtime_ns
            except OSError:
                continue
        if best is None or mtime > best[0]:
            best = (mtime, summary)
    return best[1] if best else None


PI_HEADER_PROBE = 512  # the bytes pi's `isValidSessionFile` reads to find the header line


def pi_continues_from(path: str | os.PathLike[str]) -> tuple[bool, int]:
    """Whether pi's `--continue` would open `path` (its `isValidSessionFile`), and its mtime
    in whole milliseconds as pi compares them (`node_mtime_ms`).

    pi reads the first 512 bytes only: the first line must be whole in them and parse as a
    session header (`type` "session", a string `id`).  A longer header — a fork's long
    `parentSession`, a deep cwd — or an oh-my-pi title slot first makes pi pass the file
    over.  Anything but a regular file is passed over unopened (pi would block on a FIFO).
    """
    try:
        descriptor, info = open_regular(path)
    except OSError:
        return False, 0
    try:
        head = os.read(descriptor, PI_HEADER_PROBE)
    except OSError:
        return False, 0
    finally:
        os.close(descriptor)
    first_line = head.split(b"\n", 1)[0]
    if not first_line:
        return False, 0
    try:
        header, _ = loads_line(first_line)
    except LineError:
        return False, 0
    is_header = isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str)
    return is_header, node_mtime_ms(info.st_mtime_ns)


def node_mtime_ms(mtime_ns: int) -> int:
    """An mtime as Node's `stat().mtime.getTime()` gives it: `sec * 1e3 + nsec / 1e6` in
    doubles, rounded half up to the millisecond (so two files a few microseconds apart tie)."""
    seconds, nanoseconds = divmod(mtime_ns, 1_000_000_000)
    return math.floor(seconds * 1e3 + nanoseconds / 1e6 + 0.5)


def newest_pi_session(folders: Iterable[Path]) -> Path | None:
    """What pi's `--continue` opens (`findMostRecentSession`): of the `*.jsonl` files directly
    in `folders`, the newest by mtime that pi can read the header of; None: pi starts anew.
    The header's cwd plays no part: the folder is the project.

    Ties go to the first name in byte order (pi sorts with a stable sort over `readdirSync`,
    whose names libuv returns sorted).  A name that is not UTF-8 is passed over: Node reads
    it with U+FFFD in place of the bad bytes, cannot open that path and pi skips it."""
    best: tuple[int, Path] | None = None
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".jsonl") or not is_utf8(name):
                continue
            readable, mtime = pi_continues_from(Path(folder) / name)
            if readable and (best is None or mtime > best[0]):
                best = (mtime, Path(folder) / name)
    return best[1] if best is not None else None


def pi_cwd(cwd: str) -> str:
    """`cwd` as pi run there sees it (`process.cwd()`): symlinks resolved, if it exists, and
    bytes that are not UTF-8 as Node decodes them."""
    return node_text(os.path.realpath(cwd) if os.path.isdir(cwd) else cwd)


def pi_continue_folders(cwd: str, roots: Sequence[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Where pi's `--continue` run in `cwd` looks: its configured session dir as it is (pi
    keeps every project's sessions there together), else `<agent dir>/sessions/--<cwd>--/`.
    With explicit `roots`: each root's `--<cwd>--` folder."""
    bucket = bucket_name(pi_cwd(cwd))
    if roots is not None:
        return [Path(root) / bucket for root in roots]
    configured = pi_session_dir(cwd)
    return [configured] if configured is not None else [pi_agent_dir() / "sessions" / bucket]


def continue_session(
    cwd: str,
    summaries_current: Sequence[SessionSummary] | Callable[[], Sequence[SessionSummary]],
    agent_dirs: Iterable[Path],
    terminal: str | None = None,
    *,
    pi_folders: Iterable[Path] = (),
) -> Path | None:
    """`--continue`: this terminal's breadcrumb for `cwd` (oh-my-pi's, or an embedding agent's),
    else what pi's `--continue` opens from `pi_folders` (see `pi_continue_folders`), else the
    newest of `summaries_current` — the other agents' sessions of this project, by header cwd
    (oh-my-pi names and moves its folders its own way), asked for only then — but not a
    subagent's or advisor's transcript inside a session's own folder: its parent is the session.
    None when there is none, or when oh-my-pi's breadcrumb says it starts a new one here."""
    for agent_dir in agent_dirs:
        if fresh_boundary(agent_dir, terminal):
            return None
        crumb = read_breadcrumb(agent_dir, cwd, terminal)
        if crumb is not None:
            return crumb
    opened_by_pi = newest_pi_session(pi_folders)
    if opened_by_pi is not None:
        return opened_by_pi
    if callable(summaries_current):
        summaries_current = summaries_current()
    paths = {summary.path for summary in summaries_current}
    newest = newest_by_mtime(summary for summary in summaries_current if folder_parent(summary.path, paths) is None)
    return Path(newest.path) if newest is not None else None


# ---------------------------------------------------------------------------- switch


def new_session_header(cwd: str, session_id: str | None = None) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": session_id or str(uuid.uuid4()), "timestamp": now_iso(), "cwd": cwd}


def switch_session(
    path: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str] | None = None,
    *,
    cwd: str | None = None,
    terminal: str | None = None,
) -> Session:
    """Set-session-file semantics for an agent embedding seance; returns the loaded session.

    * a missing or empty file starts a new session at that path: its header is written at
      once (pi and oh-my-pi write it too, so the file exists for `--continue`);
    * a file with content that is not a session is moved to the Trash first (pi would
      truncate it; seance never destroys data), then started over the same way;
    * a pending migration (v1/v2 file) is persisted atomically, refused if the file changed;
    * the terminal breadcrumb is written last, best effort, with the session's cwd.
    """
    target = Path(os.path.abspath(os.path.expanduser(path)))
    here = cwd or os.getcwd()
    result = read_session(target)
    if isinstance(result, NotASession):
        _start_over(target, result, here)
        result = load_session(target)
    if result.needs_migration:
        persist_migration(result)
        result = load_session(target)
    if agent_dir is not None:
        write_breadcrumb(agent_dir, result.cwd or here, target, terminal)
    return result


def _not_a_header(reason: str) -> bool:
    """`read_session` found content, but no session header in it."""
    return (
        reason == "no readable JSON line"
        or reason.startswith("only a title line")
        or (reason.startswith("line ") and reason.endswith("is not a session header"))
    )


def _start_over(target: Path, problem: NotASession, cwd: str) -> None:
    """Write a new header at `target` — unless another process got there first: then the
    caller loads whatever that process wrote (a create is exclusive, an empty file's
    rewrite is refused if the file changed since it was seen empty)."""
    header = dumps_line(new_session_header(cwd))
    if problem.reason == "empty file":
        try:
            with open(target, "rb") as handle:
                stat = os.fstat(handle.fileno())
                blank = handle.read()
        except FileNotFoundError:
            blank = None  # gone meanwhile: create it below
        if blank is not None:
            if blank.strip():
                return  # filled since it was read: load that
            # FileChangedError if written meanwhile; an empty file has no lines to lose to a
            # quiet period, and an agent appending now is carried over by the rewrite.
            atomic_write(target, header, FileStamp.of_bytes(blank, stat), quiet=0)
            return
    elif problem.reason != "no such file":
        if not _not_a_header(problem.reason):  # a directory, no permission, an I/O error ...
            raise SessionError(f"{target}: cannot be used as a session ({problem.reason})")
        from .trash import trash_path

        trash_path(target)  # content that is not a session: keep it, in the Trash
    target.parent.mkdir(parents=True, exist_ok=True)
    _create_exclusively(target, header)


def _create_exclusively(target: Path, data: bytes) -> None:
    """Create `target` with `data` (O_EXCL: never over a file another process just created)."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # created meanwhile: the caller loads it
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(target)
        raise


__all__ = [
    "AmbiguousKey",
    "Resolution",
    "breadcrumb_path",
    "bucket_name",
    "continue_session",
    "fork_into",
    "key_is",
    "key_matches",
    "new_session_header",
    "newest_by_mtime",
    "newest_pi_session",
    "node_mtime_ms",
    "pi_continue_folders",
    "pi_continues_from",
    "read_breadcrumb",
    "resolve",
    "resolve_name",
    "resume_command",
    "same_project",
    "session_file_name",
    "switch_session",
    "terminal_id",
    "write_breadcrumb",
]
