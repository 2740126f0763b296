"""`seance show` and `seance tree`: one session's context and tree, as JSON or text.

The JSON shapes are a contract other tools depend on:

    show --json  {"path", "id", "leafId", "thinkingLevel", "model": {"provider", "modelId"} | null,
                  "messages": [{"role", "text"}]}
    tree --json  {"path", "id", "leafId", "nodes": [{"id", "parentId", "type", "label"}]}

Extra keys (`problems`, `entryId`, ...) may be added; none may be removed or renamed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from itertools import chain, compress, islice, pairwise, repeat
from operator import is_, is_not
from typing import Any

from seance.core.context import (
    CONTEXT_TYPES,
    MESSAGE_TEXTS,
    ContextTexts,
    SessionContext,
    build_session_context,
    context_texts,
)
from seance.core.gcpause import freeze_long_lived, gc_paused
from seance.core.session import NotASession, Session, read_session
from seance.core.text import as_text, display_text, json_bytes, json_safe, visible

from .errors import CliError, ExitCode
from .output import put_line, say
from .scope import scope_options, session_path

_MAX_PROBLEMS_SHOWN = 5


def register(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser("show", help="print the context a session resumes with")
    show.add_argument("session", metavar="SESSION", help="session file path or id prefix")
    show.add_argument("--leaf", metavar="ENTRY_ID", help="resume point (default: the session's leaf)")
    show.add_argument("--json", action="store_true", help="print JSON (a stable contract)")
    show.add_argument("--stats", action="store_true", help="tokens, cost, models, tools, files (the whole tree)")
    scope_options(show)
    show.set_defaults(handler=run_show)

    tree = commands.add_parser("tree", help="show a session's tree (the tree view, or --json / --text)")
    tree.add_argument("session", metavar="SESSION", help="session file path or id prefix")
    tree.add_argument("--json", action="store_true", help="print JSON (a stable contract)")
    tree.add_argument("--text", action="store_true", help="print the tree as text instead of opening the UI")
    tree.add_argument(
        "--pick",
        action="store_true",
        help="after the tree view closes, print the chosen resume point as JSON (like pick --json)",
    )
    scope_options(tree)
    tree.set_defaults(handler=run_tree)


def open_session_arg(
    args: argparse.Namespace,
    *,
    decoded: bool | Collection[str] = False,
    fields: Mapping[str, str] | None = None,
    message_kinds: bool = True,
    message_facts: Any = None,
) -> Session:
    """Load the SESSION argument: a path, or an id prefix under `--root` from `--cwd`.
    `decoded`, `fields`, `message_kinds`, `message_facts`: what the command reads of the
    entries (see `read_session`)."""
    path = session_path(args.session, args)
    # read-only: no content hash
    result = read_session(
        path, digest=False, decoded=decoded, fields=fields, message_kinds=message_kinds, message_facts=message_facts
    )
    if isinstance(result, NotASession):
        code = ExitCode.NOT_FOUND if result.reason == "no such file" else ExitCode.BAD_INPUT
        raise CliError(f"{result.path}: not a session ({result.reason})", code)
    _report_problems(result)
    return result


def _report_problems(session: Session) -> None:
    problems = session.problems
    if not problems:
        return
    shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
    more = f" (+{len(problems) - _MAX_PROBLEMS_SHOWN} more)" if len(problems) > _MAX_PROBLEMS_SHOWN else ""
    say(f"seance: {session.path.name}: skipped or repaired: {shown}{more}")


def show_payload(session: Session, leaf: str | None = None) -> dict[str, Any]:
    """The `show --json` object for a session at `leaf` (default: its leaf)."""
    context = _show_context(session, leaf)
    payload = _show_object(session, context)
    payload["messages"] = context.messages_json()  # (in its place: the key is there already)
    return payload


def _show_context(session: Session, leaf: str | None) -> SessionContext:
    """The context `show` prints: at `leaf`, or at the session's leaf (None)."""
    return build_session_context(session) if leaf is None else build_session_context(session, leaf)


def _show_texts(session: Session, leaf: str | None) -> ContextTexts:
    """`_show_context` as the columns `show` prints (see `context_texts`)."""
    return context_texts(session) if leaf is None else context_texts(session, leaf)


# What `show` reads: the context's entries kept decoded as they are parsed, but the messages
# (most of a session) only as their texts and kinds (`read_session(message_facts=MESSAGE_TEXTS)`).
_SHOW_READS: dict[str, Any] = {"decoded": CONTEXT_TYPES - {"message"}, "message_facts": MESSAGE_TEXTS}


def _show_object(session: Session, context: SessionContext) -> dict[str, Any]:
    """The `show --json` object with "messages" an empty list in its place (the one home of
    its keys and their order: `show_payload` fills it, `_write_show_json` writes it a batch
    at a time)."""
    return {
        "path": str(session.path),
        "id": session.id,
        **context.to_json(messages=False),
        "problems": session.problems,
    }


def tree_payload(session: Session) -> dict[str, Any]:
    """The `tree --json` object: depth-first pre-order, children oldest first."""
    return {**_tree_head(session), "nodes": list(_tree_nodes(session)), "problems": session.problems}


def _tree_head(session: Session) -> dict[str, Any]:
    return {"path": str(session.path), "id": session.id, "leafId": session.tree.leaf_id}


_NODES_PER_WRITE = 20_000


def _tree_nodes(session: Session) -> Iterator[dict[str, Any]]:
    return chain.from_iterable(_tree_node_batches(session))


def _tree_node_batches(session: Session) -> Iterator[list[dict[str, Any]]]:
    """The `tree --json` nodes, `_NODES_PER_WRITE` at a time (a list comprehension per batch,
    not a generator step per node)."""
    tree = session.tree
    positions, types, labels = tree.positions, tree.entries.types, tree.labels
    if tree.is_chain:  # the walk is the file order: the columns, a slice at a time
        ids, count = tree.entries.ids, len(tree.entries.ids)
        for start in range(0, count, _NODES_PER_WRITE):
            stop = min(start + _NODES_PER_WRITE, count)
            parents = ids[start - 1 : stop - 1] if start else [None, *ids[: stop - 1]]
            yield [
                {"id": entry_id, "parentId": parent, "type": kind, "label": labels.get(entry_id)}
                for entry_id, parent, kind in zip(ids[start:stop], parents, types[start:stop], strict=True)
            ]
        return
    walk = tree.walk()  # (no map of every entry's parent; types from their column: no entry decoded)
    while steps := list(islice(walk, _NODES_PER_WRITE)):
        yield [
            {"id": entry_id, "parentId": parent, "type": types[positions[entry_id]], "label": labels.get(entry_id)}
            for entry_id, _depth, parent in steps
        ]


_NESTED_HEAD, _NESTED_TAIL = len(b'{\n  "'), len(b"\n  ]\n}")  # around the items of {"key": [...]}


def _write_json_listing(head: dict[str, Any], key: str, batches: Iterator[list[Any]], tail: dict[str, Any]) -> None:
    """`write_json({**head, key: [every item of batches], **tail})`, byte for byte (through the
    same `json_safe`), without holding millions of items or their JSON: the items are encoded
    a batch at a time, each batch inside an object of the depth it has in the payload (so
    orjson indents them as there: no pass to re-indent), and cut out of it."""
    out = sys.stdout.buffer
    start = json_bytes({**head, key: []}, indent=True)
    out.write(json_safe(start[: start.rindex(b"[]")]) + b"[")
    written = False
    cut_head = _NESTED_HEAD + len(key.encode()) + len(b'": [')
    for batch in batches:
        body = json_bytes({key: batch}, indent=True)[cut_head:-_NESTED_TAIL]  # the items only
        out.write((b"," if written else b"") + json_safe(body))
        written = True
    end = json_bytes(tail, indent=True)
    out.write((b"\n  ]" if written else b"]") + (b"," + json_safe(end[1:]) if tail else b"\n}") + b"\n")
    out.flush()


def _write_tree_json(session: Session) -> None:
    """`write_json(tree_payload(session))`, a batch of nodes at a time (see `_write_json_listing`)."""
    head = _tree_head(session)
    _write_json_listing(head, "nodes", _tree_node_batches(session), {"problems": session.problems})


_MESSAGES_PER_WRITE = 10_000


def _write_show_json(session: Session, leaf: str | None) -> None:
    """`write_json(show_payload(session, leaf))`, a batch of messages at a time (see
    `_write_json_listing`): neither every message's dict nor the whole answer's bytes held."""
    rows = _show_texts(session, leaf)
    _left_for_the_exit(rows)
    items = list(_show_object(session, rows.context).items())
    at = [key for key, _value in items].index("messages")  # (the keys around it, in their order)
    head, tail = dict(items[:at]), dict(items[at + 1 :])
    count = len(rows.roles)
    batches = (rows.messages_json(start, start + _MESSAGES_PER_WRITE) for start in range(0, count, _MESSAGES_PER_WRITE))
    _write_json_listing(head, "messages", batches, tail)


# What the last `show` or `tree` read and built (the session, its context): held until the
# next one, not freed object by object as the command returns.  The command's own process
# then ends with `exit_now`, which frees nothing (200,000 messages: 0.17 s of CPU freed one
# by one, 0.7x the time to read the file); a caller of `main(argv)` (tests) holds one
# command's worth until its next.
_LEFT_FOR_THE_EXIT: list[Any] = []


def _left_for_the_exit(*read: Any) -> None:
    """Keep what a command reads until the next command (see `_LEFT_FOR_THE_EXIT`)."""
    _LEFT_FOR_THE_EXIT.extend(read)


@contextmanager
def _reading() -> Iterator[None]:
    """A `show` or `tree` command: the last one's reads dropped, the collector paused from
    reading to the last line out (millions of young objects that form no cycles would be
    scanned by each collection; a no-op unless this process owns the collector), and at the
    end the files of the sessions it read closed and their objects, kept for the exit, moved
    out of the collector's reach (the next young collection would walk them all)."""
    _LEFT_FOR_THE_EXIT.clear()
    with gc_paused():
        try:
            yield
        finally:
            for item in _LEFT_FOR_THE_EXIT:
                if isinstance(item, Session):
                    item.close()
            freeze_long_lived()


def run_show(args: argparse.Namespace) -> int:
    with _reading():
        return _show(args)


def _show(args: argparse.Namespace) -> int:
    stats = getattr(args, "stats", False)
    # (the stats read every entry)
    session = open_session_arg(args, decoded=True) if stats else open_session_arg(args, **_SHOW_READS)
    _left_for_the_exit(session)
    if stats:
        if args.leaf is not None:
            raise CliError("--stats counts the whole tree (every branch): --leaf does not apply")
        from .stats import run_show_stats  # here: plain `show` never loads the stats modules

        return run_show_stats(session, args.json)
    return _show_session(session, args)


def _show_session(session: Session, args: argparse.Namespace) -> int:
    """`show [--json] [--leaf ID]` of a session read (as `CONTEXT_TYPES` decoded)."""
    if args.leaf is not None and args.leaf not in session.tree.by_id:
        raise CliError(f"{session.path.name}: no entry {args.leaf!r}")
    if args.json:
        _write_show_json(session, args.leaf)
        return ExitCode.OK
    rows = _show_texts(session, args.leaf)
    _left_for_the_exit(rows)
    context = rows.context
    info = context.to_json(messages=False)
    model = info["model"]
    put_line(f"session  {session.id}  ({session.path})")
    if session.name:
        put_line(f"name     {display_text(session.name)}")
    put_line(f"leaf     {context.leaf_id}")
    model_text = f"{as_text(model['provider'])}/{as_text(model['modelId'])}" if model else "(none)"
    put_line(f"model    {display_text(model_text)}")
    put_line(f"thinking {display_text(info['thinkingLevel'])}")
    put_line(f"messages {len(rows.roles)}")
    _put_message_lines(rows.roles, rows.texts)
    return ExitCode.OK


def _put_message_lines(roles: list[str], texts: list[str]) -> None:
    """`show`'s line per message (its role and text), `put_line`'s each (every control
    shown as an escape), a batch of lines per write: the text is `display_text`'s (no
    control left), so only the role's part needs `visible`, once per role."""
    heads = {role: visible(f"  {role:>17}: ") for role in set(roles)}
    write = sys.stdout.write
    for start in range(0, len(roles), _MESSAGES_PER_WRITE):
        stop = start + _MESSAGES_PER_WRITE
        shown = list(map(display_text, texts[start:stop], repeat(200)))  # (a map: no loop of ours per line)
        if "" in shown:
            shown = [text or "(no text)" for text in shown]
        write(_rows_joined([None, None, "\n"], list(map(heads.__getitem__, roles[start:stop])), shown))


def _rows_joined(template: list[str | None], *columns: list[str]) -> str:
    """The rows joined, each `template` with its None slots filled from `columns` in turn (the
    first None from the first column ...): made by list slicing, at C speed (a tuple per row
    from `zip`, walked by `chain`, took 2.5 times as long)."""
    width = len(template)
    parts = template * len(columns[0])
    for slot, column in zip((at for at, piece in enumerate(template) if piece is None), columns, strict=True):
        parts[slot::width] = column  # (ValueError if a column is not as long as the first)
    return "".join(parts)  # type: ignore[arg-type]  # (every None filled)


def run_tree(args: argparse.Namespace) -> int:
    # The UI reads keys from and draws on the terminal (`/dev/tty`, seance.app.terminal), so
    # stdout may be redirected, like `pick`'s: `$(seance tree S)` gets the chosen path.  Bare
    # `tree S` opens it when stdin and stderr are the terminal (a script's pipes get the text);
    # `--pick` always does — its answer is the chosen entry, never the text (`tree S --pick
    # 2>log` printed the text tree; without a terminal it is exit 2, as `pick`).
    ui = args.pick or (sys.stdin.isatty() and sys.stderr.isatty())
    if not args.json and not args.text and ui:
        from .ui import run_tree_ui  # here: `tree --json` never loads the UI's entry points

        # the UI's result is printed like `pick --json`; the app looks after the collector
        return run_tree_ui(open_session_arg(args), as_json=args.pick)
    with _reading():
        if args.json:
            session = open_session_arg(args, message_kinds=False)  # (nodes: ids, parents, types, labels)
            _left_for_the_exit(session)
            _write_tree_json(session)
        else:
            session = open_session_arg(args, **tree_text_reads())
            _left_for_the_exit(session)
            write = sys.stdout.write
            for text in tree_text(session):
                write(text)
    return ExitCode.OK


def tree_text_reads() -> dict[str, Any]:
    """What `tree --text` reads of a session (`read_session`'s `decoded`, `fields` and
    `message_facts`): the entries whose row reads more than their type, kept decoded as they
    are parsed, except those whose row reads one field (thousands of an extension's `custom`
    entries): of those the field only; and the messages (most of a session), whose rows are
    read as they are parsed (`summary.MessageRows`, one per read), not kept.  (Summarising
    every entry, it would otherwise parse each line twice.)"""
    from seance.core.summary import ONE_FIELD, ROW_READS, MessageRows  # (here: only --text summarises)

    # (`model_change` is never a field: the reader may rewrite its `modelId`, see `read_session`)
    decoded = ROW_READS - ONE_FIELD.keys() - {"message"} | {"model_change"}
    return {"decoded": decoded, "fields": ONE_FIELD, "message_facts": MessageRows()}


_LINES_PER_WRITE = 10_000


def tree_text(session: Session, *, general: bool = False) -> Iterator[str]:
    """`tree --text`: pi's /tree as text, one line per entry, a batch of lines at a time.

    Each row's text is made once per entry (`_row_texts`, in file order), and a session that
    is one chain (most, and the huge ones) has no prefix to draw: its lines are made a column
    at a time.  `general`: every row laid out by the tree view's model and summarised from its
    entry (what the fast path must always equal; tests compare the two)."""
    if general:
        yield from _tree_text_general(session)
        return
    tree = session.tree
    texts = _row_texts(tree.entries)
    if not tree.is_chain:
        yield from _tree_text_general(session, texts)
        return
    # One chain in file order: every row unindented (`TreeModel` lays it out so).  The rows of
    # the leaf (marked) and of labelled entries (tagged) are made one by one; the runs of rows
    # between them are joined from their columns, a batch at a time.
    ids = tree.entries.ids
    shown = ids if "".join(ids).isprintable() else list(map(visible, ids))  # (printable: `visible` is itself)
    positions, labels, leaf_id = tree.positions, tree.labels, tree.leaf_id
    marked = {positions[entry_id] for entry_id in (*labels, leaf_id) if entry_id is not None and entry_id in positions}
    cuts = sorted({0, len(ids), *range(0, len(ids), _LINES_PER_WRITE), *marked, *(position + 1 for position in marked)})
    for start, stop in pairwise(cuts):
        if start in marked:  # (a run of one row)
            entry_id = ids[start]
            yield _tree_text_line(entry_id, "", labels.get(entry_id), leaf_id, texts[start])
        else:
            yield _rows_joined(["  ", None, " ", None, "\n"], shown[start:stop], texts[start:stop])


def _tree_text_line(entry_id: str, prefix: str, label: str | None, leaf_id: str | None, text: str) -> str:
    """One `tree --text` line.  One sanitiser per part: the summary and the label are
    display_text's (no control left), the prefix is ours; only the id still needs its
    controls shown."""
    tag = f"[{display_text(label)}] " if label else ""
    return f"{'*' if entry_id == leaf_id else ' '} {prefix}{visible(entry_id)} {tag}{text}\n"


_ODD = object()  # (a field value that is neither a string nor None)


class _FieldRows(dict[tuple[Any, Any], str | None]):
    """(type, field value) -> the row text of an entry of a one-field type read with that
    value (`read`: the types whose field the reader kept), None for any other shape (its
    rows are made from their entries): each shape made on first sight, then found at C speed."""

    def __init__(self, read: Collection[str]) -> None:
        super().__init__()
        self.read = read

    def __missing__(self, shape: tuple[Any, Any]) -> str | None:
        from seance.core.summary import entry_summary_text, field_summary

        kind, value = shape
        # (only strings and None, as `summarize` caches them: `1` and `True` are equal keys)
        text = None
        if kind in self.read and (value is None or value.__class__ is str):
            text = entry_summary_text(field_summary(kind, value), 100)
        self[shape] = text
        return text


class _SummaryTexts(dict):
    """An entry's row text, its summary cut to 100 characters, made once per distinct summary
    (`summarize` gives many rows one summary); at most 4,096 kept at a time."""

    def __init__(self, calls: Mapping[str, Any]) -> None:
        from seance.core.summary import entry_summary_text, summarize  # (here: only --text summarises)

        super().__init__()
        self.calls, self.summarize, self.cut = calls, summarize, entry_summary_text

    def of(self, entry: Any) -> str:
        summary = self.summarize(entry, self.calls)
        text = self.get(summary)
        if text is None:
            text = self.cut(summary, 100)
            if len(self) >= 4096:
                self.clear()
            self[summary] = text
        return text


def _row_texts(entries: Any) -> list[str]:
    """Each entry's row text (its summary cut to 100 characters, as `entry_summary_text`
    gives), in file order.  An entry whose row reads one field (`summary.ONE_FIELD`) read
    with it (`Entries.field_values`): one row made per distinct value; a message's from
    what was read of it as it was parsed (`Entries.message_facts`); any other entry's from
    the entry (decoded as read, see `tree_text_reads`)."""
    from seance.core.entries import MESSAGE_TOOL_RESULT
    from seance.core.summary import (
        ONE_FIELD,
        MessageRows,
        entry_summary_text,
        message_row_texts,
        summarize,
        tool_calls_by_id,
    )

    count, types, values = len(entries), entries.types, entries.field_values
    reader = entries.message_facts_of if isinstance(entries.message_facts_of, MessageRows) else None
    # (not after a call met again with other content: the rows of its results made before may be wrong)
    facts = entries.message_facts if reader is not None and not reader.redefined else None
    calls_read = reader.calls if reader is not None else {}  # (every call, once every message is read)
    read = [] if facts is None else list(compress(range(count), map(is_not, facts, repeat(None))))
    if facts is not None and len(read) == count:  # every entry a message (an agent's huge session):
        if reader is not None and not reader.deferred:  # (every result's row made as it was read)
            return list(facts)  # the column as it is, no other row to make
        return list(message_row_texts(facts, calls_read))
    texts: list[Any] = [None] * count  # (None: made from the entry, below)
    if values is not None:
        rows = _FieldRows({kind for kind, field in (entries.fields or {}).items() if ONE_FIELD.get(kind) == field})
        try:
            texts = list(map(rows.__getitem__, zip(types, values, strict=True)))
        except TypeError:  # an unhashable value (a list for a customType): such values read as any other
            values = [value if value is None or value.__class__ is str else _ODD for value in values]
            texts = list(map(rows.__getitem__, zip(types, values, strict=True)))
    if facts is not None:  # the messages' rows, read as they were parsed (a message not an object: below)
        texts_read = message_row_texts(list(map(facts.__getitem__, read)), calls_read)
        for position, text in zip(read, texts_read, strict=True):
            texts[position] = text
    # (only a tool result's row reads the calls: with the facts read, each one's row is made)
    calls = tool_calls_by_id(entries) if facts is None and MESSAGE_TOOL_RESULT in entries.message_kinds else {}
    # The others' rows, each made from its entry at C speed (a map, no loop of our own): nearly
    # every one is a message, whose summary no other row shares.
    made = list(compress(range(count), map(is_, texts, repeat(None))))
    made_rows = map(entry_summary_text, map(summarize, map(entries.peek, made), repeat(calls)), repeat(100))
    for position, text in zip(made, made_rows, strict=True):
        texts[position] = text
    return texts


def _tree_text_general(session: Session, texts: list[str] | None = None) -> Iterator[str]:
    """`tree --text` laid out by the tree view's model, each row summarised from its entry
    (`texts`: each entry's row text, by position, when made already)."""
    from seance.app.tree_model import TreeModel  # pure (no Textual): the tree view's own layout

    tree = session.tree
    # pi's /tree in text: a single-child chain stays flat, a branch point draws ├─ / └─ connectors
    # and │ gutters (every entry shown, the branch holding the leaf first, as in the tree view).
    model = TreeModel(tree, every_entry=True)
    lines: list[str] = []
    peek, positions, labels, leaf_id = tree.entries.peek, tree.positions, tree.labels, tree.leaf_id
    rows = model.rows
    indents, flat = rows.indents, int(model.multiple_roots)  # a row indented no deeper has no prefix
    shared = _SummaryTexts(model.tool_calls)
    for index, entry_id in enumerate(rows.ids):
        prefix = model.prefix(rows[index], fold_marks=False)[0] if indents[index] > flat else ""
        label = labels.get(entry_id) if labels else None
        text = texts[positions[entry_id]] if texts is not None else shared.of(peek(positions[entry_id]))
        lines.append(_tree_text_line(entry_id, prefix, label, leaf_id, text))
        if len(lines) >= _LINES_PER_WRITE:  # one write per batch, not per line
            yield "".join(lines)
            lines.clear()
    yield "".join(lines)
