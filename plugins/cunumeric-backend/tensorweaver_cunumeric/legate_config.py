"""Legate's configuration: what a runtime start would use, and what the running one has.

Legate reads ``LEGATE_CONFIG`` and ``LEGATE_AUTO_CONFIG`` once, when its runtime
starts (the first import of ``legate.core``, which ``import cupynumeric`` does); the
machine (processors, memories, nodes) is then fixed for the life of the process. A
start that fails leaves the process unable to start Legate again.

**The CPU default.** Legate's automatic configuration fails on a machine without
GPUs ("could not determine the number of GPUs"). So when ``LEGATE_CONFIG`` is unset
and no NVIDIA driver is found, :func:`prepare_environment` sets, before the import,
``LEGATE_AUTO_CONFIG=0`` (unless the user set it) and
``LEGATE_CONFIG="--cpus 1 --gpus 0 --utility 1 --sysmem N --logging gpu=6"`` with N =
4000 MiB or half the machine's memory if that is less. ``--gpus 0`` needs the utility
core; ``--omps`` would fail (the wheels have no OpenMP); ``--logging gpu=6`` hides the
"no CUDA device" warnings. A user's own ``LEGATE_CONFIG`` is never changed, and a
machine with a driver is left to Legate's automatic configuration. Multi-GPU and
multi-node runs go through Legate's launcher (``legate --gpus N --nodes M script.py``),
which sets ``LEGATE_CONFIG`` itself.

Starting Legate has another process-wide effect, left as Legate wants it: it seeds NumPy's
and Python's global random generators with 1234 and makes their ``seed()`` warn, so that
every rank of a multi-node run draws the same numbers.

Nothing here imports legate except :func:`import_library`, :func:`running` and
:func:`max_ndim`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from functools import lru_cache
from typing import Any, Optional

#: Module names of the library, newest first (cuNumeric was renamed cuPyNumeric in 25.01).
LIBRARIES = ("cupynumeric", "cunumeric")
_DISTRIBUTIONS = ("nvidia-cupynumeric", "cupynumeric", "cunumeric", "nvidia-cunumeric")
#: Which distribution is the PyPI CUDA build, the one that needs ``libcuda.so.1``.
CUDA_WHEEL = "nvidia-cupynumeric"

STANDIN_MARKER = b"tensorweaver-libcuda-standin"
STANDIN_FIX = (
    "on a machine without an NVIDIA GPU, install the CPU stand-in for the CUDA driver "
    "from the TensorWeaver source tree: bash scripts/cupynumeric-cpu/install.sh "
    f"{sys.executable}"
)
CONFIG_FIX = (
    "set Legate's configuration before Python starts, e.g. LEGATE_AUTO_CONFIG=0 "
    "LEGATE_CONFIG='--cpus 1 --gpus 0 --utility 1 --sysmem 4000' (LEGATE_CONFIG=--help "
    "lists the settings), or launch with `legate --cpus N --gpus N script.py`"
)
DEFAULT_SYSMEM_MB = 4000
DEFAULT_SOURCE = "tensorweaver CPU default (no NVIDIA driver)"

#: Settings of ``LEGATE_CONFIG`` that say what the machine has (memories in MiB).
_INT_FLAGS = (
    "cpus",
    "gpus",
    "omps",
    "ompthreads",
    "utility",
    "sysmem",
    "fbmem",
    "zcmem",
    "numamem",
    "regmem",
)

_state: dict[str, Any] = {"default_applied": False, "started_before": None, "failure": None}


def library_name() -> Optional[str]:
    """The importable module (``cupynumeric``, else ``cunumeric``), found without importing it."""
    return next((name for name in LIBRARIES if importlib.util.find_spec(name)), None)


def distribution() -> tuple[Optional[str], Optional[str]]:
    """``(distribution name, version)`` of the installed library, from its metadata."""
    for name in _DISTRIBUTIONS:
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


def legate_version() -> Optional[str]:
    try:
        return importlib.metadata.version("legate")
    except importlib.metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def nvidia_driver() -> bool:
    """Whether this machine has a real NVIDIA driver (the checks install.sh makes)."""
    if os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi"):
        return True
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "libcuda.so.1 " in listing.stdout


def standin() -> Optional[str]:
    """The path of TensorWeaver's stand-in ``libcuda.so.1`` in legate's folder, if installed."""
    spec = importlib.util.find_spec("legate")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "lib64", "libcuda.so.1")
        try:
            with open(path, "rb") as f:
                if STANDIN_MARKER in f.read():
                    return path
        except OSError:
            continue
    return None


def driver_library_missing() -> bool:
    """Whether the CUDA wheel is installed but no ``libcuda.so.1`` (real or stand-in) exists."""
    if distribution()[0] != CUDA_WHEEL or nvidia_driver() or standin():
        return False
    folders = os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
    return not any(os.path.exists(os.path.join(d, "libcuda.so.1")) for d in folders if d)


def parse(text: str) -> dict[str, int]:
    """The numeric settings in a ``LEGATE_CONFIG`` string (``--gpus 2`` or ``--gpus=2``)."""
    words = shlex.split(text)
    found: dict[str, int] = {}
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        name = flag[2:] if flag.startswith("--") else ""
        if name not in _INT_FLAGS:
            continue
        if not value and i + 1 < len(words):
            value = words[i + 1]
        try:
            found[name] = int(value)
        except ValueError:
            continue
    return found


def default_config() -> str:
    """The CPU configuration TensorWeaver sets where Legate's auto-configuration would fail."""
    try:
        half_ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**21
    except (ValueError, OSError, AttributeError):
        half_ram_mb = DEFAULT_SYSMEM_MB
    sysmem = max(256, min(DEFAULT_SYSMEM_MB, half_ram_mb))
    return f"--cpus 1 --gpus 0 --utility 1 --sysmem {sysmem} --logging gpu=6"


def started() -> bool:
    """Whether this process has started (or tried to start) the Legate runtime."""
    return "legate.core" in sys.modules


def _source() -> str:
    """Where the configuration of a start (now or already made) comes from."""
    if _state["default_applied"]:
        return DEFAULT_SOURCE
    if "LEGATE_CONFIG" in os.environ:
        return "LEGATE_CONFIG"
    return "legate auto-configuration" if nvidia_driver() else DEFAULT_SOURCE


def planned() -> dict[str, Any]:
    """What a runtime start now would use, without starting it or changing the environment."""
    source = _source()
    text = os.environ.get("LEGATE_CONFIG", default_config() if source == DEFAULT_SOURCE else "")
    settings: dict[str, Any] = parse(text)
    # Legate's auto-configuration fills in what LEGATE_CONFIG leaves out, GPUs included.
    if "gpus" not in settings and os.environ.get("LEGATE_AUTO_CONFIG", "1") != "0":
        settings["gpus"] = "auto"
    return {"source": source, "LEGATE_CONFIG": text, **settings}


def prepare_environment() -> None:
    """Set the CPU default before Legate starts, where nothing else would work (see above)."""
    if started() or "LEGATE_CONFIG" in os.environ or nvidia_driver():
        return
    os.environ.setdefault("LEGATE_AUTO_CONFIG", "0")
    os.environ["LEGATE_CONFIG"] = default_config()
    _state["default_applied"] = True


def _summary(exc: BaseException) -> str:
    """The message lines of a Legate error, without its banner and stack trace."""
    lines = [ln.replace("LEGATE ERROR:", "").strip() for ln in str(exc).splitlines()]
    useful = [ln[3:] for ln in lines if ln.startswith("#0 ") and " at /" not in ln]
    return " ".join(useful) or (lines[0] if lines else type(exc).__name__)


def import_library():
    """Import cuPyNumeric (starting Legate) after :func:`prepare_environment`.

    Raises ``RuntimeError`` that says what failed and how to fix it; a failed start is
    remembered, since Legate cannot be started twice in one process.
    """
    if _state["failure"] is not None:
        raise RuntimeError(_state["failure"])
    if _state["started_before"] is None:
        _state["started_before"] = started()
    name = library_name()
    if name is None:
        raise RuntimeError("cuPyNumeric is not installed: pip install tensorweaver[cunumeric]")
    prepare_environment()
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        fix = STANDIN_FIX if "libcuda.so.1" in str(exc) else "reinstall nvidia-cupynumeric"
        _state["failure"] = f"cannot import {name}: {exc}; fix: {fix}"
    except Exception as exc:  # Legate raises RuntimeError with its own report
        _state["failure"] = (
            f"the Legate runtime failed to start with LEGATE_CONFIG="
            f"{os.environ.get('LEGATE_CONFIG', '')!r}: {_summary(exc)}; fix: {CONFIG_FIX}"
        )
    raise RuntimeError(_state["failure"])


def failure() -> Optional[str]:
    """Why the runtime failed to start in this process, if it did."""
    return _state["failure"]


@lru_cache(maxsize=1)
def running() -> dict[str, Any]:
    """The running Legate machine (starts the runtime): processors, memories, nodes."""
    import_library()
    import legate.core as lc

    runtime = lc.get_legate_runtime()
    machine = lc.get_machine()
    T = lc.TaskTarget
    facts: dict[str, Any] = {
        "cpus": machine.count(T.CPU),
        "omps": machine.count(T.OMP),
        "gpus": machine.count(T.GPU),
        "nodes": runtime.node_count,
        **_memories(runtime),
        "LEGATE_CONFIG": os.environ.get("LEGATE_CONFIG", ""),
        "source": _source(),
    }
    note = _mismatch(facts)
    if note:
        facts["note"] = note
    return facts


def max_ndim() -> int:
    """The most axes a Legate array may have: ``LEGATE_MAX_DIM``, fixed when Legate was
    built. Starts the runtime."""
    import_library()
    import legate.core as lc

    # A release that does not export it: assume the PyPI wheels' setting.
    return getattr(lc, "LEGATE_MAX_DIM", 6)


def _memories(runtime) -> dict[str, int]:
    """Memory sizes in MiB (0: unknown): from Realm where Legate tells them (26.06 does),
    else as LEGATE_CONFIG asked."""
    try:
        realm = runtime.realm_config()
        return {"sysmem_mb": (realm.sysmem or 0) // 2**20, "fbmem_mb": (realm.fbmem or 0) // 2**20}
    except AttributeError:
        asked = parse(os.environ.get("LEGATE_CONFIG", ""))
        return {"sysmem_mb": asked.get("sysmem", 0), "fbmem_mb": asked.get("fbmem", 0)}


def _mismatch(facts: dict[str, Any]) -> str:
    """Say so when Legate runs with settings other than those in LEGATE_CONFIG now, which
    happens when something started it before that was set."""
    wanted = parse(facts["LEGATE_CONFIG"])
    nodes = max(1, facts["nodes"])
    have = {
        "cpus": facts["cpus"] // nodes,
        "gpus": facts["gpus"] // nodes,
        "sysmem": facts["sysmem_mb"],
    }
    differ = [
        f"--{k} {wanted[k]} asked, {have[k]} running"
        for k in have
        if k in wanted and wanted[k] != have[k]
    ]
    if not differ:
        return ""
    when = "before TensorWeaver imported it" if _state["started_before"] else "earlier"
    return (
        f"Legate was started {when} with another configuration than LEGATE_CONFIG="
        f"{facts['LEGATE_CONFIG']!r} ({'; '.join(differ)}); Legate fixes its configuration "
        "when it starts, so it cannot change in this process: set LEGATE_CONFIG before "
        "anything imports legate or cupynumeric"
    )


def machine_scope(kind: str):
    """A Legate machine restricted to ``kind``'s processors, or None where no restriction is
    needed (Legate already prefers GPUs when it has them; CPUs need a scope only then)."""
    facts = running()
    if kind != "cpu" or facts["gpus"] == 0:
        return None
    import legate.core as lc

    present = {lc.TaskTarget.OMP: facts["omps"], lc.TaskTarget.CPU: facts["cpus"]}
    return lc.get_machine().only([t for t, n in present.items() if n])
