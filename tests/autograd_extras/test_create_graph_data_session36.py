"""Session 36, fixer F4: a write through ``.data`` between a ``create_graph`` gradient and
the next backward reaches the second-order gradient as in PyTorch, whose saved results and
inputs share memory with the tensor written: the saved result of prod/norm/logsumexp with
keepdim (autograd/gradients.py ``_saved_result`` is ``Node.output``, registered for
node.py ``output_rewritten``), softmax/log_softmax (one ``of_result`` node saving (g, y)),
and matmul's inputs (its create_graph transposes are views). Compared with torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same_each

SPECS = ["numpy", "torch:cpu"]


def _x(m: Any) -> Any:
    return (m.arange(1.0, 7.0, dtype=m.float64) / 7).reshape(2, 3).requires_grad_()


_OUTPUTS: dict[str, Callable] = {
    "prod": lambda m, x: x.prod(-1, keepdim=True),
    "norm": lambda m, x: x.norm(dim=-1, keepdim=True),
    "logsumexp": lambda m, x: x.logsumexp(-1, keepdim=True),
    "softmax": lambda m, x: m.nn.functional.softmax(x, -1),
    "log_softmax": lambda m, x: m.nn.functional.log_softmax(x, -1),
}

_WRITES: dict[str, Callable] = {
    "mul_": lambda d: d.data.mul_(2),
    "setitem": lambda d: d.data.__setitem__(0, 0.25),
}


def _output_written(op: str, write: str) -> Callable:
    def program(m: Any) -> Any:
        x = _x(m)
        d = _OUTPUTS[op](m, x)
        (g,) = m.autograd.grad((d * d).sum(), x, create_graph=True)
        _WRITES[write](d)
        return m.autograd.grad((g * g).sum(), x)

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_output_written_after_create_graph(spec: str) -> None:
    """Before: prod/norm/logsumexp's rebuilt result was not registered (gradients.py
    _saved_result made its own Tensor), softmax/log_softmax's composed rule kept the old
    output in its intermediates: second-order gradients read the old result (in part)."""
    same_each({f"{op}-{w}": _output_written(op, w) for op in _OUTPUTS for w in _WRITES}, spec)


def _softmax_0d(op: str) -> Callable:
    def program(m: Any) -> Any:
        x = m.tensor(0.3, dtype=m.float64, requires_grad=True)
        d = getattr(m.nn.functional, op)(x, 0)
        (g,) = m.autograd.grad((d * d * 3).sum(), x, create_graph=True)
        d.data.mul_(2)
        return g, m.autograd.grad(g * g, x, allow_unused=True)

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_softmax_0d_output_written(spec: str) -> None:
    """A 0-d input takes the reference's one node (not the fused kernel): unchanged."""
    same_each({op: _softmax_0d(op) for op in ("softmax", "log_softmax")}, spec)


def _matmul_written(shapes: tuple, written: int) -> Callable:
    def program(m: Any) -> Any:
        a = (m.arange(1.0, 1.0 + _n(shapes[0]), dtype=m.float64) / 5).reshape(shapes[0])
        b = (m.arange(2.0, 2.0 + _n(shapes[1]), dtype=m.float64) / 9).reshape(shapes[1])
        a.requires_grad_()
        b.requires_grad_()
        ga, gb = m.autograd.grad(((a @ b) ** 2).sum(), (a, b), create_graph=True)
        (a, b)[written].data.mul_(2)
        # (the names of the 3-d products' nodes differ from torch's: HEAD's too, left open)
        names = [type(t.grad_fn).__name__ for t in (ga, gb)] if a.dim() == 2 else None
        return names, m.autograd.grad((ga * gb.sum() + gb.sum()).sum(), (a, b))

    return program


def _n(shape: tuple) -> int:
    n = 1
    for k in shape:
        n *= k
    return n


@pytest.mark.parametrize("spec", SPECS)
def test_matmul_input_written_after_create_graph(spec: str) -> None:
    """Before: matmul's create_graph rule transposed its inputs with a plain permute (ops/
    movement.py), whose array the write did not reach: the second backward used the old
    input."""
    same_each(
        {
            f"{sa}x{sb}-{w}": _matmul_written((sa, sb), w)
            for sa, sb in (((2, 3), (3, 2)), ((2, 2, 3), (2, 3, 4)))
            for w in (0, 1)
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_cumprod_output_written_after_create_graph(spec: str) -> None:
    def program(m: Any) -> Any:
        x = _x(m)
        d = x.cumprod(-1)
        (g,) = m.autograd.grad((d * d).sum(), x, create_graph=True)
        d.data.mul_(2)
        return m.autograd.grad((g * g).sum(), x)

    same_each({"cumprod": program}, spec)
