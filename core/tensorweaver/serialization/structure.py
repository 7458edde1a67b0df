"""A saved object's structure as JSON: what lies around its tensors, so ``load`` rebuilds it.

``save`` accepts any nesting of mappings, lists and tuples holding tensors, strings, numbers,
booleans and ``None`` (a model's or an optimizer's ``state_dict``). Tensors get path-like
names (``"state.0.exp_avg"``; a flat state dict keeps its own keys, so other tools read them
by the usual names). The rest becomes a JSON node (stored by :mod:`.document`):
a tensor is ``{"tensor": name}``, a list ``{"list": [...]}``, a tuple ``{"tuple": [...]}``,
a mapping ``{"dict": [[key, value], ...]}`` (so int keys stay ints), a scalar itself. One
tensor under several paths is stored once and comes back as one tensor.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Callable, NoReturn

import numpy as np

Fail = Callable[[str], NoReturn]

_SCALARS = (str, int, float, bool, type(None))
# The safetensors header's reserved key; no tensor may take this name.
_RESERVED = "__metadata__"


def flatten(obj: Any, tensor_type: type) -> tuple[Any, dict[str, Any]]:
    """The JSON node of ``obj``'s structure and the tensors it refers to, by their names."""
    tensors: dict[str, Any] = {}
    name_of: dict[int, str] = {}  # id(tensor) → name: a tensor shared by two paths is stored once

    def name_for(path: list[str]) -> str:
        base = ".".join(path) or "tensor"
        name, n = base, 0
        while name in tensors or name == _RESERVED:
            n += 1
            name = f"{base}#{n}"
        return name

    def encode(value: Any, path: list[str]) -> Any:
        if isinstance(value, tensor_type):
            name = name_of.get(id(value))
            if name is None:
                name = name_for(path)
                name_of[id(value)] = name
                tensors[name] = value
            return {"tensor": name}
        if isinstance(value, Mapping):
            items = []
            for key, item in value.items():
                if isinstance(key, np.generic):
                    key = key.item()
                if not isinstance(key, _SCALARS):
                    raise TypeError(
                        f"tw.save: mapping key {key!r} at {_where(path)} is a "
                        f"{type(key).__name__}; keys must be str, int, float, bool or None"
                    )
                items.append([key, encode(item, [*path, str(key)])])
            return {"dict": items}
        if isinstance(value, (list, tuple)):
            kind = "tuple" if isinstance(value, tuple) else "list"
            return {kind: [encode(item, [*path, str(i)]) for i, item in enumerate(value)]}
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, _SCALARS):
            return value
        raise TypeError(
            f"tw.save: cannot store a {type(value).__name__} at {_where(path)}; a saved object "
            "holds tensors, mappings, lists, tuples, str, int, float, bool and None"
        )

    return encode(obj, []), tensors


def _where(path: list[str]) -> str:
    return repr(".".join(path)) if path else "the top level"


def rebuild(node: Any, names: Collection[str], tensor: Callable[[str], Any], fail: Fail) -> Any:
    """The object whose structure is the JSON ``node``, over the file's tensor ``names``.

    ``tensor(name)`` makes a tensor, once per name. ``fail(what)`` raises for a malformed
    structure, one that refers to a tensor the file lacks, or a file tensor it never refers to.
    """
    made: dict[str, Any] = {}

    def build(node: Any) -> Any:
        if isinstance(node, dict):
            if len(node) != 1:
                fail(f"structure node {_short(node)} must have exactly one key")
            ((kind, body),) = node.items()
            if kind == "tensor":
                if not isinstance(body, str) or body not in names:
                    fail(f"structure refers to tensor {body!r}, which the file does not hold")
                if body not in made:
                    made[body] = tensor(body)
                return made[body]
            if kind not in ("list", "tuple", "dict"):
                fail(f"unknown structure node {kind!r}")
            if not isinstance(body, list):
                fail(f"structure node {kind!r} must hold a JSON list, not {_short(body)}")
            if kind == "dict":
                return dict(pair(item) for item in body)
            items = [build(item) for item in body]
            return tuple(items) if kind == "tuple" else items
        if isinstance(node, list):
            fail(f"a bare JSON list {_short(node)} in the structure (lists are tagged)")
        return node

    def pair(item: Any) -> tuple[Any, Any]:
        if not (isinstance(item, list) and len(item) == 2):
            fail(f"dict entry {_short(item)} must be a [key, value] pair")
        if not isinstance(item[0], _SCALARS):
            fail(f"dict key {_short(item[0])} must be a JSON scalar")
        return item[0], build(item[1])

    try:
        out = build(node)
    except RecursionError:
        fail("nested too deeply")
    unused = [name for name in names if name not in made]
    if unused:
        listed = ", ".join(map(repr, unused[:3])) + (", ..." if len(unused) > 3 else "")
        fail(f"the file holds {len(unused)} tensor(s) the structure never refers to: {listed}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
