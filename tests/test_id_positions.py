"""`IdPositions` (entry id -> position, the dict made on first need) answers as the dict
would, whatever the order of the questions, and makes no dict for a view that asks about
rows near each other in file order, even a row every hundred entries (the tree screen's
first draw of a filtered chain: building the map was ~0.1 s of it on 200,000 entries)."""

from __future__ import annotations

import random

from seance.core import entries as entries_module
from seance.core.entries import IdPositions


def test_every_answer_is_the_dicts_whatever_the_order_of_the_questions() -> None:
    rng = random.Random(5)
    ids = [f"id-{n:x}" for n in range(30_000)]
    expected = {entry_id: position for position, entry_id in enumerate(ids)}
    questions = [*ids[-300::7], *rng.sample(ids, 400), *ids[::997], "missing", "", 3, None, ("t",)]
    positions = IdPositions(ids)
    for question in questions:
        assert positions.get(question) == expected.get(question)  # type: ignore[call-overload]
        assert (question in positions) == (question in expected)
        if question in expected:
            assert positions[question] == expected[question]  # type: ignore[index]
    assert list(positions) == ids and len(positions) == len(ids)
    fresh = IdPositions(ids)  # (items first: the map's own pairs, then every question from the map)
    assert list(fresh.items()) == list(expected.items()) and ("id-5", 5) in fresh.items()
    assert [fresh.get(question) for question in questions] == [expected.get(question) for question in questions]


def test_rows_spread_out_near_the_leaf_are_found_without_the_map() -> None:
    ids = [f"{n:x}" for n in range(200_000)]
    positions = IdPositions(ids)
    screen = ids[-100 * 45 :: 100]  # a screen of rows, one entry in a hundred, above the leaf
    for round_trip in (screen, screen[::-1], screen):
        assert [positions[entry_id] for entry_id in round_trip] == [ids.index(entry_id) for entry_id in round_trip]
    assert positions._map is None


def test_questions_all_over_the_session_soon_make_the_map() -> None:
    ids = [f"{n:x}" for n in range(100_000)]
    positions = IdPositions(ids)
    far = ids[:: len(ids) // (entries_module._WIDE_SEARCHES * 2)]  # each far from the one before
    for entry_id in far:
        assert positions[entry_id] == int(entry_id, 16)
    assert positions._map is not None
