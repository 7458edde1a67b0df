"""``tw.testing.assert_close`` against ``torch.testing.assert_close``: the same verdicts and
the same failure messages (up to the module name in dtype and Size reprs)."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

NAN, INF = float("nan"), float("inf")


def _t(m: Any, values: Any, dtype: str = "float32") -> Any:
    return m.tensor(np.asarray(values), dtype=getattr(m, dtype))


#: name -> fn(m) giving (actual, expected, keyword arguments)
CASES: dict[str, Callable[[Any], tuple]] = {
    "equal": lambda m: (_t(m, [1.0, 2.0]), _t(m, [1.0, 2.0]), {}),
    "within float32 tolerance": lambda m: (_t(m, [1.0]), _t(m, [1.0 + 1e-6]), {}),
    "float32 mismatch": lambda m: (_t(m, [1.0, 2.0, 3.0]), _t(m, [1.0, 2.1, 3.0]), {}),
    "float64 2-d": lambda m: (
        _t(m, [[1.0, 2.0], [3.0, 4.0]], "float64"),
        _t(m, [[1.0, 2.0], [3.0, 5.0]], "float64"),
        {},
    ),
    "float16": lambda m: (_t(m, [1.0, 2.0], "float16"), _t(m, [1.0, 2.01], "float16"), {}),
    "int64": lambda m: (_t(m, [1, 2, 3], "int64"), _t(m, [1, 2, 4], "int64"), {}),
    "bool": lambda m: (_t(m, [True, False], "bool"), _t(m, [True, True], "bool"), {}),
    "dtype": lambda m: (_t(m, [1.0]), _t(m, [1.0], "float64"), {}),
    "no dtype check": lambda m: (
        _t(m, [1.0, 2.0]),
        _t(m, [1.0, 2.5], "float64"),
        {"check_dtype": False},
    ),  # fmt: skip
    "shape": lambda m: (_t(m, [1.0, 2.0]), _t(m, [1.0, 2.0, 3.0]), {}),
    "nan": lambda m: (_t(m, [1.0, NAN]), _t(m, [2.0, NAN]), {}),
    "equal_nan": lambda m: (_t(m, [NAN]), _t(m, [NAN]), {"equal_nan": True}),
    "inf": lambda m: (_t(m, [INF]), _t(m, [-INF]), {}),
    "zero expected": lambda m: (_t(m, [1.0, 2.0]), _t(m, [0.0, 2.0]), {}),
    "tolerances": lambda m: (_t(m, [1.0]), _t(m, [1.5]), {"rtol": 0.5, "atol": 0.0}),
    "int tolerances": lambda m: (
        _t(m, [1, 2], "int64"),
        _t(m, [1, 3], "int64"),
        {"rtol": 0.5, "atol": 0},
    ),  # fmt: skip
    "only rtol": lambda m: (_t(m, [1.0]), _t(m, [1.5]), {"rtol": 0.1}),
    "message": lambda m: (_t(m, [1.0]), _t(m, [1.5]), {"msg": "custom"}),
    "message function": lambda m: (_t(m, [1.0]), _t(m, [1.5]), {"msg": lambda s: "X" + s}),
    "0-d": lambda m: (_t(m, 2.0), _t(m, 3.0), {}),
    "floats": lambda m: (1.0, 1.1, {}),
    "ints": lambda m: (1, 2, {}),
    "float and int": lambda m: (1.0, 1, {}),
    "booleans": lambda m: (True, False, {}),
    "none": lambda m: (None, 1, {}),
    "tensor and float": lambda m: (_t(m, 1.0), 1.0, {}),
    "strings": lambda m: ("a", "a", {}),
    "sequence": lambda m: ([_t(m, [1.0]), _t(m, [2.0])], [_t(m, [1.0]), _t(m, [2.5])], {}),
    "nested": lambda m: ({"a": [1.0, 2.0]}, {"a": [1.0, 3.0]}, {}),
    "lengths": lambda m: ([1.0, 2.0], [1.0, 2.0, 3.0], {}),
    "keys": lambda m: ({"a": 1.0}, {"b": 1.0}, {}),
    "list and tuple": lambda m: ([1, 2], (1, 2), {}),
}


def _verdict(m: Any, case: Callable[[Any], tuple]) -> tuple:
    actual, expected, kwargs = case(m)
    try:
        m.testing.assert_close(actual, expected, **kwargs)
    except Exception as e:  # noqa: BLE001  (the verdict is what is compared)
        message = re.sub(r"\b(torch|tensorweaver(\.tensor)?|tw)\.", "M.", str(e))
        return type(e).__name__, message
    return None


@pytest.mark.parametrize("name", list(CASES))
def test_like_torch(backend: str, name: str) -> None:
    assert _verdict(tw, CASES[name]) == _verdict(torch, CASES[name])


def test_device_mismatch() -> None:
    a = tw.tensor([1.0])
    with pytest.raises(AssertionError, match="attribute 'device'"):
        tw.testing.assert_close(a, a.to("torch:cpu"))
    tw.testing.assert_close(a, a.to("torch:cpu"), check_device=False)


def test_tensors_that_require_grad() -> None:
    a = tw.tensor([1.0, 2.0], requires_grad=True)
    tw.testing.assert_close(a * 1, a.detach())
