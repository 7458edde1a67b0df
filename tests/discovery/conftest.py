"""Real plugin distributions for the discovery tests, installed with pip once per session.

Each folder in tests/plugins/ is copied (pip builds in the source tree, and a stale
``build/`` folder there leaks old files into later wheels) and installed with
``pip install --target`` into a folder of its own. A test picks the distributions it
wants and runs Python or ``tw`` in a subprocess whose PYTHONPATH lists their folders,
so discovery reads real entry-point metadata, on top of the core and the project's
own plugins installed in this interpreter's environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SOURCES = Path(__file__).parents[1] / "plugins"
GOOD = ("tw-example-good",)
BROKEN = (
    "tw-broken-api",
    "tw-broken-hook",
    "tw-broken-import",
    "tw-broken-missing",
    "tw-shadow-duplicate",
)
ACCEL = ("tw-example-accel",)
EAGER = ("tw-broken-eager",)  # imports torch when loaded: only where a test wants that
#: Each ends the process that asks it: a segfault, an abort, sys.exit(3) at import.
FATAL = ("tw-broken-segfault", "tw-broken-abort", "tw-broken-exit")
HANGING = ("tw-broken-sleep",)  # its tw_devices hook sleeps a minute
#: The console script installed beside this interpreter with the core.
TW_SCRIPT = Path(sys.executable).with_name("tw")


@dataclass(frozen=True)
class Env:
    """A set of installed test distributions, and Python and ``tw`` run over them."""

    paths: tuple[Path, ...]

    def run(self, *argv: str, **environ: str) -> subprocess.CompletedProcess:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TENSORWEAVER_") and k != "PYTHONPATH"
        }
        env["PYTHONPATH"] = os.pathsep.join(map(str, self.paths))
        env.update(environ)
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)

    def python(self, code: str, **environ: str) -> subprocess.CompletedProcess:
        return self.run(sys.executable, "-c", textwrap.dedent(code), **environ)

    def json(self, code: str, **environ: str) -> Any:
        """Run ``code``, which prints one JSON document, and return it."""
        result = self.python(code, **environ)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def tw(self, *args: str, via: str = "script", **environ: str) -> subprocess.CompletedProcess:
        """``tw ARGS``, through the console script or ``python -m tensorweaver.cli``."""
        command = (
            [str(TW_SCRIPT)] if via == "script" else [sys.executable, "-m", "tensorweaver.cli"]
        )
        result = self.run(*command, *args, **environ)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert "Traceback" not in output
        return result

    def devices(self, *flags: str, **environ: str) -> dict[str, dict]:
        """``tw devices --json``, as records by device name."""
        records = json.loads(self.tw("devices", "--json", *flags, **environ).stdout)
        return {r["name"]: r for r in records}


def _pip_install(source: Path, root: Path) -> Path:
    copy = shutil.copytree(source, root / "src" / source.name)
    target = root / source.name
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(target),
            str(copy),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"pip could not install {source.name}:\n{result.stderr}"
    return target


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every distribution in tests/plugins/, installed by pip, by distribution name."""
    root = tmp_path_factory.mktemp("plugins")
    sources = sorted(p for p in SOURCES.iterdir() if (p / "pyproject.toml").is_file())
    # A few at a time: each pip run spends most of its second starting Python.
    with ThreadPoolExecutor(max_workers=3) as pool:
        targets = list(pool.map(lambda source: _pip_install(source, root), sources))
    return {source.name: target for source, target in zip(sources, targets)}


def _env(installed: dict[str, Path], *names: str) -> Env:
    return Env(tuple(installed[name] for name in names))


@pytest.fixture(scope="session")
def good(installed: dict[str, Path]) -> Env:
    """The complete third-party backend ``pyref`` alone."""
    return _env(installed, *GOOD)


@pytest.fixture(scope="session")
def mixed(installed: dict[str, Path]) -> Env:
    """``pyref`` among every broken plugin."""
    return _env(installed, *GOOD, *BROKEN)


@pytest.fixture(scope="session")
def accel(installed: dict[str, Path]) -> Env:
    """``pyref`` and the simulated accelerator ``fakeaccel``."""
    return _env(installed, *GOOD, *ACCEL)


@pytest.fixture(scope="session")
def fatal(installed: dict[str, Path]) -> Env:
    """``pyref`` and ``fakeaccel`` among the plugins that end the process asking them."""
    return _env(installed, *GOOD, *ACCEL, *FATAL)


@pytest.fixture(scope="session")
def hanging(installed: dict[str, Path]) -> Env:
    """``pyref`` and ``fakeaccel`` beside a plugin that does not answer, and the fatal ones."""
    return _env(installed, *GOOD, *ACCEL, *FATAL, *HANGING)


@pytest.fixture(scope="session")
def exiting(installed: dict[str, Path]) -> Env:
    """``pyref`` and ``brokenexit`` (whose step to exit at ``TW_BROKEN_EXIT_AT`` picks)."""
    return _env(installed, *GOOD, "tw-broken-exit")


@pytest.fixture(scope="session")
def everything(installed: dict[str, Path]) -> Env:
    """Every test distribution at once, the torch-importing one included."""
    return _env(installed, *installed)
