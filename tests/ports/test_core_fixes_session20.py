"""Corners of the twentieth session's core fixes (in-place methods, ``x.T``, the negative bit,
inference tensors), each against torch 2.13 with only the import changed, on the fast
backends. The strict xfails are divergences left (each reason says where, and the fix).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from test_user_hunt_session18 import _check, _check_raises
from tw_backends import entered

_Z = np.array([[1.0 + 2.0j, -3.0 + 0.5j], [0.25 - 1.0j, 2.0 + 0.0j]])


# -- in-place methods (ops/methods.py) ------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, value",
    [("uint8", -1), ("bool", 2.5), ("float64", 0.1), ("int32", True)],
)
def test_copy_from_a_number_casts_like_torch(spec: str, dtype: str, value: Any) -> None:
    _check(spec, lambda m: m.zeros(2, 2, dtype=getattr(m, dtype)).copy_(value))


def test_copy_from_a_complex_number_keeps_the_real_part(spec: str) -> None:
    _check(spec, lambda m: m.zeros(3, dtype=m.float64).copy_(2.5 - 1j))


def test_copy_from_a_list_raises(spec: str) -> None:
    _check_raises(spec, lambda m: m.zeros(3).copy_([1.0, 2.0, 3.0]))


def test_fill_with_a_2d_tensor_raises_and_a_0d_one_fills(spec: str) -> None:
    _check_raises(spec, lambda m: m.zeros(2, 2).fill_(m.ones(1, 1)))
    _check(spec, lambda m: m.zeros(2, 2, dtype=m.int64).fill_(m.tensor(2.75)))


@pytest.mark.parametrize("op", ["bitwise_or_", "bitwise_xor_", "atan2_"])
def test_inplace_refusal_is_the_cast_error(spec: str, op: str) -> None:
    _check_raises(spec, lambda m: getattr(m.ones(3, dtype=m.int64), op)(m.ones(3)))


def test_inplace_op_refusal_stays_where_the_cast_is_fine(spec: str) -> None:
    # (complex into complex casts: the op's own refusal is what both raise)
    _check_raises(spec, lambda m: m.ones(2, dtype=m.complex128).fmod_(m.ones(2)))


# -- x.T of a tensor that is not a matrix ---------------------------------------------------


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4)], ids=["0d", "1d", "3d"])
def test_T_warns_where_the_tensor_is_not_a_matrix(spec: str, shape: tuple) -> None:
    values = np.arange(float(np.prod(shape))).reshape(shape)
    with entered(spec), pytest.warns(UserWarning, match="x.T|Tensor.T"):
        tw.tensor(values).T  # noqa: B018 - the attribute read is what warns
    _check(spec, lambda m: m.tensor(values).T)


def test_T_of_a_matrix_does_not_warn(spec: str) -> None:
    with entered(spec), warnings.catch_warnings():
        warnings.simplefilter("error")
        tw.ones(2, 3).T  # noqa: B018


# -- the negative bit (ops/spellings.py is_neg) ---------------------------------------------


def _bits(m: Any) -> list:
    c = m.tensor(_Z).conj()
    im = c.imag
    return [
        im.is_neg(),
        im[0].is_neg(),
        im.detach().is_neg(),
        im.view(4).is_neg(),
        c[1:].imag.is_neg(),
        im.clone().is_neg(),
        (-im).is_neg(),
        c.real.is_neg(),
        c.conj().imag.is_neg(),
        m.tensor(_Z).imag.is_neg(),
        m.is_neg(im),
    ]


def test_is_neg_follows_views_of_a_conjugate_imag(spec: str) -> None:
    _check(spec, _bits)


def test_numpy_force_resolves_the_conjugate_bit(spec: str) -> None:
    _check(spec, lambda m: m.tensor(_Z, requires_grad=True).conj().numpy(force=True).tolist())


def test_resolve_neg_clears_the_negative_bit(spec: str) -> None:
    _check(spec, lambda m: [m.tensor(_Z).conj().imag.resolve_neg().is_neg()])


def test_numpy_of_a_negative_view_raises(spec: str) -> None:
    _check_raises(spec, lambda m: m.tensor(_Z).conj().imag.numpy())


# -- inference tensors (tensor.py, ops/memory_facts.py, autograd/mode.py) --------------------


def _made_inside(m: Any, requires_grad: bool = False) -> Any:
    with m.inference_mode():
        return m.ones(2, 2, dtype=m.float64, requires_grad=requires_grad)


def test_what_is_an_inference_tensor(spec: str) -> None:
    def fn(m: Any) -> list:
        a = _made_inside(m)
        normal = m.ones(2, 2)
        with m.inference_mode():
            inside_view, inside_op = normal.view(4), normal * 2
            with m.inference_mode(False):
                left = m.ones(1)
        return [
            a.is_inference(),
            a[0].is_inference(),
            a.detach().is_inference(),
            a.t().is_inference(),
            (a + 1).is_inference(),
            a.clone().is_inference(),
            inside_view.is_inference(),
            inside_op.is_inference(),
            left.is_inference(),
            m.is_inference(a),
        ]

    _check(spec, fn)


@pytest.mark.parametrize(
    "write", ["no_grad_add_", "setitem", "view_mul_", "copy_", "add_with_alpha"]
)
def test_inference_tensor_refuses_writes_outside_the_mode(spec: str, write: str) -> None:
    def fn(m: Any) -> Any:
        a = _made_inside(m)
        if write == "no_grad_add_":
            with m.no_grad():
                a.add_(1)
        elif write == "setitem":
            a[0, 0] = 5.0
        elif write == "view_mul_":
            a.view(4).mul_(2)
        elif write == "copy_":
            a.copy_(m.zeros(2, 2, dtype=m.float64))
        else:
            a.add_(m.ones(2, 2, dtype=m.float64), alpha=2)

    _check_raises(spec, fn)


def test_inference_tensor_values_after_a_refused_write(spec: str) -> None:
    def fn(m: Any) -> Any:
        a = _made_inside(m)
        try:
            a[0].mul_(3)
        except RuntimeError:
            pass
        return a

    _check(spec, fn)


def test_detached_inference_tensor_takes_a_write(spec: str) -> None:
    def fn(m: Any) -> Any:
        a = _made_inside(m)
        a.detach().mul_(2)  # allowed by PyTorch (the write reaches a)
        return [a, a.detach().is_inference()]

    _check(spec, fn)


def test_inference_tensor_corners_that_are_allowed(spec: str) -> None:
    def fn(m: Any) -> list:
        a = _made_inside(m)
        a.requires_grad_(False)
        with m.inference_mode():
            a.add_(1)  # inside the mode, in place is fine
        normal = m.ones(2)
        with m.inference_mode():
            view = normal.view(2)
        view.add_(1)  # a view made inside of a normal tensor is a normal tensor
        b = _made_inside(m, requires_grad=True)
        (b * 2).sum().backward()  # b itself is not saved: PyTorch allows it
        return [a, normal, b.requires_grad, b.grad]

    _check(spec, fn)


def test_inference_mode_records_no_graph_under_enable_grad(spec: str) -> None:
    def fn(m: Any) -> list:
        x = m.ones(2, dtype=m.float64, requires_grad=True)
        with m.inference_mode(), m.enable_grad():
            y = x * x
            z = m.ones(2, dtype=m.float64, requires_grad=True).exp()
        w = x * x  # and afterwards as before
        return [y.requires_grad, y.grad_fn is None, z.requires_grad, w.requires_grad]

    _check(spec, fn)


def test_grad_mode_flag_inside_inference_mode_with_enable_grad(spec: str) -> None:
    def fn(m: Any) -> list:
        with m.inference_mode(), m.enable_grad():
            return [m.is_grad_enabled()]

    _check(spec, fn)


def test_torch_is_the_reference_here() -> None:
    # (a guard: these corners mean what they say only on a torch that has inference tensors)
    with torch.inference_mode():
        made = torch.ones(1)
    assert made.is_inference()
