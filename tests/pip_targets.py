"""Test distributions built into wheels and installed with ``pip install --target``, once per run.

Each distribution folder is copied (a stale ``build/`` folder in the source tree leaks old files
into later wheels), built into a wheel by the build backend its pyproject.toml names, and the
wheel installed by pip into a folder of its own, so a test puts the folders it wants on
PYTHONPATH and discovery reads real entry-point metadata. The wheels of a batch are built in
one interpreter (pip building from source starts three per distribution, seconds each on a busy
machine). The folders are made once per run and shared by the pytest-xdist workers, the first
worker to need one installing it while the others wait on the lock. Tests only read them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

#: Builds ``SOURCE OUT`` pairs from argv with each pyproject.toml's build backend (PEP 517),
#: printing each wheel's file name.
_BUILD = """
import importlib, os, sys
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib
for source, out in zip(sys.argv[1::2], sys.argv[2::2]):
    os.chdir(source)
    with open("pyproject.toml", "rb") as f:
        backend = importlib.import_module(tomllib.load(f)["build-system"]["build-backend"])
    print(backend.build_wheel(out))
"""


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this run alone: pytest-xdist puts each worker's base folder in the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _checked(argv: list[str], what: str) -> str:
    result = subprocess.run(argv, capture_output=True, text=True)
    assert result.returncode == 0, f"{what}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _build_wheels(root: Path, sources: Sequence[Path]) -> list[Path]:
    """The wheels of ``sources``, built from fresh copies in one interpreter."""
    pairs: list[str] = []
    for source in sources:
        copy, out = root / "src" / source.name, root / "wheels" / source.name
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(source, copy)
        out.mkdir(parents=True)
        pairs += [str(copy), str(out)]
    names = ", ".join(s.name for s in sources)
    built = _checked([sys.executable, "-c", _BUILD, *pairs], f"could not build {names}")
    wheels = [line for line in built.splitlines() if line.endswith(".whl")]
    assert len(wheels) == len(sources), f"building {names} printed {built!r}"
    return [root / "wheels" / s.name / wheel for s, wheel in zip(sources, wheels)]


def _install(wheel: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    _checked(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(wheel)],
        f"pip could not install {wheel.name}",
    )  # fmt: skip


def pip_targets(tmp_path_factory: pytest.TempPathFactory, sources: Sequence[Path]) -> list[Path]:
    """The folders that ``sources`` (distribution folders) are installed in by pip."""
    root = run_root(tmp_path_factory) / "pip-targets"
    root.mkdir(exist_ok=True)
    targets = [root / source.name for source in sources]
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        todo = [s for s in sources if not (root / f"{s.name}.installed").exists()]
        if todo:
            wheels = _build_wheels(root, todo)
            # A few at a time: each pip run spends most of its second starting Python.
            with ThreadPoolExecutor(max_workers=3) as pool:
                list(pool.map(_install, wheels, [root / s.name for s in todo]))
            for source in todo:
                (root / f"{source.name}.installed").touch()
    return targets


def pip_target(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    """The folder that ``source`` (a distribution folder) is installed in by pip."""
    return pip_targets(tmp_path_factory, [source])[0]
