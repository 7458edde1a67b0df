"""linalg.qr, eigh, svd and eig as PyTorch's node of saved outputs, second wave of session 31:

- saved_tensors_hooks pack the outputs PyTorch's node saves (Q and R; L and V; U, S and Vh;
  eig's L and V on numpy) and backward reads what unpack gives; before, no output was packed
  and a hook that changes what it hands back changed no gradient.
- numpy's (and cuPyNumeric's) eig records one node reading its saved outputs: a write
  through ``.data`` into the eigenvalues or eigenvectors reaches backward (before: the
  primitive's node kept a copy the write missed).
- Under ``create_graph`` the formula runs on the outputs attached to the call's node, as
  PyTorch's saved outputs: a write through ``.data`` reaches the first backward's graph too,
  and a second backward goes through the call once with each output's whole gradient
  (before: the decomposition recomputed from A, which the write missed).

Compared with real torch 2.13 in float64; second derivatives by finite differences.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradgradcheck
from snippet_outcomes import same

#: name -> f(m, A): the decomposition's outputs, as a tuple.
DECOMPOSE: dict[str, Callable[[Any, Any], tuple]] = {
    "qr": lambda m, a: tuple(m.linalg.qr(a)),
    "eigh": lambda m, a: tuple(m.linalg.eigh(a + a.mT)),
    "svd": lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)),
    "eig": lambda m, a: tuple(m.linalg.eig(a)),
}


def _matrix(m: Any, square: bool) -> Any:
    """A fixed, well-conditioned float64 matrix (4 x 3, or 3 x 3 where ``square``)."""
    shape = (3, 3) if square else (4, 3)
    a = (m.arange(12.0, dtype=m.float64)[: shape[0] * shape[1]].reshape(shape) * 0.37).sin()
    return (a + m.eye(*shape, dtype=m.float64)).requires_grad_()


def _loss(m: Any, outs: tuple) -> Any:
    """A loss of every output that their signs and phases leave unchanged."""
    total = 0
    for k, o in enumerate(outs):
        square = o.abs() ** 2 if o.is_complex() else o * o
        weights = (m.arange(1.0, o.numel() + 1.0, dtype=m.float64).reshape(o.shape) / 7).sin()
        total = total + (square * weights).sum() * (k + 1)
    return total


def _hooked(name: str) -> Callable:
    """A's gradient where the hooks hand back each packed output scaled by 1.5, and the
    shapes packed: backward reads what unpack gives, as PyTorch's."""

    def program(m: Any) -> Any:
        a = _matrix(m, name in ("eigh", "eig"))
        shapes = []

        def pack(t: Any) -> Any:
            shapes.append(tuple(t.shape))
            return t.detach().clone()

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 1.5):
            outs = DECOMPOSE[name](m, a)
        (grad,) = m.autograd.grad(_loss(m, outs), a)
        return grad, sorted(shapes)

    return program


@pytest.mark.parametrize("name", ["qr", "eigh", "svd"])
def test_unpacked_outputs_are_what_backward_reads(backend: str, name: str) -> None:
    same(_hooked(name), backend)


def test_unpacked_eig_outputs_are_what_backward_reads_on_numpy() -> None:
    same(_hooked("eig"), "numpy")


def _written_then_twice(name: str, k: int) -> Callable:
    """Output ``k`` doubled through ``.data`` after forward, then A's gradient with a graph
    and the gradient of its weighted sum: both read the written output, as PyTorch's."""

    def program(m: Any) -> Any:
        a = _matrix(m, name in ("eigh", "eig"))
        outs = DECOMPOSE[name](m, a)
        outs[k].data.mul_(2)
        (grad,) = m.autograd.grad(_loss(m, outs), a, create_graph=True)
        weights = (m.arange(float(a.numel()), dtype=m.float64).reshape(a.shape) * 0.3).cos()
        (second,) = m.autograd.grad((grad * weights).sum(), a)
        return grad, second

    return program


WRITES = [("qr", 0), ("qr", 1), ("eigh", 1), ("svd", 0), ("svd", 1), ("eig", 1)]


@pytest.mark.parametrize("name, k", WRITES, ids=str)
def test_data_write_reaches_create_graph_backward_on_numpy(name: str, k: int) -> None:
    same(_written_then_twice(name, k), "numpy")


@pytest.mark.parametrize("name, k", WRITES[:5], ids=str)
def test_data_write_reaches_create_graph_backward_on_torch(name: str, k: int) -> None:
    same(_written_then_twice(name, k), "torch:cpu")


@pytest.mark.cunumeric
def test_data_write_into_eig_vectors_reaches_backward_on_cunumeric(backend: str) -> None:
    if not backend.startswith("cunumeric"):
        pytest.skip("the cuPyNumeric case (numpy's is in the tests above)")

    def program(m: Any) -> Any:
        a = _matrix(m, True)
        values, vectors = m.linalg.eig(a)
        vectors.data.mul_(2)
        (grad,) = m.autograd.grad(_loss(m, (values, vectors)), a)
        return grad

    same(program, backend)


@pytest.mark.parametrize("name", ["qr", "eigh", "svd", "eig"])
def test_second_derivatives_by_finite_differences_on_numpy(name: str) -> None:
    rng = np.random.default_rng(31)
    shape = (3, 3) if name in ("eigh", "eig") else (4, 3)
    start = rng.standard_normal(shape) + 2 * np.eye(*shape)

    def fn(a: Any) -> Any:
        return _loss(tw, DECOMPOSE[name](tw, a)).reshape(1)

    with tw.device("numpy"):
        gradgradcheck(fn, start)


def test_unpacked_eig_outputs_are_what_backward_reads_on_torch() -> None:
    same(_hooked("eig"), "torch:cpu")
