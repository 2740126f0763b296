"""Dialects (omp, the Python port), migrations, and the race-safe write API."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import orjson
import pytest

from seance.core.blobs import BlobStore
from seance.core.context import build_session_context
from seance.core.session import Session, SessionError, load_session, read_session
from seance.core.writes import (
    FileChangedError,
    persist_migration,
    rename_session,
    set_label,
    title_slot_bytes,
)

AT_REST = 1_735_689_600  # 2025-01-01: a fixture is a file no agent is writing (a rewrite waits for quiet)


def _write(path: Path, objs: list[dict], prefix: bytes = b"") -> Path:
    path.write_bytes(prefix + b"".join(orjson.dumps(o) + b"\n" for o in objs))
    os.utime(path, (AT_REST, AT_REST))
    return path


V1 = [
    {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
    {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": "user", "content": "one"}},
    {
        "type": "message",
        "timestamp": "2025-01-01T00:00:02.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "two"}], "provider": "p", "model": "m"},
    },
    {"type": "message", "timestamp": "2025-01-01T00:00:03.000Z", "message": {"role": "hookMessage", "content": "h"}},
    {"type": "compaction", "timestamp": "2025-01-01T00:00:04.000Z", "summary": "S", "firstKeptEntryIndex": 2},
    {"type": "message", "timestamp": "2025-01-01T00:00:05.000Z", "message": {"role": "user", "content": "three"}},
]


def test_v1_migration_in_memory_with_stable_ids(tmp_path: Path) -> None:
    path = _write(tmp_path / "v1.jsonl", V1)
    first, second = load_session(path), load_session(path)
    ids = [e["id"] for e in first.entries]
    assert ids == [e["id"] for e in second.entries], "same file, same ids"
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in ids)
    assert [e["parentId"] for e in first.entries] == [None, *ids[:-1]]
    compaction = first.entries[3]
    assert compaction["firstKeptEntryId"] == ids[1]  # index 2 counts the header as 0
    assert "firstKeptEntryIndex" not in compaction
    assert first.entries[2]["message"]["role"] == "custom"
    context = build_session_context(first)
    assert [(m.role, m.text) for m in context.messages] == [
        ("compactionSummary", "S"),
        ("assistant", "two"),
        ("custom", "h"),
        ("user", "three"),
    ]


def test_persist_migration_is_atomic_and_explicit(tmp_path: Path) -> None:
    path = _write(tmp_path / "v1.jsonl", V1)
    session = load_session(path)
    assert persist_migration(session) is True
    reread = load_session(path)
    assert reread.disk_version == 3 and not reread.needs_migration
    assert [e["id"] for e in reread.entries] == [e["id"] for e in session.entries]
    assert persist_migration(reread) is False
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_persist_migration_refuses_if_the_file_changed(tmp_path: Path) -> None:
    path = _write(tmp_path / "v1.jsonl", V1)
    session = load_session(path)
    with open(path, "ab") as handle:  # an agent appends meanwhile
        handle.write(orjson.dumps(V1[1]) + b"\n")
    before = path.read_bytes()
    with pytest.raises(FileChangedError):
        persist_migration(session)
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


V3 = [
    {"type": "session", "version": 3, "id": "s3", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
    {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "q"},
    },
    {
        "type": "message",
        "id": "a2",
        "parentId": "a1",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "a"}], "provider": "p", "model": "m"},
    },
]


def test_set_label_appends_one_line_the_pi_way(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", V3)
    before = path.read_bytes()
    entry = set_label(path, "a1", "  checkpoint ")
    after = path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert entry["parentId"] == "a2" and entry["label"] == "checkpoint"
    assert load_session(path).tree.labels == {"a1": "checkpoint"}
    set_label(path, "a1", "")
    assert load_session(path).tree.labels == {}
    with pytest.raises(SessionError):
        set_label(path, "nope", "x")


def test_append_never_glues_onto_a_torn_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", V3)
    with open(path, "ab") as handle:
        handle.write(b'{"type":"message","id":"torn"')
    set_label(path, "a2", "x")
    session = load_session(path)
    assert session.tree.labels == {"a2": "x"}
    assert [s.reason for s in session.skipped] == ["not valid JSON"]


def test_rename_pi_dialect(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", V3)
    assert rename_session(path, " New name ") == "session_info"
    assert load_session(path).name == "New name"
    assert rename_session(path, "   ") == "session_info"  # an empty name clears it, as pi reads it
    assert load_session(path).name is None
    assert orjson.loads(path.read_bytes().splitlines()[-1])["name"] == ""  # pi's appendSessionInfo("")
    with pytest.raises(SessionError, match="no name to clear"):
        rename_session(path, "")
    user_only = _write(tmp_path / "u.jsonl", V3[:2])
    with pytest.raises(SessionError, match="no assistant reply"):
        rename_session(user_only, "x")


def test_rename_after_an_agent_appended_is_a_child_of_its_line(tmp_path: Path, monkeypatch) -> None:
    """An agent line that lands between seance's read and its write is kept, and the name
    entry hangs below it (pi resumes at the last line: it must not skip the agent's)."""
    path = _write(tmp_path / "s.jsonl", V3)
    import seance.core.writes as writes

    real_load = writes.load_session

    def load_then_agent_appends(p):
        session = real_load(p)
        with open(path, "ab") as handle:
            handle.write(orjson.dumps(V3[-1] | {"id": "zz", "parentId": V3[-1]["id"]}) + b"\n")
        return session

    monkeypatch.setattr(writes, "load_session", load_then_agent_appends)
    before_write = path.read_bytes() + orjson.dumps(V3[-1] | {"id": "zz", "parentId": V3[-1]["id"]}) + b"\n"
    assert rename_session(path, "x") == "session_info"
    data = path.read_bytes()
    assert data.startswith(before_write)
    written = orjson.loads(data.splitlines()[-1])
    assert written["type"] == "session_info" and written["parentId"] == "zz"


def test_omp_title_slot_rename_in_place(tmp_path: Path) -> None:
    slot = title_slot_bytes("", "2026-01-01T00:00:00.000Z", "auto")
    assert len(slot) == 256
    path = _write(tmp_path / "omp.jsonl", V3, prefix=slot)
    size = path.stat().st_size
    assert load_session(path).name is None
    assert rename_session(path, "ü" * 300) == "title-slot"
    assert path.stat().st_size == size
    session = load_session(path)
    assert session.name and set(session.name) == {"ü"} and len(session.name) < 300
    assert session.id == "s3" and [e["id"] for e in session.entries] == ["a1", "a2"]
    assert rename_session(path, "") == "title-slot"  # an empty title clears it, in place
    assert path.stat().st_size == size and load_session(path).name is None


def test_clearing_an_omp_title_clears_it_though_title_change_entries_remain(tmp_path: Path) -> None:
    """omp names a session by its title slot only (its `title_change` entries are an audit
    trail it never reads back): omp's own titles come with one, and once a rename clears
    the slot, the session has no name in omp, so none in seance either."""
    from seance.core.metadata import scan_file

    slot = title_slot_bytes("Refactor auth", "2026-07-01T00:00:05.000Z", "auto")
    change = {"type": "title_change", "id": "t1", "parentId": "a2", "title": "Refactor auth", "source": "auto"}
    path = _write(tmp_path / "omp.jsonl", [*V3, {**change, "timestamp": "2026-07-01T00:00:05.000Z"}], prefix=slot)
    assert load_session(path).name == scan_file(path).final.name == "Refactor auth"
    assert rename_session(path, "") == "title-slot"
    assert load_session(path).name is None and scan_file(path).final.name is None
    with pytest.raises(SessionError, match="no name to clear"):
        rename_session(path, "")


def test_omp_model_change_and_extras(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "omp.jsonl",
        [
            V3[0],
            V3[1],
            {
                "type": "model_change",
                "id": "m1",
                "parentId": "a1",
                "timestamp": "2026-01-01T00:00:03.000Z",
                "model": "openai/gpt-4o",
            },
            {
                "type": "mode_change",
                "id": "m2",
                "parentId": "m1",
                "timestamp": "2026-01-01T00:00:04.000Z",
                "mode": "plan",
                "data": {"planFile": "/tmp/p.md"},
            },
            {
                "type": "ttsr_injection",
                "id": "m3",
                "parentId": "m2",
                "timestamp": "2026-01-01T00:00:05.000Z",
                "injectedRules": ["r1", "r2", "r1"],
            },
            {
                "type": "model_change",
                "id": "m4",
                "parentId": "m3",
                "timestamp": "2026-01-01T00:00:06.000Z",
                "model": "anthropic/claude",
                "role": "smol",
            },
            {
                "type": "title_change",
                "id": "m5",
                "parentId": "m4",
                "timestamp": "2026-01-01T00:00:07.000Z",
                "title": "Planned",
            },
            {"type": "brand_new_type", "id": "m6", "parentId": "m5", "timestamp": "2026-01-01T00:00:08.000Z"},
        ],
    )
    session = load_session(path)
    assert session.dialect == "omp" and session.name is None  # (omp names a file by its slot, or header)
    context = build_session_context(session)
    assert context.model == {"provider": "anthropic", "modelId": "claude"}  # (the last change's role: smol)
    assert build_session_context(session, "m3").model == {"provider": "openai", "modelId": "gpt-4o"}
    assert (context.mode, context.injected_rules) == ("plan", ["r1", "r2"])
    assert session.entries[-1]["type"] == "brand_new_type", "unknown entry types are kept"


def test_omp_blob_references_resolve_lazily(tmp_path: Path) -> None:
    raw = b"\x89PNG fake image bytes"
    digest = hashlib.sha256(raw).hexdigest()
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / digest).write_bytes(raw)
    store = BlobStore(tmp_path / "blobs")
    block = {"type": "image", "data": f"blob:sha256:{digest}", "mimeType": "image/png"}
    assert base64.b64decode(store.image_base64(block)) == raw
    assert store.read("blob:sha256:../../etc/passwd") is None
    assert store.read(f"blob:sha256:{'0' * 64}") is None


def test_python_port_dialect(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "op.jsonl",
        [
            {"type": "session_header", "id": "port", "timestamp": 1767225600.5, "cwd": "/proj"},
            {
                "type": "message",
                "id": "a1",
                "parent_id": None,
                "timestamp": 1767225601.0,
                "message": {"role": "user", "content": "q1"},
            },
            {
                "type": "message",
                "id": "a2",
                "parent_id": "a1",
                "timestamp": 1767225602.0,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "r1"}],
                    "provider": "p",
                    "model": "m",
                },
            },
            {
                "type": "compaction",
                "id": "a3",
                "parent_id": "a2",
                "timestamp": 1767225603.0,
                "summary": "S",
                "first_kept_entry_id": "a2",
                "tokens_before": 1200,
            },
            {
                "type": "message",
                "id": "a4",
                "parent_id": "a3",
                "timestamp": 1767225604.0,
                "message": {"role": "user", "content": "q2"},
            },
            {"type": "leaf", "id": "a5", "parent_id": "a4", "timestamp": 1767225605.0, "target_id": "a2"},
            {
                "type": "label",
                "id": "a6",
                "parent_id": "a5",
                "timestamp": 1767225606.0,
                "target_id": "a1",
                "label": "L",
            },
            {"type": "leaf", "id": "a7", "parent_id": "a6", "timestamp": 1767225607.0, "target_id": "a4"},
        ],
    )
    session = read_session(path)
    assert isinstance(session, Session) and session.dialect == "operator"
    assert session.header["timestamp"] == "2026-01-01T00:00:00.500Z"
    assert session.leaf_id == "a4" and session.tree.labels == {"a1": "L"}
    context = build_session_context(session)
    assert [(m.role, m.text) for m in context.messages] == [
        ("compactionSummary", "S"),
        ("assistant", "r1"),
        ("user", "q2"),
    ]
    assert not session.migrations, "the port's own format is never re-shaped into pi's"
    set_label(path, "a2", "mine")
    written = orjson.loads(path.read_bytes().splitlines()[-1])
    assert written["target_id"] == "a2" and isinstance(written["timestamp"], float)
    assert load_session(path).tree.labels == {"a1": "L", "a2": "mine"}


def test_writes_keep_file_mode(tmp_path: Path) -> None:
    path = _write(tmp_path / "v1.jsonl", V1)
    os.chmod(path, 0o600)
    persist_migration(load_session(path))
    assert path.stat().st_mode & 0o777 == 0o600


def test_writes_keep_extended_attributes(tmp_path: Path) -> None:
    """The rewrite is a new file renamed over the old one: owner, group and mode were carried
    over, extended attributes (a file manager's tags and comments, ACLs) were lost."""
    path = _write(tmp_path / "v1.jsonl", V1)
    try:
        os.setxattr(path, "user.xdg.comment", b"keep this session")
    except (AttributeError, OSError) as error:
        pytest.skip(f"no user extended attributes here: {error}")
    persist_migration(load_session(path))
    assert load_session(path).disk_version == 3
    assert os.getxattr(path, "user.xdg.comment") == b"keep this session"


def test_a_session_with_a_long_file_name_can_be_rewritten(tmp_path: Path) -> None:
    """The temp file is named after the session plus ~35 bytes: past 220 bytes that is over the
    255-byte name limit, and a label or name on an old session failed ("File name too long")."""
    path = _write(tmp_path / ("é" * 110 + "-long.jsonl"), V1)  # 236 bytes
    set_label(path, load_session(path).entries[0]["id"], "start")
    assert load_session(path).tree.labels
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name], "no temp file left"


def test_explicit_writes_on_an_old_session_persist_its_migration_first(tmp_path: Path) -> None:
    """pi rewrites a v1 file on open before appending; a label or name does the same here."""
    path = _write(tmp_path / "v1.jsonl", V1)
    ids = [e["id"] for e in load_session(path).entries]
    set_label(path, ids[0], "start")
    session = load_session(path)
    assert session.disk_version == 3 and not session.needs_migration
    assert [e["id"] for e in session.entries][: len(ids)] == ids
    assert session.tree.labels == {ids[0]: "start"}
    assert rename_session(path, "Old one") == "session_info"
    assert load_session(path).name == "Old one"


V2 = [
    {"type": "session", "version": 2, "id": "two", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
    {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
     "message": {"role": "user", "content": "one"}},
    {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2025-01-01T00:00:02.000Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "two"}]}},
]  # fmt: skip
ODD_LINES = {  # each a line pi's rewrite keeps (it writes back whatever JSON.parse read)
    "duplicate id": {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-01T00:00:03.000Z",
                     "message": {"role": "user", "content": "the earlier u1 is dropped"}},
    "no id": {"type": "custom", "parentId": "a1", "customType": "note", "data": {"keep": "me"}},
    "no type": {"parentId": "a1", "note": "keep me"},
    "second header": {"type": "session", "version": 2, "id": "again", "timestamp": "2025-01-01T00:00:00.000Z"},
    "not an object": ["keep", "me"],
}  # fmt: skip


@pytest.mark.parametrize(
    ("old", "odd"),
    [(V2, odd) for odd in sorted(ODD_LINES)]  # (v1's migration gives every entry a new id: no duplicates, no id-less)
    + [(V1, odd) for odd in ("no type", "second header", "not an object")],
    ids=lambda value: value if isinstance(value, str) else f"v{value[0].get('version', 1)}",
)
def test_an_upgrade_that_would_drop_a_line_pi_keeps_is_refused(tmp_path: Path, old: list, odd: str) -> None:
    """Labelling or naming an old session writes it in the current format first; that rewrite
    wrote only the entries placed in the tree, so the odd line was gone from the file (pi's own
    rewrite keeps it).  Refused, naming why, and nothing written."""
    path = _write(tmp_path / "old.jsonl", [*old[:2], ODD_LINES[odd], *old[2:]])
    before = path.read_bytes()
    session = load_session(path)
    assert session.needs_migration
    for write in (
        lambda: set_label(path, session.entries[0]["id"], "a label"),
        lambda: rename_session(path, "a name"),
        lambda: persist_migration(load_session(path)),
    ):
        with pytest.raises(SessionError, match=r"would drop 1 line\(s\) pi keeps \(line \d: "):
            write()
        assert path.read_bytes() == before


def test_an_upgrade_drops_only_lines_pi_drops_too(tmp_path: Path) -> None:
    """A line `JSON.parse` refuses (and a blank one) pi's rewrite drops as well: not refused."""
    path = _write(tmp_path / "old.jsonl", V2)
    path.write_bytes(path.read_bytes() + b"\n{not json\n")
    os.utime(path, (AT_REST, AT_REST))
    assert rename_session(path, "named") == "session_info"
    assert b"not json" not in path.read_bytes() and load_session(path).name == "named"


def test_a_symlinked_session_stays_a_link_when_rewritten(tmp_path: Path) -> None:
    target = _write(tmp_path / "real.jsonl", V1)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    persist_migration(load_session(link))
    assert link.is_symlink()
    assert load_session(target).disk_version == 3


def _omp_cleared(compaction_before: bool) -> list[dict]:
    """An oh-my-pi session where `/clear` wrote a `reset_boundary` after a first exchange
    (with a compaction before it, or after it), then a second exchange."""
    entries: list[dict] = [
        {"type": "session", "version": 3, "id": "c1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/p"},
        {"type": "message", "id": "u1", "message": {"role": "user", "content": "old question"}},
        {"type": "message", "id": "r1", "message": {"role": "assistant", "content": [{"type": "text", "text": "old"}]}},
        {"type": "reset_boundary", "id": "cl"},
        {"type": "message", "id": "u2", "message": {"role": "user", "content": "new question"}},
        {"type": "message", "id": "r2", "message": {"role": "assistant", "content": [{"type": "text", "text": "new"}]}},
    ]
    compaction = {"type": "compaction", "id": "k1", "summary": "S", "firstKeptEntryId": "u1", "tokensBefore": 9}
    entries.insert(3 if compaction_before else 4, compaction)
    for index, entry in enumerate(entries[1:], start=1):
        entry["parentId"] = entries[index - 1].get("id") if index > 1 else None
        entry["timestamp"] = f"2026-03-01T10:00:0{index}.000Z"
    return entries


def test_omp_clear_starts_the_resumed_context_after_its_boundary(tmp_path: Path) -> None:
    """oh-my-pi's `/clear` appends a `reset_boundary`; resumed, omp sends only what follows
    the last one (a compaction before it is cleared too; one after it wins, as omp's
    buildSessionContext).  The preview, `show` and export must not show the cleared turns."""
    from seance.core.pathtotals import PathTotals

    cleared = load_session(_write(tmp_path / "cleared.jsonl", _omp_cleared(compaction_before=True)))
    context = build_session_context(cleared)
    assert [m.text for m in context.messages] == ["new question", "new"]
    assert context.compaction is None and context.cleared_at == "cl"
    assert [m.text for m in build_session_context(cleared, tail=1).messages] == ["new"]
    assert PathTotals.of(cleared.tree).context_chars(context) == len("new question") + len("new")
    assert [m.text for m in build_session_context(cleared, "k1").messages] == ["S", "old question", "old"]
    compacted = load_session(_write(tmp_path / "compacted.jsonl", _omp_cleared(compaction_before=False)))
    context = build_session_context(compacted)
    assert [m.text for m in context.messages] == ["S", "old question", "old", "new question", "new"]
    assert context.cleared_at is None


def test_omp_model_change_is_not_overridden_by_a_later_reply_s_model(tmp_path: Path) -> None:
    """oh-my-pi resumes with the model of its last default `model_change` ("provider/id"):
    a later reply's model (a retry fallback, a downgrade) does not replace it (omp #849).
    pi's `model_change` (provider, modelId) is still overridden by a later reply, as in pi."""
    reply = {"role": "assistant", "content": [{"type": "text", "text": "a"}], "provider": "p", "model": "fallback"}
    change = {"type": "model_change", "id": "m1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"}
    lines = [
        V3[0],
        change,
        {**V3[1], "parentId": "m1"},
        {**V3[2], "message": reply},
        {"type": "thinking_level_change", "id": "t1", "parentId": "a2", "thinkingLevel": "high"},
        {**V3[1], "id": "a3", "parentId": "t1", "message": {"role": "user", "content": "again"}},
        {**V3[2], "id": "a4", "parentId": "a3", "message": reply},
    ]
    omp = load_session(_write(tmp_path / "omp.jsonl", [*lines[:1], {**change, "model": "anthropic/opus"}, *lines[2:]]))
    for context in (build_session_context(omp), build_session_context(omp, tail=1), build_session_context(omp, "a2")):
        assert context.model == {"provider": "anthropic", "modelId": "opus"}
    # omp's model picker switches the session's model as role "temporary": omp resumes with it;
    # after a retry's "fallback" change, with the default again
    temporary = {**change, "id": "m2", "parentId": "a4", "model": "openai/gpt-5", "role": "temporary"}
    fallback = {**change, "id": "m3", "parentId": "m2", "model": "p/fallback", "role": "fallback"}
    lines_after = [*lines[:1], {**change, "model": "anthropic/opus"}, *lines[2:], temporary, fallback]
    switched = load_session(_write(tmp_path / "switched.jsonl", lines_after))
    assert build_session_context(switched, "m2").model == {"provider": "openai", "modelId": "gpt-5"}
    assert build_session_context(switched, "m2", tail=1).model == {"provider": "openai", "modelId": "gpt-5"}
    assert build_session_context(switched).model == {"provider": "anthropic", "modelId": "opus"}
    pi_change = {**change, "provider": "x", "modelId": "y"}
    pi = load_session(_write(tmp_path / "pi.jsonl", [*lines[:1], pi_change, *lines[2:]]))
    assert build_session_context(pi).model == {"provider": "p", "modelId": "fallback"}
    assert build_session_context(pi, tail=1).model == {"provider": "p", "modelId": "fallback"}


def test_omp_retry_fallback_without_a_default_change_resumes_with_the_replies_model(tmp_path: Path) -> None:
    """An oh-my-pi session with no default `model_change` (an older omp's: its default was the
    replies' model) that switched to a role's model and then took a retry's "fallback": omp
    resumes with its default again (`getRestorableSessionModels`), which is the last reply's
    model (no explicit default: every reply's model counts), not the role's model left behind."""
    reply = {"role": "assistant", "content": [{"type": "text", "text": "a"}], "provider": "p", "model": "reply"}
    stamp = "2026-01-01T00:00:03.000Z"
    temporary = {"type": "model_change", "id": "m2", "parentId": "a2", "timestamp": stamp, "model": "openai/gpt-5"}
    fallback = {"type": "model_change", "id": "m3", "parentId": "m2", "timestamp": stamp, "model": "x/fb"}
    lines = [
        V3[0],
        V3[1],
        {**V3[2], "message": reply},
        {**temporary, "role": "temporary"},
        {**fallback, "role": "fallback"},
    ]
    session = load_session(_write(tmp_path / "omp.jsonl", lines))
    assert build_session_context(session, "m2").model == {"provider": "openai", "modelId": "gpt-5"}
    for context in (build_session_context(session), build_session_context(session, tail=1)):
        assert context.model == {"provider": "p", "modelId": "reply"}
    no_reply = load_session(_write(tmp_path / "no_reply.jsonl", [*lines[:2], {**lines[3], "parentId": "a1"}, lines[4]]))
    assert build_session_context(no_reply).model is None  # (omp: no session model, its settings' default)


def test_renaming_an_omp_session_without_a_title_slot_sets_its_header_title(tmp_path: Path) -> None:
    """oh-my-pi knows no `session_info`: a file from before its title slot takes its name from
    the header's `title` (as omp wrote it then, and reads it still).  A rename rewrites that
    line only; every other byte stays; clearing leaves an empty title, still omp's file."""
    header = {"type": "session", "version": 3, "id": "o1", "title": "Auto title", "timestamp": V3[0]["timestamp"]}
    path = _write(tmp_path / "omp.jsonl", [{**header, "cwd": "/p"}, *V3[1:]])
    rest = path.read_bytes().split(b"\n", 1)[1]
    assert rename_session(path, "  Chosen name ") == "header-title"
    first, after = path.read_bytes().split(b"\n", 1)
    assert after == rest and orjson.loads(first)["title"] == "Chosen name"
    session = load_session(path)
    assert (session.name, session.dialect, session.header["cwd"]) == ("Chosen name", "omp", "/p")
    assert all(entry["type"] != "session_info" for entry in session.entries)
    os.utime(path, (AT_REST, AT_REST))
    assert rename_session(path, "") == "header-title"
    cleared = load_session(path)
    assert (cleared.name, cleared.dialect, path.read_bytes().split(b"\n", 1)[1]) == (None, "omp", rest)


def test_renaming_an_omp_header_that_would_not_read_back_the_same_is_refused(tmp_path: Path) -> None:
    """The header-title rename writes the header line anew: a header holding what seance's
    reader normalises (a lone surrogate's escape, which JSON.parse keeps and omp writes back;
    bytes that are not UTF-8) would come back changed, the session's cwd with it.  Refused,
    the file untouched."""
    rest = orjson.dumps(V3[1]) + b"\n"
    odd_headers = [
        b'{"type":"session","version":3,"id":"o1","title":"T","timestamp":"x","cwd":"/p/\\udc80x"}',
        b'{"type":"session","version":3,"id":"o1","title":"T","timestamp":"x","cwd":"/p/\xff"}',
    ]
    for number, header in enumerate(odd_headers):
        path = tmp_path / f"omp{number}.jsonl"
        path.write_bytes(header + b"\n" + rest)
        os.utime(path, (AT_REST, AT_REST))
        assert load_session(path).dialect == "omp"
        with pytest.raises(SessionError, match="refusing to rewrite it"):
            rename_session(path, "New name")
        assert path.read_bytes() == header + b"\n" + rest, number


def test_omp_thinking_level_null_is_off(tmp_path: Path) -> None:
    """oh-my-pi writes `"thinkingLevel": null` for a model without thinking levels and
    resumes with "off" (`?? "off"`): the context, `show` and the tree's row say "off"."""
    from seance.core.summary import summarize

    change = {"type": "thinking_level_change", "id": "t1", "parentId": "a2", "timestamp": "2026-01-01T00:00:03.000Z"}
    omp_header = {**V3[0], "title": "t"}  # (an oh-my-pi file: see `session._omp_header`)
    lines = [omp_header, *V3[1:], {**change, "thinkingLevel": None, "configured": None}]
    session = load_session(_write(tmp_path / "omp.jsonl", lines))
    assert session.dialect == "omp" and build_session_context(session).thinking_level == "off"
    assert summarize(session.tree.by_id["t1"]).plain() == "[thinking: off]"


def test_pi_s_null_thinking_level_stays_null_as_pi_reads_it(tmp_path: Path, capsys) -> None:
    """pi's buildSessionContext takes a `thinking_level_change`'s level as it is: null stays
    null (`show --json` is pi's context).  Only oh-my-pi reads it as "off"."""
    import json

    from conftest import node_oracle_available, run_node

    from seance.cli import main

    change = {"type": "thinking_level_change", "id": "t1", "parentId": "a2", "timestamp": "2026-01-01T00:00:03.000Z"}
    path = _write(tmp_path / "pi.jsonl", [*V3, {**change, "thinkingLevel": None}])
    session = load_session(path)
    assert session.dialect == "pi" and build_session_context(session).thinking_level is None
    assert main(["show", str(path), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["thinkingLevel"] is None
    if node_oracle_available():
        (pi,) = json.loads(run_node("context_of.mjs", str(path)))
        assert pi["thinkingLevel"] is None
