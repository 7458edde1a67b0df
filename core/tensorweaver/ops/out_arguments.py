"""PyTorch's ``out=`` for the ``tw.*`` functions written without one (``tw.gather``,
``tw.cat``, ``tw.sort``, ``tw.kthvalue``, ...): the result is written into ``out`` (a tuple
of tensors for several results, returned as the ``<name>_out`` named tuple), which is
resized to the result's shape and must have its dtype (or, for the functions PyTorch
computes elementwise, one the result casts to); ``out`` may not require grad, and for the
functions that PyTorch's kernels refuse it, ``out`` may not share memory with an input.
The overlap rules live here alone: in-place methods and the elementwise ops' own ``out=``
(ops/apply.py ``written_out``) check their operands with them too.

The namespace (``tensorweaver/__init__.py``) wraps each function named in :data:`OUT` once,
at import or on its first use; a call without ``out=`` costs the wrapper's one extra Python
call. A function that takes ``out=`` itself (calling :func:`call_with_out` with it) is left
unwrapped, so its usual call costs nothing more.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Sequence
from typing import Any, Callable, NamedTuple

from tensorweaver import return_types
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import apply as ap  # (a module: it imports this one)
from tensorweaver.ops.casting import can_cast
from tensorweaver.tensor import Tensor, _axis


class Kind(NamedTuple):
    """How a function's ``out`` is checked: ``exact``, of the result's dtype (else any dtype
    the result casts to), ``exact_pairs`` the same for several results where it differs;
    ``apart``, sharing no memory with an input; ``quiet``, resized without PyTorch's warning
    (the functions whose kernels resize their ``out`` themselves); ``returns``, whether the
    function returns ``out`` (PyTorch's list-writing ``*_copy`` functions return None);
    ``copies``, any ``out`` dtype, the result computed in it (PyTorch's cumulative ops);
    ``uncast``, the class of the error where the result does not cast to ``out``'s dtype;
    ``needs_dim``, whether PyTorch has ``out=`` only with ``dim`` given (sum, median);
    ``differentiable``, False where PyTorch defines no derivative (its ``out`` may require
    grad); ``widens``, how the reductions whose kernels run in ``out``'s dtype compute a
    floating input's result there: ``"dtype"``, passed as ``dtype=`` (mean, nansum);
    ``"input"``, the input cast to it first, unless the result is one element of a float32
    or float64 ``out`` (std and var: their kernel for a whole reduction reads the input as
    it is); ``float_kernel``, whether that kernel has floating forms only, so that a float
    input with a non-float ``out`` is PyTorch's NotImplementedError (nansum, std);
    ``checks_first``, whether PyTorch's kernel refuses an ``out`` that repeats elements in
    memory before resizing it (index_select; others resize first); ``broadcasts``, whether
    each result is copied into its ``out`` tensor as ``copy_`` copies (broadcast, cast, never
    resized) under no_grad, and None returned (split_copy); ``partly``, which inputs ``out``
    may not share part of the memory of (PyTorch's TensorIterator check; the very same
    elements, in the same places, are allowed): ``"any"``, or ``"input"`` alone (addmm: the
    matrices' product kernel takes any; each result of several: topk, mode), ``"values"``
    (sort's kernel checks its values alone), ``"form"`` (max and min: ``"any"`` of two
    tensors, ``"input"`` along a dim, none for the whole reduction); ``tensors``, whether
    the ``out=`` form takes tensor operands alone (``where``'s: a number is a TypeError);
    ``samples``, whether PyTorch's kernel draws into ``out`` itself (normal), so that an
    ``out`` with elements to draw and no floating-point or complex dtype is its
    NotImplementedError."""

    exact: bool = True
    apart: bool = False
    quiet: bool = False
    exact_pairs: bool | None = None
    returns: bool = True
    copies: bool = False
    uncast: type[Exception] = RuntimeError
    needs_dim: bool = False
    differentiable: bool = True
    widens: str = ""
    float_kernel: bool = False
    checks_first: bool = False
    broadcasts: bool = False
    partly: str = ""
    tensors: bool = False
    samples: bool = False


def _table(kind: Kind, names: str) -> dict[str, Kind]:
    return dict.fromkeys(names.split(), kind)


#: The functions given ``out=`` here, by their name in ``tw``, and how it is checked (as
#: PyTorch 2.13 checks it, found by tests/out_arguments).
OUT: dict[str, Kind] = {
    **_table(
        Kind(),
        "aminmax all amax amin any argmax argmin bmm bucketize conj_physical complex cummax "
        "cummin diag diag_embed dot histogram inner inverse isin isneginf isposinf "
        "log_softmax lu_solve lu_unpack matmul mm mv nanquantile norm polar qr "
        "quantile searchsorted slice_scatter softmax svd tensordot tril "
        "triangular_solve triu vdot alias_copy as_strided_copy diagonal_copy expand_copy "
        "permute_copy squeeze_copy t_copy transpose_copy unfold_copy unsqueeze_copy view_copy "
        "matrix_power ormqr select_copy slice_copy slogdet view_as_real_copy "
        "view_as_complex_copy argsort",
    ),
    **_table(
        Kind(partly="any"),
        "diff ger hardshrink heaviside index_add index_copy index_reduce logcumsumexp renorm "
        "scatter scatter_add scatter_reduce",
    ),
    **_table(Kind(partly="any", tensors=True), "where"),
    **_table(Kind(partly="input"), "addmm addmv baddbmm frexp mode msort topk"),
    **_table(Kind(partly="values"), "sort"),
    **_table(
        Kind(exact=False),
        "cholesky cholesky_inverse cholesky_solve geqrf logsumexp mvlgamma orgqr threshold",
    ),
    **_table(Kind(exact=False, partly="any"), "addr fmax fmin igamma igammac kron outer"),
    **_table(Kind(exact=False, partly="any", samples=True), "normal"),
    **_table(Kind(exact=False, widens="dtype"), "mean"),
    **_table(Kind(exact=False, widens="dtype", float_kernel=True), "nanmean nansum"),
    **_table(Kind(exact=False, widens="input", float_kernel=True), "std var"),
    **_table(Kind(exact=False, exact_pairs=True, partly="form"), "max min"),
    **_table(Kind(differentiable=False), "histc"),
    **_table(Kind(exact=False, copies=True, partly="any"), "cumprod cumsum"),
    **_table(Kind(exact=False, copies=True, needs_dim=True), "prod sum"),
    **_table(Kind(exact=False, quiet=True), "lu"),
    **_table(Kind(exact=False, quiet=True, partly="any"), "bernoulli"),
    **_table(Kind(exact=False, quiet=True, copies=True), "eye rand randint randperm range"),
    **_table(Kind(quiet=True), "logspace multinomial narrow_copy randn"),
    **_table(Kind(quiet=True, partly="input"), "addbmm"),
    **_table(Kind(returns=False), "split_with_sizes_copy unbind_copy"),
    **_table(Kind(returns=False, broadcasts=True), "split_copy"),
    **_table(
        Kind(apart=True),
        "cross gather kthvalue masked_select nonzero nonzero_static take take_along_dim",
    ),
    **_table(Kind(apart=True, checks_first=True), "index_select"),
    **_table(Kind(apart=True, needs_dim=True), "median nanmedian"),
    **_table(
        Kind(exact=False, apart=True, uncast=TypeError),
        "cat concat concatenate column_stack dstack hstack row_stack stack vstack",
    ),
}

_OUT = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
#: Each named result type's ``<name>_out`` twin (``return_types.sort_out``).
_TWINS: dict[type, type] = {}


def given_out(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (``tw.<name>``) with PyTorch's keyword-only ``out=``, checked as ``OUT[name]``
    says; ``fn`` itself where it takes ``out`` already (see :func:`call_with_out`)."""
    parameters = list(inspect.signature(fn).parameters.values())
    if any(p.name == "out" for p in parameters):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:  # the usual call: nothing but fn's
            return fn(*args, **kwargs)
        return call_with_out(name, fn, args, kwargs, out)

    at = next((i for i, p in enumerate(parameters) if p.kind is p.VAR_KEYWORD), len(parameters))
    call.__signature__ = inspect.Signature([*parameters[:at], _OUT, *parameters[at:]])  # type: ignore[attr-defined]
    # Named as where it lives, tw.<name> (as torch.cat is torch's), so that pickle finds it.
    call.__module__, call.__qualname__ = "tensorweaver", name
    return call


def call_with_out(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """``fn(*args, **kwargs)`` written into ``out`` as PyTorch's ``<name>(..., out=out)``
    does. A function that takes ``out=`` itself (so that its usual call costs no wrapper)
    returns ``call_with_out(name, itself, args, kwargs, out)`` when ``out`` is given."""
    kind = OUT[name]
    if kind.broadcasts:
        _copy_each(name, fn(*args, **kwargs), out)
        return None
    _refuse_overloads(name, kind, args, kwargs, out)
    if kind.tensors:
        _refuse_numbers(name, fn, args, kwargs)
    if kind.apart:
        _refuse_overlap(name, out, (*args, *kwargs.values()))
    if kind.checks_first and isinstance(out, Tensor):
        _refuse_repeats(name, out.shape, out)
    if kind.copies and isinstance(out, Tensor) and kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": out.dtype}  # computed in out's dtype, as PyTorch's
    if kind.widens and isinstance(out, Tensor):
        value = _in_out_dtype(name, kind, fn, args, kwargs, out.dtype)
    else:
        value = fn(*args, **kwargs)
    if kind.apart and isinstance(out, Tensor) and isinstance(value, Tensor):
        if out.numel() and out.shape != value.shape:  # (resized first, over its memory)
            _refuse_overlap(name, out, (*args, *kwargs.values()), value)
        if name == "stack" and out.shape != value.shape:
            value = _resized_stack_layout(fn, args, kwargs, value)
    if kind.partly == "any" and isinstance(out, Tensor) and isinstance(value, Tensor):
        refuse_resizing_an_input(name, out, value.shape, (*args, *kwargs.values()))
    if kind.partly:
        _refuse_overlap(name, *_partly_checked(kind.partly, args, kwargs, out, value), True)
    if kind.quiet:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "An output with one or more elements was")
            written = _write(name, value, out, kind)
    else:
        written = _write(name, value, out, kind)
    return written if kind.returns else None


def refuse_resizing_an_input(op: str, out: Tensor, shape: tuple, inputs: tuple) -> None:
    """PyTorch's error where ``out`` is itself one of ``inputs`` (an in-place op, as its
    TensorIterator sees it) but the result's ``shape`` differs: an input is never resized."""
    if out.shape != shape and any(t is out for t in inputs):
        raise RuntimeError(
            f"{op}(): output with shape {list(out.shape)} doesn't match the broadcast shape "
            f"{list(shape)}: out= is one of the inputs, which cannot be resized; pass a new "
            "tensor as out="
        )


def _partly_checked(rule: str, args: tuple, kwargs: dict, out: Any, value: Any) -> tuple:
    """``(out, inputs, value)`` that ``rule`` (:class:`Kind`'s ``partly``) has checked for
    partial overlaps: the out tensors with their results, and the inputs it names."""
    several = isinstance(value, tuple) and isinstance(out, (tuple, list))
    if rule == "form":  # (max/min: along a dim several results; two tensors, or one)
        others = [*args[1:], *kwargs.values()]
        rule = "input" if several else "any" if any(isinstance(t, Tensor) for t in others) else ""
    if rule == "values":  # (sort's values alone)
        rule, out, value = ("input", out[0], value[0]) if several else ("input", out, value)
    if rule == "input":
        return out, (args[:1] if args else [kwargs.get("input")]), value
    return out, ((*args, *kwargs.values()) if rule else ()), value


def _refuse_numbers(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """PyTorch's TypeError for a number given to an ``out=`` form that takes tensors alone."""
    if all(isinstance(v, Tensor) for v in (*args, *kwargs.values())):
        return  # (the usual call: no signature to bind)
    bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    for position, (argument, value) in enumerate(bound.items(), 1):
        if not isinstance(value, Tensor):
            at = f" (position {position})" if position <= len(args) else ""
            raise TypeError(
                f"{name}(): argument '{argument}'{at} must be Tensor, not "
                f"{type(value).__name__}; with out= pass tensors (tw.tensor(value))"
            )


def _resized_stack_layout(
    fn: Callable[..., Any], args: tuple, kwargs: dict, value: Tensor
) -> Tensor:
    """``stack``'s result laid out as PyTorch resizes a stack's ``out``: in C order (it
    resizes ``out`` to the result's shape, then writes a ``cat`` into a view of it), but
    along a new last dim as ``cat`` lays out (as ``stack`` does there), where ``stack``
    without ``out=`` may keep a channels-last order."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    aliases = bound.arguments.get("aliases") or {}
    d = _axis(aliases.get("axis", bound.arguments.get("dim", 0)), value.ndim, "stack")
    return value if d == value.ndim - 1 else value.contiguous()


def _copy_each(name: str, values: Any, out: Any) -> None:
    """Each of ``values`` copied into its tensor of ``out`` by ``copy_`` (see :class:`Kind`)."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(
            f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}"
        )
    if len(out) != len(values):
        raise RuntimeError(
            f"{name}(): expected an out= argument of size {len(values)}, got size {len(out)}: "
            "pass one tensor per result"
        )
    with no_grad():
        for v, o in zip(values, out):
            o.copy_(v)


def _in_out_dtype(
    name: str, kind: Kind, fn: Callable[..., Any], args: tuple, kwargs: dict, dtype: DType
) -> Any:
    """``fn(*args, **kwargs)`` with a floating input computed in ``out``'s ``dtype``, as the
    kernels of ``kind.widens`` compute it (see :class:`Kind`)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    x = bound.arguments.get("input")
    if not isinstance(x, Tensor) or x.dtype.kind not in "fc" or x.dtype is dtype:
        return fn(*args, **kwargs)
    refused = kind.float_kernel and x.dtype.kind == "f" and dtype.kind != "f"
    if kind.widens == "dtype":
        if refused:
            raise NotImplementedError(_no_kernel(name, x.dtype, dtype))
        dim_given = "dim" in bound.arguments or "axis" in bound.arguments.get("aliases", ())
        if x.dtype.kind == "c" and dtype.kind != "c" and not dim_given:
            # PyTorch's overload without dim refuses (along a dim, even None, it keeps .real)
            raise RuntimeError(
                f"{name}.dtype_out(): input types can't be cast to the desired output type "
                f"{dtype.name}: a {x.dtype.name} input needs a complex out"
            )
        if dtype.kind in "fc" and kwargs.get("dtype") is None:
            kwargs = {**kwargs, "dtype": dtype}
        return fn(*args, **kwargs)
    value = fn(*args, **kwargs)
    if value.numel() <= 1 and dtype.itemsize >= 4:  # the whole reduction's kernel
        return value
    if refused and dtype.kind == "c":  # (an integer out is _write's RuntimeError)
        raise NotImplementedError(_no_kernel(name, x.dtype, dtype))
    if dtype.kind != "f" or x.dtype.kind != "f":  # a complex input's std is real already
        return value
    bound.arguments["input"] = x.to(dtype)
    return fn(*bound.args, **bound.kwargs)


def _no_kernel(name: str, given: DType, dtype: DType) -> str:
    return (
        f'"{name}" not implemented for {dtype.name}: its kernel computes a {given.name} input '
        "in out's dtype, which must be floating point; pass a floating out"
    )


def _refuse_overloads(name: str, kind: Kind, args: tuple, kwargs: dict, out: Any) -> None:
    """PyTorch's errors for the forms that have no ``out=`` (``sum(x)``, ``nonzero(x,
    as_tuple=True)``) and for an explicit ``dtype=`` that is not ``out``'s (no cast)."""
    if kind.needs_dim and len(args) < 2 and "dim" not in kwargs and "axis" not in kwargs:
        raise TypeError(f"{name}(): out= is taken only with dim given; call {name}(input, dim)")
    if kwargs.get("as_tuple"):
        raise RuntimeError(f"{name} does not support the out kwarg when as_tuple is True")
    dtype = kwargs.get("dtype")
    if isinstance(dtype, DType) and isinstance(out, Tensor) and out.dtype is not dtype:
        raise RuntimeError(
            f"{name}(): Expected out tensor to have dtype {dtype.name}, but got "
            f"{out.dtype.name} instead: dtype= and out= must agree"
        )


def _write(name: str, value: Any, out: Any, kind: Kind) -> Any:
    if isinstance(value, Tensor):
        _refuse_repeats(name, value.shape, out)
        if kind.samples:
            _refuse_undrawable(name, value, out)
        if isinstance(out, Tensor) and out.dtype is not value.dtype:
            if kind.uncast is not RuntimeError and not can_cast(value.dtype, out.dtype):
                raise kind.uncast(
                    f"{name}(): input types can't be cast to the desired output type "
                    f"{out.dtype.name} (the result is {value.dtype.name})"
                )
        return ap.written_out(
            name, value, out, same_dtype=kind.exact, differentiable=kind.differentiable
        )
    if not isinstance(out, (tuple, list)) or len(out) != len(value):
        raise TypeError(
            f"{name}(): argument 'out' must be a tuple of {len(value)} Tensors (one per "
            f"result), not {type(out).__name__}"
        )
    exact = kind.exact if kind.exact_pairs is None else kind.exact_pairs
    for v, o in zip(value, out):
        _refuse_repeats(name, v.shape, o)
    written = [ap.written_out(name, v, o, same_dtype=exact) for v, o in zip(value, out)]
    named = type(value)
    if not hasattr(named, "_fields"):
        return tuple(written)
    twin = _TWINS.get(named)
    if twin is None:
        twin = _TWINS[named] = return_types._structseq(f"{named.__name__}_out", named._fields)
    return twin(*written)


def _refuse_undrawable(name: str, value: Tensor, out: Any) -> None:
    """PyTorch's error where a sampler's kernel would draw ``value``'s elements into an
    ``out`` of neither a floating-point nor a complex dtype (it has no such form): after its
    autograd check (``written_out``'s), and not for no elements (then the cast's error)."""
    if not isinstance(out, Tensor) or out.dtype.kind in "fc" or not value.numel():
        return
    if is_grad_enabled() and (value.requires_grad or out.requires_grad):
        return
    raise NotImplementedError(
        f"{name}(): its kernel draws into out, which has no {out.dtype.name} form: pass a "
        f"floating-point out (and cast the result with .to({out.dtype.name}))"
    )


def _refuse_repeats(name: str, shape: tuple, out: Any) -> None:
    """PyTorch's error where ``out``, of the result's ``shape`` (so not resized), repeats
    an element in memory (an ``expand()``)."""
    if (
        isinstance(out, Tensor)
        and out.shape == shape
        and any(s == 0 and n > 1 for n, s in zip(out.shape, out.stride()))
    ):
        raise RuntimeError(
            f"{name}(): unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location. Please clone() the tensor before performing "
            "the operation."
        )


def _refuse_overlap(
    name: str, out: Any, inputs: Any, value: Any = None, partly: bool = False
) -> None:
    """PyTorch's error where an ``out`` tensor (``out``, or each of a tuple) and one of
    ``inputs`` (tensors, or lists of them) share elements: the kernel would read what it
    already wrote. ``partly``: only where they share part of the memory (some elements, or
    all in other places), as PyTorch's TensorIterator checks; the very same elements (an
    input that is the out tensor itself too: resized, it stays so) are an in-place write.
    ``value``: the result (a tuple of them for a tuple ``out``), to whose shape each out
    tensor of another shape is about to be resized, contiguously from where it starts, as
    PyTorch checks it after resizing."""
    several = isinstance(out, (tuple, list))
    if value is not None and several != isinstance(value, tuple):
        return  # (an out that does not match the results: _write's error)
    outs = out if several else (out,)
    values = value if several and value is not None else (value,) * len(outs)
    inputs = list(inputs)
    inputs += [t for item in inputs if isinstance(item, (tuple, list)) for t in item]
    for o, v in zip(outs, values):
        if not isinstance(o, Tensor):
            continue
        shape = v.shape if isinstance(v, Tensor) and v.shape != o.shape else None
        numel = None if shape is None else math.prod(shape)
        for t in inputs:
            if (
                isinstance(t, Tensor)
                and _overlap(o, t, numel)
                and not (partly and (t is o or same_elements(o, t, shape)))
            ):
                raise RuntimeError(
                    f"{name}(): unsupported operation: some elements of the input tensor and "
                    "the written-to tensor refer to a single memory location. Please clone() "
                    "the tensor before performing the operation."
                )


#: In-place methods whose leading tensor operands alone PyTorch checks for memory they
#: share with ``self`` (how many): the others' kernels read the operands before they write
#: (products, ``masked_scatter_``) or read a 0-d value as a number (``index_fill_``,
#: ``masked_fill_``'s value; its mask is checked). Any other method checks every operand.
_OPERANDS_CHECKED = {
    # (ldexp is mul(input, pow(2, other)): other is read into a new tensor first)
    "ldexp": 1,
    "ldexp_": 0,
    "masked_fill_": 1,
    "index_fill_": 0,
    "masked_scatter_": 0,
    **dict.fromkeys("addmm_ addmv_ addr_ baddbmm_ addbmm_".split(), 0),
}


def _refuse_overlapping_operands(self: Tensor, name: str, args: tuple, kwargs: dict) -> None:
    """PyTorch's RuntimeError where a tensor operand of ``self.name(...)`` (an in-place
    method, or an elementwise op writing into ``out=self``) shares part of ``self``'s memory
    (its elements, or all of them in other places): the kernel would read elements it
    already wrote. Only views and aliases share memory: where ``self`` is neither, or a
    ``detach()``/``.data`` alias of a tensor that is neither (all of that tensor's elements,
    as they are), an operand that is neither is passed at once (the common case, kept
    cheap: ``p.data.add_(p.grad)``; that operand is ``self``'s base or of other memory)."""
    operands = (*args, *kwargs.values()) if kwargs else args
    base = self._alias_of
    linked = self._view_of is not None or (
        base is not None and (base._alias_of is not None or base._view_of is not None)
    )
    for operand in operands:
        if isinstance(operand, Tensor) and (
            linked or operand._view_of is not None or operand._alias_of is not None
        ):
            ix = _index or _import_index()
            top = ix.memory_root(self)
            for checked in operands[: _OPERANDS_CHECKED.get(name, len(operands))]:
                # (of one memory: views or aliases of one tensor, also through a view whose
                # array is a copy written back, unfold's; a copy_ may leave two tensors over
                # one array that are neither, which PyTorch's would not share. The roots'
                # test first: it reads no backend storage, and p.data.add_(p.grad) passes it)
                if (
                    isinstance(checked, Tensor)
                    and ix.memory_root(checked) is top
                    and ix.shares_memory(self, checked)
                ):
                    _refuse_overlap(name, self, (checked,), partly=True)
            return


#: ops/index.py, imported on first use (it imports this module); bound once, as an import
#: in the function would cost ~0.5 us a call on p.data.add_'s path.
_index: Any = None


def _import_index() -> Any:
    global _index
    from tensorweaver.ops import index

    _index = index
    return index


def same_elements(
    a: Tensor, b: Tensor, a_shape: tuple | None = None, *, unit_strides: bool = True
) -> bool:
    """Whether ``a`` (resized to ``a_shape``, contiguous, if given) and ``b`` lie over the
    same bytes of memory with the same strides, as PyTorch's overlap test compares them.
    ``unit_strides=False``: the strides of axes of size 1 (which address nothing) and the
    number of such axes do not count, for a selection rebuilt by another path than the one
    that made ``b`` (``y[2, 1::2] += v``: the value is the selection PyTorch's way)."""
    if a is b and a_shape is None:
        return True
    if not _one_memory(a, b):
        return False
    if a_shape is None:
        shape, strides = a.shape, a.stride()
    else:
        shape, strides = a_shape, _contiguous_strides(a_shape)
    span_a, span_b = math.prod(shape) * a.element_size(), b.numel() * b.element_size()
    if a.data_ptr() != b.data_ptr() or span_a != span_b:
        return False
    if unit_strides:
        return tuple(strides) == tuple(b.stride())
    return _long_axes(shape, strides) == _long_axes(b.shape, b.stride())


def _long_axes(shape: Sequence[int], strides: Sequence[int]) -> tuple:
    """The (size, stride) of each axis whose size is not 1."""
    return tuple((n, s) for n, s in zip(shape, strides) if n != 1)


def _one_memory(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` lie in one memory of one backend, where their addresses
    compare (cuPyNumeric's are offsets into each array's own; a backend without ``storage``
    cannot tell)."""
    storage = getattr(a.backend, "storage", None)
    if storage is None or b.backend is not a.backend:
        return False
    if storage(a.native) is storage(b.native):
        return True
    from tensorweaver.ops import index as ix  # (it imports this module)

    return ix.shares_memory(a, b)  # (a view whose array is a copy: unfold's, as_strided's)


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _overlap(a: Tensor, b: Tensor, a_numel: int | None = None) -> bool:
    """PyTorch's test: the same tensor, or two dense tensors of one memory whose address
    ranges meet (others it cannot tell, and lets pass); ``a_numel``: ``a`` resized to so many
    elements (contiguous, so dense)."""
    if a is b:
        return True
    if not a.numel() or not b.numel() or not _one_memory(a, b):
        return False
    if (a_numel is None and a._dense_order() is None) or b._dense_order() is None:
        return False
    a_begin, b_begin = a.data_ptr(), b.data_ptr()
    a_end = a_begin + (a.numel() if a_numel is None else a_numel) * a.element_size()
    b_end = b_begin + b.numel() * b.element_size()
    return a_begin < b_end and b_begin < a_end
