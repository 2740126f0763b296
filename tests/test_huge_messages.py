"""The fast paths for sessions of hundreds of thousands of messages answer exactly as the
general paths do:

* `show` and `show --json` written a batch at a time print byte for byte what the general
  path prints (`write_json(show_payload(...))`, and a `put_line` per line made from that
  payload: the command as it was);
* the context read off the columns (`build_session_context`) equals the whole path read entry
  by entry (the code as it was: `_reference_context`);
* a read that keeps each message's text instead of the message (`read_session(message_facts=MESSAGE_TEXTS)`,
  `show`) keeps no message decoded, and its `context_texts` are the context's messages;
* `ToolCallsFromEnd` (the tree view's calls, read from the end only as far as asked) answers
  as `tool_calls_by_id` does;
* a read that does not look inside messages (`read_session(message_kinds=False)`, `tree
  --json`) holds the same entries, columns and tree, and its message kinds, made when asked
  for, are the reader's.

Checked on generated sessions with forks, several roots, compactions, odd field values and
roles, hostile ids and text, bad lines, duplicate ids and junk parents (each read kept in
memory and read back by offset), whatever the batch size, at the leaf and at other entries,
and on every file of ../shared/corpus."""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import corpus_files
from test_tree_text_fast import HEADER, STAMP, _line, _session_lines

from seance.cli import session as cli_session
from seance.cli.output import put_line, write_json
from seance.cli.session import show_payload
from seance.core.context import (
    CONTEXT_TYPES,
    ContextMessage,
    SessionContext,
    build_session_context,
    context_texts,
)
from seance.core.entries import Entries
from seance.core.session import Session, read_session
from seance.core.summary import ToolCallsFromEnd, tool_calls_by_id
from seance.core.text import as_text, display_text, message_text

HOSTILE_TEXT = ["\x1b[31mred", "bidi\u202e", "c1\x85\x9b", "  two  spaces ", "line\nbreak", "emoji 😀", "x" * 900]


def _show_lines(rng: random.Random, count: int, *, chain: bool) -> list[bytes]:
    """`_session_lines`, with hostile roles and message text in some entries."""
    lines = _session_lines(rng, count, chain=chain)
    for index in range(1, len(lines)):
        if rng.random() < 0.15:
            try:
                entry = orjson.loads(lines[index])
            except orjson.JSONDecodeError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(message, dict):
                message["content"] = rng.choice([rng.choice(HOSTILE_TEXT), [{"type": "text", "text": "a\tb"}], 7])
                if rng.random() < 0.3:
                    message["role"] = rng.choice(["\x1b]0;t\x07", "custom", 5, None, "compactionSummary"])
                lines[index] = _line(entry)
    return lines


def _read(path: Path, **options: Any) -> Session:
    session = read_session(path, digest=False, **options)
    assert isinstance(session, Session), getattr(session, "reason", "")
    return session


def _general_text(session: Session, leaf: str | None) -> None:
    """`show` as it was: every line through `put_line`, from the `show --json` payload."""
    payload = show_payload(session, leaf)
    model = payload["model"]
    put_line(f"session  {session.id}  ({session.path})")
    if session.name:
        put_line(f"name     {display_text(session.name)}")
    put_line(f"leaf     {payload['leafId']}")
    model_text = f"{as_text(model['provider'])}/{as_text(model['modelId'])}" if model else "(none)"
    put_line(f"model    {display_text(model_text)}")
    put_line(f"thinking {display_text(payload['thinkingLevel'])}")
    put_line(f"messages {len(payload['messages'])}")
    for message in payload["messages"]:
        text = display_text(message["text"], 200) or "(no text)"
        put_line(f"  {message['role']:>17}: {text}")


def _assert_show_matches(path: Path, capsysbinary: pytest.CaptureFixture[bytes], leaves: int = 3) -> None:
    """`show` and `show --json` at the leaf and at a few other entries, read as `show` reads
    (kept in memory and read back by offset), equal the general path on a full read."""
    general = _read(path, decoded=True)
    ids = general.tree.entries.ids
    for leaf in [None, *ids[:: max(1, len(ids) // leaves)][:leaves]]:
        write_json(show_payload(general, leaf))
        json_general = capsysbinary.readouterr().out
        _general_text(general, leaf)
        text_general = capsysbinary.readouterr().out
        # (as `show` reads, and with the messages kept decoded: `context_texts` made from the context)
        for reads in (cli_session._SHOW_READS, {"decoded": CONTEXT_TYPES}):
            for by_offset in (False, True):
                session = _read(path, by_offset=by_offset, **reads)
                cli_session._write_show_json(session, leaf)
                assert capsysbinary.readouterr().out == json_general, (path.name, leaf, by_offset, reads)
                args = argparse.Namespace(session=str(path), leaf=leaf, json=False, stats=False)
                args.root, args.cwd = None, None
                cli_session._show_session(session, args)
                assert capsysbinary.readouterr().out == text_general, (path.name, leaf, by_offset, reads)
                session.close()


def test_show_and_show_json_equal_the_general_path_on_80_generated_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    rng = random.Random(14)
    for trial in range(80):
        monkeypatch.setattr(cli_session, "_MESSAGES_PER_WRITE", rng.choice([1, 2, 7, 10_000]))
        path = tmp_path / f"s{trial}.jsonl"
        path.write_bytes(b"".join(_show_lines(rng, rng.randrange(0, 120), chain=trial % 2 == 0)))
        _assert_show_matches(path, capsysbinary)


def test_show_json_of_no_message_and_of_a_compaction_equal_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """No message at all (an empty "messages" list), and a compaction's summary first."""
    monkeypatch.setattr(cli_session, "_MESSAGES_PER_WRITE", 2)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(_line(HEADER) + _line({"type": "custom", "id": "a", "parentId": None, "timestamp": STAMP}))
    entries = [HEADER]
    for index in range(6):
        message = {"role": "user", "content": f"m{index}"}
        entries.append({"type": "message", "id": f"m{index}", "parentId": f"m{index - 1}" if index else None})
        entries[-1]["message"] = message
    compaction = {"type": "compaction", "id": "c", "parentId": "m5", "summary": "s", "firstKeptEntryId": "m3"}
    entries += [compaction, {"type": "message", "id": "u", "parentId": "c", "message": {"role": "user"}}]
    compacted = tmp_path / "compacted.jsonl"
    compacted.write_bytes(b"".join(map(_line, entries)))
    for path in (empty, compacted):
        _assert_show_matches(path, capsysbinary)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda path: path.name)
def test_show_show_json_and_the_context_equal_the_general_path_on_corpus_files(
    path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _assert_show_matches(path, capsysbinary, leaves=2)
    general, session = _read(path, decoded=True), _read(path, decoded=CONTEXT_TYPES)
    ids = general.tree.entries.ids
    for target in [*ids[:: max(1, len(ids) // 8)], *ids[-1:]]:  # (the context as read before the columns)
        assert build_session_context(session, target) == _reference_context(general, target), target


def _calls_lines(rng: random.Random, count: int) -> list[bytes]:
    """Assistant messages whose tool calls reuse ids (in one message and across messages),
    with odd blocks, and tool results asking for calls before, after, and none."""
    lines = [_line(HEADER)]
    for index in range(count):
        roll = rng.random()
        if roll < 0.5:
            blocks: list[Any] = []
            for _ in range(rng.randrange(4)):
                call_id = rng.choice([f"c{rng.randrange(12)}", 7, None])
                blocks.append(
                    rng.choice([{"type": "toolCall", "id": call_id, "name": f"n{index}"}, "junk", {"id": "c1"}])
                )
            message: Any = {
                "role": rng.choice(["assistant", "assistant", "user"]),
                "content": rng.choice([blocks, "t"]),
            }
        else:
            message = {"role": "toolResult", "toolCallId": f"c{rng.randrange(14)}", "content": "out"}
        entry = {"type": "message", "id": f"e{index}", "parentId": f"e{index - 1}" if index else None}
        lines.append(_line({**entry, "message": rng.choice([message, message, message, "not an object"])}))
    return lines


def test_tool_calls_from_the_end_equal_tool_calls_by_id_asked_in_any_order_200_trials(tmp_path: Path) -> None:
    rng = random.Random(7)
    for trial in range(200):
        path = tmp_path / f"calls{trial}.jsonl"
        path.write_bytes(b"".join(_calls_lines(rng, rng.randrange(0, 60))))
        session = _read(path, by_offset=trial % 2 == 0)
        assert isinstance(session.entries, Entries)
        expected = tool_calls_by_id(list(_read(path, decoded=True).entries))
        lazy = ToolCallsFromEnd(session.entries)
        asked = [*(f"c{number}" for number in range(15)), "missing", 7, None]
        rng.shuffle(asked)
        for call_id in asked[: rng.randrange(len(asked) + 1)]:
            assert lazy.get(call_id) == expected.get(call_id), (trial, call_id)
            assert (call_id in lazy) == (call_id in expected)
        assert dict(lazy) == dict(expected) and len(lazy) == len(expected), trial
        session.close()


def test_tree_text_with_the_message_rows_read_as_parsed_equals_the_general_path_200_trials(tmp_path: Path) -> None:
    """Calls reusing ids (in one message and across them), results before, after and without
    their call, messages that are not objects: `tree --text` reading each message's row as it
    is parsed (`summary.MessageRows`) keeps no message decoded and prints the general path."""
    from test_tree_text_fast import _assert_same_text

    rng = random.Random(17)
    for trial in range(200):
        path = tmp_path / f"rows{trial}.jsonl"
        lines = _calls_lines(rng, rng.randrange(0, 60))
        if trial % 2:  # (and a fork: the rows laid out by the tree view's model)
            lines.append(_line({"type": "message", "id": "fork", "parentId": "e0", "message": {"role": "user"}}))
        path.write_bytes(b"".join(lines))
        _assert_same_text(path)
        session = _read(path, **cli_session.tree_text_reads())
        entries = session.entries
        assert entries.message_facts is not None, trial
        for position, kind in enumerate(entries.types):
            assert kind != "message" or entries._items[position].__class__ is not dict, (trial, position)
        session.close()


def test_the_tree_views_summaries_with_calls_read_from_the_end_equal_the_full_maps(tmp_path: Path) -> None:
    """Every row's summary, asked leaf first (as the view opens) and then in file order."""
    from seance.app.tree_model import TreeModel
    from seance.core.summary import summarize

    rng = random.Random(3)
    for trial in range(20):
        path = tmp_path / f"tree{trial}.jsonl"
        path.write_bytes(b"".join(_calls_lines(rng, 80)))
        session = _read(path)
        model = TreeModel(session.tree, every_entry=True)
        assert isinstance(model.tool_calls, ToolCallsFromEnd)
        full = tool_calls_by_id(list(session.entries))
        for entry_id in reversed(session.tree.entries.ids):
            assert model.summary(entry_id) == summarize(session.tree.by_id[entry_id], full), (trial, entry_id)


def _reference_context(session: Session, target: str) -> SessionContext:
    """pi's buildSessionContext as seance wrote it before the columns: every entry on the
    path root → `target` decoded and read in order (the spec the fast path must equal)."""
    from seance.core.context import as_message

    path = session.tree.path_to(target)
    context = SessionContext(leaf_id=target)
    compaction_index = reset_index = -1
    explicit = False
    roles: dict[str, dict] = {}
    last_reply = None  # (the last assistant's model so far)
    for index, entry in enumerate(path):
        kind = entry.get("type")
        if kind == "reset_boundary":  # (oh-my-pi's `/clear`)
            reset_index = index
        elif kind == "thinking_level_change":
            level = entry.get("thinkingLevel")  # (null: oh-my-pi's "off", pi's null)
            context.thinking_level = "off" if level is None and session.dialect == "omp" else level
        elif kind == "model_change":
            model = {"provider": entry.get("provider"), "modelId": entry.get("modelId")}
            role = "default" if entry.get("role") is None else entry.get("role")
            if isinstance(entry.get("model"), str):  # (oh-my-pi's: its role decides; no reply overrides it)
                if isinstance(role, str):
                    roles[role] = model
                    if role not in ("default", "fallback") or "default" in roles:
                        context.model = model if role not in ("default", "fallback") else roles["default"]
                        explicit = True
                    else:  # (a fallback with no default: the replies' model, each counting)
                        context.model, explicit = last_reply, False
            elif role == "default":
                context.model = model
        elif kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                last_reply = {"provider": message.get("provider"), "modelId": message.get("model")}
                context.model = context.model if explicit else last_reply
        elif kind == "compaction":
            compaction_index = index
        elif kind == "mode_change":
            mode = entry.get("mode")
            context.mode = mode if isinstance(mode, str) else "none"
            context.mode_data = entry.get("data")
        elif kind == "ttsr_injection":
            rules = entry.get("injectedRules")
            for rule in rules if isinstance(rules, list) else ():
                if isinstance(rule, str) and rule not in context.injected_rules:
                    context.injected_rules.append(rule)
    kept = range(len(path))
    if reset_index > compaction_index:
        context.cleared_at = path[reset_index]["id"]
        kept = range(reset_index + 1, len(path))
    elif compaction_index >= 0:
        compaction = context.compaction = path[compaction_index]
        summary = {"role": "compactionSummary", "summary": compaction.get("summary")}
        summary["tokensBefore"] = compaction.get("tokensBefore")
        context.messages.append(ContextMessage("compactionSummary", summary, compaction["id"]))
        first_kept = compaction.get("firstKeptEntryId")
        keep_from = next((i for i in range(compaction_index) if path[i]["id"] == first_kept), compaction_index)
        context.kept_from = path[keep_from]["id"]
        kept = [i for i in kept if keep_from <= i < compaction_index or i > compaction_index]
    context.messages += [message for i in kept if (message := as_message(path[i])) is not None]
    return context


def _context_lines(rng: random.Random, count: int) -> list[bytes]:
    """`_show_lines`, with more of what the context reads: compactions keeping from entries
    of any type (or none), model changes of every role, assistants' models, odd messages."""
    lines = _show_lines(rng, count, chain=rng.random() < 0.5)
    ids = [entry["id"] for line in lines[1:] if isinstance(entry := _loads(line), dict) and "id" in entry]
    for index in range(1, len(lines)):
        entry = _loads(lines[index])
        if not isinstance(entry, dict) or rng.random() < 0.7:
            continue
        roll = rng.randrange(5)
        if roll == 0 and ids:
            entry = {"type": "compaction", "id": entry.get("id"), "parentId": entry.get("parentId"), "summary": "s"}
            entry["firstKeptEntryId"] = rng.choice([*ids, "gone", None])
        elif roll == 1:
            entry["type"], entry["role"] = "model_change", rng.choice([None, "default", "smol", ["x"]])
            entry["provider"], entry["modelId"] = "p", rng.choice(["m1", "m2", None])
        elif roll == 2:
            role = rng.choice(["assistant", "assistant", "user", "toolResult", 3])
            entry["type"], entry["message"] = "message", {"role": role, "provider": "q", "model": f"m{index}"}
        elif roll == 3:
            entry["type"], entry["message"] = "message", rng.choice(["text", None, ["a"], {"content": "no role"}])
        else:
            kinds = ["ttsr_injection", "mode_change", "thinking_level_change", "custom_message", "reset_boundary"]
            entry["type"] = rng.choice(kinds)  # (reset_boundary: oh-my-pi's `/clear`)
            entry.update(injectedRules=["r1", "r2", 5], mode="plan", thinkingLevel="high", content="c")
        lines[index] = _line(entry)
    return lines


def _context_files(directory: Path, rng: random.Random, count: int, prefix: str) -> list[Path]:
    """`count` files of `_context_lines` (0 to 89 entries each) in `directory`."""
    paths = []
    for trial in range(count):
        path = directory / f"{prefix}{trial}.jsonl"
        path.write_bytes(b"".join(_context_lines(rng, rng.randrange(0, 90))))
        paths.append(path)
    return paths


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def test_the_context_read_off_the_columns_equals_the_whole_path_read_120_trials(tmp_path: Path) -> None:
    rng = random.Random(21)
    for trial in range(120):
        path = tmp_path / f"c{trial}.jsonl"
        path.write_bytes(b"".join(_context_lines(rng, rng.randrange(0, 90))))
        general = _read(path, decoded=True)
        ids = general.tree.entries.ids
        for by_offset in (False, True):
            session = _read(path, decoded=CONTEXT_TYPES if trial % 3 else False, by_offset=by_offset)
            for target in [*ids[:: max(1, len(ids) // 6)], *ids[-2:]]:
                expected = _reference_context(general, target)
                assert build_session_context(session, target) == expected, (trial, target, by_offset)
            assert build_session_context(session) == build_session_context(general)
            session.close()


def _assert_texts_read_matches(path: Path, targets: int) -> None:
    """A read with the messages' texts (as `show` reads, kept in memory and read back by offset):
    no message kept decoded (but one whose junk parent the reader set to null: its bytes no
    longer say what it is), each message's text its column's, and `context_texts` at the
    leaf and at other entries the messages and settings of the context on a full read."""
    general = _read(path, decoded=True)
    ids = general.tree.entries.ids
    reasons = {skipped.reason for skipped in general.skipped}
    for by_offset in (False, True):
        session = _read(path, by_offset=by_offset, **cli_session._SHOW_READS)
        entries = session.entries
        texts = entries.message_facts
        if texts is None:  # (a file whose entries are all decoded: read as before)
            assert general.disk_version < 3 or general.dialect == "operator", path.name
        else:
            for position, entry in enumerate(general.entries):
                message = entry.get("message") if entry.get("type") == "message" else None
                expected = message_text(message) if isinstance(message, dict) else None
                assert texts[position] == expected, (path.name, position)
                assert entries.message_kinds[position] == general.entries.message_kinds[position], (path.name, position)
                repaired = f"parentId of entry {entry.get('id')} is not a string; shown as a root" in reasons
                if message is not None and not repaired:
                    assert entries._items[position].__class__ is not dict, (path.name, position)
        for target in [None, *ids[:: max(1, len(ids) // targets)], *ids[-2:], "not an id"]:
            context = build_session_context(general) if target is None else build_session_context(general, target)
            rows = context_texts(session) if target is None else context_texts(session, target)
            made = context.messages
            assert (rows.roles, rows.texts, rows.entry_ids) == (
                [m.role for m in made],
                [m.text for m in made],
                [m.entry_id for m in made],
            ), (path.name, target, by_offset)
            context.messages = []
            assert rows.context == context, (path.name, target, by_offset)
        session.close()


def test_the_context_texts_equal_the_contexts_messages_120_trials_and_the_corpus(tmp_path: Path) -> None:
    for path in _context_files(tmp_path, random.Random(33), 120, "t"):
        _assert_texts_read_matches(path, 6)
    for path in corpus_files():
        _assert_texts_read_matches(path, 3)


def test_a_read_without_message_kinds_equals_the_full_read_on_60_generated_sessions_and_the_corpus(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Same entries, columns, tree and `tree --json`; the kinds, made when asked for, equal the reader's."""
    for path in [*_context_files(tmp_path, random.Random(5), 60, "k"), *corpus_files()]:
        for by_offset in (False, True):
            full = _read(path, by_offset=by_offset)
            session = _read(path, by_offset=by_offset, message_kinds=False)
            cli_session._write_tree_json(full)
            expected = capsysbinary.readouterr().out
            cli_session._write_tree_json(session)
            assert capsysbinary.readouterr().out == expected, path.name
            entries, full_entries = session.entries, full.entries
            assert entries._message_kinds is None, path.name  # (not made: `tree --json` never asked)
            assert (entries.ids, entries.parents, entries.types) == (
                full_entries.ids,
                full_entries.parents,
                full_entries.types,
            )
            assert list(entries) == list(full_entries) and session.problems == full.problems
            some = sorted({0, len(entries) // 2, len(entries) - 1}) if len(entries) else []
            assert entries.select(some).message_kinds == full_entries.select(some).message_kinds, path.name
            assert entries.message_kinds == full_entries.message_kinds, path.name
            full.close()
            session.close()


def test_the_preview_with_the_contexts_assistants_equals_it_with_each_decoded_60_trials(tmp_path: Path) -> None:
    """The preview's costs and tool calls (running totals; the calls of the shown results
    read from the leaf back, a call id used several times) equal them from every assistant
    decoded, compactions and odd messages included, at the leaf and at other entries."""
    from test_preview_totals import _reference_preview

    from seance.app.widgets import context_preview

    rng = random.Random(9)
    paths = []
    for trial in range(60):
        lines = _context_lines(rng, rng.randrange(0, 90))
        for index in range(1, len(lines)):  # costs and calls on some assistants
            entry = _loads(lines[index])
            message = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(message, dict) and message.get("role") == "assistant" and rng.random() < 0.7:
                message["usage"] = {"cost": {"total": rng.choice([0.5, 2, True, "x", None])}}
                call = {
                    "type": "toolCall",
                    "id": f"c{rng.randrange(5)}",
                    "name": "bash",
                    "arguments": {"command": "ls"},
                }
                message["content"] = [{"type": "text", "text": "t"}, call]
                lines[index] = _line(entry)
        path = tmp_path / f"p{trial}.jsonl"
        path.write_bytes(b"".join(lines))
        paths.append(path)
    for path in [*paths, *corpus_files()[:20]]:
        session = _read(path)
        ids = session.tree.entries.ids
        targets = [*ids[:: max(1, len(ids) // 4)], *ids[-1:]]
        fast = [context_preview.build_preview(session, target) for target in targets]
        general = [_reference_preview(session, target) for target in targets]  # (every assistant decoded)
        assert fast == general, path.name
        session.close()


def test_the_context_of_a_run_of_messages_alone_equals_the_whole_path_read_60_trials(tmp_path: Path) -> None:
    """A chain (or a fork's path) whose every entry is a message, of every kind and role,
    assistants with and without a model: its context (and `show`'s texts) is read off the
    columns without a pass over the path's types, and equals the whole path read."""
    rng = random.Random(53)
    for trial in range(60):
        lines = [_line(HEADER)]
        parent = None
        for index in range(rng.randrange(1, 60)):
            role = rng.choice(["user", "assistant", "assistant", "toolResult", "custom", None])
            message: Any = {"role": role, "content": rng.choice(["t", "", [{"type": "text", "text": " "}]])}
            if role == "assistant":
                message.update(provider="p", model=rng.choice([f"m{index}", None]), stopReason="stop")
            entry_id = f"e{index}"
            parent = rng.choice([parent, parent, f"e{max(0, index - 3)}"]) if index else None
            body = message if rng.random() < 0.95 else "not an object"
            lines.append(_line({"type": "message", "id": entry_id, "parentId": parent, "message": body}))
            parent = entry_id
        path = tmp_path / f"m{trial}.jsonl"
        path.write_bytes(b"".join(lines))
        general = _read(path, decoded=True)
        ids = general.tree.entries.ids
        for by_offset in (False, True):
            session = _read(path, by_offset=by_offset)
            for target in [*ids[:: max(1, len(ids) // 5)], *ids[-2:]]:
                assert build_session_context(session, target) == _reference_context(general, target), (trial, target)
            session.close()
        _assert_texts_read_matches(path, 5)


def test_a_selection_of_the_entries_drops_the_rows_made_from_the_messages_before(tmp_path: Path) -> None:
    """A tool result's row made as it is read depends on the calls read before it, some of
    them in entries the reader then drops (an earlier duplicate id): such a session's
    `tree --text` keeps no row read as parsed and makes each from its entry, equal to the
    general path; `show`'s texts (each message's own) are kept."""
    from test_tree_text_fast import _assert_same_text

    block = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    call = {"role": "assistant", "content": [block], "stopReason": "toolUse"}
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "sh", "content": "out"}
    # (the call's entry is dropped for the later one of its id: its results have no call)
    entries = [("e0", None, call), ("e1", "e0", result), ("e0", "e1", {"role": "user", "content": "hi"})]
    lines = [_line(HEADER)] + [
        _line({"type": "message", "id": entry_id, "parentId": parent, "message": message})
        for entry_id, parent, message in entries
    ]
    path = tmp_path / "dup.jsonl"
    path.write_bytes(b"".join(lines))
    _assert_same_text(path)
    session = _read(path, **cli_session.tree_text_reads())
    assert session.entries.message_facts is None and len(session.entries) == 2
    assert "[sh]" in "".join(cli_session.tree_text(session))
    shown = _read(path, **cli_session._SHOW_READS)
    assert shown.entries.message_facts is not None
