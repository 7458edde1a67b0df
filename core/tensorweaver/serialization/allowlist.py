"""The classes and functions a file may name: PyTorch's ``safe_globals`` API, without pickle.

A saved module records its class, and an attribute holding a function or class records that
object, by the name ``"module:qualname"``. ``tw.load`` turns such a name back into an object
only by looking it up here, among objects this process already holds:

- TensorWeaver's own: every ``tw.nn.Module`` subclass defined in ``tensorweaver.nn`` or
  ``tensorweaver.models``, the compiled module ``tw.compile(module)`` gives
  (``OptimizedModule``), and the public functions of ``tw.nn.functional``;
- those the user allows with :func:`add_safe_globals` or inside :class:`safe_globals`, as in
  PyTorch: a class or function, or a ``(object, "name")`` pair for an object recorded under
  another name. Names match with ``:`` or ``.`` between module and qualname (PyTorch spells
  them ``module.qualname``).

A name found nowhere raises ``pickle.UnpicklingError`` (PyTorch's type for a global its
``weights_only`` load refuses) naming the class and the call that allows it. Nothing is ever
imported by a name read from a file.

The allow-list is process-wide, like PyTorch's (not per thread). Unlike PyTorch, leaving a
``safe_globals`` block removes only what that block added: an object allowed before it with
:func:`add_safe_globals` stays allowed.
"""

from __future__ import annotations

import threading
import types
from pickle import UnpicklingError  # the exception type only: nothing here unpickles
from typing import Any, Optional, Union

Global = Union[Any, tuple[Any, str]]

_lock = threading.Lock()
# The user's allowed objects, in the order given (a list: functions and pairs need no hash).
_allowed: list[Global] = []


def add_safe_globals(safe_globals: list[Global]) -> None:
    """Allow ``tw.load`` to rebuild these classes (``tw.nn.Module`` subclasses) and to restore
    attributes holding these functions or classes. Each item is an object, or a pair
    ``(object, "module:qualname")`` for an object recorded under another name. Allow only
    classes you trust: a loaded module runs its class's ``forward``."""
    items = [_checked(item) for item in safe_globals]
    with _lock:
        _allowed.extend(item for item in items if not _listed(item))


def get_safe_globals() -> list[Global]:
    """The objects the user has allowed (TensorWeaver's own are always allowed, not listed)."""
    with _lock:
        return list(_allowed)


def clear_safe_globals() -> None:
    """Forget every object the user allowed."""
    with _lock:
        _allowed.clear()


class safe_globals:  # noqa: N801 (PyTorch's name)
    """Context manager: allow ``safe_globals`` (as :func:`add_safe_globals`) inside the block.

    ``with tw.serialization.safe_globals([RNNModel]): model = tw.load(f)``. On exit it removes
    what it added, and only that.
    """

    def __init__(self, safe_globals: list[Global]) -> None:
        self.safe_globals = [_checked(item) for item in safe_globals]
        self._added: list[Global] = []

    def __enter__(self) -> None:
        with _lock:
            self._added = [item for item in self.safe_globals if not _listed(item)]
            _allowed.extend(self._added)

    def __exit__(self, *exc: object) -> None:
        with _lock:
            for item in self._added:
                _allowed[:] = [kept for kept in _allowed if kept is not item]
            self._added = []


def name_of(obj: Any) -> Optional[str]:
    """The ``"module:qualname"`` a file records ``obj`` by; None for an object without one
    that names it (a lambda, a local class, an instance)."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    return f"{module}:{qualname}"


def resolve(name: str) -> Any:
    """The allowed object recorded as ``name``; raises ``pickle.UnpicklingError`` for another."""
    key = name.replace(":", ".")
    with _lock:
        user = {_key(item): _object(item) for item in _allowed}
    found = user[key] if key in user else _builtins().get(key)
    if found is None:
        raise UnpicklingError(_refusal(name))
    return found


def allowed(name: str) -> bool:
    """Whether :func:`resolve` finds ``name``."""
    try:
        resolve(name)
    except UnpicklingError:
        return False
    return True


def _refusal(name: str) -> str:
    short = name.rpartition(":")[2].rpartition(".")[2] or name
    module = name.partition(":")[0]
    return (
        f"tw.load: the file names {name!r}, which is not an allowed class or function. "
        f"TensorWeaver rebuilds only tensorweaver.nn / tensorweaver.models classes and the "
        f"objects you allow. If you trust it, call tw.serialization.add_safe_globals([{short}]) "
        f"with that object (defined in module {module!r}) before tw.load, or load inside "
        f"`with tw.serialization.safe_globals([{short}]):`. weights_only=False does not lift "
        "this: tw.load never imports or runs anything a file names."
    )


def _checked(item: Global) -> Global:
    if isinstance(item, tuple):
        if len(item) != 2:
            raise ValueError(
                "tw.serialization.add_safe_globals: expected a pair (object, 'module:qualname'), "
                f"got a tuple of length {len(item)}"
            )
        if not isinstance(item[1], str):
            raise TypeError(
                "tw.serialization.add_safe_globals: the second item of a pair must be the "
                f"object's full name as a str, got {type(item[1]).__name__}"
            )
    elif name_of(item) is None:
        raise TypeError(
            f"tw.serialization.add_safe_globals: {item!r} has no module-level name to be "
            "recorded by; pass a pair (object, 'module:qualname')"
        )
    return item


def _listed(item: Global) -> bool:
    return any(kept is item or kept == item for kept in _allowed)


def _object(item: Global) -> Any:
    return item[0] if isinstance(item, tuple) else item


def _key(item: Global) -> str:
    name = item[1] if isinstance(item, tuple) else name_of(item)
    return name.replace(":", ".")


def _builtins() -> dict[str, Any]:
    """TensorWeaver's own allowed objects by dotted name, made on each call (a layer module
    imported later adds its classes; the walk covers about a hundred)."""
    import tensorweaver.compiler.compiled  # noqa: F401  (defines OptimizedModule)
    import tensorweaver.models  # noqa: F401  (defines its classes)
    import tensorweaver.nn.functional as F
    from tensorweaver.nn.modules.module import Module

    found: dict[str, Any] = {}
    pending = [Module]
    while pending:
        cls = pending.pop()
        if _ours(cls.__module__) and name_of(cls) is not None:
            found.setdefault(_key(cls), cls)
        pending.extend(cls.__subclasses__())
    for attr, value in vars(F).items():
        if not attr.startswith("_") and isinstance(value, types.FunctionType):
            found.setdefault(_key(value), value)
    return found


def _ours(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _PACKAGES)


_PACKAGES = ("tensorweaver.nn", "tensorweaver.models", "tensorweaver.compiler")
