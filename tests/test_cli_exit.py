"""The `seance` process ends as soon as its command has answered (`cli.main.exit_now`), and
that early end loses nothing: the whole answer reaches a pipe, the exit code is the
command's, `atexit` callbacks run, and with another thread still running the interpreter
exits as usual.  Each case runs a real `python -m seance` / `main()` child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ui_sessions import Spec, write_session

from seance.cli.main import main

REPO_PARENT = str(Path(__file__).resolve().parents[2])


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO_PARENT, env.get("PYTHONPATH", "")]))
    env["SEANCE_CACHE_DIR"] = str(tmp_path / "cache")
    env["SEANCE_DATA_DIR"] = str(tmp_path / "data")
    return env


def _root(tmp_path: Path, count: int) -> Path:
    root = tmp_path / "sessions"
    for number in range(count):
        write_session(root, Spec(f"s-{number:04d}", f"/proj/{number % 7}", prompts=(f"prompt {number} " * 40,)))
    return root


def test_ls_json_through_a_pipe_is_whole_and_equals_the_in_process_answer(tmp_path: Path, capsys, monkeypatch) -> None:
    root = _root(tmp_path, 300)
    env = _env(tmp_path)
    command = [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(root)]
    cold = subprocess.run(command, env=env, capture_output=True, check=True)
    warm = subprocess.run(command, env=env, capture_output=True, check=True)  # the stored answer
    assert cold.stdout == warm.stdout
    assert len(json.loads(warm.stdout)) == 300
    for key in ("SEANCE_CACHE_DIR", "SEANCE_DATA_DIR"):
        monkeypatch.setenv(key, env[key])
    assert main(["ls", "--all", "--json", "--root", str(root)]) == 0
    assert capsys.readouterr().out.encode() == warm.stdout


def test_the_exit_code_is_the_commands(tmp_path: Path) -> None:
    root = _root(tmp_path, 5)
    found = subprocess.run(
        [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(root), "--query", "nowhere-to-be-seen"],
        env=_env(tmp_path),
        capture_output=True,
    )
    assert found.returncode == 1  # nothing matched, like grep
    assert json.loads(found.stdout) == []


_CHILD = """
import atexit, sys, threading
from pathlib import Path
marker = Path(sys.argv[1])
atexit.register(lambda: marker.write_text("atexit ran"))
done = threading.Event()
if sys.argv[2] == "thread":
    threading.Thread(target=done.wait).start()  # still running when main() returns
sys.argv = ["seance", "ls", "--all", "--json", "--root", sys.argv[3]]
from seance.cli.main import main
code = main()
print("returned", code)  # only when the interpreter ends the usual way
done.set()
"""


def _run_child(tmp_path: Path, mode: str) -> bytes:
    """`_CHILD` listing 5 sessions (`mode` "thread": with another thread still running): its
    stdout, once its atexit callback has run."""
    marker = tmp_path / "marker"
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(marker), mode, str(_root(tmp_path, 5))],
        env=_env(tmp_path),
        capture_output=True,
        check=True,
    )
    assert marker.read_text() == "atexit ran"
    return child.stdout


def test_atexit_callbacks_run_and_nothing_after_main_does(tmp_path: Path) -> None:
    stdout = _run_child(tmp_path, "alone")
    assert len(json.loads(stdout)) == 5
    assert b"returned" not in stdout  # ended in `exit_now`, right after the answer


def test_with_another_thread_running_the_interpreter_exits_as_usual(tmp_path: Path) -> None:
    answer, _, rest = _run_child(tmp_path, "thread").partition(b"\n")
    assert len(json.loads(answer)) == 5
    assert rest == b"returned 0\n"


def test_a_profiler_still_gets_the_end_of_the_run(tmp_path: Path) -> None:
    """`python -m cProfile -o FILE -m seance ...` writes FILE after the module returns: the
    early end waits for it (as for a debugger or coverage)."""
    root = _root(tmp_path, 3)
    stats = tmp_path / "ls.prof"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(stats),
            "-m",
            "seance",
            "ls",
            "--all",
            "--json",
            "--root",
            str(root),
        ],
        env=_env(tmp_path),
        capture_output=True,
        check=True,
    )
    assert stats.stat().st_size > 0


def test_main_called_with_arguments_returns_its_code(tmp_path: Path, capsys) -> None:
    """A caller that passes `argv` (tests, an embedding program) gets the code back: only
    the process's own entry (`argv` None) ends early."""
    root = _root(tmp_path, 3)
    assert main(["ls", "--all", "--json", "--root", str(root)]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3


_GC_CHILD = """
import atexit, gc, sys
from pathlib import Path
marker = Path(sys.argv[1])
sys.argv = ["seance", *sys.argv[2:]]
from seance.cli.main import main
collections = []
gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["generation"]))
atexit.register(lambda: marker.write_text(f"{len(collections)} {gc.isenabled()}"))
main()
"""


def test_ls_as_the_process_never_collects_what_it_imports_and_builds(tmp_path: Path) -> None:
    """`seance ls` pauses the collector for its listing; as the `seance` process's own
    command, from the import of its modules to the process's end (`gcpause.pause_to_the_end`):
    no collection walks them (one walked every object the listing built as its pause ended).
    Another command keeps the collector as it was."""
    root = _root(tmp_path, 30)
    env = _env(tmp_path)
    marker = tmp_path / "marker"
    ls = ["ls", "--all", "--json", "--root", str(root), "--query", "prompt"]
    subprocess.run([sys.executable, "-m", "seance", *ls], env=env, capture_output=True, check=True)  # warm
    for _ in range(2):  # (the second: printed from the answer the first kept)
        subprocess.run([sys.executable, "-c", _GC_CHILD, str(marker), *ls], env=env, capture_output=True, check=True)
        assert marker.read_text() == "0 False"
    index = ["index", "--root", str(root)]
    subprocess.run([sys.executable, "-c", _GC_CHILD, str(marker), *index], env=env, capture_output=True, check=True)
    assert marker.read_text().endswith(" True")
