"""Autograd through the device: outputs and gradients of core ops (whose backward passes run
on the device's primitives) against the NumPy float64 reference, and by finite differences;
then again with the inputs and the gradients backward starts from as transposed, stepped
and broadcast views, and on an empty batch. Inputs keep away from kinks (ties, zeros) so
that every gradient is well defined."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure, Skip
from tensorweaver.check.context import Context
from tensorweaver.check.trial import Maker

Forward = Callable[[], Any]


def _unary(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4, low=0.2, high=1.8)
    return lambda: (
        x.exp() * x.log() + x.sin() * x.cos() + x.tanh() + x.sqrt() + x.erf() + x.sigmoid(),
        x.pow(1.5) + x.reciprocal() + x.rsqrt() + x.log1p() + x.expm1() + (x - 1).abs(),
    )


def _binary(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 1, low=0.5, high=1.5)
    y = m.input("y", 1, 4, low=2.0, high=3.0)
    return lambda: (x * y + x / y - y**x, tw.maximum(x, y - 1.5) + tw.where(x > 1, x, y))


def _reduce(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 4)  # empty: a mean and a std over no elements are NaN
    return lambda: (
        x.sum(dim=-1),
        x.mean(dim=(0, 2), keepdim=True),
        x.prod(dim=1),
        x.amax(dim=-2),
        tw.logsumexp(x, dim=1),
        x.var(dim=2),
        x.std(dim=(0, 1)),  # the broadcast layout repeats axis 0: a std along it is 0
        x.norm(dim=-1),
        x.cumsum(dim=1),
    )


def _movement(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 4)
    y = m.input("y", m.batch(2), 3, 4)
    return lambda: (
        x.permute(2, 0, 1).flatten(1) * 2,
        tw.cat([x, y.flip(-1)], dim=1)[:, 1:, ::2],
        tw.stack([x, y], dim=0).transpose(0, -1).sum(dim=0),
        x.expand(3, *x.shape).sum(dim=(0, 1)) + y.roll(1, -1),
        F.pad(x, (1, 2, 0, 1)) * 1.5,
        x.narrow(2, 1, 2) * x.split(2, dim=-1)[0],
    )


def _index(m: Maker) -> Forward:
    x = m.input("x", 3, 4)
    src = m.input("src", 3, 2)
    rows = tw.tensor([[0, 3], [1, 1], [2, 0]])  # a duplicate index in row 1
    picks = tw.tensor([2, 0, 2])
    return lambda: (
        x.gather(1, rows),
        x.scatter_add(1, rows, src),
        x.index_select(0, picks),
        x[[0, 2, 2]] * x[:, [1, 1]].sum(),
        x.masked_fill(x > 0.5, 0.0),
        x.index_add(0, picks, x[:, :4]),
    )


def _matmul(m: Maker) -> Forward:
    a = m.input("a", m.batch(2), 1, 3, 4)
    b = m.input("b", 5, 4, 2)
    v = m.input("v", 4)
    return lambda: (a @ b, tw.einsum("bij,bkj->bik", a[:, 0], a[:, 0]), tw.outer(v, v), a @ v)


def _double_backward(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4)
    y = m.input("y", m.batch(3), 4)

    def forward() -> Any:
        (g,) = tw.autograd.grad((x.tanh() * y * x).sum(), [x], create_graph=True)
        return g * y  # its backward differentiates the first backward

    return forward


def _accumulation(m: Maker) -> Forward:
    x = m.input("x", 4)
    # one leaf used five times: its gradient adds up over every use
    return lambda: x * x + x.exp() * x - x[0] * x.sum()


CASES: dict[str, Callable[[Maker], Forward]] = {
    "unary": _unary,
    "binary-broadcast": _binary,
    "reduce": _reduce,
    "movement": _movement,
    "index": _index,
    "matmul": _matmul,
    "double-backward": _double_backward,
    "accumulation": _accumulation,
}


#: Cases with no batch axis to empty: they index fixed elements.
NO_BATCH = {
    "index": "its indices pick fixed rows",
    "accumulation": "it reads element 0",
}


def _case(key: str, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        if layout == "empty" and key in NO_BATCH:
            raise Skip(f"autograd/{key} has no empty batch: {NO_BATCH[key]}")
        return trial.compare(ctx, f"autograd/{key}", CASES[key], layout=layout)

    return run


def cases() -> list[Case]:
    out = []
    for key in CASES:
        out.append(Case(f"autograd/{key}", _case(key)))
        out += [Case(f"autograd/{key}/{lay}", _case(key, lay)) for lay in trial.LAYOUTS]
    return out
