"""An export document as Markdown: a header list, then one section per message.

Message text is the session's own Markdown (that is how agents write), sanitised
(`safe_multiline`: no control character or escape sequence survives, so `cat` of the file
on a terminal is as safe as the terminal output), with `&` and `<` written as entities
outside code as CommonMark sees it (`prose.md_prose`): a renderer that passes raw HTML
through shows a session's `<script>` as text, code keeps its `<` as is, and a fence a
message leaves open is closed at its end.  Headings and one-line values are escaped
for Markdown; tool arguments, tool output and thinking go in code fences longer than any
backtick run inside them, so they show literally.  In the tree, each branch of a branch
point is one blockquote level deeper.
"""

from __future__ import annotations

import re
from itertools import groupby

from ..text import display_text, safe_multiline
from .document import ExportDocument, Item, Part
from .prose import md_prose

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")
_BACKTICKS = re.compile(r"`+")


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
    if item.depth > MAX_QUOTE_DEPTH:  # (quoted no deeper: `_quoted`)
        bits.append(f"branch depth {item.depth}")
    if item.kind == "event":
        return [f"- *{' · '.join(bits)}*", ""]
    marker = " ●" if item.on_path else ""
    lines = [f"### {number}. {' · '.join(bits)}{marker}", ""]
    for is_text, run in groupby(item.parts, key=lambda part: part.kind == "text"):
        if is_text:  # one Markdown text: a list one part leaves open holds the next (`md_prose`)
            lines.extend([*md_prose(*(part.text for part in run)), ""])
        else:
            lines.extend(line for part in run for line in _part(part))
    return lines


# How many quote levels the tree's branches take at most: each level repeats `> ` on every
# line below it, so a session regenerated 2,000 times over made 64 MB of Markdown from 1.4 MB
# (and renderers give up past ~100 levels).  A deeper entry says its depth in its heading.
MAX_QUOTE_DEPTH = 8


def _quoted(lines: list[str], depth: int) -> list[str]:
    if depth <= 0:
        return lines
    prefix = "> " * min(depth, MAX_QUOTE_DEPTH)
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
