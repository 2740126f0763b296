"""An export document as Markdown: a header list, then one section per message.

Message text is the session's own Markdown (that is how agents write), sanitised
(`safe_multiline`: no control character or escape sequence survives, so `cat` of the file
on a terminal is as safe as the terminal output), with `&` and `<` written as entities
outside code fences and code spans: a renderer that passes raw HTML through shows a
session's `<script>` as text, and code keeps its `<` as is.  Headings and one-line values are escaped
for Markdown; tool arguments, tool output and thinking go in code fences longer than any
backtick run inside them, so they show literally.  In the tree, each branch of a branch
point is one blockquote level deeper.
"""

from __future__ import annotations

import re

from ..text import display_text, safe_multiline
from .document import ExportDocument, Item, Part

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")
_BACKTICKS = re.compile(r"`+")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _prose_line(line: str) -> str:
    """One line outside a fence: entities outside its code spans, code spans as they are."""
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(line):
        out.extend((_entities(line[last : span.start()]), span.group()))
        last = span.end()
    out.append(_entities(line[last:]))
    return "".join(out)


def md_prose(value: object) -> list[str]:
    """Session Markdown as lines: sanitised, and no raw HTML outside code (see the module doc)."""
    lines = []
    fence: str | None = None  # the open fence's characters
    for line in safe_multiline(value).split("\n"):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
            lines.append(line)
        elif marker:
            fence = marker.group(1)
            lines.append(line)
        else:
            lines.append(_prose_line(line))
    if fence is not None:  # closed here, or it would swallow the rest of the document
        lines.append(fence)
    return lines


def md_inline(value: object, limit: int | None = None) -> str:
    """One line of session text, its Markdown punctuation backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", display_text(value, limit))


def fenced(text: str, info: str = "") -> list[str]:
    """A code fence that no backtick run in `text` can close (counted on the text as it is
    written: the sanitiser joins two runs a control or an escape sequence kept apart)."""
    body = safe_multiline(text)
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body.split("\n"), fence]


def _part(part: Part) -> list[str]:
    if part.kind == "text":
        return [*md_prose(part.text), ""]
    if part.kind == "thinking":
        return ["*thinking:*", "", *fenced(part.text, "text"), ""]
    if part.kind == "tool_call":
        return [f"**{md_inline(part.title)}**", "", *fenced(part.text, "json" if part.data else ""), ""]
    if part.kind == "tool_output":
        return [f"*{md_inline(part.title)}:*", "", *fenced(part.text), ""]
    if part.kind == "error":
        return ["**error:**", "", *fenced(part.text), ""]
    return [f"*{md_inline(part.text)}*", ""]


def _item(item: Item, number: int) -> list[str]:
    bits = [md_inline(item.heading, 300)]
    if item.label:
        bits.append(f"label **{md_inline(item.label, 200)}**")
    if item.timestamp:
        bits.append(md_inline(item.timestamp, 60))
    bits.append(f"id {md_inline(item.entry_id, 100)}")
    if item.is_leaf:
        bits.append("**◀ leaf**")
    if item.kind == "event":
        return [f"- *{' · '.join(bits)}*", ""]
    marker = " ●" if item.on_path else ""
    lines = [f"### {number}. {' · '.join(bits)}{marker}", ""]
    for part in item.parts:
        lines.extend(_part(part))
    return lines


def _quoted(lines: list[str], depth: int) -> list[str]:
    if depth <= 0:
        return lines
    prefix = "> " * depth
    return [(prefix + line).rstrip() if line else prefix.rstrip() for line in lines]


def render_markdown(doc: ExportDocument) -> str:
    out = [f"# {md_inline(doc.title, 200)}", ""]
    out.extend(f"- **{what}:** {md_inline(value)}" for what, value in doc.meta())
    if doc.scope == "tree":
        out.extend(["", "In the tree, `●` marks the path to the leaf; each branch is one quote level deeper."])
    out.extend(["", "---", ""])
    if not doc.items:
        out.extend(["*Nothing here: the context is empty at this point.*", ""])
    number = 0
    for item in doc.items:
        lines: list[str] = []
        if item.branch_start:
            parent = f" of {md_inline(item.parent_id, 100)}" if item.parent_id else ""
            lines.extend([f"**↳ branch{parent}**", ""])
        if item.kind != "event":
            number += 1
        lines.extend(_item(item, number))
        out.extend(_quoted(lines, item.depth))
    if doc.problems:
        out.extend(["---", "", "Problems while reading (skipped or repaired):", ""])
        out.extend(f"- {md_inline(problem, 500)}" for problem in doc.problems[:50])
        out.append("")
    out.append(f"*Exported by {md_inline(doc.generator)}.*")
    return "\n".join(out) + "\n"
