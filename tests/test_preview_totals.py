"""The context preview read off running totals (`core.pathtotals.PathTotals`) and the
context's tail (`build_session_context(tail=...)`) shows exactly what the preview showed
when it read every message of the path: the same header (tokens, message count, cost,
labels…), the same blocks (tool results titled by their calls), the same "earlier" count.

The reference below is `build_preview` as it was (the whole context made, every message's
characters and every path assistant's cost summed).  Compared at many cursor positions, in
a random order (the totals are filled a path at a time, so a later question finds part of
its path done), on generated sessions with forks, several roots, compactions (their first
kept entry on the path, off it, missing), branch summaries, custom messages, costs of odd
types, orphan tool results, labels and bad lines, read as the tree view reads (messages
read back from the file) and as the list's preview reads (decoded), and on every file of
../shared/corpus."""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import NO_CORPUS, corpus_files
from test_tree_text_fast import _line, _session_lines

from seance.app.widgets.context_preview import (
    DEFAULT,
    TAIL_MESSAGES,
    PreviewDoc,
    _message_block,
    build_preview,
    plural,
)
from seance.core.context import CONTEXT_TYPES, ContextMessage, build_session_context
from seance.core.entries import MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT
from seance.core.pathtotals import PathTotals
from seance.core.session import Session, read_session
from seance.core.statsformat import cost_text
from seance.core.summary import tool_calls_by_id
from seance.core.text import display_text

FILES = corpus_files()


# -- the preview as it was -----------------------------------------------------------------


def _old_message_chars(item: ContextMessage) -> int:
    size = len(item.text)
    if item.role == "bashExecution":
        size += len(str(item.message.get("command") or "")) + len(str(item.message.get("output") or ""))
    content = item.message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            size += len(str(block.get("name") or "")) + len(str(block.get("arguments") or ""))
    return size


def _old_cost(entry: dict[str, Any]) -> float:
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
        return 0.0
    usage = message.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    total = cost.get("total") if isinstance(cost, dict) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) else 0.0


def _reference_preview(session: Session, leaf_id: Any = DEFAULT, tail: int = TAIL_MESSAGES) -> PreviewDoc:
    """`build_preview` before the running totals: every message of the path read."""
    tree = session.tree
    context = build_session_context(session) if leaf_id is DEFAULT else build_session_context(session, leaf_id)
    on_path, assistants = _path_and_assistants(session, context.leaf_id)
    ids = tree.entries.ids
    doc = PreviewDoc()
    model = context.model
    if model and (model.get("provider") or model.get("modelId")):
        names = (model.get("provider"), model.get("modelId"))
        doc.header.append(("model", "/".join(display_text(name) for name in names if name)))
    doc.header.append(("thinking", f"thinking {display_text(context.thinking_level) or 'off'}"))
    tokens = sum(_old_message_chars(item) for item in context.messages) // 4
    doc.header.append(("context", f"~{plural(tokens, 'token')} · {plural(len(context.messages), 'message')}"))
    cost = sum(_old_cost(entry) for entry in assistants)
    if cost:
        doc.header.append(("cost", cost_text(cost)))
    doc.header.append(("branches", plural(tree.branch_points(), "branch point")))
    labels = [display_text(tree.labels[ids[p]]) for p in on_path if ids[p] in tree.labels]
    if labels:
        doc.header.append(("labels", ", ".join(f"[{label}]" for label in labels)))
    if context.mode and context.mode != "none":
        doc.header.append(("mode", f"mode {display_text(context.mode)}"))
    if session.problems:
        doc.header.append(("skipped", f"{plural(len(session.problems), 'problem')} skipped while reading"))
    messages = context.messages
    if len(messages) > tail:
        doc.earlier = len(messages) - tail
        messages = messages[-tail:]
    calls: Mapping[str, dict[str, Any]] = tool_calls_by_id(assistants)
    doc.blocks = [_message_block(item, calls) for item in messages]
    if not context.messages:
        doc.notice = "Nothing to send yet: the context is empty at this point."
    return doc


def _path_and_assistants(session: Session, leaf_id: str | None) -> tuple[list[int], list[dict[str, Any]]]:
    tree = session.tree
    on_path = list(tree.path_positions(leaf_id))
    on_path.reverse()
    codes = tree.entries.message_kinds
    assistants = [tree.entries[p] for p in on_path if codes[p] in (MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT)]
    return on_path, assistants


def _assert_same_totals(session: Session, leaf: Any) -> None:
    """The raw figures, before they are formatted: the characters exactly, and the cost
    exactly where `sum()` adds floats left to right (3.11; 3.12 compensates its sums)."""
    context = build_session_context(session) if leaf is DEFAULT else build_session_context(session, leaf)
    totals = PathTotals.of(session.tree)
    assert totals.context_chars(context) == sum(_old_message_chars(item) for item in context.messages)
    cost = sum(_old_cost(entry) for entry in _path_and_assistants(session, context.leaf_id)[1])
    if sys.version_info < (3, 12):
        assert totals.at(context.leaf_id)[1] == cost


# -- sessions ------------------------------------------------------------------------------

COSTS: list[Any] = [0.1, 0.2, 0.3, 1e-7, 3, 0, -0.0, 1.5e300, True, "0.5", None, 0.004999, 12.345678]


def _lines(rng: random.Random, count: int, *, chain: bool) -> list[bytes]:
    """`_session_lines`, with costs on assistant messages, first kept entries on
    compactions (an earlier id, often on the path; a later one; a missing one), tool
    results of no call, and `message` fields that are no object."""
    lines = _session_lines(rng, count, chain=chain)
    ids: list[str] = []
    for index in range(1, len(lines)):
        try:
            entry = orjson.loads(lines[index])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant" and rng.random() < 0.9:
            message["usage"] = {"cost": {"total": rng.choice(COSTS)}} if rng.random() < 0.9 else {"cost": 5}
        elif entry.get("type") == "compaction":
            choices = [*ids[-6:], *ids[:2], "missing", None] if ids else ["missing"]
            entry["firstKeptEntryId"] = rng.choice(choices)
        elif isinstance(message, dict) and message.get("role") == "toolResult" and rng.random() < 0.2:
            message["toolCallId"] = rng.choice(["nowhere", 7, f"call-{rng.randrange(count + 1)}"])
        elif isinstance(message, dict) and rng.random() < 0.05:  # not a message after all
            entry["message"] = rng.choice([7, "text", None, [1]])
        lines[index] = _line(entry)
        if isinstance(entry.get("id"), str):
            ids.append(entry["id"])
    return lines


def _reads(path: Path) -> list[Session]:
    """The tree view's read (messages read back from the file) and the list preview's."""
    sessions = [read_session(path, digest=False), read_session(path, digest=False, decoded=CONTEXT_TYPES)]
    assert all(isinstance(session, Session) for session in sessions)
    return sessions  # type: ignore[return-value]


def _assert_same_previews(path: Path, rng: random.Random, positions: int, tails: tuple[int, ...]) -> int:
    """The new preview equals the reference at the leaf (default), before the first entry,
    at an unknown id and at `positions` entries in a random order; returns how many compared."""
    compared = 0
    for session in _reads(path):
        ids = list(session.tree.entries.ids)
        leaves: list[Any] = [DEFAULT, None, "no-such-id"]
        leaves += rng.sample(ids, min(positions, len(ids)))
        for leaf in leaves:
            for tail in tails:
                assert build_preview(session, leaf, tail) == _reference_preview(session, leaf, tail), (path, leaf, tail)
                compared += 1
            _assert_same_totals(session, leaf)
        session.close()
    return compared


def test_preview_equals_reading_every_message_on_160_generated_sessions(tmp_path: Path) -> None:
    rng = random.Random(1414)
    compacted = 0
    for trial in range(160):
        path = tmp_path / f"s{trial}.jsonl"
        path.write_bytes(b"".join(_lines(rng, rng.randrange(0, 140), chain=trial % 3 == 0)))
        _assert_same_previews(path, rng, 40, (TAIL_MESSAGES, rng.choice([1, 2, 5])))
        session = read_session(path, digest=False)
        assert isinstance(session, Session)
        compacted += any(
            build_session_context(session, entry_id).compaction is not None for entry_id in session.entries.ids
        )
    assert compacted >= 60, "compactions are compared"


def test_context_tail_holds_the_last_messages_and_counts_the_rest_on_60_generated_sessions(tmp_path: Path) -> None:
    """`build_session_context(tail=n)`: the whole context's last `n` messages, `omitted` the
    others (a compaction's summary among them when it falls before the tail)."""
    rng = random.Random(7)
    for trial in range(60):
        path = tmp_path / f"s{trial}.jsonl"
        path.write_bytes(b"".join(_lines(rng, rng.randrange(0, 100), chain=trial % 2 == 0)))
        for session in _reads(path):
            for leaf in [*rng.sample(session.entries.ids, min(20, len(session.entries))), None]:
                whole = build_session_context(session, leaf)
                for tail in (0, 1, 3, 1000):
                    part = build_session_context(session, leaf, tail=tail)
                    kept = whole.messages[len(whole.messages) - min(tail, len(whole.messages)) :]
                    assert part.messages == kept
                    assert part.omitted == len(whole.messages) - len(kept)
                    assert (part.kept_from, part.compaction, part.model) == (
                        whole.kept_from,
                        whole.compaction,
                        whole.model,
                    )


def test_the_totals_of_a_compacted_path_count_only_what_the_context_keeps(tmp_path: Path) -> None:
    """A hand-made compaction: the summary plus the kept part, not what came before it."""
    stamp = "2025-01-01T00:00:00.000Z"
    lines = [{"type": "session", "version": 3, "id": "s", "cwd": "/p", "timestamp": stamp}]
    texts = {"a": "a" * 400, "k": "k" * 40, "b": "b" * 8, "d": "d" * 4}
    parent = None
    for entry_id in ("a", "k", "b"):
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp})
        lines[-1]["message"] = {"role": "user", "content": texts[entry_id]}
        parent = entry_id
    compaction = {"type": "compaction", "id": "c", "parentId": "b", "timestamp": stamp, "summary": "s" * 12}
    lines.append({**compaction, "firstKeptEntryId": "k", "tokensBefore": 100})
    lines.append({"type": "message", "id": "d", "parentId": "c", "timestamp": stamp})
    lines[-1]["message"] = {"role": "user", "content": texts["d"]}
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(map(_line, lines)))
    for session in _reads(path):
        context = build_session_context(session, "d")
        assert context.kept_from == "k"
        summary_chars = len(context.messages[0].text)
        assert PathTotals.of(session.tree).context_chars(context) == 40 + 8 + 4 + summary_chars
        assert PathTotals.of(session.tree).at("d")[0] == 400 + 40 + 8 + 4


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
def test_preview_equals_reading_every_message_at_40_positions_of_every_corpus_file() -> None:
    rng = random.Random(14)
    compared = sum(_assert_same_previews(path, rng, 40, (TAIL_MESSAGES, 3)) for path in FILES)
    assert compared >= 40 * len(FILES)


def test_a_trees_totals_die_with_it(tmp_path: Path) -> None:
    """`PathTotals.of` keeps one per tree only as long as the tree: the totals held it, so the
    map's weak key never died and every tree ever previewed stayed in memory."""
    import gc
    import weakref

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_session_lines(random.Random(5), 200, chain=True)))
    session = read_session(path, digest=False)
    assert isinstance(session, Session)
    tree = session.tree
    totals = PathTotals.of(tree)
    assert totals.at(tree.leaf_id)[0] > 0 and PathTotals.of(tree) is totals
    gone = weakref.ref(tree), weakref.ref(totals)
    del tree, totals, session
    gc.collect()
    assert [ref() is None for ref in gone] == [True, True]
