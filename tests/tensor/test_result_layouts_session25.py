"""Result layouts as torch 2.13 reports them (``stride()``, ``is_contiguous()``), beyond the
second reading's cases: cumulative sums and softmaxes are C-ordered whatever the input's
layout; flips, argsorts and sorts keep the input's axis order (a stepped one's too); a
keepdim reduction's kept axes have C order's strides; 2-D convolutions and pools (and 3-D
max pools) of a channels-last input (or weight) are channels-last, their indices too; new
empty tensors have C order's strides, which their views follow; an empty diagonal's stride
is the sum of its two dimensions'. Each program is compared with torch."""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
from snippet_outcomes import same_each

Program = Callable[[Any], Any]


def _grid(m: Any, *shape: int) -> Any:
    return (m.arange(float(math.prod(shape)), dtype=m.float64).reshape(shape) / 7).sin()


def _cl(m: Any, *shape: int) -> Any:
    fmt = m.channels_last if len(shape) == 4 else m.channels_last_3d
    return _grid(m, *shape).to(memory_format=fmt)


def _layout(make: Program) -> Program:
    def program(m: Any) -> tuple:
        t = make(m)
        return t.stride(), t.is_contiguous()

    return program


#: Inputs of several layouts: transposed, channels-last, stepped, permuted with a size-1 axis.
INPUTS: dict[str, Program] = {
    "transposed": lambda m: _grid(m, 3, 4).t(),
    "channels_last": lambda m: _cl(m, 2, 3, 4, 6),
    "stepped_channels_last": lambda m: _cl(m, 2, 3, 4, 6)[..., ::2],
    "stepped_transposed": lambda m: _grid(m, 6, 4)[::2].t(),
    "permuted_3d": lambda m: _grid(m, 2, 3, 4).transpose(0, 2),
    "size_one_axis": lambda m: _grid(m, 1, 3, 4).permute(2, 0, 1),
}
OPS: dict[str, Callable[[Any], Any]] = {
    "cumsum": lambda x: x.cumsum(1),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(0),
    "flip": lambda x: x.flip(0),
    "argsort": lambda x: x.argsort(1),
    "sort": lambda x: x.sort(0)[0],
}


def test_elementwise_like_results_numpy() -> None:
    same_each(
        {
            f"{op}_of_{name}": _layout(lambda m, make=make, f=f: f(make(m)))
            for name, make in INPUTS.items()
            for op, f in OPS.items()
        },
        "numpy",
    )


#: Keepdim reductions of a channels-last and a transposed tensor.
KEPT: dict[str, Program] = {
    "sum_channels": lambda m: _cl(m, 2, 3, 4, 5).sum(1, keepdim=True),
    "sum_two_axes": lambda m: _cl(m, 2, 3, 4, 5).sum((2, 3), keepdim=True),
    "prod": lambda m: _cl(m, 2, 3, 4, 5).prod(0, keepdim=True),
    "amin": lambda m: _cl(m, 2, 3, 4, 5).amin((0, 1), keepdim=True),
    "any": lambda m: (_cl(m, 2, 3, 4, 5) > 0).any(3, keepdim=True),
    "all": lambda m: (_cl(m, 2, 3, 4, 5) > 0).all(1, keepdim=True),
    "count": lambda m: (_cl(m, 2, 3, 4, 5) > 0).sum(1, keepdim=True),
    "sum_of_transposed": lambda m: _grid(m, 3, 4).t().sum(1, keepdim=True),
    "amax_of_transposed": lambda m: _grid(m, 3, 4).t().amax(0, keepdim=True),
    "sum_of_permuted": lambda m: _grid(m, 2, 3, 4, 5).transpose(0, 3).sum((0, 3), keepdim=True),
}


def test_keepdim_reductions_numpy() -> None:
    same_each({name: _layout(make) for name, make in KEPT.items()}, "numpy")


def F(m: Any) -> Any:  # noqa: N802  (torch.nn.functional's usual name)
    return m.nn.functional


#: Convolutions and pools of channels-last operands, and their gradients' values.
KERNELS: dict[str, Program] = {
    "conv2d_input": lambda m: F(m).conv2d(_cl(m, 2, 2, 5, 4), _grid(m, 3, 2, 3, 3), padding=1),
    "conv2d_weight": lambda m: F(m).conv2d(_grid(m, 1, 2, 4, 4), _cl(m, 3, 2, 3, 3)),
    "conv2d_bias_stride": lambda m: F(m).conv2d(
        _cl(m, 2, 2, 5, 4), _cl(m, 3, 2, 3, 3), _grid(m, 3), stride=2
    ),
    "conv2d_groups": lambda m: F(m).conv2d(_cl(m, 2, 4, 5, 4), _grid(m, 4, 2, 3, 3), groups=2),
    "conv2d_unbatched": lambda m: F(m).conv2d(
        _grid(m, 4, 4, 2).permute(2, 0, 1), _grid(m, 3, 2, 3, 3)
    ),
    "conv1d_transposed": lambda m: F(m).conv1d(
        _grid(m, 2, 5, 3).transpose(1, 2), _grid(m, 4, 3, 2)
    ),
    "conv_transpose2d": lambda m: F(m).conv_transpose2d(_cl(m, 1, 2, 4, 4), _grid(m, 2, 3, 3, 3)),
    "conv_transpose2d_weight": lambda m: F(m).conv_transpose2d(
        _grid(m, 1, 2, 4, 4), _cl(m, 2, 3, 3, 3)
    ),
    "max_pool2d_padded": lambda m: F(m).max_pool2d(_cl(m, 2, 3, 5, 5), 3, 2, 1),
    "max_pool2d_indices": lambda m: F(m).max_pool2d(_cl(m, 1, 2, 4, 4), 2, return_indices=True),
    "max_pool2d_dilated": lambda m: F(m).max_pool2d(_cl(m, 1, 2, 5, 5), 2, dilation=2),
    "max_pool3d": lambda m: F(m).max_pool3d(_cl(m, 1, 2, 4, 4, 4), 2, return_indices=True),
    "avg_pool2d": lambda m: F(m).avg_pool2d(_cl(m, 1, 2, 4, 4), 2, ceil_mode=True, padding=1),
    "avg_pool3d": lambda m: F(m).avg_pool3d(_cl(m, 1, 2, 4, 4, 4), 2),
    "lp_pool2d": lambda m: F(m).lp_pool2d(_cl(m, 1, 2, 4, 4), 2, 2),
    "max_pool2d_unbatched": lambda m: F(m).max_pool2d(_grid(m, 4, 4, 2).permute(2, 0, 1), 2),
    "max_pool1d_transposed": lambda m: F(m).max_pool1d(_grid(m, 2, 5, 6).transpose(1, 2), 2),
    "max_pool2d_of_unsqueezed": lambda m: F(m).max_pool2d(
        _grid(m, 4, 4, 2).permute(2, 0, 1).unsqueeze(0), 2
    ),
    "conv2d_of_unsqueezed": lambda m: F(m).conv2d(
        _grid(m, 4, 4, 2).permute(2, 0, 1).unsqueeze(0), _grid(m, 3, 2, 3, 3)
    ),
}


def _laid_out(make: Program) -> Program:
    def program(m: Any) -> Any:
        out = make(m)
        outs = out if isinstance(out, tuple) else (out,)
        return [(t.stride(), t.is_contiguous()) for t in outs], outs

    return program


def _gradients(m: Any) -> tuple:
    x = _cl(m, 2, 2, 5, 4).requires_grad_()
    w = _grid(m, 3, 2, 3, 3).requires_grad_()
    y = F(m).conv2d(x, w, padding=1)
    z, _ = F(m).max_pool2d(y, 2, return_indices=True)
    (z * _grid(m, *z.shape)).sum().backward()
    return y.grad_fn.name(), z.grad_fn.name(), x.grad, w.grad


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_channels_last_kernels(spec: str) -> None:
    same_each({name: _laid_out(make) for name, make in KERNELS.items()}, spec)
    same_each({"gradients": _gradients}, spec)


@pytest.mark.cunumeric
def test_channels_last_kernels_cunumeric() -> None:
    names = ("conv2d_input", "max_pool2d_indices")
    same_each({name: _laid_out(KERNELS[name]) for name in names}, "cunumeric")


#: New empty tensors and their views; empty diagonals.
EMPTY: dict[str, Program] = {
    "zeros_t": lambda m: m.zeros(0, 3).t(),
    "empty_permuted": lambda m: m.empty(2, 0, 3).permute(2, 0, 1),
    "ones_half": lambda m: m.ones(0, 3, dtype=m.float16).t(),
    "full_slice": lambda m: m.full((4, 0, 3), 1.0)[1:].transpose(0, 2),
    "diagonal_past": lambda m: _grid(m, 3, 3).diagonal(5),
    "diagonal_below_transposed": lambda m: _grid(m, 3, 3).t().diagonal(-7),
    "diagonal_3d": lambda m: _grid(m, 2, 3, 4).diagonal(9, 1, 2),
    "diagonal_of_empty": lambda m: m.zeros(2, 0, 3).diagonal(0, 0, 2),
    "diagonal_bool": lambda m: (_grid(m, 3, 3) > 0).diagonal(4),
}


def _empty_program(make: Program) -> Program:
    def program(m: Any) -> tuple:
        t = make(m)
        return t.stride(), t.storage_offset(), t.shape, t.dtype

    return program


def _empty_diagonal_gradient(m: Any) -> tuple:
    x = _grid(m, 3, 3).requires_grad_()
    y = x.diagonal(5)
    (y.sum() + x.diagonal(1).sum()).backward()
    return y.grad_fn.name(), x.grad


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_empty_layouts(spec: str) -> None:
    programs = {name: _empty_program(make) for name, make in EMPTY.items()}
    same_each({**programs, "diagonal_gradient": _empty_diagonal_gradient}, spec)
