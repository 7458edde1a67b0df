"""A whole ``tw.linalg`` function as one backend call, where the backend has PyTorch's own
kernel for it (the optional ``linalg_function`` and ``fused_linalg_backward``, API 2.4): the
torch backend computes ``torch.linalg.cholesky`` and its gradient as torch does, at torch's
cost, where the core's composition would add its own steps (a solve's backward would factor
the matrix again).

Each differentiable output is a ``fused`` node of its own (``ops.composite``'s kind: the
backend's ``fused_linalg_backward`` gives its inputs' gradients, and under ``create_graph``
the core's decomposition is differentiated instead); a node has one output, so a program
that uses several outputs of one call runs the backward once for each.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import Node
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.tensor import Tensor

#: The kinds (see :func:`fused_or_reference`) of a result and LAPACK's ``info``.
WITH_INFO = (None, dtypes.int32)


def fused_or_reference(
    name: str,
    grad_fn: str,
    reference: Callable[..., tuple],
    tensors: tuple,
    static: tuple,
    kinds: tuple[DType | None, ...],
    dtype: DType | None = None,
) -> tuple:
    """The outputs of the linalg function ``name`` on ``tensors`` (the first one floating-
    point) with ``static`` arguments: the backend's ``linalg_function`` where it computes
    ``name``, else ``reference(*tensors, *static)`` (a tuple of tensors, one per output).

    ``kinds`` gives each output's dtype: None for a differentiable output of ``dtype``
    (the first tensor's unless given; its node is named ``grad_fn``), a DType for one
    without gradient."""
    backend = tensors[0].backend
    # The fused path needs the backend's backward; fused_kernel also hides it inside
    # ``reference_only`` (tw check's reference), where the core's decomposition runs.
    function = getattr(backend, "linalg_function", None)
    if function is None or fused_kernel(backend, "linalg_backward") is None:
        return reference(*tensors, *static)
    # Plain loops, no generators: this runs once per call, against kernels of ~20 us.
    grad = False
    if is_grad_enabled():
        for t in tensors:
            if t.requires_grad:
                grad = True
                break
    result = function(name, tuple([t.native for t in tensors]), static, grad)
    if result is None:
        return reference(*tensors, *static)
    natives, saved = result
    dtype = dtype or tensors[0].dtype
    outs = []
    for i, (native, kind) in enumerate(zip(natives, kinds)):
        out = Tensor(native, backend, kind or dtype)
        if kind is None and grad:  # the node apply() and labelled() would make, made at once
            node = Node(
                "fused", tensors, ("linalg", (saved, i), _output(reference, i), static, None)
            )
            node.label = grad_fn
            out._node = node
            out.requires_grad = True
        outs.append(out)
    return tuple(outs)


def _output(reference: Callable[..., tuple], i: int) -> Callable[..., Tensor]:
    """The reference's output ``i`` alone (what ``create_graph`` differentiates)."""

    def output(*args: Any) -> Tensor:
        return reference(*args)[i]

    return output
