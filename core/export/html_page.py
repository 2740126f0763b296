"""An export document as one self-contained HTML page: inline CSS, no script, no network.

Every piece of session text (messages, ids, names, paths, tool names and arguments) goes
through `_text`: controls, bidi overrides and lone surrogates removed (`safe_multiline`,
the one sanitiser), then `html.escape`, so a session holding `</details><script>` shows
those characters and nothing else.  The page also forbids scripts and every fetch with a
Content-Security-Policy, in case a browser ever met markup that escaped the escaping.
Tool calls, tool output and thinking are `<details>` (collapsed); branches of the tree are
nested `<div class="branch">` blocks, indented by CSS.
"""

from __future__ import annotations

import html

from ..text import display_text, safe_multiline
from .document import ExportDocument, Item, Part

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --dim: #656d76; --line: #d0d7de;
  --user: #0969da; --assistant: #1a7f37; --tool: #8250df; --error: #cf222e; --summary: #9a6700; --path: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --dim: #8d96a0; --line: #30363d;
    --user: #4493f8; --assistant: #3fb950; --tool: #a371f7; --error: #f85149; --summary: #d29922; --path: #4493f8; }
}
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
  margin: 0 auto; padding: 1.5em; max-width: 70em; }
h1 { font-size: 1.4em; margin: 0 0 .4em; overflow-wrap: anywhere; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; margin: 0 0 1.5em;
  color: var(--dim); font-size: .9em; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.msg { border-left: 4px solid var(--line); padding: .3em .8em; margin: .8em 0; }
.msg.user { border-color: var(--user); } .msg.assistant { border-color: var(--assistant); }
.msg.toolResult, .msg.bashExecution, .msg.pythonExecution { border-color: var(--tool); }
.msg.compactionSummary, .msg.branchSummary { border-color: var(--summary); background: rgba(154,103,0,.08); }
.msg.error { border-color: var(--error); }
.head { font-size: .85em; color: var(--dim); }
.head .role { font-weight: 700; color: var(--fg); }
.head .label { border: 1px solid var(--line); border-radius: 4px; padding: 0 .3em; }
.head .leaf { color: var(--path); font-weight: 700; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3em 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.4 ui-monospace, "SF Mono", Menlo, monospace;
  background: rgba(127,127,127,.1); padding: .5em; margin: .3em 0; border-radius: 4px; }
details { margin: .3em 0; } summary { cursor: pointer; color: var(--dim); overflow-wrap: anywhere; }
details.thinking .text { color: var(--dim); font-style: italic; }
.image, .note { color: var(--dim); font-style: italic; margin: .3em 0; }
.error-text { color: var(--error); white-space: pre-wrap; margin: .3em 0; }
.branch { margin-left: 1.2em; padding-left: .6em; border-left: 1px dashed var(--line); }
.branch-mark { font-size: .8em; color: var(--dim); margin-top: 1em; }
.event { font-size: .85em; color: var(--dim); margin: .2em 0 .2em .9em; overflow-wrap: anywhere; }
.on-path > .head .role::after { content: " ●"; color: var(--path); }
.event.on-path::before { content: "● "; color: var(--path); }
footer { margin-top: 2em; font-size: .8em; color: var(--dim); }
"""


def _text(value: object) -> str:
    """Session text for the page: the sanitiser, then HTML escaping (quotes too)."""
    return html.escape(safe_multiline(value), quote=True)


def _line(value: object, limit: int | None = None) -> str:
    """One-line session text (a heading, a summary) for the page."""
    return html.escape(display_text(value, limit), quote=True)


def _details(kind: str, summary: str, body: str) -> str:
    """A collapsed block; `summary` and `body` are HTML already."""
    return f'<details class="{kind}"><summary>{summary}</summary>{body}</details>'


def _pre(text: str) -> str:
    # the newline after <pre> is dropped by every parser: a first line of the text that is empty survives
    return f"<pre>\n{_text(text)}</pre>"


def _part(part: Part) -> str:
    if part.kind == "text":
        return f'<div class="text">{_text(part.text)}</div>'
    if part.kind == "thinking":
        return _details("thinking", "thinking", f'<div class="text">{_text(part.text)}</div>')
    if part.kind == "tool_call":
        return _details("tool-call", _line(part.title), _pre(part.text))
    if part.kind == "tool_output":
        lines = part.text.count("\n") + 1 if part.text else 0
        size = f"{lines:,} line{'s' if lines != 1 else ''}" if lines else "empty"
        return _details("tool-output", f"{_line(part.title)} · {size}", _pre(part.text))
    if part.kind == "error":
        return f'<div class="error-text">{_text(part.text)}</div>'
    if part.kind == "image":
        return f'<p class="image">{_line(part.text)}</p>'
    return f'<p class="note">{_line(part.text)}</p>'


def _head(item: Item) -> str:
    pieces = [f'<span class="role">{_line(item.heading, 300)}</span>']
    if item.label:
        pieces.append(f'<span class="label">{_line(item.label, 200)}</span>')
    if item.timestamp:
        pieces.append(f'<span class="when">{_line(item.timestamp, 60)}</span>')
    pieces.append(f'<span class="id">{_line(item.entry_id, 100)}</span>')
    if item.is_leaf:
        pieces.append('<span class="leaf">◀ leaf</span>')
    return '<div class="head">' + " · ".join(pieces) + "</div>"


def _item(item: Item) -> str:
    classes = ["msg", item.kind]
    if item.error:
        classes.append("error")
    if item.on_path:
        classes.append("on-path")
    if item.kind == "event":
        leaf = ' <span class="leaf">◀ leaf</span>' if item.is_leaf else ""
        label = f' <span class="label">[{_line(item.label, 200)}]</span>' if item.label else ""
        on_path = " on-path" if item.on_path else ""
        text = f"{_line(item.heading, 300)}{label} · {_line(item.entry_id, 100)}{leaf}"
        return f'<div class="event{on_path}">{text}</div>'
    body = "".join(_part(part) for part in item.parts)
    return f'<article class="{" ".join(classes)}">{_head(item)}{body}</article>'


def _tree_body(items: list[Item]) -> list[str]:
    """Items in pre-order as nested branch blocks: each branch of a branch point opens a
    `<div class="branch">` one level deeper; every block opened is closed."""
    out: list[str] = []
    open_blocks = 0
    for item in items:
        keep = item.depth - 1 if item.branch_start else item.depth
        while open_blocks > max(keep, 0):
            out.append("</div>")
            open_blocks -= 1
        if item.branch_start:
            while open_blocks < item.depth:
                out.append('<div class="branch">')
                open_blocks += 1
            parent = f" of {_line(item.parent_id, 100)}" if item.parent_id else ""
            out.append(f'<div class="branch-mark">↳ branch{parent}</div>')
        out.append(_item(item))
    out.extend("</div>" for _ in range(open_blocks))
    return out


def render_html(doc: ExportDocument) -> str:
    """The page, as text (UTF-8 when written)."""
    meta = "".join(f"<dt>{html.escape(what)}</dt><dd>{_line(value)}</dd>" for what, value in doc.meta())
    body = _tree_body(doc.items) if doc.scope == "tree" else [_item(item) for item in doc.items]
    if not doc.items:
        body = ['<p class="note">Nothing here: the context is empty at this point.</p>']
    elif doc.scope == "tree":
        legend = "● marks the path to the leaf; each branch is indented under the entry it branches from."
        body.insert(0, f'<p class="note">{legend}</p>')
    problems = "".join(f"<li>{_line(problem, 500)}</li>" for problem in doc.problems[:50])
    footer = f"<footer>Exported by {html.escape(doc.generator)}."
    if problems:
        footer += f" Problems while reading (skipped or repaired):<ul>{problems}</ul>"
    footer += "</footer>"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="generator" content="{html.escape(doc.generator)}">',
            f"<title>{_line(doc.title, 200)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            f'<header><h1>{_line(doc.title, 200)}</h1><dl class="meta">{meta}</dl></header>',
            "<main>",
            *body,
            "</main>",
            footer,
            "</body>",
            "</html>",
            "",
        ]
    )
