"""Plain records that hooks return: what a backend is, what it sees, what is wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Values of :attr:`DeviceRecord.status`.
AVAILABLE = "available"  # usable now
UNAVAILABLE = "unavailable"  # known to the plugin but not usable here (detail says why)
NOT_PROBED = "not-probed"  # not looked at, because looking is costly (tw devices --probe)
ERROR = "error"  # the plugin itself is broken (set by the core's registry)
STATUSES = (AVAILABLE, UNAVAILABLE, NOT_PROBED, ERROR)


@dataclass(frozen=True)
class BackendInfo:
    """What a plugin is. Returned by ``tw_backend_info``.

    ``name`` must equal the entry-point name; ``api_version`` is the contract version
    the plugin was written against, as ``"MAJOR.MINOR"``; ``library`` names the array
    library it wraps and ``install`` the pip command that installs it with its library.
    ``aliases`` are other spellings users may select it by (``cupynumeric``).
    """

    name: str
    version: str
    api_version: str
    library: str = ""
    install: str = ""
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class DeviceRecord:
    """One device a backend can see.

    ``name`` is the full spec users select it by, ``backend:kind:index``
    (``torch:cuda:0``, ``numpy:cpu:0``). ``kind`` is one of ``cpu``, ``cuda``, ``rocm``,
    ``mps``, ``xpu``, ``gpu`` (or a plugin's own word); ``status`` one of
    :data:`STATUSES`; ``detail`` holds JSON-friendly facts (library version, memory,
    threads, bf16 support, or why the device is unavailable).
    """

    name: str
    backend: str
    kind: str
    index: int = 0
    status: str = AVAILABLE
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": self.backend,
            "kind": self.kind,
            "index": self.index,
            "status": self.status,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class Problem:
    """Something wrong with the environment, and how to fix it."""

    message: str
    fix: str = ""


#: Values of :attr:`Diagnosis.severity`, mildest first. ``ok`` and ``info`` are findings
#: (``tw doctor`` shows them); ``warning`` and ``error`` are problems, as a :class:`Problem`.
SEVERITIES = ("ok", "info", "warning", "error")
#: The severity of a plain :class:`Problem`: something keeps the backend or a device from
#: working, but the rest of the installation works.
PROBLEM_SEVERITY = "warning"


@dataclass(frozen=True)
class Diagnosis(Problem):
    """One finding of ``tw doctor``: a fact about the installation, or a problem with its fix.

    ``subject`` says what it is about (``torch build``, ``threads``, ``Legate config``);
    ``severity`` is one of :data:`SEVERITIES`; ``fix`` is a command the user can run, or
    ``""`` when there is nothing to do. A Diagnosis is a :class:`Problem`, so a plugin may
    return both kinds from ``tw_diagnose``; only ``warning`` and ``error`` ones are problems.
    """

    subject: str = ""
    severity: str = "info"


def is_problem(problem: Problem) -> bool:
    """Whether ``problem`` says something is wrong (a plain Problem, or a warning or error
    Diagnosis), rather than a finding that ``tw doctor`` merely shows."""
    return getattr(problem, "severity", PROBLEM_SEVERITY) in SEVERITIES[2:]
