"""Reader r1, session 36: wave 1's autograd engine (sum_to's refusal, RESHAPED_OUTPUTS,
OUTPUT_TENSORS, per-Function grad_fn classes) against torch 2.13; strict xfails."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import same, same_each

SPECS = ["numpy", "torch:cpu"]


def _row(m: Any, *shape: int) -> Any:
    n = 1
    for k in shape:
        n *= k
    return (m.arange(1.0, n + 1.0, dtype=m.float64) / 7).reshape(shape).requires_grad_()


def _two_outputs(m: Any) -> Any:
    class Two(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            return g1 * 2 + g2 * 3

    return Two


def _reshaped_then_broadcast(make: Any, change: Any, other: tuple) -> Any:
    """x (1, 3); a = make(x); change(a) under no_grad; (a * w).sum().backward(); x.grad."""

    def program(m: Any) -> Any:
        x = _row(m, 1, 3)
        a = make(m, x)
        with m.no_grad():
            change(a)
        (a * _row(m, *other)).sum().backward()
        return x.grad

    return program


# --- REGRESSION 1 -------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_function_output_squeezed_in_place_then_broadcast(spec: str) -> None:
    same_each(
        {
            f"{o}-{w}": _reshaped_then_broadcast(
                lambda m, x, o=o: _two_outputs(m).apply(x)[o], lambda a: a.squeeze_(0), w
            )
            for o in (0, 1)
            for w in ((3, 3), (1, 3), (2, 3, 3))
        },
        spec,
    )


# --- REGRESSION 2 -------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_chunk_piece_shape_changed_in_place_refused(spec: str) -> None:
    def program(m: Any, cut: str, change: str) -> Any:
        x = _row(m, 4, 3)
        p, q = x.chunk(2) if cut == "chunk" else x.split([1, 3])
        with m.no_grad():
            getattr(q, change)(0)
        (q * _row(m, 3, *q.shape)).sum().backward()
        return x.grad

    same_each(
        {
            f"{c}-{k}": lambda m, c=c, k=k: program(m, c, k)
            for c in ("chunk", "split")
            for k in ("unsqueeze_",)
        },
        spec,
    )


# --- older 1 ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_nonleaf_shape_changed_then_broadcast(spec: str) -> None:
    changes = {
        "t_": lambda a: a.t_(),
        "squeeze_": lambda a: a.squeeze_(0),
        "transpose_": lambda a: a.transpose_(0, 1),
    }
    makes = {"mul": lambda m, x: x * 2, "exp": lambda m, x: x.exp()}
    same_each(
        {
            f"{mk}-{c}-{w}": _reshaped_then_broadcast(makes[mk], changes[c], w)
            for mk in makes
            for c in changes
            for w in ((3, 3), (2, 3, 3))
        },
        spec,
    )


# --- older 2 ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_create_graph_then_data_write_reductions(spec: str) -> None:
    ops = {
        "prod": lambda m, x: x.prod(-1, keepdim=True),
        "norm": lambda m, x: x.norm(dim=-1, keepdim=True),
        "log_softmax": lambda m, x: m.nn.functional.log_softmax(x, -1),
        "softmax": lambda m, x: m.nn.functional.softmax(x, -1),
        "cumprod": lambda m, x: x.cumprod(-1),
    }

    def program(m: Any, op: str) -> Any:
        x = _row(m, 2, 3)
        d = ops[op](m, x)
        (g,) = m.autograd.grad((d * d).sum(), x, create_graph=True)
        d.data.mul_(2)
        return m.autograd.grad((g * g).sum(), x)

    same_each({op: lambda m, op=op: program(m, op) for op in ops}, spec)


# --- older 3 ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_view_of_base_shape_changed_in_place(spec: str) -> None:
    def program(m: Any) -> Any:
        x = _row(m, 1, 3)
        h = x * 1.0
        v = h[0]
        with m.no_grad():
            h.t_()
        (v * _row(m, 3)).sum().backward()
        return x.grad

    same(program, spec)


# --- older 4 ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_function_grad_fn_is_its_ctx(spec: str) -> None:
    def make(m: Any) -> Any:
        class F(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.k = 2.0
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * ctx.k

        return F

    def set_attribute(m: Any) -> Any:
        x = _row(m, 3)
        o = make(m).apply(x)
        o.grad_fn.k = 5.0
        o.sum().backward()
        return x.grad

    def distinct_classes(m: Any) -> Any:
        x = _row(m, 3)
        return type(make(m).apply(x).grad_fn) is type(make(m).apply(x).grad_fn)

    same_each({"set": set_attribute, "classes": distinct_classes}, spec)


# --- older 5 ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_leaf_view_shape_changed_under_no_grad(spec: str) -> None:
    changes = {"t_": lambda a: a.t_(), "squeeze_": lambda a: a.squeeze_(0)}
    same_each(
        {
            f"{c}-{w}": _reshaped_then_broadcast(lambda m, x: x.view(1, 3), changes[c], w)
            for c in changes
            for w in ((3, 3), (2, 3, 3))
        },
        spec,
    )
