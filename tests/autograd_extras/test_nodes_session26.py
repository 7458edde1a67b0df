"""PyTorch's nodes as ``grad_fn`` shows them, for writes and ctc_loss (session 26): a write
into a view (``dst[0].copy_(src)``, ``dst[0].mul_(w)``, ``dst[:, 1] = v``) gives torch a
``CopySlices`` whose next functions are the base's old node, then those of the op that changed
the view but its first; a hook on that node sees their gradients. ``ctc_loss``'s node has one
input, the log-probabilities. Each program runs on torch 2.13 and on tensorweaver with only
the module changed (:mod:`snippet_outcomes`).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from snippet_outcomes import grid, leaf, same_each, walk

Program = Callable[[Any], Any]


def _operands(m: Any) -> tuple:
    """A leaf ``a`` (2, 3), a leaf ``src`` (3,) and ``dst = a * 1``, written into."""
    a, src = leaf(m, 2, 3), leaf(m, 3)
    return a, src, a * 1


#: Writes into ``dst`` (a view's change, or ``dst[index] = value``), by name.
WRITES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "copy_into_row": lambda m, dst, src: dst[0].copy_(src),
    "copy_float32": lambda m, dst, src: dst[0].copy_(src.float()),
    "copy_into_column": lambda m, dst, src: dst[:, 0].copy_(src[:2]),
    "copy_into_view_of_view": lambda m, dst, src: dst[0][1:].copy_(src[:2]),
    "copy_other_row": lambda m, dst, src: dst[0].copy_(dst[1]),
    "copy_narrowed": lambda m, dst, src: dst.narrow(1, 0, 2).copy_(dst.narrow(1, 1, 2) * src[:2]),
    "mul": lambda m, dst, src: dst[0].mul_(src),
    "div": lambda m, dst, src: dst[0].div_(src + 4),
    "sub_alpha": lambda m, dst, src: dst[0].sub_(src, alpha=2),
    "add_number": lambda m, dst, src: dst[0].add_(1),
    "addcmul": lambda m, dst, src: dst[0].addcmul_(src, src * 2),
    "addcdiv": lambda m, dst, src: dst[0].addcdiv_(src, src + 1, value=2),
    "lerp": lambda m, dst, src: dst[0].lerp_(src, 0.5),
    "zero": lambda m, dst, src: dst[0].zero_(),
    "pow": lambda m, dst, src: dst[0].pow_(2),
    "clamp": lambda m, dst, src: dst[0].clamp_(min=2.0),
    "relu": lambda m, dst, src: dst[0].relu_(),
    "fill_number": lambda m, dst, src: dst[0].fill_(2.0),
    "fill_tensor": lambda m, dst, src: dst[0].fill_(src[0]),
    "whole_view_mul": lambda m, dst, src: dst[:].mul_(src),
    "div_number": lambda m, dst, src: dst[0].div_(2),
    "pow_tensor": lambda m, dst, src: dst[0].pow_(src),
    "exp": lambda m, dst, src: dst[0].exp_(),
    "relu_functional": lambda m, dst, src: m.nn.functional.relu(dst[0], inplace=True),
    "index_add": lambda m, dst, src: dst[0].index_add_(0, m.tensor([0, 2]), src[:2]),
    "scatter": lambda m, dst, src: dst[0].scatter_(0, m.tensor([2, 0]), src[:2]),
    "masked_scatter": lambda m, dst, src: dst[0].masked_scatter_(src != 2, src),
    "copy_of_where": lambda m, dst, src: dst[0].copy_(m.where(src > 1, src, dst[1])),
    "two_rows_written": lambda m, dst, src: (dst[0].mul_(src), dst[1].copy_(src)),
    "set_row": lambda m, dst, src: dst.__setitem__(0, src),
    "set_row_number": lambda m, dst, src: dst.__setitem__(0, 5.0),
    "set_column": lambda m, dst, src: dst.__setitem__((slice(None), 1), src[:2]),
    "set_other_row": lambda m, dst, src: dst.__setitem__(0, dst[1]),
    "set_element_of_row": lambda m, dst, src: dst[0].__setitem__(1, 3.0),
    "set_rows_by_index": lambda m, dst, src: dst.__setitem__(m.tensor([0, 1]), src),
    "set_rows_by_index_number": lambda m, dst, src: dst.__setitem__(m.tensor([0, 1]), 2.0),
    "set_by_mask_number": lambda m, dst, src: dst.__setitem__(dst > 2, 1.0),
    "set_whole_number": lambda m, dst, src: dst.__setitem__(slice(None), 5.0),
    # (PyTorch's setitem views a value without its leading 1s and expands it to the selection)
    "set_whole_broadcast": lambda m, dst, src: dst.__setitem__(slice(None), src),
    "set_whole_0d": lambda m, dst, src: dst.__setitem__(Ellipsis, src[0]),
    "set_row_0d": lambda m, dst, src: dst.__setitem__(0, src[1]),
    "set_row_leading_one": lambda m, dst, src: dst.__setitem__(0, src.reshape(1, 3)),
    "set_columns_broadcast": lambda m, dst, src: dst.__setitem__(
        (slice(None), slice(0, 2)), src[:2].reshape(1, 2)
    ),
    "set_whole_leading_one": lambda m, dst, src: dst.__setitem__(
        slice(None), (src * 2).repeat(2, 1).reshape(1, 2, 3)
    ),
    "set_by_mask": lambda m, dst, src: dst.__setitem__(dst > 2, src[:1] * 1),
    "set_by_mask_0d": lambda m, dst, src: dst.__setitem__(dst > 2, src[0]),
    "set_by_index_leading_ones": lambda m, dst, src: dst.__setitem__(
        m.tensor([0, 1]), src.reshape(1, 1, 3)
    ),
    "set_by_index_then_int": lambda m, dst, src: dst.__setitem__((m.tensor([0, 1]), 1), src[0]),
}


def _chain(m: Any, write: Callable) -> Any:
    """The written tensor's node chain, two levels down, and the leaves' gradients."""
    a, src, dst = _operands(m)
    write(m, dst, src)
    chain = walk(dst.grad_fn, 2)
    (dst * grid(m, 2, 3)).sum().backward()
    return chain, a.grad, src.grad


def _hooked(m: Any, write: Callable) -> Any:
    """What a hook and a pre-hook on the written tensor's node see, and the gradients."""
    log: list = []
    a, src, dst = _operands(m)
    write(m, dst, src)
    dst.grad_fn.register_hook(lambda gi, go: log.append((gi, go)))
    dst.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    (dst * grid(m, 2, 3)).sum().backward()
    return tuple(log), a.grad, src.grad


def _hook_replaces(m: Any, write: Callable) -> Any:
    """A hook on the written tensor's node that doubles each gradient it sees."""
    a, src, dst = _operands(m)
    write(m, dst, src)
    dst.grad_fn.register_hook(lambda gi, go: tuple(None if g is None else g * 2 for g in gi))
    (dst * grid(m, 2, 3)).sum().backward()
    return a.grad, src.grad


_HOOKED = (
    "copy_into_row", "copy_into_column", "copy_into_view_of_view", "copy_float32", "mul",
    "add_number", "addcmul", "zero", "set_row", "set_row_number", "set_column",
    "set_rows_by_index", "set_whole_broadcast", "set_columns_broadcast", "set_by_mask",
    "index_add", "copy_of_where", "two_rows_written",
)  # fmt: skip

WRITE_NODES: dict[str, Program] = {
    **{f"chain_{name}": partial(_chain, write=w) for name, w in WRITES.items()},
    **{f"hook_{name}": partial(_hooked, write=WRITES[name]) for name in _HOOKED},
    **{f"replace_{name}": partial(_hook_replaces, write=WRITES[name]) for name in _HOOKED},
}


def _no_grad_base(m: Any) -> Any:
    """A write of a tensor that requires grad into a view of one that does not."""
    src = leaf(m, 3)
    dst = m.zeros(2, 3, dtype=m.float64)
    dst[0].copy_(src)
    chain = walk(dst.grad_fn, 2)
    (dst * grid(m, 2, 3)).sum().backward()
    return chain, src.grad


def _kept_after_backward(m: Any) -> Any:
    """The node's next functions once backward has freed it, as before."""
    a, src, dst = _operands(m)
    dst[0].mul_(src)
    fn = dst.grad_fn
    dst.sum().backward()
    return walk(fn, 2), a.grad, src.grad


def _double_backward(m: Any) -> Any:
    a, src, dst = _operands(m)
    dst[0].mul_(src)
    (g,) = m.autograd.grad((dst**2).sum(), src, create_graph=True)
    g.sum().backward()
    return g, a.grad, src.grad


WRITE_CORNERS: dict[str, Program] = {
    "no_grad_base": _no_grad_base,
    "kept_after_backward": _kept_after_backward,
    "double_backward": _double_backward,
}


def test_write_nodes_as_torch(spec: str) -> None:
    same_each({**WRITE_NODES, **WRITE_CORNERS}, spec)


#: Writes into views whose write-back is not ``setitem`` (ops/views.py): named CopySlices too.
REWRITTEN_VIEWS: dict[str, Program] = {
    "t_row_copy": partial(_chain, write=lambda m, dst, src: dst.t()[0].copy_(src[:2])),
    "flat_view_mul": partial(_chain, write=lambda m, dst, src: dst.view(6)[1:4].mul_(src)),
    "unsqueezed_copy": partial(
        _chain, write=lambda m, dst, src: dst[0].unsqueeze(0).copy_(src.unsqueeze(0))
    ),
}


def test_writes_into_rewritten_views(spec: str) -> None:
    same_each(REWRITTEN_VIEWS, spec)


# -- ctc_loss: CtcLossBackward0 has one input, the log-probabilities ----------------------------


def _ctc(m: Any, reduction: str, hook: bool, how: str = "batch") -> Any:
    log: list = []
    x = (grid(m, 5, 2, 4) / 17).requires_grad_()
    targets, lengths = m.tensor([[1, 2, 1], [2, 3, 0]]), (m.tensor([5, 4]), m.tensor([3, 2]))
    if how == "batch":
        loss = m.nn.functional.ctc_loss(x.log_softmax(2), targets, *lengths, reduction=reduction)
    elif how == "float32":
        lp = x.log_softmax(2).float()
        loss = m.nn.functional.ctc_loss(lp, targets, *lengths, reduction=reduction)
    else:  # unbatched
        lp = x.log_softmax(2)[:, 0]
        loss = m.nn.functional.ctc_loss(lp, targets[0], (5,), (3,), reduction=reduction)
    fn = loss.grad_fn if reduction == "none" else loss.grad_fn.next_functions[0][0]
    if reduction == "mean":
        fn = fn.next_functions[0][0]
    if hook:
        fn.register_hook(lambda gi, go: log.append((gi, go)))
        fn.register_prehook(lambda go: log.append(("pre", go)))
    chain = walk(loss.grad_fn, 4)
    (loss * 2).sum().backward()
    return chain, tuple(log), x.grad


CTC: dict[str, Program] = {
    **{f"batch_{r}": partial(_ctc, reduction=r, hook=True) for r in ("none", "mean")},
    "float32_sum": partial(_ctc, reduction="sum", hook=False, how="float32"),
    "unbatched": partial(_ctc, reduction="none", hook=True, how="unbatched"),
}


def test_ctc_loss_node_as_torch(spec: str) -> None:
    same_each(CTC, spec, decimals=4)


# -- clamp by tensor bounds: ClampBackward0's three edges (self, min, max) -------------------


def _clamp_by_tensors(m: Any, bounds: str) -> Any:
    log: list = []
    a, low = leaf(m, 3), (leaf(m, 3) - 2).detach().requires_grad_()
    high = (low + 2.5).detach().requires_grad_()
    kw = {"min": {"min": low}, "max": {"max": high}, "in_place_min": {"min": low}}[bounds]
    y = (a * 1).clamp_(**kw) if bounds.startswith("in_place") else (a * 1).clamp(**kw)
    y.grad_fn.register_hook(lambda gi, go: log.append(gi))
    (y * grid(m, 3)).sum().backward()
    return walk(y.grad_fn, 1), tuple(log), a.grad, low.grad, high.grad


def test_clamp_by_one_tensor_bound(spec: str) -> None:
    same_each(
        {b: partial(_clamp_by_tensors, bounds=b) for b in ("min", "max", "in_place_min")}, spec
    )
