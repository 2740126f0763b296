"""`seance resolve`, `continue`, `rm` and `rename`: what an agent or a shell script needs.

    seance resolve KEY [--cwd DIR] [--fork] [--json]   the file a resume key (id prefix) names
    seance continue [--cwd DIR] [--json]               the file `--continue` opens here
    seance rm SESSION [--force] | --undo               to the Trash, and back (latest first; a
                                                       `seance clean --yes` batch is one undo)
    seance rename SESSION NAME                         pi: session_info entry; omp: title slot
                                                       (older omp files: the header's title)

SESSION is a path or an id prefix.  Paths go to stdout (one per line), messages to stderr.
Exit codes: 0 ok, 1 nothing found (or nothing to undo), 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from seance.core.catalog import Catalog
from seance.core.model import SessionSummary
from seance.core.resume import Resolution, continue_session, fork_into, pi_continue_folders, resume_command
from seance.core.safeopen import read_regular
from seance.core.text import display_text
from seance.core.trash import (
    NotASessionFile,
    NotInTrash,
    SessionInUse,
    TrashBatch,
    TrashError,
    TrashReceipt,
    is_batch_json,
    undo,
    undo_each,
)
from seance.core.writes import atomic_write, rename_session, stored_title

from .errors import CliError, ExitCode
from .output import ask, put_line, put_path, say, write_json
from .scope import Scope, find_session, given_path, path_resolution, scope_options, session_path

RECEIPT_NAME = "last-rm.json"  # a JSON list of receipts, newest last
RECEIPTS_KEPT = 50


def register(commands: argparse._SubParsersAction) -> None:
    resolve_cmd = commands.add_parser("resolve", help="print the session file a resume key (id prefix) names")
    resolve_cmd.add_argument(
        "key",
        metavar="KEY",
        help="a session file, or a key: a session id or file name, whole or a unique prefix "
        "(case-insensitive), else a session name",
    )
    scope_options(resolve_cmd)
    resolve_cmd.add_argument(
        "--fork", action="store_true", help="a match in another project is copied into this one; print the copy"
    )
    resolve_cmd.add_argument(
        "--command", action="store_true", help="print the shell line that resumes it (cd DIR && pi --session FILE)"
    )
    resolve_cmd.add_argument("--json", action="store_true", help="print a JSON object")
    resolve_cmd.set_defaults(handler=run_resolve)

    continue_cmd = commands.add_parser("continue", help="print the session --continue opens here")
    scope_options(continue_cmd)
    continue_cmd.add_argument("--json", action="store_true", help="print a JSON object")
    continue_cmd.set_defaults(handler=run_continue)

    rm = commands.add_parser("rm", help="move a session (and its artifacts folder) to the Trash")
    rm.add_argument("session", metavar="SESSION", nargs="?", help="session file path or id prefix")
    rm.add_argument(
        "--undo", action="store_true", help="restore the latest `seance rm` or `clean --yes` batch (repeatable)"
    )
    rm.add_argument("--force", action="store_true", help="also a file that does not read as a session (alone)")
    scope_options(rm)
    rm.set_defaults(handler=run_rm)

    rename = commands.add_parser("rename", help="name a session (pi: session_info entry; omp: title slot)")
    rename.add_argument("session", metavar="SESSION", help="session file path or id prefix")
    rename.add_argument("name", metavar="NAME", help='the new name; "" clears it (asks first, or --yes)')
    rename.add_argument("--yes", "-y", action="store_true", help="clear the name without asking")
    scope_options(rename)
    rename.set_defaults(handler=run_rename)


# -- resolve -------------------------------------------------------------------------------------


def run_resolve(args: argparse.Namespace) -> int:
    from seance.core.scanpool import default_workers

    scope = Scope.of(args)
    cwd = scope.cwd
    # (the CLI is single-threaded: the files are found in a child while the index is read)
    path = given_path(args.key)  # a path names its file, as pi's `--session PATH` does
    catalog = Catalog(scope.roots, watched=True, workers=default_workers())
    try:
        found = path_resolution(path, cwd) if path is not None else find_session(args.key, cwd, catalog)
        path, forked_from = found.path, None
        if found.other_project and args.fork:
            path = fork_into(found.path, cwd, _root_of(found.path, catalog.roots))
            forked_from = str(found.path)
            say(f"seance: forked {found.path.name} from {found.summary.cwd} into {path}")
        elif found.other_project:
            say(
                f"seance: {found.path.name} is in another project ({found.summary.cwd}); --fork copies it into this one"
            )
    finally:
        catalog.close()
    resumed = found.summary if forked_from is None else replace(found.summary, path=str(path), cwd=cwd)
    if args.json:
        write_json(_resolution_json(found, path, resumed.cwd, forked_from) | {"resumeCommand": resume_command(resumed)})
    elif args.command:
        put_line(resume_command(resumed))  # quoted word by word (core.text.shell_word): safe to paste
    else:
        put_path(path)
    return ExitCode.OK


def _root_of(path: Path, roots: list[Path]) -> Path:
    """The sessions root holding `path` (a fork lands next to its source), else the first root."""
    for root in roots:
        try:
            path.relative_to(os.path.abspath(root))
        except ValueError:
            continue
        return Path(os.path.abspath(root))
    if roots:
        return Path(os.path.abspath(roots[0]))
    return path.parent.parent


def _resolution_json(found: Resolution, path: Path, cwd: str, forked_from: str | None) -> dict[str, Any]:
    """`resolve --json`: the session to resume (a fork: the copy, in this project) and how it was found."""
    return {
        "path": str(path),
        "id": found.summary.id if forked_from is None else path.stem.rpartition("_")[2],
        "cwd": cwd,
        "otherProject": found.other_project,
        "forkedFrom": forked_from,
    }


# -- continue ------------------------------------------------------------------------------------


def agent_dirs() -> list[Path]:
    """Where breadcrumbs live: pi's agent dir and oh-my-pi's (default, XDG state, profiles)."""
    from seance.core.roots import agent_dir, omp_state_dirs

    return [agent_dir(), *omp_state_dirs()]


def run_continue(args: argparse.Namespace) -> int:
    """What `--continue` opens here: a breadcrumb, else pi's rule on pi's folder for the cwd
    (each `--root`'s), else the newest of the other agents' sessions of the project (or of
    every `--root`'s: which agent wrote a root given by hand is not known)."""
    from seance.core.roots import other_agents_roots

    scope = Scope.of(args)
    cwd = scope.cwd

    def sessions_here() -> list[SessionSummary]:
        catalog = Catalog(scope.roots if scope.roots is not None else other_agents_roots(cwd))
        try:
            return catalog.quick(cwd)
        finally:
            catalog.close()

    path = continue_session(cwd, sessions_here, agent_dirs(), pi_folders=pi_continue_folders(cwd, scope.roots))
    if path is None:
        raise CliError(f"no session in {cwd}", ExitCode.NOT_FOUND)
    if args.json:
        write_json({"path": str(path), "cwd": cwd})
    else:
        put_path(path)
    return ExitCode.OK


# -- rm ------------------------------------------------------------------------------------------


# The undo list and a batch's journal hold paths and stamps: far below this, unless something
# else was put there (read whole, so it is bounded).
UNDO_LIST_LIMIT = 64 << 20


def receipt_path() -> Path:
    from seance.core.index import default_cache_dir

    return default_cache_dir() / RECEIPT_NAME


def run_rm(args: argparse.Namespace) -> int:
    if args.undo:
        if args.session:
            raise CliError("rm --undo takes no SESSION (it restores the last `seance rm`)", ExitCode.BAD_INPUT)
        return _undo_last()
    if not args.session:
        raise CliError("rm needs a SESSION (a path or an id prefix), or --undo", ExitCode.BAD_INPUT)
    path = session_path(args.session, args)
    saved: list[TrashReceipt] = []
    unsaved: list[str] = []  # why the undo record could not be saved: said once the move is done

    def remember(planned: TrashReceipt) -> None:  # before anything moves: a killed `rm` stays undoable
        if _save_receipt(planned, report=unsaved.append):
            saved.append(planned)

    catalog = Catalog(Scope.of(args).roots)
    try:
        receipt = catalog.trash(path, force=args.force, on_reserved=remember)  # and out of the index
    except NotASessionFile as error:
        raise CliError(f"{error} (`seance rm --force` moves the file alone)", ExitCode.BAD_INPUT) from None
    except SessionInUse as error:
        raise CliError(f"{error} (`seance rm --force` deletes it anyway)", ExitCode.BAD_INPUT) from None
    except BaseException:
        if saved and not os.path.lexists(saved[0].session.trashed):  # (there: interrupted after the move)
            _replace_receipt(saved[0], None)
        raise
    finally:
        catalog.close()
    if saved:
        _replace_receipt(saved[0], receipt)  # now with the moved file's size and mtime
    for line in unsaved:
        say(line)
    for item in receipt.items:
        say(f"seance: moved to the Trash: {item.original} -> {item.trashed}")
    for note in receipt.notes:  # (a move left unfinished: what is where)
        say(f"seance: {note}")
    # (not remembered: said above why; a file manager's restore still brings it back)
    say("seance: undo with `seance rm --undo`" if saved else "seance: restore it from the Trash")
    put_path(receipt.session.trashed)
    return ExitCode.OK


@contextlib.contextmanager
def _receipts_locked() -> Iterator[Path]:
    """The receipts file, locked against a concurrent `seance rm` (whose receipt would be lost)."""
    target = receipt_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target.with_name(f"{RECEIPT_NAME}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield target
    finally:
        os.close(fd)  # releases the lock


def _read_receipts(target: Path) -> list[Any]:
    """The saved receipts, oldest first (a single object: the format before the stack)."""
    try:
        data = orjson.loads(read_regular(target, UNDO_LIST_LIMIT))  # (a FIFO there never blocks)
    except FileNotFoundError:
        return []
    return data if isinstance(data, list) else [data]


def _write_receipts(target: Path, receipts: list[Any]) -> None:
    if receipts:
        atomic_write(target, orjson.dumps(receipts[-RECEIPTS_KEPT:]), None)
    else:
        target.unlink(missing_ok=True)


def _save_receipt(receipt: TrashReceipt, *, report: Callable[[str], None] = say) -> bool:
    return _save_entry(receipt.to_json(), report=report)


def _save_entry(entry: dict[str, Any], *, report: Callable[[str], None] = say) -> bool:
    """Push a receipt or a batch (as JSON) onto the undo stack (False: it could not be, and
    `report` was told why: `seance rm` says so only once something was deleted)."""
    try:
        with _receipts_locked() as target:
            try:
                receipts = _read_receipts(target)
            except orjson.JSONDecodeError as error:  # unreadable history: start a new one
                say(f"seance: earlier deletions cannot be undone ({target}: {error})")
                receipts = []
            _write_receipts(target, [*receipts, entry])
    except OSError as error:  # the delete itself works; only `rm --undo` will not know it
        report(f"seance: could not remember the deletion for --undo: {error}")
        return False
    return True


def _replace_receipt(planned: TrashReceipt, final: TrashReceipt | None) -> None:
    """Swap the receipt saved before the move for the final one (None: drop it, nothing moved)."""
    _replace_entry(planned.to_json(), final.to_json() if final is not None else None)


def _replace_entry(old: dict[str, Any], new: dict[str, Any] | None) -> None:
    """Swap an entry of the undo stack for another (None: drop it)."""
    try:
        with _receipts_locked() as target:
            receipts = _read_receipts(target)
            for index in range(len(receipts) - 1, -1, -1):
                if receipts[index] == old:
                    receipts[index : index + 1] = [new] if new is not None else []
                    _write_receipts(target, receipts)
                    return
    except (OSError, orjson.JSONDecodeError):  # the planned receipt stays: undo checks what it finds
        pass


def _undo_last() -> int:
    """Undo the latest `seance rm` still on the stack, and drop it from there."""
    with _receipts_locked() as target:
        try:
            receipts = _read_receipts(target)
        except (OSError, orjson.JSONDecodeError) as error:
            raise CliError(f"cannot read the deletions to undo ({error})", ExitCode.NOT_FOUND) from None
        if not receipts:
            raise CliError("nothing to undo", ExitCode.NOT_FOUND)
        if is_batch_json(receipts[-1]):
            return _undo_batch(target, receipts)
        notes: list[str] = []
        try:
            receipt = TrashReceipt.from_json(receipts[-1])
            restored = undo(receipt, notes)
        except TrashError as error:
            if isinstance(error, NotInTrash) or not _undoable(receipts[-1]):  # gone for good, or malformed
                _write_receipts(target, receipts[:-1])
                raise CliError(f"{error}; dropped from the undo list", ExitCode.NOT_FOUND) from None
            raise  # e.g. the original path is taken: keep it, the user may free the path and retry
        _write_receipts(target, receipts[:-1])
    for note in notes:  # (a move left unfinished: what is where)
        say(f"seance: {note}")
    for path in restored:
        put_path(path)
    return ExitCode.OK


class BatchRecord:
    """The undo record of a batch delete (`seance clean --yes`) while it runs.

    The stack entry is saved first and names a journal; each receipt is appended there (and
    fsync'ed) before its file moves, so a killed clean-up stays undoable as one batch.  At the
    end the entry is replaced by the batch itself and the journal goes.
    """

    def __init__(self) -> None:
        self.journal = receipt_path().with_name(f"rm-batch-{uuid.uuid4().hex[:12]}.jsonl")
        self.entry: dict[str, Any] = {"batch": [], "journal": str(self.journal)}
        _save_entry(self.entry)

    def reserved(self, receipt: TrashReceipt) -> None:
        """`trash_session`'s `on_reserved`: journal the receipt before anything moves."""
        with open(self.journal, "ab") as journal:
            journal.write(orjson.dumps(receipt.to_json()) + b"\n")
            journal.flush()
            os.fsync(journal.fileno())

    def journalled(self) -> TrashBatch:
        """What the journal holds so far (a batch interrupted before its end)."""
        return _saved_batch(self.entry)

    def finish(self, batch: TrashBatch) -> None:
        """Replace the stack entry by the batch (dropped if it moved nothing); the journal goes."""
        _replace_entry(self.entry, batch.to_json() if batch.receipts else None)
        self.journal.unlink(missing_ok=True)


def _journal_of(entry: dict[str, Any]) -> Path | None:
    """The batch's journal (`BatchRecord`): a `rm-batch-*.jsonl` beside the undo list, or None.
    Undo deletes it, so a path the list merely names (damaged, edited, another tool's) is
    never taken for one: it is neither read nor removed."""
    journal = entry.get("journal")
    if not isinstance(journal, str) or not _JOURNAL_NAME.fullmatch(os.path.basename(journal)):
        return None
    path = Path(journal)
    return path if path.parent == receipt_path().parent else None


_JOURNAL_NAME = re.compile(r"rm-batch-[0-9a-f]{12}\.jsonl")


def _saved_batch(entry: dict[str, Any]) -> TrashBatch:
    """A batch from the stack; an unfinished one (killed) is read from its journal."""
    batch = TrashBatch.from_json(entry)
    journal = _journal_of(entry)
    if journal is None:
        return batch
    by_info = {receipt.session.info: receipt for receipt in batch.receipts}
    try:
        lines = read_regular(journal, UNDO_LIST_LIMIT).splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            receipt = TrashReceipt.from_json(orjson.loads(line))
        except (orjson.JSONDecodeError, TrashError):
            continue  # a line cut short by the kill
        by_info.setdefault(receipt.session.info, receipt)
    return TrashBatch(tuple(by_info.values()))


def _undo_batch(target: Path, receipts: list[Any]) -> int:
    """Undo the batch on top of the stack: all of it that can be; what cannot is reported, and
    kept on the stack when it may work later (its original path is taken now)."""
    entry = receipts[-1]
    try:
        batch = _saved_batch(entry)
    except TrashError as error:
        _write_receipts(target, receipts[:-1])
        raise CliError(f"{error}; dropped from the undo list", ExitCode.NOT_FOUND) from None
    notes: list[str] = []
    outcome = undo_each(batch, lambda receipt: undo(receipt, notes))
    kept = [TrashBatch(tuple(receipt for receipt, _ in outcome.blocked)).to_json()] if outcome.blocked else []
    _write_receipts(target, [*receipts[:-1], *kept])
    journal = _journal_of(entry)
    if journal is not None:
        journal.unlink(missing_ok=True)
    if not batch.receipts:
        raise CliError("nothing to undo (the last batch moved nothing)", ExitCode.NOT_FOUND)
    for paths in outcome.restored:
        for path in paths:
            put_path(path)
    for note in dict.fromkeys(notes):  # (a move left unfinished: what is where, once for the batch)
        say(f"seance: {note}")
    for _, reason in outcome.gone:
        say(f"seance: {reason}; dropped from the undo list")
    for _, reason in outcome.blocked:
        say(f"seance: {reason}")
    say(f"seance: restored {len(outcome.restored)} of {len(batch.receipts)} sessions of the last batch")
    if outcome.blocked:
        say("seance: the rest stays undoable: free the paths and run `seance rm --undo` again")
        return ExitCode.BAD_INPUT
    return ExitCode.NOT_FOUND if outcome.gone else ExitCode.OK


def _undoable(saved: Any) -> bool:
    """A saved receipt whose items are all still in the Trash."""
    try:
        receipt = TrashReceipt.from_json(saved)
    except TrashError:
        return False
    return all(os.path.lexists(item.trashed) for item in receipt.items)


# -- rename --------------------------------------------------------------------------------------


def run_rename(args: argparse.Namespace) -> int:
    path = session_path(args.session, args)
    clearing = not args.name.strip()
    if clearing and not args.yes:
        _confirm_clear(path)
    stored = rename_session(path, args.name)
    name = args.name.strip()
    if stored == "title-slot":  # the 256-byte slot holds what fits: say what was stored
        kept = stored_title(name)
        where = "title slot" if kept == name else f"title slot: the first {len(kept)} of {len(name)} characters"
        name = kept
    elif stored == "header-title":
        where = "session header's title"
    else:
        where = "session_info entry"
    if clearing:
        say(f"cleared the name of {path.name} ({where})")
    else:
        say(f"renamed {path.name}: {display_text(name)} ({where})")
    put_path(path)
    return ExitCode.OK


def _confirm_clear(path: Path) -> None:
    """Ask on the terminal before an empty NAME clears a name; without one, `--yes` must say so."""
    answer = ask(f"Clear the name of {path.name}?")
    if answer is None:
        raise CliError(f"an empty NAME clears the name of {path.name}: add --yes to do it", ExitCode.BAD_INPUT)
    if not answer:
        raise CliError("nothing was changed", ExitCode.CANCELLED)
