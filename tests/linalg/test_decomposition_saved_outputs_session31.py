"""linalg.qr, eigh, svd and eig record PyTorch's one node reading the outputs it saved (Q and
R, the eigenvalues and eigenvectors, U, S and Vh): a write through ``.data`` into an output
between forward and backward reaches backward, as PyTorch's saved outputs are the outputs'
memory; a ``.data =`` rebinding does not (PyTorch's node keeps the old memory). Values and
gradients against real torch 2.13 (tolerances, not LAPACK's rounding), float32/float64,
complex, batched, tall and wide, each output used alone; gradients by finite differences.

Before (session 30): numpy and cuPyNumeric differentiated the core's decomposition (its
graph held no Q or R the write could reach), torch:cpu's ``output_rewritten`` did not reach
a multi-output call's node (eig's: its ``linalg_output`` nodes): ``Q.data.mul_(2)`` left
the gradient as without the write.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck

#: name -> f(m, A) giving the decomposition's outputs as a tuple.
DECOMPOSE: dict[str, Callable[[Any, Any], tuple]] = {
    "qr": lambda m, a: tuple(m.linalg.qr(a)),
    "qr complete": lambda m, a: tuple(m.linalg.qr(a, mode="complete")),
    "eigh": lambda m, a: tuple(m.linalg.eigh(a + a.mH)),
    "eigh U": lambda m, a: tuple(m.linalg.eigh(a + a.mH, UPLO="U")),
    "svd": lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)),
    "svd full": lambda m, a: tuple(m.linalg.svd(a)),
    "eig": lambda m, a: tuple(m.linalg.eig(a)),
}


def _matrix(m: Any, shape: tuple, dtype: str) -> Any:
    """A fixed, well-conditioned matrix (batch) of ``shape`` (no random draws)."""
    n = int(np.prod(shape))
    real = (m.arange(float(n), dtype=m.float64).reshape(shape) * 0.37).sin()
    real = real + m.eye(shape[-2], shape[-1], dtype=m.float64)
    if dtype == "complex128":
        imag = (m.arange(float(n), dtype=m.float64).reshape(shape) * 0.71).cos() / 2
        return m.complex(real, imag)
    return real.to(getattr(m, dtype))


def _weighted(m: Any, out: Any) -> Any:
    """A loss of ``out`` that its sign or phase (an eigenvector's, a singular vector's) leaves
    unchanged: its squared magnitudes, weighted by position."""
    square = (out.abs() ** 2) if out.is_complex() else out * out
    weights = m.arange(1.0, out.numel() + 1.0, dtype=square.dtype).reshape(out.shape) / 7
    return (square * weights.sin()).sum()


def _program(name: str, shape: tuple, dtype: str, used: tuple, write: str | None) -> Callable:
    """The outputs' sign-free forms and A's gradient of the loss of the outputs ``used``,
    with output ``write[0]`` written (``"mul_"``, ``"add_"`` or ``"="``) between forward
    and backward."""

    def program(m: Any) -> Any:
        a = _matrix(m, shape, dtype).requires_grad_()
        outs = DECOMPOSE[name](m, a)
        if write is not None:
            k, how = write
            t = outs[k]
            if how == "mul_":
                t.data.mul_(2)
            elif how == "add_":
                t.data.add_(0.25)
            else:
                t.data = t.data * 3
        loss = sum(_weighted(m, outs[k]) for k in used)
        (grad,) = m.autograd.grad(loss, a)
        shown = [(o.abs() if o.is_complex() else o).detach().abs() for o in outs]
        return [*shown, grad]

    return program


def _same(program: Callable, spec: str, dtype: str) -> None:
    """``program`` gives on ``spec`` what it gives under torch, to a tolerance of its dtype."""
    expected = [t.resolve_conj().numpy() for t in program(torch)]
    with tw.device(spec):
        found = [np.asarray(t.tolist()) for t in program(tw)]
    tight = dtype != "float32"
    for e, f in zip(expected, found):
        assert e.shape == f.shape
        np.testing.assert_allclose(f, e, rtol=1e-9 if tight else 1e-4, atol=1e-9 if tight else 1e-4)


#: (name, shape, written output, how): each output of each decomposition written through .data.
WRITES = [
    ("qr", (4, 3), (0, "mul_")),
    ("qr", (4, 3), (1, "mul_")),
    ("qr", (3, 4), (0, "mul_")),
    ("qr", (3, 4), (1, "add_")),
    ("qr complete", (3, 4), (1, "mul_")),
    ("qr", (4, 3), (0, "=")),
    ("eigh", (3, 3), (0, "mul_")),
    ("eigh", (3, 3), (1, "mul_")),
    ("eigh", (3, 3), (1, "=")),
    ("svd", (4, 3), (0, "mul_")),
    ("svd", (3, 4), (1, "add_")),
    ("svd", (3, 4), (2, "mul_")),
    ("svd full", (4, 3), (0, "mul_")),
]


#: The writes also run on cuPyNumeric.
ON_CUNUMERIC = [WRITES[0], WRITES[7], WRITES[9]]


@pytest.mark.cunumeric
@pytest.mark.parametrize("name, shape, write", WRITES, ids=str)
def test_data_write_into_an_output_reaches_backward(
    backend: str, name: str, shape: tuple, write: tuple
) -> None:
    if backend.startswith("cunumeric") and (name, shape, write) not in ON_CUNUMERIC:
        pytest.skip("cuPyNumeric: one write per decomposition (each op there costs ~0.4 ms)")
    used = tuple(range(3 if name.startswith("svd") else 2))  # (every output)
    _same(_program(name, shape, "float64", used, write), backend, "float64")


#: eig's outputs, each written through .data: torch:cpu's whole eig reads its record.
EIG_WRITES = [(0, "mul_"), (1, "mul_")]


@pytest.mark.parametrize("write", EIG_WRITES, ids=str)
def test_data_write_into_an_eig_output_reaches_backward(write: tuple) -> None:
    _same(_program("eig", (3, 3), "float64", (0, 1), write), "torch:cpu", "float64")


@pytest.mark.parametrize("write", EIG_WRITES, ids=str)
def test_data_write_into_an_eig_output_reaches_backward_on_numpy(write: tuple) -> None:
    _same(_program("eig", (3, 3), "float64", (0, 1), write), "numpy", "float64")


#: (name, shape, dtype, outputs used): values and gradients as torch's.
CASES = [
    ("qr", (4, 3), "float64", (0, 1)),
    ("qr", (3, 4), "float64", (0,)),
    ("qr", (2, 3, 4), "float32", (1,)),
    ("qr", (2, 4, 3), "complex128", (0, 1)),
    ("qr complete", (3, 3), "float64", (0,)),
    ("qr complete", (3, 4), "complex128", (1,)),
    ("eigh", (2, 3, 3), "float64", (0, 1)),
    ("eigh", (3, 3), "float32", (1,)),
    ("eigh U", (3, 3), "complex128", (0, 1)),
    ("eigh", (3, 3), "complex128", (0,)),
    ("svd", (2, 4, 3), "float64", (0, 1, 2)),
    ("svd", (3, 4), "float32", (2,)),
    ("svd", (3, 4), "complex128", (0, 1, 2)),
    ("svd", (4, 3), "complex128", (0,)),
    ("svd full", (3, 4), "float64", (2,)),
    ("svd full", (4, 3), "float64", (1,)),
    ("eig", (3, 3), "float64", (0, 1)),
    ("eig", (2, 3, 3), "complex128", (1,)),
    ("eig", (3, 3), "float32", (0,)),
]


@pytest.mark.parametrize("name, shape, dtype, used", CASES, ids=str)
def test_values_and_gradients_as_torch(
    backend: str, name: str, shape: tuple, dtype: str, used: tuple
) -> None:
    _same(_program(name, shape, dtype, used, None), backend, dtype)


def test_complete_qr_of_a_tall_matrix_refused_at_backward(backend: str) -> None:
    def program(m: Any) -> Any:
        a = _matrix(m, (4, 3), "float64").requires_grad_()
        q, r = m.linalg.qr(a, mode="complete")
        try:
            q.sum().backward()
        except RuntimeError as e:
            return str(e)
        return None

    assert program(tw) == program(torch)


def _loss(name: str, weights: Any) -> Callable:
    """A differentiable scalar (as a 1-vector) of ``name``'s outputs of a float64 A."""

    def fn(a: Any) -> Any:
        outs = DECOMPOSE[name](tw, a)
        losses = [_weighted(tw, o) * (k + 1) for k, o in enumerate(outs)]
        return (sum(losses) + (a * weights).sum()).reshape(1)

    return fn


@pytest.mark.parametrize("name", ["qr", "eigh", "svd"])
def test_gradients_by_finite_differences(backend: str, name: str) -> None:
    rng = np.random.default_rng(31)
    for shape in ((3, 3), (4, 3), (3, 4)) if name != "eigh" else ((3, 3),):
        weights = tw.tensor(rng.standard_normal(shape))
        gradcheck(_loss(name, weights), rng.standard_normal(shape))


def _packed_by_hooks(name: str) -> Callable:
    def program(m: Any) -> Any:
        a = _matrix(m, (3, 3) if name == "eigh" else (4, 3), "float64").requires_grad_()
        packed = []

        def pack(t: Any) -> Any:
            packed.append(tuple(t.shape))
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            DECOMPOSE[name](m, a)
        return sorted(packed)

    return program


@pytest.mark.parametrize("name", ["qr", "eigh", "svd"])
def test_saved_tensors_hooks_pack_the_saved_outputs(backend: str, name: str) -> None:
    expected = _packed_by_hooks(name)(torch)
    assert _packed_by_hooks(name)(tw) == expected
