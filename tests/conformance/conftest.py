"""Distributions for the conformance tests, installed with pip once per run, and the kit and
``tw check`` run over them in subprocesses.

As in tests/discovery: each distribution folder (the example plugin in examples/, the broken
ones in tests/conformance/plugins/) is installed with ``pip install --target`` into a folder
of its own (:func:`pip_targets.pip_target`); a run puts the folders it wants on PYTHONPATH, so
discovery reads real entry-point metadata on top of the core and the built-in plugins.

The kit runs against numpy and torch:cpu always; add a device with the kit's own option,
``pytest tests/conformance -p tensorweaver.conformance.pytest_plugin --tw-backend
cunumeric`` (cuPyNumeric costs ~0.4 ms per op, so it is not in the default run).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import pytest
from pip_targets import pip_target
from tw_backends import deselect

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "tw-array-api-backend"
BROKEN = Path(__file__).parent / "plugins" / "tw-conformance-broken"
TW_SCRIPT = Path(sys.executable).with_name("tw")
BUILT_IN = ("numpy", "torch:cpu", "cunumeric")


#: The built-in backends whose kit test runs only with ``TW_KIT_FULL=1``, as CI's
#: scripts/check-kits.sh runs it right after the suite: the whole kit costs a worker 20 s
#: (NumPy) to more than a minute, and CI's scripts/check-wheels.sh runs it on NumPy once more.
KIT_FULL_ONLY = BUILT_IN


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the kit's run on :data:`KIT_FULL_ONLY` unless ``TW_KIT_FULL`` is set."""
    if os.environ.get("TW_KIT_FULL"):
        return
    deselected = [
        item
        for item in items
        if getattr(item, "originalname", None) == "test_kit_passes_on_built_in_backends"
        and item.callspec.params["built_in"] in KIT_FULL_ONLY
    ]
    deselect(config, items, deselected)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "built_in" in metafunc.fixturenames:
        extra = metafunc.config.getoption("--tw-backend", default=None)
        specs = list(BUILT_IN) + ([extra] if extra and extra not in BUILT_IN else [])
        metafunc.parametrize("built_in", specs)


@dataclass(frozen=True)
class KitRun:
    """One run of the kit: its exit status, output, and each check's failure message."""

    returncode: int
    output: str
    failures: dict[str, str]
    outcomes: dict[str, str]

    def verdict(self) -> str:
        """The kit's last word: the lines under its 'TensorWeaver conformance' banner."""
        return self.output.split("TensorWeaver conformance", 1)[-1]


@dataclass(frozen=True)
class Env:
    """Installed distributions, and the kit, ``tw check`` and Python run over them."""

    paths: tuple[Path, ...] = ()

    def run(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("TENSORWEAVER_", "LEGATE_")) and k != "PYTHONPATH"
        }
        env["PYTHONPATH"] = os.pathsep.join(map(str, self.paths))
        env["OMP_WAIT_POLICY"] = "PASSIVE"  # torch's idle threads must not spin on 2 cores
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)

    def kit(self, spec: str, tmp: Path, *pytest_args: str) -> KitRun:
        """``python -m tensorweaver.conformance --tw-backend spec``, outcomes per check id."""
        report = tmp / f"kit-{spec.replace(':', '-')}.xml"
        # Without Hypothesis's plugin, which imports Hypothesis for its summary (~0.7 s of CPU,
        # ~1/7 of a small run); the kit has no Hypothesis tests.
        done = self.run(
            sys.executable, "-m", "tensorweaver.conformance", "--tw-backend", spec,
            "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
            f"--junitxml={report}", *pytest_args,
            cwd=tmp,
        )  # fmt: skip
        failures, outcomes = {}, {}
        for case in ElementTree.parse(report).iter("testcase"):
            name = case.get("name", "")
            if name.startswith(("test_case[", "test_widening[")):  # the kit's cases, by id
                check = name[name.index("[") + 1 : -1]
            else:  # its packaging tests: test_light_import is packaging/light-import
                check = "packaging/" + name[len("test_") :].replace("_", "-")
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            skipped = case.find("skipped")
            if problem is not None:
                failures[check] = problem.get("message", "") + (problem.text or "")
                outcomes[check] = "failed"
            elif skipped is not None:
                outcomes[check] = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
            else:
                outcomes[check] = "passed"
        return KitRun(done.returncode, done.stdout + done.stderr, failures, outcomes)

    def tw(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(str(TW_SCRIPT), *args)


@pytest.fixture(scope="session")
def plain() -> Env:
    """Only the core and the built-in plugins."""
    return Env()


@pytest.fixture(scope="session")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """The deliberately broken backends of tests/conformance/plugins/tw-conformance-broken:
    badgrad, dropdtype, eager, withgaps, partial, partialgaps, nocreate, intapi, modgap and
    stalegap."""
    return Env((pip_target(tmp_path_factory, BROKEN),))


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """The worked example plugin, arrayapi (it needs array-api-strict)."""
    if importlib.util.find_spec("array_api_strict") is None:
        pytest.skip("array-api-strict is not installed (scripts/install-dev.sh installs it)")
    return Env((pip_target(tmp_path_factory, EXAMPLE),))
