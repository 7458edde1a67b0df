"""``x[i]``, ``x[:, i]`` and ``select`` of a tensor that requires grad record one node, as
PyTorch's SelectBackward0 (session 31; before, a slice node and a reshape node labelled with
that name): its ``next_functions``, its saved ``_saved_dim``/``_saved_index``/
``_saved_self_sym_sizes`` (a negative one as PyTorch shows it, before and after backward),
its gradient (also when many steps of a sequence are picked, and differentiated again), the
view it makes (writes through it reach the base, versions move, ``retain_grad``), each
against torch 2.13; gradients by finite differences in float64 on every backend, and a
``tw.compile``'d step through it replaying the eager step's numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck, gradgradcheck
from snippet_outcomes import grid, leaf, same_each, walk

#: name -> the pick of a (3, 4) tensor (PyTorch's SelectBackward0 each).
PICKS = {
    "x[1]": lambda x: x[1],
    "x[-1]": lambda x: x[-1],
    "x[:, 2]": lambda x: x[:, 2],
    "x[:, -3]": lambda x: x[:, -3],
    "x[1, :]": lambda x: x[1, :],
    "select(1, 2)": lambda x: x.select(1, 2),
    "select(0, -1)": lambda x: x.select(0, -1),
}


def _saved(fn: Any) -> tuple:
    return fn._saved_dim, fn._saved_index, fn._saved_self_sym_sizes


def _node(pick: Any, of_leaf: bool) -> Any:
    """The pick's node (name, graph, saved arguments before and after backward) and the
    gradient, of a leaf or of a product."""

    def run(m: Any) -> Any:
        x = leaf(m, 3, 4)
        y = pick(x if of_leaf else x * 2)
        fn = y.grad_fn
        before = fn.name(), walk(fn), _saved(fn)
        (y * grid(m, *y.shape)).sum().backward()
        return before, _saved(fn), x.grad

    return run


def test_a_pick_is_one_select_node(spec: str) -> None:
    programs = {
        f"{k} of {w}": _node(p, w == "leaf") for k, p in PICKS.items() for w in ("leaf", "mul")
    }
    same_each(programs, spec, decimals=None)


def _steps(m: Any) -> Any:
    """An LSTM-like loop over a sequence's steps, some picked twice, differentiated twice."""
    x = leaf(m, 5, 3) / 15
    w = grid(m, 3) / 3
    h = x[0] * w
    for t in (1, 2, 2, 4, -1):
        h = (h + x[t] * w).tanh()
    (gx,) = m.autograd.grad(h.sum(), x, create_graph=True)
    (ggx,) = m.autograd.grad((gx * gx).sum(), x)
    return gx, ggx


def _written(m: Any) -> Any:
    """A write through the pick reaches its base and its graph; versions move as torch's."""
    x = leaf(m, 3, 4)
    base = x * 1
    y = base[1]
    y.mul_(3)
    z = base[:, -1]
    z.add_(1)
    versions = base._version, y._version, z._version
    names = [t.grad_fn.name() for t in (base, y, z)]
    (base * grid(m, 3, 4)).sum().backward()
    return base, y, z, versions, names, x.grad, y.is_contiguous()


def _retained(m: Any) -> Any:
    x = leaf(m, 3, 4)
    y = x[2]
    y.retain_grad()
    (y * y).sum().backward()
    return y.grad, x.grad, y.is_leaf, y.requires_grad


def _followed(m: Any) -> Any:
    """A pick taken before a write into its base sees it; its node is then regenerated."""
    x = leaf(m, 3, 4)
    base = x * 1
    y = base[1]
    base.mul_(2)
    fn = y.grad_fn
    y.sum().backward()
    return y, x.grad, fn.name()


def _under_no_grad(m: Any) -> Any:
    x = leaf(m, 3, 4)
    with m.no_grad():
        y = x[1]
    return y.requires_grad, y.grad_fn, y.is_leaf


def _unbound(m: Any) -> Any:
    x = leaf(m, 3, 4)
    return [p.grad_fn._saved_dim for p in (x.unbind(1)[0], x.unbind(0)[2])]


def _missing(m: Any) -> Any:
    try:
        return leaf(m, 3, 4)[1].grad_fn._saved_other
    except AttributeError as e:
        return "AttributeError", str(e)


PROGRAMS = {
    "steps": _steps,
    "written": _written,
    "retained": _retained,
    "followed": _followed,
    "no_grad": _under_no_grad,
    "unbind": _unbound,
    "missing": _missing,
}


def test_picks_as_torchs(spec: str) -> None:
    same_each(PROGRAMS, spec)


@pytest.mark.cunumeric
def test_picks_as_torchs_on_cunumeric() -> None:
    programs = {k: _node(PICKS[k], False) for k in ("x[-1]", "x[:, 2]")}
    same_each(programs, "cunumeric", decimals=None)
    same_each({"steps": _steps, "written": _written}, "cunumeric")


def _negative_dim(m: Any) -> Any:
    x = leaf(m, 3, 4)
    return x.select(-1, 1).grad_fn._saved_dim, x.unbind(-1)[0].grad_fn._saved_dim


def test_a_negative_dim_is_saved_as_given(spec: str) -> None:
    same_each({"negative dim": _negative_dim}, spec)


def test_gradients_by_finite_differences(backend: str) -> None:
    a = np.random.default_rng(0).standard_normal((4, 3))

    def picks(x: Any) -> Any:
        return tw.stack([x[0] * x[-1], x[:, 1].sum() * x[2], x.select(1, -1)[:3] * x[1]])

    gradcheck(picks, a)
    gradgradcheck(picks, a)


def test_a_compiled_step_replays_the_eager_numbers(spec: str) -> None:
    with tw.device(spec):
        w = tw.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4), requires_grad=True)

        def step(x: Any) -> Any:
            w.grad = None
            h = x[0] * w[1]
            for t in range(1, x.shape[0]):
                h = (h + x[t] * w[:, 2].sum()).tanh()
            loss = h.sum() + w.select(1, -1).sum()
            loss.backward()
            return loss.detach(), w.grad.clone()

        compiled = tw.compile(step, backend="tensorweaver")  # (the core's replay: no inductor)
        for seed in range(3):
            x = tw.tensor(np.random.default_rng(seed).standard_normal((5, 4)))
            want = step(x)
            got = compiled(x)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
