"""Review of the fifteenth session's commits fa55ab8 and d0160e1 (uninitialized parameters,
logspace following torch's CPU kernel, linspace/arange checks), each against torch 2.13:
``logspace`` of a real dtype computes its exponents and powers in double and rounds once (it
computed them in the dtype: 851 of 1,000 float32 values of ``logspace(-3, 3, 1000)`` differed,
and NumPy's double ``power`` is a last bit off where C's ``pow`` is not), and takes ``out=``
of another dtype (a RuntimeError before). What is left is recorded as strict xfails."""

from __future__ import annotations

import copy
import io
import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch

_REAL = ("float32", "float64", "float16")


@pytest.mark.parametrize("dtype", _REAL)
@pytest.mark.parametrize(
    "args", [(-3, 3, 1000), (0, 1, 20001), (0, 1, 2001, 2.0), (5, -2, 9, 3.0), (0, 2, 7)]
)
def test_logspace_real_dtypes_round_once_as_torch(dtype: str, args: tuple) -> None:
    want = torch.logspace(*args, dtype=getattr(torch, dtype)).numpy()
    got = np.asarray(tw.logspace(*args, dtype=getattr(tw, dtype)))
    np.testing.assert_array_equal(got, want)


def test_logspace_bfloat16_rounds_once_as_torch() -> None:
    want = torch.logspace(-3, 3, 500, dtype=torch.bfloat16).to(torch.float32).numpy()
    got = tw.logspace(-3, 3, 500, dtype=tw.bfloat16, device="torch:cpu").to(tw.float32)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "int16"])
def test_logspace_integer_dtypes_as_torch(dtype: str) -> None:
    for args in [(0, 3, 4), (0, 2, 9, 3.0), (1, 4, 7, 2.0)]:
        want = torch.logspace(*args, dtype=getattr(torch, dtype)).numpy()
        got = np.asarray(tw.logspace(*args, dtype=getattr(tw, dtype)))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("out_dtype", ["float64", "float16", "int64"])
def test_logspace_out_of_another_dtype_as_torch(out_dtype: str) -> None:
    want = torch.empty(3, dtype=getattr(torch, out_dtype))
    torch.logspace(0, 2, 3, out=want)
    got = tw.empty(3, dtype=getattr(tw, out_dtype))
    assert tw.logspace(0, 2, 3, out=got) is got
    assert got.dtype is getattr(tw, out_dtype)
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_logspace_out_checks_as_torch() -> None:
    for lib in (torch, tw):  # a dtype naming another than out's is refused by both
        with pytest.raises(RuntimeError):
            lib.logspace(0, 1, 3, out=lib.empty(3), dtype=lib.float64)
    out = tw.empty(5)  # resized, as torch resizes it
    tw.logspace(0, 1, 3, out=out)
    assert tuple(out.shape) == (3,)


def test_logspace_special_values_as_torch() -> None:
    for args in [(300, 400, 5), (0, float("nan"), 3), (0, float("inf"), 3), (0, 3, 5, -2.0)]:
        want = torch.logspace(*args).numpy()
        np.testing.assert_array_equal(np.asarray(tw.logspace(*args)), want)


# -- found by the review, fixed in the sixteenth session (what is left: strict xfails) -------


def test_save_load_state_dict_of_unmaterialized_lazy_module() -> None:
    buffer = io.BytesIO()
    tw.save(tw.nn.Sequential(tw.nn.LazyLinear(3)).state_dict(), buffer)
    buffer.seek(0)
    assert list(tw.load(buffer, weights_only=False)) == ["0.weight", "0.bias"]


def test_save_load_whole_unmaterialized_lazy_module() -> None:
    buffer = io.BytesIO()
    tw.save(tw.nn.LazyLinear(3), buffer)
    buffer.seek(0)
    loaded = tw.load(buffer, weights_only=False)
    assert tuple(loaded(tw.ones(2, 4)).shape) == (2, 3)


def test_deepcopy_of_uninitialized_buffer_refused_as_torch() -> None:
    with pytest.raises(ValueError):
        copy.deepcopy(torch.nn.LazyBatchNorm1d())
    with pytest.raises(ValueError):
        copy.deepcopy(tw.nn.LazyBatchNorm1d())


def test_linspace_float16_many_steps_as_torch() -> None:
    want = torch.linspace(0, 1, 65504, dtype=torch.float16).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = np.asarray(tw.linspace(0, 1, 65504, dtype=tw.float16))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_gradient_on_finite_inputs_as_torch(dtype: str, dim: int) -> None:
    rng = np.random.default_rng(15)
    x = rng.standard_normal((4, 5)).astype(dtype) * 3
    g = rng.standard_normal((4, 5)).astype(dtype)
    grads = []
    for lib in (torch, tw):
        t = lib.tensor(x, requires_grad=True)
        lib.logcumsumexp(t, dim).backward(lib.tensor(g))
        grads.append(np.asarray(t.grad.detach().numpy() if lib is torch else t.grad))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(grads[1], grads[0], rtol=tol, atol=tol)
    t = tw.tensor(x.astype("float64"), requires_grad=True)
    assert tw.autograd.gradgradcheck(lambda v: tw.logcumsumexp(v, dim), (t,))


def test_logcumsumexp_gradient_empty_and_scalar_as_torch() -> None:
    for lib in (torch, tw):
        empty = lib.zeros(0, 3, requires_grad=True)
        lib.logcumsumexp(empty, 0).sum().backward()
        assert tuple(empty.grad.shape) == (0, 3)
        scalar = lib.tensor(2.0, requires_grad=True)
        lib.logcumsumexp(scalar, 0).backward()
        assert scalar.grad.item() == 1.0


@pytest.mark.xfail(
    strict=True,
    reason="torch's logcumsumexp backward (a reversed logcumsumexp of log|grad| - result, plus "
    "the input, exponentiated) loses the count where float32 absorbs it (1e30 dominating four "
    "outputs: gradient 1 in torch, the exact 4 in tw, whose scan is differentiated unless an "
    "input is infinite); using torch's formula always (ops/numeric.py, also faster: 3.9 ms "
    "against 5.1 ms on (64, 128)) makes the third derivative NaN where "
    "tests/autograd_extras/test_sweep_double_backward_fixes.py checks it finite",
)
def test_logcumsumexp_gradient_absorbed_as_torch() -> None:
    values = [1e30, -1e30, 5.0, 1e-30]
    grads = []
    for lib in (torch, tw):
        x = lib.tensor(values, requires_grad=True)
        lib.logcumsumexp(x, 0).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]
