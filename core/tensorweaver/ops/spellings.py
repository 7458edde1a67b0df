"""PyTorch's other spellings of ops the core has, and the small compositions scripts reach for.

Each function here is a few lines over existing ops, so it inherits their gradients, dtype rules
and checks: aliases (``greater``, ``swapaxes``, ``ger``...), stacking and splitting helpers
(``hstack``, ``tensor_split``, ``atleast_2d``...), the fused multiply-adds (``addmm``,
``baddbmm``...), and predicates (``equal``, ``is_nonzero``...). :data:`METHODS` names those that
are Tensor methods too; :data:`INPLACE` the ops whose ``op_`` in-place form is spelled from them.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import numbers
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, saves_integer_input
from tensorweaver.contract import dtypes
from tensorweaver.ops import apply, movement, structure, views
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import linalg as la
from tensorweaver.ops import out_arguments as oa
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.complex import complex as make_complex
from tensorweaver.ops.complex import conj_physical, imag, is_conj, real
from tensorweaver.ops.index import refuse_saved_indices
from tensorweaver.tensor import Size, Tensor, _axis, index_argument

greater, greater_equal, less, less_equal = ew.gt, ew.ge, ew.lt, ew.le
not_equal, absolute, negative, multiply = ew.ne, ew.abs, ew.neg, ew.mul
fix, ger, swapdims, moveaxis = ew.trunc, la.outer, views.transpose, views.movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``transpose`` by NumPy's names for its arguments, as PyTorch's."""
    return views.transpose(input, axis0, axis1)


def positive(input: Tensor) -> Tensor:
    """``input`` itself, as PyTorch (a bool tensor has no unary ``+``)."""
    if input.dtype is dtypes.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def rsub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input`` (``torch.rsub``: subtraction with its operands reversed)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"rsub(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    out = ew.sub(other, input, alpha=alpha)
    # PyTorch names a tensor-minus-tensor rsub for itself (a number's is RsubBackward1 already)
    return apply.labelled(out, "RsubBackward0", input, other) if isinstance(other, Tensor) else out


def ravel(input: Tensor) -> Tensor:
    return views.reshape(input, -1)


def select(
    input: Tensor, dim: int = movement.REQUIRED, index: int = movement.REQUIRED, **aliases: Any
) -> Tensor:
    """``input`` indexed by ``index`` along ``dim`` (that dimension removed), as ``x[..., i]``."""
    if aliases or dim is movement.REQUIRED or index is movement.REQUIRED:
        dim = movement.dim_alias("select", aliases, dim, index=index)
    given = dim
    dim = _axis(dim, input.ndim, "select")
    size = input.shape[dim]
    if isinstance(index, int) and not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
            f"dimension {dim}"
        )
    out = input[(slice(None),) * dim + (index,)]
    node = out._node
    if given < 0 and node is not None and node.op == "slice" and len(node.saved) == 2:
        # PyTorch's SelectBackward0 saves the dim as given (x[:, i]'s the non-negative one)
        node.saved = (dim - input.ndim, node.saved[1])
    return out


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``input`` at ``index``, in ``index``'s shape."""
    if not isinstance(index, Tensor):
        raise TypeError(
            f"take(): argument 'index' (position 1) must be Tensor, not {type(index).__name__}"
        )
    if index.dtype is not dtypes.int64:
        raise RuntimeError(
            f"take(): Expected a long tensor for index, but got {index.dtype.name}; convert it "
            "with .long()"
        )
    flat = movement.reshape(input, -1)
    if index.ndim:
        return apply.labelled(flat[index], "TakeBackward0", input)
    # A 0-d index would index as a number, read once: as one of one element (a view, which
    # follows a write through the index's .data), the take node reads it again at backward,
    # as PyTorch's node reads the index it saves
    out = apply.labelled(movement.reshape(flat[index.reshape(1)], ()), "TakeBackward0", input)
    if out._node is None:
        return out
    refuse_saved_indices("take", (index,))
    return saves_integer_input(out, index)


def fliplr(input: Tensor) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"fliplr: input must be >= 2-d, got a {input.ndim}-d tensor")
    return movement.flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    if input.ndim < 1:
        raise RuntimeError("flipud: input must be >= 1-d, got a 0-d tensor")
    return movement.flip(input, (0,))


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90° ``k`` times in the plane ``dims``, from the first axis towards the second."""
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_axis(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90: expected rotation dims to be different, got {d0} and {d1}")
    k %= 4
    if k == 1:
        out = views.transpose(movement.flip(input, (d1,)), d0, d1)
    elif k == 2:
        out = movement.flip(input, (d0, d1))
    elif k == 3:
        out = movement.flip(views.transpose(input, d0, d1), (d1,))
    else:
        out = input.clone()
        if input._inference:  # (PyTorch's autograd skips rot90: its clone's CopyBackwards)
            return out
    return apply.labelled(out, "Rot90Backward0", input)


# -- stacking and splitting -----------------------------------------------------------------


def atleast_1d(*tensors: Any) -> Any:
    return _each(tensors, lambda t: views.reshape(t, (1,)) if t.ndim == 0 else t)


def atleast_2d(*tensors: Any) -> Any:
    return _each(
        tensors, lambda t: views.reshape(t, (1,) * (2 - t.ndim) + t.shape) if t.ndim < 2 else t
    )


def atleast_3d(*tensors: Any) -> Any:
    def lift(t: Tensor) -> Tensor:
        if t.ndim == 0:
            return views.reshape(t, (1, 1, 1))
        if t.ndim == 1:
            return views.reshape(t, (1, t.shape[0], 1))
        if t.ndim == 2:
            return views.reshape(t, (*t.shape, 1))
        return t

    return _each(tensors, lift)


def _each(tensors: tuple, fn: Any) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fn(t) for t in tensors[0])
    out = tuple(fn(t) for t in tensors)
    return out[0] if len(out) == 1 else out


def _nonempty(name: str, tensors: Sequence[Tensor]) -> list:
    if not len(tensors):
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    tensors = atleast_1d(_nonempty("hstack", tensors))
    return movement.cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return movement.cat(atleast_2d(_nonempty("vstack", tensors)), 0)


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    return movement.cat(atleast_3d(_nonempty("dstack", tensors)), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    columns = [movement.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]
    return movement.cat(columns, 1)


def _split_argument(name: str, given: Any, named: dict[str, Any]) -> Any:
    """The one split argument of ``name`` (``tensor_split``, ``hsplit``...): given by position,
    or by one of PyTorch's names for its overloads (``sections``: an int, ``indices``: a
    sequence, ``tensor_indices_or_sections``: a tensor); read as PyTorch's parser reads it:
    an int (a NumPy one too, never a bool), a list of ints, or the tensor itself where
    ``name`` has a tensor overload (tensor_split; the others read a tensor's ints)."""
    found = {k: v for k, v in named.items() if v is not None}
    kinds = {
        "sections": numbers.Integral,
        "indices": Sequence,
        "tensor_indices_or_sections": Tensor,
    }
    if given is not None:
        found = {"indices_or_sections": given, **found}
    sections = found.get("sections")
    if isinstance(sections, Tensor) and sections.numel() == 1:
        # (PyTorch's parser reads an int from a one-element integer tensor)
        if sections.dtype is dtypes.bool:
            raise RuntimeError(f"{name}: sections must be an integer, not a bool tensor")
        if not (sections.dtype.is_floating_point or sections.dtype.is_complex):
            found["sections"] = int(sections.item())
    value = None
    if len(found) == 1 and not any(
        k in kinds and (not isinstance(v, kinds[k]) or isinstance(v, bool))
        for k, v in found.items()
    ):
        value = next(iter(found.values()))
        if not (isinstance(value, Tensor) and name == "tensor_split"):
            value = _split_ints(name, value)
    if value is None:
        got = ", ".join(f"{k}={type(v).__name__}" for k, v in found.items()) or "nothing"
        raise TypeError(
            f"{name}() received an invalid combination of arguments: got {got}; pass one of "
            f"sections (an int), indices (a sequence of ints)"
            + (" or tensor_indices_or_sections (a tensor)" if name == "tensor_split" else "")
        )
    return value


def _positions(name: str, args: tuple, dim: Any = None) -> tuple[Any, Any]:
    """``(indices_or_sections, dim)`` from the arguments of ``name`` given by position after
    the input: PyTorch's parser names the first by its overload alone (``sections=``,
    ``indices=``, ``tensor_indices_or_sections=``), never ``indices_or_sections=``, so it is
    taken by position alone; ``dim`` (the keyword's value, or its default
    ``movement._FIRST_DIM``; None where ``name`` has no dim) may follow it."""
    most = 1 if dim is None else 2
    if len(args) > most or (len(args) == 2 and dim is not movement._FIRST_DIM):
        twice = " and dim=" if len(args) == 2 else ""
        raise TypeError(
            f"{name}() received an invalid combination of arguments: got {len(args)} "
            f"positional arguments after the input{twice}; pass the sections or indices"
            + (", then dim once" if most == 2 else " alone")
        )
    return (args[0] if args else None), (args[1] if len(args) == 2 else dim)


def _split_ints(name: str, value: Any) -> Any:
    """A split argument other than tensor_split's tensor as an int or a list of ints (a
    tensor of one element as its int); None where none of the overloads takes it (a tensor
    of several indices, or none: PyTorch reads no list of ints from a tensor)."""
    if isinstance(value, Tensor) and value.ndim:
        if value.numel() != 1:
            return None
        value = [value]
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [index_argument(i, name, "indices") for i in value]
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def tensor_split(
    input: Tensor,
    *args: Any,
    dim: Any = movement._FIRST_DIM,
    sections: int | None = None,
    indices: Sequence[int] | None = None,
    tensor_indices_or_sections: Tensor | None = None,
    axis: int | None = None,
) -> tuple[Tensor, ...]:
    """Split into ``n`` near-equal parts (the first ``size % n`` one longer), or before each of
    the ``indices`` as ``x[:i0], x[i0:i1], ..., x[ik:]`` would. ``args``: the parts or the
    indices (by position alone, see :func:`_positions`), then ``dim``."""
    given, dim = _positions("tensor_split", args, dim)
    # (axis= is PyTorch's spelling of dim=; not **aliases, which would take any keyword)
    dim = movement.first_dim("tensor_split", {} if axis is None else {"axis": axis}, dim)
    indices_or_sections = _split_argument(
        "tensor_split",
        given,
        {
            "sections": sections,
            "indices": indices,
            "tensor_indices_or_sections": tensor_indices_or_sections,
        },
    )
    if input.ndim == 0:  # (PyTorch checks the rank before the dim and the splits)
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 "
            "dims; unsqueeze it first"
        )
    dim = _axis(dim, input.ndim, "tensor_split")
    size = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dtype is not dtypes.int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{indices_or_sections.dtype.name}; pass an int64 tensor (.long())"
            )
        if indices_or_sections.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {indices_or_sections.ndim} dims"
            )
        as_list = indices_or_sections.tolist()
        indices_or_sections = as_list if indices_or_sections.ndim else int(as_list)
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {n}")
        lengths = [size // n + (1 if i < size % n else 0) for i in range(n)]
        starts = list(itertools.accumulate([0, *lengths[:-1]]))
        return tuple(views.narrow(input, dim, a, n) for a, n in zip(starts, lengths))
    cuts = [slice(int(i)).indices(size)[1] for i in indices_or_sections]
    starts, stops = [0, *cuts], [*cuts, size]
    return tuple(views.narrow(input, dim, a, max(b - a, 0)) for a, b in zip(starts, stops))


def _split_by(name: str, dim: int, min_ndim: int) -> Any:
    def split(
        input: Tensor,
        *args: Any,
        sections: int | None = None,
        indices: Sequence[int] | None = None,
    ) -> tuple[Tensor, ...]:
        named = {"sections": sections, "indices": indices}
        indices_or_sections = _split_argument(name, _positions(name, args)[0], named)
        if input.ndim < min_ndim:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {min_ndim} dimension, "
                f"but got a tensor with {input.ndim} dimensions!"
            )
        axis = 0 if name == "hsplit" and input.ndim == 1 else dim
        sections = indices_or_sections
        if isinstance(sections, int) and (sections == 0 or input.shape[axis] % sections):
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {axis}, but the size of the "
                f"dimension {input.shape[axis]} is not divisible by the split_size "
                f"{indices_or_sections}!"
            )
        return tensor_split(input, indices_or_sections, axis)

    split.__name__ = name
    return split


hsplit, vsplit, dsplit = (
    _split_by("hsplit", 1, 1),
    _split_by("vsplit", 0, 2),
    _split_by("dsplit", 2, 3),
)


def split_with_sizes(
    input: Tensor, split_sizes: Sequence[int], dim: int = movement._FIRST_DIM, **aliases: Any
) -> tuple[Tensor, ...]:
    sizes = movement.split_sizes("split_with_sizes", split_sizes)
    dim = movement.first_dim("split_with_sizes", aliases, dim)
    if sum(sizes) != input.shape[_axis(dim, input.ndim, "split_with_sizes")]:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {input.shape[dim]} "
            f"(input tensor's size at dimension {dim}), but got split_sizes={sizes}"
        )
    return views.split(input, sizes, dim)


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape all ``shapes`` broadcast to (PyTorch's rule), as a ``Size``."""
    tuples = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(apply.broadcast_shapes("broadcast_shapes", (), *tuples))
    except RuntimeError:  # PyTorch's words
        raise RuntimeError(
            f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}"
        ) from None


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shapes = [tuple(t.shape) for t in tensors]
    try:
        shape = apply.broadcast_shapes("broadcast_tensors", (), *shapes)
    except RuntimeError:
        raise RuntimeError(_mismatch_of_tensors(shapes)) from None
    # (an input of that shape itself, as PyTorch's: its expand there would be a new view)
    return tuple(t if t.shape == shape else views.expand(t, shape) for t in tensors)


def _mismatch_of_tensors(shapes: list[tuple[int, ...]]) -> str:
    """PyTorch's words for ``broadcast_tensors`` of shapes that do not broadcast: the shapes
    folded from the left, the first pair that fails named by its last mismatched dimension."""
    a: tuple[int, ...] = ()
    for b in shapes:
        ndim = max(len(a), len(b))
        a, b = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
        for i in reversed(range(ndim)):
            if a[i] != b[i] and 1 not in (a[i], b[i]):
                return (
                    f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) "
                    f"at non-singleton dimension {i}"
                )
        a = tuple(y if x == 1 else x for x, y in zip(a, b))
    raise AssertionError(f"shapes {shapes} broadcast")  # (only called on a failed broadcast)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-d) along the diagonal of one matrix, zeros elsewhere."""
    mats = [movement.reshape(t, (1, -1)) if t.ndim < 2 else t for t in tensors]
    if any(m.ndim != 2 for m in mats):
        raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions")
    if not mats:
        return cr.empty(1, 0)
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        right = width - left - m.shape[1]
        rows.append(movement.pad_dims(m, [(0, 0), (left, right)]))
        left += m.shape[1]
    out = movement.cat([ew.cast(r, _result_dtype(mats)) for r in rows], 0)
    return apply.labelled(out, "BlockDiagBackward0", *tensors)


def _result_dtype(tensors: Sequence[Tensor]) -> Any:
    from tensorweaver.promotion import result_type

    return result_type(*tensors)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of a 1-d tensor's elements, one per row, in itertools' order."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    if r == 0:  # (PyTorch's is a new tensor, outside the graph)
        return cr.empty((0,), dtype=input.dtype, device=input.device)
    index = list(pick(range(input.shape[0]), r))
    # (no combinations: an empty index keeps the (0, r) result in input's graph, as PyTorch)
    columns = (
        cr.tensor(index, dtype=dtypes.int64, device=input.device)
        if index
        else cr.empty((0, r), dtype=dtypes.int64, device=input.device)
    )
    return input[columns]


# -- products with accumulation ----------------------------------------------------------------


def _one_kernel(grad_fn: str) -> Callable[[Callable[..., Tensor]], Callable[..., Tensor]]:
    """The decorated product with accumulation, its result's node named ``grad_fn``
    (PyTorch's kernel computes it in one node)."""

    def decorate(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        names = tuple(inspect.signature(fn).parameters)[:3]  # (PyTorch's: mat1, batch1, ...)

        @functools.wraps(fn)
        def named(*args: Any, **kwargs: Any) -> Tensor:
            out = fn(*args, **kwargs)
            given = dict(zip(names, args))
            input, a, b = (given[n] if n in given else kwargs[n] for n in names)
            operands = (input, a, b) if isinstance(input, Tensor) else (a, b)
            return apply.labelled(out, grad_fn, *operands)

        return named

    return decorate


def _scaled_sum(input: Any, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    logical = product.dtype is dtypes.bool_ and input.dtype is dtypes.bool_
    if logical:  # PyTorch's bool addr: "and" for times, "or" for plus
        product = product if alpha else cr.zeros_like(product)
    else:
        product = product if alpha == 1 else product * alpha
    if not beta:  # PyTorch ignores input then: its NaN and inf do not propagate
        shape = tuple(broadcast_shapes(input.shape, product.shape))
        out = movement.expand(product, shape) if shape != product.shape else product
        return ew.with_zero_gradient(out, input)  # (its gradient zeros, as PyTorch's)
    return (input if logical or beta == 1 else input * beta) + product


def _same_dtype(op: str, input: Any, product: Tensor) -> None:
    """PyTorch's matrix-product kernels take the added tensor in the product's dtype only
    (``addr``, an outer product, promotes), and no bool."""
    if isinstance(input, Tensor) and input.dtype is not product.dtype:
        raise RuntimeError(
            f"{op}: input must have the matrices' dtype, got {input.dtype.name} and "
            f"{product.dtype.name}; convert it with .to({product.dtype.name})"
        )
    if product.dtype is dtypes.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")


def _integral_scalars(dtype: Any, beta: Any, alpha: Any) -> tuple[Any, Any]:
    """``beta`` and ``alpha`` as PyTorch's integer matrix kernels take them: truncated to
    integers (``beta=0.5`` is 0)."""
    if dtype.kind not in "iu":
        return beta, alpha
    return int(beta), int(alpha)


def _addr_scalars(dtype: Any, beta: Any, alpha: Any) -> None:
    """PyTorch's checks of ``addr``'s scalars against the result's dtype."""
    for name, value in (("beta", beta), ("alpha", alpha)):
        if isinstance(value, bool) and dtype is not dtypes.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if dtype.kind in "iub" and not isinstance(value, numbers.Integral):
            raise RuntimeError(
                f"For integral input tensors, argument {name} must not be a floating point "
                f"number; pass an int {name} to addr with {dtype.name} tensors."
            )


def _rounded_once(
    fn: Any, input: Tensor, a: Tensor, b: Tensor, beta: Any, alpha: Any
) -> Tensor | None:
    """``fn`` (a product with accumulation) of float16 or bfloat16 operands, computed in
    float32 and rounded once, as PyTorch's kernels do; None for other operands."""
    half = getattr(input, "dtype", None)
    # (under autocast the product's own operand casts decide its dtype)
    if half not in _HALF or not a.dtype is b.dtype is half or autocast_dtype() is not None:
        return None
    wide = (ew.cast(t, dtypes.float32) for t in (input, a, b))
    return ew.cast(fn(*wide, beta=beta, alpha=alpha), half)


@_one_kernel("AddmmBackward0")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    rounded = _rounded_once(addmm, input, mat1, mat2, beta, alpha)
    if rounded is not None:
        return rounded
    low = autocast_dtype()
    if low is not None:  # on PyTorch's lower-precision list: the added input is cast too
        input, mat1, mat2 = la.autocast_operands(low, input, mat1, mat2)
    product = la.mm(mat1, mat2)
    _same_dtype("addmm", input, product)
    return _scaled_sum(input, product, *_integral_scalars(product.dtype, beta, alpha))


@_one_kernel("AddmvBackward0")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    rounded = _rounded_once(addmv, input, mat, vec, beta, alpha)
    if rounded is not None:
        return rounded
    product = la.matmul_as_given(mat, vec)
    _same_dtype("addmv", input, product)
    return _scaled_sum(input, product, *_integral_scalars(product.dtype, beta, alpha))


@_one_kernel("AddrBackward0")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    dtype = _result_dtype([input, vec1, vec2])
    _addr_scalars(dtype, beta, alpha)
    if dtype in _HALF and input.dtype is vec1.dtype is vec2.dtype:
        return _addr_rounded_each_step(input, vec1, vec2, beta, alpha)
    return _scaled_sum(input, la.outer(vec1, vec2), beta, alpha)


_HALF = (dtypes.float16, dtypes.bfloat16)


def _addr_rounded_each_step(
    input: Tensor, vec1: Tensor, vec2: Tensor, beta: Any, alpha: Any
) -> Tensor:
    """``beta * input + (alpha * vec1) * vec2`` in float16/bfloat16 as PyTorch's CPU kernel
    computes it: the scalars and every step rounded to the dtype (not rounded once)."""
    half = input.dtype

    def rounded(t: Tensor) -> Tensor:  # one step in float32 (exact for halves), then rounded
        return ew.cast(ew.cast(t, half), dtypes.float32)

    def scalar(v: Any) -> float:
        return cr.tensor(v, dtype=half, device=input.device).item()

    wide = [ew.cast(t, dtypes.float32) for t in (input, vec1, vec2)]
    product = rounded(la.outer(rounded(ew.mul(wide[1], scalar(alpha))), wide[2]))
    out = product if not beta else ew.add(rounded(ew.mul(wide[0], scalar(beta))), product)
    shape = tuple(broadcast_shapes(input.shape, out.shape))  # (beta=0 ignores input's values)
    return ew.cast(movement.expand(out, shape) if shape != out.shape else out, half)


@_one_kernel("BaddbmmBackward0")
def baddbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    rounded = _rounded_once(baddbmm, input, batch1, batch2, beta, alpha)
    if rounded is not None:
        return rounded
    low = autocast_dtype()
    if low is not None:  # on PyTorch's lower-precision list: the added input is cast too
        input, batch1, batch2 = la.autocast_operands(low, input, batch1, batch2)
    product = la.bmm(batch1, batch2)
    _same_dtype("baddbmm", input, product)
    return _scaled_sum(input, product, *_integral_scalars(product.dtype, beta, alpha))


@_one_kernel("AddbmmBackward0")
def addbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    half = getattr(input, "dtype", None)
    if (
        half in _HALF
        and batch1.dtype is batch2.dtype is half
        and autocast_dtype() is None
        and batch1.ndim == batch2.ndim == 3
        and 0 < batch1.shape[0] == batch2.shape[0]
    ):
        # PyTorch's CPU kernel: one addmm_ per batch, each rounded to the dtype in turn
        out = addmm(input, batch1[0], batch2[0], beta=beta, alpha=alpha)
        for k in range(1, batch1.shape[0]):
            out = addmm(out, batch1[k], batch2[k], alpha=alpha)
        return out
    return _addbmm_as_one(input, batch1, batch2, beta=beta, alpha=alpha)


def _addbmm_as_one(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """addbmm as one matrix product over (batch, inner) pairs (float32 and wider: PyTorch's
    per-batch rounding differs from it by float rounding only)."""
    rounded = _rounded_once(_addbmm_as_one, input, batch1, batch2, beta, alpha)
    if rounded is not None:
        return rounded
    low = autocast_dtype()
    if low is not None:  # on PyTorch's lower-precision list: the added input is cast too
        input, batch1, batch2 = la.autocast_operands(low, input, batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(
            f"addbmm: batch1 and batch2 must be 3-d, got shapes {list(batch1.shape)} and "
            f"{list(batch2.shape)}"
        )
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(
            f"addbmm: batch1 and batch2 must have the same number of batches, got "
            f"{batch1.shape[0]} and {batch2.shape[0]}"
        )
    # One matrix product over (batch, inner) pairs: every sum accumulates as one, as PyTorch's
    b, n, m = batch1.shape
    lhs = movement.reshape(views.transpose(batch1, 0, 1), (n, b * m))
    product = la.mm(lhs, movement.reshape(batch2, (b * m, batch2.shape[2])))
    _same_dtype("addbmm", input, product)
    return _scaled_sum(input, product, *_integral_scalars(product.dtype, beta, alpha))


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum-product over the last dimensions (a scalar times a tensor when one is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    la.check_same_dtype("inner", input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return structure.tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product with ``input`` conjugated (``dot`` for real tensors)."""
    return apply.labelled(la.dot(conj_physical(input), other), "VdotBackward0", input, other)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"mv: expected a matrix and a vector, got shapes {list(input.shape)} and "
            f"{list(vec.shape)}"
        )
    return apply.labelled(la.matmul_as_given(input, vec), "MvBackward0", input, vec)


def softmax(
    input: Tensor, dim: int = movement.REQUIRED, dtype: Any = None, **aliases: Any
) -> Tensor:
    """``torch.softmax``: the softmax along ``dim``, computed in ``dtype`` if given."""
    if aliases or dim is movement.REQUIRED:
        dim = movement.dim_alias("softmax", aliases, dim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(
    input: Tensor, dim: int = movement.REQUIRED, dtype: Any = None, **aliases: Any
) -> Tensor:
    """``torch.log_softmax``: the log-softmax along ``dim``, computed in ``dtype`` if given."""
    if aliases or dim is movement.REQUIRED:
        dim = movement.dim_alias("log_softmax", aliases, dim)
    return input.log_softmax(dim, dtype=dtype)


def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """``input`` summed over the dimensions it was broadcast along to reach its shape from
    ``size`` (which must broadcast to it)."""
    target = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    if tuple(broadcast_shapes(target, input.shape)) != tuple(input.shape):
        raise RuntimeError(f"size {list(target)} is not expandable to size {list(input.shape)}")
    if not target:  # PyTorch sums a 0-d target's input even when it is 0-d (bool gives int64)
        return rd.sum(input)
    lead = input.ndim - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(target) if n == 1 and input.shape[lead + i] != 1
    )
    out = rd.sum(input, axes, keepdim=True) if axes else input
    return movement.reshape(out, target)


def normal(
    mean: Any,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Any = None,
    out: Tensor | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``torch.normal``: samples of N(mean, std²), elementwise for tensor ``mean``/``std``
    (broadcast together), or of shape ``size`` for two numbers."""
    if out is None:
        return _normal(mean, std, size, generator, dtype, device, requires_grad)
    # (sampled as PyTorch's kernel samples into out: the noise first, so that a mean or a
    # std over out's very elements reads that noise; over a part of them is refused)
    options = {"generator": generator, "dtype": dtype, "device": device}
    sample = functools.partial(_normal, requires_grad=requires_grad, into=out)
    return oa.call_with_out("normal", sample, (mean, std, size), options, out)


def _normal(
    mean: Any,
    std: Any,
    size: Any,
    generator: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    into: Any = None,
) -> Tensor:
    """:func:`normal`'s samples; ``into``: its ``out``. A tensor ``mean`` or ``std`` gets a
    zero gradient, through PyTorch's node (a draw's derivative is zero there)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if isinstance(std, Tensor):
        if std.dtype.is_complex:
            raise RuntimeError("normal expects standard deviation to be non-complex")
        if std.numel() and not bool((std >= 0).all()):  # (NaN fails too, as PyTorch's)
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if not tensors:
        if size is None:
            raise TypeError("normal(): with a float mean and std, pass size=")
        noise = cr.randn(size, generator=generator, dtype=dtype, device=device)
        out = noise * std + mean
        return out.requires_grad_() if requires_grad else out
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError(
            "normal(): size=, dtype=, device= and requires_grad= go with a float mean and std "
            "alone; with a tensor mean or std the samples take its shape, dtype and device"
        )
    shape = tuple(broadcast_shapes(*(t.shape for t in tensors)))
    # (PyTorch samples into a tensor like mean (else std), or into out: complex noise there)
    kind = _result_dtype((*tensors, into)) if isinstance(into, Tensor) else tensors[0].dtype
    if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
        return _sample_normal(mean, std, shape, kind, generator, into)  # (no graph to keep)
    from tensorweaver.ops.sampling import drawn  # (it imports methods, which import this)

    with no_grad():
        out = _sample_normal(mean, std, shape, kind, generator, into)
    form = 3 if len(tensors) == 2 else 1 if tensors[0] is mean else 2
    return drawn(out, f"NormalBackward{form}", *tensors)


def _sample_normal(mean: Any, std: Any, shape: tuple, kind: Any, generator: Any, into: Any) -> Any:
    """``mean + std * noise`` of ``shape`` and dtype ``kind``, read as PyTorch's kernel reads
    them after it draws the noise into ``into`` (see :func:`_written_first`)."""
    like = mean if isinstance(mean, Tensor) else std
    noise = cr.randn(shape, generator=generator, dtype=kind, device=like.device)
    if _written_first(into, std, shape):
        std = noise
    out = std * noise
    out = (out if _written_first(into, mean, shape) else mean) + out
    return out if out.dtype is kind else ew.cast(out, kind)


def _written_first(into: Any, t: Any, shape: tuple) -> bool:
    """Whether the tensor ``t`` lies over the very elements of ``into`` (a tensor resized to
    ``shape``), which PyTorch's ``normal(..., out=into)`` writes before it reads ``t``."""
    if not (isinstance(into, Tensor) and isinstance(t, Tensor)):
        return False
    # (only the tensor itself, views and aliases share its memory: others at once)
    linked = into is t or into._view_of is not None or into._alias_of is not None
    if not (linked or t._view_of is not None or t._alias_of is not None):
        return False
    return oa.same_elements(into, t, None if into.shape == shape else shape)


def get_device(input: Tensor) -> int:
    """-1 on a CPU, else the device's index (as PyTorch)."""
    device = input.device
    return -1 if device.type == "cpu" else int(device.index or 0)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    # (a view, as PyTorch's view(-1): of an inference tensor outside the mode, one without grad)
    return structure.diag(views.reshape(input, -1), offset)


# -- predicates and small reductions -----------------------------------------------------------


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and elements (NaN is not equal to NaN)."""
    return tuple(input.shape) == tuple(other.shape) and bool(rd.all(ew.eq(input, other)).item())


def is_nonzero(input: Tensor) -> bool:
    if input.numel() != 1:
        raise RuntimeError(
            "Boolean value of Tensor with no values is ambiguous"
            if input.numel() == 0
            else "Boolean value of Tensor with more than one value is ambiguous"
        )
    return bool(input.item())


def is_signed(input: Tensor) -> bool:
    return input.dtype is not dtypes.bool and input.dtype is not dtypes.uint8


def is_neg(input: Tensor) -> bool:
    """Whether ``input`` has PyTorch's negative bit: it is the imaginary part of a tensor with
    the conjugate bit (``z.conj().imag``), or a view or ``detach()`` of one."""
    t = input
    while True:
        view = t._view_of
        if view is not None:
            up = view[0]
            if up.dtype is not t.dtype:  # a complex tensor's part, or a view(dtype)
                return getattr(view[1], "part", None) == "imag" and is_conj(up)
            t = up
        elif t._alias_of is not None:
            t = t._alias_of
        else:
            return False


def isposinf(input: Tensor) -> Tensor:
    return ew.isinf(input) & ew.gt(input, 0)


def isneginf(input: Tensor) -> Tensor:
    return ew.isinf(input) & ew.lt(input, 0)


def isreal(input: Tensor) -> Tensor:
    """Where the imaginary part is 0 (True everywhere for a real tensor)."""
    if input.dtype.is_complex:
        return ew.eq(imag(input), 0)
    return cr.ones_like(input, dtype=dtypes.bool)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that takes the other value where one of the two is NaN."""
    return _nan_ignoring("fmax", "FmaxBackward0", ew.ge, input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that takes the other value where one of the two is NaN."""
    return _nan_ignoring("fmin", "FminBackward0", ew.le, input, other)


def _nan_ignoring(fn: str, grad_fn: str, keeps_input: Any, input: Tensor, other: Tensor) -> Tensor:
    """``input`` where ``keeps_input(input, other)`` holds or ``other`` is NaN, else ``other``:
    a tie (and two NaNs) takes ``input``, whose gradient follows the choice, as PyTorch's."""
    ew.require_tensors(fn, input, other)
    if input.dtype.is_complex or other.dtype.is_complex:
        raise RuntimeError(f"{fn} not implemented for complex tensors; compare .real or .abs()")
    if ew.inference_alone(input, other):  # (PyTorch's autograd skips its kernel)
        with no_grad():
            return _nan_ignoring(fn, grad_fn, keeps_input, input, other)
    if is_grad_enabled():  # (PyTorch's node saves both)
        ew.refuse_saved_inference(fn, (input, other), (input, other))
        if SAVED_TENSORS_HOOKS and (input.requires_grad or other.requires_grad):
            out = _NanIgnoring.apply(keeps_input, input, other)
            return apply.labelled(out, grad_fn, input, other)
    out = ew.where(_input_kept(keeps_input, input, other), input, other)
    return apply.labelled(out, grad_fn, input, other)


def _input_kept(keeps_input: Any, input: Tensor, other: Tensor) -> Tensor:
    """Where fmax/fmin take ``input``: ``keeps_input`` holds or ``other`` is NaN."""
    chosen = keeps_input(input, other)
    if other.dtype.is_floating_point:
        chosen = chosen | ew.isnan(other)
    return chosen


class _NanIgnoring(Function):
    """fmax/fmin inside ``saved_tensors_hooks``: one node that packs ``other`` then
    ``input``, as PyTorch's FmaxBackward0/FminBackward0, and recomputes the choice from
    them (where's node would pack the bool choice, which an unpack hook may turn into
    numbers); the no-hook path is the ``where`` composition."""

    @staticmethod
    def forward(ctx: Any, keeps_input: Any, input: Tensor, other: Tensor) -> Tensor:
        ctx.keeps_input = keeps_input
        ctx.save_for_backward(other, input)
        return ew.where(_input_kept(keeps_input, input, other), input, other)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        other, input = ctx.saved_tensors
        chosen = _input_kept(ctx.keeps_input, input, other)
        return None, ew.where(chosen, grad, 0.0), ew.where(chosen, 0.0, grad)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 below zero, 1 above, ``values`` at zero."""
    if not isinstance(values, Tensor):
        raise TypeError(
            f"heaviside(): argument 'values' (position 2) must be Tensor, not "
            f"{type(values).__name__}"
        )
    if input.dtype is not values.dtype:
        raise RuntimeError(
            "heaviside is not yet implemented for tensors with different dtypes "
            f"({input.dtype.name} and {values.dtype.name}); convert values with "
            f".to({input.dtype})"
        )
    if input.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if ew.inference_alone(input, values):  # (PyTorch's autograd skips its kernel)
        with no_grad():
            return heaviside(input, values)
    step = ew.cast(ew.gt(input, 0), _result_dtype([input, values]))
    return ew.where(ew.eq(input, 0), values, step)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    return apply.labelled(rd.norm(input - other, p), "DistBackward0", input, other)


def renorm(
    input: Tensor,
    p: float,
    dim: int = movement.REQUIRED,
    maxnorm: float = movement.REQUIRED,
    **aliases: Any,
) -> Tensor:
    """Each slice along ``dim`` scaled down to norm ``maxnorm`` where its norm exceeds it."""
    if aliases or dim is movement.REQUIRED or maxnorm is movement.REQUIRED:
        dim = movement.dim_alias("renorm", aliases, dim, maxnorm=maxnorm)
    # As PyTorch: the norm and maxnorm first (NaN refused too: the comparisons are negated),
    # then the rank and dim.
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    if input.ndim < 2:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions"
        )
    dim = _axis(dim, input.ndim, "renorm")
    others = tuple(d for d in range(input.ndim) if d != dim)
    # As PyTorch: a half input's norms and factors in float32, the factors rounded to its
    # dtype before the product; maxnorm / (norm + eps) is one division.
    wide = dtypes.float32 if input.dtype in (dtypes.float16, dtypes.bfloat16) else None
    norms = rd.norm(input, p, others, keepdim=True, dtype=wide)
    factor = ew.where(ew.gt(norms, maxnorm), ew.div(maxnorm, ew.add(norms, 1e-7)), 1.0)
    return apply.labelled(ew.mul(input, ew.cast(factor, input.dtype)), "RenormBackward0", input)


def cov(
    input: Tensor, *, correction: int = 1, fweights: Any = None, aweights: Any = None
) -> Tensor:
    """Covariance of the rows (variables) of a 1- or 2-d tensor over its columns
    (observations), weighted by integer frequencies and float weights; 0-d for one variable."""
    if input.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.ndim} dimensions"
        )
    if input.dtype is dtypes.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input; convert it first")
    x = movement.reshape(input, (1, -1)) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _cov_weights("fweights", fweights, n, fweights.dtype.kind in "iu", "integral")
    if aweights is not None:
        aw = _cov_weights(
            "aweights", aweights, n, aweights.dtype.is_floating_point, "floating point"
        )
        w = aw if w is None else w * aw
    w_sum = n if w is None else rd.sum(w)
    if w is not None and not bool(ew.ne(w_sum, 0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    centered = x - rd.sum(x if w is None else x * w, 1, keepdim=True) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * rd.sum(w * aweights) / w_sum
    else:
        norm = w_sum - correction
    if not bool(norm > 0):  # PyTorch warns and divides by zero (inf and NaN)
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            UserWarning,
            stacklevel=2,
        )
        norm = 0
    weighted = centered if w is None else centered * w
    c = la.mm(centered, conj_physical(views.transpose(weighted, 0, 1))) / norm
    return c.squeeze()


def _cov_weights(name: str, w: Tensor, n: int, dtype_ok: bool, kind: str) -> Tensor:
    if w.ndim > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{w.ndim} dimensions"
        )
    if not dtype_ok:
        raise RuntimeError(
            f"cov(): expected {name} to have {kind} dtype but got {name} with {w.dtype.name} dtype"
        )
    if w.numel() != n:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the "
            f"input but got {w.numel()} != {n}"
        )
    if n and not bool(ew.ge(rd.amin(w), 0)):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of a 1- or 2-d tensor (clipped to
    [-1, 1], each part for complex input)."""
    if input.ndim > 2:
        raise RuntimeError(
            "corrcoef(): expected input to have two or fewer dimensions but got an input with "
            f"{input.ndim} dimensions"
        )
    c = cov(input)
    if c.ndim == 0:  # NaN for a covariance of 0, inf or NaN; else 1
        return c / c
    d = ew.sqrt(real(structure.diagonal(c)))
    c = c / movement.reshape(d, (-1, 1)) / movement.reshape(d, (1, -1))
    if c.dtype.is_complex:
        return make_complex(ew.clamp(real(c), -1, 1), ew.clamp(imag(c), -1, 1))
    return ew.clamp(c, -1, 1)


#: Functions that are Tensor methods too, under the same name.
METHODS = (
    "greater greater_equal less less_equal not_equal absolute negative multiply positive fix "
    "ger swapaxes swapdims moveaxis ravel select take fliplr flipud rot90 tensor_split hsplit "
    "vsplit dsplit split_with_sizes addmm addmv addr baddbmm addbmm inner vdot diagflat equal "
    "is_nonzero is_signed is_neg isposinf isneginf isreal fmax fmin heaviside dist "
    "renorm cov corrcoef mv sum_to_size get_device"
).split()

#: Ops whose in-place form ``x.op_(...)`` (and ``tw.op_(x, ...)`` where PyTorch has it) is
#: ``x = op(x, ...)`` written into ``x``.
INPLACE = (
    "abs absolute exp exp2 log log2 log10 log1p expm1 sin cos tan tanh sigmoid relu erf floor "
    "ceil round trunc fix frac reciprocal rsqrt sqrt square sign sgn neg negative clamp_min "
    "clamp_max nan_to_num ge gt le lt ne eq greater greater_equal less less_equal not_equal "
    "logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor "
    "bitwise_not multiply divide subtract true_divide addmm addmv addr baddbmm addbmm renorm "
    "heaviside cumsum cumprod hypot scatter_reduce index_reduce conj_physical"
).split()

#: The in-place forms PyTorch also has as functions (``torch.relu_(x)`` is ``x.relu_()``).
FUNCTIONS_INPLACE = (
    "abs_ addmv_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ detach_ erf_ exp_ "
    "expm1_ fill_ fix_ floor_ frac_ index_put_ log10_ log1p_ log2_ log_ nan_to_num_ neg_ "
    "negative_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sqrt_ square_ tan_ tanh_ trunc_ "
    "zero_"
).split()


def inplace_function(name: str) -> Any:
    """``tw.name(x, ...)``: the in-place method ``x.name(...)``."""

    def function(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    return function
