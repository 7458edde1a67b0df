"""Fused composites for the NumPy backend (see ``COMPOSITES`` in tensorweaver.contract.ir).

Each ``fused_<name>`` returns ``(output, saved)`` and ``fused_<name>_backward(saved,
grad_output, needs)`` returns the gradients of the array inputs, in argument order (None,
not computed, where ``needs`` says an input wants none). Convolution
is im2col: a strided window view of the padded input, then one tensordot (BLAS) per group;
its input gradient adds the column gradients back window offset by window offset.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tensorweaver_numpy._quiet import quiet

A = np.ndarray
Pair = tuple[int, int]


def _pad_hw(x: A, padding: Pair, value: float) -> A:
    """x padded by `padding` on both sides of its last two axes (x itself when no padding)."""
    ph, pw = padding
    if not (ph or pw):
        return x
    n, c, h, w = x.shape
    out = np.full((n, c, h + 2 * ph, w + 2 * pw), value, dtype=x.dtype)
    out[:, :, ph : ph + h, pw : pw + w] = x
    return out


def _windows(xp: A, kernel: Pair, stride: Pair, dilation: Pair) -> A:
    """The (N, C, OH, OW, kh, kw) view of every (dilated, strided) window of xp."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    return sliding_window_view(xp, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]


def _max_along(x: A, axis: int) -> A:
    # initial=-inf: an empty axis gives an empty softmax instead of an error.
    return np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf)


class FusedOps:
    """Mixed into NumpyBackend."""

    # linear -------------------------------------------------------------------------------

    @quiet
    def fused_linear(self, x: A, weight: A, bias: A) -> tuple[A, tuple]:
        rows = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
        out = rows @ weight.T
        out += bias  # out is this call's own array
        return out.reshape(x.shape[:-1] + (weight.shape[0],)), (rows, x.shape, weight)

    @quiet
    def fused_linear_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        rows, x_shape, weight = saved
        g = grad.reshape(-1, weight.shape[0]) if grad.ndim != 2 else grad
        return (
            (g @ weight).reshape(x_shape) if needs[0] else None,
            g.T @ rows if needs[1] else None,  # (out, in) in C order: the weight's layout
            np.add.reduce(g, axis=0) if needs[2] else None,
        )

    def contiguous(self, a: A) -> A:
        # ascontiguousarray would also turn a 0-d array into a 1-d one.
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)

    # cross_entropy ------------------------------------------------------------------------

    @quiet
    def fused_cross_entropy(self, x: A, target: A, ignore_index: int) -> tuple[A, tuple]:
        z = x - _max_along(x, 1)
        log_total = np.log(np.add.reduce(np.exp(z), axis=1))
        keep = target != ignore_index
        safe = np.where(keep, target, 0)
        picked = z[np.arange(len(z)), safe] - log_total
        count = np.count_nonzero(keep)
        loss = -np.add.reduce(np.where(keep, picked, 0)) / x.dtype.type(count)
        return np.asarray(loss, dtype=x.dtype), (z, log_total, safe, keep, count)

    @quiet
    def fused_cross_entropy_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        z, log_total, safe, keep, count = saved
        if not needs[0]:
            return None, None
        if count == 0:  # nothing kept: the loss is NaN and, as in PyTorch, the gradient 0
            return np.zeros_like(z), None
        p = np.exp(z - log_total[:, None])  # softmax
        p[np.arange(len(p)), safe] -= 1
        p *= (keep * (grad / count)).astype(p.dtype, copy=False)[:, None]
        return p, None

    # softmax ------------------------------------------------------------------------------

    @quiet
    def fused_softmax(self, x: A, axis: int) -> tuple[A, tuple]:
        y = x - _max_along(x, axis)  # exp cannot overflow
        np.exp(y, out=y)
        y /= np.add.reduce(y, axis=axis, keepdims=True)
        return y, (y, axis)

    @quiet
    def fused_softmax_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple[A]:
        y, axis = saved
        gy = grad * y
        return (gy - y * np.add.reduce(gy, axis=axis, keepdims=True),)

    @quiet
    def fused_log_softmax(self, x: A, axis: int) -> tuple[A, tuple]:
        z = x - _max_along(x, axis)
        z -= np.log(np.add.reduce(np.exp(z), axis=axis, keepdims=True))
        return z, (z, axis)

    @quiet
    def fused_log_softmax_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple[A]:
        y, axis = saved
        return (grad - np.exp(y) * np.add.reduce(grad, axis=axis, keepdims=True),)

    # conv2d -------------------------------------------------------------------------------

    @quiet
    def fused_conv2d(
        self,
        x: A,
        weight: A,
        bias: A | None,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
        groups: int,
    ) -> tuple[A, tuple]:
        o, cg, kh, kw = weight.shape
        og = o // groups
        xp = _pad_hw(x, padding, 0)
        cols = _windows(xp, (kh, kw), stride, dilation)
        n, _, oh, ow = cols.shape[:4]
        out = np.empty((n, o, oh, ow), dtype=x.dtype)
        for g in range(groups):
            ci, oi = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
            # (N, OH, OW, og) from windows (N, cg, OH, OW, kh, kw) and weight (og, cg, kh, kw)
            part = np.tensordot(cols[:, ci], weight[oi], axes=((1, 4, 5), (1, 2, 3)))
            out[:, oi] = part.transpose(0, 3, 1, 2)
        if bias is not None:
            out += bias.reshape(1, o, 1, 1)
        return out, (x.shape, xp, weight, stride, padding, dilation, groups)

    @quiet
    def fused_conv2d_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        x_shape, xp, weight, stride, padding, dilation, groups = saved
        o, cg, kh, kw = weight.shape
        og = o // groups
        (sh, sw), (dh, dw) = stride, dilation
        cols = _windows(xp, (kh, kw), stride, dilation)
        n, c, oh, ow = cols.shape[:4]
        grad_w = np.empty_like(weight) if needs[1] else None
        grad_cols = np.empty((n, c, kh, kw, oh, ow), dtype=grad.dtype) if needs[0] else None
        for g in range(groups):
            ci, oi = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
            if grad_w is not None:
                grad_w[oi] = np.tensordot(grad[:, oi], cols[:, ci], axes=((0, 2, 3), (0, 2, 3)))
            if grad_cols is not None:
                # (cg, kh, kw, N, OH, OW) -> (N, cg, kh, kw, OH, OW)
                part = np.tensordot(weight[oi], grad[:, oi], axes=((0,), (1,)))
                grad_cols[:, ci] = part.transpose(3, 0, 1, 2, 4, 5)
        grad_b = grad.sum((0, 2, 3)) if needs[2] else None
        if grad_cols is None:
            return None, grad_w, grad_b
        grad_xp = np.zeros(xp.shape, dtype=grad.dtype)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                colsl = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                grad_xp[:, :, rows, colsl] += grad_cols[:, :, i, j]
        (ph, pw), (h, w) = padding, x_shape[2:]
        return grad_xp[:, :, ph : ph + h, pw : pw + w], grad_w, grad_b

    # max_pool2d ---------------------------------------------------------------------------

    def fused_max_pool2d(self, x: A, kernel: Pair, stride: Pair, padding: Pair) -> tuple[A, tuple]:
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = _pad_hw(x, padding, fill)
        win = _windows(xp, kernel, stride, (1, 1))
        n, c, oh, ow = win.shape[:4]
        flat = win.reshape(n, c, oh, ow, kernel[0] * kernel[1])  # -1 fails on an empty batch
        # argmax takes the first maximum (NaN counts as one), where PyTorch sends the gradient.
        first = flat.argmax(axis=-1)
        out = np.take_along_axis(flat, first[..., None], axis=-1)[..., 0]
        return out, (x.shape, xp.shape, first, kernel, stride, padding)

    def fused_max_pool2d_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple[A]:
        x_shape, xp_shape, first, (kh, kw), (sh, sw), (ph, pw) = saved
        n, c, oh, ow = first.shape
        rows = np.arange(oh)[:, None] * sh + first // kw
        cols = np.arange(ow) * sw + first % kw
        grad_xp = np.zeros(xp_shape, dtype=grad.dtype)
        batch = np.arange(n)[:, None, None, None]
        chan = np.arange(c)[None, :, None, None]
        np.add.at(grad_xp, (batch, chan, rows, cols), grad)  # overlapping windows accumulate
        h, w = x_shape[2:]
        return (grad_xp[:, :, ph : ph + h, pw : pw + w],)
