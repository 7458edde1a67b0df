"""The modules', optimizers' and named tensors' part of a generated guard (:mod:`.guards`).

:func:`.state.modules_sig` walks each module tree three times (its modules, its parameters,
its buffers) and :func:`.state.optimizers_sig` builds a tuple per group and parameter: for
an MLP trainer that was ~40 us a call, most of what the guard cost. The checks written here
test the same facts, in line, against the objects of one signature:

- each module of the trees keeps its class and training flag, its Python number attributes
  and its plain tensor attributes' shape, dtype, backend and ``requires_grad``, and holds
  the same objects, in the same order, in its ``_modules``, ``_parameters`` and
  ``_buffers`` (so a walk from the roots meets the same modules, parameters and buffers in
  the same order, however the module was changed: ``setattr``, ``add_module``,
  ``register_buffer`` or a write into those dicts), but for a buffer a step rebinds
  (:data:`.state.REBOUND_BUFFERS`), checked by the facts below rather than identity;
- each parameter and buffer keeps its shape, dtype, backend and ``requires_grad``, and its
  gradient stays absent or keeps those four facts;
- each optimizer keeps its groups (the same dicts, their keys in order, settings as the
  signature freezes them, parameters by identity) and each parameter's state entry (the
  same dict, its keys in order; tensors by shape, dtype, backend and ``requires_grad``;
  floats by type; other values frozen).

A module class that overrides a traversal (``parameters()``, ``named_modules()``, ...)
gets no in-line checks: :func:`.state.modules_sig` calls its own.
"""

from __future__ import annotations

import math
from operator import is_
from typing import Any

from tensorweaver.autograd.hooks import GRAD_HOOKS, POST_ACCUMULATE_HOOKS
from tensorweaver.compiler.state import (
    ABSENT,
    MODULE_HOOKS,
    SCALARS,
    cell_value,
    freeze,
    loose_buffers,
    scalar_tuple,
    tensor_hooks,
)
from tensorweaver.compiler.symbolic import lifted_setting
from tensorweaver.nn.modules.module import Module
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.tensor import Tensor

#: The traversals :func:`.state.modules_sig` calls; the checks assume Module's own.
_WALKS = (
    "named_modules",
    "modules",
    "_named_members",
    "named_parameters",
    "parameters",
    "named_buffers",
    "buffers",
)
_STORES = ("_modules", "_parameters", "_buffers", *MODULE_HOOKS)


def checks_names(names: dict) -> None:
    """Add the helpers the checks below call to a guard's ``names``."""
    names.update(
        is_=is_,
        freeze=freeze,
        copysign=math.copysign,
        Tensor=Tensor,
        hooks_of=tensor_hooks,
        GRAD_HOOKS=GRAD_HOOKS,
        POST_HOOKS=POST_ACCUMULATE_HOOKS,
        ABSENT=ABSENT,
        cell_value=cell_value,
    )


def tensor_checks(expr: str, t: Tensor, tag: str, names: dict, grad: bool = True) -> list[str]:
    """Checks that tensor ``expr`` has ``t``'s shape, dtype, backend and ``requires_grad``
    and, with ``grad``, a gradient with those of ``t``'s, or none as ``t``."""
    names[f"S{tag}"], names[f"D{tag}"], names[f"B{tag}"] = t.shape, t.dtype, t.backend
    if not _own_facts(type(t)):
        checks = [f"{expr}.shape == S{tag}", f"{expr}.dtype == D{tag}"]
    else:  # (Tensor's slots: a property read costs about twice a slot's)
        checks = [f"{expr}._shape == S{tag}", f"{expr}._dtype is D{tag}"]
    checks.append(f"{expr}.backend is B{tag}")
    flag = t.requires_grad
    if type(flag) is not bool:
        names[f"R{tag}"] = flag
        checks.append(f"{expr}.requires_grad is R{tag}")
    elif not _own_facts(type(t)):
        checks.append(f"{expr}.requires_grad is {flag}")
    elif flag:  # (the slot, or a view's flag that its base gives)
        checks.append(f"({expr}._requires_grad is True or {expr}.requires_grad is True)")
    else:
        checks.append(
            f"({expr}._requires_grad is False and "
            f"({expr}._view_of is None or {expr}.requires_grad is False))"
        )
    if not grad:
        return checks
    hooks = names[f"H{tag}"] = tensor_hooks(t)
    # (no hook registered on any tensor, the usual case, is two tests of the registries)
    checks.append(
        f"(not GRAD_HOOKS and not POST_HOOKS or hooks_of({expr}) == H{tag})"
        if hooks == ()
        else f"hooks_of({expr}) == H{tag}"
    )
    if t._grad is None:
        return checks + [f"{expr}._grad is None"]
    return checks + [
        f"(g := {expr}._grad) is not None",
        *tensor_checks("g", t._grad, f"G{tag}", names, grad=False),
    ]


def _own_facts(cls: type) -> bool:
    """Whether tensors of class ``cls`` give their shape, dtype and ``requires_grad`` as
    Tensor does (from its slots ``_shape``, ``_dtype`` and ``_requires_grad``: a property's
    value but a view's flag, which its base may give)."""
    return all(getattr(cls, n) is getattr(Tensor, n) for n in ("shape", "dtype", "requires_grad"))


def scalar_check(expr: str, value: Any, tag: str, names: dict) -> str | None:
    """A check that ``expr`` is a Python scalar with ``state.number_sig`` of ``value`` (a
    float with its sign), or None for a complex number or another type."""
    cls = type(value)
    if cls is complex or cls not in SCALARS:
        return None
    names[f"V{tag}"] = value
    if cls is float:  # 0.0 == -0.0
        names[f"N{tag}"] = math.copysign(1.0, value)
        return (
            f"type(x := {expr}) is float and "
            f"(x is V{tag} or (x == V{tag} and copysign(1.0, x) == N{tag}))"
        )
    names[f"T{tag}"] = cls
    return f"type(x := {expr}) is T{tag} and (x is V{tag} or x == V{tag})"


def _same_values(expr: str, values: tuple, tag: str, names: dict) -> str:
    """A check that dict ``expr`` holds the objects ``values``, in order."""
    if not values:
        return f"not {expr}"
    names[tag] = values
    return f"len(d := {expr}) == {len(values)} and all(map(is_, d.values(), {tag}))"


def modules_checks(modules: list[Module], names: dict) -> list[str] | None:
    """Checks that ``state.modules_sig(modules)`` gives what it gives now (see the module's
    docstring), or None."""
    found: dict[int, Module] = {}
    tensors: dict[int, Tensor] = {}
    loose = loose_buffers(modules)  # (taken by metadata, where the module holds them)
    for root in modules:
        for module in root.modules():
            found.setdefault(id(module), module)
        for t in (*root.parameters(), *root.buffers()):
            if id(t) not in loose:
                tensors.setdefault(id(t), t)
    checks = []
    for k, module in enumerate(found.values()):
        cls = type(module)
        if type(module.training) is not bool or any(
            getattr(cls, walk) is not getattr(Module, walk) for walk in _WALKS
        ):
            return None
        names[f"M{k}"], names[f"C{k}"] = module, cls
        checks.append(f"type(M{k}) is C{k} and M{k}.training is {module.training}")
        for store in _STORES:
            held = getattr(module, store)
            if store == "_buffers" and loose and any(id(b) in loose for b in held.values()):
                checks += _buffer_checks(f"M{k}", held, loose, names)
                continue
            values = tuple(held.values())
            checks.append(_same_values(f"M{k}.{store}", values, f"M{k}{store}", names))
        for i, (name, value) in enumerate(vars(module).items()):
            if type(value) in SCALARS and name != "training":
                check = scalar_check(f"M{k}.__dict__.get({name!r})", value, f"M{k}n{i}", names)
                if check is None:
                    return None
                checks.append(check)
            elif isinstance(value, Tensor):  # a plain tensor attribute, by metadata
                names[f"M{k}a{i}"] = name
                checks.append(f"isinstance(x := M{k}.__dict__.get(M{k}a{i}), Tensor)")
                checks += tensor_checks("x", value, f"M{k}a{i}", names, grad=False)
    for k, t in enumerate(tensors.values()):
        names[f"MT{k}"] = t
        checks += tensor_checks(f"MT{k}", t, f"MT{k}", names)
    return checks


def _buffer_checks(module: str, held: dict, loose: set[int], names: dict) -> list[str]:
    """Checks that ``{module}._buffers`` has the names of ``held``, in order, each holding
    the same tensor, or, for a buffer of ``loose``, one with its metadata."""
    names[f"{module}bk"] = list(held)
    checks = [f"[*(bs := {module}._buffers)] == {module}bk"]
    for i, (name, b) in enumerate(held.items()):
        tag = f"{module}b{i}"
        names[f"{tag}n"], names[tag] = name, b
        if b is None or id(b) not in loose:
            checks.append(f"bs[{tag}n] is {tag}")
        else:
            checks.append(f"isinstance(x := bs[{tag}n], Tensor)")
            checks += tensor_checks("x", b, tag, names)
    return checks


def tensors_checks(tensors: list[Tensor], names: dict) -> list[str]:
    """Checks that ``state.tensors_sig(tensors)`` gives what it gives now (the tensors are
    the same objects: the guard checks that the code names the same objects)."""
    checks = []
    for k, t in enumerate(tensors):
        names[f"NT{k}"] = t
        checks += tensor_checks(f"NT{k}", t, f"NT{k}", names)
    return checks


def optimizers_checks(optimizers: list[Optimizer], names: dict) -> list[str] | None:
    """Checks that ``state.optimizers_sig(optimizers)`` gives what it gives now, or None
    (groups that are not a list of dicts with string keys)."""
    checks = []
    for k, opt in enumerate(optimizers):
        groups = opt.param_groups
        if type(groups) is not list:
            return None
        names[f"O{k}"] = opt
        checks.append(f"type(gs := O{k}.param_groups) is list and len(gs) == {len(groups)}")
        for j, group in enumerate(groups):
            if type(group) is not dict or not all(type(key) is str for key in group):
                return None
            tag = f"O{k}_{j}"
            names[f"E{tag}"], names[f"K{tag}"] = group, list(group)
            checks.append(f"(grp := gs[{j}]) is E{tag} and [*grp] == K{tag}")
            for i, (key, value) in enumerate(group.items()):
                check = _setting_check(f"grp[{key!r}]", key, value, f"{tag}_{i}", names)
                if check is None:
                    return None
                checks.append(check)
        state = _state_checks(opt, k, names)
        if state is None:
            return None
        checks += state
    return checks


def _setting_check(expr: str, key: str, value: Any, tag: str, names: dict) -> str | None:
    """A group entry as ``state._optimizer_sig`` sees it."""
    if key == "params":
        if type(value) is not list:
            return None
        names[f"Q{tag}"] = tuple(value)
        return f"type(ps := {expr}) is list and len(ps) == {len(value)} and " + (
            f"all(map(is_, ps, Q{tag}))"
        )
    if callable(value):  # left out of the signature
        return f"callable({expr})"
    if lifted_setting(key, value):  # recomputed by the replay (symbolic.py)
        if type(value) is float:
            return f"type({expr}) is float"
        return f"type(b := {expr}) is tuple and len(b) == {len(value)} and " + " and ".join(
            f"type(b[{i}]) is float" for i in range(len(value))
        )
    check = scalar_check(expr, value, tag, names)
    if check is not None:
        return check
    names[f"F{tag}"] = freeze(value)
    return f"not callable(x := {expr}) and freeze(x) == F{tag}"


def _state_checks(opt: Optimizer, k: int, names: dict) -> list[str] | None:
    """Each parameter's state entry as ``state._optimizer_sig`` sees it."""
    if not opt.state:  # no entry at all (SGD without momentum): a stricter check
        return [f"not O{k}.state"]
    checks = [f"(st := O{k}.state) is not None"]
    params = [p for group in opt.param_groups for p in group["params"]]
    for i, p in enumerate(params):
        entry = opt.state.get(p)
        tag = f"O{k}s{i}"
        names[f"Q{tag}"] = p
        if entry is None:
            checks.append(f"st.get(Q{tag}) is None")
            continue
        if type(entry) is not dict or not all(type(key) is str for key in entry):
            return None
        names[f"E{tag}"], names[f"K{tag}"] = entry, list(entry)
        checks.append(f"(e := st.get(Q{tag})) is E{tag} and [*e] == K{tag}")
        for j, (key, value) in enumerate(entry.items()):
            expr = f"e[{key!r}]"
            if isinstance(value, Tensor):
                checks.append(f"isinstance(x := {expr}, Tensor)")
                checks += tensor_checks("x", value, f"{tag}_{j}", names, grad=False)
            elif type(value) is float:  # recomputed by the replay (symbolic.py)
                checks.append(f"type({expr}) is float")
            elif type(value) is int and key in getattr(opt, "_counted_state", ()):
                checks.append(f"type({expr}) is int")
            else:
                check = scalar_check(expr, value, f"{tag}_{j}", names)
                if check is None:
                    names[f"F{tag}_{j}"] = freeze(value)
                    check = f"not isinstance(x := {expr}, Tensor) and freeze(x) == F{tag}_{j}"
                checks.append(check)
    return checks


def reads_checks(reads: list[tuple], names: dict) -> list[str] | None:
    """Checks that each read of ``state.ValuesRead`` gives its value again: a number (or a
    tuple of numbers) by value, anything else by identity; None where a complex number
    is read (as for an argument)."""
    holders: dict[int, str] = {}
    checks = []
    for k, (holder, how, key, value) in enumerate(reads):
        name = holders.get(id(holder))
        if name is None:
            name = holders[id(holder)] = f"RH{len(holders)}"
            names[name] = holder
        if how == "len":
            checks.append(f"len({name}) == {value}")
            continue
        if how == "grown":  # (a log the step appends to: as traced, unchecked)
            continue
        if how == "item":
            if type(key) is not str:  # (a name for any other key: its repr may not parse)
                names[f"RK{k}"], key = key, f"RK{k}"
            else:
                key = repr(key)
            expr = f"{name}.get({key}, ABSENT)"
        else:
            expr = {
                "index": f"{name}[{key}]",
                "attr": f"{name}.__dict__.get({key!r}, ABSENT)",
                "slot": f"getattr({name}, {key!r}, ABSENT)",
                "cell": f"cell_value({name})",
                "getattr": f"{name}.{key}",
            }[how]
        if type(value) in SCALARS:
            check = scalar_check(expr, value, f"RV{k}", names)
            if check is None:
                return None
        elif scalar_tuple(value):
            names[f"RF{k}"] = freeze(value)
            check = f"freeze({expr}) == RF{k}"
        else:
            names[f"RV{k}"] = value
            check = f"{expr} is RV{k}"
        checks.append(check)
    return checks
