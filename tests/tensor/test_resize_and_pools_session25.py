"""``resize_`` past the end of memory a tensor shares (a view partway into its base, a
``detach()`` alias) and the layout of pools of channels-last and transposed inputs, each
compared with torch 2.13 running the same program.

torch's grown elements are uninitialised: each program writes them before it reads them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from snippet_outcomes import same_each


def _grown(m: Any, base: Any, x: Any, size: tuple) -> tuple:
    """``x.resize_(size)`` past the end of ``base``'s memory, its new elements written, then
    a write through each of ``x`` and ``base``: what each then holds, and ``x``'s layout."""
    have = x.numel()
    assert x.resize_(*size) is x
    x.view(-1)[have:] = m.arange(100.0, 100.0 + x.numel() - have)
    x.view(-1)[0] = -1.0
    base.view(-1)[-1] = -7.0
    return base, x, x.stride(), x.storage_offset(), base.storage_offset()


def _detached(m: Any, base: Any, size: tuple) -> tuple:
    alias = base.detach()
    return (*_grown(m, base, alias, size), alias.detach())  # (an alias of the grown alias)


def _grown_base(m: Any, base: Any, size: tuple) -> tuple:
    view = base[2:]  # (held across the resize_: it goes on seeing base's memory)
    grown = _grown(m, base, base, size)
    view[-1] = 50.0
    return (*grown, view, view.storage_offset(), base.clone())


def _twice(m: Any, base: Any, through_base: bool) -> tuple:
    view = base[2:] if not through_base else base[1:3]
    first = _grown(m, base, base if through_base else view, (8,))
    return (*first, *_grown(m, base, view, (12,)))


RESIZES = {
    # before: RuntimeError ("beyond the end of that memory") where the view starts past 0
    "offset_view": lambda m: (lambda b: _grown(m, b, b[2:], (30,)))(m.arange(6.0)),
    "offset_view_2d": lambda m: (lambda b: _grown(m, b, b[1:], (3, 4)))(m.arange(6.0)),
    "strided_view": lambda m: (lambda b: _grown(m, b, b[1:, ::2], (30,)))(
        m.arange(24.0).reshape(4, 6)
    ),
    "view_of_view": lambda m: (lambda b: _grown(m, b, b[1:][2:4], (8,)))(m.arange(6.0)),
    "start_view": lambda m: (lambda b: _grown(m, b, b[:2], (9,)))(m.arange(6.0)),
    # before: RuntimeError for a detach() alias (of a tensor, of a view partway in)
    "detached": lambda m: _detached(m, m.arange(6.0), (10,)),
    "detached_view": lambda m: _detached(m, m.arange(6.0)[1:], (10,)),
    "detached_view_2d": lambda m: _detached(m, m.arange(12.0).reshape(3, 4)[1:], (4, 4)),
    # before: RuntimeError for a base with views, and for a view of a detach() alias
    "base_with_views": lambda m: _grown_base(m, m.arange(6.0), (4, 3)),
    "view_of_alias": lambda m: (lambda b: (*_grown(m, b, b.detach()[2:], (9,)), b.detach()))(
        m.arange(6.0)
    ),
    # before: RuntimeError; grown memory grown again, through the view or its base
    "twice": lambda m: _twice(m, m.arange(6.0), through_base=False),
    "base_then_view": lambda m: _twice(m, m.arange(6.0), through_base=True),
    # NumPy's memory cannot grow (torch: RuntimeError, non-resizable storage)
    "numpy_view": lambda m: m.from_numpy(np.arange(6.0))[2:].resize_(30),
    "numpy": lambda m: m.from_numpy(np.arange(6.0)).resize_(30),
}


def test_resize_past_shared_memory_grows_it_as_torch(spec: str) -> None:
    same_each(RESIZES, spec, decimals=None)


def test_resize_of_an_alias_of_a_leaf_that_requires_grad_as_torch(spec: str) -> None:
    def grown(m: Any) -> tuple:
        leaf = m.arange(6.0, requires_grad=True)
        alias = leaf.detach()[2:]
        alias.resize_(30)
        alias[4:] = 0.0
        alias[0] = 5.0
        (leaf**2).sum().backward()
        return leaf, alias, leaf.grad

    same_each({"grown": grown}, spec, decimals=None)


X = np.random.default_rng(0).standard_normal((2, 3, 5, 6))


def _laid(result: Any) -> Any:
    """A pool's result (or ``(output, indices)``) with the strides of each tensor."""
    if isinstance(result, tuple):
        return tuple(_laid(t) for t in result)
    return result, result.stride()


def _channels_last(m: Any) -> Any:
    return m.tensor(X).contiguous(memory_format=m.channels_last)


def _transposed(m: Any) -> Any:
    """``(N, C, L)`` input whose channels are its innermost axis in memory."""
    return m.tensor(X[0]).transpose(1, 2)


POOLS = {
    # before (numpy; the indices on torch:cpu too): C-ordered results; torch's channels-last
    "adaptive_avg_2d": lambda m: m.nn.functional.adaptive_avg_pool2d(_channels_last(m), (2, 3)),
    "adaptive_max_2d": lambda m: m.nn.functional.adaptive_max_pool2d(_channels_last(m), (2, 3)),
    "adaptive_max_2d_indices": lambda m: m.nn.functional.adaptive_max_pool2d(
        _channels_last(m), (2, 3), return_indices=True
    ),
    # before (numpy; adaptive max's indices on torch:cpu too): C-ordered; torch's run as 2-D
    # pools over a height of one, channels-last for a transposed input
    "adaptive_avg_1d": lambda m: m.nn.functional.adaptive_avg_pool1d(_transposed(m), 3),
    "adaptive_max_1d": lambda m: m.nn.functional.adaptive_max_pool1d(_transposed(m), 3),
    "adaptive_max_1d_indices": lambda m: m.nn.functional.adaptive_max_pool1d(
        _transposed(m), 3, return_indices=True
    ),
    "avg_1d": lambda m: m.nn.functional.avg_pool1d(_transposed(m), 2),
    "lp_1d": lambda m: m.nn.functional.lp_pool1d(_transposed(m), 2.0, 2),
    "max_1d_indices": lambda m: m.nn.functional.max_pool1d(_transposed(m), 2, return_indices=True),
    # before (numpy): the values kept the input's transposed layout; torch's: C order
    "max_1d_unbatched_indices": lambda m: m.nn.functional.max_pool1d(
        m.tensor(X[0, 0]).t(), 2, return_indices=True
    ),
    # unchanged: torch's 1-D max pool without indices is C-ordered, whatever its input's
    "max_1d": lambda m: m.nn.functional.max_pool1d(_transposed(m), 2),
    "adaptive_avg_2d_contiguous": lambda m: m.nn.functional.adaptive_avg_pool2d(
        m.tensor(X)[:, :, ::2], (2, 3)
    ),
}


def test_pools_lay_their_results_out_as_torch(spec: str) -> None:
    same_each({name: lambda m, f=f: _laid(f(m)) for name, f in POOLS.items()}, spec)


def test_pools_of_one_channel_channels_last_lay_out_as_torch(spec: str) -> None:
    def one_channel(m: Any) -> Any:
        return m.tensor(X)[:, :1].contiguous(memory_format=m.channels_last)

    same_each(
        {
            "avg_2d": lambda m: _laid(m.nn.functional.avg_pool2d(one_channel(m), 2)),
            "adaptive_max_2d_indices": lambda m: _laid(
                m.nn.functional.adaptive_max_pool2d(one_channel(m), (2, 3), return_indices=True)
            ),
        },
        spec,
    )


def test_lp_pool1d_of_one_transposed_batch_lays_out_as_torch() -> None:
    def pooled(m: Any) -> Any:
        return _laid(m.nn.functional.lp_pool1d(m.tensor(X[:1, 0]).transpose(1, 2), 2.0, 2))

    same_each({"lp_1d": pooled}, "numpy")
