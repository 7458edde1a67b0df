"""A saved object's structure as JSON: what lies around its tensors, so ``load`` rebuilds it.

``save`` accepts any nesting of mappings, lists and tuples holding tensors, strings, numbers,
booleans and ``None`` (a model's or an optimizer's ``state_dict``), and also whole modules,
dtypes, and functions or classes named by ``module:qualname``. Tensors get path-like names
(``"state.0.exp_avg"``, ``"encoder.weight"``; a flat state dict keeps its own keys, so other
tools read them by the usual names). The rest becomes a JSON node (stored by :mod:`.document`):
a tensor is ``{"tensor": name}``, a list ``{"list": [...]}``, a tuple ``{"tuple": [...]}``,
a mapping ``{"dict": [[key, value], ...]}`` (so int keys stay ints), a scalar itself. One
tensor under several paths is stored once and comes back as one tensor.

An ``OrderedDict`` (every state dict) is a dict node whose pairs start with its first key
twice: ``[[key0, mark], [key0, value0], ...]``, ``mark`` being the node of its ``_metadata``
(a state dict's module versions, which ``load_state_dict`` reads) or null. A Python dict
cannot hold a key twice, so the mark is unambiguous, and a reader that predates it builds
the same dict (the second pair replaces the first in place): a state dict's file stays
``tensorweaver/2``. An empty one, which has no key to mark, is ``{"ordered_dict": mark}``.

Nodes beyond those (files of format ``tensorweaver/3``): a ``tw.nn.Parameter`` is
``{"parameter": [name, requires_grad]}``, a dtype ``{"dtype": "float32"}``, a function or
class ``{"global": "module:qualname"}`` (loaded only if allowed: :mod:`.allowlist`), a module
``{"module": ...}`` (:mod:`.module_state`), and a complex tensor or parameter (below).
Files of format ``tensorweaver/3.1`` may also hold any other tensor that requires grad
``{"requires_grad": name}`` (PyTorch keeps the flag) and the other values
``torch.load(weights_only=True)`` gives back: a ``tw.Size`` ``{"size": [...]}``, a set
``{"set": [...]}``, bytes and bytearrays ``{"bytes": hex}``/``{"bytearray": hex}`` (lowercase
hex digits), a complex number ``{"complex_number": [re, im]}``.

Tensors sharing memory (views of one another, ``detach()`` aliases) are stored once
(:mod:`.storages`): the root node is then ``{"shared": [views, node]}`` (format
``tensorweaver/3.2``, as is an empty OrderedDict), ``views`` listing each such tensor's name
and place in a file tensor.

An uninitialized parameter or buffer of a lazy module (before its first forward) has no
values, so the file holds no tensor for it: its node (format ``tensorweaver/3.3``) is
``{"uninitialized": [name, kind, dtype, requires_grad, persistent]}``, ``kind`` being
``"parameter"`` or ``"buffer"``; loading makes a new one on the default device (``name`` only
keeps one object referred to twice as one).

A ``tw.device`` (a checkpoint's ``"device"`` entry, a module's ``self.device``; PyTorch's
``weights_only`` load gives ``torch.device`` back) is ``{"device": spec}``, ``spec`` being
its ``str`` (format ``tensorweaver/3.4``); loading names the device without using it.

A complex tensor's node is ``{"complex": node}``: safetensors has no complex dtypes, so the
file holds its (real, imaginary) pairs as a float tensor with a last dimension of 2
(``view_as_real``'s layout, which other tools read as such), and the node says to view them as
complex again.

A sparse gradient (a ``sparse=True`` lookup's, held dense with PyTorch's sparse mark:
nn/functional/sparse.py) is ``{"sparse": [node, coalesced]}`` (format ``tensorweaver/3.5``):
the file holds its dense values, and loading marks the tensor sparse again, as
``torch.load`` gives a sparse tensor back.
"""

from __future__ import annotations

import types
from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import Any, Callable, NamedTuple, NoReturn

import numpy as np

from tensorweaver.serialization import module_state, storages, uninitialized
from tensorweaver.serialization.allowlist import name_of, resolve
from tensorweaver.serialization.document import (
    FORMAT,
    FORMAT_DEVICES,
    FORMAT_LAZY,
    FORMAT_MODULES,
    FORMAT_SHARED,
    FORMAT_SPARSE,
    FORMAT_VALUES,
    FORMATS,
)

Fail = Callable[[str], NoReturn]

_SCALARS = (str, int, float, bool, type(None))
# The safetensors header's reserved key; no tensor may take this name.
_RESERVED = "__metadata__"
# Objects stored by name (a bound method or partial is not: it holds an instance).
_NAMED = (type, types.FunctionType, types.BuiltinFunctionType)


class Flat(NamedTuple):
    """A saved object taken apart: its structure's JSON node, its tensors by name, and the
    oldest file format whose readers know every node kind it uses (``document.FORMATS``)."""

    structure: Any
    tensors: dict[str, Any]
    version: str


def flatten(obj: Any) -> Flat:
    """The JSON node of ``obj``'s structure and the tensors it refers to, by their names."""
    from tensorweaver.contract.dtypes import DType
    from tensorweaver.nn.modules.module import Module
    from tensorweaver.nn.parameter import Parameter, is_lazy
    from tensorweaver.selection import device
    from tensorweaver.tensor import Size, Tensor

    tensors: dict[str, Any] = {}
    lazy_names: dict[int, str] = {}  # id → name of each uninitialized tensor met
    name_of_tensor: dict[int, str] = {}  # id → name: a tensor shared by two paths is stored once
    module_ids: dict[int, int] = {}  # id → module id: a shared module is stored once
    needs = FORMAT  # the oldest format that has the node kinds used so far

    def uses(version: str) -> None:
        nonlocal needs
        needs = max(needs, version, key=FORMATS.index)

    def name_for(path: list[str]) -> str:
        base = ".".join(path) or "tensor"
        name, n = base, 0
        while name in tensors or name in lazy_names.values() or name == _RESERVED:
            n += 1
            name = f"{base}#{n}"
        return name

    def encode(value: Any, path: list[str]) -> Any:
        if is_lazy(value):
            uses(FORMAT_LAZY)
            return {"uninitialized": uninitialized.describe(value, lazy_names, name_for(path))}
        if isinstance(value, Tensor):
            name = name_of_tensor.get(id(value))
            if name is None:
                name = name_for(path)
                name_of_tensor[id(value)] = name
                tensors[name] = value
            node: Any = {"tensor": name}
            if isinstance(value, Parameter):
                uses(FORMAT_MODULES)
                node = {"parameter": [name, value.requires_grad]}
            elif value.requires_grad:
                uses(FORMAT_VALUES)
                node = {"requires_grad": name}
            if value.dtype.is_complex:
                uses(FORMAT_MODULES)
                node = {"complex": node}
            if value.is_sparse:
                uses(FORMAT_SPARSE)
                node = {"sparse": [node, value.is_coalesced()]}
            return node
        if isinstance(value, Module):
            uses(FORMAT_MODULES)
            if id(value) in module_ids:
                return {"module": module_ids[id(value)]}
            module_ids[id(value)] = len(module_ids)
            return {"module": module_state.describe(value, module_ids[id(value)], encode, path)}
        if isinstance(value, DType):
            uses(FORMAT_MODULES)
            return {"dtype": value.name}
        if isinstance(value, Size):
            uses(FORMAT_VALUES)
            return {"size": [int(n) for n in value]}
        if isinstance(value, device):
            uses(FORMAT_DEVICES)
            return {"device": str(value)}
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
            if not isinstance(value, OrderedDict):
                return {"dict": items}
            metadata = getattr(value, "_metadata", None)  # a state dict's module versions
            mark = None if metadata is None else encode(metadata, [*path, "_metadata"])
            if not items:
                uses(FORMAT_SHARED)
                return {"ordered_dict": mark}
            return {"dict": [[items[0][0], mark], *items]}
        if isinstance(value, (list, tuple)):
            kind = "tuple" if isinstance(value, tuple) else "list"
            return {kind: [encode(item, [*path, str(i)]) for i, item in enumerate(value)]}
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, _SCALARS):
            return value
        other = _other_value(value, lambda item, i: encode(item, [*path, str(i)]))
        if other is not None:
            uses(FORMAT_VALUES)
            return other
        if isinstance(value, _NAMED) and name_of(value) is not None:
            uses(FORMAT_MODULES)
            return {"global": name_of(value)}
        raise TypeError(
            f"tw.save: cannot store a {type(value).__name__} at {_where(path)} "
            f"({_short(value)}); a saved object holds tensors, modules, mappings, lists, tuples, "
            "str, int, float, bool, None, complex, bytes, sets, dtypes, devices, and functions or "
            "classes defined at module level (not lambdas or local ones)"
        )

    structure = encode(obj, [])
    files, views = storages.share(tensors)
    if views:
        uses(FORMAT_SHARED)
        structure = {"shared": [views, structure]}
    return Flat(structure, files, needs)


def _where(path: list[str]) -> str:
    return repr(".".join(path)) if path else "the top level"


def rebuild(node: Any, names: Collection[str], tensor: Callable[[str], Any], fail: Fail) -> Any:
    """The object whose structure is the JSON ``node``, over the file's tensor ``names``.

    ``tensor(name)`` makes a tensor, once per name. ``fail(what)`` raises for a malformed
    structure, one that refers to a tensor the file lacks, or a file tensor it never refers to.
    A class or function the allow-list lacks raises ``pickle.UnpicklingError``.
    """
    from tensorweaver.contract.dtypes import ALL
    from tensorweaver.nn.functional.sparse import sparse_gradient
    from tensorweaver.nn.parameter import Parameter

    made: dict[str, Any] = {}
    kind_of: dict[str, Any] = {}  # each name's node kind: a tensor or a parameter (with its flag)
    modules: list[Any] = []
    lazy: dict[str, Any] = {}  # the uninitialized tensors made, by name
    dtypes = {d.name: d for d in ALL}
    views: dict[str, tuple] = {}
    bases: dict[str, Any] = {}  # the storages of views, by file tensor name
    budget = storages.Budget()
    if isinstance(node, dict) and len(node) == 1 and "shared" in node:
        body = node["shared"]
        if not (isinstance(body, list) and len(body) == 2):
            fail(f"shared node {_short(body)} must be [views, node]")
        views = storages.parse(body[0], names, fail)
        node = body[1]
        names = {**dict.fromkeys(names), **dict.fromkeys(views)}  # in order, O(1) lookups

    def make(name: str) -> Any:
        if name not in views:
            return tensor(name)
        storage = views[name][0]
        if storage not in bases:
            bases[storage] = tensor(storage)
        return storages.view(bases[storage], name, views[name], budget, fail)

    def stored(name: Any, kind: Any, complex_pairs: bool = False) -> Any:
        if not isinstance(name, str) or name not in names:
            fail(f"structure refers to tensor {name!r}, which the file does not hold")
        base = kind
        if complex_pairs:
            kind = ("complex", kind)
        if name not in made:
            made[name], kind_of[name] = make(name), kind
            if complex_pairs:
                made[name] = _as_complex(made[name], name, fail)
            grad = base == "requires_grad" or (base != "tensor" and base[1])
            dtype = made[name].dtype
            if grad and not (dtype.is_floating_point or dtype.is_complex):
                fail(
                    f"tensor {name!r} of dtype {dtype.name} cannot require grad (only floating "
                    "point and complex tensors can)"
                )
            if base == "requires_grad":
                made[name].requires_grad_(True)
            elif base != "tensor":
                made[name] = Parameter(made[name], requires_grad=grad)
        elif kind_of[name] != kind:
            fail(f"structure refers to tensor {name!r} both as {kind_of[name]} and as {kind}")
        return made[name]

    def build(node: Any, complex_pairs: bool = False) -> Any:
        if isinstance(node, dict):
            if len(node) != 1:
                fail(f"structure node {_short(node)} must have exactly one key")
            ((kind, body),) = node.items()
            if kind in ("tensor", "requires_grad"):
                return stored(body, kind, complex_pairs)
            if kind == "parameter":
                if not (isinstance(body, list) and len(body) == 2 and isinstance(body[1], bool)):
                    fail(f"parameter node {_short(body)} must be [name, requires_grad]")
                return stored(body[0], ("parameter", body[1]), complex_pairs)
            if kind == "complex":
                if not (isinstance(body, dict) and len(body) == 1 and not complex_pairs):
                    fail(f"complex node {_short(body)} must hold one tensor or parameter node")
                if next(iter(body)) not in ("tensor", "requires_grad", "parameter"):
                    fail(f"complex node {_short(body)} must hold a tensor or parameter node")
                return build(body, True)
            if kind == "sparse":
                if not (
                    isinstance(body, list)
                    and len(body) == 2
                    and isinstance(body[0], dict)
                    and next(iter(body[0]), None) in ("tensor", "requires_grad", "complex")
                    and isinstance(body[1], bool)
                ):
                    fail(f"sparse node {_short(body)} must be [tensor node, coalesced]")
                values = build(body[0])
                if isinstance(values, Parameter):
                    fail(f"sparse node {_short(body)} must hold a tensor, not a parameter")
                return sparse_gradient(values, body[1])
            if kind == "uninitialized":
                return uninitialized.restore(body, lazy, names, fail)
            if kind == "dtype":
                if not (isinstance(body, str) and body in dtypes):
                    fail(f"unknown dtype {_short(body)}")
                return dtypes[body]
            if kind == "device":
                return _device_of(body, fail)
            if kind == "global":
                if not isinstance(body, str):
                    fail(f"global node {_short(body)} must be a 'module:qualname' string")
                return resolve(body)
            if kind in _OTHER_VALUES:
                return _other_value_of(kind, body, build, fail)
            if kind == "module":
                if type(body) is int:
                    if not 0 <= body < len(modules):
                        fail(f"structure refers to module {body}, which comes later or never")
                    return modules[body]
                return module_state.restore(body, modules, build, fail)
            if kind == "ordered_dict":
                return ordered([], body)
            if kind not in ("list", "tuple", "dict"):
                fail(f"unknown structure node {kind!r}")
            if not isinstance(body, list):
                fail(f"structure node {kind!r} must hold a JSON list, not {_short(body)}")
            if kind == "dict":
                if _marked(body):
                    return ordered(body[1:], body[0][1])
                return dict(pair(item) for item in body)
            items = [build(item) for item in body]
            return tuple(items) if kind == "tuple" else items
        if isinstance(node, list):
            fail(f"a bare JSON list {_short(node)} in the structure (lists are tagged)")
        return node

    def ordered(items: list, mark: Any) -> OrderedDict:
        out = OrderedDict(pair(item) for item in items)
        if mark is not None:  # any value, as torch.load restores whatever _metadata held
            out._metadata = build(mark)  # type: ignore[attr-defined]
        return out

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
    unused = [name for name in names if name not in made and name not in bases]
    if unused:
        listed = ", ".join(map(repr, unused[:3])) + (", ..." if len(unused) > 3 else "")
        fail(f"the file holds {len(unused)} tensor(s) the structure never refers to: {listed}")
    return out


def _marked(items: list) -> bool:
    """Whether a dict node's items start with the OrderedDict mark: the first key twice
    (a Python dict cannot hold a key twice), the first time with the ``_metadata`` node."""
    if len(items) < 2 or not all(isinstance(i, list) and len(i) == 2 for i in items[:2]):
        return False
    (first, _), (second, _) = items[0], items[1]
    return type(first) is type(second) and first == second


#: Node kinds of the other values ``torch.load(weights_only=True)`` accepts.
_OTHER_VALUES = ("size", "set", "bytes", "bytearray", "complex_number")


def _other_value(value: Any, encode: Callable[[Any, int], Any]) -> Any:
    """The node of a set, bytes, bytearray or complex number (``encode(item, i)`` gives a set
    item's node), or None for any other value."""
    if isinstance(value, set):
        # In an order of their own, not the set's (which strings' hashes change from run to
        # run), so that a given state is saved as the same bytes; sorted before they are
        # encoded, as modules must be met in the order of their ids.
        items = sorted(value, key=lambda item: (type(item).__name__, repr(item)))
        return {"set": [encode(item, i) for i, item in enumerate(items)]}
    if isinstance(value, (bytes, bytearray)):
        return {type(value).__name__: value.hex()}
    if isinstance(value, complex):
        return {"complex_number": [value.real, value.imag]}
    return None


def _other_value_of(kind: str, body: Any, build: Callable[[Any], Any], fail: Fail) -> Any:
    """The value of an ``_OTHER_VALUES`` node, its body checked."""
    from tensorweaver.tensor import Size

    if kind in ("bytes", "bytearray"):
        try:
            raw = bytes.fromhex(body) if isinstance(body, str) else None
        except ValueError:
            raw = None
        if raw is None or raw.hex() != body:  # what save writes, nothing looser (spaces)
            fail(f"{kind} node {_short(body)} must be a string of lowercase hex digit pairs")
        return raw if kind == "bytes" else bytearray(raw)
    if not isinstance(body, list):
        fail(f"{kind} node {_short(body)} must hold a JSON list")
    if kind == "size":
        if not all(type(n) is int for n in body):  # any int: tw.Size([-1]) is one, as torch's
            fail(f"size node {_short(body)} must hold ints")
        return Size(body)
    if kind == "complex_number":
        if len(body) != 2 or not all(type(x) in (int, float) for x in body):
            fail(f"complex_number node {_short(body)} must be [real, imag]")
        try:
            return complex(*body)
        except OverflowError:  # an int past float's range: the file was not written by tw.save
            fail(f"complex_number node {_short(body)} is out of float's range")
    items = [build(item) for item in body]
    try:
        return set(items)
    except TypeError:  # an unhashable item: the file was not written by tw.save
        fail(f"set node {_short(body)} holds an unhashable item")


def _device_of(spec: Any, fail: Fail) -> Any:
    """The ``tw.device`` a device node names, or a failure for a spec it cannot be."""
    from tensorweaver.selection import device

    if not isinstance(spec, str):
        fail(f"device node {_short(spec)} must hold a device string")
    try:
        return device(spec)
    except (ValueError, TypeError, RuntimeError) as e:  # BackendError is both of the first
        fail(f"device node {_short(spec)} names no device here: {e}")


def named_globals(node: Any) -> list[str]:
    """The class and function names a structure node refers to, each once, in order."""
    found: dict[str, None] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for kind, body in node.items():
                if kind == "global" and isinstance(body, str):
                    found[body] = None
                elif kind == "module" and isinstance(body, dict):
                    if isinstance(body.get("class"), str):
                        found[body["class"]] = None
                    walk(list(body.values()))
                else:
                    walk(body)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(node)
    return list(found)


def _as_complex(pairs: Any, name: str, fail: Fail) -> Any:
    """The complex tensor stored as (real, imaginary) pairs in the float tensor ``pairs``."""
    import tensorweaver as tw

    if pairs.dtype not in (tw.float32, tw.float64) or not pairs.shape or pairs.shape[-1] != 2:
        fail(
            f"complex tensor {name!r} must be stored as float32 or float64 pairs (a last "
            f"dimension of 2), not {pairs.dtype.name} of shape {tuple(pairs.shape)}"
        )
    return tw.view_as_complex(pairs)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
