"""Elementwise special functions (issue 14): the trigonometric and hyperbolic family, gamma,
error and Bessel functions, the small compositions (xlogy, sinc, ldexp, ...), bit shifts,
gcd/lcm and the reflected operators, against PyTorch and SciPy in float64 and float32:
edge values (0, -0, poles, ±1, inf, NaN, huge and tiny), integer and bool inputs, broadcasting,
0-d and empty tensors, in-place forms, gradients by finite differences (first and second
order) and against PyTorch's, and the host fallback a backend without a kernel gets.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.special as sp
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from tensor_reference import (
    dtype_name,
    grads_like_torch,
    host,
    like_torch,
    raises_like_torch,
    uniform,
)
from tensorweaver.ops import host_fallback
from tensorweaver.ops.host_fallback import HostFallbackWarning

inf, nan = np.inf, np.nan
EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, -2.5, 1e-300, 1e-8, -1e-8, 0.999999]
EDGES += [-0.999999, 1.5, 3.0, 10.0, 30.0, 100.0, -100.5, 1e10, 1e300, inf, -inf, nan]
#: Edge values and a spread of ordinary ones, where the functions are defined and not.
VALUES = np.concatenate(
    [EDGES, uniform((40,), -5, 5, seed=1), uniform((20,), -1, 1, seed=2)]
).astype(np.float64)

UNARY = (
    "acos asin atan sinh cosh asinh acosh atanh arccos arcsin arctan arcsinh arccosh arctanh "
    "exp2 lgamma digamma erfinv erfc i0 logit sinc deg2rad rad2deg"
).split()
#: (rtol, atol) where the two libraries' float64 kernels legitimately differ by more than
#: 1e-12 relative (checked against mpmath): absolute error near lgamma's roots at 1 and 2,
#: and PyTorch's digamma next to a pole (ours agrees with mpmath there).
TOLERANCE = {"lgamma": (1e-12, 1e-15), "digamma": (1e-10, 0.0)}


def _close(ours: np.ndarray, theirs: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)


def _both(fn, x: np.ndarray, dtype: str) -> tuple:
    """fn(m, tensor) on tensorweaver and torch; asserts one dtype and shape; host results."""
    ours = fn(tw, tw.tensor(x, dtype=getattr(tw, dtype)))
    theirs = fn(torch, torch.tensor(x, dtype=getattr(torch, dtype)))
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    return host(ours).astype(np.float64), host(theirs).astype(np.float64)


@pytest.mark.parametrize("name", UNARY)
def test_unary_float64_values_like_torch(backend: str, name: str) -> None:
    ours, theirs = _both(lambda m, t: getattr(m, name)(t), VALUES, "float64")
    _close(ours, theirs, *TOLERANCE.get(name, (1e-12, 0.0)))


@pytest.mark.parametrize("name", UNARY)
def test_unary_float32_values_close_to_float64(backend: str, name: str) -> None:
    """float32 results agree with PyTorch's float64 ones at float32 precision (PyTorch's own
    float32 kernels are less accurate near digamma's root: the reference is float64)."""
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        x32 = VALUES.astype(np.float32)
    ours = host(getattr(tw, name)(tw.tensor(x32)))
    assert ours.dtype == np.float32
    reference = getattr(torch, name)(torch.tensor(x32, dtype=torch.float64)).numpy()
    with np.errstate(over="ignore"):
        reference = reference.astype(np.float32).astype(np.float64)  # the float32 range
    _close(ours.astype(np.float64), reference, 4e-6, 1e-6)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "erfc", "i0"])
def test_special_float64_against_scipy(backend: str, name: str) -> None:
    reference = {"lgamma": sp.gammaln, "erfinv": sp.erfinv}.get(name, getattr(sp, name, None))
    x = VALUES[np.isfinite(VALUES)]
    ours = host(getattr(tw, name)(tw.tensor(x)))
    with np.errstate(all="ignore"):
        _close(ours, reference(x), *TOLERANCE.get(name, (1e-13, 0.0)))


@pytest.mark.filterwarnings("ignore::tensorweaver.ops.host_fallback.HostFallbackWarning")
@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", ["acos", "atanh", "lgamma", "erfinv", "exp2", "sinc", "deg2rad"])
def test_integer_and_bool_inputs_give_the_default_float(
    backend: str, name: str, dtype: str
) -> None:
    x = np.array([0, 1, 2, 0, 1]) if dtype != "bool" else np.array([True, False, True])
    like_torch(lambda m, t: getattr(m, name)(t), x, dtype=dtype)


@pytest.mark.parametrize("name", ["signbit", "deg2rad", "rad2deg", "exp2"])
def test_signbit_and_scalings_like_torch(backend: str, name: str) -> None:
    for dtype in ("float64", "float32", "int64", "int8"):
        x = np.array([-3, -0.0, 0, 2, 7]) if dtype[0] == "f" else np.array([-3, 0, 2, 7])
        like_torch(lambda m, t: getattr(m, name)(t), x, dtype=dtype)
    like_torch(lambda m, t: getattr(m, name)(t), np.array([True, False]))


def test_polygamma_like_torch_and_scipy(backend: str) -> None:
    x = VALUES[np.isfinite(VALUES) & (np.abs(VALUES) < 1e9)]
    # Not the poles, where PyTorch's trigamma gives huge finite values, nor large negative x,
    # where the Hurwitz sum both libraries use cancels (-100.5 loses every digit).
    x = x[((x > 0) | (x != np.round(x))) & (x > -10)]
    for n in (0, 1, 2, 3, 6):
        ours, theirs = _both(lambda m, t, n=n: m.polygamma(n, t), x, "float64")
        # PyTorch's trigamma is good to about 1e-9; SciPy's to an ulp or two.
        rtol = 1e-9 if n == 1 else 1e-11
        _close(ours, theirs, rtol)
        _close(host(tw.tensor(x).polygamma(n)), sp.polygamma(n, x), rtol)
    raises_like_torch(lambda m, t: m.polygamma(-1, t), np.ones(2), match=["polygamma", "n"])


# -- binary -----------------------------------------------------------------------------------

A = uniform((3, 1), -4, 4, seed=3)
B = uniform((4,), -4, 4, seed=4)
BINARY = {
    "atan2": lambda m, a, b: m.atan2(a, b),
    "arctan2": lambda m, a, b: m.arctan2(a, b),
    "copysign": lambda m, a, b: m.copysign(a, b),
    "float_power": lambda m, a, b: m.float_power(m.abs(a), b),
    "ldexp": lambda m, a, b: m.ldexp(a, m.round(b)),
    "xlogy": lambda m, a, b: m.xlogy(a, m.abs(b)),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "logaddexp": lambda m, a, b: m.logaddexp(a, b),
    "logaddexp2": lambda m, a, b: m.logaddexp2(a, b),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_binary_broadcasts_like_torch(backend: str, name: str, dtype: str) -> None:
    like_torch(BINARY[name], A, B, dtype=dtype)


def test_binary_edges_like_torch(backend: str) -> None:
    a = np.array([0.0, -0.0, 0.0, 1.0, -1.0, inf, -inf, nan, 0.0, 2.0, 0.0])
    b = np.array([0.0, 0.0, -0.0, -0.0, inf, inf, -inf, 1.0, nan, nan, inf])
    for name in ("atan2", "copysign", "xlogy", "hypot"):
        like_torch(lambda m, x, y, name=name: getattr(m, name)(x, y), a, b)
    like_torch(lambda m, x, y: m.float_power(x, y), np.abs(a), b)
    like_torch(lambda m, x, y: m.ldexp(x, y), a, np.array([0, 3, -2, 1, 2, 1, 1, 1, 5, -1, 0]))


@pytest.mark.parametrize("name", ["atan2", "copysign", "float_power", "xlogy", "ldexp"])
def test_binary_integer_and_mixed_dtypes_like_torch(backend: str, name: str) -> None:
    ints, more = np.array([3, -2, 0, 5]), np.array([2, 1, 3, 0])
    fn = lambda m, a, b: getattr(m, name)(a, b)  # noqa: E731
    like_torch(fn, ints, more, dtype="int64")
    like_torch(fn, np.array([True, False]), np.array([True, True]))
    like_torch(lambda m, a, b: getattr(m, name)(a.float(), b), ints, more)
    like_torch(lambda m, a, b: getattr(m, name)(a.float(), b.double()), ints, more)


def test_scalar_operands_like_torch(backend: str) -> None:
    x = np.array([0.5, -2.0, 3.0])
    like_torch(lambda m, t: m.copysign(t, -1), x)
    like_torch(lambda m, t: m.xlogy(t, 3), x)
    like_torch(lambda m, t: m.xlogy(2, m.abs(t)), x)
    like_torch(lambda m, t: m.float_power(t, 2), x, dtype="float32")
    like_torch(lambda m, t: m.float_power(2, t), x)
    raises_like_torch(lambda m, t: m.atan2(t, 2.0), x, match=["atan2", "Tensor"])
    raises_like_torch(lambda m, t: m.ldexp(t, 2), x, match=["ldexp", "Tensor"])


def test_0d_and_empty_like_torch(backend: str) -> None:
    for name in ("acos", "lgamma", "erfinv", "sinc", "signbit", "i0"):
        like_torch(lambda m, t, name=name: getattr(m, name)(t), np.array(0.25))
        like_torch(lambda m, t, name=name: getattr(m, name)(t), np.zeros((0, 3)))
    like_torch(lambda m, a, b: m.atan2(a, b), np.array(1.0), np.zeros((0, 3)))
    like_torch(lambda m, a, b: m.xlogy(a, b), np.array(2.0), np.array([[1.0, 3.0]]))


def test_logit_with_eps_like_torch(backend: str) -> None:
    p = np.array([0.0, 1e-9, 0.3, 0.5, 0.99, 1.0, 1.5, -0.1, nan])
    like_torch(lambda m, t: m.logit(t), p)
    like_torch(lambda m, t: m.logit(t, eps=1e-6), p)
    like_torch(lambda m, t: t.logit(0.25), p, dtype="float32")


# -- in place ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.acos_(),
        lambda t: t.arcsinh_(),
        lambda t: t.lgamma_(),
        lambda t: t.digamma_(),
        lambda t: t.polygamma_(2),
        lambda t: t.erfinv_(),
        lambda t: t.erfc_(),
        lambda t: t.i0_(),
        lambda t: t.exp2_(),
        lambda t: t.sinc_(),
        lambda t: t.deg2rad_(),
        lambda t: t.logit_(),
        lambda t: t.atan2_(t * 2 - 1),
        lambda t: t.xlogy_(3.0),
        lambda t: t.copysign_(-1.0),
        lambda t: t.hypot_(t),
    ],
)
def test_inplace_forms_like_torch(backend: str, call) -> None:
    x = uniform((2, 3), 0.05, 0.95, seed=5)

    def run(m, t):
        out = call(t)
        assert out is t
        return t

    like_torch(run, x)


@pytest.mark.parametrize("name", ["acos_", "arctanh_", "erfc_", "i0_", "sinc_", "logit_"])
def test_inplace_functions_like_torch(backend: str, name: str) -> None:
    def run(m, t):
        assert getattr(m, name)(t) is t
        return t

    like_torch(run, uniform((2, 3), 0.05, 0.95, seed=9))
    like_torch(lambda m, a, b: m.gcd_(a, b) is a and a, np.array([12, 7]), np.array([8, 21]))


def test_inplace_on_an_integer_tensor_raises_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, t: t.acos_(), np.array([0, 1]), match=["can't be cast"])


# -- integers: shifts, gcd, lcm, reflected operators ------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_shifts_like_torch(backend: str, dtype: str) -> None:
    bits = 8 * np.dtype(dtype).itemsize
    x = np.array([1, 5, 100, 127, 0, 3, 64, 1, 9, 2])
    if dtype != "uint8":
        x = x * np.array([1, -1] * 5)
    s = np.array([0, 1, 3, bits - 1, bits, bits + 2, 2, bits - 2, 1, 0])
    if dtype != "uint8":
        s[-1] = -1  # a negative count
    like_torch(lambda m, a, b: m.bitwise_left_shift(a, b), x, s, dtype=dtype)
    like_torch(lambda m, a, b: m.bitwise_right_shift(a, b), x, s, dtype=dtype)
    like_torch(lambda m, a, b: a << b, x, s, dtype=dtype)
    like_torch(lambda m, a, b: a >> b, x, s, dtype=dtype)


def test_shift_operators_with_scalars_and_in_place_like_torch(backend: str) -> None:
    x = np.array([[1, -8, 5], [7, 0, -1]])
    like_torch(lambda m, t: t << 2, x)
    like_torch(lambda m, t: t >> 1, x)
    like_torch(lambda m, t: 2 << m.abs(t), x)
    like_torch(lambda m, t: 256 >> m.abs(t), x)

    def shift_in_place(m, t):
        t <<= 3
        t >>= 1
        t.bitwise_left_shift_(1)
        return t

    like_torch(shift_in_place, x)
    like_torch(lambda m, t, s: t << s, x, np.array([1, 2, 3]))  # broadcast
    raises_like_torch(lambda m, t: t << 1, np.array([1.5]), match=["shift", "Float"])
    raises_like_torch(lambda m, t: t >> t, np.array([True]), match=["shift", "Bool"])


def test_reflected_bitwise_operators_like_torch(backend: str) -> None:
    x = np.array([3, 12, -7, 0])
    like_torch(lambda m, t: 1 & t, x)
    like_torch(lambda m, t: 6 | t, x)
    like_torch(lambda m, t: 5 ^ t, x)
    like_torch(lambda m, t: True & t, np.array([True, False]))
    like_torch(lambda m, t: False | t, np.array([True, False]))
    like_torch(lambda m, t: True ^ t, np.array([True, False]))


@pytest.mark.cunumeric
def test_gcd_and_lcm_like_torch(backend: str) -> None:
    a = np.array([[-4, 0, 0, 7, 12, 1071], [9, -9, 36, 1, 0, 17]])
    b = np.array([6, 0, -5, 3, 18, 462])
    for dtype in ("int64", "int32", "int16"):
        like_torch(lambda m, x, y: m.gcd(x, y), a, b, dtype=dtype)
        like_torch(lambda m, x, y: m.lcm(x, y), a, b, dtype=dtype)
    like_torch(lambda m, x, y: x.gcd(y), np.array(12), np.array([8, 18]))
    like_torch(lambda m, x, y: x.lcm_(y), np.array([4, 6]), np.array([6, 4]))
    like_torch(lambda m, x, y: m.gcd(x, y), np.zeros((0,), int), np.zeros((0,), int))
    raises_like_torch(lambda m, x: m.gcd(x, x), np.array([1.5]), match=["gcd", "Float"])
    raises_like_torch(lambda m, x: m.lcm(x, x), np.array([True]), match=["lcm", "Bool"])
    raises_like_torch(lambda m, x: m.gcd(x, 2), np.array([4]), match=["gcd", "Tensor"])


# -- gradients --------------------------------------------------------------------------------

#: Each function with inputs inside its domain, away from poles and kinks.
GRAD_CASES = {
    "acos": (lambda x: x.acos(), (-0.9, 0.9)),
    "asin": (lambda x: tw.asin(x), (-0.9, 0.9)),
    "atan": (lambda x: tw.atan(x), (-3, 3)),
    "sinh": (lambda x: tw.sinh(x), (-3, 3)),
    "cosh": (lambda x: tw.cosh(x), (-3, 3)),
    "asinh": (lambda x: tw.asinh(x), (-3, 3)),
    "acosh": (lambda x: tw.acosh(x), (1.2, 4)),
    "atanh": (lambda x: tw.atanh(x), (-0.9, 0.9)),
    "lgamma": (lambda x: tw.lgamma(x), (0.2, 6)),
    "digamma": (lambda x: tw.digamma(x), (0.2, 6)),
    "polygamma": (lambda x: tw.polygamma(2, x), (0.5, 6)),
    "erfinv": (lambda x: tw.erfinv(x), (-0.95, 0.95)),
    "erfc": (lambda x: tw.erfc(x), (-2, 2)),
    "i0": (lambda x: tw.i0(x), (-3, 3)),
    "exp2": (lambda x: tw.exp2(x), (-3, 3)),
    "logit": (lambda x: tw.logit(x), (0.1, 0.9)),
    "sinc": (lambda x: tw.sinc(x), (-2, 2)),
    "deg2rad": (lambda x: tw.deg2rad(x), (-90, 90)),
    "rad2deg": (lambda x: tw.rad2deg(x), (-2, 2)),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradients_by_finite_differences(backend: str, name: str) -> None:
    fn, (low, high) = GRAD_CASES[name]
    x = uniform((2, 3), low, high, seed=6)
    gradcheck(fn, x)
    if name not in ("deg2rad", "rad2deg"):  # linear: no second derivative to check
        gradgradcheck(fn, x)


@pytest.mark.parametrize("name", ["atan2", "copysign", "float_power", "ldexp", "xlogy"])
def test_binary_gradients_by_finite_differences(backend: str, name: str) -> None:
    a, b = uniform((2, 3), 0.5, 2, seed=7), uniform((3,), -1.5, 1.5, seed=8)
    fn = {
        "atan2": tw.atan2,
        "copysign": tw.copysign,
        "float_power": tw.float_power,
        "ldexp": tw.ldexp,
        "xlogy": lambda x, y: tw.xlogy(y, x),
    }[name]
    gradcheck(fn, a, b)
    if name != "copysign":  # piecewise linear: its second derivative is 0, b unused
        gradgradcheck(fn, a, b)


def test_gradients_like_torch_at_special_points(backend: str) -> None:
    """Points finite differences cannot decide: 0 in sinc, xlogy and copysign, logit's eps."""
    grads_like_torch(lambda m, x: m.sinc(x), np.array([0.0, 0.5, -1.5]))
    grads_like_torch(
        lambda m, x, y: m.xlogy(x, y), np.array([0.0, 2.0, 0.0]), np.array([3, 0.5, 2])
    )
    # (other gets no gradient: PyTorch gives it zeros, ours leaves it None)
    grads_like_torch(lambda m, x: m.copysign(x, m.tensor([-1, 2, 3.0])), np.array([0.0, 2.0, -1]))
    grads_like_torch(lambda m, x: m.logit(x, eps=0.2), np.array([0.1, 0.5, 0.9]))
    grads_like_torch(lambda m, x: m.atan2(x, x * 2), np.array([0.5, -1.0, 2.0]))
    grads_like_torch(lambda m, x: m.lgamma(x) * 2, np.array([-2.5, 0.3, 7.0]))


def test_float_power_in_place_needs_a_double_tensor(backend: str) -> None:
    like_torch(lambda m, t: t.float_power_(2), np.array([1.5, -2.0]))
    raises_like_torch(
        lambda m, t: t.float_power_(2),
        np.array([1.5]),
        dtype="float32",
        match=["float_power_", "Double"],
    )


# -- host fallback ----------------------------------------------------------------------------


def test_backend_without_a_kernel_gets_the_host_result_and_one_warning(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend lacking an optional primitive runs NumPy on the host; it warns once per
    backend and primitive, except on the NumPy backend, whose arrays are on the host."""
    device = tw.zeros(1).backend
    for cls in type(device).__mro__:
        if "lgamma" in vars(cls):
            monkeypatch.delattr(cls, "lgamma")
    monkeypatch.setattr(host_fallback, "_warned", set())
    x = np.array([-2.5, 0.5, 3.0, 20.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = tw.lgamma(tw.tensor(x))
        second = tw.lgamma(tw.tensor(x, dtype=tw.float32))
    np.testing.assert_allclose(host(first), sp.gammaln(x), rtol=1e-14)
    assert dtype_name(second.dtype) == "float32"
    fallbacks = [w for w in caught if issubclass(w.category, HostFallbackWarning)]
    assert len(fallbacks) == (0 if backend == "numpy" else 1)
    if fallbacks:
        assert "lgamma" in str(fallbacks[0].message)


@pytest.mark.cunumeric
def test_sigmoid_keeps_relative_accuracy_in_both_tails(backend: str) -> None:
    """sigmoid(-100.5) is 2.3e-44, not 0 (0.5 tanh(x / 2) + 0.5 loses the lower tail), and
    the gradient there is as small; expit is the same function."""
    x = np.array([-745.0, -100.5, -40.0, -1.0, 0.0, 1.0, 40.0, 100.5, inf, -inf, nan])
    like_torch(lambda m, t: m.sigmoid(t), x)
    like_torch(lambda m, t: m.special.expit(t), x)
    grads_like_torch(lambda m, t: m.sigmoid(t).sum(), x[:-3])
