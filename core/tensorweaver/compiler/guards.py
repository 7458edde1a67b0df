"""A compiled step's signature check, generated as Python for one signature.

Computing a call's signature (:meth:`.state.StepState.signature`: a nested tuple, then
hashed to look up its graph) costs more than a small step's replay. :func:`make_guard`
writes a function that checks the same facts against the values of one signature in line
(``args[0].shape == S0 and args[0].grad is None and ...``): a call the guard accepts has
that signature. The compiled function checks the guard of the signature it replayed last
before anything else, and computes the signature only when it refuses.
"""

from __future__ import annotations

import math
from types import FunctionType, MethodType
from typing import Any, Callable

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.compiler.state import (
    CONTAINERS,
    SCALARS,
    StepState,
    cell_contents,
    modules_sig,
    optimizers_sig,
    referenced,
    same_objects,
    sharing,
    tensors_sig,
)
from tensorweaver.ops.creation import get_default_dtype
from tensorweaver.selection import current_backend
from tensorweaver.tensor import Tensor

_MISSING = object()  # a global name not bound


def make_guard(
    state: StepState, fn: Callable, args: tuple, key: tuple
) -> Callable[[tuple, dict], bool] | None:
    """A function ``(args, kwargs) -> bool``, true only for a call of ``fn`` whose
    signature (with ``state`` as the previous call's state) is ``key``, the signature of
    the call with ``args`` now being made. None unless that call passes positional tensors
    and Python scalars alone and ``fn``'s roots hold no container.

    It checks what the signature holds: grad mode, default dtype, autocast dtype and
    device; each argument's type (exactly ``Tensor``, a stronger check), shape, dtype,
    backend, ``requires_grad`` and gradient, or a scalar's type and value (a float's sign
    too; a complex argument makes no guard); which arguments share an array; that ``fn``
    names the same objects (so the same Python numbers: a stronger check); the modules',
    optimizers' and named tensors' parts, computed as the signature computes them.
    """
    backend = current_backend()
    if (
        any(type(obj) in CONTAINERS for obj in state.referenced)
        or id(backend) != key[2]
        or key[3][0] is not tuple
        or key[4] != (dict, ())
    ):
        return None
    names: dict[str, Any] = {
        "Tensor": Tensor,
        "is_grad_enabled": is_grad_enabled,
        "get_default_dtype": get_default_dtype,
        "autocast_dtype": autocast_dtype,
        "current_backend": current_backend,
        "GRAD": key[0],
        "DTYPE": key[1][0],
        "AUTOCAST": key[1][1],
        "BACKEND": backend,
        "copysign": math.copysign,
    }
    checks = [
        "is_grad_enabled() is GRAD",
        "get_default_dtype() == DTYPE",
        "autocast_dtype() == AUTOCAST",
        "current_backend() is BACKEND",
    ]
    arrays = []
    for i, (arg, frozen) in enumerate(zip(args, key[3][1])):
        if type(arg) is Tensor:
            checks += _tensor_checks(i, arg, frozen, names)
            arrays.append(f"a{i}.native")
        elif type(arg) is float:  # with its sign: 0.0 == -0.0
            names[f"V{i}"], names[f"S{i}"] = arg, math.copysign(1.0, arg)
            checks.append(
                f"type(a{i}) is float and (a{i} is V{i} or "
                f"(a{i} == V{i} and copysign(1.0, a{i}) == S{i}))"
            )
        elif type(arg) in SCALARS and type(arg) is not complex:
            names[f"T{i}"], names[f"V{i}"] = type(arg), arg
            checks.append(f"type(a{i}) is T{i} and (a{i} is V{i} or a{i} == V{i})")
        else:
            return None
    if key[5] is None:  # no two arguments hold the same array
        checks += [f"{x} is not {y}" for k, x in enumerate(arrays) for y in arrays[k + 1 :]]
    else:
        names["sharing"], names["SHARING"] = sharing, key[5]
        checks.append(f"sharing([{', '.join(f'id({x})' for x in arrays)}]) == SHARING")
    checks += _referenced_checks(fn, state.referenced, names)
    for index, parts, sig in (
        (6, state.modules, modules_sig),
        (7, state.optimizers, optimizers_sig),
        (8, state.tensors, tensors_sig),
    ):
        if parts:
            names[f"sig{index}"], names[f"P{index}"], names[f"K{index}"] = sig, parts, key[index]
            checks.append(f"sig{index}(P{index}) == K{index}")
    unpack = f"    {''.join(f'a{i}, ' for i in range(len(args)))}= args\n" if args else ""
    source = (
        "def guard(args, kwargs):\n"
        f"    if kwargs or len(args) != {len(args)}:\n"
        "        return False\n"
        f"{unpack}"
        "    return (\n" + " and\n".join(f"        {c}" for c in checks) + "\n    )\n"
    )
    exec(compile(source, "<tw.compile guard>", "exec"), names)  # noqa: S102
    return names["guard"]


def _tensor_checks(i: int, arg: Tensor, frozen: tuple, names: dict) -> list[str]:
    """Argument ``i``'s part of the signature, ``frozen`` (see ``state._freeze``)."""
    names[f"S{i}"], names[f"D{i}"], names[f"B{i}"] = frozen[0], frozen[1], arg.backend
    checks = [
        f"type(a{i}) is Tensor",
        f"a{i}.shape == S{i}",
        f"a{i}.dtype == D{i}",
        f"a{i}.backend is B{i}",
        f"a{i}.requires_grad is {frozen[3]!r}",
    ]
    grad = frozen[4]
    if grad is None:
        return checks + [f"a{i}.grad is None"]
    names[f"GS{i}"], names[f"GD{i}"], names[f"GB{i}"] = grad[0], grad[1], arg.grad.backend
    return checks + [
        f"(g{i} := a{i}.grad) is not None",
        f"g{i}.shape == GS{i}",
        f"g{i}.dtype == GD{i}",
        f"g{i}.backend is GB{i}",
        f"g{i}.requires_grad is {grad[3]!r}",
    ]


def _referenced_checks(fn: Callable, found: list[Any], names: dict) -> list[str]:
    """Checks that ``state.referenced(fn)`` gives the objects ``found`` again: in line
    for a function or a method of a plain object, else by calling it."""
    names["same_objects"] = same_objects
    if type(fn) is FunctionType and not {"__self__", "__func__"} & vars(fn).keys():
        func, owner = fn, None
        checks = ["'__self__' not in FUNC.__dict__", "'__func__' not in FUNC.__dict__"]
    elif type(fn) is MethodType and type(fn.__func__) is FunctionType:
        func, owner = fn.__func__, fn.__self__  # a bound method's: they never change
        names["OWNER"], names["OWNED"], names["EMPTY"] = owner, [owner], {}
        names["OWNED"] += getattr(owner, "__dict__", {}).values()
        checks = ["same_objects([OWNER, *getattr(OWNER, '__dict__', EMPTY).values()], OWNED)"]
    else:
        names["referenced"], names["FN"], names["FOUND"] = referenced, fn, found
        return ["same_objects(referenced(FN), FOUND)"]
    names["FUNC"], names["CODE"] = func, func.__code__
    checks.append("FUNC.__code__ is CODE")
    if func.__closure__:
        names["cell_contents"], names["CELLS"] = cell_contents, cell_contents(func.__closure__)
        checks.append("same_objects(cell_contents(FUNC.__closure__), CELLS)")
    names["G"], names["MISSING"] = func.__globals__, _MISSING
    for k, name in enumerate(func.__code__.co_names):
        names[f"R{k}"] = func.__globals__.get(name, _MISSING)
        checks.append(f"G.get({name!r}, MISSING) is R{k}")
    return checks
