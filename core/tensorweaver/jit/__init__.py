"""``tw.jit``: PyTorch's TorchScript entry points, for scripts that call them.

There is no TorchScript here: ``script`` and ``trace`` return the function or module they are
given, which then runs eagerly, as Python (``tw.compile`` is how a step is captured and
replayed as a graph). So ``is_scripting()`` and ``is_tracing()`` are False, the decorators
(``ignore``, ``unused``, ``export``) leave the function as it is, and ``fork`` runs the call
at once. ``save`` and ``load`` raise: there is no TorchScript archive to write or read;
``tw.save``/``tw.load`` keep a module's ``state_dict`` (or the whole module).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = [
    "Final",
    "Future",
    "ScriptFunction",
    "ScriptModule",
    "annotate",
    "export",
    "fork",
    "freeze",
    "ignore",
    "is_scripting",
    "is_tracing",
    "load",
    "save",
    "script",
    "trace",
    "unused",
    "wait",
]

_F = TypeVar("_F")


class ScriptModule:
    """PyTorch's type of a scripted module, for ``isinstance`` checks: nothing is one here
    (``script`` returns the module itself)."""

    def __init__(self) -> None:
        raise RuntimeError("tw.jit.ScriptModule: there is no TorchScript; use the module itself")


class ScriptFunction(ScriptModule):
    """PyTorch's type of a scripted function, for ``isinstance`` checks: nothing is one."""


def _deprecated(name: str) -> None:
    """PyTorch 2.13's DeprecationWarning for a TorchScript entry point."""
    warnings.warn(
        f"`tw.jit.{name}` is deprecated (as `torch.jit.{name}`). Please switch to `tw.compile`.",
        DeprecationWarning,
        stacklevel=3,
    )


def script(
    obj: _F,
    optimize: None = None,
    _frames_up: int = 0,
    _rcb: Callable[[str], Any] | None = None,
    example_inputs: Any = None,
) -> _F:
    """``obj`` itself (a function or module), which runs eagerly: there is no TorchScript.
    Warns DeprecationWarning, as PyTorch 2.13."""
    _deprecated("script")
    return obj


def trace(
    func: _F,
    example_inputs: Any = None,
    optimize: Any = None,
    check_trace: bool = True,
    check_inputs: Any = None,
    check_tolerance: float = 1e-5,
    strict: bool = True,
    _force_outplace: bool = False,
    _module_class: Any = None,
    _compilation_unit: Any = None,
    example_kwarg_inputs: Any = None,
    _store_inputs: bool = True,
) -> _F:
    """``func`` itself (a function or module), which runs eagerly; nothing is traced and the
    example inputs are not run (``tw.compile`` captures a graph). Warns DeprecationWarning,
    as PyTorch 2.13."""
    _deprecated("trace")
    return func


def freeze(mod: _F, preserved_attrs: Any = None, optimize_numerics: bool = True) -> _F:
    """``mod`` itself: there is no TorchScript module to freeze. As in PyTorch, ``mod`` must
    be in eval mode."""
    _deprecated("freeze")
    if getattr(mod, "training", False):
        raise RuntimeError(
            "tw.jit.freeze: freezing is only implemented for modules in eval mode (as in "
            "PyTorch); call .eval() on the module before freezing"
        )
    return mod


def is_scripting() -> bool:
    """False: nothing runs as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: nothing is traced."""
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """``the_value``: a type hint for TorchScript, which does not run here."""
    return the_value


def export(fn: _F) -> _F:
    """``fn`` itself: marks a TorchScript entry point in PyTorch."""
    return fn


def unused(fn: _F) -> _F:
    """``fn`` itself: PyTorch's compiler replaces it with a raise, eager Python runs it."""
    return fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@ignore`` or ``@ignore(drop=...)``: leave the function as it is (PyTorch's compiler
    calls it as Python)."""
    if callable(drop):
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(
            f"Argument to @tw.jit.ignore must be a bool or a function but got {drop}"
        )
    if kwargs.pop("drop_on_export", None) or drop:
        warnings.warn(
            "ignore(True) has been deprecated (as in PyTorch); use tw.jit.unused",
            FutureWarning,
            stacklevel=2,
        )
    return lambda fn: fn


class Future:
    """The result of :func:`fork`: already computed (the call ran when forked)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``func(*args, **kwargs)`` now (as PyTorch does outside TorchScript)."""
    _deprecated("fork")
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """The value of a :func:`fork`."""
    _deprecated("wait")
    return future.wait()


def _no_archive(name: str, instead: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"tw.jit.{name}: there is no TorchScript in tensorweaver, so no TorchScript "
            f"archive; use {instead} (a module's state_dict, or the whole module)"
        )

    refuse.__name__ = name
    refuse.__doc__ = f"Raises: use ``{instead}``."
    return refuse


save = _no_archive("save", "tw.save(obj, f)")
load = _no_archive("load", "tw.load(f)")
