"""Recall, property-style: a word or phrase the context preview shows of a session pi's own
SessionManager wrote finds that session, in the field the preview shows it in, and a
negation of it leaves the session out.  Words are picked from the preview's blocks
(`_message_block`, what the pane renders) of random entries, every branch's, with their
punctuation (paths, `[bold]x[/]`, `100%`, `héllo`, `日本語`, emoji beside words)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import node_oracle_available, run_node

from seance.app.widgets.context_preview import _message_block
from seance.core.catalog import Catalog
from seance.core.context import ContextMessage, as_message, compaction_summary
from seance.core.search import parse_query, search
from seance.core.session import read_session
from seance.core.summary import tool_calls_by_id

pytestmark = pytest.mark.skipif(not node_oracle_available(), reason="node or tests/oracle/node_modules missing")

# The preview's block kinds -> the index's field of its body ("bash" is a bash run's output).
FIELD_OF = {
    "user": "user",
    "assistant": "assistant",
    "tool": "result",
    "error": "error",
    "bash": "result",
    "custom": "custom",
    "branch": "summary",
    "compaction": "summary",
}
_CALL = re.compile(r"^\[(read|write|edit|bash|ls): (.*)\]$")  # calls whose line shows their arguments whole
_NOTE = re.compile(r"^… \(|^\((no content|aborted)\)$|^\[\d+ images?\]$")  # what the pane adds


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Catalog]]:
    """Sessions pi wrote (seeded), indexed by a catalog of their project folders."""
    out = tmp_path_factory.mktemp("pi-recall")
    run_node("generate.mjs", str(out), "--count", "40", "--seed", "19")
    sessions = out / "sessions"
    catalog = Catalog(sorted(sessions.iterdir()), cache_dir=out / "cache")
    try:
        yield sessions, catalog
    finally:
        catalog.close()


def shown_lines(item: ContextMessage, calls: Any) -> list[tuple[str, str]]:
    """(field, line) of what the preview shows of one message, without what the pane adds
    (notes, a clipped last line) and the calls' lines whose arguments it cuts or adds to."""
    block = _message_block(item, calls)
    lines = block.body.split("\n")
    if lines[-1].startswith("… (") and "more character" in lines[-1]:
        lines = lines[:-2]  # (the line before is cut mid-word)
    found = [(FIELD_OF[block.kind], line) for line in lines if not _NOTE.match(line)]
    if block.kind == "assistant" and item.message.get("errorMessage"):
        found = [("error", line) for _, line in found]
    if block.kind == "bash":
        found.append(("bash", block.title.removeprefix("[bash]: ")))
    for line in block.calls:
        if (call := _CALL.match(line)) and not line.endswith("...]"):
            name, rest = call.groups()
            found.append(("bash", rest) if name == "bash" else ("tool", f"{name} {rest}"))
    return [(field, line) for field, line in found if any(char.isalnum() for char in line)]


def messages_of(path: Path) -> tuple[list[ContextMessage], Any]:
    """Every message the preview can show of a session (each entry's, on every branch), and
    its tool calls by id (a result's title)."""
    session = read_session(path)
    assert session
    found = []
    for entry in session.entries:
        if entry.get("type") == "compaction" and isinstance(entry.get("summary"), str):
            found.append(compaction_summary(entry))
        elif (item := as_message(entry)) is not None:
            found.append(item)
    return found, tool_calls_by_id(session.entries)


def phrase_of(line: str, rng: random.Random) -> str | None:
    """One word or a run of 2-4 words of `line` (whitespace-split, punctuation kept), as a
    quoted phrase; None when what was picked has no letter or digit (the index has no word
    for it: such a term is searched in the titles alone)."""
    words = line.split()
    size = min(rng.choice((1, 2, 3, 4)), len(words))
    start = rng.randrange(len(words) - size + 1)
    phrase = " ".join(words[start : start + size]).replace('"', "")
    return f'"{phrase}"' if any(char.isalnum() for char in phrase) else None


def finds(catalog: Catalog, query: str) -> set[str]:
    """The picker's and `ls --query`'s way: the index's hits, negations left out, ranked."""
    summaries = catalog.refresh()
    excluded = catalog.text_excluded(parse_query(query), include_cwd=True)
    hits = {hit.path: hit for hit in catalog.search_text(query, include_cwd=True)}
    kept = [summary for summary in summaries if summary.path not in excluded]
    return {hit.summary.path for hit in search(kept, query, text_hits=hits, paths=True)}


def test_words_the_preview_shows_find_their_pi_written_session_200_trials(written: tuple[Path, Catalog]) -> None:
    sessions, catalog = written
    files = sorted(sessions.rglob("*.jsonl"))
    rng = random.Random(19)
    trials = misses = 0
    failures: list[str] = []
    while trials < 200:
        path = rng.choice(files)
        messages, calls = messages_of(path)
        if not messages:
            continue
        item = rng.choice(messages)
        lines = shown_lines(item, calls)
        if not lines:
            continue
        field, line = rng.choice(lines)
        phrase = phrase_of(line, rng)
        if phrase is None:
            continue
        trials += 1
        for query, wanted in ((phrase, True), (f"{field}:{phrase}", True), (f"{phrase} !{phrase}", False)):
            if (str(path) in finds(catalog, query)) != wanted:
                misses += 1
                failures.append(f"{query!r} ({item.role} {item.entry_id} of {path.name})")
    assert not failures, f"{misses} of {trials} trials: " + "; ".join(failures[:10])
