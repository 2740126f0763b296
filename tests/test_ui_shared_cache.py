"""The picker on one root of an index cache shared with other roots (`sessions2`, whose name
extends its own, and the same store under a symbolic link): its first paint, both scopes
(Tab) and its search show its own sessions only, as with a private cache."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import OTHER, PROJECT, Spec, make_root, write_session

from seance.core.catalog import Catalog


def shown(pilot) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(row.summary.path for row in screen_of(pilot).session_list.rows)


async def test_tab_and_search_show_one_roots_sessions_from_a_shared_cache(tmp_path: Path) -> None:
    root = make_root(tmp_path)  # tmp/sessions: 5 sessions in PROJECT, 3 in OTHER
    neighbour = tmp_path / "sessions2"
    for number in range(6):  # more of the same project and words, under a name that extends the root's
        write_session(neighbour, Spec(f"n-{number}", PROJECT if number % 2 else OTHER, ("mention the zebra",)))
    write_session(neighbour, Spec("n-new", PROJECT, ("zebra again",), timedelta(minutes=1)))
    link = tmp_path / "link"
    link.symlink_to(root, target_is_directory=True)
    shared, private = tmp_path / "shared", tmp_path / "private"
    for cache, roots in ((shared, [neighbour, link, root]), (private, [root])):
        for each in roots:
            catalog = Catalog([each], cache_dir=cache)
            catalog.refresh()
            catalog.close()

    seen: dict[Path, list[list[str]]] = {}
    for cache in (shared, private):
        async with picker_app(root, cache_dir=cache).run_test(size=SIZE) as pilot:
            await settle(pilot)
            project = shown(pilot)
            await pilot.press("tab")
            await settle(pilot)
            everything = shown(pilot)
            await pilot.press(*"zebra")
            await settle(pilot)
            found = shown(pilot)
            await pilot.press("tab")
            await settle(pilot)
            seen[cache] = [project, everything, found, shown(pilot)]
    assert seen[shared] == seen[private]
    project, everything, found, found_here = seen[shared]
    assert len(project) == 5 and len(everything) == 8
    assert all(path.startswith(f"{root}/") for path in everything)
    assert (
        [path.rpartition("/")[2] for path in found]
        == ["s-docs.jsonl"]
        == [path.rpartition("/")[2] for path in found_here]
    )
