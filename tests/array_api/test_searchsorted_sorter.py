"""``tensorweaver.array_api.searchsorted`` with a sorter of any integer dtype, as the standard
allows (``array_api_strict`` is the reference); ``tw.searchsorted`` itself takes only int64
sorters, as PyTorch's."""

from __future__ import annotations

import array_api_strict as xs
import numpy as np
import pytest
import tensorweaver.array_api as xp

SEQUENCE = np.array([3.0, 1.0, 2.0, 0.5])
VALUES = np.array([0.75, 2.5, 3.0, -1.0])
SORTER = np.argsort(SEQUENCE, kind="stable")


def _reference(side: str, dtype: str) -> np.ndarray:
    sorter = xs.asarray(SORTER.astype(dtype))
    return np.asarray(
        xs.searchsorted(xs.asarray(SEQUENCE), xs.asarray(VALUES), side=side, sorter=sorter)
    )


@pytest.mark.parametrize("side", ["left", "right"])
def test_an_int64_sorter_like_array_api_strict(side: str) -> None:
    sorter = xp.asarray(SORTER.astype("int64"))
    out = xp.searchsorted(xp.asarray(SEQUENCE), xp.asarray(VALUES), side=side, sorter=sorter)
    np.testing.assert_array_equal(np.asarray(out), _reference(side, "int64"))


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8"])
def test_a_narrow_integer_sorter_like_array_api_strict(dtype: str) -> None:
    sorter = xp.asarray(SORTER.astype(dtype))
    out = xp.searchsorted(xp.asarray(SEQUENCE), xp.asarray(VALUES), sorter=sorter)
    np.testing.assert_array_equal(np.asarray(out), _reference("left", dtype))
