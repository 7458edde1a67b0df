"""Whether operations record a graph: per thread and per asyncio task, like PyTorch's grad mode."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Callable, TypeVar

_enabled: ContextVar[bool] = ContextVar("tensorweaver_grad_enabled", default=True)
_inference: ContextVar[bool] = ContextVar("tensorweaver_inference_mode", default=False)

#: The hot path reads grad mode through this bound method (one call, no attribute look-ups).
is_grad_enabled: Callable[[], bool] = _enabled.get

#: Whether an ``inference_mode()`` block is active (as ``is_grad_enabled``: the tensor
#: constructor reads it to mark inference tensors).
is_inference_mode_enabled: Callable[[], bool] = _inference.get

F = TypeVar("F", bound=Callable[..., Any])


class set_grad_enabled:
    """Turn graph recording on or off: as a call, a ``with`` block or a decorator."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._tokens: list[Any] = []
        self._previous = _enabled.get()
        if type(self) is set_grad_enabled:
            # torch.set_grad_enabled(False) as a plain call switches the mode at once.
            self._tokens.append(_enabled.set(_recording(self.mode)))

    def __enter__(self) -> None:
        if type(self) is not set_grad_enabled or not self._tokens:
            self._tokens.append(_enabled.set(_recording(self.mode)))

    def __exit__(self, *exc: object) -> None:
        token = self._tokens.pop()
        try:
            _enabled.reset(token)
        except ValueError:  # entered in another context: restore the value instead
            _enabled.set(self._previous)

    def __call__(self, fn: F) -> F:
        mode = self.mode
        if type(self) is set_grad_enabled and self._tokens:
            # @set_grad_enabled(False) decorates: the switch its call made is undone.
            self.__exit__()

        if inspect.isgeneratorfunction(fn):
            return _each_step(fn, lambda: set_grad_enabled._scoped(mode))  # type: ignore

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = _enabled.set(_recording(mode))
            try:
                return fn(*args, **kwargs)
            finally:
                _enabled.reset(token)

        return wrapper  # type: ignore[return-value]

    @staticmethod
    @contextlib.contextmanager
    def _scoped(mode: bool) -> Iterator[None]:
        token = _enabled.set(_recording(mode))
        try:
            yield
        finally:
            _enabled.reset(token)


class no_grad(set_grad_enabled):
    """Operations inside record no graph (``with tw.no_grad():``, ``@tw.no_grad()`` or
    ``@tw.no_grad``)."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is not None:  # used as a bare decorator
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Record the graph again inside a ``no_grad`` block (also as ``@tw.enable_grad``)."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is not None:
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self) -> None:
        super().__init__(True)


def _recording(mode: bool) -> bool:
    """The grad mode that ``set_grad_enabled(mode)`` and its kin switch to: off inside an
    ``inference_mode()`` block whatever they ask, as PyTorch records no graph there.

    Differs from PyTorch: there ``torch.is_grad_enabled()`` is True inside
    ``inference_mode()`` + ``enable_grad()``; here it is False (the hot path reads one flag).
    """
    return mode and not _inference.get()


class inference_mode:
    """``no_grad`` for code that will never need gradients: a ``with`` block or a decorator
    (``@tw.inference_mode()``, ``@tw.inference_mode``). ``mode=False`` leaves inference mode
    and turns gradients back on, as in PyTorch.

    Tensors made inside are inference tensors (``is_inference()``, ``tensor.py``): outside
    the block they may not require grad nor be changed in place, as in PyTorch; and
    ``enable_grad()`` inside the block records no graph.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if not isinstance(mode, bool):  # a function: used as a bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self._tokens: list[tuple] = []

    def __enter__(self) -> None:
        self._tokens.append((_inference.set(self.mode), _enabled.set(not self.mode)))

    def __exit__(self, *exc: object) -> None:
        inference, grad = self._tokens.pop()
        _enabled.reset(grad)
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
