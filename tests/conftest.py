"""The whole suite's root: its folder is on ``sys.path``, so every test folder can import
:mod:`tw_backends`, the one place that says how a test enters a backend.

Test modules import torch themselves (the twins they compare with), before the torch plugin
can set ``OMP_WAIT_POLICY=PASSIVE`` for it; spinning OpenMP threads make a torch test several
times slower on a busy machine, so the suite sets the policy first, as the plugin would.
SciPy reads ``SCIPY_ARRAY_API`` once, when first imported: the array API tests (SciPy and
scikit-learn on tensors) need it set before any test imports SciPy. :mod:`snippet_outcomes`
asserts for the tests that use it: pytest rewrites its asserts too, so a failure shows the
programs that differ; ``spec`` is the device such a test compares with torch on (a module
or folder that compares on others defines its own ``spec``). The files whose tests take a
minute or more of a worker run first (:data:`SLOW_FIRST`). Where the machine forbids writing
bytecode, the interpreters tests start share a bytecode cache (:func:`child_bytecode_cache`).
"""

import os
from collections.abc import Iterator

import pytest

pytest.register_assert_rewrite("snippet_outcomes")

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("SCIPY_ARRAY_API", "1")

# (after the environment above, which must be set before anything can import torch)
from pip_targets import run_root  # noqa: E402
from tw_backends import FAST  # noqa: E402

#: Files and folders whose tests start interpreters for a minute or more of one worker (the
#: conformance kit, SIGKILL chains, plugins installed with pip, cuPyNumeric training): they
#: go first, so that pytest-xdist's last tests are short ones and no worker waits for the
#: other to finish a long one.
SLOW_FIRST = (
    "tests/conformance/",
    "tests/discovery/",
    "tests/cli/test_doctor.py",
    "tests/training/test_resume.py",
    "tests/training/test_fit_options.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(SLOW_FIRST))  # a stable sort


@pytest.fixture(scope="session", autouse=True)
def child_bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """With ``PYTHONDONTWRITEBYTECODE`` set (as on this project's machines) every interpreter a
    test starts (the conformance kit, ``tw`` commands, probes, SIGKILL chains) would compile
    the editable core and plugins from source, about 1 s of CPU each: they cache bytecode in
    one folder of the run instead, shared by the xdist workers, and write none beside the
    sources. The workers themselves started before this and are unchanged. (The cache checks
    a source's size and mtime in whole seconds: a test that rewrites a module in place and
    runs it again in a child within the same second must give that child
    ``PYTHONDONTWRITEBYTECODE=1``; no test does so today.) scripts/test-all.sh unsets the
    variable and compiles everything before the workers start, so this serves runs by hand."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PYTHONDONTWRITEBYTECODE")
        patch.setenv("PYTHONPYCACHEPREFIX", str(run_root(tmp_path_factory) / "bytecode"))
        yield


@pytest.fixture(params=FAST)
def spec(request: pytest.FixtureRequest) -> str:
    """The tensorweaver device (NumPy, then torch:cpu) a test compares with torch on."""
    return request.param
