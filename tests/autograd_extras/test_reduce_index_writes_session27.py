"""scatter_reduce, index_reduce, masked_scatter and the scatters after their index (or mask)
was written through ``.data`` before backward, and with a src larger than the index.

PyTorch's ScatterReduceBackward0 and IndexReduceBackward0 save the index, self, src and the
result, and recount their formulas from the index as it is at backward; MaskedScatterBackward0
reads the mask then, however many elements it now holds; a scatter's src larger than its
index gets a gradient of the index's shape, which the engine refuses. Each program runs on
torch 2.13 and on tensorweaver (:mod:`snippet_outcomes`).
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import pytest
from snippet_outcomes import Program, grid, leaf, same_each, walk


def _self(m: Any, zeros: bool) -> Any:
    values = [1.5, 0.0 if zeros else -2.0, 3.0, 0.5, 2.0]
    return m.tensor(values, dtype=m.float64).requires_grad_()


#: src values: plain, one zero, two zeros sent to one place (prod), ties (amax/amin).
_SOURCES = {
    "plain": [2.0, 0.5, -1.0, 4.0],
    "zero": [2.0, 0.0, -1.0, 4.0],
    "zeros": [2.0, 0.0, 0.0, 4.0],
    "ties": [2.0, 3.0, 3.0, 1.5],
}

#: What the index becomes through its .data after the forward.
_CHANGES = {
    "zeroed": lambda m, i: i.data.zero_(),
    "moved": lambda m, i: i.data.copy_(m.tensor([3, 1, 4, 1])),
    "tail": lambda m, i: i.data[2:].fill_(4),
}


def _reduced(
    op: str, reduce: str, include_self: bool, src: str, change: str, order: int = 1
) -> Program:
    """The gradients of self and src through ``op`` after ``change`` (``order`` 2: of the
    first gradients' squares, made with create_graph)."""

    def program(m: Any) -> Any:
        x = _self(m, src != "plain" and reduce == "prod")
        s = m.tensor(_SOURCES[src], dtype=m.float64).requires_grad_()
        i = m.tensor([0, 1, 1, 2])
        y = getattr(x, op)(0, i, s, reduce, include_self=include_self)
        _CHANGES[change](m, i)
        w = m.arange(1.0, 6.0, dtype=m.float64)
        if order == 1:
            return m.autograd.grad((y * w).sum(), (x, s))
        gx, gs = m.autograd.grad((y * w * y).sum(), (x, s), create_graph=True)
        return m.autograd.grad((gx * gx).sum() + (gs * w[:4]).sum(), (x, s), allow_unused=True)

    return program


def _cases() -> dict[str, Program]:
    cases = {}
    grid_ = itertools.product(
        ("scatter_reduce", "index_reduce"), ("sum", "prod", "mean", "amax", "amin"), (True, False)
    )
    for op, reduce, include_self in grid_:
        if op == "index_reduce" and reduce == "sum":
            continue
        sources = {"prod": ("plain", "zero", "zeros"), "amax": ("ties",), "amin": ("ties",)}
        for src in sources.get(reduce, ("plain",)):
            for change in _CHANGES:
                name = f"{op}_{reduce}_{include_self}_{src}_{change}"
                cases[name] = _reduced(op, reduce, include_self, src, change)
    return cases


def test_reductions_recount_from_the_written_index(spec: str) -> None:
    same_each(_cases(), spec)


def test_second_order_after_the_index_was_written(spec: str) -> None:
    same_each(
        {
            f"{op}_{reduce}_{include_self}": _reduced(op, reduce, include_self, src, "moved", 2)
            for op in ("scatter_reduce", "index_reduce")
            for reduce, src in (("prod", "zero"), ("mean", "plain"), ("amax", "ties"))
            for include_self in (True, False)
        },
        spec,
    )


def _changed_after(op: str, reduce: str, what: str) -> Program:
    """Backward through ``op`` after its self, src or result changed in place (PyTorch's
    node saves all three for every reduction)."""

    def program(m: Any) -> Any:
        x, s = leaf(m, 5) * 1, leaf(m, 4) * 1
        y = getattr(x, op)(0, m.tensor([0, 1, 1, 2]), s, reduce)
        {"self": x, "src": s, "result": y}[what].mul_(2)
        return m.autograd.grad(y.sum(), (x, s))

    return program


def test_saved_operands_changed_in_place(spec: str) -> None:
    same_each(
        {
            f"{op}_{reduce}_{what}": _changed_after(op, reduce, what)
            for op, reduce in (
                ("scatter_reduce", "sum"),
                ("scatter_reduce", "mean"),
                ("scatter_reduce", "amax"),
                ("index_reduce", "prod"),
            )
            for what in ("self", "src", "result")
        },
        spec,
    )


def test_one_node_as_torch(spec: str) -> None:
    def graph(op: str, reduce: str) -> Callable[[Any], Any]:
        return lambda m: walk(
            getattr(leaf(m, 5) * 1, op)(0, m.tensor([0, 1, 1, 2]), leaf(m, 4), reduce).grad_fn, 2
        )

    same_each(
        {
            f"{op}_{reduce}": graph(op, reduce)
            for op, reduce in (
                ("scatter_reduce", "sum"),
                ("scatter_reduce", "prod"),
                ("scatter_reduce", "mean"),
                ("scatter_reduce", "amin"),
                ("index_reduce", "amax"),
            )
        },
        spec,
    )


def _masked_scatter(after: list, n: int, order: int = 1) -> Program:
    """x's and source's gradients through masked_scatter after its mask became ``after``."""

    def program(m: Any) -> Any:
        x = (m.arange(12, dtype=m.float64) * 0.37 + 1).sin().reshape(3, 4).requires_grad_()
        source = (m.arange(n, dtype=m.float64) + 1).requires_grad_()
        mask = m.tensor([[True, False, False, False]])
        y = x.masked_scatter(mask, source)
        mask.data.copy_(m.tensor(after))
        w = grid(m, 3, 4)
        if order == 1:
            return m.autograd.grad((y * w).sum(), (x, source))
        gx, gs = m.autograd.grad((y * w * y).sum(), (x, source), create_graph=True)
        return m.autograd.grad((gx * gx).sum() + (gs * gs).sum(), (x, source))

    return program


def test_masked_scatter_mask_written_to_hold_more(spec: str) -> None:
    more, every = [[True, True, False, True]], [[True] * 4]
    same_each(
        {
            "more_of_12": _masked_scatter(more, 12),
            "more_of_9": _masked_scatter(more, 9),
            "more_of_20_second_order": _masked_scatter(more, 20, 2),
            "every_of_12": _masked_scatter(every, 12),
            "more_than_source": _masked_scatter(every, 9),
            "fewer_of_12": _masked_scatter([[False] * 4], 12),
        },
        spec,
    )


def _larger_src(op: str, wanted: str, how: str = "grad") -> Program:
    """A scatter of a src larger than its index; the gradients of ``wanted`` (``how``:
    autograd.grad, backward(), or forward AD's tangent)."""

    def program(m: Any) -> Any:
        x = grid(m, 3, 4).requires_grad_("x" in wanted)
        src = (-grid(m, 3, 5)).requires_grad_("s" in wanted)
        index = m.tensor([[2, 0, 1, 1], [0, 2, 0, 0]])
        if how == "dual":
            fa = m.autograd.forward_ad
            with fa.dual_level():
                x, src = (
                    fa.make_dual(x.detach(), grid(m, 3, 4)),
                    fa.make_dual(src.detach(), grid(m, 3, 5)),
                )
                return fa.unpack_dual(_scatter(op, x, index, src)).tangent
        out = _scatter(op, x, index, src)
        loss = (out * grid(m, 3, 4)).sum()
        if how == "backward":
            loss.backward()
            return x.grad, src.grad
        return m.autograd.grad(loss, [t for t in (x, src) if t.requires_grad])

    return program


def _scatter(op: str, x: Any, index: Any, src: Any) -> Any:
    if op.startswith("scatter_reduce_"):
        return x.scatter_reduce(0, index, src, op.rsplit("_", 1)[1])
    return getattr(x, op)(0, index, src)


def test_scatter_larger_src(spec: str) -> None:
    ops = ("scatter", "scatter_add", "scatter_reduce_sum", "scatter_reduce_mean")
    cases = {
        f"{op}_{wanted}": _larger_src(op, wanted)
        for op in (*ops, "scatter_reduce_prod", "scatter_reduce_amax")
        for wanted in ("x", "s", "xs")
    }
    cases.update({f"{op}_backward": _larger_src(op, "xs", "backward") for op in ops})
    cases.update({f"{op}_dual": _larger_src(op, "", "dual") for op in ops})
    same_each(cases, spec)


@pytest.mark.cunumeric
def test_matches_torch_on_cunumeric() -> None:
    same_each(
        {
            "scatter_reduce_prod": _reduced("scatter_reduce", "prod", False, "zero", "moved"),
            "masked_scatter_more": _masked_scatter([[True, True, False, True]], 12),
        },
        "cunumeric",
    )
