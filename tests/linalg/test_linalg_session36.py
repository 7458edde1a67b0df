"""Session 36 (helper L): linalg outputs that PyTorch's node saves go through
saved_tensors_hooks (det, inv, cholesky), a torch:cpu record reads an input whose ``.data``
was replaced, and matrix_exp's create_graph gradient is its block formula on torch:cpu too;
each compared with torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import same_each, walk


def _spd(m: Any) -> Any:
    """A batch of two symmetric positive-definite 3x3 float64 matrices, a non-leaf."""
    a = m.tensor(
        [[[2.5, 0.3, -0.4], [0.1, 1.8, 0.6], [-0.7, 0.2, 2.2]]] * 2, dtype=m.float64
    ).requires_grad_()
    return a, a @ a.mT + m.eye(3, dtype=m.float64)


def _hooked(op: Callable, hook: Callable, change: Callable) -> Callable:
    """``op``'s output under ``saved_tensors_hooks(hook, identity)``, changed by ``change``
    under no_grad before backward; the leaf's gradient."""

    def program(m: Any) -> Any:
        a, b = _spd(m)
        with m.autograd.graph.saved_tensors_hooks(hook, lambda t: t):
            y = op(m, b)
        with m.no_grad():
            change(y)
        w = m.arange(1.0, y.numel() + 1.0, dtype=m.float64).reshape(y.shape)
        (y * w).sum().backward()
        return a.grad

    return program


OPS = {
    "cholesky": lambda m, b: m.linalg.cholesky(b),
    "cholesky upper": lambda m, b: m.linalg.cholesky(b, upper=True),
    "inv": lambda m, b: m.linalg.inv(b),
    "det": lambda m, b: m.linalg.det(b),
}
HOOKS = {"clone": lambda t: t.clone(), "identity": lambda t: t}
CHANGES = {".data": lambda y: y.data.mul_(3), "mul_": lambda y: y.mul_(2)}


def test_saved_results_through_hooks(backend: str) -> None:
    """Before: a .data write reached a clone hook's saved result (3x torch's gradient) and
    an in-place change of the output raised under hooks (numpy and torch:cpu)."""
    same_each(
        {
            f"{op} {hook} {change}": _hooked(OPS[op], HOOKS[hook], CHANGES[change])
            for op in OPS
            for hook in HOOKS
            for change in CHANGES
        },
        backend,
        decimals=8,
    )


def _unpacked_for_one_call(m: Any) -> Any:
    """matrix_exp under an unpack hook that scales what it saved, then pinv of the same
    leaf outside the hooks: the unpack does not reach pinv's gradient (torch:cpu's records
    of one array share a leaf, which only a .data write may rebind). matrix_exp's own
    gradient is left out: it does not pack A as PyTorch's node (a strict xfail in
    test_linalg_saved_session33.py, _HOOKS_LEFT)."""
    a = m.tensor([[0.5, 0.2], [0.3, 0.4]], dtype=m.float64, requires_grad=True)
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 1.5):
        y1 = m.linalg.matrix_exp(a)
    y2 = m.linalg.pinv(a)
    m.autograd.grad(y1.sum(), a)
    return m.autograd.grad((y2 * y2).sum(), a)


def _det_input_written_under_hooks(m: Any) -> Any:
    """det under an identity hook, its input written through .data after the call: the
    first-order gradient is from A as it was (PyTorch's packed LU factors of it)."""
    a = m.tensor([[2.5, 0.3], [0.1, 1.8]], dtype=m.float64, requires_grad=True)
    b = a * 1
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        d = m.linalg.det(b)
    b.data.mul_(2)
    d.backward()
    return a.grad


def _solve_inputs_written(m: Any) -> Any:
    """A broadcast batched solve, both inputs written through .data before backward."""
    a = m.tensor([[[2.0, 0.5], [0.3, 1.5]]], dtype=m.float64, requires_grad=True)
    b = m.tensor([[[1.0], [2.0]], [[0.5], [-1.0]]], dtype=m.float64, requires_grad=True)
    x = m.linalg.solve(a, b)
    a.data.mul_(1.5)
    b.data = b.detach() * 0.5
    return m.autograd.grad((x * x).sum(), (a, b))


def _eigh_input_rebound(m: Any) -> Any:
    a = m.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=m.float64, requires_grad=True)
    w, v = m.linalg.eigh(a)
    a.data = m.zeros(2, 2, dtype=m.float64)
    return m.autograd.grad(w.sum() + (v * v[:, :1]).sum(), a)


def _matrix_exp_twice(m: Any) -> Any:
    """matrix_exp's second derivative, batched and complex, and its create_graph node."""
    a = m.tensor([[0.5 + 0.1j, 0.2], [0.3j, 0.4]], dtype=m.complex128)
    a = m.stack([a, a.mT]).requires_grad_()
    (g,) = m.autograd.grad(m.linalg.matrix_exp(a).abs().sum(), a, create_graph=True)
    return g, m.autograd.grad(g.abs().sum(), a), walk(g.grad_fn, 1)


def test_inputs_and_second_order(backend: str) -> None:
    same_each(
        {
            "unpack of one call": _unpacked_for_one_call,
            "det input written under hooks": _det_input_written_under_hooks,
            "solve inputs written": _solve_inputs_written,
            "eigh input rebound": _eigh_input_rebound,
            "matrix_exp twice": _matrix_exp_twice,
        },
        backend,
        decimals=8,
    )
