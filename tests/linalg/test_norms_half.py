"""linalg.vector_norm, matrix_norm and norm of float16 and bfloat16 tensors against PyTorch
2.13, which computes in them (summing in float32, the result rounded to the input's dtype),
and their ``dtype=`` rules.

Before: every float16/bfloat16 input raised RuntimeError ("Expected a floating point or
complex tensor"), also outside autocast; a float16 input with ``dtype=tw.bfloat16`` would have
been taken, a real one with a complex ``dtype=`` too, where PyTorch raises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 5)).astype(np.float32)
ORDS = [2, 1, 0, 3.5, -1, math.inf, -math.inf]


def _halves(backend: str) -> list[str]:
    """The half dtypes ``backend`` has (NumPy and cuPyNumeric have no bfloat16)."""
    return ["float16", "bfloat16"] if backend == "torch:cpu" else ["float16"]


def _norm(
    m: object, values: np.ndarray, dtype: str, fn: str = "vector_norm", **kwargs: object
) -> tuple[str, np.ndarray]:
    x = m.tensor(values).to(getattr(m, dtype))
    out = getattr(m.linalg, fn)(x, **kwargs)
    return str(out.dtype).rsplit(".", 1)[-1], np.asarray(out.float())


@pytest.mark.cunumeric
@pytest.mark.parametrize("ord", ORDS)
def test_half_vector_norm_like_torch(backend: str, ord: float) -> None:  # noqa: A002
    for dtype in _halves(backend):
        for kwargs in ({"ord": ord}, {"ord": ord, "dim": 1, "keepdim": True}):
            with tw.device(backend):
                ours = _norm(tw, X, dtype, **kwargs)
            theirs = _norm(torch, X, dtype, **kwargs)
            assert ours[0] == theirs[0], (dtype, kwargs)
            np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-2, err_msg=f"{dtype} {kwargs}")


M = RNG.standard_normal((2, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_half_matrix_norm_like_torch(backend: str, ord: object) -> None:  # noqa: A002
    for dtype in _halves(backend):
        for fn, kwargs in (
            ("matrix_norm", {"ord": ord}),
            ("matrix_norm", {"ord": ord, "dim": (0, 2), "keepdim": True}),
            ("norm", {"ord": ord, "dim": (1, 2)}),
            ("norm", {}),
        ):
            with tw.device(backend):
                ours = _norm(tw, M, dtype, fn, **kwargs)
            theirs = _norm(torch, M, dtype, fn, **kwargs)
            assert ours[0] == theirs[0], (dtype, fn, kwargs)
            np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-2, err_msg=f"{fn} {kwargs}")


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_half_matrix_norm_of_singular_values_raises_like_torch(ord: object) -> None:  # noqa: A002
    for m in (tw, torch):
        with tw.device("torch:cpu"), pytest.raises(RuntimeError, match="Low precision dtypes"):
            m.linalg.matrix_norm(m.tensor(M).to(m.bfloat16), ord)


def test_half_vector_norm_sums_in_float32(backend: str) -> None:
    # 1000 squares of 300 overflow float16 (65504); PyTorch's sum in float32 does not.
    big = np.full((100, 10), 300.0, dtype=np.float32)
    for dtype in _halves(backend):
        for fn in ("vector_norm", "matrix_norm"):
            with tw.device(backend):
                ours = _norm(tw, big, dtype, fn)
            theirs = _norm(torch, big, dtype, fn)
            assert ours[0] == theirs[0] and np.isfinite(ours[1])
            np.testing.assert_array_equal(ours[1], theirs[1])


def test_half_vector_norm_gradient_like_torch(backend: str) -> None:
    for dtype in _halves(backend):
        with tw.device(backend):
            x = tw.tensor(X).to(getattr(tw, dtype)).requires_grad_()
            tw.linalg.vector_norm(x).backward()
            ours = (x.grad.dtype, np.asarray(x.grad.float()))
        t = torch.tensor(X).to(getattr(torch, dtype)).requires_grad_()
        torch.linalg.vector_norm(t).backward()
        assert str(ours[0]).rsplit(".", 1)[-1] == str(t.grad.dtype).rsplit(".", 1)[-1]
        np.testing.assert_allclose(ours[1], t.grad.float().numpy(), rtol=1e-2, atol=1e-3)


#: (input dtype, dtype=): PyTorch's rules (no narrowing, float16 <-> bfloat16 included; real
#: for real inputs, complex for complex ones; floating point or complex only).
DTYPE_CASES = [
    ("float16", "float32"),
    ("float16", "float64"),
    ("bfloat16", "float64"),
    ("float16", "bfloat16"),
    ("bfloat16", "float16"),
    ("float32", "float16"),
    ("float64", "float32"),
    ("float32", "complex64"),
    ("complex64", "float64"),
    ("complex64", "complex128"),
    ("float32", "int64"),
    ("int64", None),
]


def _dtype_outcome(m: object, given: str, dtype: str | None, fn: str) -> str:
    x = m.tensor(X).to(getattr(m, given))
    try:
        out = getattr(m.linalg, fn)(x, dtype=None if dtype is None else getattr(m, dtype))
    except RuntimeError as exc:
        return "RuntimeError: " + str(exc).split(":")[1].split(",")[0].split("(")[0].strip()
    return str(out.dtype).rsplit(".", 1)[-1]


@pytest.mark.parametrize("fn", ["vector_norm", "matrix_norm"])
@pytest.mark.parametrize(("given", "dtype"), DTYPE_CASES)
def test_norm_dtype_argument_like_torch(given: str, dtype: str | None, fn: str) -> None:
    with tw.device("torch:cpu"):
        ours = _dtype_outcome(tw, given, dtype, fn)
    theirs = _dtype_outcome(torch, given, dtype, fn)
    if theirs.startswith("RuntimeError"):
        assert ours.startswith("RuntimeError"), (ours, theirs)
        # the gist: the same first words (PyTorch names dtypes as Half, ours as float16)
        assert ours.split()[1:3] == theirs.split()[1:3], (ours, theirs)
    else:
        assert ours == theirs
