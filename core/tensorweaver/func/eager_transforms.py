"""``grad``, ``grad_and_value``, ``vjp``, ``jvp`` and ``linearize`` of ``torch.func``.

All of them run on the core's reverse-mode autograd (see :mod:`._differentiate`); ``jvp``
and ``linearize`` use the double-vjp trick: the vjp ``u -> u J`` is linear in ``u``, so
its own vjp with the tangent ``t`` gives ``J t``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from tensorweaver.autograd.engine import grad as autograd_grad
from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.func._differentiate import (
    ArgNums,
    Differentiable,
    check_argnums,
    detached,
    own_leaf,
    unwrapped_aux,
    vjp_list,
)
from tensorweaver.func._pytree import tree_flatten, tree_unflatten
from tensorweaver.ops.creation import zeros_like
from tensorweaver.tensor import Tensor

__all__ = ["grad", "grad_and_value", "jvp", "linearize", "vjp"]


def _split_aux(output: Any, api: str) -> tuple[Any, Any]:
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return output


def _grad_and_value(func: Callable, argnums: ArgNums, has_aux: bool, args: tuple, kw: dict):
    api = "grad_and_value(f)(*args)"
    outer_enabled = is_grad_enabled()
    with enable_grad():
        diff = Differentiable(args, argnums)
        with diff.running():
            output = func(*diff.args, **kw)
        aux = None
        if has_aux:
            output, aux = _split_aux(output, api)
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(
                f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
            )
        if output.dtype.is_complex:
            raise RuntimeError(
                "grad can be implicitly created only for real scalar outputs but got "
                f"{output.dtype}"
            )
        keep = outer_enabled and diff.reaches_outside([output])
        # the graph stays: it may run through tensors the caller made before the call
        grads = vjp_list([output], diff.leaves, [None], create_graph=keep)
    result = diff.per_argument(grads, isinstance(argnums, int))
    if not keep:
        output = output.detach()
    if has_aux:
        return result, (output, unwrapped_aux(aux, keep))
    return result, output


def grad_and_value(
    func: Callable, argnums: ArgNums = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """A function returning ``(gradient, value)`` of the scalar ``func`` with respect to
    the arguments at ``argnums`` (``(gradient, (value, aux))`` with ``has_aux``)."""
    check_argnums(argnums)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _grad_and_value(func, argnums, has_aux, args, kwargs)

    return wrapper


def grad(func: Callable, argnums: ArgNums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function returning the gradient of the scalar ``func`` with respect to the
    arguments at ``argnums`` (a tree like that argument; a tuple of them for a tuple
    ``argnums``); ``(gradient, aux)`` with ``has_aux``."""
    check_argnums(argnums)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def tensor_outputs(output: Any, api: str) -> tuple[list, Any]:
    """The flat tensors of ``output`` and its spec, with PyTorch's errors for others."""
    flat, spec = tree_flatten(output)
    if not flat:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = {output})"
        )
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(o)}"
            )
    return flat, spec


def check_differentiable_outputs(flat_out: list) -> None:
    """PyTorch's error for an output a vector-Jacobian product cannot go through."""
    for o in flat_out:
        if not (o.dtype.is_floating_point or o.dtype.is_complex):
            raise RuntimeError(
                "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                f"got Tensor with dtype {o.dtype}"
            )


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)`` (and ``aux``): ``vjp_fn(cotangents)`` is the tuple of
    the cotangents' products with the Jacobian, one tree per primal."""
    api = "vjp(f, *primals)"
    outer_enabled = is_grad_enabled()
    with enable_grad():
        diff = Differentiable(primals, tuple(range(len(primals))))
        with diff.running():
            output = func(*diff.args)
        aux = None
        if has_aux:
            output, aux = _split_aux(output, "vjp(f, *primals)")
        flat_out, out_spec = tensor_outputs(output, api)
        check_differentiable_outputs(flat_out)
        keep = outer_enabled and diff.reaches_outside(flat_out)

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: Any = None) -> tuple:
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {cot_spec}, primal output: {out_spec}"
            )
        for c in flat_cot:
            if not (c is None or isinstance(c, Tensor)):
                raise TypeError(
                    f"gradients can be either Tensors or None, but got {type(c).__name__}"
                )
        if create_graph is None:
            create_graph = is_grad_enabled() and (
                keep or any(isinstance(c, Tensor) and c.requires_grad for c in flat_cot)
            )
        with enable_grad():
            found = vjp_list(flat_out, diff.leaves, flat_cot, create_graph, retain_graph)
        return diff.per_argument(found, False)

    result = output if keep else detached(output)
    if has_aux:
        return result, vjp_fn, unwrapped_aux(aux, keep)
    return result, vjp_fn


def check_forward_dtype(what: str, x: Tensor) -> None:
    """PyTorch's error for a forward-mode primal or tangent that is not float or complex."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise ValueError(f"Expected {what} to be floating point or complex, but got: {x.dtype}")


def _check_primals_tangents(primals: Any, tangents: Any, api: str) -> tuple[list, list]:
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec} and tangents with structure {t_spec}"
        )
    for what, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{api}: Expected {what} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {what} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        check_forward_dtype("primal", p)
        check_forward_dtype("tangent", t)
        if p.shape != t.shape:
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} "
                f"while the given forward gradient is of size {list(t.shape)}."
            )
    return flat_p, flat_t


class _Linearized:
    """``func`` run once at the primals, with the vjp graph kept so that any number of
    tangents can be pushed through it (the double-vjp trick)."""

    def __init__(self, func: Callable, primals: tuple, has_aux: bool, api: str) -> None:
        self.outer_enabled = is_grad_enabled()
        with enable_grad():
            self.diff = Differentiable(primals, tuple(range(len(primals))))
            with self.diff.running():
                output = func(*self.diff.args)
            self.aux = None
            if has_aux:
                output, self.aux = _split_aux(output, api)
            self.flat_out, self.out_spec = tensor_outputs(output, api)
            self.keep = self.outer_enabled and self.diff.reaches_outside(self.flat_out)
            # u -> u J as a graph in the dummy cotangents u (own leaves of this transform);
            # an integer or bool output has none: its tangent is zeros, as PyTorch's
            self.dummies = [
                own_leaf(zeros_like(o), self.diff.depth)
                if o.dtype.is_floating_point or o.dtype.is_complex
                else None
                for o in self.flat_out
            ]
            paired = [(o, u) for o, u in zip(self.flat_out, self.dummies) if u is not None]
            self.vjps = vjp_list(
                [o for o, _ in paired], self.diff.leaves, [u for _, u in paired], True
            )

    def push(self, flat_tangents: list) -> list:
        """``J t`` per output, for tangents matching the flat primals."""
        pairs = [(v, t) for v, t in zip(self.vjps, flat_tangents) if v.requires_grad]
        create = self.keep or any(t.requires_grad for t in flat_tangents)
        create = create and self.outer_enabled
        if not pairs:
            return [zeros_like(o).detach() for o in self.flat_out]
        dummies = [u for u in self.dummies if u is not None]
        with enable_grad():
            found = iter(
                autograd_grad(
                    [v for v, _ in pairs],
                    dummies,
                    [t for _, t in pairs],
                    retain_graph=True,
                    create_graph=create,
                    allow_unused=True,
                )
            )
        per_output = [None if u is None else next(found) for u in self.dummies]
        return [
            zeros_like(o).detach() if g is None else g for o, g in zip(self.flat_out, per_output)
        ]

    def primal_out(self) -> Any:
        out = tree_unflatten(self.flat_out, self.out_spec)
        return out if self.keep else detached(out)

    def aux_out(self) -> Any:
        return unwrapped_aux(self.aux, self.keep)


def jvp(
    func: Callable,
    primals: Any,
    tangents: Any,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> tuple:
    """``(func(*primals), J @ tangents)`` (and ``aux``), trees like ``func``'s output."""
    api = "jvp(f, primals, tangents)"
    _, flat_t = _check_primals_tangents(primals, tangents, api)
    lin = _Linearized(func, primals, has_aux, api)
    if strict and not any(v.requires_grad for v in lin.vjps):
        raise RuntimeError(
            "jvp(f, primals, tangents, strict=True): The output of f is independent of the "
            "inputs. This is not allowed with strict=True."
        )
    tangents_out = tree_unflatten(lin.push(flat_t), lin.out_spec)
    if has_aux:
        return lin.primal_out(), tangents_out, lin.aux_out()
    return lin.primal_out(), tangents_out


def linearize(func: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``J @ tangents`` at the
    primals, without running ``func`` again."""
    api = "linearize(f, *primals)"
    for p in tree_flatten(primals)[0]:
        if not isinstance(p, Tensor):  # PyTorch makes a tangent with p.new_empty first
            raise AttributeError(f"'{type(p).__name__}' object has no attribute 'new_empty'")
        check_forward_dtype("primal", p)
    lin = _Linearized(func, primals, False, api)
    p_spec = tree_flatten(primals)[1]

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(
                f"Expected the tangents {t_spec} to have the same argspec as the primals {p_spec}"
            )
        for i, (p, t) in enumerate(zip(tree_flatten(primals)[0], flat_t)):
            for what, ours, theirs in (
                ("shape", t.shape, p.shape),
                ("device", t.device, p.device),
                ("dtype", t.dtype, p.dtype),
            ):
                if ours != theirs:
                    raise RuntimeError(
                        f"tangent:{i} with {what} {ours} in flattened pytree doesn't match the "
                        f"{what} {theirs} of the corresponding primal."
                    )
        return tree_unflatten(lin.push(flat_t), lin.out_spec)

    return lin.primal_out(), jvp_fn
