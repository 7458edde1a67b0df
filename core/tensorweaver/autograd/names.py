"""The name a graph node prints as its ``grad_fn``: PyTorch's (``MulBackward0``).

TensorWeaver records a node per IR primitive or fused composite; PyTorch names its nodes
after the ATen op, with an overload number. Where one primitive stands for several ATen ops
the node's inputs and saved arguments pick the one PyTorch would have run (``sum`` over
every axis is ``SumBackward0``, over some ``SumBackward1``; over every axis named as a
``dim``, ops/reduce.py labels it ``SumBackward1`` itself). A composite that the core
decomposes (``mean`` is a sum then a division) labels its last node with PyTorch's name
for the whole op (:func:`tensorweaver.ops.apply.labelled`); one that does not prints its
last primitive's name.
"""

from __future__ import annotations

from typing import Any, Callable

#: Primitives whose ATen name is not their own name capitalised.
RENAMED = {
    "max": "AmaxBackward0",  # (max() and min() label theirs MaxBackward1, MinBackward1)
    "min": "AminBackward0",
    "cast": "ToCopyBackward0",
    "to_device": "ToCopyBackward0",
    "identity": "CloneBackward0",
    "reshape": "ViewBackward0",
    "take": "IndexBackward0",
    "pad": "ConstantPadNdBackward0",
    "clamp": "ClampBackward1",
    "log1p": "Log1PBackward0",
    # (PyTorch's real/imag of a complex tensor: a select of its view_as_real)
    "real": "SelectBackward0",
    "imag": "SelectBackward0",
    # torch.special's own kernels
    "erfcx": "SpecialErfcxBackward0",
    "i0e": "SpecialI0EBackward0",
    "i1": "SpecialI1Backward0",
    "i1e": "SpecialI1EBackward0",
    "ndtri": "SpecialNdtriBackward0",
    "log_ndtr": "SpecialLogNdtrBackward0",
}

#: Fused composites (``tensorweaver.ops.composite``) by the name of their kernel.
FUSED = {
    "softmax": "SoftmaxBackward0",
    "log_softmax": "LogSoftmaxBackward0",
    "conv2d": "ConvolutionBackward0",
    "conv3d": "ConvolutionBackward0",
    "conv_transpose": "ConvolutionBackward0",
    "max_pool2d": "MaxPool2DWithIndicesBackward0",
    "embedding": "EmbeddingBackward0",
    "layer_norm": "NativeLayerNormBackward0",
    "instance_norm": "ViewBackward0",  # (PyTorch's batch norm of the input viewed as one batch)
    "cross_entropy": "NllLossBackward0",
    "cross_entropy_nd": "NllLoss2DBackward0",
    "dropout": "MulBackward0",
    "ctc_loss": "CtcLossBackward0",
}

#: ``interpolate``'s modes as PyTorch spells them in its upsampling kernels' names.
_UPSAMPLE = {
    "nearest": "Nearest",
    "nearest-exact": "NearestExact",
    "linear": "Linear",
    "bilinear": "Bilinear",
    "bicubic": "Bicubic",
    "trilinear": "Trilinear",
}


#: Pooling kernels by PyTorch's name for their n-D kernel.
_POOLS = {
    "avg_pool": "AvgPool{}DBackward0",
    "max_pool": "MaxPool{}DWithIndicesBackward0",
    "max_pool_with_indices": "MaxPool{}DWithIndicesBackward0",
    "adaptive_avg_pool": "AdaptiveAvgPool{}DBackward0",
    "adaptive_max_pool": "AdaptiveMaxPool{}DBackward0",
}


def _pool_name(kernel: str, spatial: int) -> str:
    # PyTorch pools one dimension as two (unsqueeze, 2-D pool, squeeze)
    return "SqueezeBackward1" if spatial == 1 else _POOLS[kernel].format(spatial)


def composite_name(kernel: str, inputs: tuple, static: tuple) -> str:
    """PyTorch's grad_fn name for the composite ``kernel`` on ``inputs`` with ``static``
    arguments, the same whether a backend fused it or the core decomposed it."""
    if kernel == "linear":  # addmm with a bias, mm without; batched input is viewed back
        if len(inputs[0].shape) != 2:
            return "ViewBackward0"
        return "AddmmBackward0" if len(inputs) == 3 and inputs[2] is not None else "MmBackward0"
    if kernel == "interpolate":
        mode, antialias, spatial = static[0], static[4], len(inputs[0].shape) - 2
        if mode == "area":
            return _pool_name("adaptive_avg_pool", spatial)
        return f"Upsample{_UPSAMPLE[mode]}{spatial}D{'Aa' if antialias else ''}Backward0"
    if kernel == "grid_sample":
        return f"GridSampler{len(inputs[0].shape) - 2}DBackward0"
    if kernel in _POOLS:
        return _pool_name(kernel, len(static[0]))  # (the kernel's or output's size per axis)
    return FUSED.get(kernel) or _capitalised(kernel)  # not computed for every lookup


def _ndims(node: Any) -> tuple[int, ...]:
    return tuple(len(t.shape) for t in node.inputs)


def _constant(node: Any, i: int) -> bool:
    """Whether input ``i`` is a 0-d operand that needs no gradient (a Python scalar)."""
    return node.parents[i] is None and not node.inputs[i].shape


def _matmul(node: Any) -> str:
    # The matmul primitive sees matrices or batches of them (vector products are reshaped
    # or reduced before it); PyTorch folds a batched product into one and views it back.
    return "MmBackward0" if _ndims(node) == (2, 2) else "UnsafeViewBackward0"


def _reduction(full: str, partial: str) -> Callable[[Any], str]:
    """A reduction's name: ``full`` over every axis without keepdim (the overload without a
    dim; a call given one is labelled ``partial`` by ops/reduce.py), else ``partial``."""

    def name(node: Any) -> str:
        if not isinstance(node.saved, tuple):
            # (prod's node keeping its result, dims kept: ops/reduce.py _saving_product; a
            # visible one is a keepdim call, and the squeeze after a hidden one is labelled)
            return partial
        axes, keepdim = node.saved
        return full if len(axes) == len(node.inputs[0].shape) and not keepdim else partial

    return name


def _pow(node: Any) -> str:
    if _constant(node, 1):  # tensor ** scalar
        return "PowBackward0"
    return "PowBackward2" if _constant(node, 0) else "PowBackward1"


def _remainder(node: Any) -> str:
    return "RemainderBackward0" if _constant(node, 1) else "RemainderBackward1"


def _zeta(node: Any) -> str:
    if _constant(node, 1):  # zeta(x, number)
        return "SpecialZetaBackward2"
    return "SpecialZetaBackward1" if _constant(node, 0) else "SpecialZetaBackward0"


def _sub(node: Any) -> str:
    return "RsubBackward1" if _constant(node, 0) else "SubBackward0"


def _slice(node: Any) -> str:
    # (a select, ops/index.py: ``(axis, index)`` saved, the axis dropped)
    return "SelectBackward0" if len(node.saved) == 2 else "SliceBackward0"


def _fused(node: Any) -> str:
    kernel, _, _, static, slots = node.saved
    inputs = node.inputs
    if slots is not None:  # absent optional arguments (conv's bias) count as None
        found = iter(inputs)
        inputs = tuple(next(found) if present else None for present in slots)
    return composite_name(kernel, inputs, static)


def _function(node: Any) -> str:
    return node.saved[0].__name__ + "Backward"  # as PyTorch names a custom Function's node


#: Primitives whose name depends on their operands.
BY_OPERANDS: dict[str, Callable[[Any], str]] = {
    "matmul": _matmul,
    "sum": _reduction("SumBackward0", "SumBackward1"),
    "prod": _reduction("ProdBackward0", "ProdBackward1"),
    "pow": _pow,
    "sub": _sub,
    "remainder": _remainder,
    "zeta": _zeta,
    "slice": _slice,
    "fused": _fused,
    "function": _function,
}


def _capitalised(op: str) -> str:
    return "".join(part.capitalize() for part in op.split("_")) + "Backward0"


def grad_fn_name(node: Any) -> str:
    """PyTorch's name for ``node`` (its op's own name, capitalised, once it is released)."""
    if node.label is not None:
        return node.label
    if node.op in RENAMED:
        return RENAMED[node.op]
    rule = BY_OPERANDS.get(node.op)
    if rule is not None and node.inputs is not None:
        return rule(node)
    return _capitalised(node.op)
