"""core.resume: resume keys, fork into a project, terminal breadcrumbs, continue and switch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from seance.core.catalog import Catalog
from seance.core.model import SessionSummary
from seance.core.resume import (
    AmbiguousKey,
    _interactive_root,
    breadcrumb_path,
    bucket_name,
    continue_session,
    fork_into,
    read_breadcrumb,
    resolve,
    resolve_name,
    resume_command,
    session_file_name,
    switch_session,
    terminal_id,
    write_breadcrumb,
)
from seance.core.session import SessionError, load_session
from seance.core.writes import FileChangedError


def summary(path: str, sid: str, cwd: str, modified_ms: float, mtime_ns: int = 0) -> SessionSummary:
    return SessionSummary(
        path=path,
        id=sid,
        cwd=cwd,
        name=None,
        parent_session=None,
        created=None,
        modified="",
        modified_ms=modified_ms,
        message_count=0,
        first_message="(no messages)",
        mtime_ns=mtime_ns,
    )


def lines(*objects: dict) -> bytes:
    return b"".join(orjson.dumps(obj) + b"\n" for obj in objects)


def write_session(
    root: Path,
    cwd: str,
    sid: str,
    *,
    version: int | None = 3,
    extra: list[dict] | None = None,
    stamp: str = "2025-01-01T00:00:00.000Z",
) -> Path:
    header = {"type": "session", "id": sid, "timestamp": stamp, "cwd": cwd}
    if version is not None:
        header["version"] = version
    if extra is None:
        extra = [
            {
                "type": "message",
                "id": "u1",
                "parentId": None,
                "timestamp": stamp,
                "message": {"role": "user", "content": f"hello from {sid}"},
            },
            {
                "type": "message",
                "id": "a1",
                "parentId": "u1",
                "timestamp": stamp,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            },
        ]
    bucket = root / bucket_name(cwd)
    bucket.mkdir(parents=True, exist_ok=True)
    path = bucket / session_file_name(stamp, sid)
    path.write_bytes(lines(header, *extra))
    if version != 3:  # an old-format file is at rest: no agent writes it (a rewrite waits for quiet)
        os.utime(path, (1_735_689_600, 1_735_689_600))
    return path


# ---------------------------------------------------------------------------- resolve

CURRENT = "/work/proj"


def test_resolve_prefix_rules_and_ambiguity() -> None:
    here = [
        summary("/s/--w--/2025-01-02T00-00-00-000Z_abcd-1.jsonl", "abcd-1", CURRENT, 10),
        summary("/s/--w--/2025-01-03T00-00-00-000Z_abce-2.jsonl", "abce-2", CURRENT, 30),
    ]
    there = [summary("/s/--o--/2025-01-04T00-00-00-000Z_abcf-3.jsonl", "abcf-3", "/other", 99)]
    everything = here + there
    with pytest.raises(AmbiguousKey) as ambiguous:  # two in the current project: never pick one
        resolve("ABC", here, everything, CURRENT)
    assert [found.id for found in ambiguous.value.candidates] == ["abce-2", "abcd-1"]  # newest first
    assert "2 sessions" in str(ambiguous.value)
    found = resolve("abce", here, everything, CURRENT)
    assert found is not None and found.summary.id == "abce-2" and not found.other_project
    found = resolve("abcf", here, everything, CURRENT)
    assert found is not None and found.summary.id == "abcf-3" and found.other_project
    found = resolve("2025-01-02", here, everything, CURRENT)  # a file-name prefix
    assert found is not None and found.summary.id == "abcd-1"
    assert resolve("zzz", here, everything, CURRENT) is None
    with pytest.raises(SessionError, match="empty"):
        resolve("  ", here, everything, CURRENT)


def test_a_whole_id_wins_over_the_ids_it_prefixes() -> None:
    items = [summary("/s/x_ab.jsonl", "ab", CURRENT, 1), summary("/s/y_abc.jsonl", "abc", CURRENT, 2)]
    found = resolve("AB", items, items, CURRENT)
    assert found is not None and found.summary.id == "ab"
    with pytest.raises(AmbiguousKey):
        resolve("a", items, items, CURRENT)


def test_resolve_name_exact_then_unique_prefix() -> None:
    items = [
        replace(summary("/s/x_1.jsonl", "1", CURRENT, 1), name="auth-refactor"),
        replace(summary("/s/x_2.jsonl", "2", CURRENT, 2), name="auth-refactor part 2"),
        replace(summary("/s/x_3.jsonl", "3", "/other", 3), name="Billing fix"),
    ]
    found = resolve_name("Auth-Refactor", items[:2], items, CURRENT)  # exact beats the prefix it is of
    assert found is not None and found.summary.id == "1"
    with pytest.raises(AmbiguousKey):
        resolve_name("auth", items[:2], items, CURRENT)
    found = resolve_name("billing", items[:2], items, CURRENT)
    assert found is not None and found.summary.id == "3" and found.other_project
    assert resolve_name("nothing", items[:2], items, CURRENT) is None


def test_resolve_id_after_timestamp_in_file_name() -> None:
    # A custom header id that differs from the file name's id is still found by either.
    only = [summary("/s/--w--/2025-01-02T00-00-00-000Z_feed-beef.jsonl", "custom-id", CURRENT, 1)]
    assert resolve("feed", only, only, CURRENT) is not None
    assert resolve("custom", only, only, CURRENT) is not None
    assert resolve("beef", only, only, CURRENT) is None


def test_resolve_same_project_through_a_symlink(tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    items = [summary("/s/x_k1.jsonl", "k1", str(real), 1)]
    found = resolve("k1", [], items, str(tmp_path / "alias") + "/")
    assert found is not None and not found.other_project


def test_resolve_with_the_real_catalog(tmp_path) -> None:
    root = tmp_path / "sessions"
    write_session(root, "/proj/a", "1111aaaa-0000", stamp="2025-01-01T00:00:00.000Z")
    newer = write_session(root, "/proj/b", "1111bbbb-0000", stamp="2025-01-02T00:00:00.000Z")
    os.utime(newer, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))
    catalog = Catalog([root])
    found = resolve("1111", catalog.quick("/proj/a"), catalog.quick(), "/proj/a")
    assert found is not None and found.summary.id == "1111aaaa-0000" and not found.other_project
    found = resolve("1111b", catalog.quick("/proj/c"), catalog.quick(), "/proj/c")
    assert found is not None and found.summary.id == "1111bbbb-0000" and found.other_project
    with pytest.raises(AmbiguousKey):  # one in each other project: neither is picked
        resolve("1111", catalog.quick("/proj/c"), catalog.quick(), "/proj/c")


# ---------------------------------------------------------------------------- fork


@pytest.mark.parametrize(
    ("cwd", "bucket"),
    [
        ("/Users/badlogic/workspaces/pi-mono", "--Users-badlogic-workspaces-pi-mono--"),
        ("C:\\Users\\x\\proj", "--C--Users-x-proj--"),
        ("\\\\server\\share", "---server-share--"),
        ("relative/dir", "--relative-dir--"),
    ],
)
def test_bucket_name(cwd, bucket) -> None:
    assert bucket_name(cwd) == bucket


def test_fork_into_copies_with_new_identity(tmp_path) -> None:
    root = tmp_path / "sessions"
    source = write_session(root, "/proj/other", "src-id")
    before = source.read_bytes()
    target = fork_into(source, "/proj/here", root)
    assert source.read_bytes() == before  # the source is never touched
    assert target.parent == root / "--proj-here--"
    forked = load_session(target)
    assert forked.id != "src-id" and target.name.endswith(f"_{forked.id}.jsonl")
    assert forked.header["parentSession"] == str(source)
    assert forked.cwd == "/proj/here"
    assert forked.header["version"] == 3
    assert [entry["id"] for entry in forked.entries] == ["u1", "a1"]
    assert forked.entries == load_session(source).entries


def test_fork_migrates_a_v1_source_in_memory_only(tmp_path) -> None:
    root = tmp_path / "sessions"
    entries = [
        {"type": "message", "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "q"}},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "hookMessage", "content": "h"},
        },
    ]
    source = write_session(root, "/old", "v1-id", version=None, extra=entries)
    before = source.read_bytes()
    forked = load_session(fork_into(source, "/new", root))
    assert source.read_bytes() == before
    assert not forked.needs_migration and forked.header["version"] == 3
    assert forked.entries[1]["parentId"] == forked.entries[0]["id"]
    assert forked.entries[1]["message"]["role"] == "custom"


def test_fork_of_an_omp_file_keeps_its_title_in_the_header(tmp_path) -> None:
    from seance.core.writes import title_slot_bytes

    root = tmp_path / "sessions"
    source = write_session(root, "/omp", "omp-id")
    source.write_bytes(title_slot_bytes("My omp title", "2025-01-01T00:00:00.000Z") + source.read_bytes())
    forked = load_session(fork_into(source, "/pi", root))
    assert forked.title_slot is None
    assert forked.header["title"] == "My omp title"
    assert forked.name == "My omp title"


def test_fork_of_an_omp_file_whose_name_was_cleared_has_no_name(tmp_path) -> None:
    """omp writes its title into the header too and names a slot file by the slot alone: once
    the slot is cleared (a rename to ""), the header's title is stale; the fork, which has no
    slot, must not take it up as its name (omp's forkFrom copies the folded, empty title)."""
    import orjson

    from seance.core.writes import title_slot_bytes

    root = tmp_path / "sessions"
    source = write_session(root, "/omp", "omp-id")
    header, rest = source.read_bytes().split(b"\n", 1)
    titled = orjson.dumps({**orjson.loads(header), "title": "Stale", "titleSource": "auto"})
    source.write_bytes(title_slot_bytes("", "2025-01-01T00:00:00.000Z") + titled + b"\n" + rest)
    assert load_session(source).name is None
    forked = load_session(fork_into(source, "/omp", root))
    assert "title" not in forked.header and forked.name is None


def test_fork_of_a_broken_file_is_an_error(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(SessionError, match="not a session"):
        fork_into(bad, "/x", tmp_path / "sessions")
    assert not (tmp_path / "sessions").exists()


# ---------------------------------------------------------------------------- breadcrumbs


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, "/dev/pts/3", "pts-3"),
        ({"TMUX_PANE": "%3"}, "/dev/pts/3", "pts-3"),  # the tty wins
        ({"TMUX_PANE": "%3", "KITTY_WINDOW_ID": "7"}, "", "tmux-%3"),
        ({"KITTY_WINDOW_ID": "7"}, "", "kitty-7"),
        ({"TERM_SESSION_ID": "w0t0p0:ABC/DEF"}, "", "apple-w0t0p0:ABC-DEF"),
        ({"WT_SESSION": "f00"}, "", "wt-f00"),
        ({"ZELLIJ_PANE_ID": "2", "ZELLIJ_SESSION_NAME": "dev"}, "", "zellij-dev-2"),
        ({}, "", None),
    ],
)
def test_terminal_id(env, tty, expected) -> None:
    assert terminal_id(env, tty) == expected


def test_breadcrumb_round_trip_and_validity(tmp_path) -> None:
    agent = tmp_path / "agent"
    session = write_session(tmp_path / "sessions", "/proj", "crumb-id")
    crumb = write_breadcrumb(agent, "/proj", session, terminal="pts-9")
    assert crumb == breadcrumb_path(agent, "pts-9")
    assert crumb.read_text() == f"/proj\n{session}\n"
    assert read_breadcrumb(agent, "/proj", terminal="pts-9") == session
    assert read_breadcrumb(agent, "/proj/", terminal="pts-9") == session
    assert read_breadcrumb(agent, "/elsewhere", terminal="pts-9") is None  # cwd must match
    assert read_breadcrumb(agent, "/proj", terminal="pts-8") is None  # another terminal
    session.unlink()
    assert read_breadcrumb(agent, "/proj", terminal="pts-9") is None  # the file must exist


def test_a_breadcrumb_at_a_subagent_s_transcript_continues_its_session(tmp_path) -> None:
    """oh-my-pi before its fix wrote the terminal's breadcrumb when a subagent opened its own
    transcript (`X/Alpha.jsonl`, nested `X/Alpha/Alpha.Gamma.jsonl`); omp's `--continue`
    walks such a crumb up to the session whose folder holds it, and so does `continue`."""
    agent = tmp_path / "agent"
    session = write_session(tmp_path / "sessions", "/proj", "parent-id")
    folder = session.with_suffix("")
    nested = write_session(folder / "Alpha", "/proj", "gamma-id")
    nested = nested.rename(folder / "Alpha" / "Alpha.Gamma.jsonl")
    (folder / "Alpha.jsonl").write_bytes(nested.read_bytes())
    write_breadcrumb(agent, "/proj", nested, terminal="pts-5")
    assert read_breadcrumb(agent, "/proj", terminal="pts-5") == session
    assert continue_session("/proj", [], [agent], terminal="pts-5") == session
    loose = write_session(tmp_path / "elsewhere" / "X", "/proj", "loose-id")  # (no X.jsonl beside X/)
    write_breadcrumb(agent, "/proj", loose, terminal="pts-6")
    assert read_breadcrumb(agent, "/proj", terminal="pts-6") == loose


def test_a_breadcrumb_at_a_file_directly_in_the_root_is_that_file(tmp_path) -> None:
    """A crumb naming `/x.jsonl` has no folder above to walk up to (`/` has no name):
    the file is its own session, as omp's walk finds no `/.jsonl`; no `ValueError`."""
    assert _interactive_root(Path("/x.jsonl")) == Path("/x.jsonl")
    in_root = next((p for p in sorted(Path("/").iterdir()) if p.is_file() and not p.is_symlink()), None)
    if in_root is not None:  # (through the reader too, where `/` holds a regular file)
        crumb = breadcrumb_path(tmp_path / "agent", "pts-3")
        crumb.parent.mkdir(parents=True)
        crumb.write_text(f"/proj\n{in_root}\n")
        assert read_breadcrumb(tmp_path / "agent", "/proj", terminal="pts-3") == in_root


def test_after_omp_s_new_that_was_never_written_continue_starts_afresh(tmp_path) -> None:
    """oh-my-pi's `/new` writes the breadcrumb at once, its third line `fresh`, before the new
    session has a file; quit then, and `omp -c` starts a new session (it must not resume the
    conversation `/new` left).  `continue` finds nothing to continue, not that conversation."""
    agent = tmp_path / "agent"
    root = tmp_path / "sessions"
    before_new = write_session(root, "/proj", "before-new")
    current = Catalog([root]).quick("/proj")
    crumb = breadcrumb_path(agent, "pts-7")
    crumb.parent.mkdir(parents=True)
    crumb.write_text(f"/proj\n{root / 'never-written.jsonl'}\nfresh\n")
    assert continue_session("/proj", current, [agent], terminal="pts-7") is None
    crumb.write_text(f"/proj\n{before_new}\nfresh\n")  # (materialised since: resumed as any crumb)
    assert continue_session("/proj", current, [agent], terminal="pts-7") == before_new
    crumb.write_text(f"/proj\n{root / 'gone.jsonl'}\n")  # (a stale crumb, not fresh: the newest here)
    assert continue_session("/proj", current, [agent], terminal="pts-7") == before_new


def test_breadcrumb_write_is_best_effort(tmp_path) -> None:
    blocker = tmp_path / "agent"
    blocker.write_text("a file where a directory should be")
    assert write_breadcrumb(blocker, "/p", tmp_path / "s.jsonl", terminal="pts-1") is None


def test_continue_prefers_the_breadcrumb_then_newest_mtime(tmp_path) -> None:
    root, agent = tmp_path / "sessions", tmp_path / "agent"
    older = write_session(root, "/proj", "older")
    newer = write_session(root, "/proj", "newer", stamp="2025-02-01T00:00:00.000Z")
    os.utime(older, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    os.utime(newer, ns=(1_500_000_000_000_000_000, 1_500_000_000_000_000_000))
    current = Catalog([root]).quick("/proj")
    assert continue_session("/proj", current, [agent], terminal="pts-1") == newer
    write_breadcrumb(agent, "/proj", older, terminal="pts-1")
    assert continue_session("/proj", current, [agent], terminal="pts-1") == older
    assert continue_session("/proj", current, [agent], terminal="pts-2") == newer
    assert continue_session("/none", [], [agent], terminal="pts-1") is None


# ---------------------------------------------------------------------------- switch


def test_switch_loads_and_writes_the_breadcrumb(tmp_path) -> None:
    session = write_session(tmp_path / "sessions", "/proj", "sw-id")
    before = session.read_bytes()
    loaded = switch_session(session, tmp_path / "agent", terminal="pts-4")
    assert loaded.id == "sw-id"
    assert session.read_bytes() == before  # a current file is not rewritten
    assert read_breadcrumb(tmp_path / "agent", "/proj", terminal="pts-4") == session


def test_switch_persists_a_pending_migration(tmp_path) -> None:
    entries = [
        {"type": "message", "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "q"}}
    ]
    session = write_session(tmp_path / "sessions", "/proj", "old-id", version=None, extra=entries)
    loaded = switch_session(session, None)
    assert not loaded.needs_migration
    on_disk = [orjson.loads(line) for line in session.read_bytes().splitlines()]
    assert on_disk[0]["version"] == 3 and on_disk[1]["id"] == loaded.entries[0]["id"]


def test_switch_migration_refused_when_the_file_changes(tmp_path, monkeypatch) -> None:
    from seance.core import safefile

    entries = [
        {"type": "message", "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "q"}}
    ]
    session = write_session(tmp_path / "sessions", "/proj", "race-id", version=None, extra=entries)
    real_check = safefile._check_unchanged

    def append_then_check(path, stamp, **kwargs):
        with open(path, "ab") as handle:  # an agent appends between our read and our write
            handle.write(b'{"type":"message","timestamp":"x","message":{"role":"user","content":"late"}}\n')
        return real_check(path, stamp, **kwargs)

    monkeypatch.setattr(safefile, "_check_unchanged", append_then_check)
    with pytest.raises(FileChangedError):
        switch_session(session, None)
    assert b"late" in session.read_bytes() and b'"version"' not in session.read_bytes()


def test_switch_starts_a_missing_or_empty_file(tmp_path) -> None:
    missing = tmp_path / "new" / "bucket" / "fresh.jsonl"
    loaded = switch_session(missing, None, cwd="/proj")
    assert missing.exists() and loaded.cwd == "/proj" and loaded.entries == []
    assert loaded.header["version"] == 3
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert switch_session(empty, None, cwd="/proj").cwd == "/proj"


def test_switch_keeps_invalid_content_in_the_trash(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"hello": "not a header"}\n')
    loaded = switch_session(junk, None, cwd="/proj")
    assert loaded.cwd == "/proj"
    trashed = tmp_path / "data" / "Trash" / "files" / "junk.jsonl"
    assert trashed.read_text() == '{"hello": "not a header"}\n'


def test_switch_refuses_a_directory(tmp_path) -> None:
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    with pytest.raises(SessionError, match="cannot be used"):
        switch_session(folder, None)


def _racing_read(monkeypatch, target: Path, reason: str, other: bytes) -> None:
    """`read_session` sees `reason`; another process writes `other` at `target` right then."""
    from seance.core import resume
    from seance.core.session import NotASession, read_session

    calls = []

    def read(path):
        if not calls:
            calls.append(path)
            target.write_bytes(other)
            return NotASession(Path(path), reason)
        return read_session(path)

    monkeypatch.setattr(resume, "read_session", read)


OTHER = lines(
    {
        "type": "session",
        "version": 3,
        "id": "other-process",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/elsewhere",
    }
)


def test_switch_never_overwrites_a_file_created_meanwhile(tmp_path, monkeypatch) -> None:
    target = tmp_path / "fresh.jsonl"
    _racing_read(monkeypatch, target, "no such file", OTHER)
    loaded = switch_session(target, None, cwd="/proj")
    assert loaded.id == "other-process" and target.read_bytes() == OTHER


def test_switch_never_overwrites_an_empty_file_filled_meanwhile(tmp_path, monkeypatch) -> None:
    target = tmp_path / "empty.jsonl"
    target.write_bytes(b"")
    _racing_read(monkeypatch, target, "empty file", OTHER)
    loaded = switch_session(target, None, cwd="/proj")
    assert loaded.id == "other-process" and target.read_bytes() == OTHER


def test_switch_refuses_when_an_empty_file_is_written_during_the_start(tmp_path, monkeypatch) -> None:
    from seance.core import safefile

    target = tmp_path / "empty.jsonl"
    target.write_bytes(b"\n")
    real_check = safefile._check_unchanged

    def fill_then_check(path, stamp, **kwargs):
        with open(path, "ab") as handle:  # the agent writes its header between our look and our rename
            handle.write(OTHER)
        return real_check(path, stamp, **kwargs)

    monkeypatch.setattr(safefile, "_check_unchanged", fill_then_check)
    with pytest.raises(FileChangedError):
        switch_session(target, None, cwd="/proj")
    assert target.read_bytes() == b"\n" + OTHER


def test_a_relative_header_cwd_is_never_this_project(tmp_path, monkeypatch) -> None:
    """resolve's `other_project` agrees with the catalog's `in_project` (one cwd rule)."""
    from seance.core.catalog import in_project

    monkeypatch.chdir(tmp_path)
    everything = [summary("/s/--x--/2025-01-02T00-00-00-000Z_rel-1.jsonl", "rel-1", ".", 10)]
    here = in_project(everything, str(tmp_path))
    assert here == []
    found = resolve("rel", here, everything, str(tmp_path))
    assert found is not None and found.other_project


def test_the_resume_command_pastes_back_to_the_exact_path_and_cwd(tmp_path: Path) -> None:
    """Each word of the copied command is one shell word, even with quotes, spaces and an ESC."""
    import subprocess

    cwd = str(tmp_path / "it's a \x1b[31mproject")
    path = str(tmp_path / "s $(touch pwned) \n.jsonl")
    for dialect, agent in (("pi", "pi --session"), ("omp", "omp --resume")):
        item = replace(summary(path, "id", cwd, 1), dialect=dialect)
        command = resume_command(item)
        assert agent in command and "\x1b" not in command and "\n" not in command
        words = command.replace(f" && {agent} ", " ").removeprefix("cd ")
        echoed = subprocess.run(
            ["bash", "-c", f"printf '%s\\0' {words}"], capture_output=True, check=True, cwd=tmp_path
        ).stdout
        assert echoed.split(b"\0")[:2] == [cwd.encode(), path.encode()]
    assert not (tmp_path / "pwned").exists()
