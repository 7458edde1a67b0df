"""Corners of views' histories after in-place changes, each compared with torch 2.13 running
the same program (:mod:`snippet_outcomes`): ``retains_grad`` as a flag of the tensor, views
PyTorch cannot regenerate (split pieces, views made under ``no_grad``) refused after any write
into their base's memory, views of a ``.data`` alias, which share its counter of their own,
and the ``CopySlices`` node of a write into a permuted or reshaped view.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, Callable

from snippet_outcomes import grid as _grid
from snippet_outcomes import leaf as _leaf
from snippet_outcomes import same_each, walk

# -- retains_grad: a flag that retain_grad() sets on the tensor ----------------------------


def _retained(m: Any, change: Callable) -> tuple:
    """The flag, ``.grad`` and whether reading it warned, after ``change`` of a retained
    non-leaf."""
    x = _leaf(m, 2, 3)
    y = x * 2
    y.retain_grad()
    loss = change(m, y)
    if loss is not None:
        loss.backward()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        grad = y.grad
    return y.retains_grad, grad, len(seen), x.grad


def _piece_retained(m: Any, split: str, retained: bool = True) -> tuple:
    b = _leaf(m, 4, 2) * 1
    p = getattr(b, split)(2 if split != "unbind" else 0)[1]
    if retained:
        p.retain_grad()
    b.add_(1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        grad = p.grad
    return p.retains_grad, grad, len(seen)


RETAINED: dict[str, Callable] = {
    "mul_": partial(_retained, change=lambda m, y: (y.mul_(3) * 1).sum()),
    "t_": partial(_retained, change=lambda m, y: (y.t_() * 1).sum()),
    "squeeze_": partial(_retained, change=lambda m, y: y.unsqueeze_(0).squeeze_(0).sum()),
    "detach_": partial(_retained, change=lambda m, y: y.detach_()),
    "row_written": partial(_retained, change=lambda m, y: y[0].mul_(2) and y.sum()),
    "no_backward": partial(_retained, change=lambda m, y: None),
    **{f"piece_{s}": partial(_piece_retained, split=s) for s in ("split", "chunk", "unbind")},
    "piece_not_retained": partial(_piece_retained, split="split", retained=False),
}


def test_retains_grad_stays_a_flag(spec: str) -> None:
    # before: retains_grad False after t_/unsqueeze_/detach_ and for a piece whose base changed
    same_each(RETAINED, spec)


# -- views PyTorch cannot regenerate, after a write that misses them -----------------------


def _no_grad_view(m: Any, leaf_base: bool, write: str, use: int) -> Any:
    """Views made under no_grad of a base that requires grad, then one of them (or the base,
    apart from them) written under no_grad: torch refuses both at their next use."""
    x = _leaf(m, 4, 2)
    b = x if leaf_base else x * 1
    with m.no_grad():
        views = (b[0], b[1])
        if write == "view":
            views[0].mul_(2)
        else:
            b[3].mul_(2)
    return views[use] * 2


def _piece_written(m: Any, split: str, how: str, use: int) -> Any:
    x = _leaf(m, 4, 2)
    b = x * 1
    pieces = getattr(b, split)(2 if split != "unbind" else 0)
    if how == "data_of_piece":
        pieces[0].data.mul_(2)  # (its own counter: no piece's version moves)
    elif how == "base_data_row":
        b.data[3].zero_()
    else:  # a detach() of the base, written where no piece is... but all share the memory
        b.detach()[0].zero_()
    r = pieces[use] * 2
    r.sum().backward()
    return r, x.grad, pieces[use]._version


NOT_REGENERATED: dict[str, Callable] = {
    **{
        f"no_grad_{'leaf' if lb else 'nonleaf'}_{w}_{u}": partial(
            _no_grad_view, leaf_base=lb, write=w, use=u
        )
        for lb in (True, False)
        for w in ("view", "base_apart")
        for u in (0, 1)
    },
    **{
        f"{s}_{how}_{u}": partial(_piece_written, split=s, how=how, use=u)
        for s in ("split", "unbind")
        for how in ("data_of_piece", "base_data_row", "detached_base_row")
        for u in (0, 1)
    },
}


def test_views_not_regenerated_after_a_write_elsewhere(spec: str) -> None:
    # before: no error for the no_grad views and the detached write (torch refuses)
    same_each(NOT_REGENERATED, spec)


# -- views of a .data alias: the alias's own counter -------------------------------------


def _data_view_versions(m: Any, write: str) -> tuple:
    base = _leaf(m, 5) * 1
    d = base.data
    v = d[:4]
    w = v[1:]
    if write == "base":
        base.add_(1)
    elif write == "alias":
        d.mul_(2)
    else:
        w.mul_(2)
    return v._version, w._version, d._version, base._version, v, w


def _data_view_saved(m: Any, depth: int) -> Any:
    x = _leaf(m, 3)
    base = _grid(m, 5)
    v = base.data[:4]
    if depth == 2:
        v = v[1:]
    y = (x * v[:3]).sum()
    base.mul_(2)
    y.backward()
    return x.grad, base


DATA_VIEWS: dict[str, Callable] = {
    **{f"versions_{w}": partial(_data_view_versions, write=w) for w in ("base", "alias", "view")},
    **{f"saved_depth{d}": partial(_data_view_saved, depth=d) for d in (1, 2)},
}


def test_views_of_a_data_alias(spec: str) -> None:
    # before: the views' versions moved with the base's write, and backward refused
    same_each(DATA_VIEWS, spec)


# -- a write into a permuted or reshaped view: one CopySlices --------------------------------


def _written(m: Any, write: Callable, hooked: bool, grad_base: bool = True) -> tuple:
    log: list = []
    a, src = _leaf(m, 2, 3), _leaf(m, 3)
    dst = a * 1 if grad_base else m.zeros(2, 3, dtype=m.float64)
    write(dst, src)
    chain = walk(dst.grad_fn, 3)
    if hooked:
        dst.grad_fn.register_hook(lambda gi, go: log.append((gi, go)))
    (dst * _grid(m, 2, 3)).sum().backward()
    return chain, tuple(log), a.grad, src.grad


REWRITES: dict[str, Callable] = {
    "t_mul_number": lambda dst, src: dst.t().mul_(2),
    "t_rows_add": lambda dst, src: dst.t()[1:].add_(src[:2]),
    "permute_row_copy": lambda dst, src: dst.permute(1, 0)[2].copy_(src[1:]),
    "view_t_row": lambda dst, src: dst.view(3, 2).t()[0].mul_(src),
    "reshape_row_addcmul": lambda dst, src: dst.reshape(3, 2)[1].addcmul_(src[:2], src[1:]),
    "flatten_slice_zero": lambda dst, src: dst.flatten()[2:5].zero_(),
    "unsqueeze_t_copy": lambda dst, src: dst.unsqueeze(0)[0].t()[1].copy_(src[:2]),
    "movedim_row_mul": lambda dst, src: dst.movedim(1, 0)[0].mul_(src[:2]),
    "narrow_t_mul": lambda dst, src: dst.narrow(1, 1, 2).t().mul_(3),
    "diagonal_mul": lambda dst, src: dst.diagonal().mul_(src[:2]),
    "reshape_step_copy": lambda dst, src: dst.reshape(6)[::2].copy_(src * 10),
    "unfold_copy": lambda dst, src: dst[0].unfold(0, 2, 1)[0].copy_(src[:2] * 10),
}

REWRITTEN: dict[str, Callable] = {
    **{
        f"{k}_{h}": partial(_written, write=w, hooked=h)
        for k, w in REWRITES.items()
        for h in (0, 1)
    },
    "no_grad_base": partial(_written, write=REWRITES["t_rows_add"], hooked=False, grad_base=False),
}


def test_writes_into_rewritten_views_are_copy_slices(spec: str) -> None:
    # before: CopyBackwards over the view's node (TBackward0, ViewBackward0, ...)
    same_each(REWRITTEN, spec)


def _whole_view_written(m: Any, view: Callable, loss: str) -> tuple:
    """A view of all of its base changed in place: its regenerated node is an
    AsStridedBackward0 of its own over the base's CopySlices."""
    x = _leaf(m, 2, 3)
    b = x * 1
    v = view(b)
    v.retain_grad()
    seen: list = []
    v.mul_(3)
    v.register_hook(lambda g: seen.append(g.clone()))
    out = (v * v).sum() if loss == "view" else (b * _grid(m, 2, 3)).sum()
    chain = walk(v.grad_fn, 3), walk(b.grad_fn, 3)
    out.backward()
    return chain, x.grad, v.grad, v.retains_grad, tuple(seen)


WHOLE_VIEWS: dict[str, Callable] = {
    "view": lambda b: b.view(2, 3),
    "narrow": lambda b: b.narrow(0, 0, 2),
    "flat": lambda b: b.view(6),
}


def test_writes_into_a_view_of_all_of_its_base(spec: str) -> None:
    # before: the view kept MulBackward0 and the base read CopyBackwards
    same_each(
        {
            f"{k}_{loss}": partial(_whole_view_written, view=v, loss=loss)
            for k, v in WHOLE_VIEWS.items()
            for loss in ("view", "base")
        },
        spec,
    )


# -- writes of values that require grad into views of a base without grad ------------------------


def _write_with_grad_into(m: Any, view: str) -> Any:
    src = _leaf(m, 2)
    b = m.zeros(4, 2, dtype=m.float64)
    if view == "no_grad_row":
        with m.no_grad():
            v = b[0]
    elif view == "split_piece_row":
        v = b.split(2)[0][1]
    else:
        v = b.unbind()[0]
    v.copy_(src)
    (b * 2).sum().backward()
    return b, src.grad


def test_write_with_grad_into_a_view_of_a_base_without_grad(spec: str) -> None:
    same_each(
        {
            v: partial(_write_with_grad_into, view=v)
            for v in ("no_grad_row", "split_piece_row", "unbind_piece")
        },
        spec,
    )
