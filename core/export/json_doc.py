"""An export document as JSON: the session's own strings, exact, with structure.

    {"format": "seance-export", "formatVersion": 1, "scope": "context" | "tree", "path", "id",
     "name", "cwd", "leafId", "thinkingLevel", "model", "thinkingShown",
     "messages" | "nodes": [{"entryId", "kind", "heading", "timestamp", "label", "error",
                             "parts": [{"type", "text", "title", ("toolCallId", "name", "arguments")}],
                             tree only: "parentId", "depth", "branchStart", "onPath", "isLeaf"}],
     "problems": [...]}

Images are references in `text`, never base64.  Tool-call arguments JSON cannot carry
(nested too deeply, integers beyond 64 bits) are null, with their text in `text`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..text import unsurrogate
from .document import ExportDocument, Item, Part

_INT64 = 1 << 63


def _scalar(value: Any) -> Any:
    """A field that should be a string or number, as JSON can carry it."""
    if isinstance(value, dict | list):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return str(value)
    return value


def _part(part: Part) -> dict[str, Any]:
    out: dict[str, Any] = {"type": part.kind, "text": part.text}
    if part.title:
        out["title"] = part.title
    if part.kind == "tool_call" and isinstance(part.data, dict):
        out["toolCallId"] = _scalar(part.data.get("id"))
        out["name"] = _scalar(part.data.get("name"))
        out["arguments"] = part.data.get("ok")
    return out


def _item(item: Item, tree: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "entryId": item.entry_id,
        "kind": item.kind,
        "heading": item.heading,
        "timestamp": item.timestamp or None,
        "label": item.label,
        "error": item.error,
        "parts": [_part(part) for part in item.parts],
    }
    if tree:
        out.update(
            parentId=item.parent_id,
            depth=item.depth,
            branchStart=item.branch_start,
            onPath=item.on_path,
            isLeaf=item.is_leaf,
        )
    return out


def json_payload(doc: ExportDocument) -> dict[str, Any]:
    tree = doc.scope == "tree"
    model = doc.model
    return {
        "format": "seance-export",
        "formatVersion": 1,
        "generator": doc.generator,
        "scope": doc.scope,
        "path": unsurrogate(doc.path),
        "id": doc.session_id,
        "name": doc.name,
        "cwd": doc.cwd,
        "leafId": doc.leaf_id,
        "thinkingLevel": _scalar(doc.thinking_level),
        "model": {key: _scalar(value) for key, value in model.items()} if model is not None else None,
        "thinkingShown": doc.thinking_shown,
        "nodes" if tree else "messages": [_item(item, tree) for item in doc.items],
        "problems": doc.problems,
    }


def render_json(doc: ExportDocument) -> str:
    return orjson.dumps(json_payload(doc), option=orjson.OPT_INDENT_2).decode() + "\n"
