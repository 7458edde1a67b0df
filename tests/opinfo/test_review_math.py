"""Regression tests for the review of the op-database math fixes (commit 8a7d454), each
against real torch 2.13: values, gradients (None where torch leaves them undefined) and
exception classes."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

BACKENDS = ["numpy", "torch:cpu"]


def _raises_like_torch(theirs, ours) -> None:
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(expected.type):
        ours()


def test_norm_p0_leaves_the_gradient_undefined(backend):
    # Before: x.grad was a zero tensor after norm(x, 0).backward(); torch's stays None (its
    # gradient is undefined), also through abs for complex input and in float16.
    data = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -3.0]])
    for dtype, cast in ((torch.float64, lambda a: a), (torch.complex128, lambda a: a * (1 - 2j))):
        x = torch.tensor(cast(data), dtype=dtype, requires_grad=True)
        ours_in = tw.tensor(cast(data), requires_grad=True)
        theirs, ours = (
            torch.norm(x, 0, dim=1, keepdim=True),
            tw.norm(ours_in, 0, dim=1, keepdim=True),
        )
        assert ours.requires_grad == theirs.requires_grad
        np.testing.assert_array_equal(np.asarray(ours.detach()), theirs.detach().numpy())
        theirs.sum().backward()
        ours.sum().backward()
        assert x.grad is None and ours_in.grad is None
    # beside a defined path, the total is that path's gradient alone
    x = torch.tensor(data, requires_grad=True)
    ours_in = tw.tensor(data, requires_grad=True)
    (expected,) = torch.autograd.grad(torch.linalg.vector_norm(x, 0) + x.sum(), x)
    (actual,) = tw.autograd.grad(tw.linalg.vector_norm(ours_in, 0) + ours_in.sum(), ours_in)
    np.testing.assert_array_equal(np.asarray(actual), expected.numpy())


def test_norm_default_p_is_fro(backend):
    # Before: tw.norm(x, dim=(0, 1, 2)) took p=2 and gave a vector norm; torch's default p is
    # "fro", a matrix norm that takes two dims (RuntimeError), also as a method.
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ours = tw.tensor(x.numpy())
    _raises_like_torch(lambda: torch.norm(x, dim=(0, 1, 2)), lambda: tw.norm(ours, dim=(0, 1, 2)))
    _raises_like_torch(lambda: x.norm(dim=(0, 1, 2)), lambda: ours.norm(dim=(0, 1, 2)))
    for dim in (None, 1, (0, 2), [1, 2]):
        kwargs = {} if dim is None else {"dim": dim}
        np.testing.assert_allclose(
            np.asarray(tw.norm(ours, **kwargs)), torch.norm(x, **kwargs).numpy(), 1e-12
        )


def test_nextafter_number_first_is_a_type_error(backend):
    # Before: tw.nextafter(2.0, t) raised AttributeError ('float' has no 'detach').
    t = torch.tensor([1.0, 3.0])
    _raises_like_torch(
        lambda: torch.nextafter(2.0, t), lambda: tw.nextafter(2.0, tw.tensor([1.0, 3.0]))
    )


def test_logical_ops_take_no_number_second(backend):
    t = torch.tensor([True, False])
    _raises_like_torch(
        lambda: torch.logical_and(t, True), lambda: tw.logical_and(tw.tensor([True, False]), True)
    )


_HALVES = [torch.float16, torch.bfloat16]


def _half_backends(dtype):
    return ["torch:cpu"] if dtype is torch.bfloat16 else BACKENDS


def _tw_half(t: torch.Tensor) -> tw.Tensor:
    """``t`` (float16 or bfloat16) on the current device, same values and dtype."""
    return tw.tensor(t.float().numpy()).to(getattr(tw, str(t.dtype).split(".")[1]))


def _same_bits(ours: tw.Tensor, theirs: torch.Tensor) -> None:
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(np.asarray(ours.float()), theirs.float().numpy())


@pytest.mark.parametrize("dtype", _HALVES, ids=str)
@pytest.mark.parametrize("scalars", [{}, {"beta": 0.6, "alpha": 0.2}, {"beta": 0, "alpha": 3}])
def test_addr_in_half_rounds_each_step_as_torch(dtype, scalars):
    # Before: addr in float16/bfloat16 was computed in float32 and rounded once; torch's CPU
    # kernel rounds the scalars and every step to the dtype (~40% of elements differed).
    g = torch.Generator().manual_seed(0)
    s, a, b = (torch.randn(*shape, generator=g).to(dtype) for shape in ((1, 30), (20,), (30,)))
    expected = torch.addr(s, a, b, **scalars)
    for name in _half_backends(dtype):
        with tw.device(name):
            _same_bits(tw.addr(*(_tw_half(t) for t in (s, a, b)), **scalars), expected)


@pytest.mark.parametrize("dtype", _HALVES, ids=str)
@pytest.mark.parametrize("scalars", [{}, {"beta": 0.5, "alpha": 0.3}, {"beta": 0}])
def test_addbmm_in_half_rounds_after_each_batch_as_torch(dtype, scalars):
    # Before: addbmm in float16/bfloat16 was one float32 product rounded once; torch's CPU
    # kernel runs one addmm_ per batch, rounding the running sum to the dtype each time.
    g = torch.Generator().manual_seed(0)
    shapes = ((1, 10), (6, 5, 5), (6, 5, 10))
    inp, b1, b2 = (torch.randn(*shape, generator=g).to(dtype) for shape in shapes)
    expected = torch.addbmm(inp, b1, b2, **scalars)
    for name in _half_backends(dtype):
        with tw.device(name):
            _same_bits(tw.addbmm(*(_tw_half(t) for t in (inp, b1, b2)), **scalars), expected)
