"""``torch.func.vmap`` (also ``tw.vmap``): a function mapped over a dimension of its inputs.

Each batch element's slice of the mapped inputs goes through the function in turn, and
the outputs are stacked along ``out_dims``. That is exact for functions without side
effects (what ``vmap`` requires), composes with itself and with the gradient transforms
(per-sample gradients, ensembles), and is differentiable, since slicing and stacking are.
Input checks and their errors are PyTorch's.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Union

from tensorweaver.func._batched_values import level_bit, levels_of, mark, marking
from tensorweaver.func._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from tensorweaver.func._randomness import SameDraws, check_randomness, forbid_randomness
from tensorweaver.func._unbatched_writes import UnbatchedWrites
from tensorweaver.ops.creation import empty, ones, zeros
from tensorweaver.ops.movement import stack
from tensorweaver.tensor import VMAPPED, Tensor

__all__ = ["vmap"]

InDims = Union[int, tuple]
OutDims = Union[int, tuple, None]


def _name(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


def _flat_in_dims(in_dims: Any, args: tuple, func: Callable) -> tuple[list, list, Any, int]:
    """The flat inputs, their mapped dims (non-negative, or None), the spec, batch size."""
    head = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"{head}: expected `in_dims` to be int or a (potentially nested) tuple matching "
            f"the structure of inputs, got: {type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, "
            "or you are trying to vmap over a function with no inputs. The latter is "
            "unsupported."
        )
    flat, spec = tree_flatten(args)
    dims = broadcast_prefix(in_dims, spec)
    if dims is None:
        raise ValueError(
            f"{head}: in_dims is not compatible with the structure of `inputs`. in_dims has "
            f"structure {tree_flatten(in_dims)[1]} but inputs has structure {spec}."
        )
    for i, (arg, d) in enumerate(zip(flat, dims)):
        if d is not None and not isinstance(d, int):
            raise ValueError(
                f"{head}: Got in_dim={d} for an input but in_dim must be either an integer "
                "dimension or None."
            )
        if d is None:
            continue
        if isinstance(d, bool):  # PyTorch's arg.size(in_dim) refuses a bool
            raise TypeError(f"{head}: in_dim must be an int, not bool (got in_dim={d})")
        if not isinstance(arg, Tensor):
            raise ValueError(
                f"{head}: Got in_dim={d} for an input but the input is of type {type(arg)}. "
                "We cannot vmap over non-Tensor arguments, please use None as the "
                "respective in_dim"
            )
        n = arg.dim()
        if not -n <= d < n:
            raise ValueError(
                f"{head}: Got in_dim={d} for some input, but that input is a Tensor of "
                f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}."
            )
        dims[i] = d % n
    sizes = [arg.shape[d] for arg, d in zip(flat, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return flat, dims, spec, sizes[0]


def _check_out_dims(out_dims: Any, func: Callable) -> None:
    for d in [out_dims] if isinstance(out_dims, int) else tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(
                f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                "None or a python collection of ints representing where in the outputs the "
                "vmapped dimension should appear."
            )


def _flat_out_dims(out_dims: Any, output: Any, func: Callable) -> tuple[list, list, Any]:
    flat, spec = tree_flatten(output)
    if isinstance(output, Tensor) and isinstance(out_dims, tuple) and len(out_dims) == 1:
        dims: Optional[list] = list(out_dims)
    else:
        dims = broadcast_prefix(out_dims, spec)
    if dims is None:
        raise ValueError(
            f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
            "compatible with the structure of `outputs`. out_dims has structure "
            f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}."
        )
    return flat, dims, spec


def _same(values: list) -> bool:
    """Whether every element's output is the first's (NaN where it has NaN): an output
    that does not depend on the mapped inputs."""
    first = values[0]
    for v in values[1:]:
        if v is first:
            continue
        if isinstance(first, Tensor) and isinstance(v, Tensor):
            if (v.shape, v.dtype) != (first.shape, first.dtype):
                return False
            if not bool(((v == first) | ((v != v) & (first != first))).all()):
                return False
        elif v != first:
            return False
    return True


def _stacked(func: Callable, values: list, out_dim: Optional[int], bit: int) -> Any:
    """The elements' ``values`` of one output stacked along ``out_dim`` (batched at the
    outer levels only), or for ``out_dim`` None their one value, which must not be batched
    at this vmap's level ``bit``."""
    name = _name(func)
    if out_dim is None:
        batched = any(isinstance(v, Tensor) and levels_of(v.native) & bit for v in values)
        if batched or not _same(values):
            raise ValueError(
                f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            )
        return values[0]
    for v in values:
        if not isinstance(v, Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v)}. "
                "Did you mean to set out_dims= to None for output?"
            )
    out = stack(values, dim=_checked_out_dim(out_dim, values[0].dim() + 1))
    mark(out.native, levels_of(out.native) & ~bit)
    return out


def _checked_out_dim(out_dim: int, n: int) -> int:
    """``out_dim`` as a dim of an ``n``-dim stacked output, with PyTorch's IndexError."""
    if not -n <= out_dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
            f"{out_dim})"
        )
    return out_dim % n


def _empty_batch(
    func: Callable, flat: list, dims: list, spec: Any, out_dims: Any, kwargs: dict, bit: int
) -> Any:
    """The outputs for a batch of size 0: ``func`` runs on zeros of one element's shape,
    for the outputs' structure and shapes (and on ones too when an output with out_dim
    None must be shown not to depend on them)."""

    def run(fill: Callable) -> Any:
        stand_in = [
            x if d is None else fill(x.shape[:d] + x.shape[d + 1 :], dtype=x.dtype, device=x.device)
            for x, d in zip(flat, dims)
        ]
        return _element_call(func, stand_in, dims, spec, kwargs, bit)

    flat_out, flat_dims, out_spec = _flat_out_dims(out_dims, run(zeros), func)
    unmapped = any(d is None and isinstance(v, Tensor) for v, d in zip(flat_out, flat_dims))
    flat_again = tree_flatten(run(ones))[0] if unmapped else flat_out
    result = []
    for v, again, d in zip(flat_out, flat_again, flat_dims):
        if d is None or not isinstance(v, Tensor):
            result.append(_stacked(func, [v, again], d, bit))
            continue
        shape = list(v.shape)
        shape.insert(_checked_out_dim(d, v.dim() + 1), 0)
        result.append(empty(shape, dtype=v.dtype, device=v.device))
    return tree_unflatten(result, out_spec)


def check_chunk_size_type(api: str, chunk_size: Any) -> None:
    """The TypeError PyTorch's chunking raises, at the call, for a ``chunk_size`` that is
    not an int (a float, a bool)."""
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)):
        raise TypeError(f"{api}: chunk_size must be an int or None, got {chunk_size!r}")


def _vmap_call(
    func: Callable,
    in_dims: Any,
    out_dims: Any,
    randomness: str,
    chunk_size: Optional[int],
    args: tuple,
    kwargs: dict,
) -> Any:
    flat, dims, spec, size = _flat_in_dims(in_dims, args, func)
    check_chunk_size_type("vmap", chunk_size)
    bit = level_bit()
    with forbid_randomness(randomness), marking(randomness, bit):
        if size == 0:
            return _empty_batch(func, flat, dims, spec, out_dims, kwargs, bit)
        same = SameDraws() if randomness == "same" else None
        shared = [x for x, d in zip(flat, dims) if d is None]
        mapped = [x for x, d in zip(flat, dims) if d is not None]
        writes = UnbatchedWrites(func, shared, mapped, kwargs)
        outputs = []
        for i in range(size):
            if same is not None and i > 0:
                same.rewind()
            sliced = [x if d is None else x.select(d, i) for x, d in zip(flat, dims)]
            outputs.append(_element_call(func, sliced, dims, spec, kwargs, bit))
            if i == 0:  # one repeated write at most before the error
                writes.check()
        writes.check()
        # (stacked while the marks last: an output batched at this level may not be unmapped)
        return _stacked_outputs(func, outputs, out_dims, bit)


def _element_call(
    func: Callable, sliced: list, dims: list, spec: Any, kwargs: dict, bit: int
) -> Any:
    """``func`` of one element's slices, which are batched at level ``bit`` (their reads of
    values are refused, as PyTorch's of its batched tensors)."""
    for x, d in zip(sliced, dims):
        if d is not None:
            mark(x.native, levels_of(x.native) | bit)
    VMAPPED.depth += 1
    try:
        return func(*tree_unflatten(sliced, spec), **kwargs)
    finally:
        VMAPPED.depth -= 1


def _stacked_outputs(func: Callable, outputs: list, out_dims: Any, bit: int) -> Any:
    flat_outs, flat_dims, out_spec = _flat_out_dims(out_dims, outputs[0], func)
    per_element = []
    for output in outputs:
        flat_out, out_spec_i = tree_flatten(output)
        if out_spec_i != out_spec:
            raise RuntimeError(
                f"vmap({_name(func)}, ...): `{_name(func)}` returned outputs of different "
                f"structures for different batch elements ({out_spec} and {out_spec_i}); "
                "a vmapped function must return the same structure for every element"
            )
        per_element.append(flat_out)
    result = [
        _stacked(func, [flat_out[j] for flat_out in per_element], d, bit)
        for j, d in enumerate(flat_dims)
    ]
    return tree_unflatten(result, out_spec)


def vmap(
    func: Callable,
    in_dims: InDims = 0,
    out_dims: OutDims = 0,
    randomness: str = "error",
    *,
    chunk_size: Optional[int] = None,
) -> Callable[..., Any]:
    """``func`` mapped over dimension ``in_dims`` of its inputs (an int, or a tree like the
    arguments with an int or None per input), outputs stacked along ``out_dims``;
    ``randomness``: "error" (a random op raises), "different" or "same" draws per element;
    ``chunk_size`` bounds how many elements run at once (here: always one)."""
    check_randomness(randomness)
    _check_out_dims(out_dims, func)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return wrapper
