"""What a compiled step reads and writes, and the guards a replay checks.

A step's tensors are reached from *roots*: its arguments (and the attributes of an object
passed in, like a compiled method's ``self``), the objects its code names (closure cells,
globals its code uses, a bound method's ``self`` and that object's attributes), and, for a
compiled module, the module. From modules come parameters and buffers, from optimizers
their parameters and per-parameter state. Each tensor the step can read or rebind has a
*location*: a Python expression (``H3._grad``, ``H5['exp_avg']``, ``args[0]``) that the
generated replay reads and assigns.

The *signature* is everything the trace specialised on; a replay runs only under an equal
one: grad mode, default dtype, autocast dtype and default device; each argument's type,
shape, dtype, device and ``requires_grad`` (Python scalars by value) and which arguments
share an array; the class, identity and training flag of each module in each module tree,
and the identity and metadata of its parameters and buffers (and of their gradients); each
optimizer's groups and each parameter's state entry (the dicts themselves), their
hyperparameters and state (Python numbers by value, except the floats :mod:`.symbolic`
recomputes); the Python numbers the code reads from its roots (a global, a closure
variable, an attribute of a bound method's object or of an object passed in); and the
values read further on (:class:`ValuesRead`: through a named container or plain object, a
default argument, the globals and closures of the functions it calls, of modules' forwards
and hooks and of tensor hooks, a custom optimizer's attributes), numbers by value and
anything else by identity, read afresh on each call. Floats count with their sign.
"""

from __future__ import annotations

import dis
import functools
import inspect
import math
import sys
from collections import OrderedDict
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any, Callable

import numpy as np

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.hooks import GRAD_HOOKS, POST_ACCUMULATE_HOOKS
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS
from tensorweaver.compiler.symbolic import lifted_setting
from tensorweaver.nn.modules import module as module_globals
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import UninitializedTensorMixin
from tensorweaver.ops.creation import get_default_dtype
from tensorweaver.optim.hooks import GLOBAL_POST_HOOKS, GLOBAL_PRE_HOOKS
from tensorweaver.optim.lr_scheduler import LRScheduler
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import current_backend
from tensorweaver.tensor import Tensor

SCALARS = (bool, int, float, complex, str, type(None))
#: The metadata of an uninitialized tensor (a lazy module's parameter before its forward).
UNINITIALIZED = "uninitialized"


def uninitialized(modules: list[Module]) -> bool:
    """Whether a module of the trees ``modules`` holds an uninitialized parameter or buffer
    (a lazy module before its first forward): that call runs eagerly (PyTorch runs it; the
    forward materializes them, the next call traces)."""
    for root in modules:
        for m in root.modules():
            for table in (m._parameters, m._buffers):
                for v in table.values():
                    if isinstance(v, UninitializedTensorMixin):
                        return True
    return False


CONTAINERS = (tuple, list, dict)


def _meta(t: Any) -> Any:
    if t is None:
        return None
    if isinstance(t, UninitializedTensorMixin):
        # (a lazy module's before its first forward: no shape yet; the call runs eagerly)
        return (UNINITIALIZED, t.dtype, t.requires_grad)
    return (t.shape, t.dtype, id(t.backend), t.requires_grad)


def tensor_hooks(t: Tensor) -> tuple:
    """The gradient hooks registered on leaf ``t`` (a step traced without them runs other
    code than one with them)."""
    key = id(t)
    grad, after = GRAD_HOOKS.get(key), POST_ACCUMULATE_HOOKS.get(key)
    if grad is None and after is None:
        return ()
    return (*(grad or {}).values(), None, *(after or {}).values())


def module_numbers(m: Module) -> tuple:
    """The Python numbers a module holds as attributes (a Dropout's ``p``, a LeakyReLU's
    slope): its forward may have baked them into the trace. And its plain tensor
    attributes (neither parameters nor buffers: the ``weight`` that pruning or
    ``weight_norm``'s hook computes) by metadata: a replay reads and rebinds them where
    they are (:meth:`StepState.locations`), so an attribute that appears, goes, or changes
    shape, dtype or ``requires_grad`` traces again."""
    return tuple(
        (name, number_sig(v) if type(v) in SCALARS else _meta(v))
        for name, v in vars(m).items()
        if (type(v) in SCALARS and name != "training") or isinstance(v, Tensor)
    )


def attribute_locations(modules: list[Module], out: list[tuple[Any, str]]) -> None:
    """Add ``(module, ".__dict__['name']")`` for each plain tensor attribute of each module
    of the trees ``modules``: a step that rebinds one (a forward pre-hook's ``setattr``)
    has its replay rebind it to the tensor the graph computes, as eagerly."""
    seen: set[int] = set()
    for root in modules:
        for m in root.modules():
            if id(m) in seen:
                continue
            seen.add(id(m))
            for name, v in vars(m).items():
                if isinstance(v, Tensor):
                    out.append((m, f".__dict__[{name!r}]"))


#: A module's hook tables: a hook added or removed after tracing changes what a step runs.
MODULE_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
#: The tables of hooks every module's call runs (nn/modules/module.py, by table name).
GLOBAL_MODULE_HOOKS = tuple(f"_global{table}" for table in MODULE_HOOKS)


def _tensor_sig(t: Tensor) -> tuple:
    return (id(t), _meta(t), _meta(t._grad), tensor_hooks(t))


#: id(module) -> the names of its buffers that a traced step rebound (``self.running =
#: self.running * 0.9 + ...``). Such a buffer is read and rebound by the replay where the
#: module holds it (:meth:`StepState.locations`), and the signature and guards take it by
#: metadata, not identity, so the buffer the replay leaves does not trace again.
REBOUND_BUFFERS: dict[int, set[str]] = {}


def loose_buffers(modules: list[Module]) -> set[int]:
    """The ids of the buffers of the trees ``modules`` held in a slot of
    :data:`REBOUND_BUFFERS` (empty, at no cost, while no step rebound a buffer)."""
    if not REBOUND_BUFFERS:
        return set()
    found = set()
    for root in modules:
        for m in root.modules():
            for name in REBOUND_BUFFERS.get(id(m), ()):
                b = m._buffers.get(name)
                if b is not None:
                    found.add(id(b))
    return found


def buffers_of(modules: list[Module]) -> list[tuple[Module, dict]]:
    """Each module of the trees ``modules`` with a copy of its buffer dict (see
    :func:`note_rebound_buffers`)."""
    seen: dict[int, tuple[Module, dict]] = {}
    for root in modules:
        for m in root.modules():
            if id(m) not in seen and m._buffers:
                seen[id(m)] = (m, dict(m._buffers))
    return list(seen.values())


def note_rebound_buffers(before: list[tuple[Module, dict]]) -> bool:
    """Add to :data:`REBOUND_BUFFERS` the buffers the step rebound to another tensor since
    ``before`` (:func:`buffers_of`); whether it found one not there yet."""
    added = False
    for m, then in before:
        now = m._buffers
        for name, old in then.items():
            new = now.get(name)
            if isinstance(old, Tensor) and isinstance(new, Tensor) and new is not old:
                slots = REBOUND_BUFFERS.setdefault(id(m), set())
                added = added or name not in slots
                slots.add(name)
    return added


def freeze(value: Any, arrays: list | None = None, grads: bool = True) -> Any:
    """A hashable picture of an argument: what a replay may assume stays the same.

    ``arrays`` collects the id of each tensor's array (and host array) met, in order;
    ``grads=False`` leaves the tensors' gradients out.
    """
    cls = type(value)
    if cls is Tensor or isinstance(value, Tensor):  # the common case first
        if arrays is not None:
            arrays.append(id(value.native))
        grad = value._grad
        return (
            value.shape,
            value.dtype,
            id(value.backend),
            value.requires_grad,
            None if grad is None or not grads else _meta(grad),
            # (a hook registered on an argument after a trace changes what backward runs)
            tensor_hooks(value),
        )
    if cls in SCALARS:
        return number_sig(value)
    if cls in (tuple, list):
        return (cls, tuple(freeze(v, arrays, grads) for v in value))
    if cls is dict:
        return (dict, tuple((k, freeze(v, arrays, grads)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        if arrays is not None:
            arrays.append(id(value))
        return ("A", value.shape, value.dtype.str)
    return ("O", id(value))


def number_sig(value: Any) -> tuple:
    """A Python scalar's part of a signature: its type and value, and for floats the signs
    (0.0 == -0.0, but x * 0.0 and x * -0.0 differ)."""
    cls = type(value)
    if cls is float:
        return (cls, value, math.copysign(1.0, value))
    if cls is complex:
        return (cls, value, math.copysign(1.0, value.real), math.copysign(1.0, value.imag))
    return (cls, value)


def sharing(arrays: list) -> tuple | None:
    """Which arguments hold the same array (the graph reads such an input once), or None."""
    if len(set(arrays)) == len(arrays):
        return None
    return tuple(arrays.index(a) for a in arrays)


def referenced(fn: Callable) -> list[Any]:
    """The objects ``fn``'s code can reach without arguments."""
    found: list[Any] = []
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        found.append(owner)
        found.extend(getattr(owner, "__dict__", {}).values())
    if isinstance(fn, Module):
        found.append(fn)
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is not None:
        found.extend(cell_contents(getattr(func, "__closure__", None)))
        names = func.__globals__
        found.extend(names[n] for n in code.co_names if n in names)
    return found


#: The walk of :class:`ValuesRead` follows at most ``_DEPTH`` steps from a root and reads
#: at most ``_MOST`` values in all (a bound on the cost of a call that computes its
#: signature): a step whose walk would read more runs eagerly (:attr:`ValuesRead.complete`).
#: Of a dict or object with more than ``_WIDTH`` entries, the walk looks up the names the
#: walked code uses rather than going through its entries.
_DEPTH = 4
_WIDTH = 64
_MOST = 256
#: Packages whose functions the walk does not enter (their module-level values are the
#: library's own); a function they wrap (``functools.wraps``) is entered instead.
_LIBRARIES = frozenset(("tensorweaver", "torch", "numpy", *sys.stdlib_module_names))
#: Objects of the libraries' classes that the walk enters (they hold a user's settings).
_HOLDERS = frozenset(("types.SimpleNamespace", "argparse.Namespace"))
#: A module class's forward -> whether the walk enters it (a function of the user's).
_FORWARDS: dict[Any, bool] = {}
#: A module class -> the attributes of its objects that the walk leaves unread: none of a
#: class of the user's, else those tw's code for it stores (one of another name is the
#: user's: ``lin.cfg = {...}``).
_MODULE_OWN: dict[type, frozenset[str]] = {}
#: An optimizer's bookkeeping (its groups and state are the signature's already).
_OPTIMIZER_KEYS = frozenset(("defaults", "state", "param_groups", "_in_step_hooks"))
#: An optimizer's tables of step hooks (optim/hooks.py ``with_step_hooks`` runs them).
_STEP_HOOKS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks")
#: What a read finds where nothing is (a deleted attribute, key or cell).
ABSENT = object()


class ValuesRead:
    """The Python values a step may read other than through its arguments, modules'
    parameters and optimizers' groups: numbers, tensors and objects held by the
    containers, plain objects and functions its roots reach (a config dict or object, a
    default argument, a global read by a helper it calls, by a module's forward or hook,
    by a tensor hook or a custom optimizer's ``step``, a custom optimizer's attribute).

    ``reads`` lists ``(holder, how, key, value)``: reading ``holder`` as ``how`` says
    (``"item"``: ``holder.get(key)``; ``"index"``: ``holder[key]``, after a ``"len"``
    read of ``holder``; ``"attr"``: its ``__dict__``'s ``key``; ``"slot"``: its
    ``__slots__`` attribute ``key``; ``"cell"``: a closure cell's contents; ``"getattr"``:
    the attribute ``key`` of a function) gave ``value``.
    Numbers count by value (a tuple of them too), anything else by identity; ``tensors``
    are those met (the step may read them: they are guarded and located by identity, so
    one the caller rebinds traces again). Of a dict or a plain object, only the entries the
    walked code names are read (all where some code reads entries it does not name:
    :func:`code_names`; a dict's all where some code reads a container that may be a dict
    at a key it does not spell: :func:`unspelled_keys`); of a user's module or class (a
    config module, a class of settings, a plain object's class), those it names
    (:meth:`_namespace_entries`); of an ``nn.Module`` in the module trees, the attributes it
    names that hold neither numbers nor tensors, of one of tw's classes those the user set
    (:meth:`_module_entries`). Other modules, optimizers and arrays met are not entered;
    tuples, bound methods and partials are entered without a read (they never change).
    """

    def __init__(self, known: set[int], grown: dict[int, tuple[Any, tuple]]) -> None:
        self._grown = grown  # (:attr:`StepState.grown`)
        self.reads: list[tuple[Any, str, Any, Any]] = []
        self.tensors: list[Tensor] = []
        self._known = known  # ids of the tensors the state has already
        self._entered: set[int] = set()
        # The names the walked code may read an attribute by, and the string keys it may
        # read a dict at (:func:`code_names`), and the holders whose entries it may read:
        # ``(holder, how, depth, keys read)``, read when the walk is done (:meth:`settle`:
        # a caller's counter beside a setting the step reads is not the step's).
        self._names: set[str] = set()
        self._keys: set[str] = set()
        # What the walked code reads without naming it (:func:`code_names`): "items" (a
        # dict's entries), "attrs" (attributes: then a dict's entries too).
        self._wide: set[str] = set()
        # True where the walked code may read a dict at a key it does not spell
        # (:func:`unspelled_keys`): then a dict's entries are read at every key.
        self._any_key = False
        self._holders: list[tuple[Any, str, int, set]] = []
        # False where a value the step may read is not read (past ``_MOST``, or in a wide
        # holder whose code reads entries it does not name): no guard can cover it.
        self.complete = True

    def entered(self, obj: Any) -> None:
        """Leave ``obj`` out of the walk (its values are roots already)."""
        self._entered.add(id(obj))

    def read(self, holder: Any, how: str, key: Any, value: Any, depth: int) -> None:
        """Note that ``holder`` gave ``value`` (see the class), and walk what it holds."""
        cls = type(value)
        if issubclass(cls, (type, ModuleType)):
            # (classes and modules, the globals a helper names most, by their entries alone:
            # a user's config module or class of settings)
            self.enter(value, depth - 1)
            return
        if len(self.reads) >= _MOST:
            self.complete = False
            return
        self.reads.append((holder, how, key, value))
        if cls not in SCALARS and not scalar_tuple(value):
            self.enter(value, depth - 1)

    def enter(self, obj: Any, depth: int, owners: tuple | list = ()) -> None:
        """Walk the values ``obj`` holds (the caller checks ``obj``'s identity); ``owners``:
        the objects a function ``obj`` is called on (its first argument)."""
        cls = type(obj)  # (not isinstance: some objects' __class__ is a property)
        if issubclass(cls, (type, ModuleType)):
            if depth > 0 and id(obj) not in self._entered and _namespace(obj):
                self._entered.add(id(obj))
                self._holders.append((obj, "attr", depth, set()))
                for base in obj.__mro__[1:] if cls is type else ():  # (inherited settings)
                    self.enter(base, depth)
            return
        if issubclass(cls, Tensor):
            if id(obj) not in self._known:
                self._known.add(id(obj))
                self.tensors.append(obj)
            return
        if (
            depth <= 0
            or cls in SCALARS
            or id(obj) in self._entered
            or issubclass(cls, (Module, Optimizer, LRScheduler, np.ndarray, type, ModuleType))
        ):
            return
        self._entered.add(id(obj))
        if cls is dict or cls is list:
            grown = self._grown.get(id(obj))
            if grown is not None:
                self.reads += [(obj, "grown", None, sig) for sig in grown[1]]
                if cls is dict:  # (the values at keys the code names: the caller's too)
                    self._holders.append((obj, "grown", depth, set()))
                return
            self.reads.append((obj, "len", None, len(obj)))
            if cls is dict:
                self._holders.append((obj, "item", depth, set()))
            else:
                for key, value in enumerate(obj):
                    self.read(obj, "index", key, value, depth)
        elif cls is tuple:
            for value in obj:
                self.enter(value, depth - 1)
        elif cls is FunctionType:
            self.function(obj, depth, owners=owners)
        elif cls is MethodType:
            self.enter(obj.__self__, depth)
            self.enter(obj.__func__, depth, (obj.__self__,))
        elif cls is functools.partial:
            self.enter(obj.func, depth)
            self.enter(obj.args, depth)
            self.keywords(obj.keywords, depth)
        elif _users(cls):
            if _slot_names(cls):
                self._holders.append((obj, "slot", depth, set()))
            try:
                attrs = vars(obj)
            except Exception:  # no attributes (or a proxy whose referent is gone)
                return
            if type(attrs) is dict:
                self._holders.append((obj, "attr", depth, set()))
            self.enter(cls, depth)  # (its class's attributes read through it)

    def keywords(self, values: dict, depth: int) -> None:
        """Walk all the items of a dict whose keys no code names as attributes or keys (of
        keyword arguments, parameters' names; of a table of hooks, their handles' ids)."""
        if id(values) in self._entered:
            return
        self._entered.add(id(values))
        self.reads.append((values, "len", None, len(values)))
        for key, value in list(values.items()):
            self.read(values, "item", key, value, depth)

    def settle(self) -> None:
        """Read the entries of the holders met that the walked code may name, until the
        functions those entries lead to name no more."""
        met = None
        while met != (
            met := (
                len(self._holders),
                len(self._names),
                len(self._keys),
                len(self._wide),
                self._any_key,
            )
        ):
            for holder, how, depth, seen in list(self._holders):
                for key, value in self._named_entries(holder, how):
                    if key not in seen:
                        seen.add(key)
                        self.read(holder, "item" if how == "grown" else how, key, value, depth)

    def _named_entries(self, holder: Any, how: str) -> list[tuple[Any, Any]]:
        """The entries of ``holder`` (read as ``how``) that the walked code may read: those
        it names, and any other key than a string (all, where it reads entries it does not
        name); of a dict the step grew (``"grown"``) or a holder of more than ``_WIDTH``
        entries (an argparse Namespace of many options), the string keys it names, looked
        up (a wide one whose other entries it may read: :attr:`complete` is False)."""
        if how == "attr" and isinstance(holder, (type, ModuleType)):
            return self._namespace_entries(holder)
        if how == "attr" and isinstance(holder, Module):
            return self._module_entries(holder)
        entries = vars(holder) if how == "attr" else _slots_of(holder) if how == "slot" else holder
        dicts = how in ("item", "grown")
        unnamed = self._wide if dicts else self._wide & {"attrs"}
        named = self._keys if dicts else self._names
        names = None if unnamed or (how == "item" and self._any_key) else named
        if how != "grown" and len(entries) <= _WIDTH:
            return [
                (key, value)
                for key, value in list(entries.items())
                if type(key) is not str or names is None or key in names
            ]
        if how != "grown" and (
            names is None or (how == "item" and not all(type(k) is str for k in entries))
        ):
            self.complete = False
        return [] if names is None else [(k, entries[k]) for k in sorted(names & entries.keys())]

    def _namespace_entries(self, holder: Any) -> list[tuple[Any, Any]]:
        """The entries of a user's module or class ``holder`` that the walked code may read:
        those it names, looked up; where it reads entries it does not name, all but the
        functions, classes and modules it defines or imports and the dunder names (past
        ``_WIDTH`` of them, :attr:`complete` is False)."""
        entries = vars(holder)
        if "attrs" not in self._wide:
            return [(k, entries[k]) for k in sorted(self._names & entries.keys())]
        data = [
            (k, v)
            for k, v in list(entries.items())
            if not (k.startswith("__") or isinstance(v, _DEFINED))
        ]
        if len(data) > _WIDTH:
            self.complete = False
            return []
        return data

    def _module_entries(self, module: Module) -> list[tuple[Any, Any]]:
        """The attributes of ``module`` that the walked code may read (those it names; all
        where it reads attributes it does not name: past ``_WIDTH``, :attr:`complete` is
        False) but for those the module checks cover: its own bookkeeping, its Python
        numbers and tensors (:func:`module_numbers`, :func:`attribute_locations`), and those
        tw's code for its class stores (:data:`_MODULE_OWN`)."""
        entries = module.__dict__
        keys = entries.keys() if "attrs" in self._wide else self._names & entries.keys()
        data = [
            (k, entries[k])
            for k in sorted(keys - _module_bookkeeping() - _MODULE_OWN[type(module)])
            if type(entries[k]) not in SCALARS and not isinstance(entries[k], Tensor)
        ]
        if len(data) > _WIDTH:
            self.complete = False
            return []
        return data

    def function(
        self,
        func: FunctionType,
        depth: int,
        own: bool = False,
        arguments: dict[str, Any] | None = None,
        owners: tuple | list = (),
    ) -> None:
        """Walk what ``func`` reads: its code, closure cells, the globals its code names,
        its defaults. ``own``: the compiled function itself, whose cells and directly
        named globals the guards check already (:func:`referenced`), called with
        ``arguments`` (by parameter name); ``owners``: the objects it is called on (its
        first argument: a module's forward, a bound method's function)."""
        if not _users(func):  # (a function's __module__ names where it was defined)
            wrapped = getattr(func, "__wrapped__", None)
            if wrapped is not None:
                self.enter(wrapped, depth)
            return
        code = func.__code__
        names_read, keys_read, wide = code_names(code)
        self._names |= names_read
        self._keys |= keys_read
        self._wide |= wide
        self._any_key = self._any_key or any(
            not isinstance(value, _NOT_DICTS)
            for value in _containers(func, arguments or {}, owners)
        )
        if not own:
            self.reads.append((func, "getattr", "__code__", code))
            for cell in func.__closure__ or ():
                value = cell_value(cell)
                if value is not ABSENT:
                    self.read(cell, "cell", None, value, depth)
        names = func.__globals__
        direct = code.co_names if own else ()
        for name in global_names(code):
            if name in names and name not in direct:
                self.read(names, "item", name, names[name], depth)
        if func.__defaults__ is not None:
            self.read(func, "getattr", "__defaults__", func.__defaults__, depth)
        if func.__kwdefaults__ is not None:
            self.read(func, "getattr", "__kwdefaults__", func.__kwdefaults__, 0)
            self.keywords(func.__kwdefaults__, depth - 1)

    def modules(self, modules: list[Module]) -> None:
        """Walk the hooks of the module trees ``modules`` (every module's too: one added
        traces again) and the ``forward`` of each class of the user's (the hooks' identity
        is the signature's already)."""
        for table in GLOBAL_MODULE_HOOKS if modules else ():
            self.keywords(getattr(module_globals, table), _DEPTH)
        stack = list(modules)
        forwards: dict[int, tuple[Any, list[Module]]] = {}
        while stack:  # (the trees' modules; cheaper than Module.modules())
            m = stack.pop()
            if m is None or id(m) in self._entered:
                continue
            self._entered.add(id(m))
            cls = type(m)
            own = _MODULE_OWN.get(cls)
            if own is None:
                own = _MODULE_OWN[cls] = _module_own_names(cls)
            attrs = m.__dict__
            if not own.issuperset(attrs):  # (a dict or tuple its forward or the step reads)
                self._holders.append((m, "attr", _DEPTH, set()))
            for table in MODULE_HOOKS:
                hooks = attrs.get(table)
                if hooks:
                    for hook in hooks.values():
                        self.enter(hook, _DEPTH)
            self.enter(type(m), _DEPTH)  # (a user subclass's class attributes it names)
            forward = getattr(type(m), "forward", None)
            if forward is not None and _FORWARDS.get(forward, True):
                forwards.setdefault(id(forward), (forward, []))[1].append(m)
            stack += attrs["_modules"].values()
        for forward, owners in forwards.values():  # (each once, with the modules it runs on)
            self.enter(forward, _DEPTH, owners)
            _FORWARDS[forward] = type(forward) is FunctionType and _users(forward)

    def optimizers(self, optimizers: list[Optimizer]) -> None:
        """Walk the attributes and ``step`` of each optimizer of a class of the user's, the
        attributes the user set on one of tw's (its own numbers are in its groups), and the
        step hooks of each (its own and every optimizer's: one added traces again)."""
        for table in (GLOBAL_PRE_HOOKS, GLOBAL_POST_HOOKS) if optimizers else ():
            self.keywords(table, _DEPTH)
        for opt in optimizers:
            for name in _STEP_HOOKS:
                table = vars(opt).get(name)
                if type(table) is OrderedDict:
                    self.keywords(table, _DEPTH)
            cls = type(opt)
            if not _users(cls):
                own = _stored_names(cls)
                for name, value in list(vars(opt).items()):
                    if name not in own and name not in _OPTIMIZER_KEYS:
                        self.read(opt, "attr", name, value, _DEPTH)
                continue
            for name, value in list(vars(opt).items()):
                if name not in _OPTIMIZER_KEYS and not name.startswith("_optimizer_"):
                    self.read(opt, "attr", name, value, _DEPTH)
            self.enter(getattr(cls, "step", None), _DEPTH)

    def tensor_hooks(self, tensors: list[Tensor]) -> None:
        """Walk the gradient hooks of ``tensors`` (their identity is the signature's)."""
        for t in tensors:
            for hook in tensor_hooks(t):
                self.enter(hook, _DEPTH)


@functools.lru_cache(maxsize=1)
def _module_bookkeeping() -> frozenset[str]:
    """The attributes every module has (its parameters, buffers, submodules, hooks, ...)."""
    return frozenset(vars(Module()))


@functools.lru_cache(maxsize=256)
def _slot_names(cls: type) -> tuple[str, ...]:
    """The ``__slots__`` attributes of ``cls`` and its bases (a slotted dataclass's
    fields), but private (mangled) ones."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        names += [slots] if type(slots) is str else list(slots)
    return tuple(n for n in dict.fromkeys(names) if not n.startswith("__"))


def _slots_of(obj: Any) -> dict[str, Any]:
    """The ``__slots__`` attributes ``obj`` has set, by name."""
    found = {}
    for name in _slot_names(type(obj)):
        value = getattr(obj, name, ABSENT)
        if value is not ABSENT:
            found[name] = value
    return found


def _module_own_names(cls: type) -> frozenset[str]:
    """:data:`_MODULE_OWN`'s entry for the module class ``cls``: the attributes tw's class
    stores (:func:`_stored_names`) and every module's bookkeeping."""
    if _users(cls):
        return frozenset()
    return _stored_names(cls) | _module_bookkeeping()


@functools.lru_cache(maxsize=256)
def _stored_names(cls: type) -> frozenset[str]:
    """The attributes the methods of tw's class ``cls`` (and its bases) store (``self.x =
    ...``): its own, not every name they spell (a user's ``lin.values = {...}`` or
    ``opt.values = {...}`` is not tw's because tw's code calls ``dict.values``)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        for value in vars(klass).values():
            # (a class or static method's stores are not onto an instance)
            for func in (value.fget, value.fset) if isinstance(value, property) else (value,):
                code = getattr(func, "__code__", None)
                if type(func) is FunctionType and code.co_argcount:
                    names |= _stored_attributes(code, code.co_varnames[0])
    return frozenset(names)


def _stored_attributes(code: CodeType, owner: str) -> set[str]:
    """The attribute names ``code`` and the code nested in it store onto the variable
    ``owner`` (``owner.x = ...`` and ``owner.x += ...``), not onto other objects (a
    method's ``p.grad = None`` does not make ``grad`` the class's attribute)."""
    names = set()
    loads: dict[str, str | None] = {}  # attribute loaded -> the variable it was loaded from
    previous: list[Any] = [None, None]
    for i in dis.get_instructions(code):
        if i.opname == "LOAD_ATTR" and previous[-1] is not None:
            # ``owner.x += v`` loads ``x`` from a copy of ``owner`` (COPY 1 / DUP_TOP)
            if previous[-1].opname in ("COPY", "DUP_TOP") and previous[-2] is not None:
                loads[i.argval] = _variable_loaded(previous[-2])
        elif i.opname == "STORE_ATTR" and previous[-1] is not None:
            last = previous[-1]
            if last.opname in ("SWAP", "ROT_TWO"):  # (the augmented form above)
                target = loads.get(i.argval)
            else:
                target = _variable_loaded(last)
            if target == owner:
                names.add(i.argval)
        previous = [previous[-1], i]
    for const in code.co_consts:
        if type(const) is CodeType and owner in const.co_freevars:
            names |= _stored_attributes(const, owner)
    return names


def _variable_loaded(instruction: dis.Instruction) -> str | None:
    """The local variable or cell whose value ``instruction`` leaves on top of the stack
    (the second of a pair a newer Python loads in one instruction), else None."""
    if not instruction.opname.startswith(("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")):
        return None
    name = instruction.argval
    return name[-1] if type(name) is tuple else name


def _users(defined: Any) -> bool:
    """Whether the walk enters a function, or the attributes of the objects of a class,
    ``defined``: the user's, not a library's (a library object's attributes are its own
    bookkeeping, such as a logger's caches), or a namespace."""
    module = defined.__module__
    if not isinstance(module, str) or module.partition(".")[0] not in _LIBRARIES:
        return True
    return f"{module}.{defined.__qualname__}" in _HOLDERS


#: What a module or class defines or imports rather than holds as a setting.
_DEFINED = (FunctionType, type, ModuleType, classmethod, staticmethod, property)


def _namespace(obj: Any) -> bool:
    """Whether the walk reads the entries of module or class ``obj``: a user's module, or
    a class of the user's (a plain one or an ``nn.Module`` subclass, whose class attributes
    its code reads through ``self``; not an optimizer's or a tensor's, whose attributes
    are walked as theirs; tw's own classes are not the user's)."""
    if type(obj) is ModuleType:
        return str(getattr(obj, "__name__", "")).partition(".")[0] not in _LIBRARIES
    return (
        type(obj) is type
        and _users(obj)
        and not issubclass(obj, (Optimizer, LRScheduler, Tensor, BaseException))
    )


def scalar_tuple(value: Any) -> bool:
    """Whether ``value`` is a tuple of Python scalars (read by value, as a number)."""
    return type(value) is tuple and all(type(v) in SCALARS for v in value)


@functools.lru_cache(maxsize=1024)
def global_names(code: CodeType) -> tuple[str, ...]:
    """The names ``code`` and the code nested in it (comprehensions, lambdas) look up."""
    names = list(code.co_names)
    for const in code.co_consts:
        if type(const) is CodeType:
            names += global_names(const)
    return tuple(dict.fromkeys(names))


#: Names through which code reads a holder's attributes without naming them.
_WHOLE_ATTRS = frozenset(("__dict__", "vars", "getattr", "attrgetter"))
#: Names through which code reads a dict's entries without naming them.
_WHOLE_ITEMS = frozenset(("items", "values", "keys", "copy", "update"))
#: Instructions that do so too (``f(**cfg)``, ``{**cfg}``).
_WHOLE_OPS = frozenset(("DICT_MERGE", "DICT_UPDATE"))


@functools.lru_cache(maxsize=1024)
def code_names(code: CodeType) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names ``code`` (and the code nested in it) may read a holder's entries by: the
    attribute names (its names, and its string constants: ``hasattr(o, "k")``), the string
    keys (its string constants, in tuples too: an attribute's name is no dict's key, so
    ``opt.step()`` reads no entry ``"step"``); and what it may read without naming it:
    "attrs" (``getattr``, ``vars``, ...), "items" (``.items()``, ``**cfg``, ...)."""
    names = set(code.co_names)
    keys: set[str] = set()
    wide = {"attrs"} if names & _WHOLE_ATTRS else set()
    if names & _WHOLE_ITEMS or any(i.opname in _WHOLE_OPS for i in dis.get_instructions(code)):
        wide.add("items")
    for const in code.co_consts:
        if type(const) is CodeType:
            nested, nested_keys, nested_wide = code_names(const)
            names |= nested
            keys |= nested_keys
            wide |= nested_wide
        else:
            consts = const if type(const) in (tuple, frozenset) else (const,)
            keys.update(c for c in consts if type(c) is str)
    return frozenset(names | keys), frozenset(keys), frozenset(wide)


#: Methods that read a dict at the key they are passed.
_KEYED = frozenset(("get", "pop", "setdefault", "__getitem__"))
#: Functions that do so too (``operator.getitem(cfg, key)``).
_KEYING = frozenset(("getitem", "itemgetter"))
#: What makes a key the code spells: a constant (its string is one of :func:`code_names`),
#: or a slice or tuple (no string key: :meth:`ValuesRead._named_entries` reads those).
_SPELLED = frozenset(("LOAD_CONST", "LOAD_SMALL_INT", "BUILD_SLICE", "BUILD_TUPLE"))
_CONSTANT = frozenset(("LOAD_CONST", "LOAD_SMALL_INT"))
_CALLS = frozenset(("PRECALL", "CALL"))
#: How code loads a container it subscripts, by a name :meth:`ValuesRead.function` looks up.
_NAMED_LOADS = {
    "LOAD_GLOBAL": "global",
    "LOAD_NAME": "global",
    "LOAD_DEREF": "cell",
    "LOAD_FAST": "argument",
}
#: A container loaded otherwise (an attribute, a call's result): it may be any dict.
UNKNOWN = ("", "")


@functools.lru_cache(maxsize=1024)
def unspelled_keys(code: CodeType) -> frozenset[tuple[str, str]]:
    """The containers ``code`` (or the code nested in it) may read at a key that is not one
    of its constants (``cfg[key]``, ``cfg.get("k" + s)``, with the key an argument, a
    closure or global variable or computed): ``("global", name)``, ``("cell", name)`` or
    ``("argument", name)`` (a parameter it never rebinds) where it loads the container by
    that name; ``("global.attr", "name.attr")`` (so for a cell or an argument) where it
    loads the container as an attribute of an object it loads so (``self.layers[i]``);
    :data:`UNKNOWN` otherwise."""
    if _KEYING & set(code.co_names):
        return frozenset((UNKNOWN,))
    ops = list(dis.get_instructions(code))
    found = set()
    for j, op in enumerate(ops):
        if op.opname == "BINARY_SUBSCR" or (op.opname == "BINARY_OP" and op.argrepr == "[]"):
            if j and ops[j - 1].opname not in _SPELLED:
                found.add(_container(ops, _key_start(ops, j)))
        elif op.opname in ("LOAD_METHOD", "LOAD_ATTR") and op.argval in _KEYED:
            if not _spelled_call(ops[j + 1 : j + 4]):
                found.add(_container(ops, j))
    parameters = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    rebound = {i.argval for i in ops if i.opname in ("STORE_FAST", "DELETE_FAST")}
    found = {
        UNKNOWN
        if how.startswith("argument") and (_owner(n) not in parameters or _owner(n) in rebound)
        else (how, n)
        for how, n in found
    }
    for const in code.co_consts:
        if type(const) is CodeType:  # (its cells and arguments are its own)
            found.update(
                (how, n) if how.startswith("global") else UNKNOWN
                for how, n in unspelled_keys(const)
            )
    return frozenset(found)


def _spelled_call(after: list) -> bool:
    """Whether the instructions ``after`` a keyed method pass it a constant key (and
    maybe a constant default) or nothing: the call comes right after the constants."""
    names = [i.opname for i in after]
    if names[:1] and names[0] in _CALLS:
        return True
    if not names or names[0] not in _SPELLED:
        return False
    return names[1:2] != [] and (
        names[1] in _CALLS or (names[1] in _CONSTANT and names[2:3] != [] and names[2] in _CALLS)
    )


def _key_start(ops: list, j: int) -> int:
    """Where the key of the subscript ``ops[j]`` starts: walking back, where the
    instructions since push one value (0 where that is not found)."""
    pushed = 0
    for k in range(j - 1, 0, -1):
        i = ops[k]
        if i.is_jump_target or "JUMP" in i.opname:
            return 0
        pushed += dis.stack_effect(i.opcode, i.arg if i.opcode >= dis.HAVE_ARGUMENT else None)
        if pushed == 1:
            return k
    return 0


def _container(ops: list, start: int) -> tuple[str, str]:
    """How the container whose load ends just before ``ops[start]`` is loaded (see
    :func:`unspelled_keys`)."""
    # (where a branch joins, the container may be another than the load before)
    load = ops[start - 1] if start > 0 and not ops[start].is_jump_target else None
    if load is not None and load.opname == "LOAD_ATTR" and start > 1 and not load.is_jump_target:
        how = _NAMED_LOADS.get(ops[start - 2].opname)
        if how is not None:
            return (f"{how}.attr", f"{ops[start - 2].argval}.{load.argval}")
    how = _NAMED_LOADS.get(load.opname) if load is not None else None
    return UNKNOWN if how is None else (how, load.argval)


def _owner(name: str) -> str:
    """The name of the object whose attribute ``name`` (``"self.layers"``) is, or ``name``."""
    return name.partition(".")[0]


#: What a container the code subscripts holds where it is not a dict (nor an object).
_NOT_DICTS = (Tensor, np.ndarray, Module, list, tuple, str, bytes, range)


def _containers(func: FunctionType, arguments: dict[str, Any], owners: tuple | list) -> list[Any]:
    """What the containers ``func``'s code reads at keys it does not spell hold
    (:func:`unspelled_keys`): the globals', cells' and ``arguments``' values, and their
    attributes (``owners``: what the first argument may be); ``None`` for the others (an
    attribute of something else, an argument not known: they may be any dict)."""
    code = func.__code__
    cells = dict(zip(code.co_freevars, func.__closure__ or ()))
    first = code.co_varnames[0] if code.co_argcount else None
    found = []
    for how, name in unspelled_keys(code):
        how, _, dotted = how.partition(".")
        holder, _, attr = name.partition(".") if dotted else (name, "", "")
        if how == "cell" and holder in cells:
            values = [cell_value(cells[holder])]
        elif how == "global":
            values = [func.__globals__.get(holder)]
        elif how == "argument" and attr and holder == first and owners:
            values = list(owners)
        else:
            values = [arguments.get(holder) if how == "argument" else None]
        found += [_attribute(v, attr) for v in values] if attr else values
    return found


def _attribute(owner: Any, name: str) -> Any:
    """``owner``'s attribute ``name`` as code reads it, found without running code (a
    module's submodule, parameter or buffer too); None where that is not known (a
    property, a ``__getattr__``)."""
    found = getattr(owner, "__dict__", {}).get(name, ABSENT)
    if found is ABSENT:
        found = inspect.getattr_static(type(owner), name, ABSENT)
        if found is not ABSENT and hasattr(type(found), "__get__"):
            return None  # (a method, a property: what it gives is not known here)
    if found is ABSENT and isinstance(owner, Module):
        for table in ("_parameters", "_buffers", "_modules"):
            found = owner.__dict__[table].get(name, found)
    return None if found is ABSENT else found


def cell_value(cell: Any) -> Any:
    """What a closure cell holds, or :data:`ABSENT`."""
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return ABSENT


def read_sig(read: tuple) -> tuple:
    """A read's part of a signature: its key and its value (see :class:`ValuesRead`)."""
    _, how, key, value = read
    if how == "grown":  # (the signature of a read as a trace found it)
        return value
    key = key if type(key) in SCALARS else id(key)
    if how == "len":
        return (key, value)
    if type(value) in SCALARS:
        return (key, number_sig(value))
    if scalar_tuple(value):
        return (key, freeze(value))
    return (key, "O", id(value))


def cell_contents(closure: tuple | None) -> list[Any]:
    """The objects a closure's cells hold (empty cells left out)."""
    found = []
    for cell in closure or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return found


class StepState:
    """The roots of one call of a compiled step, their locations and signature."""

    def __init__(
        self,
        fn: Callable,
        args: tuple,
        kwargs: dict,
        previous: StepState | None = None,
        grown: dict[int, tuple[Any, tuple]] | None = None,
    ) -> None:
        self.fn = fn
        # id -> ``(container, signatures)`` of each list or dict that a traced call of the
        # step grew or shrank (a log it appends to: :meth:`note_grown`), the compiled
        # function's: a Python side effect, which only the calls that trace have, so the
        # walk takes the signatures of the reads of its length and items as that trace
        # found them (``"grown"`` reads, which no guard checks) rather than reading them
        # (the caller's changes to other containers trace again), but for a dict's values
        # at the keys the code names.
        self.grown = {} if grown is None else grown
        self.referenced = referenced(fn)
        if previous is not None and same_objects(self.referenced, previous.referenced):
            # The code names the same objects as on the last call (no containers among
            # them, whose contents might have changed): the same modules and optimizers.
            self._fixed = previous._fixed
        else:
            self.modules, self.optimizers, self.tensors = [], [], []
            seen: set[int] = set()
            for obj in self.referenced:
                self._classify(obj, seen, depth=2, fixed=True)
            self._fixed = (self.modules, self.optimizers, self.tensors)
        self.modules: list[Module] = list(self._fixed[0])
        self.optimizers: list[Optimizer] = list(self._fixed[1])
        self.tensors: list[Tensor] = list(self._fixed[2])  # named by the code, not in a module
        # Python numbers the code reads (a global, a closure variable, an attribute of a
        # bound method's object or of an object passed in) are baked into the graph.
        self.numbers = [obj for obj in self.referenced if type(obj) in SCALARS]
        if kwargs or not all(type(a) is Tensor or type(a) in SCALARS for a in args):
            seen = {id(x) for x in self.modules + self.optimizers + self.tensors}
            for obj in (args, kwargs):  # their tensors are located by their place in the call
                self._classify(obj, seen, depth=3, fixed=False)
        self.reads = self._values_read(fn, args, kwargs)

    def note_grown(self) -> None:
        """Add to :attr:`grown` the lists and dicts whose length the step, traced from this
        state, changed."""
        for holder, how, _, length in self.reads:
            if how == "len" and len(holder) != length:
                sig = tuple(read_sig(r) for r in self.reads if r[0] is holder)
                self.grown[id(holder)] = (holder, sig)

    def _values_read(self, fn: Callable, args: tuple, kwargs: dict) -> list[tuple]:
        """The values the step may read through its roots (:class:`ValuesRead`), read
        afresh on each call; adds the tensors met to ``self.tensors``."""
        walk = ValuesRead({id(t) for t in self.tensors}, self.grown)
        owner = getattr(fn, "__self__", None)
        if owner is not None:  # (its attributes are roots themselves)
            walk.entered(owner)
        func = getattr(fn, "__func__", fn)
        if type(func) is FunctionType:
            params = func.__code__.co_varnames[owner is not None : func.__code__.co_argcount]
            walk.function(
                func,
                _DEPTH,
                own=True,
                arguments={**dict(zip(params, args)), **kwargs},
                owners=() if owner is None else (owner,),
            )
        elif not isinstance(fn, Module):  # a partial, an object with __call__: as a root
            walk.enter(fn, _DEPTH)
            walk.enter(type(fn).__call__, _DEPTH)
        for obj in self.referenced:
            if not isinstance(obj, (Module, Optimizer, Tensor)):
                walk.enter(obj, _DEPTH)
        walk.modules(self.modules)
        walk.optimizers(self.optimizers)
        walk.settle()
        if GRAD_HOOKS or POST_ACCUMULATE_HOOKS:
            params = [p for m in self.modules for p in m.parameters()]
            walk.tensor_hooks([*params, *self.tensors, *walk.tensors])
            walk.settle()  # (what the hooks name)
        self.tensors += walk.tensors
        # (False: a value the step may read is not guarded; it runs eagerly, compiled.py)
        self.complete = walk.complete
        return walk.reads

    def _classify(self, obj: Any, seen: set[int], depth: int, fixed: bool) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, Module):
            self.modules.append(obj)
        elif isinstance(obj, Optimizer):
            self.optimizers.append(obj)
        elif isinstance(obj, LRScheduler):
            return  # (not a root: a step that advances it runs eagerly, compiled.py)
        elif isinstance(obj, Tensor):
            if fixed:
                self.tensors.append(obj)
        elif depth and type(obj) in (tuple, list):
            for item in obj:
                self._classify(item, seen, depth - 1, fixed)
        elif depth and type(obj) is dict:
            for item in obj.values():
                self._classify(item, seen, depth - 1, fixed)
        elif not fixed and type(obj) not in SCALARS and hasattr(obj, "__dict__"):
            # An object passed in (``self`` of a compiled method): its attributes are roots.
            for item in vars(obj).values():
                if type(item) in SCALARS:
                    self.numbers.append(item)
                self._classify(item, seen, depth=1, fixed=True)

    def signature(self, args: tuple, kwargs: dict, argument_grads: bool = True) -> tuple:
        """Everything the trace specialised on (see the module's docstring); without the
        arguments' gradients if ``argument_grads`` is false."""
        arrays: list[int] = []
        return (
            is_grad_enabled(),
            (get_default_dtype(), autocast_dtype()),
            id(current_backend()),
            freeze(args, arrays, argument_grads),
            freeze(kwargs, arrays, argument_grads),
            sharing(arrays),
            modules_sig(self.modules),
            optimizers_sig(self.optimizers),
            tensors_sig(self.tensors),
            tuple(number_sig(n) for n in self.numbers),
            tuple(map(read_sig, self.reads)),
            bool(SAVED_TENSORS_HOOKS),
        )

    def locations(self, args: tuple, kwargs: dict) -> list[tuple[Any, str]]:
        """``(holder, expression)`` for every tensor location the step may read or rebind:
        the expression follows the holder's name, or stands alone (holder None) on
        ``args`` and ``kwargs``."""
        out: list[tuple[Any, str]] = []
        fixed: dict[int, Tensor] = {}
        loose = loose_buffers(self.modules)
        if loose:  # buffers a step rebinds: read and rebound where their module holds them
            for m in {id(m): m for root in self.modules for m in root.modules()}.values():
                for name in sorted(REBOUND_BUFFERS.get(id(m), ())):
                    if m._buffers.get(name) is not None:
                        out.append((m, f"._buffers[{name!r}]"))
                        out.append((m, f"._buffers[{name!r}]._grad"))
        for module in self.modules:
            for t in list(module.parameters()) + list(module.buffers()):
                if id(t) not in loose:
                    fixed.setdefault(id(t), t)
        for opt in self.optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    fixed.setdefault(id(p), p)
                    state = opt.state.get(p)
                    for key, value in (state or {}).items():
                        if isinstance(value, Tensor):
                            out.append((state, f"[{key!r}]"))
        for t in self.tensors:
            fixed.setdefault(id(t), t)
        for t in fixed.values():
            out.append((t, ""))
            out.append((t, "._grad"))
        attribute_locations(self.modules, out)
        _argument_locations(args, "args", out)
        _argument_locations(kwargs, "kwargs", out)
        return out


def _argument_locations(value: Any, path: str, out: list[tuple[Any, str]]) -> None:
    if isinstance(value, Tensor):
        out.append((None, path))
        out.append((None, f"{path}._grad"))
    elif isinstance(value, np.ndarray):
        out.append((None, path))
    elif type(value) in (tuple, list):
        for i, item in enumerate(value):
            _argument_locations(item, f"{path}[{i}]", out)
    elif type(value) is dict:
        for key, item in value.items():
            _argument_locations(item, f"{path}[{key!r}]", out)


def same_objects(now: list, before: list) -> bool:
    return len(now) == len(before) and all(
        a is b and type(a) not in CONTAINERS for a, b in zip(now, before)
    )


def modules_sig(modules: list[Module]) -> tuple:
    loose = loose_buffers(modules)
    return tuple(
        (
            # A module swapped for another (a ReLU for a Tanh) runs other code.
            tuple(
                (
                    type(m),
                    id(m),
                    m.training,
                    *(tuple(getattr(m, h).values()) for h in MODULE_HOOKS),
                    module_numbers(m),
                )
                for m in module.modules()
            ),
            tuple(_tensor_sig(p) for p in module.parameters()),
            tuple(
                (None, *_tensor_sig(b)[1:]) if id(b) in loose else _tensor_sig(b)
                for b in module.buffers()
            ),
        )
        for module in modules
    )


def optimizers_sig(optimizers: list[Optimizer]) -> tuple:
    return tuple(_optimizer_sig(opt) for opt in optimizers)


def schedulers_reached(fn: Callable, args: tuple, kwargs: dict) -> list[LRScheduler]:
    """The learning-rate schedulers ``fn``'s call can reach: through its arguments and the
    objects its code names, their attributes, items and functions' own names, a few levels
    deep, and the schedulers a ``ChainedScheduler`` or ``SequentialLR`` steps."""
    found: list[LRScheduler] = []
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        cls = type(obj)  # (not isinstance: some objects' __class__ is a property)
        if id(obj) in seen or cls in SCALARS:
            return
        seen.add(id(obj))
        if issubclass(cls, LRScheduler):
            found.append(obj)
            for child in getattr(obj, "_schedulers", ()):
                visit(child, depth)
            return
        if not depth or issubclass(cls, (Tensor, Optimizer, np.ndarray, type, ModuleType)):
            return
        if cls in (tuple, list, set, frozenset):
            items: Any = obj
        elif cls is dict:
            items = obj.values()
        elif cls in (FunctionType, MethodType):
            items = referenced(obj)  # a helper the step calls, and what it names
        else:
            try:
                items = vars(obj).values()
            except Exception:  # no attributes (or a proxy whose referent is gone)
                return
        for item in items:
            visit(item, depth - 1)

    for obj in [*referenced(fn), args, kwargs]:
        visit(obj, 4)
    return found


def scheduler_attributes(schedulers: list[LRScheduler]) -> list[dict]:
    """A shallow copy of each scheduler's attributes (keeping the objects they held)."""
    return [dict(vars(s)) for s in schedulers]


def schedulers_stepped(schedulers: list[LRScheduler], before: list[dict]) -> bool:
    """Whether a scheduler's attributes changed since ``before`` (a ``step()`` rebinds
    ``last_epoch`` and ``_last_lr`` at least): a replay would not advance them."""
    for s, then in zip(schedulers, before):
        now = vars(s)
        if now.keys() != then.keys() or any(now[k] is not v for k, v in then.items()):
            return True
    return False


def tensors_sig(tensors: list[Tensor]) -> tuple:
    return tuple(_tensor_sig(t) for t in tensors)


def _optimizer_sig(opt: Optimizer) -> tuple:
    # A group's and a state entry's identity count: the replay reads the learning rate and
    # the state tensors from the dicts it was traced with (load_state_dict makes new ones).
    groups = []
    counted = getattr(opt, "_counted_state", ())
    for group in opt.param_groups:
        settings = tuple(
            (k, type(v) if lifted_setting(k, v) else freeze(v))
            for k, v in group.items()
            if k != "params" and not callable(v)
        )
        state = []
        for p in group["params"]:
            entry = opt.state.get(p)
            state.append(
                None
                if entry is None
                else (
                    id(entry),
                    tuple((k, _state_sig(v, k in counted)) for k, v in entry.items()),
                )
            )
        params = tuple(id(p) for p in group["params"])
        groups.append((id(group), params, settings, tuple(state)))
    return tuple(groups)


def _state_sig(value: Any, counted: bool) -> Any:
    """Floats in optimizer state, and the ints of its ``_counted_state`` (``counted``), are
    computed by the replay (symbolic.py): only their type counts."""
    if isinstance(value, Tensor):
        return _meta(value)
    if type(value) is float or (counted and type(value) is int):
        return type(value)
    return freeze(value)


def describe_change(before: tuple, after: tuple) -> str:
    """Which part of a signature a step itself changed (for a warning)."""
    names = (
        "the grad mode",
        "the default dtype or autocast",
        "the default device",
        "the arguments",
        "the keyword arguments",
        "which arguments share an array",
        "a module (submodules, training flags, parameters, buffers or their gradients, "
        "Python number or plain tensor attributes)",
        "an optimizer's settings or state (e.g. a Python number such as Adam's 'step')",
        "a tensor the function uses",
        "a Python number the function reads (a global, a closure variable, an attribute)",
        "a value read through a container, a plain object, a default argument, a helper "
        "function, a hook or a custom optimizer's attribute",
        "whether saved_tensors_hooks are in force",
    )
    return ", ".join(n for n, a, b in zip(names, before, after) if a != b) or "nothing"
