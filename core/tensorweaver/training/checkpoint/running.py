"""The epoch's running loss and metric sums, saved so that a mid-epoch resume reports the
numbers the uninterrupted epoch would.

``Running`` and its metrics hold plain data (device tensors, numbers, lists of tensors)
next to their configuration and functions; the data is taken apart attribute by attribute
and put back the same way, the functions and anything else are left as they are.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.tensor import Tensor

_SCALARS = (Tensor, int, float, bool, str, type(None))
_OBJECT = "__attributes__"


def _is_data(value: Any) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_data(v) for v in value)
    return False


def _take(value: Any) -> Any:
    """``value``'s data: itself, a dict of its entries' data, or an object's attributes'."""
    if _is_data(value):
        return value
    if isinstance(value, dict):
        return {k: _take(v) for k, v in value.items() if _takeable(v)}
    return {_OBJECT: {k: _take(v) for k, v in vars(value).items() if _takeable(v)}}


def _takeable(value: Any) -> bool:
    return (
        _is_data(value)
        or isinstance(value, dict)
        or (hasattr(value, "__dict__") and not callable(value))
    )


def running_state(running: Any) -> dict[str, Any]:
    """The data of ``running`` (a ``Running``)."""
    return _take(running)[_OBJECT]


def load_running_state(running: Any, saved: dict[str, Any]) -> None:
    """Put data from :func:`running_state` back into a fresh ``running``."""
    _put(running, {_OBJECT: saved})


def _put(target: Any, saved: Any) -> None:
    attributes = saved[_OBJECT]
    for name, value in attributes.items():
        current = getattr(target, name, None)
        if isinstance(value, dict) and _OBJECT in value:
            _put(current, value)
        elif isinstance(value, dict) and isinstance(current, dict):
            _put_entries(current, value)
        else:
            setattr(target, name, value)


def _put_entries(target: dict[Any, Any], saved: dict[Any, Any]) -> None:
    for key, value in saved.items():
        if isinstance(value, dict) and _OBJECT in value:
            _put(target[key], value)
        else:
            target[key] = value
