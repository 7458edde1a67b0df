"""Session 36, autograd engine: gradients of tensors whose shape changed in place (checked
against the shape their producer made, as PyTorch checks each gradient against its next
node's input metadata), outputs written through ``.data`` after a create_graph gradient,
and a custom Function's grad_fn reading its ctx, compared with torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same, same_each

SPECS = ["numpy", "torch:cpu"]

_CHANGES: dict[str, Callable] = {
    "t_": lambda a: a.t_(),
    "unsqueeze_": lambda a: a.unsqueeze_(0),
    "unsqueeze_ twice": lambda a: (a.unsqueeze_(0), a.unsqueeze_(2)),
    "unsqueeze_ squeeze_": lambda a: (a.unsqueeze_(0), a.squeeze_(0)),
    "as_strided_": lambda a: a.as_strided_((3, 2), (1, 3)),
}


def _broadcast(a: Any, m: Any) -> Any:
    return a * m.arange(1.0, 1.0 + 4 * a.numel(), dtype=m.float64).reshape(4, *a.shape)


def _changed_between(change: Callable, before: Callable | None, after: Callable) -> Callable:
    """A non-leaf used by ``before`` (if any), its shape changed by ``change`` under no_grad,
    then used by ``after``: x.grad."""

    def program(m: Any) -> Any:
        x = m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        a = x * 1
        ys = [] if before is None else [before(a, m)]
        with m.no_grad():
            change(a)
        ys.append(after(a, m))
        sum(y.sum() for y in ys).backward()
        return x.grad

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_gradient_checked_against_producer_shape(spec: str) -> None:
    """Before: a gradient of the changed shape reached the producer (x * 1) and was summed
    and reshaped into its input's shape (exp after ``t_``: the values transposed; a use
    before and after two ``unsqueeze_``: both gradients broadcast into one), where PyTorch
    raises 'returned an invalid gradient'; what PyTorch computes stays computed."""
    exp = lambda a, m: a.exp()  # noqa: E731
    same_each(
        {
            f"{name}, {label}": _changed_between(change, before, after)
            for name, change in _CHANGES.items()
            for label, before, after in [
                ("exp after", None, exp),
                ("broadcast after", None, _broadcast),
                ("exp before, broadcast after", exp, _broadcast),
            ]
        },
        spec,
        decimals=8,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_shape_changes_in_a_loop_under_grad_and_no_grad(spec: str) -> None:
    """Shape changes under grad mode (their nodes' outputs have the new shape) mixed with
    ones under no_grad, used between and past the 32 changes the old record kept."""

    def program(m: Any) -> Any:
        x = m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        a = x * 1
        ys = []
        for i in range(40):
            if i % 10 == 0:
                a.unsqueeze_(0)  # (recorded: UnsqueezeBackward1 of the new shape)
                ys.append(_broadcast(a, m))
            else:
                with m.no_grad():
                    a.t_() if a.ndim == 2 else a.transpose_(-1, -2)
                if i % 7 == 0:
                    ys.append(a.exp())
        sum(y.sum() for y in ys).backward()
        return x.grad

    same(program, spec, decimals=8)


def _output_written_after_create_graph(op: str) -> Callable:
    """``op``'s output doubled through ``.data`` between a create_graph gradient and its
    second-order gradient: PyTorch's saved result shares the output's memory."""

    def program(m: Any) -> Any:
        a = m.tensor([0.5, -0.3, 0.8], dtype=m.float64, requires_grad=True)
        d = getattr(a, op)()
        w = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
        (g,) = m.autograd.grad((d * d * w).sum(), a, create_graph=True)
        d.data.mul_(2)
        return g, m.autograd.grad(g.sum(), a)

    return program


@pytest.mark.parametrize(
    "op",
    [
        "exp",
        "rsqrt",
        "reciprocal",
        "sqrt",
        "expm1",
        "relu",
        "tanh",
        "sigmoid",
    ],
)
@pytest.mark.parametrize("spec", SPECS)
def test_output_written_after_create_graph(spec: str, op: str) -> None:
    """Before: exp/rsqrt/reciprocal gave a second-order gradient that read the old output
    where the create_graph graph multiplies by the result (node.py Node.output's tensor
    kept the old array; output_rewritten now rebinds it)."""
    same(_output_written_after_create_graph(op), spec, decimals=8)


def _function_grad_fn(m: Any) -> Any:
    class Scale(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any, k: float) -> Any:
            ctx.k = k
            ctx.save_for_backward(x)
            return x * w * k

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g, g, None

    x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    y = Scale.apply(x, m.tensor([3.0, 4.0], dtype=m.float64), 2.0)
    fn = y.grad_fn
    seen = [type(fn).__name__, fn.needs_input_grad, fn.k, fn.saved_tensors, hasattr(fn, "nope")]
    y.sum().backward()
    try:
        seen.append(len(fn.saved_tensors))
    except RuntimeError:
        seen.append("freed")
    return [*seen, fn.needs_input_grad, fn.k]


@pytest.mark.parametrize("spec", SPECS)
def test_function_grad_fn_reads_its_ctx(spec: str) -> None:
    """Before: a custom Function's grad_fn had none of its ctx's attributes (PyTorch's
    BackwardCFunction is the ctx)."""
    same(_function_grad_fn, spec)
