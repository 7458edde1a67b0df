"""A compiled step's signature check, generated as Python for one signature.

Computing a call's signature (:meth:`.state.StepState.signature`: a nested tuple, then
hashed to look up its graph) costs more than a small step's replay. :func:`make_guard`
writes a function that checks the same facts against the values of one signature in line
(``a0.shape == Sa0 and a0.grad is None and M1.training is True and ...``): a call the
guard accepts has that signature. The compiled function checks the guard of the signature
it replayed last before anything else, and computes the signature only when it refuses.
"""

from __future__ import annotations

from types import FunctionType, MethodType
from typing import Any, Callable

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS
from tensorweaver.compiler.state import (
    CONTAINERS,
    StepState,
    cell_contents,
    freeze,
    modules_sig,
    optimizers_sig,
    referenced,
    same_objects,
    sharing,
    tensors_sig,
)
from tensorweaver.compiler.state_checks import (
    checks_names,
    modules_checks,
    optimizers_checks,
    reads_checks,
    scalar_check,
    tensor_checks,
    tensors_checks,
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
    and Python scalars alone (or tuples and lists of them) and ``fn``'s roots hold no
    container.

    It checks what the signature holds: grad mode, default dtype, autocast dtype and
    device, whether saved_tensors_hooks are in force; each argument's type (exactly
    ``Tensor``, a stronger check), shape, dtype, backend, ``requires_grad`` and gradient, or
    a scalar's type and value (a float's sign too; a complex argument makes no guard);
    which arguments share an array; that ``fn`` names the same objects (so the same Python
    numbers: a stronger check); the modules', optimizers' and named tensors' parts, in line
    (:mod:`.state_checks`), or computed as the signature computes them for a module class
    with its own traversals; and each value read further on (:class:`.state.ValuesRead`),
    read again from where it was found: none to check for a step that reads nothing but its
    arguments, modules and optimizers.
    """
    backend = current_backend()
    if (
        freeze(args) != key[3]  # (computed just now: never expected)
        or any(type(obj) in CONTAINERS for obj in state.referenced)
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
        "SAVED_TENSORS_HOOKS": SAVED_TENSORS_HOOKS,
    }
    checks_names(names)
    checks = [
        "is_grad_enabled() is GRAD",
        "get_default_dtype() == DTYPE",
        "autocast_dtype() == AUTOCAST",
        "current_backend() is BACKEND",
        f"{'' if key[11] else 'not '}SAVED_TENSORS_HOOKS",
    ]
    arrays: list[str] = []
    for i, arg in enumerate(args):
        facts = _argument_checks(f"a{i}", arg, names, arrays)
        if facts is None:
            return None
        checks += facts
    if key[5] is None:  # no two arguments hold the same array
        checks += [f"{x} is not {y}" for k, x in enumerate(arrays) for y in arrays[k + 1 :]]
    else:
        names["sharing"], names["SHARING"] = sharing, key[5]
        checks.append(f"sharing([{', '.join(f'id({x})' for x in arrays)}]) == SHARING")
    checks += _referenced_checks(fn, state.referenced, names)
    for index, parts, sig, in_line in (
        (6, state.modules, modules_sig, modules_checks),
        (7, state.optimizers, optimizers_sig, optimizers_checks),
        (8, state.tensors, tensors_sig, tensors_checks),
    ):
        if not parts:
            continue
        if sig(parts) != key[index]:  # (computed just now: never expected)
            return None
        facts = in_line(parts, names)
        if facts is None:  # a class of its own: the signature's own computation
            names[f"sig{index}"], names[f"P{index}"], names[f"K{index}"] = sig, parts, key[index]
            facts = [f"sig{index}(P{index}) == K{index}"]
        checks += facts
    reads = reads_checks(state.reads, names)
    if reads is None:
        return None
    checks += reads
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


def _argument_checks(expr: str, arg: Any, names: dict, arrays: list[str]) -> list[str] | None:
    """Checks that ``expr`` freezes as ``arg`` does (:func:`.state.freeze`): a tensor (of
    exactly the class ``Tensor``), a Python scalar, or a tuple or list of these (an LSTM's
    hidden state); None for anything else. Appends each tensor's array, in ``freeze``'s
    order, to ``arrays``."""
    tag = expr.replace("[", "_").replace("]", "")
    if type(arg) is Tensor:
        arrays.append(f"{expr}.native")
        return [f"type({expr}) is Tensor", *tensor_checks(expr, arg, tag, names)]
    if type(arg) in (tuple, list):
        checks = [f"type({expr}) is {type(arg).__name__}", f"len({expr}) == {len(arg)}"]
        for j, item in enumerate(arg):
            facts = _argument_checks(f"{expr}[{j}]", item, names, arrays)
            if facts is None:
                return None
            checks += facts
        return checks
    check = scalar_check(expr, arg, tag, names)
    return None if check is None else [check]


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
