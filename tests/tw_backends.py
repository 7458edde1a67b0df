"""Entering a backend for a test: the device specs, why one is unusable, and the scope.

Each test folder's ``backend`` fixture is one call of :func:`entered`; the folder chooses
its specs, and whether the test runs in float64 with fixed seeds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

import pytest
import tensorweaver as tw

#: Every test folder's specs include cuPyNumeric (about 0.4 ms an op) with this set.
ALL_ON_CUNUMERIC = bool(os.environ.get("TENSORWEAVER_TEST_ALL_ON_CUNUMERIC"))
#: Every case of the tests marked ``cunumeric`` runs there with this set (the suite runs a
#: sixth of each marked test function's cases; see :func:`deselect_marked_cunumeric_share`).
MARKED_ON_CUNUMERIC = ALL_ON_CUNUMERIC or bool(os.environ.get("TW_CUNUMERIC_MARKED_FULL"))
FAST = ("numpy", "torch:cpu")
ALL = (*FAST, "cunumeric")
#: Fast backends, and cuPyNumeric too when asked: folders whose tests take minutes there.
FAST_UNLESS_ASKED = ALL if ALL_ON_CUNUMERIC else FAST
UNUSABLE = ("unavailable", "error")
#: The device the ``torch:cpu`` cases enter: scripts/gpu-check.sh sets ``torch:cuda`` here to
#: run them on a GPU (their ids keep saying torch:cpu; twins still compute on torch's CPU).
TORCH_DEVICE = os.environ.get("TENSORWEAVER_TEST_TORCH_DEVICE", "torch:cpu")


@cache
def unusable_reason(spec: str) -> str | None:
    """Why ``tw.devices()`` says no device matches ``spec``, or None if one may be used."""
    name, _, kind = spec.partition(":")
    records = [r for r in tw.devices() if r.backend == name and kind in ("", r.kind)]
    if not records:
        return f"no device {spec!r} is installed"
    if all(r.status in UNUSABLE for r in records):
        return "; ".join(f"{r.name} is {r.status}: {r.detail}" for r in records)
    return None


@contextmanager
def entered(spec: str, *, float64: bool = False, seed: int | None = None) -> Iterator[str]:
    """The test body's scope on ``spec`` (skipped only when the device is unusable)."""
    if spec == "torch:cpu":
        spec = TORCH_DEVICE
    reason = unusable_reason(spec)
    if reason is not None:
        pytest.skip(f"backend {spec!r} unavailable here: {reason}")
    previous = tw.get_default_dtype()
    if float64:
        tw.set_default_dtype(tw.float64)
    if seed is not None:
        tw.manual_seed(seed)
    try:
        with tw.device(spec):
            yield spec
    finally:
        tw.set_default_dtype(previous)


# --- a folder whose tests take ``backend``: numpy and torch:cpu, cuPyNumeric where marked -----

CUNUMERIC_MARK = "cunumeric"


def parametrize_backend(metafunc: pytest.Metafunc) -> None:
    """``pytest_generate_tests`` of such a folder: every spec of :data:`ALL`."""
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ALL, indirect=True)


def share_for(backend: str, programs: list) -> list:
    """A seeded sweep's programs to run on ``backend``: all, but every third on cuPyNumeric
    (each op there costs about 0.4 ms), unless every test is asked for there."""
    return programs if backend != "cunumeric" or ALL_ON_CUNUMERIC else programs[::3]


def _inside(folder: os.PathLike) -> Callable[[pytest.Item], bool]:
    """Whether an item's file lies in ``folder``: a prefix test of its path's text (which the
    path caches), as ``Path.is_relative_to`` says, at a fiftieth of its cost (~1 against
    ~40 us under load); every folder's hooks see each of the session's ~64k items."""
    prefix = os.path.join(os.fspath(folder), "")
    return lambda item: str(item.path).startswith(prefix)


def deselect(config: pytest.Config, items: list[pytest.Item], deselected: list) -> None:
    """Take ``deselected`` out of the session's ``items``, reporting them as deselected."""
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        chosen = set(map(id, deselected))
        items[:] = [item for item in items if id(item) not in chosen]


def deselect_unmarked_cunumeric(
    config: pytest.Config, items: list[pytest.Item], folder: os.PathLike
) -> None:
    """``pytest_collection_modifyitems`` of such a folder: its cuPyNumeric runs only for
    tests marked ``cunumeric`` (each op there costs about 0.4 ms), unless every test is
    asked for there."""
    if ALL_ON_CUNUMERIC:
        return

    inside = _inside(folder)

    def unmarked(item: pytest.Item) -> bool:
        params = getattr(getattr(item, "callspec", None), "params", {})
        return params.get("backend") == "cunumeric" and not item.get_closest_marker(CUNUMERIC_MARK)

    deselected = [item for item in items if inside(item) and unmarked(item)]
    deselect(config, items, deselected)


def _all_but_one_in(every: int, items: list[pytest.Item], shared) -> list[pytest.Item]:
    """The cuPyNumeric cases for which ``shared(item)`` holds, less each test function's first
    case and every ``every``-th after it, in collection order."""
    seen: dict[tuple, int] = {}
    left_out = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("backend") != "cunumeric" or not shared(item):
            continue
        function = (item.path, getattr(item.cls, "__name__", None), item.originalname)
        index = seen[function] = seen.get(function, -1) + 1
        if index % every:
            left_out.append(item)
    return left_out


def deselect_cunumeric_share(
    config: pytest.Config, items: list[pytest.Item], folder: os.PathLike
) -> None:
    """``pytest_collection_modifyitems`` of a folder whose every test runs on cuPyNumeric: each
    test function keeps its first cuPyNumeric case and every sixth after it, in collection
    order (each op there costs about 0.4 ms; the other cases run on NumPy and torch:cpu, and
    scripts/test-remainder.sh runs them all on cuPyNumeric), unless every test is asked for
    there."""
    if ALL_ON_CUNUMERIC:
        return
    deselect(config, items, _all_but_one_in(6, items, _inside(folder)))


def deselect_marked_cunumeric_share(
    config: pytest.Config, items: list[pytest.Item], folder: os.PathLike
) -> None:
    """``pytest_collection_modifyitems`` of a folder whose tests run on cuPyNumeric where
    marked: a test function marked as a whole (all its parameter sets: dtypes, equations,
    shapes of one code path) keeps its first cuPyNumeric case and every sixth after it, in
    collection order; a parameter set with marks of its own (a case
    chosen for cuPyNumeric, a strict xfail recording a defect) always runs there.
    scripts/test-remainder.sh runs every case there (``TW_CUNUMERIC_MARKED_FULL=1``)."""
    if MARKED_ON_CUNUMERIC:
        return

    inside = _inside(folder)

    def marked_as_a_whole(item: pytest.Item) -> bool:
        own = getattr(getattr(item, "callspec", None), "marks", ())
        return inside(item) and not own

    deselect(config, items, _all_but_one_in(6, items, marked_as_a_whole))


#: Hypothesis's pytest plugin seeds NumPy's global generator around every test, which
#: Legate warns about once it has started: noise here, where no test runs on many ranks.
QUIET_LEGATE_SEEDING = pytest.mark.filterwarnings(
    "ignore:(?s).*Seeding the random number generator"
)


def backend_folder(
    folder: os.PathLike,
    *,
    float64: bool = False,
    seed: int | None = None,
    marked_share: bool = False,
) -> dict[str, object]:
    """The conftest of a folder whose tests take ``backend``: its hooks and the fixture.

    A folder's conftest.py is ``globals().update(backend_folder(HERE))``. Each test taking
    ``backend`` runs inside ``tw.device(spec)`` on NumPy and torch:cpu, and on cuPyNumeric
    where marked ``cunumeric`` (see :func:`deselect_unmarked_cunumeric`; with
    ``marked_share``, a sixth of the cases of each function marked as a whole, see
    :func:`deselect_marked_cunumeric_share`); ``float64`` and ``seed`` set the default dtype
    and the seed around each test.
    """

    def pytest_configure(config: pytest.Config) -> None:
        config.addinivalue_line(
            "markers",
            f"{CUNUMERIC_MARK}: also run this test on the cuPyNumeric backend (a small "
            "subset: each op there costs about 0.4 ms)",
        )

    def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
        # This hook sees the whole session's items: touch only the tests in this folder.
        inside = _inside(folder)
        for item in items:
            if inside(item):
                item.add_marker(QUIET_LEGATE_SEEDING)
        deselect_unmarked_cunumeric(config, items, folder)
        if marked_share:
            deselect_marked_cunumeric_share(config, items, folder)

    @pytest.fixture
    def backend(request: pytest.FixtureRequest) -> Iterator[str]:
        """The device spec under test; the test body runs inside ``tw.device(spec)``."""
        with entered(request.param, float64=float64, seed=seed) as spec:
            yield spec

    return {
        "pytest_configure": pytest_configure,
        "pytest_generate_tests": parametrize_backend,
        "pytest_collection_modifyitems": pytest_collection_modifyitems,
        "backend": backend,
    }
