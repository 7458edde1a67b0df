"""Small divergences from PyTorch 2.13 fixed in the nineteenth session's third wave, each
checked against torch on the NumPy and torch:cpu backends.

Before: ``tw.vdot`` printed ``DotBackward0`` (torch ``VdotBackward0``), ``rsub(x, tensor)``
``SubBackward0`` (torch ``RsubBackward0``), ``inner`` of matrices and ``tensordot``
``MmBackward0`` (torch ``ViewBackward0``), ``sinc`` ``WhereBackward0`` (torch
``SincBackward0``), ``clamp_min``/``clamp_max`` ``ClampBackward0/1`` (torch
``ClampMinBackward0/1``, ``ClampMaxBackward0/1``), ``soft_margin_loss``
``MeanBackward0``/``Log1PBackward0`` and ``multilabel_margin_loss``
``MeanBackward0``/``ViewBackward0`` (torch ``SoftMarginLossBackward0``,
``MultilabelMarginLossBackward0``), ``pdist`` ``LinalgVectorNormBackward0`` (torch
``PdistBackward0``); ``pairwise_distance(a, b, p=0)`` did not require grad (torch's does, and
leaves ``a.grad`` unset); ``autograd.grad`` of a complex scalar without ``grad_outputs``
was accepted (torch raises RuntimeError); ``tw.cross`` of two dtypes promoted (torch raises
RuntimeError); ``soft_margin_loss`` took a target that requires grad (torch raises
RuntimeError: not differentiable with respect to 'target'). The backward of a complex scalar
and ``torch.cross`` of two dtypes with ``dim`` are in test_user_hunt_issue14_session19.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from grad_fn_label_harness import assert_label_values_and_gradients_match_torch
from test_user_hunt_session18 import _check_raises
from tw_backends import entered

_M = (3, 4)


def _f(m: Any) -> Any:
    return m.nn.functional


def _targets(m: Any) -> Any:
    return m.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [0, -1, 2, 2]])


#: name: (fn(library, *operands), operand shapes); operands are float64 and require grad
_CASES: dict[str, tuple] = {
    "vdot": (lambda m, a, b: m.vdot(a, b), (4,), (4,)),
    "rsub_tensor": (lambda m, a, b: m.rsub(a, b, alpha=2), _M, (4,)),
    "inner_matrices": (lambda m, a, b: m.inner(a, b), _M, (2, 4)),
    "tensordot_matrices": (lambda m, a, b: m.tensordot(a, b, dims=([1], [1])), _M, (2, 4)),
    "tensordot_batch": (lambda m, a, b: m.tensordot(a, b, dims=2), (2, 3, 4), (3, 4, 2)),
    "sinc": (lambda m, a: m.sinc(a * m.tensor([0.0, 1.0, 1.0, 1.0], dtype=m.float64)), _M),
    "clamp_min": (lambda m, a: m.clamp_min(a, 0.1), _M),
    "clamp_max": (lambda m, a: m.clamp_max(a, 0.1), _M),
    "clamp_min_tensor": (lambda m, a, b: m.clamp_min(a, b), _M, (4,)),
    "clamp_max_tensor": (lambda m, a, b: m.clamp_max(a, b), _M, (4,)),
    "clamp_min_method": (lambda m, a: a.clamp_min(-0.2), _M),
    "soft_margin": (lambda m, a, b: _f(m).soft_margin_loss(a, b.detach().sign()), _M, _M),
    "soft_margin_none": (
        lambda m, a, b: _f(m).soft_margin_loss(a, b.detach().sign(), reduction="none"),
        _M,
        _M,
    ),
    "multilabel_margin": (lambda m, a: _f(m).multilabel_margin_loss(a, _targets(m)), _M),
    "multilabel_margin_none": (
        lambda m, a: _f(m).multilabel_margin_loss(a, _targets(m), reduction="none"),
        _M,
    ),
    "pdist": (lambda m, a: _f(m).pdist(a), (4, 3)),
    "pdist_p1": (lambda m, a: _f(m).pdist(a, p=1), (4, 3)),
    "pdist_inf": (lambda m, a: _f(m).pdist(a, p=float("inf")), (4, 3)),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_grad_fn_label_values_and_gradients_match_torch(spec: str, name: str) -> None:
    rng = np.random.default_rng(list(_CASES).index(name))
    arrays = [rng.standard_normal(shape) for shape in _CASES[name][1:]]
    assert_label_values_and_gradients_match_torch(spec, _CASES[name][0], arrays)


@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_p0_is_in_the_graph_without_a_gradient(spec: str, keepdim: bool) -> None:
    x = np.array([[0.0, 1.0, -1e-6], [2.0, 0.0, 3.0]])

    def run(m: Any) -> tuple:
        a = m.tensor(x, dtype=m.float64, requires_grad=True)
        out = _f(m).pairwise_distance(a, m.zeros(2, 3, dtype=m.float64), p=0, keepdim=keepdim)
        flags = (out.requires_grad, type(out.grad_fn).__name__)
        out.sum().backward()
        return flags, out.detach().numpy() if m is torch else np.asarray(out.detach()), a.grad

    theirs = run(torch)
    with entered(spec):
        ours = run(tw)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert theirs[2] is None and ours[2] is None


@pytest.mark.parametrize("input_grad", [True, False])
def test_soft_margin_loss_refuses_a_target_that_requires_grad(spec: str, input_grad: bool) -> None:
    def fn(m: Any) -> Any:
        x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=input_grad)
        y = m.tensor([1.0, -1.0, -1.0], dtype=m.float64, requires_grad=True)
        return _f(m).soft_margin_loss(x, y)

    _check_raises(spec, fn)


def test_soft_margin_loss_of_a_target_that_requires_grad_under_no_grad(spec: str) -> None:
    def run(m: Any) -> float:
        y = m.tensor([1.0, -1.0, -1.0], dtype=m.float64, requires_grad=True)
        with m.no_grad():
            return _f(m).soft_margin_loss(m.tensor([0.5, -1.0, 2.0], dtype=m.float64), y).item()

    expected = run(torch)
    with entered(spec):
        assert run(tw) == pytest.approx(expected, rel=1e-12)


def test_autograd_grad_of_a_complex_scalar_raises(spec: str) -> None:
    def fn(m: Any) -> Any:
        z = m.tensor([1 + 2j, 3 - 1j], dtype=m.complex128, requires_grad=True)
        return m.autograd.grad((z * 2).sum(), z)

    _check_raises(spec, fn)


def test_complex_scalar_with_an_explicit_gradient_still_backpropagates(spec: str) -> None:
    def run(m: Any) -> np.ndarray:
        z = m.tensor([1 + 2j, 3 - 1j], dtype=m.complex128, requires_grad=True)
        (z * z).sum().backward(m.tensor(1 - 1j, dtype=m.complex128))
        return np.asarray(z.grad) if m is tw else z.grad.numpy()

    expected = run(torch)
    with entered(spec):
        np.testing.assert_allclose(run(tw), expected, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")  # (cross without dim)
@pytest.mark.parametrize("how", ["function_no_dim", "method", "linalg"])
def test_cross_refuses_two_dtypes(spec: str, how: str) -> None:
    def fn(m: Any) -> Any:
        a = m.tensor([[1.0, 2.0, 3.0]], dtype=m.float32)
        b = m.tensor([[4.0, 5.0, 6.0]], dtype=m.float64)
        if how == "function_no_dim":
            return m.cross(a, b)
        return a.cross(b, dim=1) if how == "method" else m.linalg.cross(a, b)

    _check_raises(spec, fn)
