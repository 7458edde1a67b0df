"""``jacrev``, ``jacfwd`` and ``hessian`` of ``torch.func``.

Both Jacobians are built row by row from vector-Jacobian products (one per output
element) on the core's reverse-mode autograd; ``jacfwd`` gives the same layout as
PyTorch's forward-mode one: each output's shape followed by each input's.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.func._differentiate import (
    ArgNums,
    Differentiable,
    check_argnums,
    detached,
    unwrapped_aux,
    vjp_list,
    wrapped_argnums,
)
from tensorweaver.func._pytree import tree_flatten, tree_unflatten
from tensorweaver.func._randomness import forbid_randomness
from tensorweaver.func.eager_transforms import (
    check_differentiable_outputs,
    check_forward_dtype,
    tensor_outputs,
)
from tensorweaver.func.vmap import check_chunk_size_type
from tensorweaver.ops.creation import eye, zeros
from tensorweaver.ops.movement import stack
from tensorweaver.tensor import Tensor

__all__ = ["hessian", "jacfwd", "jacrev"]


def _jacobian(
    func: Callable,
    argnums: ArgNums,
    has_aux: bool,
    args: tuple,
    api: str,
    reverse: bool,
) -> Any:
    outer_enabled = is_grad_enabled()
    with enable_grad():
        diff = Differentiable(args, argnums)
        with diff.running():
            output = func(*diff.args)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    f"{api}: output of function f should be a tuple: (output, aux) if has_aux "
                    "is True"
                )
            output, aux = output
        flat_out, out_spec = tensor_outputs(output, api)
        if reverse:
            check_differentiable_outputs(flat_out)
        _no_complex("jacrev" if reverse else "jacfwd", flat_out, "outputs")
        keep = outer_enabled and diff.reaches_outside(flat_out)
        per_output = []
        for o in flat_out:
            n = o.numel()
            basis = eye(n, dtype=o.dtype, device=o.device).reshape(n, *o.shape)
            rows = [vjp_list([o], diff.leaves, [basis[k]], keep) for k in range(n)]
            per_leaf = []
            for j, leaf in enumerate(diff.leaves):
                shape = (*o.shape, *leaf.shape)
                # reverse mode's Jacobian has the input's dtype, forward mode's the output's
                dtype = leaf.dtype if reverse else o.dtype
                if n == 0:
                    per_leaf.append(zeros(shape, dtype=dtype, device=leaf.device))
                else:
                    per_leaf.append(stack([r[j] for r in rows]).reshape(shape).to(dtype))
            per_output.append(diff.per_argument(per_leaf, isinstance(argnums, int)))
    jac = tree_unflatten(per_output, out_spec)
    if not keep:
        jac = detached(jac)
    return (jac, unwrapped_aux(aux, keep)) if has_aux else jac


def jacrev(
    func: Callable,
    argnums: ArgNums = 0,
    *,
    has_aux: bool = False,
    chunk_size: Optional[int] = None,
    _preallocate_and_copy: bool = False,
) -> Callable[..., Any]:
    """A function returning the Jacobian of ``func`` with respect to the arguments at
    ``argnums``, by reverse mode: per output, a tensor of shape ``output.shape +
    input.shape`` (trees and tuples as the outputs and ``argnums``)."""
    check_argnums(argnums)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:  # no keyword arguments, as PyTorch's
        _no_complex("jacrev", args, "inputs")
        jacobian = _jacobian(func, argnums, has_aux, args, "vjp(f, *primals)", True)
        check_chunk_size_type("jacrev", chunk_size)  # after the call, as PyTorch's chunking
        return jacobian

    return wrapper


def jacfwd(
    func: Callable,
    argnums: ArgNums = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable[..., Any]:
    """``torch.func.jacfwd``: the same Jacobian layout as :func:`jacrev` (computed here
    by reverse mode too); a random op in ``func`` raises under ``randomness="error"``,
    as PyTorch's vmap over the tangents does."""
    check_argnums(argnums)

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:  # no keyword arguments, as PyTorch's
        _no_complex("jacfwd", args, "inputs")
        primals = tree_flatten([args[i] for i in wrapped_argnums(argnums, len(args))])[0]
        for x in primals:
            if not isinstance(x, Tensor):  # PyTorch sizes a basis for each first
                raise AttributeError(f"'{type(x).__name__}' object has no attribute 'numel'")
        for x in primals:
            check_forward_dtype("primal", x)
        with forbid_randomness(randomness):
            return _jacobian(func, argnums, has_aux, args, "jvp(f, primals, tangents)", False)

    return wrapper


def hessian(func: Callable, argnums: ArgNums = 0) -> Callable[..., Any]:
    """The Hessian of ``func`` with respect to the arguments at ``argnums``
    (``jacfwd(jacrev(func, argnums), argnums)``)."""
    return jacfwd(jacrev(func, argnums), argnums)


def _no_complex(api: str, tree: Any, what: str) -> None:
    """PyTorch's error for a complex input or output of a Jacobian (its message says
    "input idx" for both)."""
    for i, x in enumerate(tree_flatten(tree)[0]):
        if isinstance(x, Tensor) and x.dtype.is_complex:
            raise RuntimeError(
                f"{api}: Expected all {what} to be real but received complex tensor at "
                f"flattened input idx: {i}"
            )
