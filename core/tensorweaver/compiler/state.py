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
recomputes); and the Python numbers the code reads from its roots (a global, a closure
variable, an attribute of a bound method's object or of an object passed in). Floats count
with their sign.
"""

from __future__ import annotations

import math
from types import FunctionType, MethodType, ModuleType
from typing import Any, Callable

import numpy as np

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.hooks import GRAD_HOOKS, POST_ACCUMULATE_HOOKS
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.compiler.symbolic import lifted_setting
from tensorweaver.nn.modules.module import Module
from tensorweaver.ops.creation import get_default_dtype
from tensorweaver.optim.lr_scheduler import LRScheduler
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import current_backend
from tensorweaver.tensor import Tensor

SCALARS = (bool, int, float, complex, str, type(None))
CONTAINERS = (tuple, list, dict)


def _meta(t: Any) -> Any:
    if t is None:
        return None
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
        self, fn: Callable, args: tuple, kwargs: dict, previous: StepState | None = None
    ) -> None:
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
    )
    return ", ".join(n for n, a, b in zip(names, before, after) if a != b) or "nothing"
