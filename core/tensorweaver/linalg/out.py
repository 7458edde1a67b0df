"""PyTorch's ``out=`` of the ``tw.linalg`` and ``tw.fft`` functions: the result written into
the given tensor (a tuple of tensors for several results), which must have the result's
dtype (or one it casts to, for the functions PyTorch writes by a copy), is resized to its
shape, and may not take part in autograd."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from tensorweaver.linalg._shared import result
from tensorweaver.ops.apply import written_out
from tensorweaver.tensor import Tensor

F = TypeVar("F", bound=Callable[..., Any])

#: Each named result type's ``<name>_out`` twin (``torch.return_types.linalg_eigh_out``).
_OUT_TYPES: dict[type, type] = {}
_OUT = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)


def write(
    name: str, value: Any, out: Any, *, graph: bool = False, kind: bool = False, cast: bool = False
) -> Any:
    """``value`` (a tensor or a named tuple of them) written into ``out``; with ``graph``,
    an ``out`` that then requires grad (PyTorch's functions composed of others); with
    ``kind``, any ``out`` dtype of the value's kind (complex or floating), cast to (the
    transforms'); with ``cast``, any ``out`` dtype the value's casts to (PyTorch's functions
    that copy their result into ``out``: cond, pinv, eig, ...); else exactly the value's
    dtype."""
    if not isinstance(value, tuple):
        if kind:
            _check_kind(name, value, out)
        return _write_one(name, value, out, graph, not (kind or cast))
    if not isinstance(out, (tuple, list)) or len(out) != len(value):
        raise TypeError(
            f"{name}(): argument 'out' must be a tuple of {len(value)} Tensors, got "
            f"{type(out).__name__}"
        )
    named = type(value)
    twin = _OUT_TYPES.get(named)
    if twin is None:
        twin = _OUT_TYPES[named] = result(f"{named.__name__}_out", *named._fields)
    return twin(*[_write_one(name, v, o, graph, not cast) for v, o in zip(value, out)])


def write_out(
    name: str, value: Any, out: Any, first: Any, composite: Any, kind: bool, cast: bool
) -> Any:
    """:func:`write` for a function wrapped by :func:`with_out` (or written as it): ``first``
    is its first argument, which ``composite`` (see :func:`with_out`) may test."""
    graph = composite(first) if callable(composite) else composite
    # a composed function writes its last step's value: of exactly its dtype (unless cast)
    return write(name, value, out, graph=graph, kind=kind and not graph, cast=cast)


def _check_kind(name: str, value: Any, out: Any) -> None:
    wanted = "complex" if value.dtype.is_complex else "floating point"
    if isinstance(out, Tensor) and (
        out.dtype.is_complex != value.dtype.is_complex
        or not (out.dtype.is_complex or out.dtype.is_floating_point)
    ):
        raise RuntimeError(
            f"{name} expects a {wanted} output tensor, but got {out.dtype.name} (its result "
            f"is {value.dtype.name})"
        )


def _write_one(name: str, value: Any, out: Any, graph: bool, exact: bool) -> Any:
    if not (graph and value.requires_grad):
        return written_out(name, value, out, same_dtype=exact)
    written_out(name, value.detach(), out, same_dtype=exact)  # the checks and the resize
    return out.copy_(value)


def with_out(
    name: str,
    fn: F,
    *,
    composite: bool | Callable[[Any], bool] = False,
    kind: bool = False,
    cast: bool = False,
) -> F:
    """``fn`` with PyTorch's keyword-only ``out=`` (``name`` is the function's in errors).
    ``composite``: one of the functions PyTorch composes of others (or a test of the first
    argument for whether it does so), whose ``out`` takes inputs that require grad and
    joins their graph. ``kind``, ``cast``: see :func:`write`."""

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:  # the usual call: nothing but fn's
            return fn(*args, **kwargs)
        value = fn(*args, **kwargs)
        first = args[0] if args else kwargs.get("input")
        return write_out(name, value, out, first, composite, kind, cast)

    return signed(call, fn)  # type: ignore[return-value]


def signed(call: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` (wrapping ``fn``) with ``fn``'s signature plus the keyword-only ``out``."""
    signature = inspect.signature(fn)
    call.__signature__ = signature.replace(parameters=[*signature.parameters.values(), _OUT])
    return call
