"""Reader r2, session 33: linalg defects older than this session (strict xfails)."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import refused_in_place, same


def _matrix(m: Any) -> Any:
    """A well-conditioned 3x3 float64 leaf."""
    a = m.tensor([[2.5, 0.3, -0.4], [0.1, 1.8, 0.6], [-0.7, 0.2, 2.2]], dtype=m.float64)
    return a.requires_grad_()


def _det_written_after_create_graph(m: Any) -> Any:
    a = _matrix(m)
    d = m.linalg.det(a)
    (ga,) = m.autograd.grad(d * d, a, create_graph=True)
    d.data.mul_(2)  # torch's double-backward graph reads d's memory (MulBackward0 saved it)
    return m.autograd.grad((ga * ga).sum(), a)


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_det_output_written_after_create_graph(device: str) -> None:
    same(_det_written_after_create_graph, device, decimals=8)


def _det_input_written_then_create_graph(m: Any) -> Any:
    a = _matrix(m)
    d = m.linalg.det(a)
    a.data.mul_(1.5)  # torch under create_graph solves with A as it is now (saved A)
    (ga,) = m.autograd.grad(d * d, a, create_graph=True)
    return ga


def test_det_input_written_then_create_graph_torch() -> None:
    """Before: torch:cpu recomputed det from A as written since (its decomposition under
    create_graph), where PyTorch multiplies by the result it saved."""
    same(_det_input_written_then_create_graph, "torch:cpu", decimals=8)


@pytest.mark.parametrize("name", ["inv", "eigvals"])
def test_input_changed_in_place_after_call(backend: str, name: str) -> None:
    """Before: "modified in place" (the nodes version-checked A, which PyTorch's do not
    save; session 34: InputShape of A in the numpy primitives' nodes and torch:cpu inv's,
    torch:cpu eigvals with a graph as eig's node)."""

    def program(m: Any) -> Any:
        a = _matrix(m)
        y = getattr(m.linalg, name)(a)
        with m.no_grad():
            a.mul_(1.5)
        loss = (y.abs() ** 2).sum()
        return refused_in_place(loss.backward), a.grad

    same(program, backend, decimals=8)


def _solve_input_written(m: Any) -> Any:
    a = _matrix(m)
    x = m.linalg.solve(a, m.ones(3, 1, dtype=m.float64))
    a.data.mul_(1.5)  # torch's LinalgSolveExBackward0 reads the LU factors of A as it was,
    # and under create_graph solves with A as it is now (and the result it saved)
    (with_graph,) = m.autograd.grad((x * x).sum(), a, create_graph=True, retain_graph=True)
    (x * x).sum().backward()
    return a.grad, with_graph


_SOLVE_LEFT = (
    "older (HEAD too), session 34: solve's create_graph gradient misses a write through "
    "X's .data before the second backward (numpy; torch:cpu for complex X: its conjugate "
    "copy, linalg/_shared.py mH): the rule (autograd/linalg_rules.py _solve) reads the "
    "node's input, not A (a broadcast A on numpy too). Fix: the "
    "primitive node's output rewrite writing into the old array (autograd/node.py "
    "output_rewritten, as linalg/one_node.py _write_memory), and solve's formula on A itself"
)


def _solve_written_after_create_graph(m: Any, written: str) -> Any:
    a = _matrix(m).detach()
    a = (a + 0.2j * a.mT).requires_grad_()
    b = m.ones(2, 3, dtype=m.complex128, requires_grad=True)
    x = m.linalg.solve(a, b, left=False)
    if written == "a":
        a.data.mul_(1.5)
    (ga, gb) = m.autograd.grad((x.abs() ** 2).sum(), (a, b), create_graph=True)
    if written == "x":
        x.data.mul_(2)
    return ga, m.autograd.grad((ga.abs() ** 2).sum() + (gb.abs() ** 2).sum(), b)


@pytest.mark.parametrize(
    "device, written",
    [
        ("numpy", "a"),  # (passes since left=False solves with A.mT, a view that follows A)
        pytest.param("numpy", "x", marks=pytest.mark.xfail(strict=True, reason=_SOLVE_LEFT)),
        pytest.param("torch:cpu", "x", marks=pytest.mark.xfail(strict=True, reason=_SOLVE_LEFT)),
    ],
)
def test_solve_written_around_create_graph(device: str, written: str) -> None:
    same(lambda m: _solve_written_after_create_graph(m, written), device, decimals=8)


def test_solve_input_written(backend: str) -> None:
    """Before: numpy's first-order gradient solved with A as written since; torch:cpu's
    create_graph gradient recomputed X from it (session 34: solve's formula as its rule)."""
    same(_solve_input_written, backend, decimals=8)


@pytest.mark.xfail(
    strict=True,
    reason="older (HEAD too): det's node packs only A under saved_tensors_hooks; "
    "PyTorch's LinalgDetBackward0 packs A, LU, pivots and the result. Cause: "
    "linalg/primitives.py det records (A,) and A's array as saved; nothing packs the "
    "factors or the result. Fix: pack the LU factors, pivots and result as PyTorch's "
    "node (the first-order rule can solve from the unpacked LU factors, which also gives "
    "this session's 'A as it was' semantics for free)",
)
def test_det_packs_what_torch_packs(backend: str) -> None:
    def program(m: Any) -> Any:
        log = []
        a = _matrix(m)
        pack = lambda t: (log.append(("pack", tuple(t.shape), str(t.dtype).split(".")[-1])), t)[1]  # noqa: E731
        unpack = lambda t: (log.append(("unpack", tuple(t.shape))), t)[1]  # noqa: E731
        with m.autograd.graph.saved_tensors_hooks(pack, unpack):
            m.linalg.det(a).backward()
        return log, a.grad

    same(program, backend, decimals=8)
