"""Real plugin distributions for the discovery tests, installed with pip once per run.

Each folder in tests/plugins/ is built into a wheel (all in one interpreter) and installed with
``pip install --target`` into a folder of its own (:func:`pip_targets.pip_targets`, shared by
the pytest-xdist workers). A test picks the distributions it wants and runs Python or ``tw``
in a subprocess whose PYTHONPATH lists their folders, so discovery reads real entry-point
metadata, on top of the core and the project's own plugins installed in this interpreter's
environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pip_targets import pip_targets

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


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every distribution in tests/plugins/, installed by pip, by distribution name."""
    sources = sorted(p for p in SOURCES.iterdir() if (p / "pyproject.toml").is_file())
    return dict(zip((s.name for s in sources), pip_targets(tmp_path_factory, sources)))


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
