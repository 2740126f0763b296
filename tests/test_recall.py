"""Recall: the full-text index holds what the context preview shows (tool calls, results,
errors, bash output, summaries, thinking on request), and `seance ls --query` finds every
session that holds a word, as grep does."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from seance.cli import main
from seance.core.catalog import Catalog
from seance.core.fulltext import PIECE_HEAD, PIECE_TAIL, READ_BUDGET, TextCollector, bounded
from seance.core.search import search


def grep_files(root: Path, needle: str) -> set[str]:
    """The session files holding `needle`, as `grep -rlF` finds them (the oracle)."""
    done = subprocess.run(["grep", "-rlF", "--include=*.jsonl", needle, str(root)], capture_output=True, text=True)
    return {line for line in done.stdout.splitlines() if line}


def ls_query(root: Path, query: str, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """`seance ls --all --json --query` over every folder of `root` that holds sessions (a
    root is searched one level deep; the corpus nests deeper)."""
    folders = sorted({str(path.parent) for path in root.rglob("*.jsonl")})
    capsys.readouterr()
    main(["ls", "--all", "--json", *(f"--root={folder}" for folder in folders), "--query", query])
    return {item["path"] for item in json.loads(capsys.readouterr().out or "[]")}


@pytest.mark.parametrize(
    ("query", "needle"),
    [('"Cannot find module"', "Cannot find module"), ("u0_a360", "u0_a360"), ("shadow-realms", "shadow-realms")],
)
def test_the_issue_s_three_recall_cases_find_what_grep_finds(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str, needle: str
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(corpus, root)
    expected = grep_files(root, needle)
    assert len(expected) >= 3, f"the corpus changed: grep finds {sorted(expected)}"
    assert ls_query(root, query, capsys) == expected


def write(path: Path, *entries: dict) -> Path:
    header = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    path.parent.mkdir(parents=True, exist_ok=True)
    parent = None
    lines = [header]
    for number, entry in enumerate(entries):
        lines.append({"id": f"e{number}", "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", **entry})
        parent = f"e{number}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def message(role: str, content: object, **extra: object) -> dict:
    return {"type": "message", "message": {"role": role, "content": content, "timestamp": 1_767_225_601_000, **extra}}


@pytest.fixture
def fields_root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions" / "--p--"
    write(
        root / "tools.jsonl",
        message("user", "look around"),
        message(
            "assistant",
            [
                {"type": "thinking", "thinking": "maybe the quokka config is stale"},
                {"type": "toolCall", "id": "c1", "name": "grep", "arguments": {"pattern": "wombat", "path": "src"}},
            ],
        ),
        message("toolResult", [{"type": "text", "text": "src/a.py: wombat = 1"}], toolCallId="c1", isError=False),
        message("toolResult", [{"type": "text", "text": "Error: ENOENT platypus.json"}], toolCallId="c2", isError=True),
        {"type": "compaction", "summary": "we fixed the echidna loader", "firstKeptEntryId": "e0", "tokensBefore": 9},
        {"type": "custom_message", "customType": "note", "content": "remember the numbat", "display": True},
        message("bashExecution", None, command="make dingo", output="dingo built", exitCode=0),
    )
    write(root / "people.jsonl", message("user", "hello there"), message("user", "please check the wombat"))
    return root.parent


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("wombat", {"tools", "people"}),
        ("tool:wombat", {"tools"}),  # a tool call's argument
        ("result:wombat", {"tools"}),  # a tool result
        ("user:wombat", {"people"}),
        ("assistant:wombat", set()),
        ("error:platypus", {"tools"}),
        ("result:platypus", set()),  # an error is not a plain result
        ("echidna", {"tools"}),  # a compaction summary
        ("summary:echidna", {"tools"}),
        ("custom:numbat", {"tools"}),
        ("bash:dingo", {"tools"}),
        ("result:dingo", {"tools"}),  # bash output
        ("quokka", set()),  # thinking is not searched by a plain word...
        ("thinking:quokka", {"tools"}),  # ...only when asked for
        ("wombat !platypus", {"people"}),  # a negation sees every field
        ("wombat dingo", {"tools"}),  # terms may match in different fields
    ],
)
def test_every_field_the_preview_shows_is_searchable(fields_root: Path, tmp_path: Path, query: str, expected) -> None:
    catalog = Catalog([fields_root], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        hits = {hit.path: hit for hit in catalog.search_text(query)}
        found = {Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits)}
    finally:
        catalog.close()
    assert found == expected


def test_people_s_words_rank_before_tool_output(fields_root: Path, tmp_path: Path) -> None:
    catalog = Catalog([fields_root], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        hits = {hit.path: hit for hit in catalog.search_text("wombat")}
        ranked = search(summaries, "wombat", text_hits=hits)
    finally:
        catalog.close()
    # tools.jsonl is as new as people.jsonl, but its hit is in a tool call
    assert [(Path(hit.summary.path).stem, hit.text_hit.field) for hit in ranked] == [
        ("people", "user"),
        ("tools", "tool"),
    ]


def test_a_huge_tool_output_keeps_its_head_and_tail_within_the_budget() -> None:
    collector = TextCollector()
    middle = " ".join(f"filler{number}" for number in range(50_000))
    collector("result", "HEADWORD " + middle + " TAILWORD")
    collector("user", "x" * (READ_BUDGET * 2))  # people's words are never cut
    (_, kept), (_, user) = collector.texts
    assert kept.startswith("HEADWORD") and kept.endswith("TAILWORD") and "filler40000 " not in kept
    assert len(kept) <= PIECE_HEAD + PIECE_TAIL + 3 and len(user) == READ_BUDGET * 2
    for number in range(READ_BUDGET // 100 + 10):
        collector("result", f"line {number} " + "y" * 100)
    assert collector.spent < READ_BUDGET + PIECE_HEAD + PIECE_TAIL + 3 and collector.dropped > 0
    assert bounded("short") == "short"


def test_a_token_spread_over_other_words_does_not_match(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--p--"
    write(root / "f.jsonl", message("user", "a fuzzy finder, fuzzy matching and the fuzzy xyz tool"))
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    try:
        for summaries in (catalog.quick(), catalog.refresh()):
            hits = {hit.path: hit for hit in catalog.search_text("xyzzy")}
            assert search(summaries, "xyzzy", text_hits=hits, paths=True) == []
        fuzzy = search(catalog.refresh(), "fzzy", paths=True)  # a fuzzy hit always shows what matched
        assert fuzzy and all(hit.title_spans() for hit in fuzzy)
    finally:
        catalog.close()


def call(name: str, **arguments: object) -> dict:
    return message("assistant", [{"type": "toolCall", "id": f"c-{name}", "name": name, "arguments": arguments}])


def calls_root(tmp_path: Path) -> Path:
    """A session that reads b.py, writes a.py, then writes b.py: the last call's name and path
    were each seen before, in other calls."""
    root = tmp_path / "sessions" / "--p--"
    calls = (call("read", path="src/b.py"), call("write", path="src/a.py"), call("write", path="src/b.py"))
    write(root / "calls.jsonl", *calls)
    write(root / "other.jsonl", message("user", "nothing here"))
    return root.parent


@pytest.mark.parametrize("query", ['"write src/b.py"', 'tool:"write src/b.py"', '"write: src/b.py"'])
def test_a_tool_call_whose_name_and_path_were_seen_apart_is_found_as_the_preview_shows_it(
    tmp_path: Path, query: str
) -> None:
    """The preview shows the call as `[write: src/b.py]`; the index once dropped each of its
    lines seen before (`write` in the second call, `src/b.py` in the first): no phrase found it."""
    catalog = Catalog([calls_root(tmp_path)], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        hits = {hit.path: hit for hit in catalog.search_text(query)}
        assert [Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits)] == ["calls"]
    finally:
        catalog.close()


def test_an_index_under_rules_1_reads_the_sessions_with_tool_calls_or_a_custom_message_again(
    tmp_path: Path,
) -> None:
    """Stored text made under rules 1 cannot show which pieces lost lines: every session with
    a bounded piece (a tool call, a lone bash call's too: its output may have lost a line) is
    read again by the heal, and every one with a custom message (now with its type, cut
    later); people's words alone are not."""
    from seance.core.fulltext import TEXT_RULES, stale_fields

    root = calls_root(tmp_path)
    folder = root / "--p--"
    custom = {"type": "custom_message", "customType": "report", "display": True, "content": "all fine"}
    write(folder / "custom.jsonl", custom)
    write(folder / "bash.jsonl", call("bash", command="ls -la"), result("total 0\nREADME", failed=False))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        assert catalog.index is not None
        catalog.index.put_text_rules(1)
        stale = catalog.index.stale_text_files(lambda body: False, fields=stale_fields(1))
        assert sorted(Path(path).stem for path in stale or ()) == ["bash", "calls", "custom"]
        assert catalog.heal_text() == 3
        assert catalog.index.text_rules() == TEXT_RULES
        assert catalog.heal_text() == 0
    finally:
        catalog.close()


def test_an_index_under_rules_1_reads_every_oh_my_pi_session_again(tmp_path: Path, monkeypatch) -> None:
    """Rules 2 came with what is read of an oh-my-pi session that its row holds and no chunk
    shows (its dialect without a title slot, its name, its Python cells): every session under
    oh-my-pi's roots is read again once; a pi session of plain words is not."""
    from seance.core.fulltext import TEXT_RULES

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable in ("PI_CONFIG_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(variable, raising=False)
    omp_root, pi_root = tmp_path / "home" / ".omp" / "agent" / "sessions", tmp_path / "pi"
    write(omp_root / "-p" / "omp.jsonl", message("user", "hello there"))
    write(pi_root / "--p--" / "pi.jsonl", message("user", "hello there"))
    catalog = Catalog([omp_root, pi_root], cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        assert catalog.index is not None
        catalog.index.put_text_rules(1)
        assert catalog.heal_text() == 1
        assert catalog.index.text_rules() == TEXT_RULES
        assert catalog.heal_text() == 0
    finally:
        catalog.close()


@pytest.mark.parametrize(
    "arguments",
    [
        {"content": "print(1)\n", "path": "src/b.py"},  # (pi's own order, 14 real writes)
        {"_i": "Write the result", "path": "src/b.py", "content": "{}"},  # (oh-my-pi's intent first)
        {"file_path": "src/b.py", "content": "x"},
    ],
)
def test_a_call_s_file_is_found_beside_its_tool_name_whatever_its_arguments_order(
    tmp_path: Path, arguments: dict
) -> None:
    """The preview shows `[write: src/b.py]` (the tool, then the file) whatever the order of
    the call's arguments; the index read them in the file's order, another argument between."""
    root = tmp_path / "sessions" / "--p--"
    write(root / "calls.jsonl", call("write", **arguments))
    write(root / "other.jsonl", call("write", path="src/a.py", content="src b py"))
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        for query in ('"write src/b.py"', 'tool:"write: src/b.py"'):
            hits = {hit.path: hit for hit in catalog.search_text(query)}
            assert [Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits)] == ["calls"]
    finally:
        catalog.close()


def test_the_tree_starts_on_a_call_found_by_its_file_beside_its_tool_name(tmp_path: Path) -> None:
    """What the index finds (`write src/b.py`, `content` written before `path`), the preview's
    look for the first match (`first_matching_entry`) finds too: the call's entry."""
    from seance.app.widgets.context_preview import first_matching_entry
    from seance.core.search import parse_query
    from seance.core.session import read_session

    path = write(tmp_path / "s.jsonl", message("user", "go"), call("write", content="print(1)\n", path="src/b.py"))
    session = read_session(path)
    assert session
    for query in ('"write src/b.py"', 'tool:"write src/b.py"'):
        assert first_matching_entry(session, ["e0", "e1"], parse_query(query)) == "e1"


def result(text: str, *, failed: bool, call_id: str = "c1") -> dict:
    return message("toolResult", [{"type": "text", "text": text}], toolCallId=call_id, isError=failed)


WARNING = "WARN peer dep missing: react"


@pytest.mark.parametrize(
    ("first", "later", "query"),
    [
        (result(f"ok\n{WARNING}", failed=False), result(f"{WARNING}\nnpm ERR! 1", failed=True), 'error:"peer dep"'),
        (result(f"{WARNING}\nnpm ERR! 1", failed=True), result(f"{WARNING}\nok", failed=False), 'result:"peer dep"'),
        (result("npm run build\nok", failed=False), call("bash", command="npm run build"), 'bash:"npm run build"'),
    ],
)
def test_a_line_seen_in_one_field_is_still_found_in_another(
    tmp_path: Path, first: dict, later: dict, query: str
) -> None:
    """Lines repeated in a session are indexed once, but once per field: the same warning in a
    result, then in a failed run's error output, is found by `error:` (the preview shows it
    there, as an error)."""
    root = tmp_path / "sessions" / "--p--"
    write(root / "s.jsonl", message("user", "go"), first, later)
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        hits = {hit.path: hit for hit in catalog.search_text(query)}
        assert [Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits)] == ["s"]
    finally:
        catalog.close()


def test_a_custom_message_is_found_by_what_the_preview_shows_of_it(tmp_path: Path) -> None:
    """The preview shows a custom (extension) message's first `BODY_LIMIT` characters (a
    subagent's 1.3 KB report, in the corpus); the index kept its first 1 KB and last 256: a
    word at character 1,500 was shown and not found."""
    from seance.app.widgets.context_preview import BODY_LIMIT, CLIP_SLACK

    checks = "".join(f"- check {number}: fine\n" for number in range(85))
    report = "## Subagent result\n" + checks + "extensions 0 (builtin 0, kiwifruit 3)\n" + "- ok\n" * 200
    assert 1400 < report.index("kiwifruit") < BODY_LIMIT and len(report) > BODY_LIMIT + CLIP_SLACK
    root = tmp_path / "sessions" / "--p--"
    custom = {"type": "custom_message", "customType": "subagent-slash-result", "content": report, "display": True}
    write(root / "s.jsonl", message("user", "run the doctor"), custom)
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        for query in ('"builtin 0, kiwifruit 3"', "custom:kiwifruit"):
            hits = {hit.path: hit for hit in catalog.search_text(query)}
            assert [Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits)] == ["s"], query
    finally:
        catalog.close()


@pytest.mark.parametrize("query", ["subagent-slash-result", 'custom:"subagent-slash-result"', "custom:subagent"])
def test_a_custom_message_is_found_by_the_type_its_preview_title_shows(tmp_path: Path, query: str) -> None:
    """The preview titles a custom message by its type (`[subagent-slash-result]`), as the
    tree's search reads it; the index had its content alone."""
    root = tmp_path / "sessions" / "--p--"
    custom = {"type": "custom_message", "customType": "subagent-slash-result", "content": "done", "display": True}
    role = message("custom", "all good", customType="subagent-slash-result", display=True)
    write(root / "entry.jsonl", message("user", "run it"), custom)
    write(root / "role.jsonl", message("user", "run it"), role)
    write(root / "other.jsonl", message("user", "run it"))
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    try:
        summaries = catalog.refresh()
        hits = {hit.path: hit for hit in catalog.search_text(query)}
        found = sorted(Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits))
        assert found == ["entry", "role"]
    finally:
        catalog.close()


def test_the_preview_marks_a_custom_message_found_by_its_type(tmp_path: Path) -> None:
    """What the index finds by a custom message's type, the preview's look for the first
    match finds and marks in its title."""
    from seance.app.widgets.context_preview import _message_block, first_matching_entry
    from seance.core.context import as_message
    from seance.core.search import TextMarks, parse_query
    from seance.core.session import read_session

    custom = {"type": "custom_message", "customType": "subagent-slash-result", "content": "done", "display": True}
    path = write(tmp_path / "s.jsonl", message("user", "go"), custom)
    session = read_session(path)
    assert session
    query = parse_query("custom:subagent-slash-result")
    assert first_matching_entry(session, ["e0", "e1"], query) == "e1"
    item = as_message(session.tree.by_id["e1"])
    assert item is not None
    block = _message_block(item, {}, TextMarks.of(query))
    assert [block.title[a:b] for a, b in block.title_marks] == ["subagent-slash-result"]


class RulesOneCollector(TextCollector):
    """`TextCollector` as text rules 1 made it (seance before rules 2): one set of lines
    seen for every field, a tool call's lines dropped one by one."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: set[str] = set()

    def __call__(self, field: str, text: str) -> None:
        from seance.core.fulltext import ERROR, WHOLE

        if field not in WHOLE:
            text = bounded(text, 2048, 1024) if field == ERROR else bounded(text)
            add = self.lines.add
            text = "\n".join([line for line in text.split("\n") if line not in self.lines and not add(line)])
            if not text:
                return
            self.spent += len(text)
        self.texts.append((field, text))


def thinking(text: str) -> dict:
    return message("assistant", [{"type": "thinking", "thinking": text}, {"type": "text", "text": "ok"}])


@pytest.mark.parametrize(
    ("entries", "query"),
    [
        (  # bash calls only (their tool chunk is one line, `bash`): a warning a failed run printed again
            (
                call("bash", command="npm install"),
                result("WARN peer dep missing: react\nadded 5 packages", failed=False),
                call("bash", command="npm run build"),
                result("WARN peer dep missing: react\nnpm ERR! build failed", failed=True),
            ),
            'error:"peer dep"',
        ),
        (  # no tool call: a command thought of, then run with `!` (its bash piece dropped whole)
            (thinking("I will list it:\nls -la src"), message("bashExecution", "", command="ls -la src", output="")),
            'bash:"ls -la src"',
        ),
    ],
)
def test_an_index_healed_from_rules_1_finds_a_line_another_field_said_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: tuple[dict, ...], query: str
) -> None:
    """Rules 1 indexed a line once per session, whatever its field; rules 2 once per field.
    A session whose stored text shows no tool call of two lines and no custom message lost
    such a line too: the heal reads it again, or `error:` / `bash:` finds it after `seance
    index --rebuild` and not after the heal."""
    from seance.core import fulltext

    root = tmp_path / "sessions" / "--p--"
    write(root / "s.jsonl", message("user", "go"), *entries)
    write(root / "other.jsonl", message("user", "nothing here"))
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    try:
        with monkeypatch.context() as patch:
            patch.setattr(fulltext, "TextCollector", RulesOneCollector)
            catalog.refresh()
        assert catalog.index is not None
        catalog.index.put_text_rules(1)
        assert not catalog.search_text(query)  # (the text rules 1 left)
        catalog.heal_text()
        summaries = catalog.refresh()
        hits = {hit.path: hit for hit in catalog.search_text(query)}
        assert [Path(hit.summary.path).stem for hit in search(summaries, query, text_hits=hits)] == ["s"]
    finally:
        catalog.close()


def heal_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the session files scanned from here on (in this process)."""
    from seance.core import scanpool

    read: list[str] = []
    real = scanpool.scan_one

    def counted(info, state, want_text):  # (scan_one's own signature)
        read.append(info.path)
        return real(info, state, want_text)

    monkeypatch.setattr(scanpool, "scan_one", counted)
    return read


def tools_index(tmp_path: Path, count: int) -> tuple[Catalog, list[str]]:
    """A catalog of `count` sessions with a tool call each, its index under text rules 1."""
    root = tmp_path / "sessions" / "--p--"
    paths = [str(write(root / f"s{n:02d}.jsonl", call("read", path=f"src/{n}.py"))) for n in range(count)]
    catalog = Catalog([root.parent], cache_dir=tmp_path / "cache")
    catalog.refresh()
    assert catalog.index is not None
    catalog.index.put_text_rules(1)
    return catalog, paths


def test_a_heal_left_midway_goes_on_where_it_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules 2's heal reads almost every session again (~50 s at 100,000), and the picker that
    runs it stops it when it is left: the next heal goes on from the last step recorded,
    instead of reading the first sessions again and again, never done."""
    from seance.core import catalog as catalog_module
    from seance.core.fulltext import TEXT_RULES

    monkeypatch.setattr(catalog_module, "HEAL_STEP", 2, raising=False)
    catalog, paths = tools_index(tmp_path, 10)
    try:
        read = heal_reads(monkeypatch)
        assert catalog.heal_text(lambda: len(read) >= 5) == 0  # (left: nothing said)
        first = list(read)
        read.clear()
        assert catalog.heal_text() == len(read) <= 10 - 4  # (the two whole steps of 2 kept)
        assert set(first) | set(read) == set(paths) and catalog.index is not None
        assert catalog.index.text_rules() == TEXT_RULES and catalog.heal_text() == 0
    finally:
        catalog.close()


def test_a_session_the_heal_cannot_read_is_the_one_the_next_heal_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session cannot be read (EACCES) while rules 2's heal runs: the rules stay
    unrecorded, and the next heal reads it alone, not every session again (every `seance
    index` and picker re-read the whole store while it stayed unreadable)."""
    from seance.core import metadata
    from seance.core.fulltext import TEXT_RULES

    catalog, paths = tools_index(tmp_path, 6)
    try:
        read = heal_reads(monkeypatch)
        real = metadata.scan_file

        def scan_file(path, **kwargs):  # the one file's open fails, as `open_regular` raises it
            if str(path) == paths[2]:
                raise PermissionError(13, "Permission denied", paths[2])
            return real(path, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(metadata, "scan_file", scan_file)
            assert catalog.heal_text() == 5
            assert catalog.heal_text() == 0  # (still unreadable: the others not read again)
        assert catalog.index is not None and catalog.index.text_rules() == 1
        read.clear()
        assert catalog.heal_text() == 1 and read == [paths[2]]
        assert catalog.index.text_rules() == TEXT_RULES and catalog.heal_text() == 0
    finally:
        catalog.close()
