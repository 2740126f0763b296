"""Kept query rows updated in place after a few files changed (an agent's append).

`indexquery._updated_rows` finds which kept rows (`queryrows.KeptRows`) still match the
index's row checks and reads only the others.  Making every row a tuple again and sorting
them all (`indexquery.fresh_sessions`), then packing them, was ~400 ms of the first query
after an append at 100,000 sessions.  Here the order `fresh_sessions` gives is made by
splicing instead: the kept rows are in it already (newest first, equal times in the order
the files are found), so the rows still kept stay in their order, and each row read again
goes where that order puts it (`Run`s of kept rows and the new rows between them:
`KeptRows.spliced`).  Only when every file found is one the index has, as it is
(`listed_only`), and every session read again has its text indexed (else `fresh_sessions`
says which are stale).  It relies on what `fresh_sessions` relies on: the files found in
the same order as before for those that did not change (discovery sorts by name, the
watcher inserts by the same key).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import compress, repeat
from operator import and_, eq, is_not, itemgetter, not_
from typing import TYPE_CHECKING

from .queryrows import KeptRows, Run

if TYPE_CHECKING:
    from .discovery import FileInfo

# the columns of `Index.query_rows()` used here, and of `Index.row_checks()`
_PATH, _SESSION, _TEXT_SEQ, _MODIFIED, _HAS_JSON, _REASON = 1, 4, 5, 6, 10, 11
_CHECKED_STAT = itemgetter(1, 2, 3)


def listed_only(
    stored: list[tuple], retained: list[int | None], read: list[tuple], infos: Sequence[FileInfo]
) -> tuple[list[int | None], list[tuple]] | None:
    """`retained` and the rows `read` again (`retained_positions`' of the index's rows
    `stored`: `Index.row_checks()`) with the files found now (`infos`) alone, when every one
    of them is a file the index has, as it is now (path, size, mtime): then none is stale, as
    `fresh_sessions` would find, and a row of a file gone since (the index forgets it only
    when it next reads the files: a watcher, the picker, `index`) is not listed, as there.
    None when a file found is new or changed (`fresh_sessions` says which are stale).
    (Compared in C, as sets of tuples.)"""
    found = set(infos)
    listed = list(map(found.__contains__, map(_CHECKED_STAT, stored)))
    if len(found) != len(infos) or listed.count(True) != len(found):  # (the index's paths are distinct)
        return None
    if len(stored) == len(found):
        return retained, read
    retained = [position if is_listed else None for position, is_listed in zip(retained, listed, strict=True)]
    return retained, [row for row in read if _CHECKED_STAT(row) in found]


def pieces(
    kept: KeptRows, retained: list[int | None], read: list[tuple], infos: Sequence[FileInfo]
) -> tuple[list[Run | tuple], list[tuple[str, str]]] | None:
    """`fresh_sessions`' order of the kept rows still the index's (`retained`: each one's
    position among `kept`, None for those read again) and the sessions among the rows `read`
    again: `Run`s of kept positions and new rows; and the files among them that are not
    sessions (path, reason), in the order they were found.  None when a session's text was
    never indexed (`fresh_sessions` says it is stale)."""
    if any(row[_SESSION] and row[_TEXT_SEQ] < 0 for row in read):
        return None
    new = [row for row in read if row[_SESSION] and row[_HAS_JSON]]
    if any(type(row[_MODIFIED]) is not int for row in new):
        return None
    skipped: list[tuple[str, str]] = []
    if len(new) < len(read):  # files that are not sessions: listed in the files' order
        where = {info[0]: at for at, info in enumerate(infos)}
        others = [row for row in read if not (row[_SESSION] and row[_HAS_JSON])]
        others.sort(key=lambda row: where[row[_PATH]])
        skipped = [(row[_PATH], row[_REASON] or "not a session") for row in others]
    gone = sorted(set(range(len(kept))).difference(compress(retained, map(is_not, retained, repeat(None)))))
    runs: list[Run] = []
    start = 0
    for position in gone:
        if position > start:
            runs.append(Run(start, position))
        start = position + 1
    if start < len(kept):
        runs.append(Run(start, len(kept)))
    # the kept times still listed, newest first (as `fresh_sessions` sorted them), negated: rising
    times = [-time for low, high in runs for time in kept.modified[low:high]]
    places = [bisect_left(times, -row[_MODIFIED]) for row in new]
    found_at: dict[str, int] | None = None
    ties = [bisect_right(times, -row[_MODIFIED]) > place for row, place in zip(new, places, strict=True)]
    if any(ties) or len({row[_MODIFIED] for row in new}) < len(new):
        # an equal time: the files' order decides (`fresh_sessions` sorts stably)
        found_at = {info[0]: at for at, info in enumerate(infos)}
        listed = [Run(low, high) for low, high in runs]
        for number, row in enumerate(new):
            if ties[number]:
                place = places[number]
                high = bisect_right(times, -row[_MODIFIED])
                mine = found_at[row[_PATH]]
                while place < high and found_at[_kept_path(kept, listed, place)] < mine:
                    place += 1
                places[number] = place
    order = sorted(
        range(len(new)),
        key=lambda number: (places[number], -new[number][_MODIFIED], found_at[new[number][_PATH]] if found_at else 0),
    )
    spliced: list[Run | tuple] = []
    done = at = 0  # kept rows placed, new rows placed (`order`)
    for low, high in runs:
        while at < len(order) and places[order[at]] < done + high - low:
            cut = low + places[order[at]] - done
            if cut > low:
                spliced.append(Run(low, cut))
                done, low = done + cut - low, cut
            spliced.append(new[order[at]])
            at += 1
        spliced.append(Run(low, high))
        done += high - low
    spliced += [new[number] for number in order[at:]]
    return spliced, skipped


def _kept_path(kept: KeptRows, runs: list[Run], place: int) -> str:
    """The path of the `place`-th kept row still listed (`runs` of them)."""
    for low, high in runs:
        if place < high - low:
            starts = kept.path_starts()
            return kept.paths[starts[low + place] : starts[low + place + 1] - 1]
        place -= high - low
    raise IndexError(place)


def retained_positions(kept: KeptRows, stored: list[tuple]) -> list[int | None]:
    """For each of the index's rows (`Index.row_checks()`), its position among `kept` when
    its file id, row check and title check are the kept row's (used as kept), else None
    (read again).  (By file id, then the checks compared as columns, in C: keyed by
    (file id, check, title check) tuples it was ~70 ms at 100,000 rows, this ~50.)"""
    count = len(kept)
    where = dict(zip(kept.file_ids, range(count), strict=True))
    found = list(map(where.get, map(itemgetter(0), stored), repeat(count)))  # (count: a file id not kept)
    checks, title_checks = [*kept.checks, None], [*kept.title_checks, None]  # (None last: no check equals it)
    same = map(
        and_,
        map(eq, map(checks.__getitem__, found), map(itemgetter(4), stored)),
        map(eq, map(title_checks.__getitem__, found), map(itemgetter(5), stored)),
    )
    positions: list[int | None] = list(found)
    for at in compress(range(len(positions)), map(not_, same)):
        positions[at] = None
    return positions
