"""``tw doctor``: what is installed, what works, and the command that fixes what does not.

The core checks itself (versions, each plugin's handshake, thread pools) and asks every
accepted plugin's ``tw_diagnose`` hook (see :mod:`tensorweaver.contract.hookspecs`) for
its own findings. Plugins are first loaded in child processes (as for ``tw --version``),
so one that crashes while being imported is a finding, not the end of the command; the
hooks of those that load are then called in this process. A hook that raises, or returns
anything but a list of records, is reported as an ``error`` finding of its plugin.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tensorweaver import isolation, registry
from tensorweaver.contract.records import PROBLEM_SEVERITY, SEVERITIES, Diagnosis, Problem
from tensorweaver.doctor import checks
from tensorweaver.errors import PluginError
from tensorweaver.version import __version__

#: The section of the core's own findings; the others are named by backend.
CORE = "core"


@dataclass
class Section:
    """The findings about one part of the installation: the core or one plugin."""

    name: str
    distribution: str = ""
    version: str = ""
    status: str = ""
    findings: list[Diagnosis] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "findings": [
                {
                    "subject": d.subject,
                    "severity": d.severity,
                    "message": d.message,
                    "fix": d.fix or None,
                }
                for d in self.findings
            ],
        }


@dataclass
class Report:
    """Everything ``tw doctor`` found, the core first, then the plugins in discovery order."""

    sections: list[Section]

    def findings(self) -> list[Diagnosis]:
        return [d for s in self.sections for d in s.findings]

    def worst(self) -> str:
        """The most severe finding's severity (``ok`` when all is well)."""
        return max((d.severity for d in self.findings()), key=SEVERITIES.index, default="ok")

    def fixes(self) -> list[str]:
        """Every fix of a problem, once each, most severe first."""
        problems = sorted(
            (d for d in self.findings() if SEVERITIES.index(d.severity) >= 2 and d.fix),
            key=lambda d: -SEVERITIES.index(d.severity),
        )
        return list(dict.fromkeys(d.fix for d in problems))

    def as_dict(self) -> dict[str, Any]:
        return {
            "tensorweaver": __version__,
            "worst": self.worst(),
            "sections": [s.as_dict() for s in self.sections],
            "fixes": self.fixes(),
        }


def diagnose(timeout: float | None = None) -> Report:
    """Check the installation: the core, then every installed plugin (see the module doc)."""
    environ = dict(os.environ)  # before a plugin sets its library's defaults
    sections = [Section(CORE, "tensorweaver", __version__, registry.OK, checks.core())]
    for status in isolation.plugins(timeout):
        section = Section(status.name, status.distribution, status.version, status.status)
        section.findings.append(checks.plugin(status, environ))
        if status.status == registry.OK:
            plugin = registry.installed()[status.name]
            section.findings += plugin_findings(plugin)
            section.status = plugin.status  # a raising hook marks it broken
        sections.append(section)
    # Last: the pools of every library the plugins' hooks have loaded by now.
    from threadpoolctl import threadpool_info

    sections[0].findings += checks.threads(threadpool_info(), _effective(environ))
    return Report(sections)


def plugin_findings(plugin: registry.Plugin) -> list[Diagnosis]:
    """A plugin's answer to ``tw_diagnose`` as findings; a raising hook is one itself."""
    try:
        answer = plugin.call("tw_diagnose")
    except PluginError:
        return [Diagnosis(plugin.error, plugin.fix, "tw_diagnose", "error")]
    answer = [] if answer is None else answer
    if not isinstance(answer, list) or not all(isinstance(p, Problem) for p in answer):
        return [
            Diagnosis(
                f"tw_diagnose returned {type(answer).__name__} {answer!r:.80}, "
                "not a list of Problem or Diagnosis",
                f"report it to the author of {plugin.distribution}",
                "tw_diagnose",
                "error",
            )
        ]
    return [as_diagnosis(p) for p in answer]


def as_diagnosis(problem: Problem) -> Diagnosis:
    """A plugin's record as a Diagnosis: a plain Problem is a warning about "problem"."""
    severity = getattr(problem, "severity", PROBLEM_SEVERITY)
    if isinstance(problem, Diagnosis) and severity in SEVERITIES:
        return problem
    message = problem.message
    if severity not in SEVERITIES:  # a plugin's own word: shown, and taken as a problem
        message += f" (severity {severity!r})"
    subject = getattr(problem, "subject", "") or "problem"
    return Diagnosis(message, problem.fix, subject, PROBLEM_SEVERITY)


def _effective(before: Mapping[str, str]) -> dict[str, str]:
    """The thread settings the loaded pools started with: the user's, else what a plugin
    set before importing its library (the torch plugin's OMP_WAIT_POLICY default)."""
    return {**os.environ, **before}
