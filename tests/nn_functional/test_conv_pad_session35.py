"""F.pad in constant mode where it crops or leaves the input, against torch 2.13: a crop
alone keeps the order of the input's strides (torch clones the narrowed view), and its node
is one ConstantPadNdBackward0 whose create_graph gradient is one such node again, for
widths that crop and grow together too."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from snippet_outcomes import grid, same_each, walk

#: Inputs whose memory is not C-ordered: transposed, one with a size-1 axis, stepped.
_INPUTS: dict[str, Callable[[Any], Any]] = {
    "transposed": lambda m: grid(m, 2, 3, 4).transpose(1, 2),
    "transposed 4-d": lambda m: grid(m, 1, 2, 3, 4).transpose(2, 3),
    "size-1 axis": lambda m: grid(m, 2, 3, 1, 4).transpose(1, 3),
    "stepped": lambda m: grid(m, 2, 3, 8)[:, :, ::2],
}


def _cropped(x: Callable, widths: tuple, m: Any) -> tuple:
    y = m.nn.functional.pad(x(m), widths)
    return y, y.stride()


#: (before: C-ordered, (8, 2, 1) for the first: torch (8, 1, 4))
def test_crop_keeps_the_order_of_the_input_strides(backend: str) -> None:
    same_each(
        {
            f"{name} {widths}": partial(_cropped, x, widths)
            for name, x in _INPUTS.items()
            for widths in ((-1, 0), (0, 0), (-1, -1, 0, -1), (0, -1, -1, 0))
        },
        backend,
    )


def _second_order(widths: tuple, m: Any) -> list:
    x = (grid(m, 2, 3, 4) / 10).requires_grad_()
    y = m.nn.functional.pad(x, widths, value=0.5)
    (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)
    (h,) = m.autograd.grad((g**3).sum(), x, create_graph=True)
    return [y, walk(g.grad_fn, 2), walk(h.grad_fn, 1), h]


#: (before: crops and grows gave two ConstantPadNdBackward0 nodes in a row)
def test_create_graph_gradient_is_one_node(backend: str) -> None:
    same_each(
        {str(w): partial(_second_order, w) for w in ((1, -1), (0, 0, -1, 2), (-1, 0), ())},
        backend,
        decimals=8,
    )


def _written_after(m: Any) -> list:
    """The result changed in place (torch's node saves no tensor), then a hook and a
    saved_tensors_hooks pack around a crop, and a crop under no_grad."""
    x = (grid(m, 2, 3, 4) / 10).requires_grad_()
    y = m.nn.functional.pad(x, (-1, 0, 1, -1))
    y.mul_(3)
    y.register_hook(lambda g: g * 2)
    packed = []
    with m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.shape) or t, lambda t: t):
        z = m.nn.functional.pad(x, (0, 0, -1, 0)).exp().sum()
    (y.sum() + z).backward()
    with m.no_grad():
        free = m.nn.functional.pad(x, (-1, 0))
    return [y, x.grad, packed, free.requires_grad, walk(y.grad_fn, 2)]


def test_crop_written_after(backend: str) -> None:
    same_each({"written": _written_after}, backend, decimals=8)


def _saved_pad(widths: tuple, m: Any) -> Any:
    y = m.nn.functional.pad(grid(m, 2, 3, 4).requires_grad_(), widths)
    return y.grad_fn._saved_pad


#: (before: no _saved_pad)
def test_saved_pad() -> None:
    same_each({str(w): partial(_saved_pad, w) for w in ((1, -1), (0, 0), (2, 1, 0, 0))}, "numpy")
