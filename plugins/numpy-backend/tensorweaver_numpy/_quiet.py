"""Keep NumPy's floating-point warnings off inside backend calls.

The IR contract wants IEEE results (inf, NaN) with no warnings, whatever the user's
``np.seterr`` or warning filters say. ``with np.errstate(all="ignore")`` costs ~1.3 us a
call, three times a small ``np.add``; on NumPy >= 2 the error state is one context
variable, and setting it directly costs ~0.2 us, still safe across threads and tasks.
Only primitives that can raise a floating-point flag are wrapped.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

try:  # NumPy >= 2 (private names, hence the fallback to the public errstate below)
    from numpy._core.umath import _extobj_contextvar, _make_extobj

    _IGNORE = _make_extobj(all="ignore")
    _set, _reset = _extobj_contextvar.set, _extobj_contextvar.reset
except (ImportError, AttributeError, TypeError):
    _set = None

if _set is not None:
    #: Warnings off, for a method that switches them itself (one frame fewer than
    #: :func:`quiet`): ``token = ignore_errors()`` ... ``finally: restore_errors(token)``.
    ignore_errors: Callable[[], Any] = functools.partial(_set, _IGNORE)  # C calls, no frame
    restore_errors: Callable[[Any], Any] = _reset
else:

    def ignore_errors() -> Any:
        return np.seterr(all="ignore")  # (per thread on NumPy < 2; returns the old state)

    def restore_errors(old: Any) -> Any:
        return np.seterr(**old)


def quiet(method: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a backend method so that it runs with floating-point warnings off."""
    if _set is None:

        @functools.wraps(method)
        def call(*args: Any) -> Any:
            with np.errstate(all="ignore"):
                return method(*args)

    else:

        @functools.wraps(method)
        def call(*args: Any) -> Any:
            token = _set(_IGNORE)
            try:
                return method(*args)
            finally:
                _reset(token)

    call._loud = method  # type: ignore[attr-defined]
    return call


def quiet_ufunc(ufunc: np.ufunc) -> Callable[..., Any]:
    """A backend method ``(self, *operands)`` that applies ``ufunc`` with warnings off.

    One Python frame instead of a decorated method's two: these are the hottest primitives.
    A one-operand ufunc's result is laid out as PyTorch's (``layouts.unary_ufunc``).
    """
    if ufunc.nin == 1:
        from tensorweaver_numpy.layouts import unary_ufunc  # (layouts imports this module)

        return unary_ufunc(ufunc)
    if _set is None:

        def method(self: object, *operands: Any) -> Any:
            with np.errstate(all="ignore"):
                return ufunc(*operands)

    else:

        def method(self: object, *operands: Any) -> Any:
            token = _set(_IGNORE)
            try:
                return ufunc(*operands)
            finally:
                _reset(token)

    method.__name__ = method.__qualname__ = ufunc.__name__
    method._loud = ufunc  # type: ignore[attr-defined]
    return method


def loud(method: Callable[..., Any]) -> Callable[..., Any]:
    """A bound backend method without its switch of the error state, for a caller that turns
    warnings off once around many calls (:func:`quiet` on the caller): the ufunc itself for
    a :func:`quiet_ufunc` method, the undecorated method for a :func:`quiet` one, else
    ``method`` as it is."""
    inner = getattr(getattr(method, "__func__", None), "_loud", None)
    if inner is None:
        return method
    return inner if isinstance(inner, np.ufunc) else inner.__get__(method.__self__)


def silenced(body: list[str]) -> tuple[list[str], dict[str, Any]]:
    """A generated function's ``body`` (lines of source) run with floating-point warnings
    off, as :func:`quiet` runs a method, without a wrapper's call; and the names it needs."""
    inner = [f"    {line}" for line in body]
    if _set is None:
        return ["with _np_errstate(all='ignore'):", *inner], {"_np_errstate": np.errstate}
    lines = ["_token = _quiet_set(_QUIET)", "try:", *inner, "finally:", "    _quiet_reset(_token)"]
    return lines, {"_quiet_set": _set, "_quiet_reset": _reset, "_QUIET": _IGNORE}
