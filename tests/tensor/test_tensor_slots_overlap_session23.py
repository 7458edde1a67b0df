"""Silent corners of the twenty-third session, each compared with torch 2.13 run on the same
snippet: ``requires_grad`` assigned (a bool, on a leaf, with ``requires_grad_()``'s checks),
``shape`` and ``dtype`` read-only, and every in-place method refusing an operand that partly
overlaps the written memory (through views and ``detach()`` aliases alike)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _outcome(fn: Callable[[Any], Any], m: Any) -> Any:
    """``fn(m)`` comparable across torch and tw: an exception as its class, else the value
    (tensors as their values, after the write)."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__
    if isinstance(r, m.Tensor):
        return r.requires_grad, r.detach().double().tolist()
    return r


def _same(fn: Callable[[Any], Any], spec: str = "numpy") -> None:
    want = _outcome(fn, torch)
    with entered(spec):
        assert _outcome(fn, tw) == want


def _assigned(t: Any, name: str, value: Any) -> Any:
    setattr(t, name, value)
    return t


# -- requires_grad, shape and dtype (tensor.py: properties over the slots) ---------------------

_ASSIGNMENTS: dict[str, Callable[[Any], Any]] = {
    "leaf_true": lambda m: _assigned(m.ones(2), "requires_grad", True),
    "leaf_false": lambda m: _assigned(m.ones(2, requires_grad=True), "requires_grad", False),
    "int_true": lambda m: _assigned(m.ones(2, dtype=m.int64), "requires_grad", True),
    "int_false": lambda m: _assigned(m.ones(2, dtype=m.int64), "requires_grad", False),
    "not_bool": lambda m: _assigned(m.ones(2), "requires_grad", 1),
    "none": lambda m: _assigned(m.ones(2), "requires_grad", None),
    "non_leaf_false": lambda m: _assigned(
        m.ones(2, requires_grad=True) * 2, "requires_grad", False
    ),
    "non_leaf_true": lambda m: _assigned(m.ones(2, requires_grad=True) * 2, "requires_grad", True),
    "no_grad_result": lambda m: _no_grad_result(m),
    "shape": lambda m: _assigned(m.ones(2), "shape", (1, 2)),
    "dtype": lambda m: _assigned(m.ones(2), "dtype", m.float64),
    "shape_kept": lambda m: _kept_after_refusal(m, "shape", (1, 2)),
    "dtype_kept": lambda m: _kept_after_refusal(m, "dtype", m.float64),
}


def _no_grad_result(m: Any) -> Any:
    """A result made under no_grad is a leaf: it may be made to require grad, and then
    backward reaches it."""
    x = m.ones(2, requires_grad=True)
    with m.no_grad():
        y = x * 2
    y.requires_grad = True
    (y * y).sum().backward()
    return y.grad


def _kept_after_refusal(m: Any, name: str, value: Any) -> Any:
    x = m.ones(2)
    try:
        setattr(x, name, value)
    except AttributeError:
        pass
    return tuple(x.shape), str(x.dtype).split(".")[-1], (x + 1).tolist()


@pytest.mark.parametrize("case", sorted(_ASSIGNMENTS))
def test_assigning_attributes_as_torch(case: str) -> None:
    _same(_ASSIGNMENTS[case])


def test_requires_grad_set_on_a_leaf_records_the_graph() -> None:
    x = np.random.default_rng(0).normal(size=(3,))

    def program(m: Any) -> Any:
        t = m.tensor(x)
        t.requires_grad = True
        (t.exp() * t).sum().backward()
        return t.grad.tolist()

    np.testing.assert_allclose(program(tw), program(torch), rtol=1e-12)


# -- in-place methods with a partly overlapping operand (methods.py _inplace) -------------------

#: Each writes into a 6-element float64 ``x`` (or a view of it) from operands over its memory.
_OVERLAPS: dict[str, Callable[[Any, Any], Any]] = {
    "mul_": lambda m, x: x[1:].mul_(x[:-1]),
    "div_": lambda m, x: x[1:].div_(x[:-1]),
    "imul": lambda m, x: x[1:].__imul__(x[:-1]),
    "pow_": lambda m, x: x[:3].pow_(x[1:4]),
    "atan2_": lambda m, x: x[1:].atan2_(x[:-1]),
    "hypot_": lambda m, x: x[1:].hypot_(x[:-1]),
    "copysign_": lambda m, x: x[:3].copysign_(x[1:4]),
    "clamp_": lambda m, x: x[:3].clamp_(x[1:4]),
    "lerp_end": lambda m, x: x[1:].lerp_(x[:-1], 0.5),
    "lerp_weight": lambda m, x: x[1:].lerp_(x[1:] + 1, x[:-1]),
    "addcmul_": lambda m, x: x[:3].addcmul_(x[1:4], x[1:4]),
    "add_alpha": lambda m, x: x[1:].add_(x[:-1], alpha=2),
    "index_copy_": lambda m, x: x[:3].index_copy_(0, m.tensor([0, 1]), x[1:3]),
    "index_add_": lambda m, x: x[:3].index_add_(0, m.tensor([0, 1]), x[1:3]),
    "scatter_": lambda m, x: x[:3].scatter_(0, m.tensor([0, 1]), x[1:3]),
    "row_of_matrix": lambda m, x: x.view(2, 3).mul_(x[:3]),
    "detached_row": lambda m, x: x.view(2, 3).mul_(x[:3].detach()),
    "zero_dim_inside": lambda m, x: x.mul_(x[0]),
    "alias_written": lambda m, x: x.detach()[1:].mul_(x[:-1]),
    "detached_source": lambda m, x: x[1:].add_(x[:-1].detach()),
    # torch lets these pass: the same elements, memory it cannot tell (strides), a 0-d
    # element outside the written part, or an operand its kernel reads as a number or first
    "same_elements": lambda m, x: x[1:].mul_(x[1:].detach()),
    "strided": lambda m, x: x[::2].mul_(x[1::2]),
    "zero_dim_outside": lambda m, x: x[1:].mul_(x[0]),
    "masked_fill_value": lambda m, x: x.masked_fill_(x > 2, x[0]),
    "index_fill_value": lambda m, x: x.index_fill_(0, m.tensor([1]), x[0]),
    "masked_scatter_": lambda m, x: x[:3].masked_scatter_(m.tensor([True, False, True]), x[1:4]),
    "addmm_": lambda m, x: x[:4].view(2, 2).addmm_(x[2:].view(2, 2), x[2:].view(2, 2)),
}


@pytest.mark.parametrize("case", sorted(_OVERLAPS))
def test_in_place_method_with_an_overlapping_operand(case: str, spec: str) -> None:
    def program(m: Any) -> Any:
        x = m.arange(6.0, dtype=m.float64)
        _OVERLAPS[case](m, x)
        return x

    _same(program, spec)


def test_masked_fill_checks_its_mask() -> None:
    def program(m: Any) -> Any:
        x = m.tensor([True, False, True, False, True, True])
        x[1:].masked_fill_(x[:-1], True)
        return x

    _same(program)


def test_alias_of_a_row_into_its_whole_tensor() -> None:
    def program(m: Any) -> Any:
        x = m.ones(2, 3, dtype=m.float64)
        x.mul_(x[0].detach())
        return x

    _same(program)


@pytest.mark.parametrize("op", ["float_power_", "nextafter_", "igamma_"])
def test_in_place_methods_defined_elsewhere(op: str) -> None:
    def program(m: Any) -> Any:
        x = m.arange(1.0, 7.0, dtype=m.float64)
        getattr(x[1:], op)(x[:-1])
        return x

    _same(program)
