"""The kit's fixtures, declared gaps turned into expected failures, and the verdict line.

The packaging checks load the plugin on their own (a fresh copy of its entry point, not
the registry's), and the cases create its backend object whether or not it defines every
primitive: a plugin whose backend cannot be created, or lacks primitives, still gets its
packaging and handshake checked, and each missing primitive is one failing check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tensorweaver import registry
from tensorweaver.check.context import Context
from tensorweaver.conformance import gaps as gap_rules
from tensorweaver.errors import BackendError

KIT = Path(__file__).parent
#: What collection learnt, for the packaging/gaps check and the verdict.
STATE = pytest.StashKey[dict]()


def check_id(item: Any) -> str:
    """The id a check is printed, selected and declared a gap by."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "case" in callspec.params:
        return callspec.params["case"].id
    return "packaging/" + item.originalname[len("test_") :].replace("_", "-")


def backend_name(spec: str) -> str:
    return registry.parse_spec(spec)[0]


def _declared(spec: str) -> tuple[dict[str, str], str]:
    """The plugin's declared gaps, and why they could not be read ('' when they could)."""
    try:
        name = backend_name(spec)
        plugin = registry.installed().get(name) or registry.find_plugin(name)  # or an alias
        # The module alone: its gaps count even where its handshake or backend fails.
        return gap_rules.declared(plugin.entry_point.load()), ""
    except Exception as exc:  # an import error is packaging/entry-point's finding too
        return {}, f"cannot read conformance_gaps: {registry.describe(exc)}"


@pytest.hookimpl(tryfirst=True)  # before -k deselects: every check's id is known
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if item.path.parent == KIT]
    if not ours:
        return
    spec = config.getoption("--tw-backend", default=None)
    if not spec:
        raise pytest.UsageError(
            "the TensorWeaver conformance kit needs the backend to check: "
            "pytest --pyargs tensorweaver.conformance --tw-backend NAME "
            "(or python -m tensorweaver.conformance --tw-backend NAME)"
        )
    declared, problem = _declared(spec)
    ids = {item.nodeid: check_id(item) for item in ours}
    config.stash[STATE] = {
        "spec": spec,
        "ids": ids,
        "gaps": declared,
        "gaps_problem": problem,
        "unmatched": gap_rules.unmatched(declared, ids.values()),
    }
    for item in ours:
        pattern = gap_rules.pattern(ids[item.nodeid], declared)
        if pattern is None:
            continue
        strict = not gap_rules.is_glob(pattern)
        why = f"declared gap {pattern!r}: {declared[pattern]}"
        if strict:
            why += " (an exact id: once the check passes, remove it from conformance_gaps)"
        item.add_marker(pytest.mark.xfail(reason=why, strict=strict))


@pytest.fixture(scope="session")
def tw_state(request: pytest.FixtureRequest) -> dict:
    return request.config.stash[STATE]


@pytest.fixture(scope="session")
def tw_spec(tw_state: dict) -> str:
    return tw_state["spec"]


@pytest.fixture(scope="session")
def tw_entry(tw_spec: str) -> registry.Plugin:
    """The plugin under check as discovery found it: its entry point and distribution."""
    name = backend_name(tw_spec)
    try:
        return registry.installed().get(name) or registry.find_plugin(name)  # or an alias
    except (BackendError, ValueError) as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def tw_loaded(tw_entry: registry.Plugin) -> registry.Plugin:
    """The plugin under check loaded as discovery loads it (import, handshake), on its own:
    a copy of the entry point that nothing else uses, so that what creating the backend
    does to the registry's copy (a hook that raises marks it broken) leaves it alone."""
    plugin = registry.Plugin(tw_entry.name, tw_entry.entry_point, tw_entry.distribution,
                             tw_entry.version)  # fmt: skip
    plugin.load()
    return plugin


@pytest.fixture(scope="session")
def tw_plugin(tw_loaded: registry.Plugin) -> registry.Plugin:
    """The plugin under check, loaded: its hooks can be called."""
    if tw_loaded.status != registry.OK:
        pytest.fail(f"{tw_loaded.error}. Fix: {tw_loaded.fix}", pytrace=False)
    return tw_loaded


@pytest.fixture(scope="session")
def tw_backend(tw_spec: str) -> Any:
    """The backend object of the device under check, even if it lacks primitives."""
    try:
        return registry.backend_object(tw_spec, partial=True)
    except (BackendError, ValueError) as exc:
        pytest.fail(f"cannot create the backend for {tw_spec!r}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def tw_context(tw_backend: Any) -> Context:
    return Context(tw_backend)


def _ids(state: dict, stats: dict, key: str) -> list[str]:
    """The check ids of the reports pytest filed under ``key`` (passed, xfailed, ...)."""
    return [state["ids"][r.nodeid] for r in stats.get(key, []) if r.nodeid in state["ids"]]


def pytest_sessionfinish(session: pytest.Session) -> None:
    # A glob gap none of whose checks failed fails the run, as a passing exact gap does.
    state = session.config.stash.get(STATE, None)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if state is None or reporter is None:
        return
    stats = reporter.stats
    ran = [i for key in ("passed", "failed", "error", "xfailed", "xpassed", "skipped")
           for i in _ids(state, stats, key)]  # fmt: skip
    gaps = state["gaps"]
    state["stale"] = gap_rules.stale(
        gaps, state["ids"].values(), ran, _ids(state, stats, "xfailed")
    )
    if state["stale"] and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _verdict(state: dict, stats: dict) -> list[str]:
    failed = sorted(set(_ids(state, stats, "failed") + _ids(state, stats, "error")))
    gaps, skipped = _ids(state, stats, "xfailed"), _ids(state, stats, "skipped")
    # A glob gap's passing checks are XPASS: they passed.
    passed = _ids(state, stats, "passed") + _ids(state, stats, "xpassed")
    name = state["spec"]
    stale = state.get("stale", [])
    if failed or stale:
        head = f"{name} is NOT conformant"
        if failed:
            shown = ", ".join(failed[:12]) + (", ..." if len(failed) > 12 else "")
            head += f": {len(failed)} check(s) failed: {shown}"
        lines = [head]
        if stale:
            lines.append(
                f"declared gap(s) none of whose checks fails: {', '.join(map(repr, stale))}; "
                "remove them from conformance_gaps"
            )
        return lines
    if not passed:
        return [f"{name}: no check ran"]
    lines = [
        f"{name}: {len(passed)} checks passed, {len(skipped)} skipped (dtypes it lacks, "
        "optional methods it does not define)"
    ]
    deselected = len(stats.get("deselected", []))
    if gaps:
        lines.append(f"{name} conforms except for {len(gaps)} declared gap(s): {', '.join(gaps)}")
    elif not deselected:
        lines.append(f"{name} is conformant")
    if deselected:  # -k or -m chose a part of the kit: no verdict on the rest
        lines.append(
            f"{name} passed every selected check; {deselected} check(s) were deselected, so "
            "this is no verdict on conformance: run the whole kit for one"
        )
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    terminalreporter.write_sep("=", "TensorWeaver conformance")
    for line in _verdict(state, terminalreporter.stats):
        terminalreporter.write_line(line)
