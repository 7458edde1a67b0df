"""Complex ``linear`` and convolutions give PyTorch 2.13's values and gradients (the
conjugate-Wirtinger convention: a backward multiplies by the *conjugate* of the other
operand). The fused kernels of both backends once left the conjugate out (linear with a
bias, conv1d/2d and conv_transpose1d/2d on numpy: conjugated gradients), and torch:cpu's
fused convolution backward raised NotImplementedError for complex dtypes where torch
differentiates its complex convolution. ``bilinear`` refuses a complex gradient as torch's
``_trilinear`` does."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

DTYPES = ("complex64", "complex128")
TOLERANCE = {"complex64": 2e-4, "complex128": 1e-10}


def _linear(m: Any, *a: Any) -> Any:
    return m.nn.functional.linear(*a)


def _conv(name: str, **options: Any) -> Callable[..., Any]:
    def run(m: Any, *a: Any) -> Any:
        return getattr(m.nn.functional, name)(*a, **options)

    return run


#: name -> (function of (module, *operands), operand shapes)
CASES: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "linear_bias": (_linear, ((3, 4), (5, 4), (5,))),
    "linear_no_bias": (_linear, ((3, 4), (5, 4))),
    "linear_batched": (_linear, ((2, 3, 4), (5, 4), (5,))),
    "linear_1d_input": (_linear, ((4,), (5, 4), (5,))),
    "conv1d": (_conv("conv1d", stride=2, padding=1, groups=2), ((2, 4, 7), (6, 2, 3), (6,))),
    "conv2d": (
        _conv("conv2d", stride=(2, 1), padding=1, groups=2),
        ((2, 4, 5, 4), (6, 2, 3, 2), (6,)),
    ),
    "conv2d_unit_stride": (_conv("conv2d", padding=1), ((1, 2, 4, 4), (3, 2, 3, 3))),
    "conv3d": (
        _conv("conv3d", stride=2, padding=1, groups=2),
        ((1, 4, 4, 3, 3), (2, 2, 2, 2, 2), (2,)),
    ),
    "conv_transpose1d": (
        _conv("conv_transpose1d", stride=2, padding=1, groups=2),
        ((2, 4, 5), (4, 3, 3), (6,)),
    ),
    "conv_transpose2d": (
        _conv("conv_transpose2d", stride=2, padding=1, output_padding=1, groups=2),
        ((1, 4, 3, 3), (4, 1, 3, 2), (2,)),
    ),
    "conv_transpose3d": (
        _conv("conv_transpose3d", stride=2, padding=(1, 0, 0), groups=2),
        ((1, 2, 2, 2, 3), (2, 1, 3, 2, 2), (2,)),
    ),
}


def _operands(shapes: tuple[tuple[int, ...], ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_gradients_like_torch(backend: str, case: str, dtype: str) -> None:
    fn, shapes = CASES[case]
    arrays = _operands(shapes, seed=len(case))
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in arrays]
    expected = fn(torch, *theirs)
    grad = torch.tensor(_operands((tuple(expected.shape),), seed=1)[0], dtype=getattr(torch, dtype))
    expected.backward(grad)
    ours = [tw.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out = fn(tw, *ours)
    out.backward(tw.tensor(grad.numpy()))
    tol = TOLERANCE[dtype]
    assert str(out.dtype).endswith(dtype)
    np.testing.assert_allclose(
        np.asarray(out.detach()), expected.detach().numpy(), rtol=tol, atol=tol
    )
    for name, mine, reference in zip(("input", "weight", "bias"), ours, theirs):
        np.testing.assert_allclose(
            np.asarray(mine.grad),
            reference.grad.numpy(),
            rtol=tol,
            atol=tol,
            err_msg=f"{case}: gradient of {name}",
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_complex_gradients_match_finite_differences(backend: str, case: str) -> None:
    fn, shapes = CASES[case]
    leaves = [tw.tensor(a, requires_grad=True) for a in _operands(shapes, seed=7)]
    assert tw.autograd.gradcheck(lambda *a: fn(tw, *a), tuple(leaves), eps=1e-6, atol=1e-6)


def test_real_gradients_unchanged_by_the_conjugate(backend: str) -> None:
    """The real path keeps its gradients (float64, against torch)."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in ((2, 3, 4), (5, 4), (5,))]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    torch.nn.functional.linear(*theirs).square().sum().backward()
    ours = [tw.tensor(a, requires_grad=True) for a in arrays]
    tw.nn.functional.linear(*ours).square().sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(mine.grad), reference.grad.numpy(), rtol=1e-12)


def _bilinear_operands(m: Any, grad: bool) -> list[Any]:
    arrays = _operands(((3, 4), (3, 2), (5, 4, 2), (5,)), seed=5)
    return [m.tensor(a, requires_grad=grad and i == 2) for i, a in enumerate(arrays)]


def test_complex_bilinear_refuses_gradients_like_torch(backend: str) -> None:
    with pytest.raises(RuntimeError, match="_trilinear") as theirs:
        torch.nn.functional.bilinear(*_bilinear_operands(torch, grad=True))
    with pytest.raises(RuntimeError, match="complex dtype"):
        tw.nn.functional.bilinear(*_bilinear_operands(tw, grad=True))
    assert "complex dtype" in str(theirs.value)


def test_complex_bilinear_values_without_gradients(backend: str) -> None:
    expected = torch.nn.functional.bilinear(*_bilinear_operands(torch, grad=False))
    with tw.no_grad():
        out = tw.nn.functional.bilinear(*_bilinear_operands(tw, grad=True))
    np.testing.assert_allclose(np.asarray(out), expected.numpy(), rtol=1e-12, atol=1e-12)
