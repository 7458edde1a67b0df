"""References for the Tensor tests: NumPy float64 values and PyTorch's own results.

TensorWeaver's API is PyTorch's, so a test writes a call once as ``fn(m, *tensors)`` and runs
it with ``m = tensorweaver`` and ``m = torch`` on the same values: dtype, shape and values of
the two results must agree (PyTorch's semantics are the spec). Values are also compared with
a NumPy float64 reference computed from the same host arrays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from hypothesis import HealthCheck, settings

#: Relative tolerance per result dtype; results are also allowed ``rtol * max|expected|``
#: of absolute error, so sums that cancel to near zero compare fairly.
#: The real dtypes' names, from bool to float64, and with the complex ones.
REAL_DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                    "float32", "float64")  # fmt: skip
DTYPE_NAMES = (*REAL_DTYPE_NAMES, "complex64", "complex128")
RTOL = {"float64": 1e-12, "float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}

#: Hypothesis settings for tests that also take the (function-scoped) ``backend`` fixture:
#: the fixture only selects a device, so sharing it between examples is safe.
HYPOTHESIS = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

#: Input layouts for elementwise ops and reductions: the host shape of the input and the
#: view the op is applied to (the same view on the tensor and on the NumPy reference), so
#: every op also sees 0-d, empty and non-contiguous inputs.
LAYOUTS: dict[str, tuple[tuple[int, ...], Callable[[Any], Any]]] = {
    "matrix": ((3, 4), lambda x: x),
    "scalar": ((), lambda x: x),
    "empty": ((0, 3), lambda x: x),
    "transposed": ((4, 3), lambda x: x.mT),
    "strided": ((3, 8), lambda x: x[:, 1::2]),
}


def dtype_name(dtype: Any) -> str:
    """``float32`` for ``tw.float32`` and for ``torch.float32``."""
    return str(dtype).rsplit(".", 1)[-1]


def supports(dtype: str) -> bool:
    """Whether the current device has ``dtype`` (NumPy has no bfloat16, for one)."""
    try:
        tw.zeros(0, dtype=getattr(tw, dtype))
    except TypeError:
        return False
    return True


def require(*dtypes: str) -> None:
    """Skip the test where the current device lacks one of ``dtypes``."""
    for dtype in dtypes:
        if not supports(dtype):
            pytest.skip(f"{tw.get_backend()} has no {dtype}")


def host(t: Any) -> np.ndarray:
    """A tensor's values as a host NumPy array (bfloat16 arrives as float32)."""
    t = t.detach().resolve_conj()
    if dtype_name(t.dtype) == "bfloat16":
        t = t.float()
    return np.asarray(t.numpy())


def uniform(shape: Sequence[int], low: float = -2.0, high: float = 2.0, seed: int = 0):
    """Float64 host samples in [low, high), reproducible by ``seed``."""
    return np.random.default_rng(seed).uniform(low, high, tuple(shape))


def signed(shape: Sequence[int], low: float = 0.5, high: float = 2.0, seed: int = 0):
    """Float64 host samples of magnitude in [low, high) and random sign: away from zero, so
    divisions, kinks and ties stay out of finite differences' way. Always an array (a 0-d
    one, not a NumPy scalar, for shape ())."""
    rng = np.random.default_rng(seed)
    magnitude = rng.uniform(low, high, tuple(shape))
    return np.asarray(np.where(rng.uniform(size=tuple(shape)) < 0.5, -magnitude, magnitude))


def make(m: Any, value: Any, dtype: str | None = None, requires_grad: bool = False) -> Any:
    """``value`` (host array, list or scalar) as a tensor of module ``m`` (tw or torch)."""
    if dtype is None:
        return m.tensor(value, requires_grad=requires_grad)
    return m.tensor(value, dtype=getattr(m, dtype), requires_grad=requires_grad)


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str, what: str = "") -> None:
    """Host values agree: exactly for integers and bools, within ``RTOL[dtype]`` for floats."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if dtype not in RTOL:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    finite = np.abs(expected[np.isfinite(expected)])
    atol = RTOL[dtype] * (float(finite.max()) if finite.size else 0.0)
    np.testing.assert_allclose(actual, expected, rtol=RTOL[dtype], atol=atol, err_msg=what)


def assert_values(actual: Any, expected: Any, dtype: str | None = None) -> None:
    """Tensor ``actual`` has the shape and values of the host reference ``expected``."""
    expected = np.asarray(expected)
    name = dtype_name(actual.dtype)
    if dtype is not None:
        assert name == dtype, f"dtype {name}, expected {dtype}"
    assert tuple(actual.shape) == expected.shape, f"shape {tuple(actual.shape)} != {expected.shape}"
    assert_close(host(actual), expected, name, f"{name} result")


def assert_like_torch(ours: Any, theirs: Any, path: str = "result") -> None:
    """A TensorWeaver result equals PyTorch's: tensors (dtype, shape, values), tuples
    (also ``(values, indices)`` results), lists, Python scalars and None."""
    if isinstance(theirs, torch.Tensor):
        assert hasattr(ours, "dtype"), f"{path}: {type(ours).__name__}, expected a tensor"
        name, expected = dtype_name(ours.dtype), dtype_name(theirs.dtype)
        assert name == expected, f"{path}: dtype {name}, PyTorch gives {expected}"
        shape, want = tuple(ours.shape), tuple(theirs.shape)
        assert shape == want, f"{path}: shape {shape}, PyTorch gives {want}"
        assert_close(host(ours), host(theirs), name, path)
    elif hasattr(theirs, "indices") and hasattr(theirs, "values"):
        assert_like_torch(ours.values, theirs.values, f"{path}.values")
        assert_like_torch(ours.indices, theirs.indices, f"{path}.indices")
        values, indices = ours  # unpacks like a tuple
        assert values is ours.values and indices is ours.indices, f"{path}: unpacking"
    elif isinstance(theirs, (tuple, list)):
        assert isinstance(ours, type(theirs)), f"{path}: {type(ours)}, PyTorch gives {type(theirs)}"
        assert len(ours) == len(theirs), f"{path}: length {len(ours)}, PyTorch gives {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_like_torch(a, b, f"{path}[{i}]")
    elif theirs is None:
        assert ours is None, f"{path}: {ours!r}, PyTorch gives None"
    else:
        assert type(ours) is type(theirs), f"{path}: {ours!r}, PyTorch gives {theirs!r}"
        assert ours == pytest.approx(theirs, rel=1e-6, nan_ok=True), f"{path}: {ours} != {theirs}"


def _as(m: Any, arg: Any, dtype: str | None) -> Any:
    return make(m, arg, dtype) if isinstance(arg, np.ndarray) else arg


def like_torch(fn: Callable[..., Any], *args: Any, dtype: str | None = None) -> Any:
    """Run ``fn(m, *args)`` on tensorweaver and on torch, host arrays in ``args`` made tensors
    (of ``dtype`` if given, else their NumPy dtype); assert the results agree; return ours."""
    ours = fn(tw, *(_as(tw, a, dtype) for a in args))
    theirs = fn(torch, *(_as(torch, a, dtype) for a in args))
    assert_like_torch(ours, theirs)
    return ours


def grads_like_torch(fn: Callable[..., Any], *arrays: np.ndarray, seed: int = 0) -> None:
    """The gradients ``fn(m, *leaves)`` gives its float64 leaves equal PyTorch's (for cases
    finite differences cannot decide, such as ties in max or clamp at its bounds)."""
    grads = []
    for m in (tw, torch):
        leaves = [make(m, a, "float64", requires_grad=True) for a in arrays]
        out = fn(m, *leaves)
        cotangent = np.random.default_rng(seed).standard_normal(tuple(out.shape))
        out.backward(make(m, cotangent))
        grads.append(tuple(leaf.grad for leaf in leaves))
    assert_like_torch(grads[0], grads[1], "grads")


def builtin_class(exc: BaseException) -> type[BaseException]:
    """The most derived built-in exception class of ``exc`` (PyTorch's errors derive from them)."""
    return next(c for c in type(exc).__mro__ if c.__module__ == "builtins")


def raises_like_torch(
    fn: Callable[..., Any], *args: Any, match: Sequence[str] = (), dtype: str | None = None
) -> BaseException:
    """``fn(m, *args)`` raises on tensorweaver an error of the built-in class PyTorch raises,
    whose message matches every regular expression in ``match`` (case-insensitive)."""
    with pytest.raises(Exception) as theirs:
        fn(torch, *(_as(torch, a, dtype) for a in args))
    with pytest.raises(builtin_class(theirs.value)) as ours:
        fn(tw, *(_as(tw, a, dtype) for a in args))
    message = str(ours.value)
    for pattern in match:
        assert re.search(pattern, message, re.IGNORECASE), f"{pattern!r} not in {message!r}"
    return ours.value


def shape_pattern(shape: Sequence[int]) -> str:
    """A regex for ``shape`` as (2, 3), [2, 3] or torch.Size([2, 3]) would print it."""
    inner = ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "")
    return r"[\[(]" + inner.replace(",", ",?") + r"[\])]"
