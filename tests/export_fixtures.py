"""A hostile session for the export tests, a strict HTML checker, and headless Chromium.

The session holds markup, script tags, broken-out-of-`<details>`/`<pre>` attempts, entity
look-alikes, Rich markup, terminal escapes and bidi overrides in every place session text
can be: messages, thinking, tool names, arguments and output, the name, a label, a custom
type, the compaction and branch summaries, the cwd, the model; and an image whose base64
must never be copied.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson

STAMP = "2025-01-01T00:00:00.000Z"
IMAGE_DATA = "iVBORw0KGgoAAAANSUhEUg" + "QUJD" * 1000  # 4,022 base64 characters: 3,016 bytes

# Each is shown as text somewhere in the export: (what, the string).
HOSTILE = {
    "user": "</details><script>alert(1)</script> & &amp; &lt;b&gt; \"quoted\" 'single'",
    "assistant": '<img src=x onerror="alert(2)"> ]]> <!-- comment --> [bold red]rich[/] `tick`',
    "thinking": "</div><style>body{display:none}</style> secret thought",
    "tool_name": "<svg onload=alert(3)>",
    "argument": '</pre></details><iframe src="https://evil.example/"></iframe>',
    "output": "</pre><script src=https://evil.example/x.js></script> ``` fence ```` longer",
    "name": "<b>bold name</b> & co",
    "label": "<u>label</u>",
    "custom_type": "<marquee>custom</marquee>",
    "compaction": "</main></body></html><script>alert(4)</script> compacted",
    "branch": "<base href=https://evil.example/> branch summary",
    "cwd": "/home/<p>/project",
    "model": "<model>",
    "error": "<object data=x></object> failed",
    "bash": "echo '<script>'; rm -rf </tmp>",
}
ESCAPES = "colour \x1b[31mred\x1b[0m and \u202edesrever\u202c and bell\x07"  # controls: removed on export


def _entry(entries: list[dict[str, Any]], entry_id: str, parent: str | None, **fields: Any) -> str:
    stamp = f"2025-01-01T00:{len(entries) // 60:02d}:{len(entries) % 60:02d}.000Z"
    entries.append({"id": entry_id, "parentId": parent, "timestamp": stamp, **fields})
    return entry_id


def hostile_entries() -> list[dict[str, Any]]:
    """Two branches off a bash run; branch A (the leaf's) is compacted, keeping every message."""
    h = HOSTILE
    entries: list[dict[str, Any]] = []
    _entry(entries, "m0", None, type="model_change", provider=h["model"], modelId="m-1")
    user_content = [
        {"type": "text", "text": h["user"] + "\n" + ESCAPES},
        {"type": "image", "mimeType": "image/png", "data": IMAGE_DATA},
    ]
    _entry(entries, "u1", "m0", type="message", message={"role": "user", "content": user_content})
    assistant = {
        "role": "assistant",
        "provider": h["model"],
        "model": "m-1",
        "stopReason": "toolUse",
        "content": [
            {"type": "thinking", "thinking": h["thinking"], "thinkingSignature": "sig"},
            {"type": "text", "text": h["assistant"]},
            {"type": "toolCall", "id": "c1", "name": h["tool_name"], "arguments": {"path": h["argument"]}},
        ],
    }
    _entry(entries, "a1", "u1", type="message", message=assistant)
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": h["tool_name"],
        "isError": False,
        "content": [
            {"type": "text", "text": h["output"]},
            {"type": "image", "mimeType": "image/png", "data": IMAGE_DATA},
        ],
    }
    _entry(entries, "t1", "a1", type="message", message=result)
    _entry(entries, "x1", "t1", type="custom_message", customType=h["custom_type"], content="custom body", display=True)
    bash = {"role": "bashExecution", "command": h["bash"], "output": "bash output", "exitCode": 1}
    _entry(entries, "b1", "x1", type="message", message=bash)
    # branch B (older, so shown first): a branch summary
    _entry(entries, "uB", "b1", type="message", message={"role": "user", "content": "branch B prompt"})
    _entry(entries, "sB", "uB", type="branch_summary", fromId="b1", summary=h["branch"])
    # branch A: a compaction that keeps everything from u1, a failed reply, a label and the name (the leaf)
    _entry(entries, "uA", "b1", type="message", message={"role": "user", "content": "branch A prompt"})
    _entry(entries, "cA", "uA", type="compaction", summary=h["compaction"], firstKeptEntryId="u1", tokensBefore=120_000)
    failed = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": h["error"]}
    _entry(entries, "aA", "cA", type="message", message=failed)
    _entry(entries, "lab", "aA", type="label", targetId="u1", label=h["label"])
    _entry(entries, "n1", "lab", type="session_info", name=h["name"])
    return entries


def write_hostile_session(path: Path) -> Path:
    header = {"type": "session", "version": 3, "id": "hostile-<id>", "timestamp": STAMP, "cwd": HOSTILE["cwd"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [header, *hostile_entries()]))
    return path


# -- a strict HTML checker ------------------------------------------------------------------------

VOID = {"meta", "br", "hr", "img", "input", "link"}
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "dl", "dt", "dd", "main",
    "article", "div", "span", "details", "summary", "pre", "p", "footer", "ul", "li",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class"}


class StrictHTML(HTMLParser):
    """Fails on an unbalanced or unknown tag, an attribute seance does not write, or a
    declaration other than the doctype; collects the text nodes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: Counter[str] = Counter()
        self.text: list[str] = []
        self.doctype = False

    def handle_decl(self, decl: str) -> None:
        assert decl.lower() == "doctype html" and not self.doctype, decl
        self.doctype = True

    def unknown_decl(self, data: str) -> None:
        raise AssertionError(f"unexpected declaration {data!r}")

    def handle_comment(self, data: str) -> None:
        raise AssertionError(f"unexpected comment {data!r}")

    def handle_pi(self, data: str) -> None:
        raise AssertionError(f"unexpected processing instruction {data!r}")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in ALLOWED_TAGS, f"unexpected tag <{tag}>"
        for name, _value in attrs:
            assert name in ALLOWED_ATTRIBUTES, f"unexpected attribute {name!r} on <{tag}>"
        self.tags[tag] += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise AssertionError(f"self-closing <{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        top = self.stack.pop()
        assert top == tag, f"</{tag}> closes <{top}>"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_page(page: str, *, dom: bool = False) -> StrictHTML:
    """Parse `page` strictly; `dom`: a browser's serialised DOM (no doctype check)."""
    parser = StrictHTML()
    parser.feed(page)
    parser.close()
    assert not parser.stack, f"unclosed: {parser.stack[-5:]}"
    assert dom or parser.doctype, "no <!DOCTYPE html>"
    assert parser.tags["html"] == parser.tags["body"] == parser.tags["head"] == 1
    return parser


# -- headless Chromium ----------------------------------------------------------------------------


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_dom(page: Path, timeout: float = 60) -> str:
    """The DOM Chromium builds from `page` (a file URL: no network), serialised."""
    binary = chromium()
    assert binary is not None
    home = page.parent / "chromium-home"  # its profile and crash dumps stay in the test's directory
    home.mkdir(exist_ok=True)
    result = subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",  # the tests may run as root, where the sandbox refuses to start
            "--disable-gpu",
            f"--user-data-dir={home}",
            "--dump-dom",
            page.absolute().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout
