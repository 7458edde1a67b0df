"""The hooks TensorWeaver calls: what this backend is, its device, what is wrong, and the
backend object. (The entry point in pyproject.toml names this module.)

JAX costs about a second to import, so this module never imports it: the device is found
with ``importlib.util.find_spec`` and the versions are read from package metadata. JAX is
imported, and its process-wide ``jax_enable_x64`` switched on, in ``tw_create_backend``.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version

from tensorweaver.contract import BackendInfo, DeviceRecord, Diagnosis, Problem, hookimpl
from tensorweaver.contract.records import AVAILABLE, UNAVAILABLE

from tw_jax import __version__

#: Checks this backend knows it fails (see the conformance kit's docs): XLA on the CPU treats
#: subnormal floats as zero (flush-to-zero), so the widened kit's extreme values, which
#: include the smallest subnormals, come out as for zero in these primitives (sqrt(-5e-324)
#: is -0.0, 5e-324 == -5e-324). Globs: only the checks that fail are covered.
conformance_gaps = {
    f"widening/{name}/*": "XLA on the CPU flushes subnormal floats to zero"
    for name in (
        "argmin ceil cast div eq floor floordiv ge log lt mul ne remainder sign sqrt".split()
    )
}

#: The backend's name: the entry-point name in pyproject.toml, and the device prefix.
NAME = "jax"
#: The import names this backend needs (the kit hides LIBRARY to test the "missing" path).
LIBRARY = "jax"
RUNTIME = "jaxlib"
INSTALL = 'pip install "jax[cpu]"'


def _problem() -> Problem | None:
    """What stops this backend from working here, found without importing JAX."""
    for module in (LIBRARY, RUNTIME):
        if importlib.util.find_spec(module) is None:
            return Problem(f"{module} is not installed", fix=INSTALL)
    return None


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:  # importable but not installed by pip (a source checkout)
        return "unknown"


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name=NAME,
        version=__version__,
        api_version="2.3",  # the backend API this plugin was written against
        library=LIBRARY,
        install="pip install tw-jax-backend",
        description="jax.numpy on the CPU, with 64-bit types enabled (jax_enable_x64)",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    # The CPU exists whenever JAX is installed, so `probe` changes nothing here.
    name = f"{NAME}:cpu:0"
    problem = _problem()
    if problem is not None:
        detail = {"reason": f"{problem.message}; install it with: {problem.fix}", "fix": INSTALL}
        return [DeviceRecord(name, NAME, "cpu", 0, UNAVAILABLE, detail)]
    detail = {"jax": _version("jax"), "jaxlib": _version("jaxlib")}
    return [DeviceRecord(name, NAME, "cpu", 0, AVAILABLE, detail)]


@hookimpl
def tw_diagnose() -> list[Problem]:
    problem = _problem()
    if problem is not None:
        return [problem]
    return [
        Diagnosis(
            f"jax {_version('jax')}, jaxlib {_version('jaxlib')}",
            subject="jax build",
            severity="ok",
        ),
        Diagnosis(
            "the backend sets jax_enable_x64=True for the whole process when it starts "
            "(float64 and int64 need it)",
            subject="jax settings",
            severity="info",
        ),
    ]


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    import jax

    # Process-wide, and before the first array: without it float64 and int64 silently
    # become 32-bit. JAX lets it change at any time, so no dtype ever has to be dropped.
    jax.config.update("jax_enable_x64", True)
    from tw_jax.backend import JaxBackend  # imports jax.numpy: only now

    return JaxBackend(device)
