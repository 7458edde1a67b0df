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


# -- review of the memory-format commit (2026-12-05) ---------------------------------------

STEPPED = {
    "stepped channels-last": lambda lib, x: x.contiguous(memory_format=lib.channels_last)[
        :, :, ::2
    ],
    "stepped transpose": lambda lib, x: x.reshape(8, 15).t()[:, ::2],
    "stepped permute": lambda lib, x: x.permute(0, 2, 3, 1)[:, :, ::2],
}


@pytest.mark.parametrize("view", STEPPED)
def test_preserve_format_keeps_a_stepped_views_axis_order(backend, view):
    # torch's empty_like/clone infer dense strides in the view's axis order (they were C)
    ours, theirs = _pair((2, 3, 4, 5))
    ours, theirs = STEPPED[view](tw, ours), STEPPED[view](torch, theirs)
    _same_layout(ours.clone(), theirs.clone())
    _same_layout(tw.zeros_like(ours), torch.zeros_like(theirs))
    _same_layout(tw.empty_like(ours).fill_(1.0), torch.empty_like(theirs).fill_(1.0))


SIZE_ONE = [(2, 3, 1, 1), (2, 1, 4, 5), (1, 3, 1, 1), (2, 3, 4, 1)]


@pytest.mark.parametrize("shape", SIZE_ONE, ids=str)
@pytest.mark.parametrize("maker", ["clone", "to", "to dtype", "zeros_like", "full_like"])
def test_explicit_channels_last_gives_torchs_strides_on_size_one_axes(backend, shape, maker):
    # clone/to with channels_last kept a tensor that is_contiguous(channels_last) only through
    # a size-1 axis as it was ((3, 1, 1, 1) for (2, 3, 1, 1); torch: (3, 1, 3, 3))
    ours, theirs = _pair(shape)
    _same_layout(
        MAKERS[maker](tw, ours, tw.channels_last), MAKERS[maker](torch, theirs, torch.channels_last)
    )


@pytest.mark.parametrize("shape", SIZE_ONE, ids=str)
def test_fill_keeps_a_channels_last_layout_with_size_one_axes(backend, shape):
    ours, theirs = _pair(shape)
    ours = tw.empty_like(ours, memory_format=tw.channels_last).fill_(1.0)
    theirs = torch.empty_like(theirs, memory_format=torch.channels_last).fill_(1.0)
    # (before numpy(), whose shared copy may restride a size-1 axis)
    like = tw.zeros_like(ours[:, :, :1]), torch.zeros_like(theirs[:, :, :1])
    _same_layout(ours, theirs)
    _same_layout(*like)


def test_to_channels_last_keeps_a_tensor_whose_strides_suggest_it(backend):
    ours, theirs = _pair((2, 3, 4, 5))
    ours = ours.contiguous(memory_format=tw.channels_last)
    theirs = theirs.contiguous(memory_format=torch.channels_last)
    assert (ours.to(memory_format=tw.channels_last) is ours) == (
        theirs.to(memory_format=torch.channels_last) is theirs
    )


def test_channels_last_copy_is_a_clone_in_the_graph(backend):
    # it was two permutes of a hidden row-major copy (PermuteBackward0)
    for lib in (tw, torch):
        x = lib.ones(2, 3, 4, 5, requires_grad=True)
        y = x.contiguous(memory_format=lib.channels_last)
        assert type(y.grad_fn).__name__ == "CloneBackward0"
        assert y._base is None if lib is torch else y._view_of is None


def _in_place(lib, how):
    x = lib.tensor(np.arange(120.0).reshape(2, 3, 4, 5)).contiguous(memory_format=lib.channels_last)
    if how == "view add_":
        x[:, 0].add_(1)
    elif how == "view fill_":
        x[:, 1:].fill_(3.0)
    elif how == "copy_":
        x.copy_(lib.tensor(np.ones((2, 3, 4, 5))))
    elif how == "setitem":
        x[0] = 5.0
    else:  # an optimizer's steps, whose row-major gradients it adds in place
        x = lib.nn.Parameter(x)
        opt = lib.optim.SGD([x], lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            (x * x).sum().backward()
            opt.step()
    return x


@pytest.mark.parametrize("how", ["view add_", "view fill_", "copy_", "setitem", "sgd"])
def test_in_place_writes_keep_a_channels_last_layout(backend, how):
    # a write through a view, copy_ from a row-major source and __setitem__ rebound a
    # channels-last tensor's storage in C order (values right, layout lost): PyTorch writes
    # into its memory
    ours, theirs = _in_place(tw, how), _in_place(torch, how)
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_gradient_of_a_channels_last_leaf_is_channels_last(backend):
    grads = []
    for lib in (tw, torch):
        x = lib.tensor(np.arange(120.0).reshape(2, 3, 4, 5)).contiguous(
            memory_format=lib.channels_last
        )
        x.requires_grad_()
        (x * 2).sum().backward()
        grads.append(x.grad)
    _same_layout(*grads)


def test_views_of_a_channels_last_tensor_load_sharing_memory(backend):
    import io

    seen = []
    for lib in (tw, torch):
        x = lib.tensor(np.arange(120.0).reshape(2, 3, 4, 5)).contiguous(
            memory_format=lib.channels_last
        )
        buffer = io.BytesIO()
        lib.save({"a": x, "v": x[:, 1]}, buffer)
        buffer.seek(0)
        loaded = lib.load(buffer)
        loaded["a"].add_(1)
        seen.append(loaded["v"].numpy().copy())
    np.testing.assert_array_equal(*seen)
