"""Moving tensors between NumPy and the device through the core: every dtype exactly, 0-d,
empty and non-contiguous arrays, to the NumPy backend and back, and copies that share no
memory with the arrays they came from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import ALL, standard
from tensorweaver.check.compare import measure
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

INF = float("inf")


def _place(what: str, t: tw.Tensor, device: str) -> Measure:
    ok = t.device.name == device
    return Measure(what, 0.0 if ok else INF, 0.0, f"the tensor is on {t.device.name}, not {device}")


def _round_trip(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        a = standard(dtype)
        t = tw.tensor(a, dtype=dtype, device=ctx.device)
        yield _place("tw.tensor(..., device=)", t, ctx.device)
        yield measure("tensor.numpy()", ctx.fetch(t.native, dtype, "from_host"), a, dtype, 0.0)

    return run


def _between_backends(ctx: Context) -> Iterator[Measure]:
    a = np.arange(12.0).reshape(3, 4) - 5.5
    on_numpy = tw.from_numpy(a)
    here = on_numpy.to(ctx.device)
    yield _place("tensor.to(device)", here, ctx.device)
    back = (here * 2).to("numpy")
    yield _place("tensor.to('numpy')", back, "numpy:cpu:0")
    yield measure("to the device and back", back.numpy(), a * 2, d.float64, 0.0)


def _shapes(ctx: Context) -> Iterator[Measure]:
    scalar = tw.tensor(2.5, device=ctx.device)
    ok = scalar.item() == 2.5 and scalar.tolist() == 2.5 and scalar.numpy().shape == ()
    yield Measure("0-d tensor to Python", 0.0 if ok else INF, 0.0, f"item() {scalar.item()!r}")
    empty = tw.zeros(0, 3, device=ctx.device)
    yield measure("empty tensor", empty.numpy(), np.zeros((0, 3)), d.float32, 0.0)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = a.T[::2]  # not C-contiguous
    yield measure(
        "from a strided array",
        tw.tensor(strided, device=ctx.device).numpy(),
        strided,
        d.float32,
        0.0,
    )
    t = tw.tensor(a, device=ctx.device)
    yield measure("a permuted view to NumPy", t.permute(1, 0)[::2].numpy(), strided, d.float32, 0.0)


def _copies(ctx: Context) -> Iterator[Measure]:
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    t = tw.tensor(a, device=ctx.device)
    a[0, 0] = 99.0
    yield measure(
        "tw.tensor copies the array", t.numpy(), np.arange(6.0).reshape(2, 3), d.float32, 0.0
    )
    out = t.numpy()
    out[0, 1] = -99.0
    # As PyTorch on a CPU: numpy() shares memory where the backend can (write_into, and a
    # host view of the tensor's memory: none on a GPU), else it is a copy.
    expected = np.arange(6.0).reshape(2, 3)
    if getattr(ctx.backend, "write_into", None) is not None:
        if ctx.backend.host_view(t.native) is not None:
            expected[0, 1] = -99.0
    yield measure("tensor.numpy() shares memory or copies", t.numpy(), expected, d.float32, 0.0)


def cases() -> list[Case]:
    out = [Case(f"host/round-trip/{t.name}", _round_trip(t)) for t in ALL]
    return out + [
        Case("host/between-backends", _between_backends),
        Case("host/0-d-empty-strided", _shapes),
        Case("host/copies", _copies),
    ]
