"""Packaging: how the plugin is found, what importing it costs, what its hooks answer, what
they answer when the array library is missing, and the backend object's surface.

Only ``packaging/backend-object`` creates the backend: the others pass or fail on their own
when its creation fails.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tensorweaver import registry
from tensorweaver.contract import dtypes
from tensorweaver.contract.ir import COMPOSITES
from tensorweaver.contract.records import (
    AVAILABLE,
    NOT_PROBED,
    UNAVAILABLE,
    DeviceRecord,
    Problem,
)

ENTRY_POINT_HELP = (
    'declare it in your pyproject.toml:\n  [project.entry-points."tensorweaver.backends"]\n'
    '  {name} = "your_package.plugin"'
)


def expect(condition: Any, message: str) -> None:
    """Fail the check with ``message`` alone (no traceback: the message says it all)."""
    if not condition:
        pytest.fail(message, pytrace=False)


def _probe(*args: str) -> Any:
    """Run a probe of :mod:`tensorweaver.conformance.probe` in a fresh interpreter."""
    command = [sys.executable, "-m", "tensorweaver.conformance.probe", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"the probe {' '.join(args)} failed:\n{done.stderr[-3000:]}", pytrace=False)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _package(plugin: registry.Plugin) -> str:
    return plugin.entry_point.value.split(":")[0].split(".")[0]


def test_entry_point(tw_entry: registry.Plugin) -> None:
    name = tw_entry.name
    expect(
        registry.NAME_PATTERN.match(name),
        f"entry-point name {name!r} is not a valid backend name ([a-z][a-z0-9_]*)",
    )
    expect(
        tw_entry.distribution != "?",
        f"the entry point {name!r} belongs to no installed distribution; "
        + ENTRY_POINT_HELP.format(name=name),
    )
    rivals = [key for key in registry.installed() if key.startswith(f"{name} (")]
    expect(not rivals, f"other distributions also register backend {name!r}: {rivals}")
    try:
        tw_entry.entry_point.load()
    except Exception as exc:  # the check's finding: say it
        pytest.fail(
            f"importing {tw_entry.entry_point.value} raised {registry.describe(exc)}",
            pytrace=False,
        )


def test_light_import(tw_entry: registry.Plugin) -> None:
    found = _probe("import", tw_entry.name)
    expect(
        not found["third_party"],
        f"importing {found['module']} also imported {', '.join(found['third_party'])}; "
        "every process that lists backends pays for that. Import the array library inside "
        "the hooks (tw_devices, tw_create_backend), or in a module that tw_create_backend "
        "imports, never at the top of the plugin module",
    )


def _core_imports(path: Path) -> list[str]:
    """``file:line module`` for each import of the core beyond tensorweaver.contract."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            names = names[:1] if node.module != "tensorweaver" else names[1:]
        else:
            continue
        for name in names:
            top = name.split(".")
            if top[0] == "tensorweaver" and (len(top) < 2 or top[1] != "contract"):
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_contract_only_imports(tw_entry: registry.Plugin) -> None:
    spec = importlib.util.find_spec(_package(tw_entry))
    expect(spec is not None and spec.origin, f"cannot find the source of {_package(tw_entry)}")
    roots = spec.submodule_search_locations  # a package: every module in it; else the one
    files = (
        [f for r in roots for f in sorted(Path(r).rglob("*.py"))] if roots else [Path(spec.origin)]
    )
    bad = [hit for f in files for hit in _core_imports(f)]
    expect(
        not bad,
        "a plugin imports only tensorweaver.contract from the core (hookspecs, ir, dtypes, "
        f"records), so that the core can change its insides; found: {', '.join(bad)}",
    )


def test_api_version(tw_loaded: registry.Plugin) -> None:
    # The handshake as discovery does it (tw_backend_info returns a BackendInfo with the
    # entry point's name and an api_version this core speaks), in the registry's words.
    expect(tw_loaded.info is not None, f"{tw_loaded.error}. Fix: {tw_loaded.fix}")
    info = tw_loaded.info
    for field in ("version", "library", "install"):
        expect(getattr(info, field), f"BackendInfo.{field} is empty; the core shows it to users")


def _check_records(name: str, records: Any, probe: bool) -> list[DeviceRecord]:
    where = f"tw_devices(probe={probe})"
    expect(isinstance(records, list) and records, f"{where} must return a non-empty list")
    for r in records:
        expect(isinstance(r, DeviceRecord), f"{where} returned a {type(r).__name__}")
        expect(r.backend == name, f"{r.name}: backend {r.backend!r}, expected {name!r}")
        expect(
            r.name == f"{name}:{r.kind}:{r.index}",
            f"{r.name!r}: a device is named backend:kind:index, here {name}:{r.kind}:{r.index}",
        )
        expect(re.fullmatch(r"[a-z][a-z0-9_]*", r.kind), f"{r.name}: bad kind {r.kind!r}")
        expect(
            r.status in (AVAILABLE, UNAVAILABLE, NOT_PROBED),
            f"{r.name}: status {r.status!r}; a plugin answers available, unavailable or "
            "not-probed (error is the core's)",
        )
        try:
            json.dumps(r.detail)
        except (TypeError, ValueError) as exc:
            pytest.fail(f"{r.name}: detail is not JSON-friendly ({exc})", pytrace=False)
        if r.status == UNAVAILABLE:
            expect(r.detail.get("reason"), f"{r.name} is unavailable: say why in detail['reason']")
    names = [r.name for r in records]
    expect(len(set(names)) == len(names), f"{where} lists a device twice: {names}")
    return records


def test_device_records(tw_plugin: registry.Plugin) -> None:
    _check_records(tw_plugin.name, tw_plugin.call("tw_devices", probe=False), False)
    probed = _check_records(tw_plugin.name, tw_plugin.call("tw_devices", probe=True), True)
    expect(any(r.status == AVAILABLE for r in probed), "no available device to check")


def test_diagnose(tw_plugin: registry.Plugin) -> None:
    problems = tw_plugin.call("tw_diagnose")
    expect(isinstance(problems, list), "tw_diagnose must return a list of Problem")
    for p in problems:
        expect(isinstance(p, Problem) and p.message, f"tw_diagnose returned {p!r}")


def test_missing_library(tw_plugin: registry.Plugin) -> None:
    library = (tw_plugin.info.library if tw_plugin.info else "").replace("-", "_")
    expect(
        library.isidentifier(),
        f"BackendInfo.library {library!r} must be the import name of the array library: "
        "the kit hides it to see how the plugin reports it missing",
    )
    answers = _probe("missing", tw_plugin.name, library)
    raised = {hook: a["raised"] for hook, a in answers.items() if "raised" in a}
    expect(
        not raised,
        f"with {library} not installed, hooks raised instead of reporting it: {raised}; "
        "return devices with status 'unavailable' and a Problem from tw_diagnose",
    )
    listed = answers["tw_devices(probe=False)"]["value"]
    probed = answers["tw_devices(probe=True)"]["value"]
    expect(
        not any(r["status"] == AVAILABLE for r in listed + probed),
        f"with {library} not installed a device is still 'available': {listed + probed}",
    )
    expect(
        probed and all(r["status"] == UNAVAILABLE and r["detail"].get("reason") for r in probed),
        f"with {library} not installed, tw_devices(probe=True) must list devices with status "
        f"'unavailable' and a detail['reason'] naming the install command; got {probed}",
    )
    problems = answers["tw_diagnose"]["value"]
    expect(
        problems and all(p.get("fix") for p in problems),
        f"with {library} not installed, tw_diagnose must return a Problem with a fix; "
        f"got {problems}",
    )


def test_backend_object(tw_backend: Any, tw_entry: registry.Plugin) -> None:
    # Missing primitives are checks of their own: primitive/<name>/defined.
    expect(isinstance(tw_backend.device, DeviceRecord), "backend.device must be the DeviceRecord")
    expect(
        tw_backend.device.backend == tw_entry.name,
        f"backend.device is {tw_backend.device.name}, a device of another backend",
    )
    kinds = tw_backend.dtypes
    expect(
        isinstance(kinds, frozenset) and kinds <= set(dtypes.ALL),
        "backend.dtypes must be a frozenset of tensorweaver.contract.dtypes objects",
    )
    needed = {dtypes.bool_, dtypes.int64}  # masks and index arrays
    expect(
        needed <= kinds and any(t.is_floating_point for t in kinds),
        "backend.dtypes must include bool, int64 and a float dtype; has "
        + ", ".join(sorted(t.name for t in kinds)),
    )
    fused = [n[len("fused_") :] for n in dir(tw_backend) if n.startswith("fused_")]
    kernels = [n for n in fused if not n.endswith("_backward")]
    for name in kernels:
        expect(
            name in COMPOSITES,
            f"fused_{name} is not a composite the core fuses (it would never be called); "
            f"the core fuses {', '.join(COMPOSITES)}",
        )
        expect(f"{name}_backward" in fused, f"fused_{name} has no fused_{name}_backward")


def test_gaps(tw_state: dict) -> None:
    expect(not tw_state["gaps_problem"], tw_state["gaps_problem"])
    expect(
        not tw_state["unmatched"],
        f"conformance_gaps entries that match no check: {tw_state['unmatched']}; list the "
        "checks with pytest --pyargs tensorweaver.conformance --tw-backend NAME --collect-only -q",
    )
