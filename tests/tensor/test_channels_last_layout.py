"""Channels-last layouts as PyTorch lays them out: ``contiguous``, ``to``, ``clone`` and the
``*_like`` functions with ``memory_format=``, the ``preserve_format`` default (a dense
layout kept, an expanded or stepped one made C order), and ``is_contiguous`` of 5-d tensors.
Before, every memory format was ignored: ``x.contiguous(memory_format=channels_last)``
stayed row-major (``is_contiguous(memory_format=channels_last)`` False, as a script checks
it), and ``clone()`` of an expanded view kept its zero strides."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

SHAPES = {"channels_last": (2, 3, 4, 5), "channels_last_3d": (2, 3, 4, 5, 6)}


def _pair(shape: tuple[int, ...]) -> tuple[tw.Tensor, torch.Tensor]:
    a = np.random.default_rng(0).standard_normal(shape)
    return tw.tensor(a), torch.tensor(a)


def _same_layout(ours: tw.Tensor, theirs: torch.Tensor) -> None:
    assert ours.stride() == theirs.stride()
    for name in ("contiguous_format", "channels_last", "channels_last_3d"):
        fmt_ours, fmt_theirs = getattr(tw, name), getattr(torch, name)
        assert ours.is_contiguous(memory_format=fmt_ours) == theirs.is_contiguous(
            memory_format=fmt_theirs
        ), name
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


MAKERS = {
    "contiguous": lambda lib, x, fmt: x.contiguous(memory_format=fmt),
    "to": lambda lib, x, fmt: x.to(memory_format=fmt),
    "to dtype": lambda lib, x, fmt: x.to(lib.float32, memory_format=fmt),
    "clone": lambda lib, x, fmt: x.clone(memory_format=fmt),
    "zeros_like": lambda lib, x, fmt: lib.zeros_like(x, memory_format=fmt),
    "full_like": lambda lib, x, fmt: lib.full_like(x, 2.0, memory_format=fmt),
}


@pytest.mark.parametrize("fmt", SHAPES)
@pytest.mark.parametrize("maker", MAKERS)
def test_memory_format_lays_out_as_torch(backend, maker, fmt):
    ours, theirs = _pair(SHAPES[fmt])
    made_ours = MAKERS[maker](tw, ours, getattr(tw, fmt))
    made_theirs = MAKERS[maker](torch, theirs, getattr(torch, fmt))
    _same_layout(made_ours, made_theirs)
    # ... and back to C order, and the default (preserve_format) keeps channels-last
    _same_layout(
        MAKERS[maker](tw, made_ours, tw.contiguous_format),
        MAKERS[maker](torch, made_theirs, torch.contiguous_format),
    )
    _same_layout(made_ours.clone(), made_theirs.clone())
    _same_layout(tw.ones_like(made_ours), torch.ones_like(made_theirs))
    _same_layout(made_ours + 1, made_theirs + 1)


VIEWS = {
    "expanded": lambda x: x[:1].expand(3, 4),
    "transposed": lambda x: x.t(),
    "stepped": lambda x: x[:, ::2],
    "permuted 4-d": lambda x: x.reshape(1, 2, 3, 2).permute(0, 2, 3, 1),
}


@pytest.mark.parametrize("view", VIEWS)
def test_preserve_format_keeps_only_dense_layouts(backend, view):
    ours, theirs = _pair((3, 4))
    ours, theirs = VIEWS[view](ours), VIEWS[view](theirs)
    _same_layout(ours.clone(), theirs.clone())
    _same_layout(tw.zeros_like(ours), torch.zeros_like(theirs))
    _same_layout(tw.empty_like(ours).fill_(1.0), torch.empty_like(theirs).fill_(1.0))


def test_gradient_through_a_channels_last_copy(backend):
    ours, theirs = _pair((2, 3, 4, 5))
    ours.requires_grad_(), theirs.requires_grad_()
    weight = np.arange(120.0).reshape(2, 3, 4, 5)
    for x, lib in ((ours, tw), (theirs, torch)):
        y = x.contiguous(memory_format=lib.channels_last)
        (y * lib.tensor(weight)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("fmt", SHAPES)
def test_wrong_rank_is_refused_as_torch(backend, fmt):
    for lib in (tw, torch):
        x = lib.zeros(2, 3)
        with pytest.raises(RuntimeError, match=f"required rank {len(SHAPES[fmt])} tensor"):
            x.contiguous(memory_format=getattr(lib, fmt))
        with pytest.raises(RuntimeError, match=f"required rank {len(SHAPES[fmt])} tensor"):
            lib.empty_like(x, memory_format=getattr(lib, fmt))


def test_new_empty_tensor_has_c_strides(backend):
    # NumPy 2 gives a new empty array strides of 0
    assert tw.zeros(0, 3, 2, 2).stride() == torch.zeros(0, 3, 2, 2).stride()
    assert tw.zeros(2, 3, 4)[:, :0].stride() == torch.zeros(2, 3, 4)[:, :0].stride()
