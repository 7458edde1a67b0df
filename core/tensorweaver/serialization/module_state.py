"""A whole ``tw.nn.Module`` as a structure node, rebuilt by ``tw.load`` without running its code.

The first time ``tw.save`` meets a module it writes ``{"module": body}``; a module met again
(shared, or in a cycle) is ``{"module": id}``, so it comes back as one object. ``body``::

    {"id": 0, "class": "module:qualname", "training": true,
     "parameters": [[name, node or null], ...], "buffers": [[name, node or null, persistent]],
     "modules": [[name, node or null], ...], "attributes": [[name, node], ...]}

ids count modules in the order they are first met. ``attributes`` are the instance's other
attributes (``self.nhid = 200``), each a structure node: plain values, tensors, dtypes,
modules, and functions or classes by name. Hooks are not saved: a loaded module has none,
but for the hook a lazy module (``LazyLinear``...) shapes its parameters with on its first
forward, which a loaded module whose parameters are still uninitialized gets anew.

A compiled module (``tw.compile(module)``, an ``OptimizedModule``) has its ``_orig_mod`` as
its one child, no attributes, and one more field, its compile settings ``"compiled":
{"fullgraph": bool, "backend": str or null, "mode": str or null}``: ``tw.load`` compiles the
loaded module with them, as PyTorch's pickle rebuilds it (its caches and hooks start empty).

``tw.load`` rebuilds a module only as follows: the class comes from the allow-list
(:mod:`.allowlist`), the instance from ``object.__new__(cls)`` (no ``__new__`` or ``__init__``
of the class runs), and its ``__dict__`` is filled directly (no ``__setattr__``,
``__setstate__`` or property runs) with ``Module``'s own empty bookkeeping (hook tables, as
``Module.__init__`` makes them, taken from a plain ``Module()``) and the saved state; a
compiled module is TensorWeaver's own ``OptimizedModule``, initialised with its settings.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NoReturn

from tensorweaver.nn.modules.lazy import LAZY_HOOK, LazyModuleMixin, arm_initialize_hook
from tensorweaver.serialization.allowlist import name_of, resolve

Fail = Callable[[str], NoReturn]
Encode = Callable[[Any, list[str]], Any]
Build = Callable[[Any], Any]

_FIELDS = frozenset(("id", "class", "training", "parameters", "buffers", "modules", "attributes"))


def describe(module: Any, ident: int, encode: Encode, path: list[str]) -> dict[str, Any]:
    """The body of ``module``'s node; ``encode(value, path)`` makes each value's node."""
    where = repr(".".join(path)) if path else "the top level"
    cls = type(module)
    name = name_of(cls)
    if name is None:
        raise TypeError(
            f"tw.save: cannot store the module at {where}: its class {cls.__qualname__!r} is "
            "defined inside a function, so tw.load could not find it by name; define it at "
            "module level"
        )
    if any(getattr(c, "__slots__", ()) for c in cls.__mro__):
        raise TypeError(
            f"tw.save: cannot store the module at {where}: its class {cls.__qualname__!r} keeps "
            "state in __slots__, which tw.save does not read; drop __slots__"
        )
    internal = _bookkeeping()
    compiled = _compile_settings(module, where)
    if compiled is not None:  # (its forward and call: the settings rebuild them)
        internal = {**internal, **dict.fromkeys(type(module)._own)}
    if isinstance(module, LazyModuleMixin):  # its first forward's hook: re-armed on load
        internal = {**internal, LAZY_HOOK: None}
    transient = module._non_persistent_buffers_set

    def node(value: Any, key: str) -> Any:
        return None if value is None else encode(value, [*path, key])

    body = {
        "id": ident,
        "class": name,
        "training": bool(module.training),
        "parameters": [[k, node(v, k)] for k, v in module._parameters.items()],
        "buffers": [[k, node(v, k), k not in transient] for k, v in module._buffers.items()],
        "modules": [[k, node(v, k)] for k, v in module._modules.items()],
        "attributes": [
            [k, encode(v, [*path, k])] for k, v in vars(module).items() if k not in internal
        ],
    }
    if compiled is not None:
        body["compiled"] = compiled
    return body


def _compile_settings(module: Any, where: str) -> dict[str, Any] | None:
    """The ``"compiled"`` field of a compiled module (None for another module)."""
    from tensorweaver.compiler.compiled import CompiledFunction, OptimizedModule

    if not isinstance(module, OptimizedModule):
        return None
    call = vars(module).get("forward")
    if type(module) is not OptimizedModule or not isinstance(call, CompiledFunction):
        raise TypeError(
            f"tw.save: cannot store the compiled module at {where}: it is a subclass of "
            "OptimizedModule or its forward was replaced, which tw.save does not store; save "
            "its _orig_mod (tw.compile it again after tw.load)"
        )
    return {"fullgraph": call._fullgraph, "backend": call._backend, "mode": call._mode}


def restore(body: Any, made: list[Any], build: Build, fail: Fail) -> Any:
    """The module of ``body``, appended to ``made`` (the modules rebuilt so far, by id) before
    its children are built; ``build(node)`` makes each value."""
    from tensorweaver.compiler.compiled import OptimizedModule
    from tensorweaver.nn.modules.module import Module
    from tensorweaver.nn.parameter import Parameter
    from tensorweaver.tensor import Tensor

    if not (isinstance(body, dict) and set(body) in (_FIELDS, _FIELDS | {"compiled"})):
        fail(f"module node must have the fields {sorted(_FIELDS)} (and 'compiled')")
    if type(body["id"]) is not int or body["id"] != len(made):
        fail(f"module id {body['id']!r} out of sequence (expected {len(made)})")
    if not isinstance(body["class"], str):
        fail(f"module class {body['class']!r} must be a string")
    if not isinstance(body["training"], bool):
        fail(f"module training flag {body['training']!r} must be a boolean")
    cls = resolve(body["class"])
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        fail(f"{body['class']!r} names {cls!r}, which is not a tw.nn.Module subclass")
    if ("compiled" in body) != (cls is OptimizedModule):
        fail(f"module class {body['class']!r}: only an OptimizedModule has compile settings")
    module = object.__new__(cls)
    made.append(module)
    # Fresh empty tables, as Module.__init__ makes them.
    state = {k: type(v)() if isinstance(v, (dict, set)) else v for k, v in _bookkeeping().items()}
    state["training"] = body["training"]
    taken: set[str] = set()

    def entries(field: str, kind: type, width: int) -> list[tuple[str, Any, list]]:
        rows = body[field]
        if not isinstance(rows, list):
            fail(f"module field {field!r} must be a list")
        out = []
        for row in rows:
            if not (isinstance(row, list) and len(row) == width):
                fail(f"module {field} entry {row!r} must be a list of {width}")
            name = row[0]
            if not isinstance(name, str) or not name or "." in name or name in taken:
                fail(f"module {field} name {name!r} is not a unique name without dots")
            taken.add(name)
            value = None if row[1] is None else build(row[1])
            if value is not None and not isinstance(value, kind):
                fail(f"module {field} entry {name!r} is a {type(value).__name__}")
            out.append((name, value, row[2:]))
        return out

    for name, value, _ in entries("parameters", Parameter, 2):
        state["_parameters"][name] = value
    for name, value, (persistent,) in entries("buffers", Tensor, 3):
        if not isinstance(persistent, bool):
            fail(f"buffer {name!r}: persistent flag {persistent!r} must be a boolean")
        state["_buffers"][name] = value
        if not persistent:
            state["_non_persistent_buffers_set"].add(name)
    for name, value, _ in entries("modules", Module, 2):
        state["_modules"][name] = value
    attributes = body["attributes"]
    if not isinstance(attributes, list):
        fail("module field 'attributes' must be a list")
    if "compiled" in body:
        return _compiled(module, state, attributes, body["compiled"], fail)
    for row in attributes:
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)):
            fail(f"module attribute entry {row!r} must be a [name, value] pair")
        if row[0] in state or row[0] in taken:
            fail(f"module attribute {row[0]!r} clashes with the module's own state")
        taken.add(row[0])
        state[row[0]] = build(row[1])
    vars(module).update(state)
    if isinstance(module, LazyModuleMixin) and LazyModuleMixin.has_uninitialized_params(module):
        arm_initialize_hook(module)  # TensorWeaver's own code, not the class's
    return module


def _compiled(module: Any, state: dict, attributes: Any, settings: Any, fail: Fail) -> Any:
    """``module`` (a new ``OptimizedModule``) initialised as the compiled ``_orig_mod`` that
    ``state`` holds alone, with the compile ``settings``."""
    from tensorweaver import compiler  # (tw.compile: the builtin compile is never called)

    fields = {"fullgraph", "backend", "mode"}
    if not (isinstance(settings, dict) and set(settings) == fields):
        fail(f"compile settings {settings!r} must have the fields {sorted(fields)}")
    fullgraph, backend, mode = (settings[k] for k in ("fullgraph", "backend", "mode"))
    if not isinstance(fullgraph, bool):
        fail(f"compile settings {settings!r}: fullgraph must be a boolean")
    try:  # (tw.compile without a model checks the settings and compiles nothing)
        compiler.compile(fullgraph=fullgraph, backend=backend, mode=mode)
    except ValueError as e:
        fail(f"compile settings {settings!r}: {e}")
    children = state["_modules"]
    if (
        state["_parameters"]
        or state["_buffers"]
        or attributes
        or list(children) != ["_orig_mod"]
        or children["_orig_mod"] is None
    ):
        fail("a compiled module must hold its _orig_mod alone (no parameters, buffers, attributes)")
    module.__init__(children["_orig_mod"], fullgraph, backend, mode)
    return module


@functools.lru_cache(maxsize=1)
def _bookkeeping() -> dict[str, Any]:
    """``Module.__init__``'s attributes (``training`` and empty tables), from a plain Module:
    what every module holds besides its own state."""
    from tensorweaver.nn.modules.module import Module

    return dict(vars(Module()))
