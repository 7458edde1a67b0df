"""What a check case is, what running one measures, and the two ways it can stop early."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from tensorweaver.check.context import Context


@dataclass(frozen=True)
class Measure:
    """One comparison inside a case.

    ``what`` names the culprit when it fails: a primitive (``exp``), a fused kernel
    (``fused_softmax_backward``), a layer's output or one of its gradients. ``difference``
    is the largest difference from the reference (``inf`` for a wrong dtype, shape, NaN or
    inf), ``detail`` says where it is; ``where`` is that element's index, when the
    difference is one element's.
    """

    what: str
    difference: float
    tolerance: float
    detail: str = ""
    where: tuple[int, ...] | None = None

    @property
    def ok(self) -> bool:
        return self.difference <= self.tolerance  # NaN is never ok

    def message(self) -> str:
        if self.difference == float("inf"):
            return f"{self.what}: {self.detail}"
        return (
            f"{self.what}: largest difference {self.difference:.3g} > tolerance "
            f"{self.tolerance:.1g} ({self.detail})"
        )


class Skip(Exception):
    """The case does not apply to this device (a dtype it lacks, a layer not installed)."""


class Failure(Exception):
    """The backend broke the contract in a way no number measures.

    A wrong result dtype or shape, a warning, an exception: ``what`` names the primitive or
    kernel at fault and the message says what it did.
    """

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail


def raised(exc: BaseException) -> str:
    """``raised TypeError at pkg/file.py:12 in fn: message``, naming the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        f = frames[-1]
        where = f" at {'/'.join(Path(f.filename).parts[-2:])}:{f.lineno} in {f.name}"
    return f"raised {type(exc).__name__}{where}: {exc}"


@dataclass(frozen=True)
class Case:
    """A named check: ``run`` compares one thing on a device with NumPy float64.

    ``id`` reads ``group/subject/variant`` (``primitive/add/float32``, ``layer/lstm``); it
    is the line label of ``tw check``, the test id of the conformance kit and the key a
    plugin uses to declare a known gap.
    """

    id: str
    run: Callable[[Context], Iterable[Measure]]

    @property
    def group(self) -> str:
        return self.id.split("/", 1)[0]
