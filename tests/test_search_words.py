"""The preview's words are meant to be the index's (unicode61 remove_diacritics 2).
Where Python folds or joins words the index does not, the preview marks (and opens at) text
the index never matched.  (Python's `re.IGNORECASE` also takes `ı` for `i`, which the
index does not: left as it is.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_ui_preview_match import chatter, message, text, write

from seance.app.widgets import context_preview as cp
from seance.core.search import parse_query
from seance.core.search.query import fold_accents, words_pattern
from seance.core.session import read_session


def index_matches(doc: str, query: str) -> bool:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO fts VALUES (?)", (doc,))
    return bool(db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (f'"{query}"',)).fetchone()[0])


def preview_matches(doc: str, query: str) -> bool:
    pattern = words_pattern(list(parse_query(f'"{query}"').positive))
    return bool(pattern is not None and pattern.search(fold_accents(doc)))


CASES = [
    ("мой", "мои"),  # Cyrillic short i: unicode61 folds only Latin diacritics
    ("ёлка", "елка"),
    ("άλφα", "αλφα"),  # Greek tonos
    ("がす", "かす"),  # kana dakuten
    ("أحمد", "احمد"),  # Arabic hamza
    ("Re\u0301sume\u0301", "re"),  # decomposed (NFD, macOS) text: the index joins the word, `re` is no word of it
    ("x\ue000y", "x"),  # a private-use character is a token character of unicode61 (Co)
]


@pytest.mark.parametrize(("doc", "query"), CASES)
def test_the_preview_marks_no_word_the_index_would_not_match(doc: str, query: str) -> None:
    assert not index_matches(doc, query)
    assert not preview_matches(doc, query), f"the preview marks {query!r} in {doc!r}; the index does not"


def test_the_preview_opens_at_the_message_the_index_matched_not_a_folded_lookalike(tmp_path: Path) -> None:
    # the index finds this session by `мои` (message 42); message 1 holds `мой`, another word
    path = write(
        tmp_path / "s.jsonl",
        message("user", text("это мой код")),
        *chatter(40),
        message("user", text("где мои файлы")),
        *chatter(40),
    )
    assert not index_matches("это мой код", "мои") and index_matches("где мои файлы", "мои")
    doc = cp.build_preview(read_session(path), query=parse_query("мои"))
    assert doc.at_match
    assert doc.blocks[0].body == "где мои файлы", f"opened at {doc.blocks[0].body!r} (earlier={doc.earlier})"


async def test_in_the_picker_the_preview_opens_at_the_index_s_match_not_the_lookalike(tmp_path: Path) -> None:
    from test_ui_preview_match import marked, preview_ready
    from ui_harness import picker_app, searched

    root = tmp_path / "sessions"
    write(
        root / "--work-demo-match--" / "s.jsonl",
        message("user", text("это мой код")),
        *chatter(40),
        message("user", text("где мои файлы")),
        *chatter(40),
    )
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        screen = await searched(pilot, "мои")
        assert len(screen.session_list.rows) == 1 and screen.session_list.rows[0].hit.tier == "full-text"
        preview = await preview_ready(pilot)
        doc = preview.document
        assert doc is not None and doc.at_match
        assert marked(preview) == ["мои"], f"marked {marked(preview)}, first block {doc.blocks[0].body!r}"


def test_the_fold_table_is_made_on_first_use_not_at_import() -> None:
    import subprocess
    import sys

    code = (
        "import seance.core.search.snippet, seance.app.widgets.context_preview\n"
        "from seance.core.search import words\n"
        "print(words._fold_table.cache_info().currsize, words.word_syntax.cache_info().currsize)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["0", "0"]
