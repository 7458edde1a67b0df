"""Max pooling in 1 to 3 dimensions for the NumPy backend: the fused ``max_pool2d``,
``max_pool`` and ``max_pool_with_indices`` composites (see ``COMPOSITES`` in
tensorweaver.contract.ir).

The input is padded with the lowest value (and, for ``ceil_mode``, at the end); each kernel
offset is a strided view of it over every window, and the output is the elementwise maximum
of those views (NaN propagates). Where the windows tile the input (stride = kernel, no
dilation: the usual pool), each offset's elements are first copied out contiguous, in one
transposing copy: every later pass then runs over contiguous memory, up to ten times
faster than over a strided view.

Which element of a window is its maximum follows PyTorch's CPU kernels, which scan the
window's elements inside the input in row-major order and move on to an element that is
greater or NaN: the first maximum, the last NaN of a window holding one, and the first
element inside the input of a window that is all -inf. The backward finds each window's
offset scanning the views in the same order, and sends the window's gradient there; the
gradient's bits are multiplied as unsigned words by 0 or 1, so an inf or NaN gradient
reaches its element and nowhere else.
"""

from __future__ import annotations

import math

import numpy as np

from tensorweaver_numpy.layouts import channels_last

A = np.ndarray
Ints = tuple[int, ...]

#: Unsigned words of each item size.
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _lowest(dtype: np.dtype) -> object:
    """The padding that never wins a max."""
    if dtype.kind == "f":
        return -np.inf
    return False if dtype.kind == "b" else np.iinfo(dtype).min


def _geometry(
    shape: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil: bool
) -> tuple[Ints, Ints]:
    """PyTorch's output size per spatial axis, and the padding after each axis (``padding``
    plus what a ``ceil_mode`` window overhanging the end needs)."""
    sizes, after = [], []
    for n, k, s, p, d in zip(shape, kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        out = (n + 2 * p - span + (s - 1 if ceil else 0)) // s + 1
        if ceil and (out - 1) * s >= n + p:  # the last window must start inside
            out -= 1
        sizes.append(out)
        after.append(max(p, (out - 1) * s + span - n - p))
    return tuple(sizes), tuple(after)


def _views(a: A, sizes: Ints, stride: Ints, dilation: Ints, kernel: Ints) -> list[A]:
    """The (N, C, *sizes) view of ``a`` at each kernel offset (row-major) of every window."""
    views = []
    for at in np.ndindex(*kernel):
        index = tuple(
            slice(i * d, i * d + s * (o - 1) + 1, s)
            for i, o, s, d in zip(at, sizes, stride, dilation)
        )
        views.append(a[(Ellipsis, *index)])
    return views


class _Pooled:
    """What the backward and the indices need of one pooling call."""

    def __init__(self, x: A, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil: bool):
        self.nd = nd = len(kernel)
        self.x_shape, self.kernel, self.stride = x.shape, kernel, stride
        self.padding, self.dilation = padding, dilation
        self.sizes, after = _geometry(x.shape[2:], kernel, stride, padding, dilation, ceil)
        self.widths = tuple(zip(padding, after))
        self.padded = any(padding) or after != padding
        xp = x
        if self.padded:
            xp = np.pad(x, [(0, 0), (0, 0), *self.widths], constant_values=_lowest(x.dtype))
        self.xp_shape = xp.shape
        # Windows that exactly tile the (padded) input: every element is in one window.
        self.tiled = (
            dilation == (1,) * nd
            and stride == kernel
            and all(o * k == n for o, k, n in zip(self.sizes, kernel, xp.shape[2:]))
        )
        if self.tiled:
            # (kh, kw, N, C, OH, OW): the input split into windows, kernel offsets first
            split = [n for pair in zip(self.sizes, kernel) for n in pair]
            lead = tuple(range(3, 3 + 2 * nd, 2))
            order = (*lead, 0, 1, *range(2, 2 + 2 * nd, 2))
            tiles = xp.reshape(*xp.shape[:2], *split).transpose(order)
            if channels_last(xp):  # (so are the planes, as torch's result: read in order)
                held = (*range(nd + 1), *range(nd + 2, 2 * nd + 2), nd + 1)
                planes = np.empty([tiles.shape[a] for a in held], dtype=x.dtype)
                planes = planes.transpose([held.index(a) for a in range(len(held))])
            else:
                planes = np.empty(tiles.shape, dtype=x.dtype)
            np.copyto(planes, tiles)
            self.windows = list(planes.reshape(math.prod(kernel), *xp.shape[:2], *self.sizes))
        else:
            self.windows = self.views(xp)

    def views(self, a: A) -> list[A]:
        return _views(a, self.sizes, self.stride, self.dilation, self.kernel)

    def inside(self) -> list[A]:
        """Per kernel offset, which windows have that element inside the input."""
        mask = np.ones(self.xp_shape[2:], dtype=bool)
        for axis, (before, after) in enumerate(self.widths):
            edge = [slice(None)] * self.nd
            edge[axis] = slice(0, before)
            mask[tuple(edge)] = False
            edge[axis] = slice(mask.shape[axis] - after, None)
            mask[tuple(edge)] = False
        return self.views(mask)

    def first(self, out: A) -> list[A]:
        """Per kernel offset, the windows whose chosen element it is (PyTorch's scan)."""
        views = self.windows
        inside = None
        if self.padded and bool((out == _lowest(out.dtype)).any()):
            inside = self.inside()  # an all-lowest window: not its padding
        # The bookkeeping runs on the booleans' bytes, eight to a word where they fit: a
        # window's hit is its equality while still free, and a hit frees it no more.
        word, ones = (np.uint64, 0x0101010101010101) if out.size % 8 == 0 else (np.uint8, 1)
        hits, free = [], None
        for k, view in enumerate(views):
            # C order whatever the windows' layout: ``bits`` must be a view of ``hit`` (a
            # channels-last input's hits would be copied by reshape, and ties kept)
            hit = np.equal(view, out, order="C")
            if inside is not None:
                hit &= inside[k]
            bits = hit.reshape(-1).view(word)
            if free is None:
                free = np.bitwise_xor(bits, word(ones))
            else:
                np.bitwise_and(bits, free, out=bits)
                np.bitwise_xor(free, bits, out=free)
            hits.append(hit)
        if not free.any():
            return hits
        # Windows holding NaN (their maximum equals none of their elements): the last NaN,
        # found scanning backwards; its hit replaces the window's nothing.
        taken = ~free.view(bool).reshape(out.shape)
        for k in range(len(views) - 1, -1, -1):
            hit = np.isnan(views[k])
            np.greater(hit, taken, out=hit)  # NaN and not yet placed
            taken |= hit
            hits[k] |= hit
        return hits


def _max(views: list[A]) -> A:
    out = np.maximum(views[0], views[1]) if len(views) > 1 else views[0].copy()
    for view in views[2:]:
        np.maximum(out, view, out=out)
    return out


def _flat_indices(pooled: _Pooled, hits: list[A], shape: Ints) -> A:
    """The int64 flat (row-major over the unpadded spatial axes) input index of each
    window's chosen element."""
    spatial = pooled.x_shape[2:]
    strides = [math.prod(spatial[a + 1 :]) for a in range(pooled.nd)]
    index = np.zeros(shape, dtype=np.int64)
    for at, hit in zip(np.ndindex(*pooled.kernel), hits):
        step = sum(i * d * m for i, d, m in zip(at, pooled.dilation, strides))
        if step:
            index += hit * np.int64(step)
    for axis, (o, s, p, m) in enumerate(zip(pooled.sizes, pooled.stride, pooled.padding, strides)):
        starts = (np.arange(o, dtype=np.int64) * s - p) * m
        index += starts.reshape((o,) + (1,) * (pooled.nd - 1 - axis))
    return index


class MaxPooling:
    """Mixed into NumpyBackend."""

    def fused_max_pool(
        self, x: A, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[A, tuple]:
        pooled = _Pooled(x, kernel, stride, padding, dilation, ceil_mode)
        out = _max(pooled.windows)  # (in the windows' layout: channels-last ones give one)
        return out, (pooled, out)

    def fused_max_pool_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple[A]:
        pooled, out = saved
        hits = pooled.first(out)
        # An element in one window only: written, no zeros, no adds.
        grad_xp = (np.empty if pooled.tiled else np.zeros)(pooled.xp_shape, dtype=grad.dtype)
        words = _WORDS[grad.dtype.itemsize]
        bits = grad.view(words) if grad.flags.c_contiguous else grad.copy().view(words)
        spare = None if pooled.tiled else np.empty(grad.shape, dtype=words)
        for hit, target in zip(hits, pooled.views(grad_xp)):
            if pooled.tiled:
                np.multiply(bits, hit, out=target.view(words))
            else:
                np.multiply(bits, hit, out=spare)
                target += spare.view(grad.dtype)
        crop = tuple(slice(b, b + n) for (b, _), n in zip(pooled.widths, pooled.x_shape[2:]))
        return (grad_xp[(Ellipsis, *crop)] if pooled.padded else grad_xp,)

    def fused_max_pool2d(self, x: A, kernel: Ints, stride: Ints, padding: Ints) -> tuple[A, tuple]:
        return self.fused_max_pool(x, kernel, stride, padding, (1, 1), False)

    fused_max_pool2d_backward = fused_max_pool_backward

    def fused_max_pool_with_indices(
        self, x: A, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[tuple[A, A], tuple]:
        out, saved = self.fused_max_pool(x, kernel, stride, padding, dilation, ceil_mode)
        indices = _flat_indices(saved[0], saved[0].first(out), out.shape)
        return (out, indices), saved

    fused_max_pool_with_indices_backward = fused_max_pool_backward
