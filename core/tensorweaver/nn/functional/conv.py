"""Padding, sliding windows and convolutions: ``pad``, ``unfold``, ``conv1d``, ``conv2d`` and
the transposed convolutions.

Every convolution becomes one 2-D convolution. Its reference decomposition is im2col: the
``kh * kw`` strided slices of the padded input stacked on a new axis, then one batched
matmul that covers every group; a backend may replace it with a fused kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorweaver as tw
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.tensor import Tensor


def _ntuple(value: int | Sequence[int], n: int, fn: str, name: str) -> tuple[int, ...]:
    """``value`` as ``n`` ints: an int repeats, a one-element sequence too (as PyTorch)."""
    if isinstance(value, int):
        return (value,) * n
    out = tuple(int(v) for v in value)
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise ValueError(f"{fn}: {name} must be an int or {n} ints, got {value!r}")
    return out


def _batched(input: Tensor, ndim: int, fn: str) -> tuple[Tensor, bool]:
    """``input`` with a batch axis (added when it came without one) and whether it had one."""
    if input.dim() == ndim:
        return input, True
    if input.dim() == ndim - 1:
        return input.unsqueeze(0), False
    raise ValueError(
        f"{fn}: expected a {ndim - 1}-D (unbatched) or {ndim}-D (batched) input, "
        f"got shape {tuple(input.shape)}"
    )


# -- padding ---------------------------------------------------------------------------------


def _reflect(i: Tensor, size: int) -> Tensor:
    last = size - 1
    return last - (last - i.abs()).abs()


_INDEX_MODES = {
    # Where each padded position reads from, as a function of its (possibly outside) index.
    "reflect": _reflect,
    "replicate": lambda i, size: i.clamp(0, size - 1),
    "circular": lambda i, size: i % size,
}


def _pad_constant(x: Tensor, dim: int, before: int, after: int, value: float) -> Tensor:
    # Negative widths crop, as in PyTorch.
    if before < 0:
        x = x.narrow(dim, -before, x.shape[dim] + before)
        before = 0
    if after < 0:
        x = x.narrow(dim, 0, x.shape[dim] + after)
        after = 0
    if not (before or after):
        return x
    shape = list(x.shape)

    def block(width: int) -> Tensor:
        shape[dim] = width
        return tw.full(tuple(shape), value, dtype=x.dtype, device=x.device)

    parts = [block(before)] if before else []
    parts.append(x)
    if after:
        parts.append(block(after))
    return tw.cat(parts, dim)


def _pad_by_index(x: Tensor, dim: int, before: int, after: int, mode: str) -> Tensor:
    size = x.shape[dim]
    largest = {"reflect": size - 1, "replicate": None, "circular": size}[mode]
    if (
        min(before, after) < 0
        or size == 0
        or (largest is not None and max(before, after) > largest)
    ):
        limit = "" if largest is None else f" of at most {largest}"
        raise ValueError(
            f"pad: mode {mode!r} needs non-negative padding{limit} for dimension {dim} of "
            f"size {size}, got ({before}, {after})"
        )
    where = tw.arange(-before, size + after, device=x.device)
    return x.index_select(dim, _INDEX_MODES[mode](where, size))


def pad(
    input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions; ``pad`` lists (left, right) pairs starting
    with the last dimension. ``mode`` is ``constant`` (negative widths crop), ``reflect``,
    ``replicate`` or ``circular``."""
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise ValueError(
            f"pad: pad must hold (left, right) pairs for at most {input.dim()} dimensions of "
            f"the input of shape {tuple(input.shape)}, got {tuple(pad)}"
        )
    if mode != "constant" and mode not in _INDEX_MODES:
        raise ValueError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    if mode != "constant" and value:
        raise ValueError(f"pad: mode {mode!r} takes no value (got {value!r})")
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        if mode == "constant":
            out = _pad_constant(out, dim, before, after, 0 if value is None else value)
        else:
            out = _pad_by_index(out, dim, before, after, mode)
    return out


# -- sliding windows -------------------------------------------------------------------------


def _check_fits(
    size: tuple[int, ...], kernel: tuple[int, ...], dilation: tuple[int, ...], fn: str
) -> None:
    """The (dilated) kernel fits in the padded input of spatial ``size``."""
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(n < m for n, m in zip(size, span)):
        raise ValueError(
            f"{fn}: the padded input is {'x'.join(map(str, size))} but the (dilated) kernel "
            f"spans {'x'.join(map(str, span))}; use a larger input, more padding or a smaller "
            "kernel"
        )


def _im2col(
    xp: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    fn: str,
) -> Tensor:
    """The ``(N, C, kh * kw, OH, OW)`` windows of the (already padded) ``(N, C, H, W)`` ``xp``:
    axis 2 runs over kernel offsets, row-major."""
    h, w = xp.shape[2:]
    _check_fits((h, w), kernel, dilation, fn)
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    rows = [slice(i * dh, i * dh + (oh - 1) * sh + 1, sh) for i in range(kh)]
    cols = [slice(j * dw, j * dw + (ow - 1) * sw + 1, sw) for j in range(kw)]
    return tw.stack([xp[:, :, r, c] for r in rows for c in cols], 2)


def unfold(
    input: Tensor,
    kernel_size: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
) -> Tensor:
    """Sliding local blocks of a ``(N, C, H, W)`` input as ``(N, C * kh * kw, L)`` columns."""
    x, batched = _batched(input, 4, "unfold")
    ph, pw = _ntuple(padding, 2, "unfold", "padding")
    cols = _im2col(
        pad(x, (pw, pw, ph, ph)),
        _ntuple(kernel_size, 2, "unfold", "kernel_size"),
        _ntuple(stride, 2, "unfold", "stride"),
        _ntuple(dilation, 2, "unfold", "dilation"),
        "unfold",
    )
    n, c, k, oh, ow = cols.shape
    out = cols.reshape(n, c * k, oh * ow)
    return out if batched else out.squeeze(0)


# -- convolution -----------------------------------------------------------------------------


def conv2d_reference(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
) -> Tensor:
    """The convolution of ``(N, C, H, W)`` ``x`` with ``(O, C / groups, kh, kw)`` ``weight``,
    plus ``(O,)`` ``bias`` unless None (the decomposition of the ``conv2d`` composite)."""
    o, cg, kh, kw = weight.shape
    ph, pw = padding
    cols = _im2col(pad(x, (pw, pw, ph, ph)), (kh, kw), stride, dilation, "conv2d")
    n, _, k, oh, ow = cols.shape
    # (G, O/G, cg*k) @ (N, G, cg*k, OH*OW): channel-major, then kernel offset, as in weight.
    out = weight.reshape(groups, o // groups, cg * k) @ cols.reshape(n, groups, cg * k, oh * ow)
    out = out.reshape(n, o, oh, ow)
    return out if bias is None else out + bias.reshape(1, o, 1, 1)


def _check_conv(x: Tensor, weight: Tensor, groups: int, transposed: bool, fn: str) -> None:
    """``weight`` has ``x``'s rank and channels that fit ``x`` and ``groups``: ``(O, C / groups,
    ...)`` for a convolution, ``(C, O / groups, ...)`` for a transposed one."""
    if weight.dim() != x.dim():
        raise ValueError(
            f"{fn}: expected a {x.dim()}-D weight for the input of shape {tuple(x.shape)}, "
            f"got weight of shape {tuple(weight.shape)}"
        )
    if groups < 1 or weight.shape[0] % groups:
        raise ValueError(
            f"{fn}: groups={groups} must be positive and divide the {weight.shape[0]} "
            f"channels on axis 0 of the weight of shape {tuple(weight.shape)}"
        )
    channels = weight.shape[0] if transposed else weight.shape[1] * groups
    if x.shape[1] != channels:
        raise ValueError(
            f"{fn}: weight of shape {tuple(weight.shape)} with groups={groups} expects input "
            f"with {channels} channels, got input of shape {tuple(x.shape)}"
        )


def _check_bias(bias: Tensor | None, channels: int, fn: str) -> None:
    """``bias`` is None or holds one value per output channel."""
    if bias is not None and tuple(bias.shape) != (channels,):
        raise ValueError(
            f"{fn}: expected bias of shape ({channels},), one value per output channel of the "
            f"weight, got bias of shape {tuple(bias.shape)}"
        )


def _resolve_padding(
    x: Tensor,
    padding: str | int | Sequence[int],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    fn: str,
) -> tuple[Tensor, tuple[int, ...]]:
    """``x`` and the symmetric padding to convolve it with. ``'same'`` with an even dilated
    kernel pads the one extra row or column at the end first, as PyTorch does."""
    if not isinstance(padding, str):
        pads = _ntuple(padding, len(kernel), fn, "padding")
        if min(pads) < 0:
            raise ValueError(f"{fn}: padding must be non-negative, got {padding!r}")
        return x, pads
    if padding == "valid":
        return x, (0,) * len(kernel)
    if padding != "same":
        raise ValueError(f"{fn}: padding must be 'same', 'valid' or ints, got {padding!r}")
    if any(s != 1 for s in stride):
        raise ValueError(
            f"{fn}: padding='same' is not supported for strided convolutions "
            f"(stride={stride}); give the padding as ints"
        )
    totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
    extra = [t % 2 for t in reversed(totals)]
    if any(extra):
        x = pad(x, [w for e in extra for w in (0, e)])
    return x, tuple(t // 2 for t in totals)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution of ``(N, C, H, W)`` (or ``(C, H, W)``) input with ``(O, C / groups,
    kh, kw)`` weight; ``padding`` may be ints, ``'same'`` or ``'valid'``."""
    x, batched = _batched(input, 4, "conv2d")
    _check_conv(x, weight, groups, False, "conv2d")
    stride = _ntuple(stride, 2, "conv2d", "stride")
    dilation = _ntuple(dilation, 2, "conv2d", "dilation")
    x, padding = _resolve_padding(x, padding, weight.shape[2:], stride, dilation, "conv2d")
    padded = tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    _check_fits(padded, weight.shape[2:], dilation, "conv2d")
    _check_bias(bias, weight.shape[0], "conv2d")
    out = fused_or_reference(
        "conv2d", conv2d_reference, (x, weight, bias), stride, padding, dilation, groups
    )
    return out if batched else out.squeeze(0)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution of ``(N, C, L)`` (or ``(C, L)``) input with ``(O, C / groups, k)``
    weight: a 2-D convolution over a height of one."""
    x, batched = _batched(input, 3, "conv1d")
    _check_conv(x, weight, groups, False, "conv1d")
    if not isinstance(padding, str):
        padding = (0, _ntuple(padding, 1, "conv1d", "padding")[0])
    out = conv2d(
        x.unsqueeze(2),
        weight.unsqueeze(2),
        bias,
        (1, _ntuple(stride, 1, "conv1d", "stride")[0]),
        padding,
        (1, _ntuple(dilation, 1, "conv1d", "dilation")[0]),
        groups,
    ).squeeze(2)
    return out if batched else out.squeeze(0)


def _dilate(x: Tensor, stride: tuple[int, int]) -> Tensor:
    """``x`` with ``stride - 1`` zeros between neighbouring elements of its last two axes."""
    sh, sw = stride
    if sh == sw == 1:
        return x
    n, c, h, w = x.shape
    spread = pad(x.reshape(n, c, h, 1, w, 1), (0, sw - 1, 0, 0, 0, sh - 1))
    return spread.reshape(n, c, h * sh, w * sw)[:, :, : (h - 1) * sh + 1, : (w - 1) * sw + 1]


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """2-D transposed convolution of ``(N, C, H, W)`` input with ``(C, O / groups, kh, kw)``
    weight: the gradient of ``conv2d`` with respect to its input, plus bias."""
    fn = "conv_transpose2d"
    x, batched = _batched(input, 4, fn)
    _check_conv(x, weight, groups, True, fn)
    stride = _ntuple(stride, 2, fn, "stride")
    padding = _ntuple(padding, 2, fn, "padding")
    output_padding = _ntuple(output_padding, 2, fn, "output_padding")
    dilation = _ntuple(dilation, 2, fn, "dilation")
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(
            f"{fn}: output_padding {output_padding} must be smaller than stride {stride} or "
            f"dilation {dilation} in each dimension"
        )
    c, og, kh, kw = weight.shape
    # A stride-1 convolution of the zero-dilated input, padded by what the forward
    # convolution's windows hang over (less `padding`), with the kernel flipped and its
    # in/out channels swapped within each group.
    edge = [d * (k - 1) - p for d, k, p in zip(dilation, (kh, kw), padding)]
    x = pad(
        _dilate(x, stride),
        (edge[1], edge[1] + output_padding[1], edge[0], edge[0] + output_padding[0]),
    )
    flipped = (
        weight.reshape(groups, c // groups, og, kh, kw)
        .transpose(1, 2)
        .reshape(groups * og, c // groups, kh, kw)
        .flip((2, 3))
    )
    out = conv2d(x, flipped, bias, 1, 0, dilation, groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """1-D transposed convolution of ``(N, C, L)`` input with ``(C, O / groups, k)`` weight."""
    fn = "conv_transpose1d"
    x, batched = _batched(input, 3, fn)
    _check_conv(x, weight, groups, True, fn)

    def wide(value: int | Sequence[int], name: str, height: int) -> tuple[int, int]:
        return (height, _ntuple(value, 1, fn, name)[0])

    out = conv_transpose2d(
        x.unsqueeze(2),
        weight.unsqueeze(2),
        bias,
        wide(stride, "stride", 1),
        wide(padding, "padding", 0),
        wide(output_padding, "output_padding", 0),
        groups,
        wide(dilation, "dilation", 1),
    ).squeeze(2)
    return out if batched else out.squeeze(0)
