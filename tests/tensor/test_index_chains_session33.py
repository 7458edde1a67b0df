"""Session 33: every basic index with grad that cuts two axes or more, or holds an Ellipsis or
a None (or an index tensor beside ints and slices), records PyTorch's chain of nodes, one per
entry, each the next one's input: SelectBackward0 per int, SliceBackward0 per slice that cuts
(each saving its own arguments and the sizes it cut), UnsqueezeBackward0 per None, then
IndexBackward0 for the index tensors. Before, ``x[1, 1:]`` and ``x[1:, 1:]`` were one slice
node over the leaf, ``x[..., 0]`` a select node saving nothing, ``x[None, 1]`` one slice
node, ``x[t, 1]`` an index node over a reshape and one slice. Graphs, saved arguments,
gradients, double backward and writes after, on several bases, against torch 2.13."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from snippet_outcomes import grid, leaf, same_each, walk

_SAVED = ("_saved_dim", "_saved_index", "_saved_start", "_saved_end", "_saved_step")


def _saved(fn: Any) -> list:
    """Each node's name down the first inputs, with a select's or slice's saved arguments."""
    found = []
    while fn is not None and fn.name() != "torch::autograd::AccumulateGrad":
        if fn.name() in ("SelectBackward0", "SliceBackward0"):
            kept = [getattr(fn, k) for k in _SAVED if hasattr(fn, k)]
            found.append((fn.name(), *kept, fn._saved_self_sym_sizes))
        else:
            found.append(fn.name())
        fn = fn.next_functions[0][0] if fn.next_functions else None
    return found


#: name -> the pick of a (3, 4, 5) tensor (t: an index tensor of the same module)
PICKS = {
    "x[1, 1:]": lambda x, t: x[1, 1:],
    "x[-1, -3:]": lambda x, t: x[-1, -3:],
    "x[1, 0:0]": lambda x, t: x[1, 0:0],
    "x[1, 10:]": lambda x, t: x[1, 10:],
    "x[1:, 2, 1:3]": lambda x, t: x[1:, 2, 1:3],
    "x[1:3, 1, ::2]": lambda x, t: x[1:3, 1, ::2],
    "x[1:, 1:]": lambda x, t: x[1:, 1:],
    "x[:, 1:3, ::2]": lambda x, t: x[:, 1:3, ::2],
    "x[..., 0]": lambda x, t: x[..., 0],
    "x[1, ..., 2]": lambda x, t: x[1, ..., 2],
    "x[..., 1:]": lambda x, t: x[..., 1:],
    "x[None, 1]": lambda x, t: x[None, 1],
    "x[None, ..., 0]": lambda x, t: x[None, ..., 0],
    "x[:, None, 1:3]": lambda x, t: x[:, None, 1:3],
    "x[1, None]": lambda x, t: x[1, None],
    "x[None]": lambda x, t: x[None],
    "x[...]": lambda x, t: x[...],
    "x[t, 1]": lambda x, t: x[t, 1],
    "x[1, t]": lambda x, t: x[1, t],
    "x[t, 1:3]": lambda x, t: x[t, 1:3],
    "x[1, True]": lambda x, t: x[1, True],
}

#: name -> a base of the picks, made of a (3, 4, 5) leaf
BASES = {
    "leaf": lambda x: x,
    "non-leaf": lambda x: x * 2,
    "transposed": lambda x: x.permute(2, 1, 0).transpose(0, 2),
    "expanded": lambda x: x[:1].expand(3, 4, 5),
}


def _chain(pick: Any, base: Any) -> Any:
    def run(m: Any) -> Any:
        x = leaf(m, 3, 4, 5)
        y = pick(base(x), m.tensor([0, 2]))
        graph = walk(y.grad_fn, 4), _saved(y.grad_fn)
        (y * grid(m, *y.shape)).sum().backward()
        return y, y.stride(), graph, x.grad

    return run


@pytest.mark.parametrize("base", list(BASES))
def test_chain_as_torchs(spec: str, base: str) -> None:
    programs = {name: _chain(pick, BASES[base]) for name, pick in PICKS.items()}
    same_each(programs, spec, decimals=None)


def _written(m: Any) -> Any:
    """Writes through chained picks reach their base and its graph, as torch's."""
    x = leaf(m, 3, 4, 5)
    base = x * 1
    y = base[1, 1:]
    y.mul_(3)
    z = base[..., 0]
    z.add_(1)
    w = base[None, 2]
    w.sub_(2)
    versions = base._version, y._version, z._version, w._version
    graphs = [walk(t.grad_fn, 3) for t in (base, y, z, w)]
    (base * grid(m, 3, 4, 5)).sum().backward()
    return base, y, z, w, versions, graphs, x.grad


def _followed(m: Any) -> Any:
    """A chained pick taken before a write into its base sees it; a write into its base
    after a backward that saved nothing of it."""
    x = leaf(m, 3, 4, 5)
    base = x * 1
    y = base[1:, 2, 1:3]
    base.mul_(2)
    y.sum().backward()
    return y, x.grad, walk(y.grad_fn, 4)


def _double(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    y = x[1, 1:] ** 2 + x[None, ..., 0].sum()
    (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = m.autograd.grad((g * grid(m, 3, 4, 5)).sum(), x)
    return g, gg


def _half(m: Any) -> Any:
    x = leaf(m, 3, 4, 5).half().detach().requires_grad_()
    y = x[1, 1:]
    y.sum().backward()
    return y, _saved(y.grad_fn), x.grad


def _zero_dim(m: Any) -> Any:
    x = m.tensor(2.0, dtype=m.float64, requires_grad=True)
    y, z = x[None], x[...]
    (y.sum() * 3 + z * 2).backward()
    return y, z, walk(y.grad_fn, 2), walk(z.grad_fn, 2), x.grad


def _empty(m: Any) -> Any:
    x = leaf(m, 3, 0, 5)
    y = x[1, :, 1:]
    y.sum().backward()
    return y, _saved(y.grad_fn), x.grad


def _under_no_grad(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    with m.no_grad():
        y, z = x[1, 1:], x[..., 0]
    return y, z, y.requires_grad, y.grad_fn, z.grad_fn, y._base is x


def _retained(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    y = x[2, 1:]
    y.retain_grad()
    (y * y).sum().backward()
    return y.grad, x.grad, y.is_leaf, y._base is x


def _leaf_view_written(m: Any) -> Any:
    """A write into a chained pick of a leaf is refused, as torch refuses it."""
    x = leaf(m, 3, 4, 5)
    x[1, 1:].mul_(2)


def _inference(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    with m.inference_mode():
        y = x[1, 1:]
    return y, y.requires_grad, y.grad_fn, y.is_inference()


def _hooked(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    y = x[None, 1:, 2]
    y.register_hook(lambda g: g * 2)
    (y * grid(m, *y.shape)).sum().backward()
    return x.grad


def _negative_step(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    return x[1, ::-1]


PROGRAMS = {
    "written": _written,
    "followed": _followed,
    "double backward": _double,
    "float16": _half,
    "0-d": _zero_dim,
    "empty": _empty,
    "no_grad": _under_no_grad,
    "retained": _retained,
    "negative step": _negative_step,
    "leaf view written": _leaf_view_written,
    "inference_mode": _inference,
    "hooked": _hooked,
}


def test_chained_picks_as_torchs(spec: str) -> None:
    same_each(PROGRAMS, spec, decimals=None)


def test_gradients_by_finite_differences() -> None:
    a = np.random.default_rng(0).standard_normal((3, 4, 5))

    def picks(x: Any) -> Any:
        parts = (x[1, 1:], x[..., 0], x[None, 2], x[1:, 2, 1:3], x[tw.tensor([0, 2]), 1])
        return tw.cat([p.reshape(-1) for p in parts])

    gradcheck(picks, a)


def _double_graph(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    (g,) = m.autograd.grad((x[1, 1:] ** 2).sum(), x, create_graph=True)
    return walk(g.grad_fn, 4)


def _unsqueeze_dims(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    return (
        x[None].grad_fn._saved_dim,
        x[1, None].grad_fn._saved_dim,
        x.unsqueeze(1).grad_fn._saved_dim,
    )


def _index_saved(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    fn = x[m.tensor([0, 2]), 1].grad_fn
    return fn._saved_self_sym_sizes, fn._saved_indices


def test_double_backward_graph(spec: str) -> None:
    same_each({"double backward graph": _double_graph}, spec)


def test_unsqueeze_saves_its_dim(spec: str) -> None:
    same_each({"unsqueeze dims": _unsqueeze_dims}, spec)


def test_index_node_saves_sizes_and_indices(spec: str) -> None:
    same_each({"index node": _index_saved}, spec)
