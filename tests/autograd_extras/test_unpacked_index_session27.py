"""saved_tensors_hooks on the index of a 0-d gather or scatter: backward reads what unpack
returns for it, checked against the one element of the 0-d tensor it indexes, compared with
torch 2.13 (:mod:`snippet_outcomes`)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same_each
from tw_backends import FAST


@pytest.fixture(params=FAST)
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


def _zero_dim(op: str, change: Callable[[Any, Any], Any]) -> Callable:
    def program(m: Any) -> Any:
        x = m.tensor(3.0, dtype=m.float64, requires_grad=True)

        def unpack(t: Any) -> Any:
            return t if t.dtype.is_floating_point else change(m, t)

        with m.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            if op == "gather":
                y = (x * 1).gather(0, m.tensor(0))
            else:
                y = (x * 1).scatter(0, m.tensor(0), m.tensor(2.0, dtype=m.float64))
        (y * 2).backward()
        return x.grad

    return program


_CHANGES: dict = {
    "same": lambda m, t: t,
    "out_of_bounds": lambda m, t: t + 1,
    "vector": lambda m, t: t.reshape(1),  # (PyTorch's kernels take a 0-d index as 1-d)
}


def test_unpacked_index_of_a_zero_dim_tensor(spec: str) -> None:
    same_each(
        {
            f"{op}_{how}": _zero_dim(op, change)
            for op in ("gather", "scatter")
            for how, change in _CHANGES.items()
            if (op, how) != ("scatter", "out_of_bounds")
        },
        spec,
    )


@pytest.mark.xfail(
    strict=True,
    reason="SILENT (a gradient where torch raises): an unpack hook that returns an "
    "out-of-range index for a 0-d scatter's index gives x a zero gradient; torch's backward "
    "refuses it (RuntimeError). Cause: core/tensorweaver/ops/index.py scatter's 0-d path "
    "(vectors_of_0d: scatter of vectors, then reshape) notes the index on the outer reshape "
    "node (saves_integer_input), so the inner scatter node, whose rule reads its kept index, "
    "has no packed operand to read (autograd/graph.py unpack_operands). Fix: note the vector "
    "index on the inner scatter node (saves_integer_input on its output) and nothing on the "
    "reshape.",
)
def test_unpacked_out_of_range_index_of_a_zero_dim_scatter(spec: str) -> None:
    same_each({"scatter": _zero_dim("scatter", _CHANGES["out_of_bounds"])}, spec)
