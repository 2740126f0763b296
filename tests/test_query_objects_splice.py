"""An answer kept as runs of the stored objects (`core.queryobjects`) is spliced from the
objects' file into a pipe (`cli.output.write_json_views`): the same bytes as a fresh
answer, into a pipe and into a file, for answers of one run and of many (real processes)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from test_query_objects import _corpus, _fresh, _stored

from seance.core.queryobjects import Objects, objects_file, runs, write

# the command's own process, every answer over 100 bytes kept as runs (as the 71 MB `sqlite`)
SCRIPT = (
    "import sys; from seance.core import catalog; catalog.ANSWER_BUDGET = 100; "
    "from seance.cli import main, output; output._SPLICE_FROM = int(sys.argv[1]); sys.exit(main(sys.argv[2:]))"
)


def _printed(command: list[str], cwd: Path, into_file: Path | None) -> tuple[int, bytes]:
    if into_file is None:
        done = subprocess.run(command, capture_output=True, check=False, cwd=cwd)  # a pipe
        return done.returncode, done.stdout
    with open(into_file, "wb") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.DEVNULL, check=False, cwd=cwd).returncode
    return code, into_file.read_bytes()


@pytest.mark.parametrize("splice_from", [1, 300, 1 << 18])  # every run spliced; the long ones; none (runs this short)
@pytest.mark.parametrize("word", ["the", "fix", "error", "code"])
def test_answers_spliced_into_a_pipe_or_written_to_a_file_are_the_fresh_bytes(
    word: str,
    splice_from: int,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("seance.core.catalog.ANSWER_BUDGET", 100)
    _root, roots = _corpus(tmp_path)
    reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, word)
    command = [sys.executable, "-c", SCRIPT, str(splice_from), "ls", "--all", "--json", *roots, "--query", word]
    for trial in range(6):  # the rows kept, the key, the runs, then printed from them (pipe, file in turns)
        into = tmp_path / f"out{trial}.json" if trial % 2 else None
        assert _printed(command, tmp_path, into) == reference, (word, trial)
    assert _stored(b"query-runs\0")


def test_spans_are_where_the_views_bytes_lie_in_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seance.core import queryobjects

    monkeypatch.setattr(queryobjects, "_CHUNK", 2)
    objects = [b'{"pinned":false,"n":%d}' % number for number in range(7)]
    path = objects_file(tmp_path, b"scope")
    made = write(path, objects, 1, list(range(7)))
    assert made is not None
    store = Objects.load(b"".join(made.entry), path)
    assert store is not None and store.source is not None
    data = path.read_bytes()
    for order in ([0, 1, 2, 3, 4, 5, 6], [6, 5, 4], [2, 3, 0, 1, 6], [3], []):
        found = runs(order)
        spans = store.spans(found)
        views = store.views(found)
        assert len(spans) == len(views)
        read = [span if isinstance(span, bytes) else data[span[0] : span[0] + span[1]] for span in spans]
        assert read == [bytes(view) for view in views]
        assert b"".join(read) == b"[" + b",".join(objects[i] for i in order) + b"]"
    os.close(os.dup(store.source.fileno()))  # (open: the answer is spliced from it)


@pytest.mark.parametrize("direct", [1 << 20, 64])  # the real threshold (one long run); runs of a few objects too
def test_a_spliced_store_is_the_bytes_write_makes_and_its_long_runs_are_never_copied_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct: int
) -> None:
    """`write_spliced` after an append (a run of ~1.3 MB, a new object, another run, a
    shuffled tail): the file is byte for byte the one `write` makes of the same objects in
    the same order (but its random tag), and the old store's long runs reach the file as
    views of its map: only the short parts are copied in memory first (71 MB at 100,000
    sessions was joined into one bytes, then written)."""
    from seance.core import queryobjects

    monkeypatch.setattr(queryobjects, "_DIRECT_BYTES", direct, raising=False)
    objects = [b'{"pinned":false,"n":%d,"pad":"%s"}' % (n, b"y" * (1000 + n % 97)) for n in range(2600)]
    old_path = objects_file(tmp_path, b"old")
    old = write(old_path, objects, 3, list(range(len(objects))))
    assert old is not None
    fresh = b'{"pinned":false,"n":-1,"pad":"appended"}'
    tail = list(range(2000, 2600))
    random.Random(5).shuffle(tail)
    sources: list[int | bytes] = [*range(1200), fresh, *range(1201, 2000), *tail]
    expected = [fresh if type(source) is bytes else objects[source] for source in sources]
    copied: list[int] = []
    real = queryobjects.write_tagged

    def counting(path: Path, chunks):  # type: ignore[no-untyped-def]
        def seen():  # type: ignore[no-untyped-def]
            for chunk in chunks:
                if not isinstance(chunk, memoryview):
                    copied.append(len(chunk))
                yield chunk

        return real(path, seen())

    monkeypatch.setattr(queryobjects, "write_tagged", counting)
    slots = list(range(len(sources)))[::-1]
    made = queryobjects.write_spliced(objects_file(tmp_path, b"new"), old.objects, sources, 9, slots)
    assert made is not None
    monkeypatch.setattr(queryobjects, "write_tagged", real)
    reference = write(objects_file(tmp_path, b"reference"), expected, 9, slots)
    assert reference is not None
    spliced_bytes = objects_file(tmp_path, b"new").read_bytes()
    assert spliced_bytes[16:] == objects_file(tmp_path, b"reference").read_bytes()[16:]
    crc = slice(24, 32)  # (the entry's numbers but the file's CRC, which covers the random tag)
    assert (
        made.entry[1][: crc.start] + made.entry[1][crc.stop :]
        == reference.entry[1][: crc.start] + reference.entry[1][crc.stop :]
    )
    assert b"".join(made.objects.parts(runs(range(len(sources))))) == b"[" + b",".join(expected) + b"]"
    # (its entry's CRC is the file's: the bytes written)
    loaded = Objects.load(b"".join(made.entry), objects_file(tmp_path, b"new"))
    assert loaded is not None and loaded.source is not None
    loaded.source.close()
    joined = sum(map(len, expected)) + len(expected) - 1
    copied_objects = sum(copied) - (len(spliced_bytes) - 16 - joined)  # (the trailer aside)
    runs_bytes = [sum(map(len, objects[low:high])) + high - low - 1 for low, high in ((0, 1200), (1201, 2000))]
    runs_bytes += [len(objects[position]) for position in tail]
    long_bytes = sum(size for size in runs_bytes if size >= direct)
    assert long_bytes > 0 and joined - copied_objects >= long_bytes
    for store in (old.objects, made.objects, reference.objects):
        if store.source is not None:
            store.source.close()
