"""What ``tw.check`` returns: one result per case and device, printable one line each."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

OK, FAIL, SKIP = "ok", "FAIL", "skip"
#: How a composite ran on the device: its ``fused_<name>`` kernel, or the core's
#: decomposition into primitives (the device has no such kernel).
FUSED, DECOMPOSED = "fused", "decomposed"


@dataclass(frozen=True)
class CaseResult:
    """One case on one device: its largest difference from NumPy float64 and the verdict.

    ``verdict`` is ``ok``, ``FAIL`` or ``skip``; ``detail`` says, for a failure, which
    primitive, kernel or gradient is at fault and where, and for a skip, why. ``path`` is,
    for a composite, ``fused`` or ``decomposed`` (empty for other cases).
    """

    device: str
    case: str
    verdict: str
    difference: float = 0.0
    tolerance: float = 0.0
    detail: str = ""
    path: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict != FAIL

    def line(self, width: int = 0, device_width: int = 0, path_width: int = 0) -> str:
        """``device  case  difference  [path]  verdict  [detail]``, columns padded to the
        widths (the path column only where ``path_width`` makes room for it)."""
        diff = "-" if self.verdict == SKIP else _number(self.difference)
        device = self.device.ljust(device_width)
        path = f"{self.path.ljust(path_width)}  " if path_width else ""
        text = f"{device}  {self.case.ljust(width)}  {diff:>9}  {path}{self.verdict}"
        return f"{text}  {self.detail}" if self.detail and self.verdict != OK else text


def path_width(has_paths: bool) -> int:
    """The width of the path column: room for the longest path where any result has one."""
    return max(len(FUSED), len(DECOMPOSED)) if has_paths else 0


def _number(x: float) -> str:
    if math.isinf(x) or math.isnan(x):
        return str(x)
    return "0" if x == 0 else f"{x:.1e}"


@dataclass
class CheckReport:
    """Every case result of a ``tw.check`` run, and the devices it could not check.

    ``bool(report)`` is True when nothing failed; ``str(report)`` is the printed report:
    one line per case, then ``OK: largest difference … on …`` or the failures.
    """

    results: list[CaseResult] = field(default_factory=list)
    #: device or backend -> why it could not be checked at all (a broken plugin fails)
    unchecked: dict[str, str] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.broken and all(r.ok for r in self.results) and bool(self.results)

    def __bool__(self) -> bool:
        return self.ok

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if not r.ok]

    @property
    def largest(self) -> CaseResult | None:
        """The passing result with the largest difference (None when none passed)."""
        passed = [r for r in self.results if r.verdict == OK]
        return max(passed, key=lambda r: r.difference) if passed else None

    def lines(self) -> list[str]:
        width = max((len(r.case) for r in self.results), default=0)
        device_width = max((len(r.device) for r in self.results), default=0)
        paths = path_width(any(r.path for r in self.results))
        return [r.line(width, device_width, paths) for r in self.results]

    def summary(self) -> str:
        notes = [f"not checked: {name} ({why})" for name, why in self.unchecked.items()]
        if self.ok:
            top = self.largest
            devices = sorted({r.device for r in self.results})
            if top is None:  # every case that ran was skipped
                return "\n".join(
                    notes + [f"OK: nothing failed; all {len(self.results)} cases were skipped"]
                )
            checked = sum(r.verdict == OK for r in self.results)
            return "\n".join(
                notes
                + [
                    f"OK: largest difference {_number(top.difference)} on {top.device} "
                    f"({top.case}); {checked} cases passed on {', '.join(devices)}"
                ]
            )
        lines = [f"BROKEN: {name}: {why}" for name, why in self.broken.items()]
        lines += [
            f"FAILED: {r.device} {r.case}{f' ({r.path})' if r.path else ''}: {r.detail}"
            for r in self.failures
        ]
        if not self.results and not self.broken:
            lines.append("FAILED: no case ran (no usable device, or --only matched nothing)")
        tail = f"{len(self.failures)} of {len(self.results)} cases failed"
        if self.broken:
            tail += f"; {len(self.broken)} backend(s) could not be checked"
        return "\n".join(notes + lines + [tail])

    def __str__(self) -> str:
        return "\n".join(self.lines() + [self.summary()])
