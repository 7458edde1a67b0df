"""One device under check: its backend object, and how cases reach it.

Cases call primitives through :meth:`Context.call`, which turns what the IR forbids (a
warning, an exception) into a :class:`~tensorweaver.check.case.Failure` that names the
primitive, and read results back through :meth:`Context.fetch`, which insists on the exact
dtype. Arrays put on the device by a case are remembered, so that the case can also check
that no primitive wrote into its inputs, and so are the primitive calls behind each result,
so that a wrong element of an elementwise result is shown with its operands.

A backend object may lack primitives (a plugin built one primitive at a time): the cases
that call a missing one fail naming it, the others run.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from tensorweaver.check.case import Failure, Measure, Skip, raised
from tensorweaver.check.compare import host_dtype, measure, to_dtype
from tensorweaver.contract import dtypes as d
from tensorweaver.contract import ir
from tensorweaver.contract.dtypes import DType

#: Primitives whose result element at an index depends on the operands' elements there.
ELEMENTWISE = frozenset(ir.UNARY) | frozenset(ir.BINARY) | {"where"}


class Context:
    """The backend object of one device, with what the cases need to talk to it."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.device: str = backend.device.name
        self.dtypes = frozenset(backend.dtypes)
        #: The float dtype layers and gradients run in: float64 where the device has it.
        self.float: DType = d.float64 if d.float64 in self.dtypes else d.float32
        #: The required primitives the backend object lacks.
        self.missing = frozenset(ir.missing_primitives(backend))
        self._inputs: list[tuple[Any, np.ndarray, DType]] = []
        #: id(result) -> (result, primitive, arguments) of this case's elementwise calls;
        #: the result is kept so that its id stays its own.
        self._calls: dict[int, tuple[Any, str, tuple]] = {}

    def start_case(self) -> None:
        self._inputs.clear()
        self._calls.clear()

    @contextmanager
    def scope(self, dtype: DType | None = None) -> Iterator[None]:
        """New tensors go to this device, and float ones default to ``dtype`` (or ctx.float).

        The default dtype is process-wide: a check is not meant to share its process with
        other work.
        """
        from tensorweaver.promotion import get_default_dtype, set_default_dtype
        from tensorweaver.selection import device

        before = get_default_dtype()
        set_default_dtype(dtype or self.float)
        try:
            with device(self.device):
                yield
        finally:
            set_default_dtype(before)

    def require(self, *dtypes: DType) -> None:
        """Skip the case unless the device supports every one of ``dtypes``."""
        missing = [t.name for t in dtypes if t not in self.dtypes]
        if missing:
            raise Skip(f"{self.device} has no {', '.join(missing)}")

    def put(self, values: Any, dtype: DType) -> Any:
        """``values`` on the device as ``dtype`` (the case skips if the device lacks it)."""
        self.require(dtype)
        host = to_dtype(values, dtype)
        native = self.call("from_host", host, dtype)
        self._inputs.append((native, host.copy(), dtype))
        return native

    def call(self, primitive: str, *args: Any) -> Any:
        """``backend.<primitive>(*args)``; a warning or an exception fails the case."""
        if primitive in self.missing:
            raise Failure(primitive, missing_detail(primitive))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = getattr(self.backend, primitive)(*args)
            except Exception as exc:
                raise Failure(primitive, raised(exc)) from exc
        for w in caught:
            if issubclass(w.category, RuntimeWarning):
                raise Failure(
                    primitive,
                    f"emitted RuntimeWarning '{w.message}'; the IR wants IEEE results "
                    "(NaN, inf) without warnings",
                )
        if primitive in ELEMENTWISE:
            self._calls[id(result)] = (result, primitive, args)
        return result

    def fetch(self, native: Any, dtype: DType, what: str) -> np.ndarray:
        """``native`` on the host; a result of another dtype than ``dtype`` fails the case."""
        got = self.call("to_host", native)
        if not isinstance(got, np.ndarray):
            raise Failure("to_host", f"returned {type(got).__name__}, not a numpy.ndarray")
        if got.dtype != host_dtype(dtype):
            raise Failure(
                what,
                f"returned {got.dtype} for {dtype.name} (a result must keep the dtype the IR "
                "gives it)",
            )
        return got

    def check(
        self, what: str, native: Any, want: Any, dtype: DType, tolerance: float | None = None
    ) -> Measure:
        """Fetch ``native`` as ``dtype`` and measure it against ``want``; a wrong element of
        an elementwise result comes with its operands."""
        found = measure(what, self.fetch(native, dtype, what), want, dtype, tolerance)
        if found.ok or found.where is None:
            return found
        operands = self._operands(native, found.where)
        if not operands:
            return found
        return replace(found, detail=f"{found.detail} (operands: {', '.join(operands)})")

    def _operands(self, native: Any, where: tuple[int, ...]) -> list[str]:
        """The array arguments of the call that returned ``native``, at ``where``."""
        call = self._calls.get(id(native))
        if call is None or call[0] is not native:
            return []
        shape = tuple(native.shape)
        found = []
        for arg in call[2]:
            try:
                host = np.broadcast_to(self.backend.to_host(arg), shape)
            except Exception:  # a Python scalar, or a backend that fails here: leave it out
                return []
            found.append(str(host[where]))
        return found

    def untouched(self) -> Measure:
        """Whether every array this case put on the device still holds its values."""
        for native, host, dtype in self._inputs:
            now = self.fetch(native, dtype, "an input")
            same = now.shape == host.shape and bool(
                np.all((now == host) | (np.isnan(now) & np.isnan(host)))
                if host.dtype.kind == "f"
                else np.all(now == host)
            )
            if not same:
                return Measure(
                    "inputs", float("inf"), 0.0, "a primitive wrote into its input array"
                )
        return Measure("inputs", 0.0, 0.0, "unchanged")


def missing_detail(primitive: str) -> str:
    """What a case says when it needs ``primitive`` and the backend object lacks it."""
    return (
        f"the backend object has no {primitive} (a required primitive: "
        f"see primitive/{primitive}/defined)"
    )
