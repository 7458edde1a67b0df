"""Padding, sliding windows and convolutions: ``pad``, ``unfold``, ``fold``, ``conv1d``,
``conv2d``, ``conv3d`` and the transposed convolutions.

A 1-D convolution becomes a 2-D one over a height of one; 2-D and 3-D ones are the
composites ``conv2d`` and ``conv3d``, whose reference decomposition is im2col: the
``prod(kernel)`` strided slices of the padded input stacked on a new axis, then one batched
matmul that covers every group. A transposed convolution is the composite
``conv_transpose``, whose reference is a stride-1 convolution of the zero-dilated input with
the flipped kernel. A backend may replace each composite with a fused kernel.
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any

import numpy as np

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.grad_fn import note_pad_widths
from tensorweaver.autograd.node import HooksOff
from tensorweaver.contract.cpu_loops import onednn_convolves
from tensorweaver.memory_formats import c_ordered, laid_out, suggested_format
from tensorweaver.nn.functional.integral import is_integral
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.composite import Line, fused_or_reference
from tensorweaver.ops.movement import pad_dims, slice_dims
from tensorweaver.tensor import Tensor


def _ntuple(value: int | Sequence[int], n: int, fn: str, name: str) -> tuple[int, ...]:
    """``value`` as ``n`` ints: an int repeats, a one-element sequence too (as PyTorch)."""
    if isinstance(value, int):
        return (value,) * n
    out = tuple(int(v) for v in value)
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise RuntimeError(f"{fn}: {name} must be an int or {n} ints, got {value!r}")
    return out


def _at_least(values: tuple[int, ...], low: int, fn: str, name: str) -> tuple[int, ...]:
    """``values``, each checked to be at least ``low`` (PyTorch rejects the others)."""
    if min(values, default=low) < low:
        kind = "positive" if low == 1 else "non-negative"
        raise RuntimeError(f"{fn}: {name} must be {kind}, got {values}")
    return values


def _batched(input: Tensor, ndim: int, fn: str) -> tuple[Tensor, bool]:
    """``input`` with a batch axis (added when it came without one) and whether it had one."""
    if input.dim() == ndim:
        return input, True
    if input.dim() == ndim - 1:
        return input.unsqueeze(0), False
    raise RuntimeError(
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


def _pad_constant(x: Tensor, widths: Sequence[tuple[int, int, int]], value: Any) -> Tensor:
    """``x`` padded with ``value`` by ``(dim, before, after)`` ``widths``: one pad node, as
    PyTorch's ``constant_pad_nd`` (negative widths crop, first)."""
    grow, starts, stops = [(0, 0)] * x.dim(), [0] * x.dim(), list(x.shape)
    for dim, before, after in widths:
        n = x.shape[dim]
        if n + min(before, 0) + min(after, 0) < 0:
            raise RuntimeError(
                f"pad: widths ({before}, {after}) crop more than the {n} elements of "
                f"dimension {dim} of the input of shape {tuple(x.shape)}"
            )
        grow[dim] = (max(before, 0), max(after, 0))
        starts[dim], stops[dim] = max(-before, 0), max(before, 0) + n + after
    out = pad_dims(x, grow, value)
    # (cropped last: the crop is a view, which F.pad copies into a node labelled as one pad)
    return slice_dims(out, starts, stops, [1] * x.dim())


def _pad_by_index(x: Tensor, dim: int, before: int, after: int, mode: str) -> Tensor:
    size = x.shape[dim]
    if mode == "circular":
        # Negative widths crop first and the padding wraps the cropped tensor, as PyTorch
        # does (past that its kernel reads memory it never wrote: refused here).
        x = _pad_constant(x, [(dim, min(before, 0), min(after, 0))], 0.0)
        before, after, size = max(before, 0), max(after, 0), x.shape[dim]
        if size == 0 and not (before or after):
            return x
        fits = 0 < size and max(before, after) <= size
        limit = f" of at most {size} after cropping"
    else:
        # Each output position reads the input at its own index, reflected or clamped:
        # PyTorch's answer for negative widths too.
        fits = size > 0 and size + before + after >= 0
        fits = fits and (mode == "replicate" or max(before, after) < size)
        limit = "" if mode == "replicate" else f" of at most {size - 1}"
    if not fits:
        raise RuntimeError(
            f"pad: mode {mode!r} needs non-negative padding{limit}, or negative widths that crop "
            f"no more than the input, for dimension {dim} of size {size}, got ({before}, {after})"
        )
    where = tw.arange(-before, size + after, device=x.device)
    if mode != "circular" and x.requires_grad and x.ndim in (4, 5) and tw.is_grad_enabled():
        if not (c_ordered(x.native) and 1 not in x.shape[1:]):  # (else C order: kept)
            # torch's gradient is zeros_like(x) in x's suggested format; index_select's is C
            # ordered, which passes for x's layout where x has a size-1 axis
            source, x = x, x.view(x.shape)
            x.register_hook(lambda grad: kernel_layout(grad, source))
    return x.index_select(dim, _INDEX_MODES[mode](where, size))


def _widths(input: Tensor, pad: Sequence[int]) -> list[tuple[int, int, int]]:
    """(dim, before, after) for each dimension ``pad`` pads, the last first."""
    last = input.dim() - 1
    return [(last - i, int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]


def _padded_by_index(input: Tensor, pad: Sequence[int], mode: str) -> Tensor:
    """``input`` padded in a non-constant ``mode``, packing what PyTorch's node saves under
    ``saved_tensors_hooks``: the input for reflect and replicate, nothing for circular (its
    gathers' indices are the core's own: they pack nothing)."""
    out = input
    with HooksOff() as hooks:
        for dim, before, after in _widths(input, pad):
            out = _pad_by_index(out, dim, before, after, mode)
        node = out._node
        if hooks is not None and mode != "circular" and node is not None and node.op == "take":
            _pack_padded(node, input, *hooks)
    return out


def _pack_padded(node: Any, input: Tensor, pack: Any, unpack: Any) -> None:
    """Pass ``input`` through ``pack``, as PyTorch's ReflectionPad and ReplicationPad nodes
    save it, and have the backward of ``node`` (the padding's last gather) call ``unpack`` on
    what that gave, once, as theirs (they read only its shape: ``node`` reads its own index,
    autograd/graph.py ``unpack_operands``)."""
    from tensorweaver.autograd.graph import PACKED_OPERANDS, _Packed, _unpacks_through

    index = node.saved[1]
    key = id(node)
    PACKED_OPERANDS[key] = (_ShapeRead(unpack, index), (_Packed(index, pack(input)),))
    weakref.finalize(node, PACKED_OPERANDS.pop, key, None)
    _unpacks_through(node, unpack)


class _ShapeRead:
    """The unpack hook of a reflect or replicate padding's input (:func:`_pack_padded`): it
    runs the hook and gives the gather's own index."""

    __slots__ = ("unpack", "index")

    def __init__(self, unpack: Any, index: Tensor) -> None:
        self.unpack, self.index = unpack, index

    def __call__(self, value: Any) -> Tensor:
        from tensorweaver.autograd.graph import _checked

        _checked(self.unpack(value))
        return self.index


def _check_int_widths(pad: Sequence[int]) -> None:
    """PyTorch's signature takes a sequence of ints (anything with ``__index__``) but not
    bools, nor a tensor."""
    if isinstance(pad, Tensor):
        raise TypeError("pad: pad must be a tuple of ints, not a Tensor; pass pad.tolist()")
    for p in pad:
        if type(p) is not int:  # (the common case costs one comparison)
            try:
                if isinstance(p, bool):
                    raise TypeError
                operator.index(p)
            except TypeError:
                raise TypeError(f"pad: pad must be a tuple of ints, got {tuple(pad)!r}") from None


def pad(
    input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions; ``pad`` lists (left, right) pairs starting
    with the last dimension. ``mode`` is ``constant`` (negative widths crop), ``reflect``,
    ``replicate`` or ``circular``."""
    _check_int_widths(pad)
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise RuntimeError(
            f"pad: pad must hold (left, right) pairs for at most {input.dim()} dimensions of "
            f"the input of shape {tuple(input.shape)}, got {tuple(pad)}"
        )
    if mode != "constant" and mode not in _INDEX_MODES:
        raise NotImplementedError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    if mode != "constant" and value:
        raise RuntimeError(f"pad: mode {mode!r} takes no value (got {value!r})")
    if mode != "constant" and input.dim() - len(pad) // 2 not in (1, 2):
        raise NotImplementedError(  # PyTorch's words
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if mode in ("reflect", "replicate"):
        # PyTorch's CPU float32 list has reflection_pad1d/2d and replication_pad1d/2d/3d.
        if autocast_dtype() is not None and (mode == "replicate" or len(pad) < 6):
            (input,) = float32_operands(input)
        sizes = [input.shape[-1 - i] + pad[2 * i] + pad[2 * i + 1] for i in range(len(pad) // 2)]
        if not any(sizes):  # PyTorch's check: some padded dimension keeps an element
            raise RuntimeError(
                f"pad: the input of shape {tuple(input.shape)} is too small for {tuple(pad)}: "
                f"every padded dimension would be empty"
            )
    if mode != "constant":
        out = _padded_by_index(input, pad, mode)
        if out._view_of is not None:  # (a circular crop of an empty axis) PyTorch's is new
            out = out.clone()
        # Laid out as PyTorch's kernels lay theirs out: channels-last where the input
        # suggests it (circular padding copies into a new C-ordered tensor), else C order.
        keeps = input.dim() in (4, 5) and mode != "circular"
        out = kernel_layout(out, *((input,) if keeps else ()))
    elif input.requires_grad and tw.is_grad_enabled() and (min(pad, default=0) < 0 or not any(pad)):
        out = _Cropping.apply(input, tuple(pad), value)
    else:
        out = _constant_padded(input, pad, value)
    out = labelled(out, _pad_name(mode, len(pad) // 2), input)
    node = out._node
    if node is not None and mode != "circular" and node is not input._node:
        # (PyTorch's circular padding is a CopySlices node: it saves no widths)
        note_pad_widths(node, "_saved_pad" if mode == "constant" else "_saved_padding", pad)
    return out


def _constant_padded(input: Tensor, pad: Sequence[int], value: float | None) -> Tensor:
    """``input`` padded by ``pad`` with ``value`` (None: 0), laid out as PyTorch's
    ``constant_pad_nd`` lays its result out: a crop alone is the input's narrowed view cloned
    (its strides' order kept), else a new tensor in the input's suggested format."""
    out = _pad_constant(input, _widths(input, pad), 0 if value is None else value)
    if all(p <= 0 for p in pad):  # (a slice of the input's memory, or the input)
        return out.clone()
    return kernel_layout(out, *((input,) if input.dim() in (4, 5) else ()))


class _Cropping(Function):
    """A constant pad that crops or leaves the input (a width < 0, or none > 0): PyTorch's
    one ConstantPadNdBackward0 node, whose gradient is the pad by the widths negated, one
    node again under create_graph (pad_dims records a crop as a slice after the pad, whose
    gradients are a pad and a slice again)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, widths: tuple[int, ...], value: float | None) -> Tensor:
        ctx.widths = widths
        return _constant_padded(x, widths, value)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        return pad(g, tuple(-p for p in ctx.widths)), None, None


def _pad_name(mode: str, dims: int) -> str:
    """PyTorch's grad_fn name for ``pad`` in ``mode`` over ``dims`` dimensions."""
    if mode == "constant":
        return "ConstantPadNdBackward0"
    if mode == "circular":  # PyTorch writes the wrapped borders into a new tensor
        return "CopySlices"
    return f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{dims}DBackward0"


# -- sliding windows -------------------------------------------------------------------------


def _check_fits(
    size: tuple[int, ...], kernel: tuple[int, ...], dilation: tuple[int, ...], fn: str
) -> None:
    """The (dilated) kernel fits in the padded input of spatial ``size``."""
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(n < m for n, m in zip(size, span)):
        raise RuntimeError(
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
    """The ``(N, C, prod(kernel), *out)`` windows of the (already padded) ``(N, C, *size)``
    ``xp``: axis 2 runs over kernel offsets, row-major."""
    size = tuple(xp.shape[2:])
    _check_fits(size, kernel, dilation, fn)
    out = [(n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(size, kernel, stride, dilation)]
    picks = [
        [slice(i * d, i * d + (o - 1) * s + 1, s) for i in range(k)]
        for k, s, d, o in zip(kernel, stride, dilation, out)
    ]
    return tw.stack([xp[(slice(None), slice(None), *at)] for at in product(*picks)], 2)


def _refuse_integers(input: Tensor, fn: str) -> None:
    """PyTorch's im2col/col2im kernels take floating, complex and bool tensors only (checked
    after the shapes, as theirs)."""
    dtype = input.dtype
    if is_integral(dtype) and dtype is not tw.bool:
        raise NotImplementedError(
            f"{fn}: not implemented for {dtype} input; convert it with input.float()"
        )


def unfold(
    input: Tensor,
    kernel_size: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
) -> Tensor:
    """Sliding local blocks of a ``(N, C, H, W)`` (or ``(C, H, W)``) input as
    ``(N, C * kh * kw, L)`` columns."""
    fn = "unfold"
    if input.dim() < 3:  # PyTorch's class: it indexes a dimension the input lacks
        raise IndexError(
            f"{fn}: expected a 3-D (unbatched) or 4-D (batched) input, got shape "
            f"{tuple(input.shape)}"
        )
    x, batched = _batched(input, 4, fn)
    ph, pw = _at_least(_ntuple(padding, 2, fn, "padding"), 0, fn, "padding")
    cols = _im2col(
        pad(x, (pw, pw, ph, ph)) if pw or ph else x,
        _at_least(_ntuple(kernel_size, 2, fn, "kernel_size"), 1, fn, "kernel_size"),
        _at_least(_ntuple(stride, 2, fn, "stride"), 1, fn, "stride"),
        _at_least(_ntuple(dilation, 2, fn, "dilation"), 1, fn, "dilation"),
        fn,
    )
    _refuse_integers(input, fn)
    n, c, k, oh, ow = cols.shape
    out = cols.reshape(n, c * k, oh * ow)
    return labelled(out if batched else out.squeeze(0), "Im2ColBackward0", input)


def fold(
    input: Tensor,
    output_size: int | Sequence[int],
    kernel_size: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
) -> Tensor:
    """Sum ``(N, C * kh * kw, L)`` (or ``(C * kh * kw, L)``) columns back into a
    ``(N, C, *output_size)`` image: the adjoint of :func:`unfold` (overlaps add up)."""
    fn = "fold"
    x, batched = _batched(input, 3, fn)
    size = _ntuple(output_size, 2, fn, "output_size")
    kernel = _at_least(_ntuple(kernel_size, 2, fn, "kernel_size"), 1, fn, "kernel_size")
    dil = _at_least(_ntuple(dilation, 2, fn, "dilation"), 1, fn, "dilation")
    pads = _at_least(_ntuple(padding, 2, fn, "padding"), 0, fn, "padding")
    steps = _at_least(_ntuple(stride, 2, fn, "stride"), 1, fn, "stride")
    padded = tuple(n + 2 * p for n, p in zip(size, pads))
    _check_fits(padded, kernel, dil, fn)
    blocks = [(n - d * (k - 1) - 1) // s + 1 for n, k, d, s in zip(padded, kernel, dil, steps)]
    k = kernel[0] * kernel[1]
    n, ck, length = x.shape
    if ck % k or length != blocks[0] * blocks[1]:
        raise RuntimeError(
            f"{fn}: expected input of shape (N, C * {k}, {blocks[0] * blocks[1]}) for "
            f"kernel_size {kernel} and output_size {size} ({blocks[0]}x{blocks[1]} blocks), "
            f"got input of shape {tuple(input.shape)}"
        )
    _refuse_integers(input, fn)
    # Where each (kernel offset, block) column lands in the flattened padded image.
    rows = np.arange(kernel[0])[:, None, None, None] * dil[0]
    rows = rows + np.arange(blocks[0])[:, None] * steps[0]
    cols = np.arange(kernel[1])[:, None, None] * dil[1] + np.arange(blocks[1]) * steps[1]
    where = tw.tensor((rows * padded[1] + cols).reshape(-1), device=x.device)
    c = ck // k
    flat = tw.zeros(n, c, padded[0] * padded[1], dtype=x.dtype, device=x.device)
    out = flat.index_add(2, where, x.reshape(n, c, k * length)).reshape(n, c, *padded)
    out = out[:, :, pads[0] : pads[0] + size[0], pads[1] : pads[1] + size[1]]
    return labelled(out if batched else out.squeeze(0), "Col2ImBackward0", input)


# -- convolution -----------------------------------------------------------------------------


def conv_reference(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> Tensor:
    """The convolution of ``(N, C, *size)`` ``x`` with ``(O, C / groups, *kernel)``
    ``weight``, plus ``(O,)`` ``bias`` unless None: the decomposition of the ``conv2d`` and
    ``conv3d`` composites."""
    o, cg, *kernel = weight.shape
    rank = len(kernel)
    widths = [w for p in reversed(padding) for w in (p, p)]
    xp = pad(x, widths) if any(widths) else x  # (no copy, nor node, for no padding)
    cols = _im2col(xp, tuple(kernel), stride, dilation, f"conv{rank}d")
    n, _, k, *out = cols.shape
    spots = 1
    for m in out:
        spots *= m
    # (G, O/G, cg*k) @ (N, G, cg*k, spots): channel-major, then kernel offset, as in weight.
    y = weight.reshape(groups, o // groups, cg * k) @ cols.reshape(n, groups, cg * k, spots)
    y = y.reshape(n, o, *out)
    return y if bias is None else y + bias.reshape(1, o, *(1,) * rank)


#: The ``conv2d`` composite's decomposition (any rank works).
conv2d_reference = conv_reference


def _check_conv(x: Tensor, weight: Tensor, groups: int, transposed: bool, fn: str) -> None:
    """``weight`` has ``x``'s rank and channels that fit ``x`` and ``groups``: ``(O, C / groups,
    ...)`` for a convolution, ``(C, O / groups, ...)`` for a transposed one."""
    if weight.dim() != x.dim():
        raise RuntimeError(
            f"{fn}: expected a {x.dim()}-D weight for the input of shape {tuple(x.shape)}, "
            f"got weight of shape {tuple(weight.shape)}"
        )
    if weight.shape[0] == 0:
        raise RuntimeError(
            f"{fn}: Given groups={groups}, expected weight to be at least 1 at dimension 0, but "
            f"got weight of size {list(weight.shape)} instead"
        )
    if groups < 1 or weight.shape[0] % groups:
        raise RuntimeError(
            f"{fn}: groups={groups} must be positive and divide the {weight.shape[0]} "
            f"channels on axis 0 of the weight of shape {tuple(weight.shape)}"
        )
    channels = weight.shape[0] if transposed else weight.shape[1] * groups
    if x.shape[1] != channels:
        raise RuntimeError(
            f"{fn}: weight of shape {tuple(weight.shape)} with groups={groups} expects input "
            f"with {channels} channels, got input of shape {tuple(x.shape)}"
        )
    if "c" in (x.dtype.kind, weight.dtype.kind) and x.dtype is not weight.dtype:
        # PyTorch's RuntimeError (the composite's own dtype check looks at real dtypes only)
        raise RuntimeError(
            f"{fn}: input type ({x.dtype.name}) and weight type ({weight.dtype.name}) should be "
            "the same; convert one with .to(...)"
        )


def _check_bias(bias: Tensor | None, channels: int, fn: str) -> None:
    """``bias`` is None or holds one value per output channel."""
    if bias is not None and tuple(bias.shape) != (channels,):
        raise RuntimeError(
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
            raise RuntimeError(f"{fn}: padding must be non-negative, got {padding!r}")
        return x, pads
    if padding == "valid":
        return x, (0,) * len(kernel)
    if padding != "same":
        raise RuntimeError(f"{fn}: padding must be 'same', 'valid' or ints, got {padding!r}")
    if any(s != 1 for s in stride):
        raise RuntimeError(
            f"{fn}: padding='same' is not supported for strided convolutions "
            f"(stride={stride}); give the padding as ints"
        )
    totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
    extra = [t % 2 for t in reversed(totals)]
    if any(extra):
        x = pad(x, [w for e in extra for w in (0, e)])
    return x, tuple(t // 2 for t in totals)


def kernel_layout(out: Tensor, *operands: Tensor) -> Tensor:
    """``out``, a kernel's new 3-d to 5-d result, laid out as torch's 2-D convolutions and
    pools (and 3-D max pools) lay theirs out: channels-last where an operand's strides
    suggest that format (``suggest_memory_format``), else C order (a backend's kernel may
    have followed a layout torch's strides do not suggest: a size-1 axis's stride differs).
    3-d ``(N, C, L)`` tensors are seen as ``(N, C, 1, L)``: torch's 1-D pools run as 2-D ones
    over a height of one. Its memory is replaced through ``.data`` (no node; a reference's
    result may be a view of a temporary, which it then leaves)."""
    wanted = "contiguous_format"
    for x in operands:
        if c_ordered(x.native) and 1 not in x.shape[1:]:
            continue  # (suggests C order: the common case, told without the strides)
        wanted = suggested_format(*_as_kernel_sees(x))
        if wanted != "contiguous_format":
            break
    shape = tuple(out.shape)
    if wanted == "contiguous_format":
        if c_ordered(out.native) and 1 not in shape:
            return out  # (the common case, told without the strides)
        order = tuple(range(out.ndim))
    else:
        order = (0, *range(2, out.ndim), 1)
    if out.stride() == _strides_in(shape, order):
        return out  # (torch:cpu's kernels already lay it out so; a size-1 axis's stride counts)
    out.data = Tensor(laid_out(out.backend, out.native, order), out.backend, out.dtype)
    return out


@functools.lru_cache(maxsize=256)  # (a training loop meets a few shapes, again and again)
def _strides_in(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a dense tensor of ``shape`` with its axes in ``order`` in memory
    (outermost first), as torch gives a new one (a size-1 axis's too)."""
    strides, step = [0] * len(shape), 1
    for axis in reversed(order):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def _as_kernel_sees(x: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides of ``x`` as torch's 2-D kernels read them: an ``(N, C, L)``
    one as ``x.unsqueeze(-2)``."""
    shape, strides = tuple(x.shape), x.stride()
    if len(shape) != 3:
        return shape, strides
    (n, c, length), (sn, sc, sl) = shape, strides
    return (n, c, 1, length), (sn, sc, length * sl, sl)


def _line_operands(x: Tensor, weight: Tensor) -> tuple[Tensor, ...]:
    """The operands whose layout a 1-D convolution's result takes (:func:`kernel_layout`):
    torch runs it as a 2-D one of ``x.contiguous()`` (C order unless ``x`` already counts as
    contiguous, a size-1 axis's stride aside) and the weight, each over a height of one."""
    return (x, weight) if x.is_contiguous() else (weight,)


def _lift(value: tuple[int, ...], height: int) -> tuple[int, ...]:
    """A 1-D argument as the 2-D one of a convolution over a height of one."""
    return (height, *value) if len(value) == 1 else value


def _conv_composite(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> Tensor:
    """A checked batched convolution through its composite (``conv2d`` for 1-D and 2-D,
    ``conv3d`` for 3-D). A 1-D one is ``conv2d`` over a height of one (a :class:`Line`
    reference): one node on the caller's input and weight, as PyTorch's."""
    if x.dim() == 3:
        out = fused_or_reference(
            "conv2d",
            _LINE_CONV,
            (x, weight, bias),
            _lift(stride, 1),
            _lift(padding, 0),
            _lift(dilation, 1),
            groups,
        )
        return kernel_layout(out, *_line_operands(x, weight))
    name = f"conv{x.dim() - 2}d"
    return fused_or_reference(
        name, conv_reference, (x, weight, bias), stride, padding, dilation, groups
    )


def _complex_conv(
    real_conv: Callable[[Tensor, Tensor, Tensor | None], Tensor],
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
) -> Tensor:
    """A complex convolution (plain or transposed: ``real_conv`` of input, weight and bias)
    as PyTorch's ``complex_convolution`` computes it: three real ones (Gauss's trick), a =
    (xr, wr, br), b = (xi, wi), c = (xr + xi, wr + wi, br + bi), and a - b + i (c - a - b):
    PyTorch's nodes and its rounding."""
    xr, xi = _real_parts(x)
    wr, wi = _real_parts(weight)
    br, bi = (None, None) if bias is None else _real_parts(bias)
    a = real_conv(xr, wr, br)
    b = real_conv(xi, wi, None)
    c = real_conv(xr + xi, wr + wi, None if bias is None else br + bi)
    rest = c - a - b
    return a - b + labelled(rest * 1j, "MulBackward1", rest)  # (i as a Scalar: MulBackward1)


def _real_parts(t: Tensor) -> tuple[Tensor, Tensor]:
    """The real and imaginary parts of complex ``t`` as PyTorch's ``complex_to_real`` takes
    them: selects of ``view_as_real`` of its conjugate resolved."""
    pairs = tw.view_as_real(t.resolve_conj())
    return pairs.select(-1, 0), pairs.select(-1, 1)


def _convolution(
    fn: str,
    rank: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: int | Sequence[int],
    padding: str | int | Sequence[int],
    dilation: int | Sequence[int],
    groups: int,
) -> Tensor:
    x, batched = _batched(input, rank + 2, fn)
    _check_conv(x, weight, groups, False, fn)
    stride = _at_least(_ntuple(stride, rank, fn, "stride"), 1, fn, "stride")
    dilation = _at_least(_ntuple(dilation, rank, fn, "dilation"), 1, fn, "dilation")
    kernel = tuple(weight.shape[2:])
    x, padding = _resolve_padding(x, padding, kernel, stride, dilation, fn)
    padded = tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    _check_fits(padded, kernel, dilation, fn)
    _check_bias(bias, weight.shape[0], fn)
    if x.shape[0] and not x.numel():
        # PyTorch's empty-input rules: zero channels give an empty result of the output's
        # size with zero channels (whatever the weight's), other empty axes are refused.
        if x.shape[1]:
            raise RuntimeError(
                f"{fn}: Only zero batch or zero channel inputs are supported, but got input "
                f"shape: {list(input.shape)}"
            )
        spots = [
            (n - d * (k - 1) - 1) // s + 1 for n, k, d, s in zip(padded, kernel, dilation, stride)
        ]
        out = (x.sum() * 0).expand(x.shape[0], 0, *spots)  # (in the graph, as PyTorch's)
        return out if batched else out.squeeze(0)
    if x.is_complex():
        real = lambda x, w, b: _conv_composite(x, w, b, stride, padding, dilation, groups)  # noqa: E731
        out = _complex_conv(real, x, weight, bias)
    else:
        out = _conv_composite(x, weight, bias, stride, padding, dilation, groups)
    if rank != 2:
        return out if batched else out.squeeze(0)
    return kernel_layout(out, x, weight) if batched else kernel_layout(out).squeeze(0)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution over time of a ``(time, batch, in_channels)`` input with
    ``(kernel, in_channels, out_channels)`` weight and ``(out_channels)`` bias, ``pad``
    steps of zeros at both ends; the output is ``(time', batch, out_channels)``."""
    if input.dim() != 3 or weight.dim() != 3 or bias.dim() != 1:
        raise RuntimeError(
            f"conv_tbc: expected a 3-D input, 3-D weight and 1-D bias, got shapes "
            f"{tuple(input.shape)}, {tuple(weight.shape)} and {tuple(bias.shape)}"
        )
    x = input.permute(1, 2, 0)
    out = conv1d(x, weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


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
    weight; ``padding`` may be ints, ``'same'`` or ``'valid'``."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


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
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input with ``(O,
    C / groups, kd, kh, kw)`` weight; ``padding`` may be ints, ``'same'`` or ``'valid'``."""
    return _convolution("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _dilate(x: Tensor, stride: tuple[int, ...]) -> Tensor:
    """``x`` with ``stride - 1`` zeros between neighbouring elements of each spatial axis."""
    for axis, s in enumerate(stride, start=2):
        size = x.shape[axis]
        if s == 1 or size == 0:
            continue
        spread = _pad_constant(x.unsqueeze(axis + 1), [(axis + 1, 0, s - 1)], 0)
        shape = list(x.shape)
        shape[axis] = size * s
        x = spread.reshape(shape).narrow(axis, 0, (size - 1) * s + 1)
    return x


def conv_transpose_reference(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    groups: int,
    dilation: tuple[int, ...],
) -> Tensor:
    """The transposed convolution of ``(N, C, *size)`` ``x`` with ``(C, O / groups, *kernel)``
    ``weight`` (the decomposition of the ``conv_transpose`` composite): a stride-1
    convolution of the zero-dilated input, padded by what the forward convolution's windows
    hang over (less ``padding``), with the kernel flipped and its in/out channels swapped
    within each group."""
    c, og, *kernel = weight.shape
    rank = len(kernel)
    edge = [d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding)]
    widths = [w for e, op in reversed(list(zip(edge, output_padding))) for w in (e, e + op)]
    x = pad(_dilate(x, stride), widths)
    flipped = (
        weight.reshape(groups, c // groups, og, *kernel)
        .transpose(1, 2)
        .reshape(groups * og, c // groups, *kernel)
        .flip(tuple(range(2, 2 + rank)))
    )
    return _conv_composite(x, flipped, bias, (1,) * rank, (0,) * rank, dilation, groups)


def _conv_transpose(
    fn: str,
    rank: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    output_padding: int | Sequence[int],
    groups: int,
    dilation: int | Sequence[int],
) -> Tensor:
    x, batched = _batched(input, rank + 2, fn)
    _check_conv(x, weight, groups, True, fn)
    if isinstance(padding, str):
        raise TypeError(f"{fn}: padding must be ints, got {padding!r}")
    stride = _at_least(_ntuple(stride, rank, fn, "stride"), 1, fn, "stride")
    padding = _ntuple(padding, rank, fn, "padding")
    output_padding = _ntuple(output_padding, rank, fn, "output_padding")
    dilation = _at_least(_ntuple(dilation, rank, fn, "dilation"), 1, fn, "dilation")
    if min(padding) < 0 or min(output_padding) < 0:
        raise RuntimeError(
            f"{fn}: padding {padding} and output_padding {output_padding} must be non-negative"
        )
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"{fn}: output_padding {output_padding} must be smaller than stride {stride} or "
            f"dilation {dilation} in each dimension"
        )
    kernel = weight.shape[2:]
    size = [
        (n - 1) * s - 2 * p + d * (k - 1) + op + 1
        for n, s, p, d, k, op in zip(x.shape[2:], stride, padding, dilation, kernel, output_padding)
    ]
    if min(size) < 1:
        raise RuntimeError(
            f"{fn}: the output of input {tuple(input.shape)} with weight {tuple(weight.shape)} "
            f"would have spatial size {tuple(size)}; use less padding"
        )
    _check_bias(bias, weight.shape[1] * groups, fn)
    late_bias = None
    if bias is not None and bias.dtype is not x.dtype:
        _check_late_bias(x, weight, bias, stride, dilation, groups, fn)
        late_bias, bias = bias, None
    lift = rank == 1  # a transposed convolution over a height of one (one node, as PyTorch's)
    if lift:
        stride, padding = _lift(stride, 1), _lift(padding, 0)
        output_padding, dilation = _lift(output_padding, 0), _lift(dilation, 1)
    reference = _LINE_TRANSPOSE if lift else conv_transpose_reference
    real = lambda x, w, b: fused_or_reference(  # noqa: E731
        "conv_transpose", reference, (x, w, b), stride, padding, output_padding, groups, dilation
    )
    out = _complex_conv(real, x, weight, bias) if x.is_complex() else real(x, weight, bias)
    if lift:
        out = kernel_layout(out, *_line_operands(x, weight))
    elif rank == 2 and batched:
        out = kernel_layout(out, x, weight)
    if late_bias is not None:  # added in place, as PyTorch does: the result keeps its dtype
        out = (out + late_bias.reshape(1, -1, *(1,) * rank)).to(out.dtype)
    return out if batched else out.squeeze(0)


#: The references of the 1-D convolutions: the 2-D ones over a height of one.
_LINE_CONV = Line(conv_reference)
_LINE_TRANSPOSE = Line(conv_transpose_reference)


def _check_late_bias(
    x: Tensor,
    weight: Tensor,
    bias: Tensor,
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    fn: str,
) -> None:
    """A bias of another dtype than ``x`` passes only where PyTorch's CPU kernel adds it to
    the result in place: a 1-D or 2-D float32 or float64 input, off oneDNN's path (which
    PyTorch takes for float32 by the rule below, and for half dtypes by the CPU's flags:
    ``contract.cpu_loops.onednn_convolves``), and a real bias."""
    if bias.dtype.is_complex and x.dim() <= 4 and x.dtype in (tw.float32, tw.float64):
        raise RuntimeError(
            f"{fn}: result type {bias.dtype.name} of the bias can't be cast to the desired "
            f"output type {x.dtype.name}; pass a real bias"
        )
    kh, kw = (1, *weight.shape[2:])[-2:]
    n = x.shape[0]
    onednn = (
        x.dtype is tw.float32
        and (groups > 1 or (kh > 3 and kw > 3) or n > 1 or x.numel() > 20480)
        and (
            max(stride) > 1
            or max(dilation) > 1
            or n >= 16
            or (kh, kw) != (1, 1)
            or tw.get_num_threads() > 1
        )
    )
    half = x.dtype in (tw.float16, tw.bfloat16) and not onednn_convolves(x.dtype.name)
    if x.dim() > 4 or (x.dtype not in (tw.float32, tw.float64) and not half) or onednn:
        raise RuntimeError(
            f"{fn}: input type ({x.dtype.name}) and bias type ({bias.dtype.name}) should be "
            "the same; convert the bias with bias.to(input.dtype)"
        )


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
    """1-D transposed convolution of ``(N, C, L)`` (or ``(C, L)``) input with ``(C, O /
    groups, k)`` weight: the gradient of ``conv1d`` with respect to its input, plus bias."""
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


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
    """2-D transposed convolution of ``(N, C, H, W)`` (or ``(C, H, W)``) input with ``(C, O /
    groups, kh, kw)`` weight: the gradient of ``conv2d`` with respect to its input, plus
    bias."""
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """3-D transposed convolution of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input with
    ``(C, O / groups, kd, kh, kw)`` weight: the gradient of ``conv3d`` with respect to its
    input, plus bias."""
    return _conv_transpose(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip
