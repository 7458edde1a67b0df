"""Second reading of the twentieth session's second-wave commits (c8f3880..ee589cc), each
snippet run on torch 2.13 and on tensorweaver with only the import changed.

First the defects found, each a strict xfail naming the file and function at fault and the
fix proposed; then the corners that matched torch, kept so that they keep matching.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import inference, plain, same
from tw_backends import FAST, entered

NAN, INF = math.nan, math.inf


# -- defects: complex pow (ops/elementwise.py pow, autograd/gradients.py _pow) ---------------


@pytest.mark.parametrize("exponent", [0.5 + 0j, -0.5 + 0j])
def test_complex_half_power_of_a_tensor(spec: str, exponent: complex) -> None:
    same(lambda m: m.tensor([4.0, -4.0, 0.25]) ** exponent, spec)


def test_one_to_a_complex_power_is_one(spec: str) -> None:
    same(lambda m: m.pow(1, m.tensor([complex(NAN, 0), 1j, 0j])), spec)


def test_grad_of_complex_first_power_at_zero(spec: str) -> None:
    def grad(m: Any) -> Any:
        z = m.tensor([0j, 1 + 1j], dtype=m.complex128, requires_grad=True)
        (z**1 * m.tensor([1 + 2j, 1], dtype=m.complex128)).real.sum().backward()
        return z.grad

    same(grad, spec)


# -- defects: inference tensors (tensor.py, autograd/node.py, ops/inplace_shape.py) ----------


@pytest.mark.parametrize(
    "make",
    [lambda x: x[1:], lambda x: x.detach(), lambda x: x.view(3), lambda x: x.expand(2, 3)],
    ids=["slice", "detach", "view", "expand"],
)
def test_view_of_inference_tensor_refuses_requires_grad(spec: str, make: Callable) -> None:
    same(lambda m: make(inference(m)).requires_grad_(), spec)


def test_parameter_of_an_inference_tensor_is_refused(spec: str) -> None:
    same(lambda m: m.nn.Parameter(inference(m)), spec)


@pytest.mark.parametrize("make", [lambda x: x[0:3], lambda x: x.detach()], ids=["slice", "detach"])
def test_view_of_inference_tensor_cannot_be_saved(spec: str, make: Callable) -> None:
    def program(m: Any) -> Any:
        w = m.ones(3, requires_grad=True)
        return (w * make(inference(m))).sum()

    same(program, spec)


@pytest.mark.parametrize(
    "change",
    [lambda x: x.unsqueeze_(0), lambda x: x.t_(), lambda x: x.resize_(2)],
    ids=["unsqueeze_", "t_", "resize_"],
)
def test_in_place_shape_change_of_inference_tensor(spec: str, change: Callable) -> None:
    same(lambda m: change(inference(m)), spec)


def test_where_does_not_save_its_inference_branch(spec: str) -> None:
    def program(m: Any) -> Any:
        x, w = inference(m), m.ones(3, requires_grad=True)
        m.where(m.tensor([True, False, True]), w, x).sum().backward()
        return w.grad

    same(program, spec)


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(lambda m, w, x: w[_inference_index(m)], id="index"),
        pytest.param(
            lambda m, w, x: m.nn.functional.linear(x.reshape(1, 3), w.reshape(1, 3)), id="linear"
        ),
        pytest.param(lambda m, w, x: m.nn.functional.mse_loss(w, x), id="mse_loss"),
    ],
)
def test_saved_inference_operand_is_refused(spec: str, use: Callable) -> None:
    def program(m: Any) -> Any:
        w = m.ones(3, requires_grad=True)
        return use(m, w, inference(m)).sum()

    same(program, spec)


def _inference_index(m: Any) -> Any:
    with m.inference_mode():
        return m.tensor([0, 2])


# -- defects: node hooks that see other gradients than torch's (accepted, not refused) -------


def _hook_view(op: Callable[[Any, Any, Any], Any]) -> Callable[[Any], Any]:
    """The gradients a post-hook on ``op``'s node sees (grad_inputs), and the node's name."""

    def program(m: Any) -> Any:
        a = m.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=m.float64, requires_grad=True)
        b = m.tensor([[1.0, 2.0, -0.5], [0.3, -0.2, 0.9]], dtype=m.float64, requires_grad=True)
        out = op(m, a, b)
        seen: list = []
        out.grad_fn.register_hook(lambda gi, go: seen.append(gi))
        (out * m.arange(out.numel(), dtype=m.float64).reshape(out.shape)).sum().backward()
        shown = tuple(None if g is None else plain(g, m) for g in seen[0])
        return out.grad_fn.name(), shown

    return program


@pytest.mark.parametrize("name", ["add", "sub"])
def test_hook_of_add_with_alpha(spec: str, name: str) -> None:
    same(_hook_view(lambda m, a, b: getattr(a, name)(b, alpha=2)), spec)


@pytest.mark.parametrize(
    "op",
    [
        lambda m, a, b: m.xlogy(a, 2.0),
        lambda m, a, b: m.xlogy(2.0, a),
        lambda m, a, b: m.remainder(a, 0.7),
        lambda m, a, b: m.remainder(a, b),
    ],
    ids=["xlogy_scalar_other", "xlogy_scalar_self", "remainder_scalar", "remainder_tensors"],
)
def test_hook_of_a_node_with_a_scalar_operand(spec: str, op: Callable) -> None:
    same(_hook_view(op), spec)


def test_hook_of_normalize(spec: str) -> None:
    same(_hook_view(lambda m, a, b: m.nn.functional.normalize(a)), spec)


def test_hook_of_einsum(spec: str) -> None:
    same(_hook_view(lambda m, a, b: m.einsum("ij,ij->i", a, b)), spec)


# -- defects: edge semantics ----------------------------------------------------------------


def test_searchsorted_past_a_nan_in_the_sequence(spec: str) -> None:
    same(lambda m: m.searchsorted(m.tensor([1.0, 2.0, NAN]), m.tensor([2.5, INF, 1.5])), spec)


def test_cat_keeps_channels_last_on_numpy() -> None:
    def program(m: Any) -> Any:
        x = m.arange(120.0).reshape(2, 3, 4, 5).contiguous(memory_format=m.channels_last)
        out = m.cat([x, x])
        return tuple(out.stride()), out.is_contiguous(memory_format=m.channels_last)

    same(program, "numpy")


def test_eye_of_a_dtype_the_device_lacks() -> None:
    with entered("numpy"), pytest.raises(TypeError, match="bfloat16"):
        tw.eye(3, dtype=tw.bfloat16)


# -- matched torch: complex pow ---------------------------------------------------------------

_BASES = [0j, 1 + 0j, -1 + 0j, 1j, -1j, 2 + 0j, -2 + 0j, 1 + 1j, -1 - 1j, 0.5j, complex(-2, -0.0)]
_EXPONENTS = [0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, -3, 1j, 0j, 1 + 1j, 4, 2 + 0j]


def _close(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30, equal_nan=True)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_pow_number_and_tensor_exponents(spec: str, dtype: str) -> None:
    tb = torch.tensor(_BASES, dtype=getattr(torch, dtype))
    with entered(spec):
        wb = tw.tensor(_BASES, dtype=getattr(tw, dtype))
        for e in _EXPONENTS:
            _close((wb**e).numpy(), (tb**e).numpy())
            we = tw.full((len(_BASES),), e, dtype=wb.dtype)
            te = torch.full((len(_BASES),), e, dtype=tb.dtype)
            _close((wb**we).numpy(), (tb**te).numpy())


@pytest.mark.parametrize(
    "program",
    [
        lambda m: m.tensor([0, 1, 2, -2]) ** (1 + 2.5j),
        lambda m: (1j) ** m.tensor([0.0, 1, 2, -2, 0.5]),
        lambda m: 0 ** m.tensor([0j, 1, 2, -2, 1j]),
        lambda m: m.tensor([1 + 1j, -2, 0, 1j], dtype=m.complex64) ** m.tensor([2, 3, 0, -1]),
        lambda m: m.tensor([1 + 1j, 0], dtype=m.complex128) ** True,
        lambda m: m.tensor([[1 + 1j, 2, 3], [4j, 5, 6]])[:, ::2].T ** m.tensor([[2.5], [0.5]]),
        lambda m: m.ones(0, 3, dtype=m.complex64) ** 2,
        lambda m: m.tensor([-4 + 0j, 0], dtype=m.complex64).pow_(0.5),
        lambda m: m.float_power(m.tensor([1 + 1j, 0], dtype=m.complex64), 2),
        lambda m: m.tensor([0j, 1 + 1j, complex(NAN, 0)]) ** 0,
        lambda m: m.tensor([0j, 1 + 1j, complex(NAN, 0)]) ** 0j,
        lambda m: m.pow(m.tensor([1 + 1j, 0], dtype=m.complex64), m.tensor(2.5 + 0j)),
    ],
    ids=[
        "int_to_complex",
        "complex_number_base",
        "zero_base",
        "int_tensor_exponent",
        "bool_exponent",
        "strided_broadcast",
        "empty",
        "in_place_root",
        "float_power",
        "zeroth",
        "zeroth_complex",
        "zero_dim_cdouble",
    ],
)
def test_complex_pow_corners(spec: str, program: Callable) -> None:
    same(program, spec)


@pytest.mark.parametrize(
    "exponent", [2, 0.5, -1, 3, 0, -0.5, 2.5 + 1j, [2, 0.5, 1 + 1j, 2], [1, 1, 1, 1]]
)
def test_complex_pow_gradients(spec: str, exponent: Any) -> None:
    def grads(m: Any) -> Any:
        a = m.tensor([1 + 1j, -2, 0.5j, 0], dtype=m.complex128, requires_grad=True)
        b = exponent
        if isinstance(exponent, list):
            b = m.tensor(exponent, dtype=m.complex128, requires_grad=True)
        (a**b * m.tensor([1 + 2j] * 4, dtype=m.complex128)).real.sum().backward()
        return a.grad, (b.grad if isinstance(b, m.Tensor) else None)

    same(grads, spec)


# -- matched torch: inference tensors -----------------------------------------------------------


def _normal_view_made_in_the_mode(m: Any) -> Any:
    y = m.ones(3)
    with m.inference_mode():
        v = y[1:]
    return v.is_inference(), v.add_(1), y


def _mixed_graph(m: Any) -> Any:
    x, w = inference(m), m.ones(3, requires_grad=True)
    (m.cat([w, x]).sum() + (w + x).sum() + (w - x).sum()).backward()
    return w.grad


@pytest.mark.parametrize(
    "program",
    [
        lambda m: inference(m)[1:].add_(1),
        lambda m: inference(m).requires_grad_(),
        lambda m: inference(m).requires_grad_(False).is_inference(),
        lambda m: inference(m).zero_(),
        lambda m: m.add(m.ones(3), 1, out=inference(m)),
        lambda m: inference(m).detach().add_(1),
        lambda m: inference(m).clone().requires_grad_().is_inference(),
        lambda m: (inference(m) * m.ones(3, requires_grad=True)).sum(),
        lambda m: inference(m) @ m.ones(3, requires_grad=True),
        lambda m: m.nn.Parameter(inference(m), requires_grad=False).is_inference(),
        _normal_view_made_in_the_mode,
        _mixed_graph,
    ],
    ids=[
        "view_write",
        "requires_grad",
        "requires_grad_false",
        "zero_",
        "out",
        "detach_write",
        "clone",
        "saved_by_mul",
        "saved_by_matmul",
        "parameter_without_grad",
        "normal_view_made_in_mode",
        "ops_that_save_nothing",
    ],
)
def test_inference_tensor_corners(spec: str, program: Callable) -> None:
    same(program, spec)


def test_inference_mode_records_no_graph_even_with_grad_tensors(spec: str) -> None:
    def program(m: Any) -> Any:
        w = m.ones(2, requires_grad=True)
        with m.inference_mode():
            y = w * 2
            with m.inference_mode(False):
                z = m.ones(2)
        return y.requires_grad, y.is_inference(), y.grad_fn is None, z.is_inference()

    same(program, spec)


# -- matched torch: edge semantics, LinAlgError, norm ------------------------------------------


@pytest.mark.parametrize(
    "program",
    [
        lambda m: m.nan_to_num(m.tensor([NAN, INF, -INF, 1.0], dtype=m.float16), nan=1e6),
        lambda m: m.nan_to_num(m.tensor([NAN, INF, -INF], dtype=m.float16), 0.0, 1e6, -1e6),
        lambda m: m.nan_to_num(m.tensor([complex(NAN, INF), complex(-INF, NAN)])),
        lambda m: m.nan_to_num(m.tensor([[NAN, INF, 3.0], [1.0, -INF, NAN]]).T[::2]),
        lambda m: m.nan_to_num(m.tensor([NAN, INF]), nan=1e40, posinf=1e300),
        lambda m: m.unique(m.tensor([0.0, -0.0])),
        lambda m: m.unique(m.tensor([-0.0, 0.0, 0.0, -0.0, 1.0]), return_inverse=True),
        lambda m: m.unique_consecutive(m.tensor([-0.0, 0.0, 1.0, -0.0])),
        lambda m: m.searchsorted(m.tensor([1.0, 2.0, 3.0]), m.tensor([NAN, 2.0, -INF, INF])),
        lambda m: m.searchsorted(m.tensor([1.0, 2.0, 3.0]), m.tensor([NAN]), right=True),
        lambda m: m.searchsorted(m.tensor([3.0, 1.0, 2.0]), NAN, sorter=m.tensor([1, 2, 0])),
        lambda m: m.bucketize(m.tensor([NAN, 1.5]), m.tensor([1.0, 2.0]), out_int32=True),
        lambda m: m.full((2,), 2**63, dtype=m.int64),
        lambda m: m.full((2,), 2**63, dtype=m.bool),
        lambda m: m.zeros(2, dtype=m.int64).fill_(2**64 - 1),
        lambda m: m.zeros(2, dtype=m.uint8).masked_fill(m.tensor([True, False]), 2**63),
        lambda m: (m.eye(2, 5), m.eye(5, 2), m.eye(0, 3), m.eye(1, 7), m.eye(7, 1)),
        lambda m: (m.eye(2, 3, dtype=m.bool), m.eye(2, dtype=m.complex64), m.eye(-1)),
    ],
)
def test_edge_semantics(spec: str, program: Callable) -> None:
    same(program, spec)


def test_eye_past_memory_raises_at_once(spec: str) -> None:
    with entered(spec), pytest.raises(RuntimeError):  # (torch's class, or a subclass of it)
        tw.eye(10**6, 10**7)


@pytest.mark.parametrize(
    "program",
    [
        lambda m: m.linalg.svd(m.full((3, 3), NAN, dtype=m.float64)),
        lambda m: m.linalg.svdvals(m.full((3, 3), NAN, dtype=m.float64)),
        lambda m: m.linalg.pinv(m.full((3, 3), NAN, dtype=m.complex128)),
        lambda m: m.linalg.matrix_norm(m.full((3, 3), NAN, dtype=m.float64), 2),
        lambda m: m.linalg.inv(m.zeros(2, 2, dtype=m.float64)),
        lambda m: m.linalg.cholesky(-m.eye(2, dtype=m.float64)),
        lambda m: m.linalg.eig(m.full((3, 3), NAN, dtype=m.float64)),
    ],
    ids=["svd", "svdvals", "pinv", "matrix_norm_2", "inv", "cholesky", "eig"],
)
def test_linalg_errors_are_torchs(spec: str, program: Callable) -> None:
    def kind(m: Any) -> str:
        try:
            program(m)
        except m.linalg.LinAlgError:
            return "LinAlgError"
        except Exception as e:  # noqa: BLE001
            return type(e).__name__
        return "no error"

    same(kind, spec)


@pytest.mark.parametrize(
    "program",
    [
        lambda m: m.norm(m.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]]), p=None),
        lambda m: m.norm(m.ones(2, 2, 3), p=None, dim=(1, 2), keepdim=True),
        lambda m: m.norm(m.tensor([[1 + 1j, 2], [3j, 0]]), p=None, dim=0),
        lambda m: m.tensor([1.0, -2.0]).norm(p=None, dtype=m.float64),
        lambda m: m.logsumexp(m.tensor([1, 2, 3]), 0),
        lambda m: m.logsumexp(m.tensor([True, False]), 0),
    ],
)
def test_norm_none_and_integer_logsumexp(spec: str, program: Callable) -> None:
    same(program, spec)


@pytest.mark.parametrize(
    "device",
    [
        *FAST,
        pytest.param(
            "cunumeric",
            marks=pytest.mark.cunumeric,
        ),
    ],
)
@pytest.mark.parametrize("exponent", [-2, -0.5])
def test_complex_negative_powers_of_infinities(device: str, exponent: float) -> None:
    same(
        lambda m: m.tensor([complex(INF, 0), complex(0, INF), complex(-INF, 0)]) ** exponent,
        device,
    )
