"""`seance export` and core/export: Markdown, HTML and JSON of a session's context or tree.

The HTML of a hostile session and of every file in ../shared/corpus is parsed strictly
(balanced tags, only the tags and attributes seance writes, the session's strings in the
text nodes) and, where Chromium is installed, loaded in headless Chromium.
"""

from __future__ import annotations

import os
import pty
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, corpus_files
from export_fixtures import ESCAPES, HOSTILE, IMAGE_DATA, check_page, chromium, chromium_dom, write_hostile_session

from seance.cli import main
from seance.core.context import build_session_context
from seance.core.export import (
    ExportExists,
    context_document,
    default_file_name,
    format_for_path,
    render,
    tree_document,
    write_export,
)
from seance.core.export.prose import md_prose
from seance.core.session import Session, SessionError, read_session
from seance.core.text import safe_multiline

NEEDS_CHROMIUM = pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (Debian: apt-get install chromium; .ci/run does)"
)
CORPUS_FILES = corpus_files()


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return write_hostile_session(tmp_path / "sessions" / "hostile.jsonl")


def _load(path: Path) -> Session:
    session = read_session(path)
    assert isinstance(session, Session)
    return session


def _expected_strings(scope: str) -> dict[str, str]:
    """The hostile strings as the page must show them: the argument as JSON writes it; the
    branch summary is only in the tree (it is on the other branch)."""
    expected = dict(HOSTILE)
    expected["argument"] = orjson.dumps(HOSTILE["argument"]).decode()[1:-1]
    if scope == "context":
        del expected["branch"]
    return expected


# -- HTML ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["context", "tree"])
def test_hostile_html_shows_every_session_string_as_text_and_nothing_as_markup(hostile: Path, scope: str) -> None:
    session = _load(hostile)
    doc = (tree_document if scope == "tree" else context_document)(session, thinking=True)
    page = render(doc, "html")
    parsed = check_page(page)  # balanced; only seance's own tags and attributes
    text = "".join(parsed.text)
    for what, needle in _expected_strings(scope).items():
        assert needle in text, f"{what} is not shown as text"
    lowered = page.lower()
    for tag in ("<script", "<img", "<svg", "<iframe", "<base", "<object", "<marquee", "<b>", "<u>", "<p>"):
        assert tag not in lowered, f"{tag} reached the page as markup"
    assert "\x1b" not in page and "\u202e" not in page and "\x07" not in page
    assert safe_multiline(ESCAPES) in text  # what is left of the escapes, as text
    assert IMAGE_DATA[:40] not in page and "[image: image/png, 3 KB]" in text
    # one <article> per message, one <details> per tool call, tool output and thinking block
    messages = [item for item in doc.items if item.kind != "event"]
    assert parsed.tags["article"] == len(messages)
    parts = [part for item in doc.items for part in item.parts]
    collapsible = sum(part.kind in ("tool_call", "tool_output", "thinking") for part in parts)
    assert parsed.tags["details"] == parsed.tags["summary"] == collapsible
    assert parsed.tags["style"] == 1 and "script" not in parsed.tags


def test_hostile_tree_html_nests_each_branch(hostile: Path) -> None:
    page = render(tree_document(_load(hostile)), "html")
    parsed = check_page(page)
    assert page.count('<div class="branch">') == 2  # the two branches of b1
    text = "".join(parsed.text)
    assert text.index("branch B prompt") < text.index("branch A prompt")  # oldest first
    assert "◀ leaf" in text


def test_thinking_is_left_out_unless_asked(hostile: Path) -> None:
    session = _load(hostile)
    for fmt in ("html", "md", "json"):
        assert "secret thought" not in render(context_document(session), fmt)
        assert "secret thought" in render(context_document(session, thinking=True), fmt)


def _html_strings(session: Session, scope: str) -> list[str]:
    """Every text part of the export as the page must show it."""
    doc = (tree_document if scope == "tree" else context_document)(session)
    return [safe_multiline(part.text) for item in doc.items for part in item.parts if part.text]


@pytest.mark.skipif(not CORPUS_FILES, reason="shared corpus not present")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_file_exports_valid_html_with_all_its_text_escaped(path: Path) -> None:
    session = _load(path)
    for scope in ("context", "tree"):
        doc = (tree_document if scope == "tree" else context_document)(session)
        page = render(doc, "html")
        parsed = check_page(page)
        assert "<script" not in page.lower()
        text = "".join(parsed.text)
        missing = [s[:80] for s in _html_strings(session, scope) if s.strip("\n") not in text]
        assert not missing, f"{scope}: {len(missing)} strings not shown as text, e.g. {missing[:3]}"
        assert parsed.tags["article"] == sum(item.kind != "event" for item in doc.items)


# -- in a real browser ------------------------------------------------------------------------------


@NEEDS_CHROMIUM
@pytest.mark.parametrize("scope", ["context", "tree"])
def test_hostile_html_in_headless_chromium(hostile: Path, tmp_path: Path, scope: str) -> None:
    session = _load(hostile)
    doc = (tree_document if scope == "tree" else context_document)(session, thinking=True)
    page = tmp_path / f"{scope}.html"
    write_export(page, render(doc, "html"))
    mine = check_page(page.read_text())
    dom = chromium_dom(page)
    browser = check_page(dom, dom=True)  # the browser's DOM: still only seance's elements
    assert browser.tags == mine.tags, "the browser built other elements than the page has"
    text = "".join(browser.text)
    for what, needle in _expected_strings(scope).items():
        assert needle in text, f"{what} is not text in the browser's DOM"


def _largest_per_source() -> list[Path]:
    by_source: dict[str, Path] = {}
    for path in CORPUS_FILES:
        source = path.relative_to(CORPUS).parts[0]
        if source not in by_source or path.stat().st_size > by_source[source].stat().st_size:
            by_source[source] = path
    return sorted(by_source.values())


@NEEDS_CHROMIUM
@pytest.mark.skipif(not CORPUS_FILES, reason="shared corpus not present")
@pytest.mark.parametrize("path", _largest_per_source(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_largest_corpus_files_render_in_headless_chromium(path: Path, tmp_path: Path) -> None:
    page = tmp_path / "tree.html"
    write_export(page, render(tree_document(_load(path)), "html"))
    mine = check_page(page.read_text())
    browser = check_page(chromium_dom(page), dom=True)
    assert browser.tags == mine.tags


# -- Markdown -----------------------------------------------------------------------------------


def test_hostile_markdown_is_sanitised_and_shows_html_as_text(hostile: Path) -> None:
    text = render(tree_document(_load(hostile), thinking=True), "md")
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert IMAGE_DATA[:40] not in text and "[image: image/png, 3 KB]" in text.replace("\\", "")
    # prose: raw HTML becomes entities; code (fences, tool output) keeps it literal
    assert "&lt;/details>&lt;script>alert(1)&lt;/script> &amp; &amp;amp;" in text
    prose = "\n".join(_outside_fences(text))
    assert not re.search(r"(?<!\\)<(script|img|svg|iframe|base|object|marquee)", prose), "raw HTML outside code"
    assert "`````\n</pre><script src=https://evil.example/x.js></script> ``` fence ```` longer\n`````" in text
    assert "## " not in text.split("---", 1)[0].replace("# ", "", 1)  # a name cannot add a heading
    assert "compaction summary (120k tokens before)" in text.replace("\\", "")
    assert "branch summary" in text


def _outside_fences(text: str) -> list[str]:
    out, fence = [], None
    for line in text.split("\n"):
        bare = line.lstrip("> ")
        if fence:
            fence = None if bare.startswith(fence) and set(bare.strip()) == {"`"} else fence
        elif bare.startswith("```"):
            fence = bare[: len(bare) - len(bare.lstrip("`"))]
        else:
            out.append(line)
    return out


def test_markdown_tree_quotes_each_branch_one_level_deeper(hostile: Path) -> None:
    lines = render(tree_document(_load(hostile)), "md").split("\n")
    assert any(line.startswith("### 1. user") for line in lines)
    assert sum(line == "> **↳ branch of b1**" for line in lines) == 2
    assert "> branch A prompt" in lines and "> branch B prompt" in lines


def test_markdown_fence_left_open_by_a_message_is_closed(tmp_path: Path) -> None:
    path = write_hostile_session(tmp_path / "s.jsonl")
    entries = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    entries[2]["message"]["content"][0]["text"] = "```\nunclosed <code>"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    text = render(context_document(_load(path)), "md")
    assert "```\nunclosed <code>\n```\n" in text
    assert "&lt;img src=x" in text  # the next message is prose again


def _two_messages(path: Path, *texts: str, reply: str = "the next message") -> Path:
    """A session: a user message with `texts` as its text parts, then an assistant's `reply`."""
    entries = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": t} for t in texts], "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2025-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": reply}],
                     "provider": "p", "model": "m", "api": "x", "stopReason": "stop", "timestamp": 2}},
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    return path


PAYLOAD = "<img src=x onerror=alert(1)>"
# Session Markdown where what is code, for CommonMark, is not what a simpler reading says.
OUT_OF_CODE = {
    "a closing fence takes no info string": ["```\na\n```python\nb\n```\n" + PAYLOAD],
    "nor does a tilde one": ["~~~\na\n~~~python\nb\n~~~\n" + PAYLOAD],
    "a backtick in the info string opens no fence": ["```x`\n" + PAYLOAD],
    "a backslash-escaped backtick opens no code span": ["see \\`" + PAYLOAD + "` here"],
    "a code span runs over lines": ["a `b\nc` " + PAYLOAD + " `d`"],
    "a backtick in a link title is not code": ['[a](x "`") ' + PAYLOAD + " `"],
    "an open fence in a list item": ["- item\n  ```\n  code"],
    "an open fence in a quoted list item": ["> 1. item\n>    ~~~~\n>    code"],
    "a list item one text part leaves open holds the next": ["- item", "  ```\n  " + PAYLOAD],
    # markdown-it ends nested quotes at a lazy line indented four spaces, CommonMark does not
    "a lazy line": ["> > a\n    - b\nc\n-\n  ```\n ```\n" + PAYLOAD],
    # markdown-it ends a paragraph after a link reference definition, CommonMark does not
    "a link reference definition": ["[b]: /u\n-\n  ```\n ```\n" + PAYLOAD],
}


@pytest.mark.parametrize("texts", OUT_OF_CODE.values(), ids=OUT_OF_CODE.keys())
def test_markdown_session_html_never_reaches_a_commonmark_renderer(tmp_path: Path, texts: list[str]) -> None:
    markdown_it = pytest.importorskip("markdown_it")  # a test-only oracle: Rich brings it
    markdown = render(context_document(_load(_two_messages(tmp_path / "s.jsonl", *texts))), "md")
    page = markdown_it.MarkdownIt("commonmark").render(markdown)  # raw HTML passes through
    assert PAYLOAD not in page, markdown
    assert "<p>the next message</p>" in page, page  # no fence of the message swallowed the rest


# Session Markdown that is a GFM table for markdown-it's default preset (its table rule runs
# before fences and headings; a table's rows go on until a blank line), not for CommonMark.
IN_A_GFM_TABLE = {
    "a heading over a delimiter row": ["## Output `" + PAYLOAD + "|` |\n---|---"],
    "a list item's heading over a delimiter row": ["- ## h `" + PAYLOAD + "|` |\n---|---"],
    "a fence's info string holding a pipe": ["```text |\n---\n" + PAYLOAD + "\n```"],
    "rows under a setext underline": ["| a |\n---\n`" + PAYLOAD + "|` |"],
    "rows over a setext heading's underline": ["a|b\n-|-\nc\n===\n`" + PAYLOAD + "|` |"],
}


@pytest.mark.parametrize("texts", IN_A_GFM_TABLE.values(), ids=IN_A_GFM_TABLE.keys())
def test_markdown_session_html_never_reaches_a_gfm_renderer(tmp_path: Path, texts: list[str]) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    markdown = render(context_document(_load(_two_messages(tmp_path / "s.jsonl", *texts))), "md")
    page = markdown_it.MarkdownIt("default", {"html": True}).render(markdown)  # GFM tables, raw HTML
    assert PAYLOAD not in page, markdown
    assert "<p>the next message</p>" in page, page


HOSTILE_SHAPES = {
    "nested list items": "- " * 50_000 + "a",
    "nested star items": "* " * 50_000 + "a",
    "nested items, then lazy lines": "- " * 25_000 + "a\n" + " b\n" * 16_000,
    "a delimiter row that is not one": "a\n" + "-|" * 50_000 + "x",
}


@pytest.mark.parametrize("text", HOSTILE_SHAPES.values(), ids=HOSTILE_SHAPES.keys())
def test_markdown_prose_takes_time_linear_in_the_text(text: str) -> None:
    """A guard against an export that hangs for minutes on one hostile message, not a speed
    goal (those live in bench/): 100 KB takes about 0.1 s, a quadratic parse 10 s to a minute."""
    start = time.perf_counter()
    md_prose(text)
    assert time.perf_counter() - start < 1.0


def test_markdown_link_reference_of_one_message_reaches_no_other(tmp_path: Path) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    path = _two_messages(tmp_path / "s.jsonl", "[docs]: https://evil.example/", reply="see [docs]")
    page = markdown_it.MarkdownIt("commonmark").render(render(context_document(_load(path)), "md"))
    assert "evil.example" not in page.replace("<p>[docs]: https://evil.example/</p>", ""), page
    assert "<p>see [docs]</p>" in page


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("`<b>` and ``a ` <b>``, [a] `Promise<T | U>`", ["`<b>` and ``a ` <b>``, [a] `Promise<T | U>`"]),
        ("```html\n<b>\n```\n<b>", ["```html", "<b>", "```", "&lt;b>"]),
        # the item's end closes its fence; the fence left open closes inside its item
        ("1. a\n   ```\n   a < b\n\n- b\n  ~~~\n  <b>",
         ["1. a", "   ```", "   a < b", "", "- b", "  ~~~", "  <b>", "  ~~~"]),
        ("> ```\n> <b>", ["> ```", "> <b>", "> ```"]),
        ("\\<b> & `x`", ["\\<b> &amp; `x`"]),
    ],
)  # fmt: skip
def test_markdown_code_keeps_its_text_and_open_fences_close_where_they_opened(text: str, lines: list[str]) -> None:
    assert md_prose(text) == lines


# -- JSON ---------------------------------------------------------------------------------------


def test_json_context_is_the_resume_context_with_structure(hostile: Path) -> None:
    session = _load(hostile)
    payload = orjson.loads(render(context_document(session), "json"))
    context = build_session_context(session)
    assert payload["scope"] == "context" and payload["leafId"] == context.leaf_id == "n1"
    assert [m["entryId"] for m in payload["messages"]] == [m.entry_id for m in context.messages]
    assert [m["kind"] for m in payload["messages"]][:3] == ["compactionSummary", "user", "assistant"]
    call = next(p for m in payload["messages"] for p in m["parts"] if p["type"] == "tool_call")
    assert call["name"] == HOSTILE["tool_name"] and call["arguments"] == {"path": HOSTILE["argument"]}
    assert payload["name"] == HOSTILE["name"] and payload["cwd"] == HOSTILE["cwd"]
    user = payload["messages"][1]
    assert user["label"] == HOSTILE["label"] and ESCAPES in user["parts"][0]["text"]  # exact, unsanitised
    encoded = render(context_document(session), "json")
    assert IMAGE_DATA[:40] not in encoded


def test_json_tree_lists_every_entry_in_tree_order(hostile: Path) -> None:
    session = _load(hostile)
    payload = orjson.loads(render(tree_document(session), "json"))
    assert [n["entryId"] for n in payload["nodes"]] == [entry_id for entry_id, _ in session.tree.preorder()]
    by_id = {n["entryId"]: n for n in payload["nodes"]}
    assert by_id["uB"]["branchStart"] and by_id["uA"]["branchStart"] and by_id["uA"]["depth"] == 1
    assert by_id["n1"]["isLeaf"] and by_id["u1"]["onPath"] and not by_id["uB"]["onPath"]


@pytest.mark.skipif(not CORPUS_FILES, reason="shared corpus not present")
def test_every_corpus_file_exports_json_and_markdown() -> None:
    for path in CORPUS_FILES:
        session = _load(path)
        payload = orjson.loads(render(context_document(session), "json"))
        assert len(payload["messages"]) == len(build_session_context(session).messages), path
        text = render(tree_document(session), "md")
        assert "\x1b" not in text and len(text) > 100, path


# -- writing files and the command line -----------------------------------------------------------


def test_write_export_is_atomic_private_and_never_overwrites_unforced(tmp_path: Path) -> None:
    target = tmp_path / "out.html"
    write_export(target, "first")
    assert target.read_text() == "first" and stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(Exception, match="already exists"):
        write_export(target, "second")
    assert target.read_text() == "first"
    write_export(target, "second", force=True)
    assert target.read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html"], "no temp file left behind"
    target.chmod(0o644)  # (replaced with --force: private still, whatever the file was)
    write_export(target, "third", force=True)
    assert target.read_text() == "third" and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_write_export_to_a_filesystem_without_hard_links(tmp_path: Path, monkeypatch) -> None:
    """A USB stick (FAT, exFAT) or a network share refuses link(2) with EPERM: the new file was
    published by hard-linking the temp file, so every export there failed.  It is still never
    written over a file that exists (nor one created meanwhile)."""
    import errno

    def no_hard_links(*_args, **_kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_hard_links)
    target = tmp_path / "out.html"
    write_export(target, "first")
    assert target.read_text() == "first" and stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(ExportExists):
        write_export(target, "second")
    assert target.read_text() == "first"
    from seance.core.safefile import create_new

    with pytest.raises(SessionError, match="already exists"):  # (appeared after write_export looked)
        create_new(target, b"second")
    assert target.read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html"], "no temp file left behind"


def test_write_export_never_replaces_a_session_file(hostile: Path, tmp_path: Path) -> None:
    before = hostile.read_bytes()
    with pytest.raises(Exception, match="being exported"):
        write_export(hostile, "x", force=True, source=hostile)
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n")
    with pytest.raises(Exception, match="never replaced"):
        write_export(other, "x", force=True)
    assert hostile.read_bytes() == before and other.read_text() == "{}\n"


def test_write_export_never_replaces_a_session_file_through_a_symlink(hostile: Path, tmp_path: Path) -> None:
    """`-o notes.md --force` where notes.md is a link to another session: the link's name is
    no `.jsonl`, but replacing "it" rewrites the session it points to (atomic_write follows it)."""
    other = tmp_path / "other.jsonl"
    other.write_bytes(hostile.read_bytes())
    before = other.read_bytes()
    link = tmp_path / "notes.md"
    link.symlink_to(other.name)
    with pytest.raises(Exception, match="never replaced"):
        write_export(link, "exported text", force=True)
    assert other.read_bytes() == before and link.is_symlink()


def test_formats_and_default_names() -> None:
    assert [format_for_path(n) for n in ("a.md", "B.HTML", "c.htm", "d.json", "e.txt")] == [
        "md",
        "html",
        "html",
        "json",
        None,
    ]
    assert default_file_name("my/../session\x1b[2J", "id") == "my-..-session.html"  # the clear-screen sequence: gone
    assert default_file_name(None, "019e-abc", "md") == "019e-abc.md"
    assert default_file_name("...", "../x") == "x.html"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_write_into_a_missing_folder_names_the_file_asked_for(tmp_path: Path) -> None:
    """`atomic_write`'s error named seance's own temp file (`.s.md.seance-…-….tmp`), never the
    file asked for (the CLI's `export -o` says it its own way: the test below)."""
    from seance.core.safefile import atomic_write

    target = tmp_path / "no-such-folder" / "s.md"
    with pytest.raises(FileNotFoundError) as raised:
        atomic_write(target, b"x", None)
    assert raised.value.filename == str(target)


def test_cli_writes_each_format_by_extension_and_refuses_to_overwrite(hostile: Path, tmp_path: Path, capsys) -> None:
    for name in ("s.html", "s.md", "s.json"):
        code, out, err = run(capsys, "export", str(hostile), "-o", str(tmp_path / name))
        assert (code, out) == (0, "") and "exported" in err
    assert (tmp_path / "s.html").read_text().startswith("<!DOCTYPE html>")
    assert orjson.loads((tmp_path / "s.json").read_bytes())["format"] == "seance-export"
    code, _out, err = run(capsys, "export", str(hostile), "-o", str(tmp_path / "s.html"), "--tree")
    assert code == 2 and "already exists" in err
    assert run(capsys, "export", str(hostile), "-o", str(tmp_path / "s.html"), "--tree", "--force")[0] == 0
    assert "◀ leaf" in (tmp_path / "s.html").read_text()
    code, _out, err = run(capsys, "export", str(hostile), "-o", str(tmp_path / "s.txt"))
    assert code == 2 and "--format" in err and not (tmp_path / "s.txt").exists()
    assert run(capsys, "export", str(hostile), "-o", str(tmp_path / "s.txt"), "--format", "md")[0] == 0


def test_cli_an_unwritable_output_is_named_as_given_not_as_its_temp_file(hostile: Path, tmp_path: Path, capsys) -> None:
    """The error names the file the user asked for (as the picker's Alt+E does), not the
    hidden temp file beside it that seance writes first (`.x.md.seance-….tmp`)."""
    target = tmp_path / "no-such-dir" / "x.md"
    code, out, err = run(capsys, "export", str(hostile), "-o", str(target))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"{target}: No such file or directory" in err and ".tmp" not in err, err
    assert not target.parent.exists()


def test_cli_leaf_exports_the_context_at_that_entry(hostile: Path, capsys) -> None:
    code, out, _err = run(capsys, "export", str(hostile), "--leaf", "uB", "--format", "json")
    assert code == 0
    payload = orjson.loads(out)
    assert payload["leafId"] == "uB" and payload["messages"][-1]["parts"][0]["text"] == "branch B prompt"
    code, out, err = run(capsys, "export", str(hostile), "--leaf", "nope")
    assert (code, out) == (2, "") and "no entry 'nope'" in err


def test_cli_stdout_markdown_and_json_default(hostile: Path, capsys) -> None:
    code, out, _err = run(capsys, "export", str(hostile))
    assert code == 0 and out.startswith("# \\<b\\>bold name") and "\x1b" not in out
    code, out, _err = run(capsys, "export", str(hostile), "--format", "json")
    assert code == 0 and "\\u202e" in out  # json_safe: bidi escaped, the value unchanged
    assert ESCAPES in "".join(p["text"] for p in orjson.loads(out)["messages"][1]["parts"])


def _on_a_terminal(*argv: str) -> tuple[int, bytes]:
    """`python -m seance *argv` with stdout on a pseudo-terminal: exit code and what it printed."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "seance", *argv], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(timeout=60), b"".join(chunks)


def test_cli_on_a_terminal_markdown_is_sanitised_and_html_refused(hostile: Path) -> None:
    code, shown = _on_a_terminal("export", str(hostile))
    assert code == 0 and b"\x1b" not in shown and b"bold name" in shown
    code, shown = _on_a_terminal("export", str(hostile), "--format", "html")
    assert code == 2 and b"HTML is not for a terminal" in shown and b"<html" not in shown


def test_files_pi_can_write_but_json_cannot_carry_export_in_every_format(tmp_path: Path) -> None:
    """tests/hostile.py: lone surrogates, integers beyond 64 bits, JSON nested 10,000 deep."""
    from hostile import HOSTILE as HOSTILE_FILES
    from hostile import write_hostile

    for name, path in write_hostile(tmp_path).items():
        session = read_session(path)
        if name not in HOSTILE_FILES:
            continue  # the files that are not sessions
        assert isinstance(session, Session), name
        for build in (context_document, tree_document):
            doc = build(session, thinking=True)
            check_page(render(doc, "html"))
            assert "\udc00" not in render(doc, "md")
            orjson.loads(render(doc, "json"))


def test_markdown_tree_of_a_deeply_branched_session_stays_linear(tmp_path: Path) -> None:
    """Each branch is one quote level deeper and each level repeats `> ` on every line: a
    session branched at every turn (regenerated replies) grew quadratically (1.4 MB of
    session: 64 MB of Markdown).  Quotes stop at `MAX_QUOTE_DEPTH`; deeper entries say it."""
    from seance.core.export.md import MAX_QUOTE_DEPTH

    lines = [{"type": "session", "version": 3, "id": "deep", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent = None
    for turn in range(60):  # each turn: a reply regenerated once (a branch point), the chain goes on
        stamp = f"2025-01-01T00:{turn // 60:02d}:{turn % 60:02d}.000Z"
        user = {"type": "message", "id": f"u{turn}", "parentId": parent, "timestamp": stamp}
        lines.append({**user, "message": {"role": "user", "content": f"question {turn}"}})
        for variant in ("a", "b"):
            reply = {"role": "assistant", "content": [{"type": "text", "text": f"reply {turn}{variant}"}]}
            entry = {"type": "message", "id": f"a{turn}{variant}", "parentId": f"u{turn}", "timestamp": stamp}
            lines.append({**entry, "message": reply})
        parent = f"a{turn}b"
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    markdown = render(tree_document(_load(path)), "md")
    deepest = max(len(line) - len(line.lstrip("> ")) for line in markdown.splitlines()) // 2
    assert deepest <= MAX_QUOTE_DEPTH
    assert "branch depth 60" in markdown or "branch depth 59" in markdown
    assert len(markdown) < 60 * 2_000  # (linear: ~1 KB an entry, not depth times it)
