"""Hooks of the NumPy backend. NumPy is cheap to import, so listing devices needs no probe."""

from __future__ import annotations

import os
from typing import Any

from tensorweaver.contract import BackendInfo, DeviceRecord, Diagnosis, Problem, hookimpl
from tensorweaver.contract.records import AVAILABLE, UNAVAILABLE

from tensorweaver_numpy import __version__

NAME = "numpy"
MIN_NUMPY = (1, 23)
_FIX = 'pip install -U "numpy>=1.23"'


def _numpy_problem() -> Problem | None:
    """What stops this backend from working here, if anything."""
    try:
        import numpy
    except ImportError as e:
        return Problem(f"NumPy cannot be imported: {e}", fix=_FIX)
    version = tuple(int(p) for p in numpy.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_NUMPY:
        return Problem(
            f"NumPy {numpy.__version__} is too old: tensorweaver-numpy needs numpy>=1.23",
            fix=_FIX,
        )
    return None


def _blas_config() -> dict[str, Any]:
    """The BLAS NumPy was built with (NumPy >= 1.26 reports it cheaply; older ones do not)."""
    import numpy

    try:
        config = numpy.show_config(mode="dicts")
    except TypeError:
        return {}
    return config.get("Build Dependencies", {}).get("blas", {})


def _blas() -> str | None:
    return _blas_config().get("name")


def _blas_finding() -> Diagnosis:
    """NumPy's BLAS, which does every matmul of this backend, and its threads."""
    blas = _blas_config()
    name = blas.get("name")
    if not name:
        return Diagnosis("NumPy does not say which BLAS it was built with", subject="BLAS")
    text = f"{name} {blas.get('version', '')}".strip()
    # The loaded library with the build's name (scipy-openblas -> openblas) tells its threads.
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # a core dependency; absent only in a broken environment
        pools = []
    else:
        pools = [
            p
            for p in threadpool_info()
            if p["user_api"] == "blas" and p["internal_api"] in name.lower()
        ]
    if pools:
        layer = pools[0].get("threading_layer")
        text += f", {pools[0]['num_threads']} threads" + (f" ({layer})" if layer else "")
    return Diagnosis(text, subject="BLAS", severity="ok")


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name=NAME,
        version=__version__,
        api_version="2.0",
        library="numpy",
        install="pip install tensorweaver",
        description="NumPy on the CPU (the default backend)",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    name = f"{NAME}:cpu:0"
    problem = _numpy_problem()
    if problem is not None:
        detail = {"reason": problem.message, "fix": problem.fix}
        return [DeviceRecord(name, NAME, "cpu", status=UNAVAILABLE, detail=detail)]
    import numpy

    detail: dict[str, Any] = {"numpy": numpy.__version__, "cpu_count": os.cpu_count() or 1}
    blas = _blas()
    if blas:
        detail["blas"] = blas
    return [DeviceRecord(name, NAME, "cpu", status=AVAILABLE, detail=detail)]


@hookimpl
def tw_diagnose() -> list[Problem]:
    problem = _numpy_problem()
    return [_blas_finding()] if problem is None else [problem]


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    from tensorweaver_numpy.backend import NumpyBackend

    return NumpyBackend(device)
