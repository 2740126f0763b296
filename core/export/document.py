"""The export document: a session's context (or its whole tree) as plain items, for any format.

`context_document` is what `seance show` gives (pi's `buildSessionContext` at a leaf, through
`core.context`), `tree_document` every entry in the tree's depth-first order with branch
points marked.  Each message becomes an `Item` of `Part`s (text, thinking, a tool call with
its arguments, a tool's output, an image reference, an error), so the Markdown, HTML and
JSON writers only lay them out.  No base64 ever reaches an item: an image is a reference
("[image: image/png, 34 KB]").  Strings are the session's own, unsanitised: each writer
escapes them for its format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from seance import __version__

from ..blobs import BlobStore, is_blob_ref
from ..context import ContextMessage, SessionContext, build_session_context
from ..session import Session
from ..summary import entry_summary, format_tool_call, tool_calls_by_id, tool_result_title
from ..text import as_text, content_text, display_text, user_run


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a message.

    kind: text | thinking | tool_call | tool_output | image | error | note.
    `title`: a one-line heading (a tool call's `[bash: ls]`), `text`: the body; for a tool
    call `data` is its arguments as JSON can carry them (None when they cannot be).
    """

    kind: str
    text: str = ""
    title: str = ""
    data: Any = None


@dataclass(slots=True)
class Item:
    """One message of the context, or one entry of the tree."""

    entry_id: str
    # user | assistant | toolResult | bashExecution | pythonExecution | custom | branchSummary
    # | compactionSummary | event
    kind: str
    heading: str  # "user", "assistant · anthropic/claude", "tool result [bash: ls]" ...
    timestamp: str = ""
    label: str | None = None
    parts: list[Part] = field(default_factory=list)
    error: bool = False
    # the tree only
    parent_id: str | None = None
    depth: int = 0
    branch_start: bool = False  # the first entry of a branch (its parent has several children)
    on_path: bool = False  # on the path from the root to the export's leaf
    is_leaf: bool = False


@dataclass(slots=True)
class ExportDocument:
    scope: str  # "context" | "tree"
    title: str
    path: str
    session_id: str
    name: str | None
    cwd: str
    leaf_id: str | None
    thinking_level: Any
    model: dict[str, Any] | None
    items: list[Item]
    problems: list[str]
    thinking_shown: bool
    generator: str = f"seance {__version__}"

    def meta(self) -> list[tuple[str, str]]:
        """(what, value) lines for a header, plain and unsanitised."""
        model = self.model
        model_text = "/".join(as_text(v) for v in (model.get("provider"), model.get("modelId")) if v) if model else ""
        rows = [
            ("session", self.session_id),
            ("name", self.name or ""),
            ("project", self.cwd),
            ("file", self.path),
            ("exported", "the whole tree" if self.scope == "tree" else "the context the session resumes with"),
            ("leaf", self.leaf_id or "(before the first entry)"),
            ("model", model_text),
            ("thinking level", as_text(self.thinking_level)),
            ("messages" if self.scope == "context" else "entries", f"{len(self.items):,}"),
            ("thinking blocks", "shown" if self.thinking_shown else "hidden (--thinking shows them)"),
        ]
        if self.problems:
            rows.append(("problems while reading", f"{len(self.problems)} (skipped or repaired)"))
        return [(what, value) for what, value in rows if value]


DEFAULT_LEAF: Any = object()
"""Sentinel for `leaf`: the session's own leaf (where pi resumes it)."""


def _context(session: Session, leaf: Any) -> SessionContext:
    return build_session_context(session) if leaf is DEFAULT_LEAF else build_session_context(session, leaf)


# -- parts --------------------------------------------------------------------------------------


def human_size(size: int) -> str:
    """34 KB, 1.2 MB, 512 B."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def image_reference(block: dict[str, Any], blobs: BlobStore | None = None) -> str:
    """`[image: image/png, 34 KB]` for an image block, never its data (oh-my-pi's blob
    references are sized from the blob file, never read)."""
    mime = display_text(block.get("mimeType") or block.get("mediaType") or "image", 60)
    data = block.get("data")
    if isinstance(data, str) and is_blob_ref(data):
        blob = (blobs or BlobStore()).path_of(data)
        try:
            size = human_size(blob.stat().st_size) if blob is not None else "invalid blob reference"
        except OSError:
            size = "blob not found"
        return f"[image: {mime}, {size}]"
    if isinstance(data, str):
        padding = len(data) - len(data.rstrip("="))
        return f"[image: {mime}, {human_size(max(len(data) * 3 // 4 - padding, 0))}]"
    return f"[image: {mime}, no data]"


def _arguments(args: Any) -> tuple[str, Any]:
    """Tool-call arguments as indented JSON text, and as a value JSON can carry (None if it
    cannot: nested too deeply, an integer beyond 64 bits)."""
    try:
        return orjson.dumps(args, option=orjson.OPT_INDENT_2).decode(), args
    except TypeError:  # orjson.JSONEncodeError is one
        return as_text(args), None


def _content_parts(content: Any, thinking: bool, blobs: BlobStore | None) -> list[Part]:
    """A message `content` (a string or blocks) as parts, in order."""
    if isinstance(content, str):
        return [Part("text", content)] if content else []
    parts: list[Part] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if block["text"]:
                parts.append(Part("text", block["text"]))
        elif kind == "thinking":
            if thinking:
                text = block.get("thinking")
                redacted = block.get("redacted") is True
                parts.append(Part("thinking", "[redacted]" if redacted else as_text(text)))
        elif kind == "toolCall":
            text, data = _arguments(block.get("arguments"))
            title = format_tool_call(block.get("name"), block.get("arguments"))
            parts.append(Part("tool_call", text, title, {"id": block.get("id"), "name": block.get("name"), "ok": data}))
        elif kind == "image":
            parts.append(Part("image", image_reference(block, blobs)))
        else:
            parts.append(Part("note", f"[{display_text(kind, 60)} block]"))
    return parts


def _model_text(message: dict[str, Any]) -> str:
    names = [as_text(message.get(key)) for key in ("provider", "model") if isinstance(message.get(key), str)]
    return "/".join(name for name in names if name)


def message_item(
    role: str,
    message: dict[str, Any],
    entry_id: str,
    calls: Mapping[str, dict[str, Any]],
    *,
    thinking: bool,
    blobs: BlobStore | None = None,
) -> Item:
    """One context message (`ContextMessage.role` / `.message`) as an item."""
    if role == "user":
        return Item(entry_id, "user", "user", parts=_content_parts(message.get("content"), thinking, blobs))
    if role == "assistant":
        model = _model_text(message)
        item = Item(entry_id, "assistant", f"assistant · {model}" if model else "assistant")
        item.parts = _content_parts(message.get("content"), thinking, blobs)
        if message.get("errorMessage"):
            item.error = True
            item.parts.append(Part("error", as_text(message.get("errorMessage"))))
        elif message.get("stopReason") == "aborted":
            item.parts.append(Part("note", "(aborted)"))
        elif not item.parts:
            item.parts.append(Part("note", "(no content)"))
        return item
    if role == "toolResult":
        title = tool_result_title(message, calls, 60)
        error = message.get("isError") is True
        content = message.get("content")
        output = content_text(content, "\n")
        item = Item(entry_id, "toolResult", f"tool result {title}{' (error)' if error else ''}", error=error)
        item.parts.append(Part("tool_output", output, f"output{' (error)' if error else ''}"))
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "image":
                item.parts.append(Part("image", image_reference(block, blobs)))
        return item
    if run := user_run(message):
        word, command = run[0], as_text(run[1])
        item = Item(entry_id, role, f"user {word}: {display_text(command, 120)}")
        item.parts.append(Part("tool_call", command, "command" if word == "bash" else "code"))
        code = message.get("exitCode")
        status = "cancelled" if message.get("cancelled") else f"exit {as_text(code)}" if code is not None else ""
        title = f"output ({status})" if status else "output"
        item.parts.append(Part("tool_output", as_text(run[2]), title))
        return item
    if role == "custom":
        kind = display_text(message.get("customType"), 60)
        item = Item(entry_id, "custom", f"custom message [{kind}]")
        item.parts = _content_parts(message.get("content"), thinking, blobs)
        return item
    if role == "branchSummary":
        summary = message.get("summary")
        return Item(entry_id, "branchSummary", "branch summary", parts=[Part("text", as_text(summary))])
    if role == "compactionSummary":
        tokens = message.get("tokensBefore")
        heading = "compaction summary"
        if isinstance(tokens, int | float) and not isinstance(tokens, bool) and abs(tokens) < 1e18:
            heading += f" ({round(tokens / 1000)}k tokens before)"
        return Item(entry_id, "compactionSummary", heading, parts=[Part("text", as_text(message.get("summary")))])
    text = ContextMessage(role, message, entry_id).text
    return Item(entry_id, "other", f"[{display_text(role, 60)}]", parts=[Part("text", text)])


def _stamp(entry: dict[str, Any] | None) -> str:
    value = entry.get("timestamp") if entry is not None else None
    return value if isinstance(value, str) else ""


# -- documents ----------------------------------------------------------------------------------


def _document(
    session: Session, scope: str, context: SessionContext, items: list[Item], thinking: bool
) -> ExportDocument:
    name = session.name
    return ExportDocument(
        scope=scope,
        title=display_text(name or session.id, 200) or session.path.name,
        path=str(session.path),
        session_id=session.id,
        name=name,
        cwd=session.cwd,
        leaf_id=context.leaf_id,
        thinking_level=context.thinking_level,
        model=context.model,
        items=items,
        problems=session.problems,
        thinking_shown=thinking,
    )


def context_document(
    session: Session, leaf: Any = DEFAULT_LEAF, *, thinking: bool = False, blobs: BlobStore | None = None
) -> ExportDocument:
    """The context the session resumes with at `leaf` (default: its own leaf, as pi resumes)."""
    blobs = blobs or BlobStore.for_session(session.path)
    context = _context(session, leaf)
    tree = session.tree
    path = tree.path_to(context.leaf_id)
    calls = tool_calls_by_id(path)
    items = []
    for message in context.messages:
        item = message_item(message.role, message.message, message.entry_id, calls, thinking=thinking, blobs=blobs)
        entry = tree.by_id.get(message.entry_id)
        item.timestamp = _stamp(entry)
        item.label = tree.labels.get(message.entry_id)
        items.append(item)
    return _document(session, "context", context, items, thinking)


def _entry_item(
    entry: dict[str, Any], calls: Mapping[str, dict[str, Any]], thinking: bool, blobs: BlobStore | None
) -> Item:
    """One tree entry: messages, summaries and compactions in full, anything else one line."""
    entry_id = entry["id"]
    kind = entry.get("type")
    message = entry.get("message")
    if kind == "message" and isinstance(message, dict):
        role = message.get("role")
        role = role if isinstance(role, str) else "unknown"
        return message_item(role, message, entry_id, calls, thinking=thinking, blobs=blobs)
    if kind == "custom_message":
        heading = f"custom message [{display_text(entry.get('customType'), 60)}]"
        return Item(entry_id, "custom", heading, parts=_content_parts(entry.get("content"), thinking, blobs))
    if kind == "branch_summary":
        return message_item("branchSummary", {"summary": entry.get("summary")}, entry_id, calls, thinking=thinking)
    if kind == "compaction":
        message = {"summary": entry.get("summary"), "tokensBefore": entry.get("tokensBefore")}
        return message_item("compactionSummary", message, entry_id, calls, thinking=thinking)
    return Item(entry_id, "event", entry_summary(entry, 300, calls))


def tree_document(
    session: Session, leaf: Any = DEFAULT_LEAF, *, thinking: bool = False, blobs: BlobStore | None = None
) -> ExportDocument:
    """Every entry, depth-first, children oldest first; as in pi's /tree a single-child chain
    stays at its depth and each branch of a branch point goes one deeper.  The path to
    `leaf` (default: the session's leaf) is marked."""
    blobs = blobs or BlobStore.for_session(session.path)
    tree = session.tree
    context = _context(session, leaf)
    leaf_id = context.leaf_id
    on_path = tree.ancestors(leaf_id) if leaf_id is not None and leaf_id in tree.by_id else set()
    calls = tool_calls_by_id(session.entries)
    many = tree.children.many
    several_roots = len(tree.roots) > 1
    items = []
    for entry_id, depth, parent in tree.walk(flat_chains=True, first_depth=1 if several_roots else 0):
        entry = tree.by_id[entry_id]
        item = _entry_item(entry, calls, thinking, blobs)
        item.timestamp = _stamp(entry)
        item.label = tree.labels.get(entry_id)
        item.parent_id = parent
        item.depth = depth
        item.branch_start = (parent in many) if parent is not None else several_roots
        item.on_path = entry_id in on_path
        item.is_leaf = entry_id == leaf_id
        items.append(item)
    return _document(session, "tree", context, items, thinking)
