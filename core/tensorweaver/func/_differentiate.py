"""What the reverse-mode transforms share: choosing the arguments (``argnums``), giving
them fresh graph entries, telling whether a result must stay attached to a graph outside
the transform, and vector-Jacobian products with zeros for unused inputs.

A transform differentiates with respect to fresh tensors: a leaf of its own for an input
without history, a copy for one that requires grad (so a transform around this one,
or the caller's autograd, still sees the dependency). Results keep their graph only when
the function's output reaches a tensor requiring grad other than the transform's own
leaves (an enclosing transform's input, a module's parameters in a closure), as PyTorch's
transforms compose with its autograd; otherwise they come back without history.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any, Union

from tensorweaver.autograd.engine import grad as autograd_grad
from tensorweaver.func._pytree import tree_flatten, tree_map, tree_unflatten
from tensorweaver.ops.creation import zeros_like
from tensorweaver.tensor import Tensor

ArgNums = Union[int, tuple[int, ...]]

#: The nesting depth of the transform that made each of the transforms' own leaves, by
#: id, while the leaf lives. To a transform, a leaf of its own depth or deeper is not the
#: outside: an inner transform's leaf stood for a value that was a constant to it; a
#: shallower one (an enclosing transform's input) is.
_LEVEL_OF: dict[int, int] = {}
_DEPTH = [0]


def own_leaf(t: Tensor, depth: int) -> Tensor:
    """``t`` detached as a leaf requiring grad, owned by a transform at ``depth``."""
    leaf = t.detach().requires_grad_()
    _LEVEL_OF[id(leaf)] = depth
    weakref.finalize(leaf, _LEVEL_OF.pop, id(leaf), None)  # ids are unique while alive
    return leaf


def _wrapped_argnum(argnum: Any, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if -num_args <= argnum < num_args:
        return argnum % num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def check_argnums(argnums: Any) -> None:
    """PyTorch's errors for an ``argnums`` that is empty or repeats an index."""
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")


def wrapped_argnums(argnums: Any, num_args: int) -> tuple[int, ...]:
    """``argnums`` as a tuple of non-negative indices into ``num_args`` arguments."""
    if isinstance(argnums, int):
        return (_wrapped_argnum(argnums, num_args),)
    if isinstance(argnums, tuple):
        return tuple(_wrapped_argnum(a, num_args) for a in argnums)
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


class Differentiable:
    """The arguments at ``argnums`` of ``args`` given fresh graph entries (see the module)."""

    def __init__(self, args: tuple, argnums: Any) -> None:
        self.indices = wrapped_argnums(argnums, len(args))
        self.depth = _DEPTH[0]
        new_args = list(args)
        self.specs = []
        self.leaves: list[Tensor] = []
        for i in self.indices:
            flat, spec = tree_flatten(args[i])
            fresh = [self._entry(t) for t in flat]
            new_args[i] = tree_unflatten(fresh, spec)
            self.specs.append(spec)
            self.leaves.extend(fresh)
        self.args = tuple(new_args)

    def _entry(self, t: Any) -> Tensor:
        if not isinstance(t, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
        if t.requires_grad:
            # a copy, not ``view_as``: the engine gives a view the gradient of its base's
            # other uses too (d(x * x.view_as(x))/d(view) comes out as 2x)
            return t.clone()
        return own_leaf(t, self.depth)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The block (the function's call) runs one transform deeper."""
        _DEPTH[0] += 1
        try:
            yield
        finally:
            _DEPTH[0] -= 1

    def per_argument(self, flat: list, single: bool) -> Any:
        """Values for ``self.leaves`` (in order) regrouped as the arguments were: one
        argument's tree when ``argnums`` was an int, else a tuple of them."""
        out, start = [], 0
        for spec in self.specs:
            out.append(tree_unflatten(flat[start : start + spec.num_leaves], spec))
            start += spec.num_leaves
        return out[0] if single else tuple(out)

    def reaches_outside(self, outputs: list) -> bool:
        """Whether any of ``outputs`` depends on a tensor requiring grad that is neither
        this transform's leaf nor a deeper one's (see :data:`_LEVEL_OF`)."""
        seen: set[int] = set()
        stack: list = []
        for o in outputs:
            if isinstance(o, Tensor) and o.requires_grad:
                stack.append(o._node if o._node is not None else o)
        while stack:
            item = stack.pop()
            if isinstance(item, Tensor):
                if _LEVEL_OF.get(id(item), -1) < self.depth:
                    return True
                continue
            if id(item) in seen or item.parents is None:
                continue
            seen.add(id(item))
            stack.extend(p for p in item.parents if p is not None)
        return False


def detached(tree: Any) -> Any:
    """``tree`` with every tensor detached (other leaves as they are)."""
    return tree_map(lambda x: x.detach() if isinstance(x, Tensor) else x, tree)


def unwrapped_aux(aux: Any, keep: bool) -> Any:
    """A function's ``aux`` as a transform hands it back: tensors only (PyTorch's error
    otherwise), detached unless the results keep their graph."""

    def check(x: Any) -> Any:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
        return x if keep else x.detach()

    return tree_map(check, aux)


def vjp_list(
    outputs: list, inputs: list, cotangents: list, create_graph: bool, retain_graph: bool = True
) -> list:
    """Sum over ``outputs`` of cotangent times Jacobian, per input; zeros where an input
    does not reach the outputs."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    found: Any = [None] * len(inputs)
    if pairs:
        found = autograd_grad(
            [o for o, _ in pairs],
            inputs,
            [c for _, c in pairs],
            retain_graph=retain_graph or create_graph,
            create_graph=create_graph,
            allow_unused=True,
        )
    return [zeros_like(t) if g is None else g for t, g in zip(inputs, found)]
