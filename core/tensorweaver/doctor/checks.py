"""The core's own checks for ``tw doctor``: versions, plugins, thread pools."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tensorweaver.contract.records import Diagnosis
from tensorweaver.registry import DISABLE_ENV, DISABLED, OK, PluginStatus, api_text
from tensorweaver.version import __version__

#: Environment variables that set a thread pool's size, and the pools that read them.
THREAD_VARIABLES = {
    "OMP_NUM_THREADS": "OpenMP (and OpenBLAS/MKL when nothing more specific is set)",
    "OPENBLAS_NUM_THREADS": "OpenBLAS",
    "MKL_NUM_THREADS": "MKL",
}
WAIT_POLICY = "OMP_WAIT_POLICY"


def core() -> list[Diagnosis]:
    """The core's version, the Python running it, and NumPy."""
    import numpy

    python = f"Python {platform.python_version()} ({sys.executable})"
    return [
        Diagnosis(
            f"tensorweaver {__version__}, backend API {api_text()}",
            subject="version",
            severity="ok",
        ),
        Diagnosis(python, subject="python", severity="ok"),
        Diagnosis(f"NumPy {numpy.__version__}", subject="numpy", severity="ok"),
    ]


def plugin(status: PluginStatus, environ: Mapping[str, str]) -> Diagnosis:
    """What the core knows of one plugin: its distribution, the API handshake, or why it is
    refused or disabled."""
    where = f"{status.distribution} {status.version}"
    if status.status == OK:
        return Diagnosis(
            f"{where}, backend API {status.api_version} (this core speaks {api_text()}): accepted",
            subject="plugin",
            severity="ok",
        )
    if status.status == DISABLED:
        return Diagnosis(
            f"{where} is disabled by {DISABLE_ENV}={environ.get(DISABLE_ENV, '')}",
            fix=_enable_command(status.name, environ),
            subject="plugin",
            severity="info",
        )
    return Diagnosis(
        f"{where} is refused: {status.error}", fix=status.fix, subject="plugin", severity="error"
    )


def _enable_command(name: str, environ: Mapping[str, str]) -> str:
    rest = [n.strip() for n in environ.get(DISABLE_ENV, "").split(",") if n.strip() != name]
    rest = [n for n in rest if n and n != "all"]
    return f"export {DISABLE_ENV}={','.join(rest)}" if rest else f"unset {DISABLE_ENV}"


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask where the OS has one."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threads(pools: Sequence[dict[str, Any]], environ: Mapping[str, str]) -> list[Diagnosis]:
    """Thread settings and whether they oversubscribe the cores.

    ``pools`` are :func:`threadpoolctl.threadpool_info`'s records of the BLAS and OpenMP
    libraries loaded in this process; ``environ`` the environment they were started with.
    """
    cores = usable_cores()
    machine = os.cpu_count() or cores
    found = [
        Diagnosis(
            f"{cores} usable cores"
            + ("" if cores == machine else f" of the machine's {machine} (affinity mask)"),
            subject="threads",
            severity="ok",
        )
    ]
    for variable in THREAD_VARIABLES:
        text = environ.get(variable, "").strip()
        asked = _first_int(text)
        if text and asked is None:
            found.append(
                Diagnosis(
                    f"{variable}={text!r} is not a number of threads",
                    fix=f"export {variable}={cores}",
                    subject="threads",
                    severity="warning",
                )
            )
        elif asked is not None and asked > cores:
            found.append(
                Diagnosis(
                    f"{variable}={text} asks {THREAD_VARIABLES[variable]} for {asked} threads "
                    f"on {cores} cores: a library that follows it runs more threads than cores, "
                    "and they wait for each other (the pools below show who follows it)",
                    fix=f"export {variable}={cores}",
                    subject="threads",
                    severity="warning",
                )
            )
    # A variable set too high already explains its pools; warn of a pool only otherwise.
    settings_warned = len(found) > 1
    for pool in () if settings_warned else pools:
        count = pool.get("num_threads") or 0
        name = f"{pool.get('internal_api')} ({pool.get('user_api')}, {pool.get('prefix')})"
        if count > cores:
            found.append(
                Diagnosis(
                    f"{name} runs {count} threads on {cores} cores",
                    fix=f"export {_variable_for(pool)}={cores}",
                    subject="threads",
                    severity="warning",
                )
            )
    found.append(_sharing(pools, cores, environ))
    return found


def _sharing(pools: Sequence[dict[str, Any]], cores: int, environ: Mapping[str, str]) -> Diagnosis:
    """Several pools that each use every core oversubscribe whenever they overlap; spinning
    OpenMP threads make them overlap after every parallel region."""
    # Sorted: the libraries' load order varies from run to run.
    listing = ", ".join(sorted(f"{p.get('internal_api')} {p.get('num_threads')}" for p in pools))
    full = [p for p in pools if (p.get("num_threads") or 0) >= cores > 1]
    policy = environ.get(WAIT_POLICY, "").strip().upper()
    text = f"thread pools: {listing or 'none loaded'}"
    if len(full) < 2 or not any(p.get("user_api") == "openmp" for p in full):
        return Diagnosis(text, subject="threads", severity="ok")
    if policy == "PASSIVE":
        return Diagnosis(
            f"{text}; {len(full)} pools each use all {cores} cores, and {WAIT_POLICY}=PASSIVE "
            "keeps idle OpenMP threads from spinning while another pool computes",
            subject="threads",
            severity="ok",
        )
    return Diagnosis(
        f"{text}; {len(full)} pools each use all {cores} cores and OpenMP threads spin "
        f"({WAIT_POLICY}={policy or 'unset'}): they oversubscribe the cores",
        fix=f"export {WAIT_POLICY}=PASSIVE",
        subject="threads",
        severity="warning",
    )


def _variable_for(pool: dict[str, Any]) -> str:
    return {"openblas": "OPENBLAS_NUM_THREADS", "mkl": "MKL_NUM_THREADS"}.get(
        str(pool.get("internal_api")), "OMP_NUM_THREADS"
    )


def _first_int(text: str) -> int | None:
    """The (outer) thread count of a variable such as ``OMP_NUM_THREADS=8,2``."""
    head = text.split(",")[0].strip()
    return int(head) if head.isdigit() else None
