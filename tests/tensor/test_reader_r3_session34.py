"""Reader r3, session 34: an integer ``add``/``sub``/``add_`` given a NumPy ``float32`` or
``bool_`` alpha computed an answer (``b * 0.5`` truncated) where torch raises; a float16 one
given ``np.bool_`` raised on torch:cpu where torch adds (it reads a NumPy bool_ as a float);
``is_contiguous`` took None or a string for its memory format."""

from __future__ import annotations

import numpy as np
import pytest
from snippet_outcomes import same


def _integer_add_numpy_float_alpha(m):
    a = m.tensor([1, 2, 3])
    return m.add(a, m.tensor([4, 5, 6]), alpha=np.float32(0.5))


def _integer_sub_numpy_int_alpha(m):
    a = m.tensor([1, 2, 3])
    return m.sub(a, m.tensor([4, 5, 6]), alpha=np.int64(2))


def _integer_add_inplace_numpy_bool_alpha(m):
    a = m.tensor([1, 2, 3])
    return a.add_(m.tensor([4, 5, 6]), alpha=np.bool_(True))


def _half_add_numpy_bool_alpha(m):
    a = m.tensor([1.0, 2.0], dtype=m.float16)
    return m.add(a, m.tensor([3.0, 4.0], dtype=m.float16), alpha=np.bool_(True))


def _float_add_numpy_float32_alpha(m):
    a = m.tensor([1.0, 2.0], dtype=m.float64)
    return m.add(a, m.tensor([3.0, 4.0], dtype=m.float64), alpha=np.float32(0.25))


@pytest.mark.parametrize(
    "program",
    [
        _integer_add_numpy_float_alpha,
        _integer_sub_numpy_int_alpha,
        _integer_add_inplace_numpy_bool_alpha,
        _half_add_numpy_bool_alpha,
        _float_add_numpy_float32_alpha,
    ],
)
def test_add_with_a_numpy_scalar_alpha(spec: str, program) -> None:
    same(program, spec)


def _is_contiguous_of(form):
    def program(m):
        x = m.zeros(2, 3, 4, 5).permute(0, 2, 3, 1)
        if form == "positional":
            return x.is_contiguous(m.channels_last)
        given = {"None": None, "text": "channels_last", "format": m.channels_last}
        return (
            x.is_contiguous() if form == "default" else x.is_contiguous(memory_format=given[form])
        )

    return program


@pytest.mark.parametrize("form", ["default", "None", "text", "format", "positional"])
def test_is_contiguous_takes_only_a_memory_format(form: str) -> None:
    # (the memory_format was read by its str(): None or a string was taken, where torch
    # raises TypeError)
    same(_is_contiguous_of(form), "numpy")
