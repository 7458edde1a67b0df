"""linalg.lu, svdvals, eigvalsh and torch:cpu's whole eig as PyTorch's nodes of saved outputs
(session 32), against real torch 2.13 in float64:

- linalg.lu records one node whose rule is PyTorch's ``linalg_lu_backward`` on the P, L and
  U it keeps (linalg/decomposition_gradients.py ``lu_backward``): a write through the
  ``.data`` of P, L or U reaches backward, and a create_graph backward's graph; under
  saved_tensors_hooks it packs P, L and U as PyTorch's LinalgLuBackward0. Before: numpy
  differentiated the core's decomposition (no write reached it; it packed the decomposition's
  inner values), torch:cpu missed a write into P and, under create_graph, any write, and
  packed nothing; both read a P changed in place, where PyTorch refuses.
- svdvals and eigvalsh with a graph are PyTorch's svd and eigh nodes, which save (and pack)
  U, S, Vh and the eigenvalues and eigenvectors. Before: numpy packed the input, torch:cpu
  nothing.
- torch:cpu's whole eig packs its eigenvalues and eigenvectors (before: one (3, 3) tensor).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradgradcheck
from snippet_outcomes import same, same_each


def _matrix(m: Any, shape: tuple, dtype: str = "float64") -> Any:
    """A fixed, well-conditioned matrix (batch) of ``shape`` (no random draws)."""
    n = int(np.prod(shape))
    a = (m.arange(float(n), dtype=m.float64).reshape(shape) * 0.37).sin()
    a = a + m.eye(shape[-2], shape[-1], dtype=m.float64)
    if dtype == "complex128":
        a = a + 1j * (m.arange(float(n), dtype=m.float64).reshape(shape) * 0.21).cos()
    return a.requires_grad_()


def _weighted(m: Any, o: Any, k: int) -> Any:
    """A weighted sum of the squares of output ``o`` (its ``k``-th; a complex one's moduli):
    the signs and phases of singular vectors and eigenvectors leave it unchanged. (A complex
    one's as its parts' squares, not ``abs() ** 2``: the double backward of a complex abs
    misses a later ``.data`` write, test_linalg_saved_session33.py.)"""
    w = (m.arange(1.0, o.numel() + 1.0, dtype=m.float64).reshape(o.shape) / (3 + k)).sin()
    square = o.real**2 + o.imag**2 if o.is_complex() else o * o
    return (square * w).sum()


def _lu_program(shape: tuple, used: str, dtype: str = "float64") -> Callable:
    """A's gradient from L and/or U (``used``), with a graph, then the second derivative."""

    def program(m: Any) -> Any:
        a = _matrix(m, shape, dtype)
        _, low, up = m.linalg.lu(a)
        loss = sum(_weighted(m, o, k) for k, o in enumerate((low, up)) if "LU"[k] in used)
        (g,) = m.autograd.grad(loss, a, create_graph=True)
        (second,) = m.autograd.grad((g.abs() ** 2).sum(), a)
        return g, second, type(low.grad_fn).__name__

    return program


LU_CASES = {
    f"{shape} {used} {dtype}": _lu_program(shape, used, dtype)
    for shape, used, dtype in [
        ((2, 3, 3), "LU", "float64"),
        ((4, 3), "U", "float64"),  # (tall and wide: the other's gradient None; both in
        ((3, 5), "L", "float64"),  # test_lu_data_writes_reach_backward's tall case)
        ((3, 4), "LU", "complex128"),
    ]
}


def test_lu_gradients_and_second_derivatives_as_torch(backend: str) -> None:
    same_each(LU_CASES, backend, decimals=8)


def _lu_written(k: int) -> Callable:
    """Output ``k`` of lu (P, L, U) doubled through ``.data`` after forward: A's gradient
    with a graph and the second derivative read it, as PyTorch's saved outputs."""

    def program(m: Any) -> Any:
        a = _matrix(m, (4, 3))
        outs = m.linalg.lu(a)
        outs[k].data.mul_(2)
        loss = _weighted(m, outs[1], 0) + (outs[2] ** 3).sum()
        (g,) = m.autograd.grad(loss, a, create_graph=True)
        return g, m.autograd.grad(g.sum(), a)

    return program


def _lu_p_changed_in_place(m: Any) -> Any:
    """P changed in place (not through ``.data``) before backward: refused, as PyTorch's node
    checks the version of every output it saved (before: the changed P was read)."""
    a = _matrix(m, (3, 3))
    perm, low, up = m.linalg.lu(a)
    perm.mul_(2)
    return m.autograd.grad(low.sum() + up.sum(), a)


def test_lu_data_writes_reach_backward(backend: str) -> None:
    programs = {"PLU"[k]: _lu_written(k) for k in range(3)}
    same_each({**programs, "P in place": _lu_p_changed_in_place}, backend, decimals=8)


@pytest.mark.cunumeric
def test_lu_data_write_reaches_backward_on_cunumeric(backend: str) -> None:
    if not backend.startswith("cunumeric"):
        pytest.skip("the cuPyNumeric case (numpy's and torch:cpu's are in the test above)")

    def program(m: Any) -> Any:
        a = _matrix(m, (3, 3))
        _, low, up = m.linalg.lu(a)
        up.data.mul_(2)
        return m.autograd.grad(_weighted(m, low, 0) + _weighted(m, up, 1), a)

    same(program, backend, decimals=8)


#: name -> (whether A is square, f(m, A): the call's differentiable outputs as a tuple).
HOOKED: dict[str, tuple[bool, Callable[[Any, Any], tuple]]] = {
    "lu": (True, lambda m, a: tuple(m.linalg.lu(a))[1:]),
    "lu wide": (False, lambda m, a: tuple(m.linalg.lu(a.mT))[1:]),
    "svdvals": (False, lambda m, a: (m.linalg.svdvals(a),)),
    "eigvalsh": (True, lambda m, a: (m.linalg.eigvalsh(a + a.mT),)),
    "eig": (True, lambda m, a: tuple(m.linalg.eig(a))),
}


def _hooked(name: str) -> Callable:
    """A's gradient where the hooks hand back each packed tensor scaled by 1.5, and the
    shapes packed in order: backward reads what unpack gives, as PyTorch's."""

    def program(m: Any) -> Any:
        square, call = HOOKED[name]
        a = _matrix(m, (3, 3) if square else (4, 3))
        shapes = []

        def pack(t: Any) -> Any:
            shapes.append(tuple(t.shape))
            return t.detach().clone()

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 1.5):
            outs = call(m, a)
        (grad,) = m.autograd.grad(sum(_weighted(m, o, k) for k, o in enumerate(outs)), a)
        return grad, shapes

    return program


def test_saved_tensors_hooks_pack_what_torch_saves(backend: str) -> None:
    same_each({name: _hooked(name) for name in HOOKED}, backend, decimals=8)


def test_lu_second_derivatives_by_finite_differences() -> None:
    rng = np.random.default_rng(32)
    for shape in ((3, 3), (4, 3), (3, 4)):
        weights = tw.tensor(rng.standard_normal(shape))

        def fn(a: Any, weights: Any = weights) -> Any:
            _, low, up = tw.linalg.lu(a)
            return ((low * low).sum() + (up * up * weights[: up.shape[0]]).sum()).reshape(1)

        with tw.device("numpy"):
            gradgradcheck(fn, rng.standard_normal(shape) + 2 * np.eye(*shape))


def _written_after_create_graph(name: str, k: int, dtype: str = "float64") -> Callable:
    """Output ``k`` doubled through ``.data`` between a create_graph backward and the second
    backward, which reads the written output, as PyTorch's double-backward graph reads the
    saved output's memory (batched)."""

    def program(m: Any) -> Any:
        square = name in ("eig", "eigh")
        a = _matrix(m, (2, 3, 3) if square else (2, 4, 3), dtype)
        outs = {
            "qr": lambda: tuple(m.linalg.qr(a)),
            "eigh": lambda: tuple(m.linalg.eigh(a + a.mH)),
            "svd": lambda: tuple(m.linalg.svd(a, full_matrices=False)),
            "eig": lambda: tuple(m.linalg.eig(a)),
            "lu": lambda: tuple(m.linalg.lu(a)),
        }[name]()
        loss = sum(_weighted(m, o, j) for j, o in enumerate(outs) if o.requires_grad)
        (g,) = m.autograd.grad(loss, a, create_graph=True)
        outs[k].data.mul_(2)
        return m.autograd.grad((g.abs() ** 2).sum(), a)

    return program


@pytest.mark.parametrize(
    "device, name, k, dtype",
    [
        ("numpy", "svd", 1, "float64"),
        ("numpy", "svd", 0, "float64"),
        ("numpy", "svd", 2, "complex128"),
        ("numpy", "qr", 0, "float64"),
        ("numpy", "eigh", 1, "float64"),
        ("numpy", "lu", 1, "float64"),
        ("torch:cpu", "lu", 2, "float64"),
        ("torch:cpu", "qr", 1, "float64"),
        ("torch:cpu", "eig", 1, "float64"),
        ("numpy", "eig", 0, "float64"),
        ("numpy", "qr", 0, "complex128"),
        ("torch:cpu", "eigh", 1, "complex128"),
        ("numpy", "lu", 2, "complex128"),
    ],
)
def test_data_write_after_create_graph_reaches_second_backward(
    device: str, name: str, k: int, dtype: str
) -> None:
    same(_written_after_create_graph(name, k, dtype), device, decimals=8)
