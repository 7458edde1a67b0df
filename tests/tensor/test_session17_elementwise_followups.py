"""Elementwise differences from torch 2.13 fixed in session 17's second wave, each compared
with torch on the same values: ``number / t``, NumPy scalars beside half tensors, half
``rsqrt``, ``add``/``sub`` with alpha in half (the foreach fast path too), the graph nodes
torch names after ops that save their result, 0-d ``mT``/``mH`` and in-place keywords."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _every_positive_float16() -> torch.Tensor:
    every = torch.arange(0, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16)
    return every[torch.isfinite(every) & (every > 0)]


def _tw(t: torch.Tensor, requires_grad: bool = False) -> Any:
    """The torch tensor ``t`` as a tensorweaver tensor of its dtype (through float64/int64)."""
    wide = t.detach().double() if t.is_floating_point() else t.detach().long()
    out = tw.tensor(wide.numpy()).to(getattr(tw, str(t.dtype).split(".")[1]))
    return out.requires_grad_() if requires_grad else out


def _same_bits(ours: Any, theirs: torch.Tensor) -> None:
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    got, want = np.asarray(ours.double()), theirs.detach().double().numpy()
    differ = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    assert not differ.any(), f"{differ.sum()} of {differ.size} differ"


# -- 1. number / t is t.reciprocal() * number ---------------------------------------------------


def test_number_over_float16_tensor_every_value(backend: str) -> None:
    """Was one float16 division: 1.5 / t differed from torch in ~25% of the values."""
    xs = _every_positive_float16()
    _same_bits(1.5 / _tw(xs), 1.5 / xs)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
def test_number_over_tensor_as_torch(backend: str, dtype: str) -> None:
    rng = np.random.default_rng(5)
    xs = torch.tensor(rng.integers(1, 1000, 4000) if dtype != "float64" else rng.random(4000))
    if dtype == "float32":
        xs = xs * 0.37
    xs = xs.to(getattr(torch, dtype))
    for number in (1.5, 3, 0.1):
        _same_bits(number / _tw(xs), number / xs)


def test_number_over_tensor_gradient_as_torch(backend: str) -> None:
    xs = torch.tensor([0.5, -1.25, 3.0, 7.0], dtype=torch.float64, requires_grad=True)
    (0.3 / xs).sum().backward()
    x = _tw(xs, requires_grad=True)
    y = 0.3 / x
    y.sum().backward()
    assert y.grad_fn.name() == (0.3 / xs).grad_fn.name()
    np.testing.assert_allclose(np.asarray(x.grad), xs.grad.numpy(), rtol=1e-15)


# -- 2. NumPy scalars are Python numbers ----------------------------------------------------


@pytest.mark.parametrize("scalar", [np.float64(0.1), np.float32(0.1), np.sqrt(np.float64(7.0))])
def test_numpy_scalar_beside_float16_as_python_number(backend: str, scalar: Any) -> None:
    """Was: the NumPy scalar skipped the float32 path (~35% of x16 * s differed)."""
    rng = np.random.default_rng(2)
    xs = torch.tensor(rng.standard_normal(3000)).half()
    x = _tw(xs)
    for got, want in (
        (x * scalar, xs * scalar),
        (scalar * x, scalar * xs),
        (x / scalar, xs / scalar),
        (scalar / x, scalar / xs),
        (x - scalar, xs - scalar),
    ):
        _same_bits(got, want)


@pytest.mark.parametrize("scalar", [np.float64(2.5), np.float32(2.5), np.int64(3)])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "int64"])
def test_numpy_scalar_promotes_as_python_number(backend: str, scalar: Any, dtype: str) -> None:
    xs = torch.tensor([1, 2, 7]).to(getattr(torch, dtype))
    _same_bits(_tw(xs) * scalar, xs * scalar)
    _same_bits(scalar + _tw(xs), scalar + xs)


# -- 3. half rsqrt rounds once --------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_rsqrt_computes_in_float32(backend: str, dtype: str) -> None:
    if dtype == "bfloat16" and backend == "numpy":
        pytest.skip("the NumPy backend has no bfloat16")
    xs = torch.tensor(np.geomspace(1e-3, 6e4, 4000)).to(getattr(torch, dtype))
    want = xs.rsqrt()
    # torch's vectorized sqrt may land on the other side of a rounding boundary in a few
    steps = np.abs(np.asarray(_tw(xs).rsqrt().double()) - want.double().numpy())
    assert np.count_nonzero(steps) <= 4, np.count_nonzero(steps)


# -- 4. add/sub with alpha in half ----------------------------------------------------------


def _half_pair(n: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(11)
    x = torch.tensor(rng.standard_normal(n)).to(dtype)
    return x, torch.tensor(rng.standard_normal(n) * 0.1).to(dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [6, 72, 4096])  # around torch's blocks and the in-place threshold
def test_half_add_and_sub_with_alpha_as_torch(backend: str, dtype: str, n: int) -> None:
    """Was: y * alpha rounded to the half dtype first (~2% differed, every float16 SGD step),
    out of place and in place (the foreach_add fast path of ``p.add_(g, alpha=-lr)``).

    torch's vectorized loop computes in float32; its scalar loop over the last n mod 32
    elements (AVX2 and AVX-512 alike; tests/tensor/test_half_alpha_session18.py has the
    sizes where n mod 64 differs, and broadcast and strided operands) rounds y * alpha to
    half first."""
    if dtype == "bfloat16" and backend == "numpy":
        pytest.skip("the NumPy backend has no bfloat16")
    xs, ys = _half_pair(n, getattr(torch, dtype))
    for alpha in (-0.1, 0.3):
        _same_bits(_tw(xs).add(_tw(ys), alpha=alpha), xs.add(ys, alpha=alpha))
        _same_bits(_tw(xs).sub(_tw(ys), alpha=alpha), xs.sub(ys, alpha=alpha))
        for method in ("add_", "sub_"):
            x = _tw(xs)
            getattr(x, method)(_tw(ys), alpha=alpha)
            _same_bits(x, getattr(xs.clone(), method)(ys, alpha=alpha))


def test_half_add_with_alpha_keeps_torch_s_node_and_input_gradient(backend: str) -> None:
    xs, ys = (t.requires_grad_() for t in _half_pair(50, torch.float16))
    out = xs.add(ys, alpha=-0.1)
    out.sum().backward()
    x, y = _tw(xs, requires_grad=True), _tw(ys, requires_grad=True)
    ours = x.add(y, alpha=-0.1)
    ours.sum().backward()
    assert ours.grad_fn.name() == out.grad_fn.name()
    _same_bits(x.grad, xs.grad)


def test_half_add_with_alpha_other_gradient_as_torch(backend: str) -> None:
    xs, ys = (t.requires_grad_() for t in _half_pair(512, torch.float16))
    g = torch.tensor(np.random.default_rng(3).standard_normal(512)).half()
    xs.add(ys, alpha=-0.1).backward(g)
    x, y = _tw(xs, requires_grad=True), _tw(ys, requires_grad=True)
    x.add(y, alpha=-0.1).backward(_tw(g))
    _same_bits(y.grad, ys.grad)


# -- 5. torch's names for nodes that save their result --------------------------------------

_SAVING = {
    "tan": lambda m, x: m.tan(x),
    "sgn": lambda m, x: m.sgn(x),
    "reciprocal": lambda m, x: m.reciprocal(x),
    "rsqrt": lambda m, x: m.rsqrt(x.abs() + 1),
    "tan_": lambda m, x: (x * 1).tan_(),
    "sgn_": lambda m, x: (x * 1).sgn_(),
    "reciprocal_": lambda m, x: (x * 1).reciprocal_(),
    "rsqrt_": lambda m, x: (x.abs() + 1).rsqrt_(),
}


def _changed_then_backward(m: Any, op: str) -> tuple[str, str]:
    x = m.tensor([0.5, -1.2, 0.3, 2.0], dtype=m.float64, requires_grad=True)
    y = _SAVING[op](m, x)
    name = y.grad_fn.name()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    return name, "raised"


@pytest.mark.parametrize("op", list(_SAVING))
def test_saved_output_node_named_and_refused_as_torch(backend: str, op: str) -> None:
    """Was: a div/where/cast node: no name torch knows, and no refusal of the change."""
    assert _changed_then_backward(tw, op) == _changed_then_backward(torch, op)


# -- 6. mT/mH of a 0-d tensor ---------------------------------------------------------------


@pytest.mark.parametrize("attr", ["mT", "mH"])
@pytest.mark.parametrize("value", [2.5, 1 + 2j])
def test_matrix_transposes_of_0d_warn_and_return_as_torch(
    backend: str, attr: str, value: complex
) -> None:
    """Was: a RuntimeError; torch warns (deprecated: once per process, so only ours is
    checked) and gives x itself (mH of a complex x: its conjugate)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.tensor(value)
        want = getattr(theirs, attr)
    ours = tw.tensor(value)
    with pytest.warns(UserWarning, match=f"Tensor.{attr} is deprecated on 0-D tensors"):
        got = getattr(ours, attr)
    assert (got is ours) == (want is theirs)
    assert complex(got.item()) == complex(want.item())


def test_adjoint_of_0d_warns_and_1d_raises_as_torch(backend: str) -> None:
    with pytest.warns(UserWarning, match="adjoint\\(\\) is deprecated on 0-D"):
        got = tw.adjoint(tw.tensor(1 - 3j))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert complex(got.item()) == complex(torch.adjoint(torch.tensor(1 - 3j)).item())
    for m in (torch, tw):
        for attr in ("mT", "mH"):
            with pytest.raises(RuntimeError, match=f"tensor.{attr} is only supported on matr"):
                getattr(m.tensor([1.0, 2.0]), attr)


def test_0d_mt_warning_points_at_the_caller(backend: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tw.tensor(1.0).mT  # noqa: B018
    assert [w.filename for w in caught] == [__file__]


# -- 7. in-place methods take torch's keywords ------------------------------------------------

_A = np.array([[0.5, 1.5], [2.0, -3.0]])
_B = np.array([[1.25, 0.5], [-2.0, 4.0]])
_C = np.array([[0.7, 1.1], [0.3, 2.0]])

_KEYWORDS: dict[str, tuple[str, dict[str, Any]]] = {
    "add_": ("add_", {"other": _B, "alpha": 2.0}),
    "sub_": ("sub_", {"other": _B, "alpha": 2.0}),
    "mul_": ("mul_", {"other": _B}),
    "mul_(number)": ("mul_", {"other": 2.5}),
    "div_": ("div_", {"other": _B, "rounding_mode": "floor"}),
    "pow_": ("pow_", {"exponent": _B}),
    "atan2_": ("atan2_", {"other": _B}),
    "clamp_": ("clamp_", {"min": -1.0, "max": 1.0}),
    "lerp_": ("lerp_", {"end": _B, "weight": 0.3}),
    "addcmul_": ("addcmul_", {"tensor1": _B, "tensor2": _C, "value": 0.5}),
    "addcdiv_": ("addcdiv_", {"tensor1": _B, "tensor2": _C, "value": 0.5}),
    "masked_fill_": ("masked_fill_", {"mask": "mask", "value": 2.0}),
    "fmod_": ("fmod_", {"other": _B}),
    "remainder_": ("remainder_", {"other": _B}),
    "index_add_": ("index_add_", {"dim": 0, "index": "index", "source": _B, "alpha": 2.0}),
    "scatter_": ("scatter_", {"dim": 0, "index": "index2d", "src": _B}),
    "copy_": ("copy_", {"other": _B}),
    "index_copy_": ("index_copy_", {"dim": 0, "index": "index", "source": _B}),
    "index_fill_": ("index_fill_", {"dim": 1, "index": "index", "value": -1.0}),
    "fill_diagonal_": ("fill_diagonal_", {"fill_value": 5.0, "wrap": False}),
    "cumsum_": ("cumsum_", {"dim": 1}),
    "transpose_": ("transpose_", {"dim0": 1, "dim1": 0}),
    "swapdims_": ("swapdims_", {"dim0": 1, "dim1": 0}),
    "nan_to_num_": ("nan_to_num_", {"nan": 1.0, "posinf": 2.0, "neginf": -2.0}),
}


def _keyword_call(m: Any, method: str, keywords: dict[str, Any]) -> np.ndarray:
    special = {
        "mask": m.tensor([[True, False], [False, True]]),
        "index": m.tensor([1, 0]),
        "index2d": m.tensor([[1, 0], [0, 1]]),
    }

    def argument(value: Any) -> Any:
        if isinstance(value, str) and value in special:
            return special[value]
        return m.tensor(value) if isinstance(value, np.ndarray) else value

    x = m.tensor(_A)
    getattr(x, method)(**{k: argument(v) for k, v in keywords.items()})
    return np.asarray(x.detach().numpy() if m is torch else x)


@pytest.mark.parametrize("case", list(_KEYWORDS))
def test_in_place_methods_take_torch_s_keywords(backend: str, case: str) -> None:
    """Was: ``x.copy_(other=y)`` a TypeError (tw named it src, which torch refuses)."""
    method, keywords = _KEYWORDS[case]
    # (within rounding: torch's lerp may fuse its multiply-add, by machine)
    np.testing.assert_allclose(
        _keyword_call(tw, method, keywords), _keyword_call(torch, method, keywords), rtol=1e-15
    )
