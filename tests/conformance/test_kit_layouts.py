"""The kit's layouts (tensorweaver/check/layouts.py): each is the view it promises, made with
the backend's own primitives; every primitive has a case in each layout it takes; and a
backend that computes wrongly on one layout fails exactly the cases in that layout, named.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import torch
from tensorweaver import registry
from tensorweaver.check.cases import all_cases, missing_layouts
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE, arrange
from tensorweaver.check.report import FAIL, OK
from tensorweaver.check.runner import evaluate, select
from tensorweaver.contract import dtypes as d
from tensorweaver_torch.backend import TorchBackend

HOST = np.arange(12.0).reshape(3, 4)
#: layout -> (the values it shows for HOST, its shape's strides in elements or None)
PROMISED: dict[str, tuple[np.ndarray, tuple[int, ...] | None]] = {
    "transposed": (HOST, (1, 3)),
    "stepped": (HOST, (18, 2)),  # every other element of a (7, 9) array, from (1, 1)
    "broadcast": (np.tile(HOST[:1], (3, 1)), (0, 1)),
    "empty": (HOST[:0], None),
    "0-d": (HOST[-1, -1], ()),
}


def _strides(native: Any) -> tuple[int, ...]:
    if isinstance(native, np.ndarray):
        return tuple(s // native.itemsize for s in native.strides)
    return tuple(native.stride())


@pytest.mark.parametrize("layout", EDGE)
@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_each_layout_is_the_view_it_promises(spec, layout):
    ctx = Context(registry.backend_object(spec))
    shown, native = arrange(ctx, HOST, d.float64, layout)
    want, strides = PROMISED[layout]
    np.testing.assert_array_equal(shown, want)
    np.testing.assert_array_equal(ctx.fetch(native, d.float64, layout), want)
    if strides is not None:
        assert _strides(native) == strides


def test_every_primitive_has_a_case_in_every_layout_it_takes():
    ids = [c.id for c in all_cases()]
    assert missing_layouts(ids) == []
    without = [i for i in ids if i != "primitive/reshape/broadcast"]
    assert missing_layouts(without) == ["primitive/reshape/broadcast"]
    assert "primitive/sum/0-d" not in ids  # a 0-d array has no axis to reduce
    for name in ("softmax", "conv2d", "rnn"):
        layouts = {f"composite/{name}/{lay}" for lay in EDGE if lay != "0-d"}
        assert layouts <= set(ids)
    assert {f"autograd/matmul/{lay}" for lay in EDGE if lay != "0-d"} <= set(ids)


def _zero_on_broadcast(method: Callable) -> Callable:
    """``method``, returning zeros when an argument has a stride-0 axis (as cuPyNumeric's
    matmul did)."""

    def blind(self: Any, *args: Any) -> Any:
        out = method(self, *args)
        broadcast = any(
            isinstance(a, torch.Tensor)
            and any(s == 0 and n > 1 for s, n in zip(a.stride(), a.shape))
            for a in args
        )
        if not broadcast:
            return out
        return out * 0 if isinstance(out, torch.Tensor) else tuple(g * 0 for g in out)

    return blind


def test_a_backend_wrong_on_broadcast_views_fails_those_cases(monkeypatch):
    monkeypatch.setattr(TorchBackend, "matmul", _zero_on_broadcast(TorchBackend.matmul))
    monkeypatch.setattr(
        TorchBackend,
        "fused_softmax_backward",
        _zero_on_broadcast(TorchBackend.fused_softmax_backward),
    )
    ctx = Context(registry.backend_object("torch:cpu"))
    results = {
        c.id: evaluate(c, ctx)
        for c in select(["primitive/matmul", "autograd/matmul", "composite/softmax"])
    }
    failed = sorted(i for i, r in results.items() if r.verdict == FAIL)
    assert failed == [
        "autograd/matmul/broadcast",
        "composite/softmax/broadcast",
        "primitive/matmul/broadcast",
    ]
    assert all(r.verdict == OK for i, r in results.items() if i not in failed)
    assert "(broadcast @ standard)" in results["primitive/matmul/broadcast"].detail
    assert results["composite/softmax/broadcast"].detail.startswith(
        "fused_softmax_backward: grad of x"
    )


def _fail_on_empty(method: Callable) -> Callable:
    """``method``, raising when an argument has no elements (as NumPy's max_pool2d did)."""

    def strict(self: Any, *args: Any) -> Any:
        if any(isinstance(a, torch.Tensor) and a.numel() == 0 for a in args):
            raise ValueError("cannot reshape an array of size 0")
        return method(self, *args)

    return strict


def test_a_backend_wrong_on_empty_batches_fails_those_cases(monkeypatch):
    monkeypatch.setattr(TorchBackend, "matmul", _fail_on_empty(TorchBackend.matmul))
    monkeypatch.setattr(
        TorchBackend, "fused_max_pool2d", _fail_on_empty(TorchBackend.fused_max_pool2d)
    )
    ctx = Context(registry.backend_object("torch:cpu"))
    results = {c.id: evaluate(c, ctx) for c in select(["autograd/matmul", "composite/max_pool2d"])}
    failed = sorted(i for i, r in results.items() if r.verdict == FAIL)
    assert failed == ["autograd/matmul/empty", "composite/max_pool2d/empty"]
    assert all(r.verdict == OK for i, r in results.items() if i not in failed)
    assert "in strict: cannot reshape" in results["composite/max_pool2d/empty"].detail
