"""Reductions over dimensions (``dim`` int or tuple, ``keepdim``), PyTorch's semantics."""

from __future__ import annotations

import math
import warnings
from typing import Any

from tensorweaver import return_types
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, HooksOff, saves_integer_output
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.apply import NO_DIMS, apply, labelled
from tensorweaver.ops.complex import conj_physical, real
from tensorweaver.ops.creation import dtype_argument
from tensorweaver.ops.movement import dim_list
from tensorweaver.ops.sort import check_flags
from tensorweaver.promotion import get_default_dtype
from tensorweaver.registry import _caller_level
from tensorweaver.tensor import Tensor, _axis, index_argument

Dim = Any  # None, an int, or a sequence of ints

#: What ``max(dim=...)``, ``min(dim=...)`` return.


def axes_of(op: str, dim: Dim, ndim: int) -> tuple[int, ...]:
    """``dim`` as sorted, non-negative axes (all axes for None or ``()``)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, Tensor) and dim.ndim == 1:
        dim = dim.tolist()  # an int list as a tensor, as PyTorch's int-list arguments take it
    dim = tuple(index_argument(d, op, "dim") for d in dim_list(dim))
    axes = sorted({_axis(d, ndim, op) for d in dim})  # a 0-d tensor takes 0 and -1
    if len(axes) != len(dim):
        raise RuntimeError(f"{op}: dim {dim} names a dimension more than once")
    if not ndim:
        return ()
    return tuple(axes) if axes else tuple(range(ndim))


def kept_shape(shape: tuple, axes: tuple[int, ...]) -> tuple:
    """``shape`` with the reduced ``axes`` set to 1."""
    if len(axes) == len(shape):  # every axis (a loss's sum, in its backward): no loop
        return (1,) * len(shape)
    return tuple([1 if i in axes else n for i, n in enumerate(shape)])


def _reduce(op: str, x: Tensor, dim: Dim, keepdim: bool, dtype: DType) -> Tensor:
    if type(keepdim) is not bool:  # (keepdim=1, None or a NumPy bool: PyTorch's TypeError)
        check_flags(op, keepdim=keepdim)
    axes = axes_of(op, dim, x.ndim)
    if x.dtype is not dtype:
        x = ew.cast(x, dtype)
    if not axes:  # a 0-d tensor: nothing to reduce, yet a new tensor, as PyTorch's (a write
        # into it must leave x alone; its memory too: x's may be shared with NumPy)
        native = x._unshared_native()
        if (op == "max" or op == "min") and x.requires_grad and is_grad_enabled():
            # (the node of a reduction, which keeps its result: PyTorch's saves it and x)
            return apply(op, native, dtype, (x,), (axes, keepdim, native))
        out = apply("identity", native, dtype, (x,))
        if out._node is None:
            return out
        # (PyTorch's node is the reduction's, named as over more axes: autograd/names.py)
        return labelled(out, f"{op.capitalize()}Backward{int(dim is not None)}", x)
    return _reduced(op, x, axes, keepdim)


def _reduced(op: str, x: Tensor, axes: tuple[int, ...], keepdim: bool) -> Tensor:
    """The backend's reduction ``op`` of ``x`` over ``axes`` (checked, sorted, non-empty)."""
    if op == "prod" and x.requires_grad and is_grad_enabled():
        return _saving_product(x, axes, keepdim)
    native = getattr(x.backend, op)(x.native, axes, keepdim)
    # max/min's node keeps its output array, as PyTorch's AmaxBackward0 saves its result (a
    # write through ``.data`` reaches it: autograd/node.py output_rewritten)
    saved = (axes, keepdim, native) if op == "max" or op == "min" else (axes, keepdim)
    return apply(op, native, x.dtype, (x,), saved)


def _saving_product(x: Tensor, axes: tuple[int, ...], keepdim: bool) -> Tensor:
    """The product of ``x`` over ``axes`` as one node keeping its result, as PyTorch's
    ProdBackward0/1 saves it (its rule reads it where no element is 0)."""
    value = Tensor(x.backend.prod(x.native, axes, True), x.backend, x.dtype)
    name = "ProdBackward0" if len(axes) == x.ndim and not keepdim else "ProdBackward1"
    # (the kept node named too: autograd/names.py reads a prod node's axes from its saved)
    out = _saving_result("prod", value, x, None if keepdim else axes, name)
    return out if keepdim else labelled(out, name, x)


def _accumulate_dtype(x: Tensor, dtype: DType | None, op: str = "reduction") -> DType:
    if dtype is not None:
        return dtype_argument(op, dtype)
    return x.dtype if x.dtype.kind in "fc" else dtypes.int64


#: ``tuple(range(n))`` by n: every axis, for whole-tensor reductions.
_EVERY_AXIS = [tuple(range(n)) for n in range(8)]


class _Omitted:
    """The default of an argument whose absence matters: PyTorch's whole-tensor ``sum``,
    ``prod`` and ``mean`` overloads take no ``keepdim``, so ``x.sum(keepdim=True)`` is a
    TypeError while ``x.sum(None, True)`` is taken. Falsy, so an omitted keepdim reads False."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<omitted>"


OMITTED: Any = _Omitted()


def _whole_form(op: str, keepdim: Any) -> None:
    """PyTorch's TypeError for ``keepdim`` given to a whole-tensor overload (no ``dim``)."""
    if keepdim is not OMITTED:
        raise TypeError(
            f"{op}() received an invalid combination of arguments: keepdim= without dim; "
            f"pass dim (dim=None reduces every dimension) or leave keepdim out"
        )


#: NumPy's names of ``dim`` and ``keepdim``, which PyTorch's argument parser takes for them.
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def numpy_names(
    op: str, aliases: dict[str, Any], dim: Any, keepdim: Any, unset: tuple[Any, ...]
) -> tuple[Any, Any]:
    """``dim`` and ``keepdim`` of a call of ``op`` that spelled them ``axis=``/``keepdims=``
    (the keywords in ``aliases``). ``unset`` holds the default of ``dim``, then that of
    ``keepdim`` where ``op`` has one. Another keyword, or both spellings of one argument, is
    PyTorch's TypeError (an argument passed as its default value reads as not given). Only
    called when ``aliases`` is not empty: the ``**aliases`` parameter costs a call about
    20 ns, a wrapper about 220 ns."""
    given = {"dim": dim, "keepdim": keepdim}
    defaults = dict(zip(("dim", "keepdim"), unset))
    for name, value in aliases.items():
        own = _NUMPY_NAMES.get(name)
        if own not in defaults or given[own] is not defaults[own]:
            raise TypeError(f"{op}() got an unexpected keyword argument '{name}'")
        given[own] = value
    return given["dim"], given["keepdim"]


#: ``unset`` of :func:`numpy_names` where ``dim`` and ``keepdim`` default to ``OMITTED`` (so
#: that an explicit default value beside its NumPy spelling counts as given, as PyTorch's).
_BOTH_UNSET = (OMITTED, OMITTED)


def _missing_dim(op: str, dim: Any) -> None:
    """PyTorch's TypeError for a required ``dim`` given neither as ``dim`` nor ``axis``."""
    if dim is OMITTED:
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')


def sum(
    input: Tensor,
    dim: Dim = OMITTED,
    keepdim: bool = OMITTED,
    *,
    dtype: DType | None = None,
    **aliases: Any,
) -> Tensor:
    """Sum over ``dim``; bool and integer tensors sum in int64."""
    if aliases:
        dim, keepdim = numpy_names("sum", aliases, dim, keepdim, (OMITTED, OMITTED))
    if dim is OMITTED:
        if keepdim is not OMITTED:
            _whole_form("sum", keepdim)
        if dtype is None:
            # The whole of a float tensor (a loss): _reduce's work, without its general steps
            # (nor a frame for the keepdim check: 0.05 us of a 2.4 us call).
            dt = input.dtype
            ndim = len(input.shape)
            if 0 < ndim < 8 and dt.kind in "fc":
                axes = _EVERY_AXIS[ndim]
                native = input.backend.sum(input.native, axes, False)
                return apply("sum", native, dt, (input,), (axes, False), NO_DIMS)
        return _reduce("sum", input, None, False, _accumulate_dtype(input, dtype, "sum"))
    keepdim = False if keepdim is OMITTED else keepdim
    out = _reduce("sum", input, dim, keepdim, _accumulate_dtype(input, dtype, "sum"))
    return _over_dim(out, "SumBackward1")


def _over_dim(out: Tensor, name: str) -> Tensor:
    """``out``, a reduction's result given a ``dim``, its node named ``name`` (PyTorch's
    overload with a dim, ``SumBackward1``) where it is 0-d: a dim of None, ``()`` or every
    axis reduces as no dim does, and autograd/names.py, which sees only the axes, would name
    the node as the overload without one."""
    node = out._node
    if node is not None and not out._shape:
        node.label = name
    return out


def prod(
    input: Tensor,
    dim: Dim = OMITTED,
    keepdim: bool = OMITTED,
    *,
    dtype: DType | None = None,
    **aliases: Any,
) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("prod", aliases, dim, keepdim, (OMITTED, OMITTED))
    if dim is OMITTED:
        _whole_form("prod", keepdim)
        dim, keepdim = None, False
    elif dim is None or isinstance(dim, (tuple, list)) or (isinstance(dim, Tensor) and dim.ndim):
        # PyTorch's prod names one int dim, or none at all
        raise TypeError(
            f"prod(): argument 'dim' must be int, not {type(dim).__name__}; prod reduces one "
            "dim (leave dim out for every element, or call prod once per dim)"
        )
    elif keepdim is OMITTED:
        keepdim = False
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    out = product(input, dim, keepdim, dtype)
    return out if dim is None else _over_dim(out, "ProdBackward1")


def product(input: Tensor, dim: Dim, keepdim: bool, dtype: DType | None = None) -> Tensor:
    """The product over ``dim`` (an int or a tuple of ints, unlike ``prod``'s): for the core's
    own use (the gradient of a product over several dims)."""
    return _reduce("prod", input, dim, keepdim, _accumulate_dtype(input, dtype, "prod"))


def mean(
    input: Tensor,
    dim: Dim = OMITTED,
    keepdim: bool = OMITTED,
    *,
    dtype: DType | None = None,
    **aliases: Any,
) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("mean", aliases, dim, keepdim, (OMITTED, OMITTED))
    if dim is OMITTED:
        _whole_form("mean", keepdim)
        dim, keepdim, label = None, False, "MeanBackward0"
    else:  # (dim=None too: PyTorch's overload with a dim)
        keepdim, label = False if keepdim is OMITTED else keepdim, "MeanBackward1"
    dtype = input.dtype if dtype is None else dtype_argument("mean", dtype)
    if dtype.kind not in "fc":
        raise RuntimeError(
            f"mean(): could not infer output dtype; input dtype must be floating point, got "
            f"{input.dtype.name} (use x.float().mean() or mean(dtype=tw.float32))"
        )
    axes = axes_of("mean", dim, input.ndim)
    count = math.prod(input.shape[a] for a in axes)
    # Half precision sums in float32, as PyTorch's (the mean of 60000s is not inf).
    wide = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
    total = _reduce("sum", input, axes, keepdim, wide)  # (sum's work: its dim is checked)
    out = ew.div(total, count) if count else ew.mul(total, math.nan)
    if dtype is not wide:  # the division's node too: it keeps its count (autograd/node.py)
        out = labelled(out, label, input)
    return labelled(ew.cast(out, dtype), label, input)


def _check_nonempty(op: str, x: Tensor, axes: tuple[int, ...]) -> None:
    """PyTorch's IndexError for a reduced dimension of size 0, then its NotImplementedError
    for complex numbers (in that order: an empty dim of a complex tensor is the IndexError)."""
    _check_sizes(op, x, axes)
    _check_ordered(op, x)


def _check_sizes(op: str, x: Tensor, axes: tuple[int, ...]) -> None:
    for a in axes:
        if x.shape[a] == 0:
            raise IndexError(
                f"{op}(): expected reduction dim {a} to have non-zero size (shape {x.shape}); "
                "there is no identity for this reduction"
            )


def _check_ordered(op: str, x: Tensor) -> None:
    if x.dtype.kind == "c":
        raise NotImplementedError(
            f"{op}(): complex numbers are not ordered; reduce their .abs() or .real instead"
        )


def _check_whole(op: str, x: Tensor, dim: Dim) -> None:
    """PyTorch's RuntimeError for amax/amin over every dimension of an empty tensor."""
    if not x.numel() and (dim is None or _no_dims(dim)):
        raise RuntimeError(
            f"{op}(): expected reduction dim to be specified for input.numel() == 0 (shape "
            f"{x.shape}); specify the dim, or use keepdim over a non-empty dimension"
        )


def amax(input: Tensor, dim: Dim = OMITTED, keepdim: bool = OMITTED, **aliases: Any) -> Tensor:
    """The maximum over ``dim``; the gradient is shared evenly between tied maxima."""
    if aliases:
        dim, keepdim = numpy_names("amax", aliases, dim, keepdim, _BOTH_UNSET)
    dim = () if dim is OMITTED else dim
    keepdim = False if keepdim is OMITTED else keepdim
    _check_whole("amax", input, dim)
    _check_sizes("amax", input, axes_of("amax", dim, input.ndim))
    if input.dtype.kind == "c" and input.numel():  # (an empty one's reduction returns one)
        _check_ordered("amax", input)
    if input.dtype is dtypes.bool_:  # the axes, as any's dim=() reduces nothing
        return any(input, axes_of("amax", dim, input.ndim), keepdim)
    return _reduce("max", input, dim, keepdim, input.dtype)


def amin(input: Tensor, dim: Dim = OMITTED, keepdim: bool = OMITTED, **aliases: Any) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("amin", aliases, dim, keepdim, _BOTH_UNSET)
    dim = () if dim is OMITTED else dim
    keepdim = False if keepdim is OMITTED else keepdim
    _check_whole("amin", input, dim)
    _check_sizes("amin", input, axes_of("amin", dim, input.ndim))
    if input.dtype.kind == "c" and input.numel():  # (an empty one's reduction returns one)
        _check_ordered("amin", input)
    if input.dtype is dtypes.bool_:
        return all(input, axes_of("amin", dim, input.ndim), keepdim)
    return _reduce("min", input, dim, keepdim, input.dtype)


def _arg(op: str, x: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    if type(keepdim) is not bool:
        check_flags(op, keepdim=keepdim)
    if dim is None:
        # (of the array: an index has no gradient, and a reshape recorded on a view whose
        # history is invalid would raise, where PyTorch's argmax records nothing)
        flat = Tensor(x.backend.reshape(x.native, (x.numel(),)), x.backend, x.dtype)
        _check_nonempty(op, flat, (0,))
        out = Tensor(getattr(x.backend, op)(flat.native, 0, False), x.backend, dtypes.int64)
        return out.reshape((1,) * x.ndim) if keepdim else out
    if x.ndim == 0:
        _axis(dim, 0, op)
        return Tensor(x.backend.full((), 0, dtypes.int64), x.backend, dtypes.int64)
    axis = _axis(dim, x.ndim, op)
    _check_nonempty(op, x, (axis,))
    native = x.native if x.dtype is not dtypes.bool_ else x.backend.cast(x.native, dtypes.uint8)
    return Tensor(getattr(x.backend, op)(native, axis, keepdim), x.backend, dtypes.int64)


def _orderable(op: str, x: Tensor) -> Tensor:
    if x.dtype is dtypes.bool_:  # PyTorch's; max(dim=) and min(dim=) do take bools
        raise RuntimeError(f"{op}(): does not support bool input; convert it with .int() first")
    if x.dtype.kind == "c":  # PyTorch's, before any check of dim or of emptiness
        raise RuntimeError(f"{op}(): does not support complex input; reduce .abs() or .real")
    return x


def argmax(
    input: Tensor, dim: int | None = OMITTED, keepdim: bool = OMITTED, **aliases: Any
) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("argmax", aliases, dim, keepdim, _BOTH_UNSET)
    dim = None if dim is OMITTED else dim
    keepdim = False if keepdim is OMITTED else keepdim
    return _arg("argmax", _orderable("argmax", input), dim, keepdim)


def argmin(
    input: Tensor, dim: int | None = OMITTED, keepdim: bool = OMITTED, **aliases: Any
) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("argmin", aliases, dim, keepdim, _BOTH_UNSET)
    dim = None if dim is OMITTED else dim
    keepdim = False if keepdim is OMITTED else keepdim
    return _arg("argmin", _orderable("argmin", input), dim, keepdim)


def _extreme(op: str, x: Tensor, args: tuple, dim: Any, keepdim: Any, other: Any) -> Any:
    """``max``/``min``: PyTorch's three overloads, told apart as its argument parser does
    (``args``: the positional ones after ``input``; ``OMITTED`` marks an argument not given)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    if args:
        if len(args) > 2:
            raise TypeError(f"{op}() takes from 1 to 3 positional arguments, {len(args) + 1} given")
        if dim is not OMITTED or (len(args) == 2 and keepdim is not OMITTED):
            name = "dim" if dim is not OMITTED else "keepdim"
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
        dim = args[0]
        if len(args) == 2:
            keepdim = args[1]
        elif isinstance(dim, Tensor) and keepdim is OMITTED and other is OMITTED:
            dim, other = OMITTED, dim  # tw.max(a, b): the (Tensor input, Tensor other) overload
    if isinstance(dim, Tensor):  # an int dim, which a 0-d integer tensor may stand for
        if dim.ndim or dim.dtype.kind not in "iu":
            raise TypeError(
                f"{op}(): argument 'dim' must be int, not a {dim.dtype.name} tensor of shape "
                f"{tuple(dim.shape)}; pass an int, or other= for the elementwise {op}imum"
            )
        dim = int(dim.item())
    if other is not OMITTED:  # the elementwise maximum (minimum)
        if dim is not OMITTED or keepdim is not OMITTED:
            raise TypeError(
                f"{op}() received an invalid combination of arguments: other= takes no dim or "
                f"keepdim; call {op}(input, other) or {op}(input, dim, keepdim)"
            )
        return ew.maximum(x, other) if op == "max" else ew.minimum(x, other)
    if dim is OMITTED:
        if keepdim is not OMITTED:
            _whole_form(op, keepdim)
        if x.numel() == 0:
            raise RuntimeError(
                f"{op}(): expected a reduction dim to be specified for an input with "
                f"numel() == 0 (shape {x.shape}); pass dim=..."
            )
        # (PyTorch names this overload's node apart from amax's, whatever amax's dims)
        if op == "max":
            return labelled(amax(x), "MaxBackward1", x)
        return labelled(amin(x), "MinBackward1", x)
    if dim is None:  # PyTorch's overloads: an int dim, or none at all
        raise TypeError(f"{op}(): argument 'dim' must be int, not NoneType; leave dim out")
    if keepdim is not OMITTED and type(keepdim) is not bool:
        raise TypeError(f"{op}(): argument 'keepdim' must be bool, not {type(keepdim).__name__}")
    if x.dtype.kind == "c" and not isinstance(dim, (tuple, list)):
        # PyTorch: an empty dim's IndexError first, then RuntimeError along a dim
        # (NotImplementedError over the whole)
        if x.ndim:
            _check_sizes(op, x, (_axis(dim, x.ndim, op),))
        raise RuntimeError(f"{op}(): does not support complex input; reduce .abs() or .real")
    # (the pack hook sees the indices once, as PyTorch's MaxBackward0 saves them: not also as
    # the gather's operand, in the kept shape)
    with HooksOff():
        if x.ndim == 0:  # a new tensor, as PyTorch's (a write into it leaves x alone)
            _axis(dim, 0, op)
            indices = _arg("arg" + op, x, dim, False)
            values = x.gather(0, indices)  # (its node keeps the indices)
        else:
            indices = _arg("arg" + op, x, dim, True)
            values = x.gather(_axis(dim, x.ndim, op), indices)
            if not keepdim:
                values, indices = values.squeeze(dim), indices.squeeze(dim)
    # PyTorch's node of the values is MaxBackward0 (MinBackward0), not the gather/squeeze.
    values = labelled(values, f"{op.capitalize()}Backward0", x)
    saves_integer_output(values, indices)  # (PyTorch's node saves the indices)
    return getattr(return_types, op)(values, indices)


def max(
    input: Tensor,
    *args: Any,
    dim: Any = OMITTED,
    keepdim: Any = OMITTED,
    other: Any = OMITTED,
    **aliases: Any,
) -> Any:
    """The maximum of all elements, ``(values, indices)`` along ``dim``, or the elementwise
    maximum of ``input`` and ``other``."""
    if aliases:
        dim, keepdim = numpy_names("max", aliases, dim, keepdim, (OMITTED, OMITTED))
    return _extreme("max", input, args, dim, keepdim, other)


def min(
    input: Tensor,
    *args: Any,
    dim: Any = OMITTED,
    keepdim: Any = OMITTED,
    other: Any = OMITTED,
    **aliases: Any,
) -> Any:
    if aliases:
        dim, keepdim = numpy_names("min", aliases, dim, keepdim, (OMITTED, OMITTED))
    return _extreme("min", input, args, dim, keepdim, other)


def _no_dims(dim: Dim) -> bool:
    """Whether ``dim`` is an empty tuple or list (not None, an int or a tensor)."""
    return isinstance(dim, (tuple, list)) and not dim


def _logical_reduce(op: str, x: Tensor, dim: Dim, keepdim: bool) -> Tensor:
    if type(keepdim) is not bool:
        check_flags(op, keepdim=keepdim)
    b = x if x.dtype is dtypes.bool_ else ew.ne(x, 0)
    # PyTorch's any/all over dim=() reduce nothing (sum's reduces everything)
    axes = () if _no_dims(dim) else axes_of(op, dim, b.ndim)
    out = (
        b
        if not axes
        else Tensor(getattr(b.backend, op)(b.native, axes, keepdim), b.backend, dtypes.bool_)
    )
    # PyTorch keeps uint8 for uint8 input (a legacy of masks as bytes).
    return ew.cast(out, dtypes.uint8) if x.dtype is dtypes.uint8 else out


def any(input: Tensor, dim: Dim = OMITTED, keepdim: bool = OMITTED, **aliases: Any) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("any", aliases, dim, keepdim, _BOTH_UNSET)
    dim = None if dim is OMITTED else dim
    keepdim = False if keepdim is OMITTED else keepdim
    return _logical_reduce("any", input, dim, keepdim)


def all(input: Tensor, dim: Dim = OMITTED, keepdim: bool = OMITTED, **aliases: Any) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("all", aliases, dim, keepdim, _BOTH_UNSET)
    dim = None if dim is OMITTED else dim
    keepdim = False if keepdim is OMITTED else keepdim
    return _logical_reduce("all", input, dim, keepdim)


def count_nonzero(input: Tensor, dim: Dim = OMITTED, **aliases: Any) -> Tensor:
    """How many elements of ``input`` are not zero (along ``dim``, int64)."""
    if aliases:
        dim = numpy_names("count_nonzero", aliases, dim, None, (OMITTED,))[0]
    return sum(ew.ne(input, 0), None if dim is OMITTED else dim)


_HALF = (dtypes.float16, dtypes.bfloat16)


def var(
    input: Tensor,
    dim: Dim = OMITTED,
    unbiased: bool | None = None,
    keepdim: bool = OMITTED,
    *,
    correction: float | None = None,
    **aliases: Any,
) -> Tensor:
    """Variance with Bessel's ``correction`` (1 by default; ``unbiased=False`` means 0)."""
    if aliases:
        dim, keepdim = numpy_names("var", aliases, dim, keepdim, _BOTH_UNSET)
    dim, keepdim = _variance_form("var", dim, unbiased, keepdim)
    if input.dtype in _HALF:  # squares of hundreds overflow half: in float32, as PyTorch
        wide = _variance("var", ew.cast(input, dtypes.float32), dim, correction, keepdim, unbiased)
        return labelled(ew.cast(wide, input.dtype), "VarBackward0", input)
    return _variance("var", input, dim, correction, keepdim, unbiased)


def _variance_form(name: str, dim: Dim, unbiased: bool | None, keepdim: Any) -> tuple[Dim, bool]:
    """``dim`` and ``keepdim`` of a call of ``name`` with their defaults filled in; a
    combination that matches none of PyTorch's overloads is its TypeError."""
    if unbiased is not None and dim is OMITTED and keepdim is not OMITTED:
        raise TypeError(
            f"{name}() received an invalid combination of arguments: unbiased= and keepdim= "
            f"without dim; pass dim (dim=None reduces every dimension)"
        )
    keepdim = False if keepdim is OMITTED else keepdim
    if type(keepdim) is not bool:
        raise TypeError(
            f"{name}(): argument 'keepdim' must be bool, not {type(keepdim).__name__}; "
            f"pass keepdim=True or keepdim=False"
        )
    return (None if dim is OMITTED else dim), keepdim


def _variance(
    name: str,
    x: Tensor,
    dim: Dim,
    correction: float | None,
    keepdim: bool,
    unbiased: bool | None,
    root: bool = False,
) -> Tensor:
    """``var``'s work (with ``root``: ``std``'s); ``name`` is the function the warning
    names. PyTorch's overloads: ``(input, dim=None, *, correction, keepdim)``,
    ``(input, dim, unbiased, keepdim)`` and ``(input, unbiased)``."""
    if isinstance(dim, bool):  # PyTorch's var(input, unbiased) overload
        if unbiased is not None or keepdim:
            raise TypeError(
                f"{name}(): the {name}(input, unbiased) overload takes no other argument; "
                f"call {name}(input, dim=None, unbiased=..., keepdim=True)"
            )
        dim, unbiased = None, dim
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(
            f"{name}(): argument 'unbiased' must be bool, not {type(unbiased).__name__}; "
            "a number is correction="
        )
    if unbiased is not None and correction is not None:
        raise TypeError(
            f"{name}(): received both unbiased and correction; pass only correction "
            "(unbiased=False is correction=0)"
        )
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            f"var/std: input dtype must be floating point, got {x.dtype.name}; use x.float().var()"
        )
    axes = axes_of("var", dim, x.ndim)
    n = math.prod(x.shape[a] for a in axes)
    if n - correction <= 0:
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0 (correction {correction} with {n} values "
            "per result), so the result is inf or nan; the correction must be strictly less "
            "than the number of values reduced",
            UserWarning,
            stacklevel=_caller_level(),
        )
    if n - correction <= 0 and x.requires_grad and is_grad_enabled():
        whole = dim is None or x.ndim == 0
        out = _NoDegreesOfFreedom.apply(x, axes, keepdim, n, correction, whole)
    elif root and x.requires_grad and is_grad_enabled():
        return _StandardDeviation.apply(x, axes, keepdim, n, correction)
    else:
        out = _variance_value(x, axes, keepdim, n, correction)
    out = labelled(out, "VarBackward0", x)
    # _root: the gradient is 0 where the slice is constant, as PyTorch's (not 0 * inf)
    return _root(out, 2) if root else out


def _variance_value(x: Tensor, axes: tuple, keepdim: bool, n: int, correction: float) -> Tensor:
    if axes and n:  # mean's and sum's work, without their checks of var's checked axes
        centred = ew.sub(x, labelled(ew.div(_reduced("sum", x, axes, True), n), "MeanBackward1", x))
    else:
        centred = ew.sub(x, mean(x, axes, True))
    # |x - mean|^2: the variance of complex numbers is real, as PyTorch's.
    squares = ew.mul(centred, conj_physical(centred))
    squares = real(squares) if x.dtype.kind == "c" else squares
    total = _reduced("sum", squares, axes, keepdim) if axes else sum(squares, axes, keepdim)
    if x.dtype.itemsize < 8 or x.dtype is dtypes.complex64:
        # The mean rounded to a narrow type shifts every centred value alike; their sum
        # measures the shift, whose square over n is taken back out (the corrected two-pass
        # sum: float32 var(0) of values near 1e4 was 1e-5 off, torch's 4e-8). Its gradient
        # is zero (the centred values sum to 0 for any x), so it is left out of the graph,
        # computed on the backend's arrays (the same calls, without the tensor layer's
        # dispatch: a quarter of var's time on a (64, 32) input).
        be = x.backend
        shift = be.sum(centred.native, axes, keepdim) if axes else centred.native
        if x.dtype.kind == "c":
            shift = be.real(be.mul(shift, be.conj(shift)))
        else:
            shift = be.mul(shift, shift)
        if n:
            shift = be.div(shift, ew.scalar_native(be, n, total.dtype))
        # (never past the total: of constant values both are rounding, and a negative
        # variance would give std NaN)
        shift = be.minimum(shift, total.native)
        total = ew.sub(total, Tensor(shift, be, total.dtype))
    return ew.div(total, n - correction if n > correction else 0)


class _NoDegreesOfFreedom(Function):
    """``var`` with a ``correction`` of at least the count reduced (the value is inf or NaN),
    with PyTorch's gradient there rather than the composite's NaN (its 0 * inf): over the
    whole tensor (no ``dim``) inf, NaN where an element equals the mean; over ``dim``
    ``2 / (n - correction) * grad * (x - mean)``, inf or NaN at n == correction and finite
    beyond it (the same formula as with degrees of freedom)."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, axes: tuple, keepdim: bool, n: int, correction: float, whole: bool
    ) -> Tensor:
        ctx.save_for_backward(x)
        ctx.axes, ctx.keepdim, ctx.dof, ctx.whole = axes, keepdim, n - correction, whole
        return _variance_value(x, axes, keepdim, n, correction)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        if ctx.whole:
            factor = ew.where(ew.eq(x, mean(x)), math.nan, math.inf)
            gx = ew.mul(grad, factor)
        else:
            if not ctx.keepdim:
                grad = grad.reshape([1 if a in ctx.axes else s for a, s in enumerate(x.shape)])
            scale = 2.0 / ctx.dof if ctx.dof else math.inf  # (PyTorch's float division)
            gx = ew.mul(ew.mul(grad, scale), ew.sub(x, mean(x, ctx.axes, True)))
        return gx, None, None, None, None, None


def std(
    input: Tensor,
    dim: Dim = OMITTED,
    unbiased: bool | None = None,
    keepdim: bool = OMITTED,
    *,
    correction: float | None = None,
    **aliases: Any,
) -> Tensor:
    if aliases:
        dim, keepdim = numpy_names("std", aliases, dim, keepdim, _BOTH_UNSET)
    dim, keepdim = _variance_form("std", dim, unbiased, keepdim)
    if input.dtype in _HALF:  # the variance of thousands overflows half: in float32, as PyTorch
        wide = _variance(
            "std", ew.cast(input, dtypes.float32), dim, correction, keepdim, unbiased, True
        )
        return labelled(ew.cast(wide, input.dtype), "StdBackward0", input)
    out = _variance("std", input, dim, correction, keepdim, unbiased, True)
    return labelled(out, "StdBackward0", input)


def _kept(t: Tensor, x: Tensor, axes: tuple, keepdim: bool) -> Tensor:
    """A reduction's result or gradient ``t`` at the kept shape, to broadcast against ``x``."""
    return t if keepdim else t.reshape(kept_shape(x.shape, axes))


class _StandardDeviation(Function):
    """``std`` with degrees of freedom, whose node saves its input and result as PyTorch's
    (a write through ``.data`` into the result reaches the gradient): PyTorch's formula
    2 / (n - correction) (x - mean) grad / (2 std), 0 where std is 0."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, axes: tuple, keepdim: bool, n: int, correction: float) -> Any:
        out = _root(_variance_value(x, axes, keepdim, n, correction), 2)
        ctx.axes, ctx.keepdim, ctx.dof = axes, keepdim, n - correction
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, out = ctx.saved_tensors
        axes, keepdim = ctx.axes, ctx.keepdim
        out = _kept(out, x, axes, keepdim)
        half = ew.where(ew.eq(out, 0), 0.0, ew.div(_kept(grad, x, axes, keepdim), ew.mul(out, 2)))
        centred = ew.sub(x, mean(x, axes, True))
        return ew.mul(ew.mul(half, 2.0 / ctx.dof), centred), None, None, None, None


def logsumexp(input: Tensor, dim: Dim = OMITTED, keepdim: bool = OMITTED, **aliases: Any) -> Tensor:
    """log(sum(exp(x))) without overflow: the maximum is taken out first."""
    if aliases:
        dim, keepdim = numpy_names("logsumexp", aliases, dim, keepdim, _BOTH_UNSET)
    _missing_dim("logsumexp", dim)
    keepdim = False if keepdim is OMITTED else keepdim
    if dim is None:  # PyTorch's dim is required
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    if type(keepdim) is not bool:
        check_flags("logsumexp", keepdim=keepdim)
    if _no_dims(dim) and input.ndim and input.numel() and not keepdim:
        # PyTorch's out= of shape () meets its kept (1, ..., 1) result
        raise RuntimeError(
            f"logsumexp(): dim=() over a {input.ndim}-d tensor is refused as PyTorch refuses it "
            "(output with shape [] doesn't match the broadcast shape); name the dims"
        )
    axes = axes_of("logsumexp", dim, input.ndim)
    if input.dtype.kind not in "fc":  # (PyTorch's integers: the default dtype)
        input = input.to(get_default_dtype())
    if 0 in [input.shape[a] for a in axes]:  # an empty sum: log(0) = -inf
        out = ew.log(sum(ew.exp(input), axes, True))
        return out if keepdim else out.squeeze(axes)
    squeeze = None if keepdim else axes
    if input.requires_grad and is_grad_enabled():
        value = _logsumexp_value(input.detach(), axes)
        out = _saving_result("logsumexp", value, input, squeeze)
    else:
        out = _logsumexp_value(input, axes)
        out = out if keepdim else out.squeeze(axes)
    return labelled(out, "LogsumexpBackward0", input)


def _logsumexp_value(x: Tensor, axes: tuple) -> Tensor:
    """logsumexp over ``axes`` (kept), shifted by the maximum (0 where infinite)."""
    m = amax(real(x.detach()), axes, True)  # complex: the real parts' maximum, as PyTorch
    m = ew.where(ew.isinf(m), 0.0, m)
    return ew.add(ew.log(sum(ew.exp(ew.sub(x, m)), axes, True)), m)


def _saving_result(
    op: str, value: Tensor, x: Tensor, squeeze: tuple | None = None, name: str | None = None
) -> Tensor:
    """``value`` (computed without a graph, its reduced dims kept) as the output of one node
    ``op`` of ``x`` (named ``name`` where given) that keeps the output's array, as PyTorch's
    node saves its result: its rule (autograd/gradients.py) reads it, broadcast against
    ``x``, and a write through ``.data`` (of it or of a squeezed view of it) reaches it
    (autograd/node.py output_rewritten). ``squeeze``: the reduced dims, dropped from the
    output returned (a view of the node's); inside ``saved_tensors_hooks`` that one is what
    the pack hook is given, as PyTorch's is given the result the caller sees (its node's
    output then: gradients.py ``_reduction_result``)."""
    native = value.native
    if squeeze is None or not SAVED_TENSORS_HOOKS:
        out = apply(op, native, value.dtype, (x,), native)
        if name is not None:
            out = labelled(out, name, x)
        return out if squeeze is None else out.squeeze(squeeze)
    from tensorweaver.autograd.graph import PACK_OUTPUT_LATER, pack_output

    # One node whose output is the squeezed result (no view of a kept one): a change of it
    # in place or through ``.data`` is one of the packed output (graph.py
    # packed_output_follows); its rule reads g in the kept shape
    shape = tuple([n for d, n in enumerate(value.shape) if d not in squeeze])
    PACK_OUTPUT_LATER[0] = True
    try:
        out = apply(op, x.backend.reshape(native, shape), value.dtype, (x,), native)
    finally:
        PACK_OUTPUT_LATER[0] = False
    pack_output(out, value.shape)
    return out if name is None else labelled(out, name, x)


def _refuse_bool_scan(op: str, x: Tensor, dtype: DType) -> None:
    """PyTorch has no bool running sum or product kernel: ``dtype=torch.bool`` is refused
    where the kernel runs (not on a 0-d or empty tensor, returned as they are)."""
    if dtype is dtypes.bool and x.ndim and x.numel():
        raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")


def cumsum(
    input: Tensor, dim: int = OMITTED, *, dtype: DType | None = None, **aliases: Any
) -> Tensor:
    if aliases:
        dim = numpy_names("cumsum", aliases, dim, None, (OMITTED,))[0]
    _missing_dim("cumsum", dim)
    dtype = _accumulate_dtype(input, dtype, "cumsum")
    axis = _axis(dim, input.ndim, "cumsum")  # (checked first, as PyTorch's)
    _refuse_bool_scan("cumsum", input, dtype)
    x = ew.cast(input, dtype)
    if x.ndim == 0:  # a new tensor, never the input itself, as PyTorch's
        out = apply("identity", x._unshared_native(), dtype, (x,))
        return labelled(out, "CumsumBackward0", input)
    return apply("cumsum", x.backend.cumsum(x.native, axis), dtype, (x,), axis)


def norm(
    input: Tensor, p: Any = "fro", dim: Dim = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The vector p-norm over ``dim`` (all elements by default; PyTorch's default ``"fro"``
    is the 2-norm); ``p="nuc"`` (or ``"fro"`` over more than two dims, an error as PyTorch's)
    is ``linalg.matrix_norm`` over ``dim`` (all dims by default). ``dtype``: ``x`` is cast to
    it first, with the checks of PyTorch's linalg norms (which its ``norm`` hands it to).
    ``p=None`` is PyTorch's default too."""
    if p is None:
        p = "fro"
    if isinstance(p, str) and (p != "fro" or (isinstance(dim, (tuple, list)) and len(dim) > 2)):
        from tensorweaver.linalg.norms import matrix_norm  # (linalg imports this module)

        dims = tuple(range(input.ndim)) if dim is None else tuple(dim_list(dim))
        if len(dims) != 2:
            raise RuntimeError(
                f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims} (norm p={p!r} takes "
                "the two dims of a matrix)"
            )
        return matrix_norm(input, p, dims, keepdim, dtype=dtype)
    if dtype is not None:  # vector_norm casts and checks, then comes back here without dtype
        from tensorweaver.linalg.norms import vector_norm

        return vector_norm(input, 2 if p == "fro" else p, dim, keepdim, dtype=dtype)
    return labelled(_norm(input, p, dim, keepdim), "LinalgVectorNormBackward0", input)


def _root(total: Tensor, p: float) -> Tensor:
    """``total ** (1/p)`` whose gradient is 0 where ``total`` is 0, as PyTorch's norm
    gradient is at a zero vector (the plain root's is inf there, and 0 * inf is NaN)."""
    zero = ew.eq(total, 0)
    safe = ew.where(zero, 1.0, total)
    root = _sqrt(safe) if p == 2 else ew.pow(safe, 1.0 / p)
    return ew.where(zero, 0.0, root)


def _sqrt(total: Tensor) -> Tensor:
    """The correctly rounded square root, as torch's norm reductions take it (std::sqrt):
    a float32 ``total`` goes through float64 (harmless double rounding for sqrt), since
    torch's own float32 sqrt kernel is 1 ulp off on some CPUs (AVX-512 EPYC:
    sqrt(2399.6194f) is 48.985912, not 48.985909)."""
    if total.dtype is not dtypes.float32 or dtypes.float64 not in total.backend.dtypes:
        return ew.sqrt(total)  # (a backend without float64, as MPS, keeps its own)
    return ew.cast(ew.sqrt(ew.cast(total, dtypes.float64)), dtypes.float32)


def _nonzero_count(x: Tensor, dim: Dim, keepdim: bool) -> Tensor:
    return sum(ew.ne(x, 0).to(x.dtype), dim, keepdim)


class _NonzeroCount(Function):
    """``norm(x, 0)``: the count of nonzero elements, in ``x``'s graph with PyTorch's
    undefined gradient (``x.grad`` stays None, as PyTorch's; not zeros)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, dim: Dim, keepdim: bool) -> Tensor:
        return _nonzero_count(x, dim, keepdim)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, None, None]:
        return None, None, None


def _norm(x: Tensor, p: Any, dim: Dim, keepdim: bool) -> Tensor:
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            f"norm: expected a floating point or complex tensor as input, got {x.dtype.name}; "
            "convert it with .float() first"
        )
    if x.dtype.kind == "c":  # the norms of the moduli, as PyTorch's
        x = ew.abs(x)
    if x.dtype in _HALF:  # sums of powers overflow half: in float32, rounded once
        return ew.cast(_norm(ew.cast(x, dtypes.float32), p, dim, keepdim), x.dtype)
    _check_identity(x, p, dim)
    if p == 2 or p == "fro":
        if x.requires_grad and is_grad_enabled():
            value = _p_norm_values(x.detach(), 2, dim, True)
            squeeze = None if keepdim else axes_of("norm", dim, x.ndim)
            return _saving_result("linalg_vector_norm", value, x, squeeze)
        return _p_norm_values(x, 2, dim, keepdim)
    if p == math.inf:
        return amax(ew.abs(x), dim if dim is not None else (), keepdim)
    if p == -math.inf:
        return amin(ew.abs(x), dim if dim is not None else (), keepdim)
    if p == 1:
        if SAVED_TENSORS_HOOKS and x.requires_grad and is_grad_enabled():
            return _L1Norm.apply(x, dim, keepdim)  # (packs self and the result, as PyTorch)
        return sum(ew.abs(x), dim, keepdim)
    if p == 0:
        if x.requires_grad and is_grad_enabled():  # (the Function only where there is a graph)
            return _NonzeroCount.apply(x, dim, keepdim)
        return _nonzero_count(x, dim, keepdim)
    if x.requires_grad and is_grad_enabled():
        return _PNorm.apply(x, p, dim, keepdim)
    return _p_norm_values(x, p, dim, keepdim)


def _p_norm_values(x: Tensor, p: float, dim: Dim, keepdim: bool) -> Tensor:
    if p == 2:
        return _root(sum(ew.mul(x, x), dim, keepdim), 2)
    size = ew.abs(x)
    zero = ew.eq(size, 0)
    # |0| ** p is inf for p < 0, so a slice holding a zero has norm 0, as PyTorch's
    fill = math.inf if p < 0 else 0.0
    powered = ew.where(zero, fill, ew.pow(ew.where(zero, 1.0, size), p))
    return _root(sum(powered, dim, keepdim), p)


class _L1Norm(Function):
    """``norm(x, 1)`` inside ``saved_tensors_hooks``: one node that packs ``x`` and the
    result, as PyTorch's LinalgVectorNormBackward0, whose p=1 formula reads ``sgn(x)``
    alone, so a change of the result in place is no error (the no-hook path is
    ``sum(abs(x))``, whose version check on the result is PyTorch's)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, dim: Dim, keepdim: bool) -> Tensor:
        out = sum(ew.abs(x), dim, keepdim)
        ctx.axes, ctx.keepdim = axes_of("norm", dim, x.ndim), keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, _ = ctx.saved_tensors
        if not ctx.keepdim and ctx.axes:
            grad = grad.reshape(tuple(1 if a in ctx.axes else n for a, n in enumerate(x.shape)))
        return ew.mul(ew.sign(x), grad), None, None


class _PNorm(Function):
    """The p-norm of an order other than 0, 1, 2 and inf (its node saves the result, as
    PyTorch's: a write through ``.data`` into it reaches the gradient), with PyTorch's
    norm_backward formula (its second
    derivative is NaN at an exact zero for 2 < p < 3, as PyTorch's): for p < 1
    sgn(x) |x|^(p-1) (0 at x == 0) grad norm^(1-p); else sgn(x) |x|^(p-1) (x |x|^(p-2)
    from p = 2) grad / norm^(p-1), 0 where the norm is 0."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, p: float, dim: Dim, keepdim: bool) -> Tensor:
        out = _p_norm_values(x, p, dim, keepdim)
        ctx.p, ctx.axes, ctx.keepdim = p, axes_of("norm", dim, x.ndim), keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, norm = ctx.saved_tensors
        p = ctx.p
        if not ctx.keepdim and ctx.axes:
            kept = tuple(1 if a in ctx.axes else n for a, n in enumerate(x.shape))
            grad, norm = grad.reshape(kept), norm.reshape(kept)
        size = ew.abs(x)
        if p < 1:
            scaled = ew.where(ew.eq(x, 0), 0.0, ew.mul(ew.sign(x), ew.pow(size, p - 1)))
            return ew.mul(ew.mul(scaled, grad), ew.pow(norm, 1 - p)), None, None, None
        if p < 2:
            scaled = ew.mul(ew.sign(x), ew.pow(size, p - 1))
        else:
            scaled = ew.mul(x, ew.pow(size, p - 2))
        scale = ew.where(ew.eq(norm, 0), 0.0, ew.div(grad, ew.pow(norm, p - 1)))
        return ew.mul(scaled, scale), None, None, None


def _check_identity(x: Tensor, p: Any, dim: Dim) -> None:
    """PyTorch's refusal of a negative order over an empty slice (no identity)."""
    if not (isinstance(p, (int, float)) and p < 0):
        return
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        if x.numel() == 0:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {p} norm on an empty tensor because "
                "the operation does not have an identity"
            )
        return
    for d in dim_list(dim):
        axis = _axis(d, x.ndim, "linalg.vector_norm")
        if x.shape[axis] == 0:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {p} norm on the dimension {axis} "
                "because this dimension is empty and the operation does not have an identity"
            )
