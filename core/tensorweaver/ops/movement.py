"""Shape and movement ops: reshape, permute, expand, pad, slice, flip, cat and their kin."""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Iterable, Sequence
from numbers import Integral
from typing import Any

from tensorweaver.contract import dtypes
from tensorweaver.memory_formats import (
    C_TESTS,
    c_test,
    channels_last_order,
    laid_out,
    suggested_format,
)
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.apply import apply, cast_native, check_backends, labelled
from tensorweaver.ops.rank import check_ndim, max_ndim
from tensorweaver.ops.several_outputs import cut_pieces
from tensorweaver.promotion import promote_types
from tensorweaver.tensor import Tensor, _axis, index_argument


def dim_list(dims: Any) -> tuple:
    """A ``dim`` argument that is one dim or a sequence of them, as a tuple."""
    return tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)


def _sizes(args: tuple, op: str = "size") -> tuple:
    """``f(2, 3)`` and ``f((2, 3))`` both mean the sizes (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    for a in args:  # the usual case, plain ints, without a call per size
        if type(a) is not int:
            break
    else:
        return tuple(args)
    if op == "expand":  # PyTorch's expand, alone, reads a bool size as an int
        args = [int(a) if isinstance(a, bool) else a for a in args]
    return tuple(index_argument(a, op, "size") for a in args)


def reshape(input: Tensor, *sizes: Any, shape: Any = None) -> Tensor:
    """``input`` in ``shape``, given as ``f(2, 3)``, ``f((2, 3))`` or ``f(shape=(2, 3))``."""
    if shape is None:
        shape = _sizes(sizes, "reshape")
    elif sizes:
        raise TypeError("reshape() got multiple values for argument 'shape'")
    else:
        shape = _sizes((shape,), "reshape")
    old = input._shape
    if shape == old:
        return input
    numel = math.prod(old)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if shape.count(-1) > 1 or known == 0 or numel % known:
            raise RuntimeError(f"reshape: shape {list(shape)} is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif math.prod(shape) != numel:
        raise RuntimeError(
            f"reshape: shape {list(shape)} is invalid for input of shape {list(old)} "
            f"({numel} elements)"
        )
    return _reshape(input, shape, "reshape")


def _reshape(x: Tensor, shape: tuple, op: str) -> Tensor:
    """``x`` in a valid ``shape`` of its size; ``op`` names the caller in a rank error."""
    old = x._shape
    if shape == old:
        return x
    if len(shape) > len(old):  # only a growing rank can exceed the backend's limit
        check_ndim(op, shape, x.backend)
    return apply("reshape", x.backend.reshape(x.native, shape), x.dtype, (x,))


view = reshape


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if x.ndim == 0:
        return reshape(x, (1,))
    s, e = _axis(start_dim, x.ndim, "flatten"), _axis(end_dim, x.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten: start_dim cannot come after end_dim")
    return reshape(x, x.shape[:s] + (math.prod(x.shape[s : e + 1]),) + x.shape[e + 1 :])


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = _axis(dim, x.ndim, "unflatten")
    sizes = tuple(sizes)
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        sizes = tuple(x.shape[d] // known if s == -1 else s for s in sizes)
    if math.prod(sizes) != x.shape[d]:
        raise RuntimeError(f"unflatten: sizes {list(sizes)} do not multiply to {x.shape[d]}")
    return _reshape(x, x.shape[:d] + sizes + x.shape[d + 1 :], "unflatten")


class _Required:
    """The default of an argument a caller must give (``dim``, unless as ``axis=``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


def dim_alias(
    op: str, aliases: dict[str, Any], dim: Any, default: Any = REQUIRED, **given: Any
) -> Any:
    """``dim`` of a call of ``op`` that may spell it ``axis=`` (in ``aliases``), as PyTorch's
    argument parser takes it for every ``dim`` (ops/reduce.py ``numpy_names``' rules);
    ``default``: ``dim``'s default, :data:`REQUIRED` where it has none. PyTorch's TypeError
    where ``dim`` or one of ``given`` (the arguments after it) is still :data:`REQUIRED`.
    Called only for an alias or an argument missing: the hot path pays the test alone."""
    from tensorweaver.ops.reduce import numpy_names  # (reduce imports this module)

    if aliases:
        dim = numpy_names(op, aliases, dim, None, (default,))[0]
    for name, value in {"dim": dim, **given}.items():
        if value is REQUIRED:
            raise TypeError(f'{op}() missing 1 required positional arguments: "{name}"')
    return dim


def squeeze(x: Tensor, dim: Any = None, **aliases: Any) -> Tensor:
    if aliases:
        dim = dim_alias("squeeze", aliases, dim, None)
    if dim is None:
        return labelled(reshape(x, tuple(n for n in x.shape if n != 1)), "SqueezeBackward0", x)
    given = dim_list(dim)
    dims = {_axis(d, x.ndim, "squeeze") for d in given}
    if len(dims) != len(given):
        _repeated_dim("squeeze", given, x.ndim)
    if x.ndim == 0:
        return x
    out = reshape(x, tuple(n for i, n in enumerate(x.shape) if not (i in dims and n == 1)))
    if out is not x and 1 in out._shape and getattr(x.backend, "layout", None):
        out = _keeping_strides(x, dims, out)
    return labelled(out, squeeze_name(dim), x)


def _keeping_strides(x: Tensor, dims: set, out: Tensor) -> Tensor:
    """``out`` (``x`` less its size-1 axes among ``dims``, by a reshape) with each kept axis's
    stride, as PyTorch's squeeze: a reshape recomputes a kept size-1 axis's stride, as the
    span (stride × size) of the axis after it, so such an axis is made before the axis whose
    span its stride is (a dense layout's); ``out`` as it is where none is."""
    kept = [i for i, n in enumerate(x._shape) if not (i in dims and n == 1)]
    strides = x.stride()
    wanted = tuple(strides[i] for i in kept)
    if out.stride() == wanted:
        return out
    shape, order, ones = x._shape, [], [i for i in kept if x._shape[i] == 1]
    for j in (i for i in kept if shape[i] != 1):
        order += [i for i in ones if i not in order and strides[i] == strides[j] * shape[j]]
        order.append(j)
    if len(order) < len(kept):
        return out
    made = reshape(x, tuple(shape[i] for i in order))
    return permuted(made, tuple(order.index(i) for i in kept))


def squeeze_name(dim: Any) -> str:
    """PyTorch's node name for ``squeeze(dim)``: by whether ``dim`` is none, one or several."""
    if dim is None:
        return "SqueezeBackward0"
    return "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"


def _repeated_dim(op: str, dims: tuple, ndim: int) -> None:
    """PyTorch's error for a list of dims that names one twice (``-1`` and ``ndim - 1`` too)."""
    seen = [_axis(d, ndim, op) for d in dims]
    twice = next(d for i, d in enumerate(seen) if d in seen[:i])
    raise RuntimeError(
        f"{op}(): dim {twice} appears multiple times in the list of dims {list(dims)}; name "
        "each dimension once"
    )


#: The dim each recorded unsqueeze node was given, as PyTorch's UnsqueezeBackward0 saves it
#: (read by autograd/grad_fn.py as ``_saved_dim``), keyed by a weak reference to the node
#: that drops its entry when the node goes (cheaper per op than a WeakKeyDictionary).
UNSQUEEZE_DIMS: dict[weakref.ref, Any] = {}


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    d = _axis(dim, x.ndim + 1, "unsqueeze")
    out = _reshape(x, x.shape[:d] + (1,) + x.shape[d:], "unsqueeze")
    out = labelled(out, "UnsqueezeBackward0", x)
    node = out._node
    if node is not None and node.label == "UnsqueezeBackward0":
        UNSQUEEZE_DIMS[weakref.ref(node, UNSQUEEZE_DIMS.pop)] = dim
    return out


#: ``permute``'s checked permutations by (rank, dims as given): a model permutes with a few
#: fixed dims, each check once. The dims are plain ints (``_sizes``), so the key is exact.
_PERMUTATIONS: dict[tuple, tuple[int, ...]] = {}


def permutation(x: Tensor, dims: tuple) -> tuple[int, ...]:
    """``permute``'s ``dims`` (given as ``f(1, 0)`` or ``f((1, 0))``) as a permutation of
    ``x``'s axes, each non-negative; an error if it is not one."""
    ndim = len(x._shape)
    given = _sizes(dims, "permute")
    key = (ndim, given)
    perm = _PERMUTATIONS.get(key)
    if perm is not None:
        return perm
    top = ndim if ndim else 1  # a 0-d tensor takes dim 0 or -1, as PyTorch's wrap does
    perm = tuple([d if 0 <= d < top else _axis(d, ndim, "permute") for d in given])
    if len(perm) != ndim or len(set(perm)) != ndim:  # each in range: then a permutation
        raise RuntimeError(
            f"permute: dims {list(given)} are not a permutation of the "
            f"{ndim} dimensions of a tensor of shape {x.shape}"
        )
    if len(_PERMUTATIONS) >= 1024:  # (bounded: dims that vary without end re-check)
        _PERMUTATIONS.clear()
    _PERMUTATIONS[key] = perm
    return perm


def permute(x: Tensor, *dims: Any) -> Tensor:
    return permuted(x, permutation(x, dims))


def permuted(x: Tensor, perm: tuple[int, ...]) -> Tensor:
    """``x`` with its axes in the order ``perm`` (a valid permutation of them)."""
    if perm == tuple(range(len(perm))):
        return x
    return apply("permute", x.backend.permute(x.native, perm), x.dtype, (x,), perm)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    ndim = len(x._shape)
    if ndim == 0:
        return x
    perm = _swaps(ndim, dim0, dim1) if dim0.__class__ is int and dim1.__class__ is int else None
    if perm is None:  # (not plain ints: checked and converted here)
        a, b = _axis(dim0, ndim, "transpose"), _axis(dim1, ndim, "transpose")
        perm = _swap(ndim, a, b)
    if not perm:
        return x
    out = apply("permute", x.backend.permute(x.native, perm), x.dtype, (x,), perm)
    return labelled(out, "TransposeBackward0", x)


@functools.lru_cache(maxsize=256)
def _swaps(ndim: int, dim0: int, dim1: int) -> tuple[int, ...]:
    """``transpose``'s permutation of ``ndim`` axes for int dims ``dim0``, ``dim1`` (any in
    range), once per call site's dims: () where they name one axis; else its IndexError."""
    return _swap(ndim, _axis(dim0, ndim, "transpose"), _axis(dim1, ndim, "transpose"))


def _swap(ndim: int, a: int, b: int) -> tuple[int, ...]:
    """The permutation of ``ndim`` axes that swaps axes ``a`` and ``b`` (() where a == b)."""
    if a == b:
        return ()
    perm = list(range(ndim))
    perm[a], perm[b] = b, a
    return tuple(perm)  # a permutation by construction: permute's checks are not needed


def t(x: Tensor) -> Tensor:
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, got {x.ndim}; use .mT")
    return labelled(transpose(x, 0, 1), "TBackward0", x) if x.ndim == 2 else x


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """Broadcast ``x`` to ``sizes`` (-1 keeps a dimension); the result may share memory."""
    sizes = _sizes(sizes, "expand")
    old = x._shape
    lead = len(sizes) - len(old)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes ({len(sizes)}) must be at least the number of "
            f"dimensions ({x.ndim}) of the tensor of shape {x.shape}"
        )
    shape = sizes
    if -1 in sizes:  # (ints alone: _sizes)
        shape = tuple([old[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes)])
    if shape and min(shape) < 0:  # -1 keeps only an existing dimension; other negatives none
        raise RuntimeError(
            f"expand: size {min(shape)} is not allowed (target sizes {list(sizes)}, tensor "
            f"shape {list(x.shape)}); -1 keeps an existing dimension, a new leading one needs "
            "its size"
        )
    for i, n in enumerate(old):
        if n != 1 and n != shape[i + lead]:
            raise RuntimeError(
                f"expand: the expanded size {shape[i + lead]} must match the existing size {n} "
                f"at non-singleton dimension {i}; target sizes {list(sizes)}, tensor shape "
                f"{list(x.shape)}"
            )
    if shape == old:
        return x
    native = x.native
    backend = x.backend
    if lead:
        check_ndim("expand", shape, backend)
        native = backend.reshape(native, (1,) * lead + old)
    return apply("expand", backend.expand(native, shape), x.dtype, (x,))


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return expand(x, other.shape)


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    return expand(x, shape)


def repeat(x: Tensor, *repeats: Any) -> Tensor:
    reps = _sizes(repeats, "repeat")
    if len(reps) < x.ndim:
        raise RuntimeError(
            f"repeat: the number of repeats ({len(reps)}) cannot be smaller than the number "
            f"of dimensions ({x.ndim})"
        )
    if min(reps, default=0) < 0:
        raise RuntimeError(f"repeat: repeats {list(reps)} must be non-negative")
    return labelled(_tile(x, (1,) * (len(reps) - x.ndim) + x.shape, reps), "RepeatBackward0", x)


def _tile(x: Tensor, shape: tuple, reps: tuple) -> Tensor:
    """``x``, of ``shape`` but for leading 1s, repeated ``reps[i]`` times along dimension i.

    Each repeated dimension becomes two: the copies, then the block of the input from that
    dimension up to the next repeated one, all merged (one more in front holds the dimensions
    before the first). The copies are an ``expand`` of a size-1 dimension there. Where that
    needs more dimensions than the backend's ``max_ndim``, the repeats are done in turns.
    """
    axes = [i for i, r in enumerate(reps) if r != 1]
    if not axes:  # a new tensor, never x itself (PyTorch's repeat copies: writes stay apart)
        return apply("identity", _reshape(x, shape, "repeat")._unshared_native(), x.dtype, (x,))
    limit = max_ndim(x.backend)
    most = len(axes) if limit is None else max(1, (limit - (axes[0] > 0)) // 2)
    if len(axes) > most:  # too many dimensions at once: the first repeats, then the rest
        cut = axes[most]
        first = _tile(x, shape, reps[:cut] + (1,) * (len(reps) - cut))
        return _tile(first, first.shape, (1,) * cut + reps[cut:])
    bounds = (*axes, len(shape))
    blocks = [math.prod(shape[a:b]) for a, b in zip(bounds, bounds[1:])]
    lead = (math.prod(shape[: axes[0]]),) if axes[0] else ()
    source = lead + tuple(v for n in blocks for v in (1, n))
    target = lead + tuple(v for a, n in zip(axes, blocks) for v in (reps[a], n))
    out = expand(_reshape(x, source, "repeat"), target)
    return _reshape(out, tuple(r * n for r, n in zip(reps, shape)), "repeat")


def pad_dims(x: Tensor, widths: Sequence[tuple[int, int]], value: Any = 0) -> Tensor:
    """Pad each dimension i by ``widths[i] = (before, after)``; negative widths crop."""
    widths = [tuple(w) for w in widths]
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        crop = [(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(widths, x.shape)]
        x = slice_dims(x, [c[0] for c in crop], [c[1] for c in crop], [1] * x.ndim)
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    if not any(lo or hi for lo, hi in widths):
        return x
    native = x.backend.pad(x.native, widths, value)
    return apply("pad", native, x.dtype, (x,), tuple(widths))


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: Any = None) -> Tensor:
    """PyTorch's ``F.pad``: ``pad`` lists (before, after) pairs from the last dimension back."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not supported; use 'constant'")
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(
            f"pad: {list(pad)} must hold (before, after) pairs for at most {x.ndim} dimensions"
        )
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return pad_dims(x, widths, 0 if value is None else value)


def slice_dims(
    x: Tensor, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int]
) -> Tensor:
    """``x[start:stop:step]`` per dimension, bounds already clipped to the shape, steps >= 1."""
    starts, steps = tuple(starts), tuple(steps)
    kept = []  # the stops, none before its start
    full = True  # every axis whole: nothing to slice
    for start, stop, step, n in zip(starts, stops, steps, x.shape):
        if stop < start:
            stop = start
        kept.append(stop)
        if full and (start or stop != n or step != 1):
            full = False
    if full:
        return x
    stops = tuple(kept)
    native = x.backend.slice(x.native, starts, stops, steps)
    return apply("slice", native, x.dtype, (x,), (starts, stops, steps))


def narrow_start(x: Tensor, start: Any) -> int:
    """``narrow``'s start as an int (PyTorch takes a 0-d integer tensor too)."""
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(start, bool):  # PyTorch's parser takes no bool for an int
        raise TypeError("narrow(): argument 'start' must be int or a 0-d integer Tensor, not bool")
    if isinstance(start, Tensor):
        if start.ndim != 0 or start.dtype.kind not in "ui":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        return int(start.item())
    return start


def narrow(x: Tensor, dim: int, start: Any, length: int) -> Tensor:
    if type(start) is not int or not x._shape:  # (an int needs no reading: views.narrow's)
        start = narrow_start(x, start)
    d = _axis(dim, x.ndim, "narrow")
    n = x.shape[d]
    # PyTorch's split of error types: a start outside the axis is an index error, a
    # length that does not fit is a runtime error.
    if not -n <= start <= n:
        raise IndexError(
            f"narrow(): start out of range (expected to be in range of [{-n}, {n}], but got "
            f"{start}) for dimension {d} of shape {list(x.shape)}"
        )
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative, got {length} (start {start})")
    start = start + n if start < 0 else start
    if start + length > n:
        raise RuntimeError(
            f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({n}) of "
            f"dimension {d}"
        )
    return _slice_one(x, d, start, start + length)


def _slice_one(x: Tensor, d: int, start: int, stop: int, step: int = 1) -> Tensor:
    starts = [0] * x.ndim
    stops = list(x.shape)
    steps = [1] * x.ndim
    starts[d], stops[d], steps[d] = start, stop, step
    return slice_dims(x, starts, stops, steps)


def flip(input: Tensor, dims: Any) -> Tensor:
    given = dim_list(dims)
    axes = tuple(sorted({_axis(d, input.ndim, "flip") for d in given}))
    if len(axes) != len(given):
        _repeated_dim("flip", given, input.ndim)
    if not axes or input.ndim == 0:
        return labelled(_unchanged_copy(input), "FlipBackward0", input)
    return apply("flip", input.backend.flip(input.native, axes), input.dtype, (input,), axes)


def _unchanged_copy(x: Tensor) -> Tensor:
    """A new tensor of ``x``'s values, for an op that copies but changes nothing (a flip of
    no dims, a roll by whole turns): PyTorch's result is a new tensor all the same, so an
    in-place change of it must not reach ``x``."""
    return apply("identity", x._unshared_native(), x.dtype, (x,))


class _FirstDim:
    """``dim``'s default 0 for ``cat`` and ``stack``, told apart from a 0 given, so that
    ``cat(ts, 0, axis=1)`` is PyTorch's TypeError (``dim`` given twice)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "0"


_FIRST_DIM: Any = _FirstDim()


def _numpy_dim(op: str, aliases: dict[str, Any], dim: Any) -> Any:
    """``dim`` spelled NumPy's way (``axis=``), as PyTorch's parser takes it."""
    from tensorweaver.ops.reduce import numpy_names  # (reduce imports this module)

    return numpy_names(op, aliases, dim, None, (_FIRST_DIM,))[0]


def first_dim(op: str, aliases: dict[str, Any], dim: Any) -> Any:
    """``dim`` of ``op`` (default :data:`_FIRST_DIM`, read as 0) or its spelling ``axis=``
    in ``aliases``: both given (a 0 too) is PyTorch's TypeError."""
    if aliases:
        dim = _numpy_dim(op, aliases, dim)
    return 0 if dim is _FIRST_DIM else dim


def split_sizes(op: str, sizes: Any) -> list:
    """``op``'s ``split_sizes`` as PyTorch's parser takes them: a list or a tuple (a Size
    too), never an array or a tensor of sizes (each size is checked where it is cut)."""
    if not isinstance(sizes, (list, tuple)):
        raise TypeError(
            f"{op}(): argument 'split_sizes' must be tuple of ints, not {type(sizes).__name__}"
        )
    return list(sizes)


def cat(tensors: Sequence[Tensor], dim: int = _FIRST_DIM, **aliases: Any) -> Tensor:
    if aliases:
        dim = _numpy_dim("cat", aliases, dim)
    if dim is _FIRST_DIM:
        dim = 0
    if isinstance(tensors, Tensor):
        raise TypeError(
            "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"
        )
    tensors = [t for t in tensors]
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")  # torch's class
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"cat(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
            )
    # PyTorch skips 1-d empty tensors' shapes, a legacy convenience, but not their dtypes
    # or their place in the graph: they join as empty slices of the others' shape.
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors
    ref = kept[0]
    if ref.ndim == 0:
        raise RuntimeError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    axis = _axis(dim, ref.ndim, "cat")
    if len(kept) < len(tensors):
        empty = ref.shape[:axis] + (0,) + ref.shape[axis + 1 :]
        kept = [_reshape(t, empty, "cat") if t.shape == (0,) else t for t in tensors]
    backend = check_backends("cat", tuple(kept))
    dtype = kept[0].dtype
    for t in kept[1:]:
        dtype = promote_types(dtype, t.dtype)
        if t.ndim != ref.ndim or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, ref.shape)) if i != axis
        ):
            raise RuntimeError(
                f"cat: sizes of tensors must match except in dimension {axis}; got shapes "
                f"{', '.join(str(list(u.shape)) for u in tensors)}"
            )
    natives = [cast_native(t, dtype) for t in kept]
    sizes = tuple(t.shape[axis] for t in kept)
    native = backend.cat(natives, axis)
    if ref.ndim > 3 and not _c_ordered(native):
        if _common_format((tuple(t.shape), t.stride()) for t in kept) is None:
            native = laid_out(backend, native, tuple(range(ref.ndim)))  # (_common_format)
    return apply("cat", native, dtype, tuple(kept), (axis, sizes))


def _c_ordered(native: Any) -> bool:
    """Whether ``native`` is laid out in C order (its array type's test, cheaper than
    ``Tensor.is_contiguous``; True where the backend cannot tell)."""
    kind = type(native)
    test = C_TESTS[kind] if kind in C_TESTS else c_test(kind)
    return test is None or bool(test(native))


def _common_format(layouts: Iterable[tuple[tuple, tuple]]) -> str | None:
    """The channels-last format that every (shape, strides) of ``layouts`` suggests
    (PyTorch's ``suggest_memory_format``), else None: PyTorch's ``cat`` then gives C order,
    where a backend's may keep a channels-last-like order for inputs that only look so to it
    (a 5-d unsqueezed channels-last tensor: size-1 axes' strides)."""
    formats = {suggested_format(shape, strides) for shape, strides in layouts}
    name = formats.pop() if len(formats) == 1 else "contiguous_format"
    return None if name == "contiguous_format" else name


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = _FIRST_DIM, **aliases: Any) -> Tensor:
    if aliases:
        dim = _numpy_dim("stack", aliases, dim)
    if dim is _FIRST_DIM:
        dim = 0
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack: expected a non-empty list of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(
            f"stack: expects each tensor to be equal size, got "
            f"{', '.join(str(list(t.shape)) for t in tensors)}"
        )
    d = _axis(dim, tensors[0].ndim + 1, "stack")
    shape = (*tensors[0].shape[:d], len(tensors), *tensors[0].shape[d:])
    check_ndim("stack", shape, tensors[0].backend)
    if d == tensors[0].ndim:  # (no dimension to split: joined along a new last one)
        y = cat([unsqueeze(t, d) for t in tensors], d)
        if y.ndim > 3 and not _c_ordered(y.native):
            # (as cat does, from PyTorch's strides of the unsqueezed inputs: this module's
            # unsqueeze keeps its array's stride for the new axis, which may differ)
            if _common_format(((*t.shape, 1), (*t.stride(), 1)) for t in tensors) is None:
                y = contiguous(y)
        return labelled(y, "StackBackward0", *tensors)
    # PyTorch's: joined along dim, which is then split in two, so that the result keeps the
    # layout cat gives (a channels-last input's, where every input is)
    return labelled(_reshape(cat(tensors, d), shape, "stack"), "StackBackward0", *tensors)


def _split_axis(x: Tensor, dim: int, op: str) -> int:
    if x.ndim == 0:
        raise RuntimeError(f"{op}: expects at least a 1-dimensional tensor, got a 0-d one")
    return _axis(dim, x.ndim, op)


def split(x: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    size = split_size_or_sections
    if type(size) is not int:
        if isinstance(size, (list, tuple)):  # (a Size too: PyTorch takes no other sequence)
            return _split_with_sizes(x, dim, size)
        size = _split_size(size)
    return _split_evenly(x, size, _split_axis(x, dim, "split"))


def _split_evenly(x: Tensor, size: int, d: int) -> tuple[Tensor, ...]:
    """``x`` cut along axis ``d`` (checked) into pieces of ``size``, the last one shorter."""
    n = x.shape[d]
    if size < 0 or (size == 0 and n):
        raise RuntimeError(
            f"split: split_size must be positive (or 0 on an empty dimension), got {size} "
            f"for dimension {d} of size {n}"
        )
    # PyTorch's rule: an empty dimension gives one empty piece.
    bounds = [(s, min(s + size, n)) for s in range(0, n, size)] if n else [(0, 0)]
    return _cut(x, d, bounds, False)


def _split_size(value: Any) -> int:
    """split's ``split_size`` that is neither an int nor a list of sizes, as PyTorch's
    ``Tensor.split`` takes it: a tensor of one element through ``int()`` (a float or bool one
    too) or an int subclass; anything else (a bool, a NumPy integer or array) a TypeError."""
    if isinstance(value, Tensor) and value.numel() == 1:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise TypeError(
        "split(): argument 'split_size_or_sections' must be an int or a list or tuple of ints, "
        f"not {type(value).__name__}"
    )


def _split_with_sizes(x: Tensor, dim: int, sections: Sequence) -> tuple[Tensor, ...]:
    # (ints, as PyTorch's parser takes them: a NumPy integer or an integer tensor of one
    # element too, before the dim is checked)
    sections = [k if type(k) is int else _section(k) for k in sections]
    d = _split_axis(x, dim, "split")
    n = x.shape[d]
    if any(k < 0 for k in sections) or sum(sections) != n:
        raise RuntimeError(
            f"split: sections {sections} must be non-negative and sum to the size {n} of "
            f"dimension {d}, got the sum {sum(sections)}"
        )
    bounds, start = [], 0
    for k in sections:
        bounds.append((start, start + k))
        start += k
    return _cut(x, d, bounds, True)


def _section(value: Any) -> int:
    """One of split's sizes that is not an int, as :func:`index_argument` takes it; but a
    bool tensor of one element is a RuntimeError, as PyTorch's (its parser takes the tensor,
    the size's conversion then refuses a bool)."""
    if isinstance(value, Tensor) and value.dtype is dtypes.bool_ and value.numel() == 1:
        raise RuntimeError(
            f"split(): split_sizes must be integers, got a bool tensor ({value.item()}); pass "
            "an int"
        )
    return index_argument(value, "split", "split_sizes")


def _cut(x: Tensor, d: int, bounds: list, sized: bool) -> tuple[Tensor, ...]:
    """``x`` cut along axis ``d`` at ``bounds`` (start, stop), named as PyTorch's split
    (``sized``: split_with_sizes): several pieces share one node (ops/several_outputs.py);
    one piece is a ``slice`` as ``_slice_one`` makes it (all of ``x`` too: a view named as
    the split, as PyTorch's, not ``x`` itself). One loop
    over the pieces, with the shared work done once: chunk and split run on every step of
    a model (an LSTM's gates, attention's q, k, v)."""
    label = "SplitWithSizesBackward0" if sized else "SplitBackward0"
    backend, native, dtype = x.backend, x.native, x.dtype
    split = getattr(backend, "split", None) if len(bounds) > 1 else None
    if split is not None:  # several pieces in one call, under one node
        natives = split(native, d, tuple([stop - start for start, stop in bounds]))
        return cut_pieces(x, natives, d, False, label)
    cuts, steps = _cuts_of(x._shape, d, tuple(bounds))
    if len(cuts) > 1:  # several pieces: one node for them all
        cut = backend.slice
        natives = [cut(native, starts, stops, steps) for starts, stops in cuts]
        return cut_pieces(x, natives, d, False, label)
    pieces = []
    for starts, stops in cuts:
        cut = (starts, stops, steps)
        piece = apply("slice", backend.slice(native, *cut), dtype, (x,), cut)
        if piece._node is not None:
            piece._node.label = label
        pieces.append(piece)
    return tuple(pieces)


#: Cuts (split, chunk, unbind) of at most so many pieces are kept per shape (an LSTM's
#: gates, attention's q, k, v); larger ones are made per call: a kept cut holds a record
#: per piece, and a program cutting sequences of varying length would keep them all.
FEW_PIECES = 16


def _cuts_of(shape: tuple, d: int, bounds: tuple) -> tuple:
    """:func:`_cuts`, kept only for few pieces (:data:`FEW_PIECES`)."""
    return (_cuts if len(bounds) <= FEW_PIECES else _cuts.__wrapped__)(shape, d, bounds)


@functools.lru_cache(maxsize=128)
def _cuts(shape: tuple, d: int, bounds: tuple) -> tuple:
    """The slices of a ``shape`` along axis ``d`` at ``bounds`` (``(start, stop)`` pairs):
    each one's ``(starts, stops)``, and their steps; the same for every call on that shape
    (split, chunk and unbind cut the same shapes on every step of a model)."""
    starts, stops = [0] * len(shape), list(shape)
    cuts = []
    for start, stop in bounds:
        starts[d], stops[d] = start, stop
        cuts.append((tuple(starts), tuple(stops)))
    return tuple(cuts), (1,) * len(shape)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if type(chunks) is not int:
        chunks = chunk_count(chunks)
    d = _split_axis(x, dim, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[d]
    if not n:  # PyTorch's rule: an empty dimension gives ``chunks`` empty pieces
        return _split_with_sizes(x, d, [0] * chunks)
    return _split_evenly(x, -(-n // chunks), d)


def chunk_count(value: Any, op: str = "chunk") -> int:
    """``op``'s ``chunks`` that is not an int, as PyTorch's parser takes it: a NumPy integer
    or a 0-d integer tensor; anything else (a bool, a float, an array) a TypeError."""
    if isinstance(value, Tensor) and not value.ndim or isinstance(value, Integral):
        return index_argument(value, op, "chunks")
    raise TypeError(f"{op}(): argument 'chunks' must be int, not {type(value).__name__}")


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """``x``'s slices along ``dim``, that axis dropped, in one loop with the shared work
    done once, recorded as one node (an LSTM unbinds its gate inputs and an attention layer
    its q, k, v on every step)."""
    shape = x._shape
    d = _axis(dim, len(shape), "unbind")
    backend, native = x.backend, x.native
    n = shape[d]
    if n == 1:  # the slice would be all of x
        kept = shape[:d] + shape[d + 1 :]
        return (apply("reshape", backend.reshape(native, kept), x.dtype, (x,)),)
    select = getattr(backend, "select", None)
    if select is not None:
        natives = [select(native, d, i) for i in range(n)]
    else:
        cuts, steps, kept = (unbind_cuts if n <= FEW_PIECES else unbind_cuts.__wrapped__)(shape, d)
        cut, reshape = backend.slice, backend.reshape
        natives = [reshape(cut(native, starts, stops, steps), kept) for starts, stops in cuts]
    # (its node keeps the dim as given, negative too, as PyTorch's: stack reads it alike)
    return cut_pieces(x, natives, d - len(shape) if dim < 0 else d, True, "UnbindBackward0")


@functools.lru_cache(maxsize=128)
def unbind_cuts(shape: tuple, d: int) -> tuple:
    """unbind's slices of a ``shape`` along axis ``d`` (:func:`_cuts`), their steps and the
    pieces' shape."""
    cuts, steps = _cuts_of(shape, d, tuple([(i, i + 1) for i in range(shape[d])]))
    return cuts, steps, shape[:d] + shape[d + 1 :]


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    out = _roll(input, shifts, dims)
    if out is input:
        out = _unchanged_copy(input)
    return labelled(out, "RollBackward0", input)


def _roll(x: Tensor, shifts: Any, dims: Any) -> Tensor:
    if dims is None:
        return reshape(_roll(flatten(x), shifts, 0), x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = dim_list(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    out = x
    for shift, dim in zip(shifts, dims):
        d = _axis(dim, x.ndim, "roll")
        n = x.shape[d]
        if n == 0:
            continue
        k = shift % n
        if k:
            out = cat([_slice_one(out, d, n - k, n), _slice_one(out, d, 0, n - k)], d)
    return out


def _triangle(x: Tensor, diagonal: int, lower: bool) -> Tensor:
    diagonal = index_argument(diagonal, "tril" if lower else "triu", "diagonal")
    if x.ndim < 2:
        raise RuntimeError(
            f"{'tril' if lower else 'triu'}: input must have at least 2 "
            f"dimensions, got shape {x.shape}"
        )
    name = "tril" if lower else "triu"
    kernel = getattr(x.backend, name, None)  # optional (API 2.4): else the mask below
    if kernel is not None:
        return apply(name, kernel(x.native, diagonal), x.dtype, (x,), diagonal)
    rows, cols = x.shape[-2:]
    b = x.backend
    r = b.reshape(b.arange(0, rows, 1, dtypes.int64), (rows, 1))
    c = b.reshape(b.arange(0, cols, 1, dtypes.int64), (1, cols))
    offset = b.sub(b.expand(c, (rows, cols)), b.expand(r, (rows, cols)))
    limit = b.full((), diagonal, dtypes.int64)
    mask = Tensor(b.le(offset, limit) if lower else b.ge(offset, limit), b, dtypes.bool_)
    return ew.where(mask, x, Tensor(b.full((), 0, x.dtype), b, x.dtype))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return labelled(_triangle(input, diagonal, True), "TrilBackward0", input)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return labelled(_triangle(input, diagonal, False), "TriuBackward0", input)


def contiguous(x: Tensor, memory_format: Any = None) -> Tensor:
    """``x`` itself when it is contiguous in PyTorch's sense (its strides, or for a
    channels-last ``memory_format``, in that order), else a copy that is (the backend's
    optional ``contiguous``; without one every array counts as laid out, and a view is a
    new tensor)."""
    make = getattr(x.backend, "contiguous", None)
    order = None if memory_format is None else channels_last_order(memory_format, x.shape)
    if order is not None:
        if make is None or x.is_contiguous(memory_format=memory_format):
            return x
        # Row-major in channels-last order, then seen in the logical order again: the
        # strides PyTorch gives (channels innermost); a new tensor, as PyTorch's clone
        native = laid_out(x.backend, x.native, order)
        return labelled(apply("identity", native, x.dtype, (x,)), "CloneBackward0", x)
    if make is None:  # the backend cannot tell its layout: a view may be PyTorch's copy, and
        # writes into it must not reach the base (x.t().contiguous() copies in PyTorch)
        return x if x._view_of is None else apply("identity", x.native, x.dtype, (x,))
    native = make(x.native)
    if native is not x.native:
        return apply("identity", native, x.dtype, (x,))
    if (
        (x._view_of is None and x._alias_of is None)
        or x._own_array_view() is None  # (its array's layout is its strides: C order)
        or x.is_contiguous()
    ):
        return x
    # a view whose array is its own and C-laid out (as_strided, unfold, a complex part) while
    # its strides over the base's memory are not: PyTorch's copy, which writes do not share
    return apply("identity", x._unshared_native(), x.dtype, (x,))


def movedim(x: Tensor, source: Any, destination: Any) -> Tensor:
    if isinstance(source, (tuple, list)) != isinstance(destination, (tuple, list)):
        raise TypeError(
            "movedim() received an invalid combination of arguments: source and destination "
            f"must both be ints or both sequences of ints, got {type(source).__name__} and "
            f"{type(destination).__name__}"
        )
    src = [_axis(d, x.ndim, "movedim") for d in dim_list(source)]
    dst = [_axis(d, x.ndim, "movedim") for d in dim_list(destination)]
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(dim_list(source))} "
            f"dims) should contain the same number of dims as destination "
            f"({list(dim_list(destination))} dims)"
        )
    for name, given, axes in (("source", source, src), ("destination", destination, dst)):
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(dim_list(given))})")
    if x.ndim == 0:  # dim 0 (or -1) of a 0-d tensor: nothing moves
        return permute(x, ())
    rest = [d for d in range(x.ndim) if d not in src]
    perm = [0] * x.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    for i in range(x.ndim):
        if i not in dst:
            perm[i] = next(it)
    return permute(x, perm)
