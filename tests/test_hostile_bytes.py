"""Every byte pi writes reads; special files never hang; one huge line costs little.

Findings of the adversarial pass, each with the tests that failed before the fix:

* 2 (lone surrogates, >64-bit integers): `test_listing_lists_every_hostile_file_and_the_others`,
  `test_each_hostile_file_shows_trees_renames_and_removes`, `test_tui_list_shows_the_others`,
  `test_loads_line_reads_what_json_parse_reads`.
* 8 (FIFOs): `test_special_files_in_place_never_block`, `test_fifo_swapped_in_mid_scan_200_trials`.
* 9 (huge lines): `test_a_300_mb_line_is_skipped_in_little_memory`, `test_line_blocks_frames_like_split_2000_cases`.
* 10 (versions): `test_each_hostile_file_...` (the version-* files), `test_header_version_compares_like_javascript`.
"""

from __future__ import annotations

import json
import math
import os
import random
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostile import HOSTILE, NOT_SESSIONS, write_good, write_hostile
from ui_harness import SIZE, picker_app, settle, titles
from ui_sessions import make_root

import seance
from seance.cli import main
from seance.core.catalog import Catalog
from seance.core.jsonl import LineError, line_blocks, loads_line, split_lines
from seance.core.migrate import header_version, migrate
from seance.core.session import NotASession, Session, read_session

IMPORT_ROOT = str(Path(seance.__file__).resolve().parent.parent)  # subprocesses run the seance under test
TIMEOUT = 60  # seconds: a blocked open() would wait forever


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    """A fake HOME and Trash: `rm` must never touch the real ones."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "home"


def seance(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (a hang is a timeout, a traceback is in stderr)."""
    environment = {**os.environ, "PYTHONPATH": IMPORT_ROOT, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "seance", *args], capture_output=True, text=True, env=environment, timeout=TIMEOUT
    )


# -- finding 2 and 10: lone surrogates, huge numbers, odd versions, deep nesting ---------------


def test_loads_line_reads_what_json_parse_reads() -> None:
    value, replaced = loads_line(b'{"a":"output \\ud83c","b":"\\\\ud83c","c":"\\ud83d\\ude00","\\udc00":1}')
    assert value == {"a": "output \ufffd", "b": "\\ud83c", "c": "\U0001f600", "\ufffd": 1} and not replaced
    value, _ = loads_line(b'{"u":' + b"9" * 400 + b',"v":1e400,"w":18446744073709551616,"x":-' + b"9" * 5000 + b"}")
    assert value["u"] == value["v"] == math.inf and value["x"] == -math.inf and isinstance(value["w"], float)
    deep, _ = loads_line(b'{"d":' + b"[" * 10_000 + b"1" + b"]" * 10_000 + b',"e":"\\ud800"}')
    assert deep["e"] == "\ufffd"  # pi reads 10,000 levels: so do we, without recursion
    node, depth = deep["d"], 0
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert (node, depth) == (1, 10_000)
    for refused in (b'{"a":NaN}', b'{"a":Infinity}', b'{"a":1}{"b":2}', b"[" * 10_000 + b"]" * 9_999, b'{"a":01}'):
        with pytest.raises(LineError):
            loads_line(refused)


def test_header_version_compares_like_javascript() -> None:
    # pi: version >= 3 -> nothing; < 2 -> v1->v2; < 3 -> v2->v3 (NaN: no step applies)
    cases = {
        "1e400": [],
        "-1e400": ["v1→v2", "v2→v3"],
        "9" * 5000: [],
        '"' + "9" * 5000 + '"': [],
        '"3"': [],
        '" 2 "': ["v2→v3"],
        '"abc"': [],
        '{"a":1}': [],
        "2.5": ["v2→v3"],
        "true": ["v1→v2", "v2→v3"],
    }
    for text, steps in cases.items():
        header = loads_line(b'{"version":' + text.encode() + b"}")[0]
        version = header_version(header)
        assert migrate(header, [{"type": "x"}], has_ids=False) == steps, text
        assert not isinstance(version, float) or not math.isfinite(version)  # a finite one is an int


def test_listing_lists_every_hostile_file_and_the_others(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "sessions"
    write_hostile(root)
    hostile_ids = {loads_line(text.split("\n", 1)[0].encode())[0]["id"] for text in HOSTILE.values()}
    assert "h-id\ufffd" in hostile_ids
    for args in (["ls", "--all"], ["ls", "--all", "--quick"], ["index"], ["ls", "--all"]):  # cold, then warm
        result = seance("--root", str(root), *args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        if args[0] == "ls":
            assert "first good" in result.stdout and "second good" in result.stdout
            assert "output \ufffd" in result.stdout
    for args in (["ls", "--all", "--json"], ["ls", "--all", "--quick", "--json"], ["ls", "--all", "--json"]):
        result = seance("--root", str(root), *args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        ids = {item["id"] for item in json.loads(result.stdout)}
        # JSON.parse refuses the NaN/Infinity headers: pi does not list those either.  A quick
        # listing reads 4 KB: a header with a 5,000-digit version has its id beyond that.
        long_headers = {"h-v5000", "h-vs5000"} if "--quick" in args else set()
        assert ids == {"good-1", "good-2", *hostile_ids} - long_headers


def test_usage_sums_stay_storable(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_hostile(root, ["huge-int-usage"])
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    try:
        (summary,) = [item for item in catalog.exact() if item.id == "h-usage"]
        again = [item for item in catalog.exact() if item.id == "h-usage"]  # from the index
    finally:
        catalog.close()
    assert summary.input_tokens == (1 << 63) - 1 and math.isfinite(summary.cost) and again == [summary]


@pytest.mark.parametrize("name", sorted({**HOSTILE, **NOT_SESSIONS}))
def test_each_hostile_file_shows_trees_renames_and_removes(tmp_path: Path, home: Path, name: str, capsys) -> None:
    """show, show --json, tree --text, tree --json, rename and rm --force: clean exits, valid JSON."""
    path = write_hostile(tmp_path / "sessions", [name])[name]
    is_session = name in HOSTILE
    for args in (["show"], ["show", "--json"], ["tree", "--text"], ["tree", "--json"]):
        code = main([*args, str(path)])
        out, err = capsys.readouterr()
        if is_session:
            assert code == 0, err
            if "--json" in args:
                payload = json.loads(out)
                assert payload["id"].startswith("h-")
            else:
                out.encode("utf-8")  # no lone surrogate reaches the terminal
        else:
            assert code == 2 and out == "" and err.count("\n") == 1 and "not a session" in err
    code = main(["rename", str(path), "renamed"])
    capsys.readouterr()
    assert code == (0 if is_session else 2)
    if is_session:
        assert read_session(path).name == "renamed"
    assert main(["rm", "--force", str(path)]) == 0
    capsys.readouterr()
    assert not path.exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_session_has_a_preview_and_a_tree(tmp_path: Path, name: str) -> None:
    """The preview's document (its running totals included) and the tree's model build for every
    hostile session: a tool call's arguments nested 5,000 deep made the preview say "Cannot
    build the context" (`str()` of them raised)."""
    from seance.app.tree_model import TreeModel
    from seance.app.widgets.context_preview import build_preview

    path = write_hostile(tmp_path / "sessions", [name])[name]
    session = read_session(path)
    doc = build_preview(session)
    assert doc.blocks, name
    model = TreeModel(session.tree)
    assert model.rows and model.selected_id == session.tree.leaf_id


async def test_tui_list_shows_the_others(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    write_hostile(root)
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = titles(pilot)
        status = pilot.app.screen.status.message
    assert "fix the auth bug in login" in shown and "update the README" in shown  # the standard sessions
    assert "first good" in shown and "output \ufffd" in shown
    assert "Failed to load" not in status


# -- finding 8: FIFOs, sockets, devices named *.jsonl ---------------------------------------


def _specials(bucket: Path) -> list[Path]:
    fifo = bucket / "fifo.jsonl"
    os.mkfifo(fifo)
    sock_path = bucket / "socket.jsonl"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))  # left bound: the socket file stays until the tmp dir goes
    device = bucket / "device.jsonl"
    (bucket / "null-link.jsonl").symlink_to("/dev/null")
    specials = [fifo, sock_path, bucket / "null-link.jsonl"]
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers; root only
        specials.append(device)
    except PermissionError:
        pass
    return specials


def test_special_files_in_place_never_block(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "sessions"
    write_good(root, "good-1", "first good")
    specials = _specials(root / "--p--")
    for args in (["ls", "--all"], ["ls", "--all", "--quick"], ["index"], ["ls", "--all", "--json"]):
        result = seance("--root", str(root), *args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert "not a regular file" in result.stderr
        if args[0] == "ls":
            assert "first good" in result.stdout or "good-1" in result.stdout
    for path in specials:
        for args in (["show", str(path)], ["tree", "--text", str(path)], ["rename", str(path), "x"], ["rm", str(path)]):
            result = seance(*args)
            assert result.returncode != 0 and "Traceback" not in result.stderr, (args, result.stderr)
            assert "not a regular file" in result.stderr, (args, result.stderr)
        assert isinstance(read_session(path), NotASession) and read_session(path).reason == "not a regular file"


@pytest.mark.parametrize("where", ["pi-settings", "pi-project-settings", "marks", "seance-settings"])
def test_a_fifo_as_a_settings_or_marks_file_never_blocks(tmp_path: Path, home: Path, where: str) -> None:
    """pi's settings.json (read for its `sessionDir` by every command on the default roots),
    seance's marks.json (read by `ls`) and its settings.json (read by the picker) were opened
    with a plain `open()`: a FIFO there blocked the command forever.  Now each is skipped with
    the reason, as a FIFO named *.jsonl is."""
    project = tmp_path / "project"
    project.mkdir()
    write_good(home / ".pi" / "agent" / "sessions", "good-1", "first good")
    data, config = tmp_path / "seance-data", tmp_path / "seance-config"
    fifo = {
        "pi-settings": home / ".pi" / "agent" / "settings.json",
        "pi-project-settings": project / ".pi" / "settings.json",
        "marks": data / "marks.json",
        "seance-settings": config / "settings.json",
    }[where]
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    env = {
        **os.environ,
        "PYTHONPATH": IMPORT_ROOT,
        "SEANCE_DATA_DIR": str(data),
        "SEANCE_CONFIG_DIR": str(config),
        "PI_CODING_AGENT_DIR": "",
        "PI_CODING_AGENT_SESSION_DIR": "",
    }
    program = (
        ["-c", "from seance.core.settings import load_settings; print(load_settings().problem)"]
        if where == "seance-settings"
        else ["-m", "seance", "ls", "--all", "--json"]
    )
    result = subprocess.run(
        [sys.executable, *program], capture_output=True, text=True, env=env, cwd=project, timeout=TIMEOUT
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    if where == "seance-settings":
        assert result.stdout.strip().endswith("not a regular file")
    else:
        assert [row["id"] for row in json.loads(result.stdout)] == ["good-1"]
        assert ("not a regular file" in result.stderr) == (where == "marks"), result.stderr


def test_fifo_swapped_in_mid_scan_200_trials(tmp_path: Path) -> None:
    """A thread swaps a regular file and a FIFO under one name while every reader reads it."""
    root = tmp_path / "sessions"
    write_good(root, "good-1", "first good")
    target = write_good(root, "swapped", "a regular file")
    original = target.read_bytes()
    regular, fifo = tmp_path / "regular", tmp_path / "fifo"
    stop = threading.Event()

    def swap() -> None:  # each rename is atomic: the name is always a FIFO or the session
        while not stop.is_set():
            os.mkfifo(fifo)
            os.rename(fifo, target)
            regular.write_bytes(original)
            os.rename(regular, target)

    def scans() -> None:
        from seance.core.discovery import FileInfo
        from seance.core.metadata import NotSessionFile, scan_file
        from seance.core.prefix import read_prefix

        for trial in range(200):
            catalog = Catalog([root], cache_dir=tmp_path / f"cache-{trial % 4}")
            try:
                assert "good-1" in {summary.id for summary in catalog.exact()}
                catalog.quick()
            finally:
                catalog.close()
            assert isinstance(read_session(target), Session | NotASession)
            for reader in (lambda: scan_file(target), lambda: read_prefix(FileInfo(str(target), 0, 0))):
                try:
                    reader()
                except (OSError, NotSessionFile):
                    pass

    swapper = threading.Thread(target=swap, daemon=True)
    reader = threading.Thread(target=scans, daemon=True)
    errors: list[BaseException] = []
    reader.run = _recording(reader.run, errors)  # type: ignore[method-assign]
    swapper.start()
    reader.start()
    reader.join(timeout=120)
    stop.set()
    swapper.join(timeout=10)
    assert not reader.is_alive(), "a reader blocked on a FIFO"
    assert not errors, errors


def _recording(run, errors: list[BaseException]):
    def wrapped() -> None:
        try:
            run()
        except BaseException as error:
            errors.append(error)

    return wrapped


# -- finding 9: huge lines ------------------------------------------------------------------


def test_line_blocks_frames_like_split_2000_cases(tmp_path: Path) -> None:
    """Random files, limits and block sizes: every line is framed as `split` would, or reported
    oversized (with its true length) when over the limit; read with `keepends`, the same lines
    each with its newline (only a file's unterminated last line without)."""
    rng = random.Random(9)
    path = tmp_path / "f"
    for _case in range(2000):
        pieces = [b"x" * rng.choice([0, 1, 2, 3, 5, 8, 13]) for _ in range(rng.randint(0, 8))]
        data = b"\n".join(pieces) + (b"\n" if rng.random() < 0.5 else b"")
        limit, block_size = rng.randint(1, 10), rng.randint(1, 12)
        path.write_bytes(data)
        lines = data.split(b"\n") if data else []
        if data.endswith(b"\n"):
            lines.pop()
        expected, offset = [], 0
        for number, line in enumerate(lines):
            expected.append((number, offset, None, len(line)) if len(line) > limit else (number, offset, line, 0))
            offset += len(line) + 1
        for keepends in (False, True):
            framed = _framed(path, len(data), limit, block_size, keepends)
            assert framed == expected, (data, limit, block_size, keepends)


def _framed(path: Path, size: int, limit: int, block_size: int, keepends: bool) -> list[tuple]:
    """(line number, offset, bytes or None, oversized length) of each line `line_blocks` gives."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        framed = []
        for block in line_blocks(descriptor, limit=limit, block_size=block_size, keepends=keepends):
            if block.oversized:
                framed.append((block.line, block.offset, None, block.oversized))
                continue
            lines = block.lines
            if keepends:
                assert lines and all(line.endswith(b"\n") for line in lines[:-1])
                assert lines[-1].endswith(b"\n") or block.offset + block.size == size
                assert block.size == sum(map(len, lines))
                lines = split_lines(lines)
            assert block.size == sum(len(line) + 1 for line in lines) - 1
            if lines[-1] == b"":  # the block ends with a newline
                lines.pop()
            offset = block.offset
            for number, line in enumerate(lines, block.line):
                framed.append((number, offset, line, 0))
                offset += len(line) + 1
    finally:
        os.close(descriptor)
    return framed


_MEASURE = """
import resource, sys
from seance.cli import main
code = main(sys.argv[1:])
print(f"maxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.slow
def test_a_300_mb_line_is_skipped_in_little_memory(tmp_path: Path, home: Path) -> None:
    """A memory bound, not a timing test: the old reader held the line (and copies) whole."""
    root = tmp_path / "sessions"
    write_good(root, "good-1", "first good")
    huge = root / "--p--" / "huge.jsonl"
    with open(huge, "wb") as handle:
        handle.write(
            b'{"type":"session","version":3,"id":"h-huge","cwd":"/p","timestamp":"2025-01-01T00:00:00.000Z"}\n'
        )
        handle.write(b'{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"')
        block = b"x" * (1 << 20)
        for _ in range(300):
            handle.write(block)
        handle.write(b'"}}\n{"type":"message","id":"u2","parentId":"u1","message":{"role":"user","content":"after"}}\n')
    environment = {**os.environ, "PYTHONPATH": IMPORT_ROOT}
    for args in (["--root", str(root), "ls", "--all"], ["--root", str(root), "index"], ["show", str(huge)]):
        result = subprocess.run(
            [sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, env=environment, timeout=300
        )
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        peak_mb = int(result.stderr.rsplit("maxrss_kb=", 1)[1]) // 1024
        assert peak_mb < 400, (args, peak_mb)  # measured: ~92 MB (the old reader: 2.4 GB for ls)
        if args[-1] == "--all":
            assert "first good" in result.stdout and "after" in result.stdout
        if args[0] == "show":
            assert "line 2: a line of 300 MB, over the 64 MB limit, was not read" in result.stderr
            assert "after" in result.stdout
