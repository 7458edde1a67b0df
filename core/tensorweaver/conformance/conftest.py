"""The kit's fixtures, declared gaps turned into expected failures, and the verdict line."""

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
        module = registry.find_plugin(backend_name(spec)).entry_point.load()
        return gap_rules.declared(module), ""
    except (BackendError, ValueError, TypeError) as exc:
        return {}, str(exc)


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
        why = gap_rules.reason(ids[item.nodeid], declared)
        if why is not None:
            item.add_marker(pytest.mark.xfail(reason=f"declared gap: {why}", strict=True))


@pytest.fixture(scope="session")
def tw_state(request: pytest.FixtureRequest) -> dict:
    return request.config.stash[STATE]


@pytest.fixture(scope="session")
def tw_spec(tw_state: dict) -> str:
    return tw_state["spec"]


@pytest.fixture(scope="session")
def tw_plugin(tw_spec: str) -> registry.Plugin:
    """The plugin under check (loaded: its hooks can be called)."""
    try:
        return registry.find_plugin(backend_name(tw_spec))
    except (BackendError, ValueError) as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def tw_backend(tw_spec: str) -> Any:
    """The backend object of the device under check."""
    try:
        return registry.backend_object(tw_spec)
    except (BackendError, ValueError) as exc:
        pytest.fail(f"cannot create the backend for {tw_spec!r}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def tw_context(tw_backend: Any) -> Context:
    return Context(tw_backend)


def _verdict(state: dict, stats: dict) -> list[str]:
    def ids(key: str) -> list[str]:
        return [state["ids"][r.nodeid] for r in stats.get(key, []) if r.nodeid in state["ids"]]

    failed = sorted(set(ids("failed") + ids("error")))
    gaps, passed, skipped = ids("xfailed"), ids("passed"), ids("skipped")
    name = state["spec"]
    if failed:
        shown = ", ".join(failed[:12]) + (", ..." if len(failed) > 12 else "")
        return [f"{name} is NOT conformant: {len(failed)} check(s) failed: {shown}"]
    if not passed:
        return [f"{name}: no check ran"]
    lines = [f"{name}: {len(passed)} checks passed, {len(skipped)} skipped (dtypes it lacks)"]
    if gaps:
        lines.append(f"{name} conforms except for {len(gaps)} declared gap(s): {', '.join(gaps)}")
    else:
        lines.append(f"{name} is conformant")
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    terminalreporter.write_sep("=", "TensorWeaver conformance")
    for line in _verdict(state, terminalreporter.stats):
        terminalreporter.write_line(line)
