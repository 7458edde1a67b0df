"""``tw doctor``'s report as text for people and as JSON for tools."""

from __future__ import annotations

import json
import textwrap
from collections import Counter

from tensorweaver.contract.records import SEVERITIES
from tensorweaver.doctor import Report

WIDTH = 100


def as_json(report: Report) -> str:
    """The report as one JSON document (see :meth:`Report.as_dict` for its fields)."""
    return json.dumps(report.as_dict(), indent=2, default=str)


def as_text(report: Report) -> str:
    """One block per section, one line per finding with its fix below, then every fix."""
    lines = []
    for section in report.sections:
        where = f"{section.distribution} {section.version}".strip()
        lines += ["", f"{section.name} ({where})" if where else section.name]
        subjects = max((len(d.subject) for d in section.findings), default=0)
        for d in section.findings:
            head = f"  {d.severity:<8} {d.subject:<{subjects}}  "
            indent = " " * len(head)
            body = textwrap.wrap(d.message, WIDTH - len(head), break_on_hyphens=False) or [""]
            lines.append(head + body[0])
            lines += [indent + rest for rest in body[1:]]
            if d.fix:  # never wrapped: it is copied as it is
                lines.append(f"{indent}fix: {d.fix}")
    lines += ["", _summary(report)]
    fixes = report.fixes()
    if fixes:
        lines.append("To fix them:")
        lines += [f"  {fix}" for fix in fixes]
    return "\n".join(lines[1:])


def _summary(report: Report) -> str:
    counts = Counter(d.severity for d in report.findings())
    problems = [f"{counts[s]} {s}{'s' * (counts[s] != 1)}" for s in reversed(SEVERITIES[2:])]
    problems = [p for p in problems if not p.startswith("0 ")]
    return ("Found " + " and ".join(problems) + ".") if problems else "No problems found."
