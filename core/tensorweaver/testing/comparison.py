"""``tw.testing.assert_close``: PyTorch's comparison of tensors, numbers and nested
sequences and mappings of them, with its default tolerances and its failure messages."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.tensor import Tensor

#: (rtol, atol) by dtype, as PyTorch's defaults; other dtypes compare exactly.
TOLERANCES = {
    dtypes.float16: (1e-3, 1e-5),
    dtypes.bfloat16: (1.6e-2, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A failed comparison: the exception class to raise and its message."""

    def __init__(self, kind: type[Exception], message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` agree: tensors in shape,
    device, dtype and values (``|actual - expected| <= atol + rtol * |expected|``, default
    tolerances by dtype), numbers likewise, sequences and mappings item by item.
    ``check_layout`` and ``check_stride`` are accepted (tensors have one layout here)."""
    if (rtol is None) != (atol is None):
        raise ValueError(
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
            f"{'rtol' if rtol is None else 'atol'}."
        )
    options = (rtol, atol, equal_nan, check_device, check_dtype)
    path: list[Any] = []
    try:
        _compare(actual, expected, path, options)
    except _Mismatch as failure:
        message = failure.message
        if failure.kind is AssertionError and msg is not None:
            message = msg if isinstance(msg, str) else msg(message)
        if path:
            message += f"\n\nThe failure occurred for item {''.join(str([k]) for k in path)}"
        raise failure.kind(message) from None


def _compare(actual: Any, expected: Any, path: list, options: tuple) -> None:
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        _tensors(actual, expected, *options)
    elif isinstance(actual, Tensor) or isinstance(expected, Tensor):
        _no_pair(actual, expected)
    elif actual is None or expected is None:
        if actual is not expected:
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
    elif isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
    elif _number(actual) and _number(expected):
        _numbers(actual, expected, *options)
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            raise _Mismatch(
                AssertionError,
                "The keys of the mappings do not match:\n"
                + (f"Missing keys in the actual mapping: {sorted(missing)}\n" if missing else "")
                + (f"Additional keys in the actual mapping: {sorted(extra)}" if extra else ""),
            )
        for key in actual:
            path.append(key)
            _compare(actual[key], expected[key], path, options)
            path.pop()
    elif _sequence(actual) and _sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
            )
        for i, (a, e) in enumerate(zip(actual, expected)):
            path.append(i)
            _compare(a, e, path, options)
            path.pop()
    else:
        _no_pair(actual, expected)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)


def _sequence(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str)


def _no_pair(actual: Any, expected: Any) -> None:
    raise _Mismatch(
        TypeError,
        f"No comparison pair was able to handle inputs of type {type(actual)} and "
        f"{type(expected)}.",
    )


def _numbers(
    actual: Any, expected: Any, rtol: Any, atol: Any, equal_nan: bool, _: bool, check_dtype: bool
) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(
            AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}."
        )
    if rtol is None:
        floating = isinstance(actual, float) or isinstance(expected, float)
        rtol, atol = _default_tolerances(dtypes.float64 if floating else dtypes.int64)
    if _close_scalar(actual, expected, rtol, atol, equal_nan):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol))


def _close_scalar(actual: Any, expected: Any, rtol: Any, atol: Any, equal_nan: bool) -> bool:
    if actual == expected:
        return True
    if equal_nan and actual != actual and expected != expected:
        return True
    return abs(actual - expected) <= atol + rtol * abs(expected)


def _tensors(
    actual: Tensor,
    expected: Tensor,
    rtol: Any,
    atol: Any,
    equal_nan: bool,
    check_device: bool,
    check_dtype: bool,
) -> None:
    if actual.shape != expected.shape:
        _attribute("shape", actual.size(), expected.size())
    if check_device and actual.device.name != expected.device.name:
        _attribute("device", actual.device.name, expected.device.name)
    if check_dtype and actual.dtype is not expected.dtype:
        _attribute("dtype", actual.dtype, expected.dtype)
    if rtol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    if actual.dtype is not expected.dtype:
        from tensorweaver.promotion import promote_types

        common = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.device.name != expected.device.name:
        expected = expected.to(actual.device.name)
    x, y = _host(actual), _host(expected)
    floating = actual.dtype.is_floating_point
    if floating:
        matches = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
    elif rtol == 0 and atol == 0:
        matches = x == y
    else:
        matches = np.isclose(x, y, rtol=rtol, atol=atol)
    if bool(np.all(matches)):
        return
    if actual.ndim == 0:
        message = _scalar_message(actual.item(), expected.item(), rtol, atol)
    else:
        message = _tensor_message(x, y, matches, rtol, atol, floating)
    raise _Mismatch(AssertionError, message)


def _default_tolerances(*kinds: Any) -> tuple:
    """The loosest of the default (rtol, atol) of ``kinds``."""
    pairs = [TOLERANCES.get(kind, (0, 0)) for kind in kinds]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _attribute(name: str, actual: Any, expected: Any) -> None:
    raise _Mismatch(
        AssertionError,
        f"The values for attribute '{name}' do not match: {actual} != {expected}.",
    )


def _host(t: Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype is dtypes.bfloat16:  # NumPy has no bfloat16
        t = t.float()
    host = t.backend.to_host(t.native)  # (not __array__: torch's refuses a conj view)
    return host.astype(np.int64) if host.dtype == np.bool_ else host


def _scalar_message(actual: Any, expected: Any, rtol: Any, atol: Any) -> str:
    diff = abs(actual - expected)
    relative = diff / abs(expected) if expected != 0 else (math.nan if diff == 0 else math.inf)
    return _mismatch_message(
        "Scalars", f"Expected {expected} but got {actual}.", diff, None, relative, None, rtol, atol
    )


def _tensor_message(
    x: np.ndarray, y: np.ndarray, matches: np.ndarray, rtol: Any, atol: Any, floating: bool
) -> str:
    total = matches.size
    wrong = total - int(matches.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    if not floating:  # as PyTorch: integer differences in int64, ratios in float32
        x, y = x.astype(np.int64), y.astype(np.int64)
    flat_matches = matches.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.abs(x.reshape(-1) - y.reshape(-1))
        diff[flat_matches] = 0
        relative = diff / np.abs(y.reshape(-1))
        if not floating:
            relative = relative.astype(np.float32)
        relative[flat_matches] = 0
    at_diff, at_relative = int(np.argmax(diff)), int(np.argmax(relative))
    return _mismatch_message(
        "Tensor-likes",
        extra,
        diff[at_diff].item(),
        _index(at_diff, x.shape),
        relative[at_relative].item(),
        _index(at_relative, x.shape),
        rtol,
        atol,
    )


def _index(flat: int, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _mismatch_message(
    what: str,
    extra: str,
    diff: Any,
    diff_at: tuple | None,
    relative: Any,
    relative_at: tuple | None,
    rtol: Any,
    atol: Any,
) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, value, at, tol in (
        ("absolute", diff, diff_at, atol),
        ("relative", relative, relative_at, rtol),
    ):
        line = (
            f"{kind.title()} difference: {value}"
            if at is None
            else f"Greatest {kind} difference: {value} at index {at}"
        )
        lines.append(line if equality else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)
