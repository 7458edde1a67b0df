"""Result layouts (``stride()``) as torch 2.13's where a size-1 axis's stride decides them:
pools and convolutions of inputs with one channel, one batch or a length of one laid out
channels-last (torch's ``suggest_memory_format`` reads those strides; the backends' C-order
flags ignore them), a kernel's C-ordered result with a size-1 axis (C's stride there), 1-D
convolutions (torch's 2-D ones over a height of one), NumPy elementwise results of one batch,
the parts and pairs of a permuted complex tensor, and ``fill_`` of an empty tensor."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import grid, same_each


def _laid(r: Any) -> Any:
    if isinstance(r, tuple):
        return tuple(_laid(t) for t in r)
    return r, r.stride()


def _innermost_channels(m: Any, *shape: int) -> Any:
    """A ``grid`` of ``shape`` whose channel axis is innermost in memory (a permuted one)."""
    order = (0, *range(2, len(shape)), 1)
    back = tuple(int(i) for i in np.argsort(order))
    return grid(m, *(shape[d] for d in order)).permute(*back)


def _stepped_channels_last(m: Any, n: int, c: int, h: int, w: int) -> Any:
    """``contiguous(memory_format=channels_last)`` of a stepped view: channel stride 1."""
    return grid(m, n, 2 * c, h, w)[:, ::2].contiguous(memory_format=m.channels_last)


def _f(m: Any) -> Any:
    return m.nn.functional


POOLS_1D: dict[str, Callable[[Any, Any], Any]] = {
    "avg": lambda m, x: _f(m).avg_pool1d(x, 2),
    "max": lambda m, x: _f(m).max_pool1d(x, 2),
    "max_indices": lambda m, x: _f(m).max_pool1d(x, 2, return_indices=True),
    "adaptive_avg": lambda m, x: _f(m).adaptive_avg_pool1d(x, 2),
    "adaptive_max_indices": lambda m, x: _f(m).adaptive_max_pool1d(x, 2, return_indices=True),
}
POOLS_2D: dict[str, Callable[[Any, Any], Any]] = {
    "avg": lambda m, x: _f(m).avg_pool2d(x, 2),
    "max": lambda m, x: _f(m).max_pool2d(x, 2),
    "max_indices": lambda m, x: _f(m).max_pool2d(x, 2, return_indices=True),
    "adaptive_avg": lambda m, x: _f(m).adaptive_avg_pool2d(x, (2, 2)),
    "adaptive_max_indices": lambda m, x: _f(m).adaptive_max_pool2d(x, 2, return_indices=True),
    "conv": lambda m, x: _f(m).conv2d(x, m.ones(2, x.shape[1], 2, 2, dtype=m.float64)),
}


def _cases(pools: dict, inputs: dict) -> dict:
    return {
        f"{p} of {i}": lambda m, p=p, i=i: _laid(pools[p](m, inputs[i](m)))
        for p in pools
        for i in inputs
    }


#: (before: numpy's C flag, and torch's is_contiguous, took these for C order)
SIZE_ONE_1D = _cases(
    POOLS_1D,
    {
        "one channel innermost": lambda m: _innermost_channels(m, 2, 1, 4),
        "one batch and channel": lambda m: _innermost_channels(m, 1, 1, 5),
        "length 2, odd channels": lambda m: _innermost_channels(m, 2, 3, 2),
        "one channel, length 2": lambda m: _innermost_channels(m, 2, 1, 2),
        "C order, one channel": lambda m: grid(m, 2, 1, 5),
    },
)
SIZE_ONE_2D = _cases(
    POOLS_2D,
    {
        "one channel innermost": lambda m: _innermost_channels(m, 2, 1, 4, 4),
        "one channel, stepped channels_last": lambda m: _stepped_channels_last(m, 2, 1, 4, 5),
        "one batch and channel": lambda m: _innermost_channels(m, 1, 1, 5, 4),
        "one channel, 2x2": lambda m: _innermost_channels(m, 2, 1, 2, 2),
        "width one": lambda m: _innermost_channels(m, 2, 3, 4, 1),
        "C order, one channel": lambda m: grid(m, 2, 1, 4, 5),
    },
)


def test_pools_of_inputs_with_a_size_one_axis(backend: str) -> None:
    same_each({**SIZE_ONE_1D, **SIZE_ONE_2D}, backend)


def _complex(m: Any, *shape: int) -> Any:
    re = grid(m, *shape)
    return m.complex(re, 1 - re)


#: (before, numpy: the parts' arrays were C-ordered copies; view_as_real's a C-ordered stack)
PARTS = {
    "real of permuted, neg": lambda m: _laid(-_complex(m, 2, 3, 4).permute(1, 2, 0).real),
    "imag of transposed, clone": lambda m: _laid(_complex(m, 3, 5).t().imag.clone()),
    "real of C-ordered, + 1": lambda m: _laid(_complex(m, 2, 3).real + 1),
    "imag of a column step, * 2": lambda m: _laid(_complex(m, 4, 6)[:, ::2].imag * 2),
    "real of channels_last, exp": lambda m: _laid(
        _complex(m, 2, 3, 2, 2).contiguous(memory_format=m.channels_last).real.exp()
    ),
    "view_as_real of permuted, + 0": lambda m: _laid(
        m.view_as_real(_complex(m, 2, 3, 4).permute(2, 0, 1)) + 0
    ),
    "view_as_real of transposed, clone": lambda m: _laid(
        m.view_as_real(_complex(m, 3, 2).t()).clone()
    ),
    "imag of a one-row transpose, clone": lambda m: _laid(_complex(m, 1, 4).t().imag.clone()),
}


def test_complex_parts_keep_their_tensors_order(backend: str) -> None:
    same_each(PARTS, backend)


#: (before, torch:cpu: an empty tensor filled with a tensor value had strides (0, 0))
FILLS = {
    f"{dtype} {shape}": lambda m, dtype=dtype, shape=shape: (
        lambda x: _laid(x.fill_(m.tensor(1, dtype=x.dtype)))
    )(m.zeros(*shape, dtype=getattr(m, dtype)))
    for dtype in ("float64", "int64", "bool")
    for shape in ((0, 3), (2, 0, 3))
}


def test_fill_of_an_empty_tensor_keeps_its_strides(backend: str) -> None:
    same_each(FILLS, backend)


@pytest.mark.cunumeric
def test_one_channel_channels_last_pool_on_every_backend(backend: str) -> None:
    same_each(
        {
            "avg_pool2d": lambda m: _laid(
                _f(m).avg_pool2d(_stepped_channels_last(m, 2, 1, 4, 4), 2)
            ),
            "avg_pool1d": lambda m: _laid(_f(m).avg_pool1d(_innermost_channels(m, 2, 1, 4), 2)),
        },
        backend,
    )


def _conv1d(m: Any, x: Any, w: Any) -> Any:
    return _laid(_f(m).conv1d(x, w))


def _conv_transpose1d(m: Any, x: Any, w: Any) -> Any:
    return _laid(_f(m).conv_transpose1d(x, w))


#: torch runs them as 2-D ones of x.contiguous() and the weight over a height of one: a weight
#: laid out (O, K, I) makes the result channels-last. (Before: C order, whatever the operands.)
CONV_1D = {
    "conv1d, weight innermost channels": lambda m: _conv1d(
        m, grid(m, 2, 3, 5), _innermost_channels(m, 2, 3, 2)
    ),
    "conv1d, one channel innermost": lambda m: _conv1d(
        m, _innermost_channels(m, 2, 1, 5), grid(m, 2, 1, 2)
    ),
    "conv1d, transposed input (made C-ordered)": lambda m: _conv1d(
        m, _innermost_channels(m, 2, 3, 5), grid(m, 4, 3, 3)
    ),
    "conv_transpose1d, transposed input": lambda m: _conv_transpose1d(
        m, _innermost_channels(m, 2, 3, 4), grid(m, 3, 2, 2)
    ),
    "conv_transpose1d, weight innermost": lambda m: _conv_transpose1d(
        m, grid(m, 2, 3, 4), _innermost_channels(m, 3, 2, 2)
    ),
}


def test_one_dimensional_convolutions_lay_out_as_torch(backend: str) -> None:
    same_each(CONV_1D, backend)


#: (before, numpy: NumPy's order="K" gave the size-1 batch axis the item size, where torch
#: keeps its place in the memory order: (30, 1, 6))
ONE_BATCH = {
    "square": lambda m: _laid(_innermost_channels(m, 1, 6, 5).pow(2)),
    "cube": lambda m: _laid(_innermost_channels(m, 1, 6, 5).pow(3)),
    "times a number": lambda m: _laid(_innermost_channels(m, 1, 4, 3) * 2.5),
    "plus a 0-d tensor": lambda m: _laid(_innermost_channels(m, 1, 4, 3) + m.tensor(1.0)),
    "plus itself": lambda m: (lambda x: _laid(x + x))(_innermost_channels(m, 1, 4, 3)),
    "lp_pool1d": lambda m: _laid(_f(m).lp_pool1d(_innermost_channels(m, 1, 6, 5), 2.0, 2)),
    "lp_pool1d, p 3": lambda m: _laid(_f(m).lp_pool1d(_innermost_channels(m, 1, 4, 4), 3.0, 2)),
}


def test_elementwise_results_of_one_batch_keep_torch_strides(backend: str) -> None:
    same_each(ONE_BATCH, backend)


# -- found here, in files this fix does not own ------------------------------------------------


def test_squeeze_keeps_the_other_axes_strides(backend: str) -> None:
    same_each(
        {
            "squeeze 2": lambda m: _laid(
                m.ones(1, 2, 1, 3).contiguous(memory_format=m.channels_last).squeeze(2)
            ),
            "conv1d of one batch": lambda m: _conv1d(
                m, grid(m, 1, 3, 4), _innermost_channels(m, 2, 3, 2)
            ),
        },
        backend,
    )


def test_unary_results_of_one_batch_keep_torch_strides() -> None:
    same_each(
        {
            "neg": lambda m: _laid(-_innermost_channels(m, 1, 4, 3)),
            "exp": lambda m: _laid(_innermost_channels(m, 1, 4, 3).exp()),
        },
        "numpy",
    )


def test_c_ordered_with_an_odd_size_one_stride_plus_a_number() -> None:
    same_each(
        {
            "transposed row": lambda m: _laid(grid(m, 1, 4).t() + 1),
            "its pairs": lambda m: _laid(m.view_as_real(_complex(m, 1, 4).t()) * 1),
        },
        "numpy",
    )
