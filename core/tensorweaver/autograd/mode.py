"""Whether operations record a graph: per thread and per asyncio task, like PyTorch's grad mode."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterator
from contextvars import ContextVar, Token
from typing import Any, Callable, TypeVar

#: Whether ops record a graph now: grad mode, and off in inference mode whatever grad mode is.
_enabled: ContextVar[bool] = ContextVar("tensorweaver_grad_enabled", default=True)
#: Grad mode as set (what ``tw.is_grad_enabled()`` reports): it differs from ``_enabled``
#: only inside ``inference_mode()``, where ``enable_grad()`` turns it on but records nothing.
_grad_mode: ContextVar[bool] = ContextVar("tensorweaver_grad_mode", default=True)
_inference: ContextVar[bool] = ContextVar("tensorweaver_inference_mode", default=False)

#: Whether ops record a graph (the core's own test; ``tw.is_grad_enabled`` is
#: :func:`grad_mode_enabled`). The hot path reads it through this bound method (one call,
#: no attribute look-ups).
is_grad_enabled: Callable[[], bool] = _enabled.get

#: Whether an ``inference_mode()`` block is active (as ``is_grad_enabled``: the tensor
#: constructor reads it to mark inference tensors).
is_inference_mode_enabled: Callable[[], bool] = _inference.get

F = TypeVar("F", bound=Callable[..., Any])


def grad_mode_enabled() -> bool:
    """Whether grad mode is on (``tw.is_grad_enabled()``, as PyTorch's: True inside
    ``inference_mode()`` + ``enable_grad()``, though no graph is recorded there)."""
    return _grad_mode.get() if _inference.get() else _enabled.get()


def _switched(mode: bool) -> tuple:
    """Grad mode set to ``mode``: the tokens that :func:`_restore` takes to undo it."""
    return _enabled.set(mode and not _inference.get()), _grad_mode.set(mode)


def _restore(tokens: tuple) -> None:
    recording, mode = tokens
    _grad_mode.reset(mode)
    _enabled.reset(recording)


def _value_before(token: Token) -> bool:
    """The value that ``token``'s ``set`` replaced (both variables default to True)."""
    value = token.old_value
    return True if value is Token.MISSING else value


class set_grad_enabled:
    """Turn graph recording on or off: as a call, a ``with`` block or a decorator."""

    def __init__(self, mode: bool) -> None:
        if mode.__class__ is not bool:  # (PyTorch's argument parser: 0 is no bool)
            raise TypeError(
                "set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                f"{type(mode).__name__}"
            )
        self.mode = mode
        self._tokens: list[Any] = []
        if type(self) is set_grad_enabled:
            # torch.set_grad_enabled(False) as a plain call switches the mode at once.
            self._tokens.append(_switched(self.mode))

    def __enter__(self) -> None:
        if type(self) is not set_grad_enabled or not self._tokens:
            self._tokens.append(_switched(self.mode))

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        recording, mode = self._tokens.pop()
        try:  # (_restore, inline: this runs at the end of every ``with tw.no_grad()``)
            _grad_mode.reset(mode)
            _enabled.reset(recording)
        except ValueError:  # entered in another context: restore the values instead
            _enabled.set(_value_before(recording))
            _grad_mode.set(_value_before(mode))

    def __call__(self, fn: F) -> F:
        mode = self.mode
        if type(self) is set_grad_enabled and self._tokens:
            # @set_grad_enabled(False) decorates: the switch its call made is undone.
            self.__exit__(None, None, None)

        if inspect.isgeneratorfunction(fn):
            return _each_step(fn, lambda: set_grad_enabled._scoped(mode))  # type: ignore

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tokens = _switched(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _restore(tokens)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> set_grad_enabled:
        """A new manager of the same mode (as PyTorch's: made as a call, so it switches)."""
        return set_grad_enabled(self.mode)

    @staticmethod
    @contextlib.contextmanager
    def _scoped(mode: bool) -> Iterator[None]:
        tokens = _switched(mode)
        try:
            yield
        finally:
            _restore(tokens)


class _fixed_mode(set_grad_enabled):
    """``set_grad_enabled(mode)`` for a mode the class fixes (``no_grad``, ``enable_grad``),
    also as a bare decorator. A ``with tw.no_grad()`` block (each optimizer step, each
    write-back of a view) pays one Python call to make it: ``__new__`` does
    ``set_grad_enabled.__init__``'s work, and ``__init__`` is type's own slot."""

    mode: bool

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is not None:  # used as a bare decorator
            return cls()(orig_func)
        self = object.__new__(cls)
        self._tokens = []
        return self

    __init__ = object.__init__

    def __enter__(self) -> None:
        self._tokens.append(_switched(self.mode))

    def clone(self) -> _fixed_mode:
        """A new manager of the same mode."""
        return type(self)()


class no_grad(_fixed_mode):
    """Operations inside record no graph (``with tw.no_grad():``, ``@tw.no_grad()`` or
    ``@tw.no_grad``)."""

    mode = False

    def __enter__(self) -> None:
        # (_switched(False), inline: off whatever inference mode says)
        self._tokens.append((_enabled.set(False), _grad_mode.set(False)))


class enable_grad(_fixed_mode):
    """Record the graph again inside a ``no_grad`` block (also as ``@tw.enable_grad``)."""

    mode = True


class inference_mode:
    """``no_grad`` for code that will never need gradients: a ``with`` block or a decorator
    (``@tw.inference_mode()``, ``@tw.inference_mode``). ``mode=False`` leaves inference mode
    and turns gradients back on, as in PyTorch.

    Tensors made inside are inference tensors (``is_inference()``, ``tensor.py``): outside
    the block they may not require grad nor be changed in place, as in PyTorch; and
    ``enable_grad()`` inside the block turns grad mode on but records no graph, as PyTorch's.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if not isinstance(mode, bool):  # a function: used as a bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self._tokens: list[tuple] = []

    def __enter__(self) -> None:
        mode = not self.mode
        self._tokens.append((_inference.set(self.mode), _enabled.set(mode), _grad_mode.set(mode)))

    def __exit__(self, *exc: object) -> None:
        inference, recording, mode = self._tokens.pop()
        _grad_mode.reset(mode)
        _enabled.reset(recording)
        _inference.reset(inference)

    def __call__(self, fn: F) -> F:
        mode = self.mode

        if inspect.isgeneratorfunction(fn):
            return _each_step(fn, lambda: inference_mode(mode))  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)


def _each_step(fn: Callable, scope: Callable[[], Any]) -> Callable:
    """A decorated generator function whose body runs in ``scope()`` at each step (as
    PyTorch's grad-mode decorators do), the caller's mode in between."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with scope():
            gen = fn(*args, **kwargs)
        step, value = gen.send, None
        while True:
            try:
                with scope():
                    item = step(value)
            except StopIteration as stop:
                return stop.value
            try:
                step, value = gen.send, (yield item)
            except GeneratorExit:
                with scope():
                    gen.close()
                raise
            except BaseException as error:  # noqa: BLE001 - thrown in: passed on
                step, value = gen.throw, error

    return wrapper
