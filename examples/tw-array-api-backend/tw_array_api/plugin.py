"""The hooks TensorWeaver calls: what this backend is, its devices, what is wrong, and the
backend object for a device. (The entry point in pyproject.toml names this module.)

Two rules the conformance kit checks, both about the case where things go wrong:

* **Importing this module stays cheap.** TensorWeaver imports it to list backends, so the
  array library is imported only inside ``tw_create_backend`` (through ``.backend``).
  Here we import only the standard library, ``tensorweaver.contract`` and our own package.
* **Answer, don't raise.** With the library missing, ``tw_devices`` returns an
  ``unavailable`` device whose detail says why and how to fix it, and ``tw_diagnose``
  returns the Problem; ``tw devices`` then shows it, and selecting the backend explains it.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl
from tensorweaver.contract.records import AVAILABLE, UNAVAILABLE

from tw_array_api import __version__

#: The backend's name: the entry-point name in pyproject.toml, and the device prefix.
NAME = "arrayapi"
#: The import name of the array library (the kit hides it to test the "missing" path).
LIBRARY = "array_api_strict"
INSTALL = "pip install tw-array-api-backend"


def _problem() -> Problem | None:
    """What stops this backend from working here, found without importing the library."""
    if importlib.util.find_spec(LIBRARY) is None:
        return Problem(f"{LIBRARY} is not installed", fix=INSTALL)
    return None


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name=NAME,
        version=__version__,
        api_version="2.0",  # the backend API this plugin was written against
        library=LIBRARY,
        install=INSTALL,
        description="array-api-strict on the CPU (a worked example of a third-party backend)",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    # One CPU device. Finding it costs nothing, so `probe` changes nothing here; a GPU
    # library would import itself only when probe is True.
    name = f"{NAME}:cpu:0"
    problem = _problem()
    if problem is not None:
        detail = {"reason": f"{problem.message}; install it with: {problem.fix}", "fix": INSTALL}
        return [DeviceRecord(name, NAME, "cpu", 0, UNAVAILABLE, detail)]
    try:
        library_version = version("array-api-strict")
    except PackageNotFoundError:  # importable but not installed by pip (a source checkout)
        library_version = "unknown"
    return [DeviceRecord(name, NAME, "cpu", 0, AVAILABLE, {"array-api-strict": library_version})]


@hookimpl
def tw_diagnose() -> list[Problem]:
    problem = _problem()
    return [] if problem is None else [problem]


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    from tw_array_api.backend import ArrayAPIBackend  # imports the library: only now

    return ArrayAPIBackend(device)
