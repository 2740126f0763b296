"""The built distribution is `pi-seance` (on the package index `seance` is an unrelated library),
its command is `seance`, its import is `seance`, and `seance --version` tells the version that
`__init__.py` holds — the one place the version lives.

The wheel is built from a copy of the source (a build in place would leave `build/` and an
`.egg-info` in the checkout) and installed, without its dependencies, into a fresh venv whose
dependencies come from the running interpreter's site-packages through a `.pth` line (after
the venv's own, so the installed `seance` is the one imported).
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest

import seance

REPO_ROOT = Path(__file__).resolve().parent.parent
NOT_SHIPPED = ("tests", "bench", "docs", "snapshots", ".git", ".venv", "build", "*.egg-info", "__pycache__", ".*cache")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("dist")
    source = work / "src"
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    result = subprocess.run(
        # -v: the build backend's own output (its warnings) is captured too
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(work / "wheels"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (built,) = (work / "wheels").glob("*.whl")
    BUILD_OUTPUT[built] = result.stdout + result.stderr
    return built


BUILD_OUTPUT: dict[Path, str] = {}


def test_the_build_warns_about_nothing(wheel: Path) -> None:
    """`.ci/run` installs from this pyproject: no setuptools deprecation (e.g. a `license =
    {text = ...}` table instead of the SPDX string) may reach its output."""
    output = BUILD_OUTPUT[wheel]
    assert "Building wheel for pi-seance" in output or "Created wheel for pi-seance" in output
    assert "DeprecationWarning" not in output and "deprecated" not in output.lower(), output[-3000:]


def _not_shipped(package: Path) -> bool:
    return any(fnmatch.fnmatch(part, pattern) for part in package.parts for pattern in NOT_SHIPPED)


def wheel_text(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [item for item in archive.namelist() if item.endswith(f".dist-info/{name}")]
        return archive.read(member).decode()


def test_wheel_is_pi_seance_with_the_seance_command_and_one_version(wheel: Path) -> None:
    metadata = HeaderParser().parsestr(wheel_text(wheel, "METADATA"))
    assert metadata["Name"] == "pi-seance"
    assert metadata["Version"] == seance.__version__
    assert wheel.name.startswith(f"pi_seance-{seance.__version__}-")
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel_text(wheel, "entry_points.txt"))
    assert dict(entry_points["console_scripts"]) == {"seance": "seance.cli:main"}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"seance/__init__.py", "seance/cli/main.py", "seance/app/terminal.py", "seance/styles/app.tcss"} <= names
    # every package of the source tree ships (a new folder missing from pyproject's list would not)
    packages = {path.parent.relative_to(REPO_ROOT) for path in REPO_ROOT.glob("**/__init__.py")}
    shipped = {Path("seance", package, "__init__.py").as_posix() for package in packages if not _not_shipped(package)}
    assert shipped <= names, sorted(shipped - names)
    assert not any(name.startswith(("tests/", "seance/tests/")) for name in names)


def test_installed_script_prints_its_version(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index"]
    subprocess.run([*install, str(wheel)], check=True, timeout=300, capture_output=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    venv_site = Path(subprocess.check_output([str(python), "-c", purelib], text=True).strip())
    (venv_site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}

    version = subprocess.run(
        [str(venv / "bin" / "seance"), "--version"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert (version.returncode, version.stdout, version.stderr) == (0, f"seance {seance.__version__}\n", "")
    where = subprocess.check_output([str(python), "-c", "import seance; print(seance.__file__)"], env=env, text=True)
    assert Path(where.strip()).is_relative_to(venv_site)
