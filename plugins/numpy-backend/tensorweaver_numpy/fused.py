"""Fused composites for the NumPy backend (see ``COMPOSITES`` in tensorweaver.contract.ir).

Each ``fused_<name>`` returns ``(output, saved)`` and ``fused_<name>_backward(saved,
grad_output, needs)`` returns the gradients of the array inputs, in argument order (None,
not computed, where ``needs`` says an input wants none). Convolution
is im2col: one strided copy of the padded input's windows, then one batched matmul (BLAS);
the columns are saved for the weight gradient, and the input gradient adds the column
gradients back kernel offset by kernel offset (max pooling is in pooling.py).
Layer norm and attention keep what their closed-form gradients need (the normalized values
and 1/std; the attention probabilities), where the decomposition's tape keeps every step.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from tensorweaver.contract.cpu_loops import onednn_convolves

from tensorweaver_numpy._quiet import quiet
from tensorweaver_numpy.layouts import channels_last

A = np.ndarray
Pair = tuple[int, int]
#: Bytes of column gradients made and added back at a time (about a core's L2 cache).
_BLOCK_BYTES = 1 << 20
#: Rows one BLAS matrix-vector product sums (one after another, in effect: the error grows
#: with the count); taller matrices go in chunks of this many, whose sums add pairwise.
_GEMV_ROWS = 256


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


def _offset(a: A, at: Pair, size: Pair, stride: Pair, dilation: Pair) -> A:
    """The (N, C, OH, OW) view of ``a`` at kernel offset ``at`` of every window."""
    (i, j), (oh, ow), (sh, sw), (dh, dw) = at, size, stride, dilation
    rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
    cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
    return a[:, :, rows, cols]


def _max_along(x: A, axis: int) -> A:
    # initial=-inf: an empty axis gives an empty softmax instead of an error.
    return np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf)


def _unit_stride_input_gradient(
    grad: A, w_t: A, weight_shape: tuple, xp_shape: tuple, dilation: Pair
) -> A:
    """The padded input's gradient of a stride-1 convolution (weights all finite).

    The gradient's rows are first widened with zeros to the padded input's width: then
    each kernel offset's column gradients land on one contiguous run of each (n, c) plane
    of the padded input's gradient, one long add where the plain way adds a short row at a
    time. The extra columns carry zeros (finite weights times 0), and adding a zero changes
    no sum that starts at +0. Samples go a block at a time, so that a block's column
    gradients are still in cache when they are added."""
    o, cg, kh, kw = weight_shape
    n, _, oh, ow = grad.shape
    groups, (hp, wp), (dh, dw) = w_t.shape[0], xp_shape[2:], dilation
    wide = np.zeros((n, groups, o // groups, oh, wp), dtype=grad.dtype)
    wide[..., :ow] = grad.reshape(n, groups, o // groups, oh, ow)
    wide = wide.reshape(n, groups, o // groups, oh * wp)
    # The last offset's run ends (kw - 1) * dw past the plane: room for it at the end.
    flat = np.zeros((n, groups * cg, hp * wp + (kw - 1) * dw), dtype=grad.dtype)
    block = max(1, _BLOCK_BYTES // (w_t.shape[0] * w_t.shape[1] * wide.shape[-1] * grad.itemsize))
    for first in range(0, n, block):
        cols = np.matmul(w_t, wide[first : first + block])
        cols = cols.reshape(-1, groups * cg, kh, kw, oh * wp)
        target = flat[first : first + block]
        for i in range(kh):
            for j in range(kw):
                start = i * dh * wp + j * dw
                target[:, :, start : start + oh * wp] += cols[:, :, i, j]
    return flat[:, :, : hp * wp].reshape(n, groups * cg, hp, wp)


def _wide(a: A | None) -> A | None:
    """``a`` in float32 if it is float16 (PyTorch's CPU kernels compute half precision in
    float32 and round the result once; NumPy's float16 loops round every step), else ``a``."""
    return a.astype(np.float32) if a is not None and a.dtype == np.float16 else a


def _rounded(a: A) -> A:
    """float32 values rounded to float16, kept in float32."""
    return a.astype(np.float16).astype(np.float32)


def _narrowed(a: A, dtype: np.dtype) -> A:
    """``a`` (computed in float32 for float16 inputs, see :func:`_wide`) in ``dtype``."""
    return a.astype(dtype, copy=False)


def _conj(a: A) -> A:
    """``a`` conjugated when complex (PyTorch's gradients multiply by the conjugate of an
    input); a real ``a`` itself, with no copy."""
    return a.conj() if a.dtype.kind == "c" else a


class FusedOps:
    """Mixed into NumpyBackend (whose ``sum`` is accurate along any axis)."""

    def _sum_rows(self, m: A) -> A:
        """The sum of the rows of 2-D ``m``: for BLAS's dtypes a vector of ones times ``m``,
        a matrix-vector product at half the time or less of a column sum, ``_GEMV_ROWS``
        rows at a time for a tall C-ordered ``m`` (of a column-ordered one, each sum is a
        dot product along contiguous memory, accurate as it is)."""
        rows = m.shape[0]
        if m.dtype not in (np.float32, np.float64) or not m.size:
            return self.sum(m, (0,), False)
        if rows <= 2 * _GEMV_ROWS or m.flags.f_contiguous:
            return np.ones(rows, m.dtype) @ m
        whole = rows - rows % _GEMV_ROWS
        chunks = np.ones(_GEMV_ROWS, m.dtype) @ m[:whole].reshape(-1, _GEMV_ROWS, m.shape[1])
        if whole < rows:
            chunks[0] += np.ones(rows - whole, m.dtype) @ m[whole:]
        return self.sum(chunks, (0,), False)

    def _channel_sums(self, grad: A) -> A:
        """``grad`` (N, C, H, W) summed over all but its channel axis."""
        n, c = grad.shape[:2]
        planes = grad.reshape(n * c, -1) if grad.size else np.zeros((n * c, 0), grad.dtype)
        return self.sum(self._sum_rows(planes.T).reshape(n, c), (0,), False)

    # linear -------------------------------------------------------------------------------

    @quiet
    def fused_linear(self, x: A, weight: A, bias: A) -> tuple[A, tuple]:
        # (explicit sizes: -1 is ambiguous for a product of no input features)
        rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) if x.ndim != 2 else x
        out = _wide(rows) @ _wide(weight).T
        out += _wide(bias)  # out is this call's own array
        out = out.astype(x.dtype, copy=False)
        return out.reshape(x.shape[:-1] + (weight.shape[0],)), (rows, x.shape, weight)

    @quiet
    def fused_linear_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        rows, x_shape, weight = saved
        g = grad.reshape(rows.shape[0], weight.shape[0]) if grad.ndim != 2 else grad
        g, wide_rows, wide_weight = _wide(g), _wide(rows), _wide(weight)
        grads = (
            (g @ _conj(wide_weight)).reshape(x_shape) if needs[0] else None,
            g.T @ _conj(wide_rows) if needs[1] else None,  # (out, in) in C order: weight's layout
            self._sum_rows(g) if needs[2] else None,
        )
        return tuple(None if a is None else a.astype(grad.dtype, copy=False) for a in grads)

    def contiguous(self, a: A) -> A:
        # ascontiguousarray would also turn a 0-d array into a 1-d one.
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)

    # cross_entropy ------------------------------------------------------------------------

    @quiet
    def fused_cross_entropy(self, x: A, target: A, ignore_index: int) -> tuple[A, tuple]:
        # x (N, C, *d), target (N, *d): the class axis is 1 whatever the rank.
        z = x - _max_along(x, 1)
        log_total = np.log(np.add.reduce(np.exp(z), axis=1))
        keep = target != ignore_index
        safe = np.where(keep, target, 0)
        picked = np.take_along_axis(z, safe[:, None], 1)[:, 0] - log_total
        count = np.count_nonzero(keep)
        loss = -np.add.reduce(np.where(keep, picked, 0), axis=None) / x.dtype.type(count)
        return np.asarray(loss, dtype=x.dtype), (z, log_total, safe, keep, count)

    @quiet
    def fused_cross_entropy_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        z, log_total, safe, keep, count = saved
        if not needs[0]:
            return None, None
        if count == 0:  # nothing kept: the loss is NaN and, as in PyTorch, the gradient 0
            return np.zeros_like(z), None
        p = np.exp(z - log_total[:, None])  # softmax
        at_target = np.take_along_axis(p, safe[:, None], 1) - 1
        np.put_along_axis(p, safe[:, None], at_target, 1)
        p *= (keep * (grad / count)).astype(p.dtype, copy=False)[:, None]
        return p, None

    # The same code serves (N, C, d1, ..., dk) logits.
    fused_cross_entropy_nd = fused_cross_entropy
    fused_cross_entropy_nd_backward = fused_cross_entropy_backward

    # nll_loss (API 2.8) -------------------------------------------------------------------

    @quiet
    def nll_loss(
        self, x: A, target: A, weight: A | None, reduction: str, ignore_index: int
    ) -> tuple[A, A]:
        # PyTorch's per-target values (-x[n, t] * weight[t], 0 where ignored, even at a -inf
        # log-probability); its sums cascade where NumPy's are pairwise: equal to rounding.
        keep = target != ignore_index
        safe = np.where(keep, target, 0)
        picked = x[np.arange(len(target)), safe]
        dtype = x.dtype.type
        if weight is None:
            losses = np.where(keep, -picked, dtype(0))
        else:
            w = np.where(keep, weight[safe], dtype(0))
            losses = np.where(keep, -picked * w, dtype(0))
        if reduction == "none":
            return losses, np.zeros((), x.dtype)
        total = dtype(np.count_nonzero(keep)) if weight is None else np.add.reduce(w)
        loss = np.add.reduce(losses)
        if reduction == "mean":
            loss = loss / total  # (0 / 0: NaN when nothing is kept, as PyTorch's)
        return np.asarray(loss, x.dtype), np.asarray(total, x.dtype)

    @quiet
    def nll_loss_backward(
        self,
        grad: A,
        x: A,
        target: A,
        weight: A | None,
        reduction: str,
        ignore_index: int,
        total_weight: A,
    ) -> A:
        keep = target != ignore_index
        safe = np.where(keep, target, 0)
        # PyTorch's order: the output gradient over the total weight, times the weight.
        g = -(grad / total_weight) if reduction == "mean" else -grad
        if weight is not None:
            g = weight[safe] * g
        out = np.zeros_like(x)
        out[np.arange(len(target)), safe] = np.where(keep, g, x.dtype.type(0))
        return out

    # softmax ------------------------------------------------------------------------------

    @quiet
    def fused_softmax(self, x: A, axis: int) -> tuple[A, tuple]:
        work = _wide(x)
        # exp cannot overflow; C order, torch's (a transposed x's order is NumPy's default)
        y = np.subtract(work, _max_along(work, axis), order="C")
        np.exp(y, out=y)
        total = np.add.reduce(y, axis=axis, keepdims=True)
        if x.dtype == np.float16 and axis % x.ndim != x.ndim - 1:
            # PyTorch's kernel along another axis keeps the exponentials in the output
            # (float16) before dividing them by the sum of the unrounded ones
            y = _rounded(y)
        y /= total
        y = y.astype(x.dtype, copy=False)
        return y, (y, axis)

    @quiet
    def fused_softmax_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple[A]:
        y, axis = saved
        wide_y = _wide(y)  # (from the rounded output, as PyTorch's kernel)
        wide_g = _wide(grad)
        gx = wide_y * (wide_g - np.add.reduce(wide_g * wide_y, axis=axis, keepdims=True))
        return (gx.astype(grad.dtype, copy=False),)

    @quiet
    def fused_log_softmax(self, x: A, axis: int) -> tuple[A, tuple]:
        work = _wide(x)
        z = np.subtract(work, _max_along(work, axis), order="C")  # (C order, as softmax's)
        total = np.add.reduce(np.exp(z), axis=axis, keepdims=True)
        if x.dtype == np.float16 and axis % x.ndim == x.ndim - 1:
            # PyTorch's kernel along the last axis keeps the sum and its log in float16
            z -= _rounded(np.log(_rounded(total)))
        else:
            z -= np.log(total)
        z = z.astype(x.dtype, copy=False)
        return z, (z, axis)

    @quiet
    def fused_log_softmax_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple[A]:
        y, axis = saved
        g = _wide(grad)
        gx = g - np.exp(_wide(y)) * np.add.reduce(g, axis=axis, keepdims=True)
        return (gx.astype(grad.dtype, copy=False),)

    # layer_norm ---------------------------------------------------------------------------

    @quiet
    def fused_layer_norm(
        self, x: A, weight: A | None, bias: A | None, normalized_ndim: int, eps: float
    ) -> tuple[A, tuple]:
        axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
        work = x.astype(np.float32) if x.dtype == np.float16 else x  # as torch: float32 stats
        # (means as sums: x may be a transposed view, and so is every array made from it)
        count = math.prod(work.shape[a] for a in axes)
        centred = work - self.sum(work, axes, True) / count
        variance = self.sum(np.square(centred), axes, True) / count
        rstd = np.sqrt(variance + work.dtype.type(eps))
        np.divide(1, rstd, out=rstd)
        normed = np.multiply(centred, rstd, out=centred)
        out = normed * weight if weight is not None else normed.copy()
        if bias is not None:
            out += bias
        return out.astype(x.dtype, copy=False), (normed, rstd, weight, axes, x.dtype)

    @quiet
    def fused_layer_norm_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        normed, rstd, weight, axes, dtype = saved
        g = grad.astype(normed.dtype, copy=False)
        count = math.prod(normed.shape[a] for a in axes)
        lead = tuple(range(normed.ndim - len(axes)))
        grad_w = self.sum(g * normed, lead, False) if needs[1] else None
        grad_b = self.sum(g, lead, False) if needs[2] else None
        grad_x = None
        if needs[0]:
            # d/dx of (x - mean) * rstd: the gradient less its mean and its projection on
            # the normalized values, times rstd.
            gn = g * weight if weight is not None else g
            grad_x = gn - self.sum(gn, axes, True) / count
            grad_x -= normed * (self.sum(gn * normed, axes, True) / count)
            grad_x *= rstd
        return tuple(
            None if a is None else a.astype(dtype, copy=False) for a in (grad_x, grad_w, grad_b)
        )

    # scaled_dot_product_attention ---------------------------------------------------------

    @quiet
    def fused_scaled_dot_product_attention(
        self, q: A, k: A, v: A, mask: A | None, causal: bool, scale: float
    ) -> tuple[A, tuple]:
        dtype, q, k, v = q.dtype, _wide(q), _wide(k), _wide(v)  # (float16: in float32)
        mask = _wide(mask) if mask is not None and mask.dtype != np.bool_ else mask
        scores = q @ np.swapaxes(k, -1, -2)
        scores *= scores.dtype.type(scale)
        if causal:  # query i sees keys 0..i (aligned at the top left, as the decomposition)
            length, source = scores.shape[-2:]
            scores[..., ~np.tri(length, source, dtype=bool)] = -np.inf
        if mask is not None:  # broadcastable to the scores (the core checked)
            if mask.dtype == np.bool_:
                np.copyto(scores, -np.inf, where=~mask)
            else:
                scores += mask
        peak = _max_along(scores, -1)
        # A row whose every key is masked gives zeros, as PyTorch: its exps are all 0 and
        # its sum stands in as 1 (the peak as 0, so no -inf - -inf).
        dead = np.isneginf(peak) if mask is not None else None
        if dead is not None:
            peak[dead] = 0
        scores -= peak
        probs = np.exp(scores, out=scores)
        total = np.add.reduce(probs, axis=-1, keepdims=True)
        if dead is not None:
            total[dead] = 1
        probs /= total
        return (probs @ v).astype(dtype, copy=False), (q, k, v, probs, scale)

    @quiet
    def fused_scaled_dot_product_attention_backward(
        self, saved: tuple, grad: A, needs: tuple
    ) -> tuple:
        q, k, v, probs, scale = saved
        dtype, grad = grad.dtype, _wide(grad)
        grad_v = _narrowed(np.swapaxes(probs, -1, -2) @ grad, dtype) if needs[2] else None
        if not (needs[0] or needs[1]):
            return None, None, grad_v, None
        # softmax's backward: probs * (g - sum(g * probs)), then the scale
        g_probs = grad @ np.swapaxes(v, -1, -2)
        g_scores = g_probs - np.add.reduce(g_probs * probs, axis=-1, keepdims=True)
        g_scores *= probs
        g_scores *= g_scores.dtype.type(scale)
        grad_q = _narrowed(g_scores @ k, dtype) if needs[0] else None
        grad_k = _narrowed(np.swapaxes(g_scores, -1, -2) @ q, dtype) if needs[1] else None
        return grad_q, grad_k, grad_v, None  # the mask's gradient is never asked for

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
        dtype, x, weight, bias = x.dtype, _wide(x), _wide(weight), _wide(bias)
        xp = _pad_hw(x, padding, 0)
        win = _windows(xp, (kh, kw), stride, dilation)
        n, c, oh, ow = win.shape[:4]
        # Columns as (N, C, kh, kw, OH, OW) in one strided copy: per sample and group, a
        # (cg*kh*kw, OH*OW) matrix, so one batched matmul gives (N, O, OH*OW), already NCHW.
        cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
        np.copyto(cols, win.transpose(0, 1, 4, 5, 2, 3))
        cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
        rows = weight.reshape(groups, o // groups, -1)
        if groups == 1 and x.shape[2] > 1 and (channels_last(x) or channels_last(weight)):
            # torch's result is channels-last then: the product taken as (N, OH*OW, O) (not
            # for a height of one: a 1-d convolution's, which torch's gives C-ordered)
            out = np.matmul(cols[:, 0].transpose(0, 2, 1), rows[0].T)
            out = out.reshape(n, oh, ow, o).transpose(0, 3, 1, 2)
        else:
            out = np.matmul(rows, cols).reshape(n, o, oh, ow)
        if bias is not None:
            out += bias.reshape(1, o, 1, 1)
        out = out.astype(dtype, copy=False)  # (float16: its float32 sums rounded once)
        return out, (x.shape, xp.shape, cols, weight, stride, padding, dilation)

    @quiet
    def fused_conv2d_backward(self, saved: tuple, grad: A, needs: tuple) -> tuple:
        x_shape, xp_shape, cols, weight, stride, padding, dilation = saved
        cols, weight = _conj(cols), _conj(weight)
        o, cg, kh, kw = weight.shape
        n, groups, _, _ = cols.shape
        oh, ow = grad.shape[2:]
        dtype, grad = grad.dtype, _wide(grad)  # (cols and weight are float32 for float16)
        g = grad.reshape(n, groups, o // groups, oh * ow)
        grad_w = None
        if needs[1]:  # the forward's columns, reused
            grad_w = self.sum(np.matmul(g, cols.transpose(0, 1, 3, 2)), (0,), False)
            grad_w = grad_w.reshape(weight.shape)
            grad_w = grad_w.astype(dtype, copy=False)
        grad_b = self._channel_sums(grad).astype(dtype, copy=False) if needs[2] else None
        if not needs[0]:
            return None, grad_w, grad_b
        w_t = weight.reshape(groups, o // groups, -1).transpose(0, 2, 1)
        # torch's im2col path (float16 off oneDNN's) rounds the column gradients to float16
        # and adds them up in float16, kernel offset by kernel offset, as below
        im2col = dtype == np.float16 and not onednn_convolves("float16")
        if stride == (1, 1) and np.isfinite(weight).all() and not im2col:
            grad_xp = _unit_stride_input_gradient(grad, w_t, weight.shape, xp_shape, dilation)
        else:
            grad_cols = np.matmul(w_t, g).reshape(n, groups * cg, kh, kw, oh, ow)
            grad_cols = grad_cols.astype(dtype) if im2col else grad_cols
            grad_xp = np.zeros(xp_shape, dtype=grad_cols.dtype)
            for i in range(kh):
                for j in range(kw):
                    target = _offset(grad_xp, (i, j), (oh, ow), stride, dilation)
                    target += grad_cols[:, :, i, j]
        (ph, pw), (h, w) = padding, x_shape[2:]
        grad_x = grad_xp[:, :, ph : ph + h, pw : pw + w].astype(dtype, copy=False)
        return grad_x, grad_w, grad_b
