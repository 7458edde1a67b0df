"""A custom ``autograd.Function``'s outputs that are views, against torch 2.13: PyTorch treats
every such output alike (a view of an input, of a tensor forward made, or an input returned
as it is). With a graph, an in-place change of it (or of a view of it) is refused; and once it
changed by any other way (its base, a ``detach()`` alias of it, an in-place op under
no_grad) its use in autograd is refused, whether or not its base requires grad. A use made
before the change stands. A view output marked non-differentiable is one made without a
graph: changing it in place is refused as for a view made under no_grad."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

WRITTEN = "is a view and is being modified inplace"
NO_GRAD_WRITTEN = "A view was created in no_grad mode and is being modified inplace"
CHANGED = "view and its base or another view of its base has been modified inplace"


def _function(m: Any, forward: Callable[..., Any]) -> Any:
    class Made(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, buf: Any) -> Any:
            return forward(x, buf)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> tuple:
            return grads[0].sum() * m.ones(2, 3, dtype=m.float64), None

    return Made


def _no_grad_add(m: Any, t: Any) -> None:
    with m.no_grad():
        t.add_(1)


def _cases(m: Any) -> dict[str, Callable[[Any, Any], Any]]:
    """Each case: what to run on a fresh ``x`` (with a graph) and ``buf`` (without)."""

    def apply(forward: Callable[..., Any], x: Any, buf: Any) -> Any:
        return _function(m, forward).apply(x, buf)

    def multi(x: Any, buf: Any) -> Any:
        a, b = apply(lambda x, buf: (x[0], buf[1]), x, buf)
        buf.add_(1)
        return a.sum() + b.sum()

    def multi_unchanged_one(x: Any, buf: Any) -> Any:
        a, _ = apply(lambda x, buf: (x[0], buf[1]), x, buf)
        buf.add_(1)
        return a.sum()

    def inner_view(x: Any, buf: Any) -> Any:
        return apply(lambda x, buf: (x * 3)[0], x, buf)

    def global_buffer(x: Any, buf: Any) -> Any:
        kept = m.ones(2, 3, dtype=m.float64)
        a = apply(lambda x, buf: kept[0], x, buf)
        kept.add_(1)
        return a.sum()

    def then(make: Callable[[Any, Any], Any], change: Callable[[Any], Any]) -> Any:
        def run(x: Any, buf: Any) -> Any:
            a = make(x, buf)
            change(a)
            return a.sum()

        return run

    def buf_view(x: Any, buf: Any) -> Any:
        b = apply(lambda x, buf: buf[1], x, buf)
        buf.add_(1)
        return b.sum()

    def used_before(x: Any, buf: Any) -> Any:
        a = apply(lambda x, buf: x.view_as(x), x, buf)
        y = (a * 2).sum()
        a.detach().add_(1)
        return y

    def new_tensor(x: Any, buf: Any) -> Any:
        a = apply(lambda x, buf: x * 2, x, buf)
        a.detach().add_(1)
        return a.sum()

    def view_of(x: Any, buf: Any) -> Any:
        return apply(lambda x, buf: x.view_as(x), x, buf)

    def itself(x: Any, buf: Any) -> Any:
        return apply(lambda x, buf: x, x, buf)

    def non_differentiable_view(x: Any, buf: Any) -> Any:
        class Split(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> tuple:
                v = x[:1]
                ctx.mark_non_differentiable(v)
                return v, x * 2

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                return g2 * 2

        v, y = Split.apply(x)
        v.add_(1)  # (a view made without a graph: as one made under no_grad)
        return y.sum()

    return {
        "a non-differentiable view changed in place": non_differentiable_view,
        "a view of an input without grad, its base changed": buf_view,
        "two views, one's base changed": multi,
        "two views, the unchanged one used": multi_unchanged_one,
        "a view of forward's tensor changed in place": then(inner_view, lambda a: a.add_(1)),
        "a view of it changed in place": then(inner_view, lambda a: a[:1].add_(1)),
        "changed in place under no_grad": then(inner_view, lambda a: _no_grad_add(m, a)),
        "a view of it changed under no_grad": then(inner_view, lambda a: _no_grad_add(m, a[:1])),
        "changed through detach()": then(inner_view, lambda a: a.detach().add_(1)),
        "an input's view changed through detach()": then(view_of, lambda a: a.detach().add_(1)),
        "an input returned, changed through detach()": then(itself, lambda a: a.detach().add_(1)),
        "a view of a tensor kept outside, changed there": global_buffer,
        "used before the change": used_before,
        "a new tensor changed through detach()": new_tensor,
    }


def _outcome(m: Any, case: str) -> Any:
    x = m.tensor(np.arange(6.0).reshape(2, 3), dtype=m.float64, requires_grad=True) * 1
    buf = m.ones(2, 3, dtype=m.float64)
    try:
        loss = _cases(m)[case](x, buf)
        loss.backward()
    except RuntimeError as error:
        for gist in (WRITTEN, CHANGED, NO_GRAD_WRITTEN):
            if gist in str(error):
                return gist
        raise
    return "runs"


@pytest.mark.parametrize("case", list(_cases(torch)))
def test_function_view_outputs_refused_as_torch(case: str) -> None:
    assert _outcome(tw, case) == _outcome(torch, case)


def test_the_refusal_names_the_function_and_output() -> None:
    y = _function(tw, lambda x, buf: (x[0], buf[1])).apply(
        tw.ones(2, 3, dtype=tw.float64, requires_grad=True) * 1, tw.ones(2, 3, dtype=tw.float64)
    )[1]
    y.detach().add_(1)
    with pytest.raises(RuntimeError, match=f"Output 1 of Made is a {CHANGED}"):
        y.backward(tw.ones(3, dtype=tw.float64))


def test_a_changed_function_view_is_refused_at_its_use() -> None:
    for m in (torch, tw):
        a = _function(m, lambda x, buf: x.view_as(x)).apply(
            m.ones(2, 3, dtype=m.float64, requires_grad=True) * 1, m.ones(2, 3, dtype=m.float64)
        )
        a.detach().add_(1)
        with pytest.raises(RuntimeError, match=CHANGED):
            a * 2
