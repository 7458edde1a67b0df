"""What PyTorch refuses on complex tensors, tensorweaver refuses with an error of the same
built-in class (``NotImplementedError`` is a ``RuntimeError``), whose message names the op."""

from __future__ import annotations

import pytest
from complex_reference import cplx
from tensor_reference import raises_like_torch

Z = cplx((2, 3), 1)
REFUSED = {
    "lt": lambda m, x: x < x,
    "le_scalar": lambda m, x: x <= 1,
    "gt_scalar_left": lambda m, x: 1j > x,
    "ge": lambda m, x: m.ge(x, x),
    "max": lambda m, x: x.max(),
    "max_dim": lambda m, x: x.max(1),
    "min": lambda m, x: m.min(x),
    "amax": lambda m, x: x.amax(0),
    "amin": lambda m, x: x.amin(),
    "argmax": lambda m, x: x.argmax(),
    "argmin": lambda m, x: x.argmin(1),
    "maximum": lambda m, x: m.maximum(x, x),
    "minimum": lambda m, x: m.minimum(x, x),
    "sort": lambda m, x: x.sort(),
    "argsort": lambda m, x: x.argsort(1),
    "msort": lambda m, x: m.msort(x),
    "topk": lambda m, x: x.topk(1),
    "clamp": lambda m, x: x.clamp(0, 1),
    "clamp_min": lambda m, x: x.clamp(min=0),
    "clip": lambda m, x: m.clip(x, max=1),
    "floor": lambda m, x: x.floor(),
    "ceil": lambda m, x: m.ceil(x),
    "trunc": lambda m, x: x.trunc(),
    "round": lambda m, x: x.round(),
    "sign": lambda m, x: x.sign(),
    "erf": lambda m, x: x.erf(),
    "relu": lambda m, x: x.relu(),
    "functional_relu": lambda m, x: m.nn.functional.relu(x),
    "softmax": lambda m, x: m.softmax(x, 0),
    "floor_divide": lambda m, x: x // 2,
    "remainder": lambda m, x: x % 2,
    "fmod": lambda m, x: m.fmod(x, 2),
    "and": lambda m, x: x & x,
    "or": lambda m, x: x | 1,
    "xor": lambda m, x: m.bitwise_xor(x, x),
    "invert": lambda m, x: ~x,
    "atan2": lambda m, x: m.atan2(x, x),
    "hypot": lambda m, x: m.hypot(x, x),
    "copysign": lambda m, x: m.copysign(x, x),
    "signbit": lambda m, x: m.signbit(x),
    "heaviside": lambda m, x: m.heaviside(x, x),
    "nansum": lambda m, x: x.nansum(),
    "median": lambda m, x: x.median(),
    "cummax": lambda m, x: x.cummax(0),
    "abs_": lambda m, x: x.clone().abs_(),
    "randint": lambda m, x: m.randint(0, 3, (2,), dtype=m.complex64),
    "requires_grad_int": lambda m, x: m.ones(2, dtype=m.int64, requires_grad=True),
    "requires_grad_int_": lambda m, x: m.ones(2, dtype=m.int64).requires_grad_(),
    "view_as_complex_int": lambda m, x: m.view_as_complex(m.ones(3, 2, dtype=m.int64)),
    "imag_of_real": lambda m, x: x.real.imag,
    "complex_int": lambda m, x: m.complex(x.real.long(), x.imag.long()),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_as_pytorch_refuses(backend: str, name: str) -> None:
    raises_like_torch(REFUSED[name], Z)


@pytest.mark.cunumeric
def test_refused_on_cunumeric_sample(backend: str) -> None:
    for name in ("lt", "max", "clamp", "floor", "and"):
        raises_like_torch(REFUSED[name], Z)
