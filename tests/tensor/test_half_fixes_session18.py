"""Half-precision differences from torch 2.13 fixed in session 18, each compared bit for bit
with torch on the same values: the other operand's gradient of ``add``/``sub`` with alpha
(alpha was rounded to float16 first), a float16 tensor beside a 0-d float64 tensor (the
double was rounded to float16 once, torch rounds through float32), float16 ``arange`` and
``linspace`` (torch's loop and conversions), and ``renorm`` of a half input (torch's norms
and factors in float32)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _tw(t: torch.Tensor, requires_grad: bool = False) -> Any:
    """The torch tensor ``t`` as a tensorweaver tensor of its dtype (through float64)."""
    out = tw.tensor(t.detach().double().numpy()).to(getattr(tw, str(t.dtype).split(".")[1]))
    return out.requires_grad_() if requires_grad else out


def _differ(ours: Any, theirs: torch.Tensor) -> int:
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    got, want = np.asarray(ours.detach().double()), theirs.detach().double().numpy()
    assert got.shape == want.shape
    return int((~((got == want) | (np.isnan(got) & np.isnan(want)))).sum())


# -- add/sub(alpha=): the other operand's gradient ----------------------------------------------

_SHAPES = [((4, 40), (40,), torch.float16), ((40,), (), torch.float16), ((1, 40), (5, 1), None)]


@pytest.mark.parametrize("fn", ["add", "sub"])
@pytest.mark.parametrize("shapes", _SHAPES)
def test_half_alpha_gradient_of_broadcast_operand_as_torch(
    backend: str, fn: str, shapes: tuple
) -> None:
    """Was g * alpha with alpha rounded to float16 (torch: the float alpha, rounded once),
    summed over the broadcast dimensions after the product, as torch's rule."""
    rng = np.random.default_rng(7)
    a_shape, b_shape, b_dtype = shapes
    xs = torch.tensor(rng.standard_normal(a_shape)).half().requires_grad_()
    ys = torch.tensor(rng.standard_normal(b_shape)).to(b_dtype or torch.float16)
    ys.requires_grad_()
    out = getattr(torch, fn)(xs, ys, alpha=-0.1)
    g = torch.tensor(rng.standard_normal(out.shape)).half()
    out.backward(g)
    x, y = _tw(xs, True), _tw(ys, True)
    ours = getattr(tw, fn)(x, y, alpha=-0.1)
    ours.backward(_tw(g))
    assert ours.grad_fn.name() == out.grad_fn.name()
    assert _differ(x.grad, xs.grad) == 0
    assert _differ(y.grad, ys.grad) == 0


# -- float16 beside a 0-d float64 tensor --------------------------------------------------------


def _near_float16_midpoints(count: int) -> list[float]:
    """Doubles just off the midpoints of float16 neighbours, where rounding once (to float16)
    and twice (through float32) disagree."""
    rng = np.random.default_rng(3)
    out = []
    for value in rng.standard_normal(count) * 4:
        low = np.float16(value)
        mid = (float(low) + float(np.nextafter(low, np.float16(np.inf)))) / 2
        out.append(mid + abs(mid) * 2.0**-30)
    return out


_WITH_SCALAR: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add": lambda m, h, s: h + s,
    "rsub": lambda m, h, s: s - h,
    "where": lambda m, h, s: m.where(h > 0, h, s),
    "maximum": lambda m, h, s: m.maximum(h, s),
    "minimum": lambda m, h, s: m.minimum(h, s),
    "pow": lambda m, h, s: h.abs() ** s,
    "atan2": lambda m, h, s: m.atan2(h, s),
}


@pytest.mark.parametrize("op", sorted(_WITH_SCALAR))
def test_float16_with_0d_float64_tensor_as_torch(backend: str, op: str) -> None:
    """Was 1/6 to 1/4 of the elements off by one half ulp on NumPy (the double rounded once)."""
    hs = torch.tensor(np.random.default_rng(1).standard_normal(256) * 4).half()
    h = _tw(hs)
    wrong = 0
    for value in _near_float16_midpoints(12):
        want = _WITH_SCALAR[op](torch, hs, torch.tensor(value, dtype=torch.float64))
        wrong += _differ(_WITH_SCALAR[op](tw, h, tw.tensor(value, dtype=tw.float64)), want)
    assert wrong == 0


# -- float16 arange and linspace --------------------------------------------------------------


def test_float16_arange_as_torch(backend: str) -> None:
    """Was 88 of 414, 200 of 924, 230 of 910 (...) elements off on NumPy (rounded once from
    float64; torch's loop rounds each vector's first element to float16)."""
    rng = np.random.default_rng(5)
    wrong = 0
    for _ in range(40):
        start = float(rng.uniform(-100, 100))
        step = float(rng.uniform(0.001, 3) * rng.choice([-1, 1]))
        end = start + step * int(rng.integers(1, 3000))
        want = torch.arange(start, end, step, dtype=torch.float16)
        wrong += _differ(tw.arange(start, end, step, dtype=tw.float16), want)
    assert wrong == 0


@pytest.mark.parametrize("ends", [(-7.77, 1000.3, 4001), (0.0, 1.0, 50000), (1.0, -1.0, 99)])
def test_float16_linspace_as_torch(backend: str, ends: tuple) -> None:
    """Was 498 of 4001 and 13,831 of 50,000 off: the ends converted to float16 once (torch:
    through float32) and the steps down from the end counted in float16."""
    want = torch.linspace(*ends, dtype=torch.float16)
    assert _differ(tw.linspace(*ends, dtype=tw.float16), want) == 0


# -- renorm in half ---------------------------------------------------------------------------


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 1.5), (1, 1, 2.0), (3, 0, 0.7)])
def test_half_renorm_values_as_torch(backend: str, p: float, dim: int, maxnorm: float) -> None:
    """Was 37-101 of 192 values off (norms and factors in float16)."""
    xs = torch.tensor(np.random.default_rng(0).standard_normal((8, 24))).half()
    assert _differ(tw.renorm(_tw(xs), p, dim, maxnorm), torch.renorm(xs, p, dim, maxnorm)) == 0


# -- softmax and log_softmax in half ------------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize(
    "shape, dim", [((12, 20), 1), ((12, 20), 0), ((4, 6, 10), 1), ((3, 50), -1)]
)
def test_half_softmax_values_and_gradient_as_torch(
    backend: str, name: str, shape: tuple, dim: int
) -> None:
    """Was on NumPy: log_softmax over the last dim 4-24 of 150-240 values off (torch keeps
    the sum and its log in float16), softmax over another dim ~1/4 of the values (torch
    rounds the exponentials to float16 before dividing), and their gradients with them."""
    rng = np.random.default_rng(4)
    xs = torch.tensor(rng.standard_normal(shape) * 3).half().requires_grad_()
    out = getattr(torch.nn.functional, name)(xs, dim)
    g = torch.tensor(rng.standard_normal(shape)).half()
    out.backward(g)
    x = _tw(xs, True)
    ours = getattr(tw.nn.functional, name)(x, dim)
    ours.backward(_tw(g))
    assert (_differ(ours, out), _differ(x.grad, xs.grad)) == (0, 0)
