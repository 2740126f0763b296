"""Once the keys stop after a word and a space, the picker looks for the query's fuzzy tier in
every session (`SearchFlow._fuzzy_ahead`, `core.search.fuzzy_ahead`): the next word's search,
which looks for it only where the index did not find the query, finds it kept (at 100,000
sessions ~17 ms of CPU on the way to the count of `'fts5 c'`)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ui_harness import SIZE, picker_app, screen_of, settle, wait_until
from ui_sessions import PROJECT, Spec, make_root

from seance.app.screens import search_flow
from seance.core.search import rank


def specs() -> list[Spec]:
    made = []
    for index in range(80):
        if index % 3 == 0:  # "qota" is in their title only fuzzily, "dep" as it is
            prompts: tuple[str, ...] = (f"quota deploy report {index}", "a look at the numbers")
        elif index % 10 == 1:  # the index finds "qota dep" here
            prompts = (f"release notes {index}", "qotas deploy notes")
        elif index % 3 == 1:  # and "qota" alone here: not "qota dep"
            prompts = (f"service logs {index}", "qotas and numbers")
        else:
            prompts = (f"service logs {index}", "deploy the service")
        made.append(Spec(f"s{index:03d}", PROJECT, prompts, timedelta(minutes=index + 1)))
    return made


async def test_the_next_words_search_finds_the_fuzzy_tier_kept(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(search_flow, "SEARCH_IDLE", 0.1)
    looked: list[tuple[str, int]] = []  # (the term, how many sessions) of each fuzzy tier looked for
    fuzzy = rank._Matcher._fuzzy

    def counted(self, term, block, candidates):  # type: ignore[no-untyped-def]
        looked.append((term.text, len(candidates)))
        return fuzzy(self, term, block, candidates)

    monkeypatch.setattr(rank._Matcher, "_fuzzy", counted)
    app = picker_app(make_root(tmp_path, specs()), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.search_input.value = "qota "  # its search looks where the index did not find "qota"
        await settle(pilot)
        # then, once idle, in the sessions where it found "qota" alone too
        await wait_until(pilot, lambda: [text for text, count in looked if count].count("qota") >= 2)
        await pilot.pause(0.2)
        looked.clear()
        screen.search_input.value = "qota dep"
        await settle(pilot)
        rows = screen.session_list.rows
        shown = {row.summary.id for row in rows}
        assert {f"s{index:03d}" for index in range(80) if index % 3 == 0} <= shown  # the fuzzy hits
        assert {f"s{index:03d}" for index in range(80) if index % 10 == 1} <= shown  # the index's
        assert not [count for text, count in looked if text == "qota" and count], looked  # all kept
