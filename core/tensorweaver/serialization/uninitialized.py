"""The structure node of a lazy module's uninitialized parameter or buffer (before its first
forward): it has a dtype, a flag or two and no values, so the file stores no tensor for it,
only ``[name, kind, dtype, requires_grad, persistent]`` (see :mod:`.structure`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Callable, NoReturn

Fail = Callable[[str], NoReturn]


def describe(value: Any, names: dict[int, str], fresh: str) -> list[Any]:
    """The node body of the uninitialized ``value``; ``names`` (id → name) gives one met
    before its name again, and a new one ``fresh``."""
    from tensorweaver.nn.parameter import UninitializedParameter

    name = names.setdefault(id(value), fresh)
    kind = "parameter" if isinstance(value, UninitializedParameter) else "buffer"
    persistent = kind == "parameter" or value.persistent
    return [name, kind, value.dtype.name, bool(value.requires_grad), persistent]


def restore(body: Any, made: dict[str, Any], tensor_names: Collection[str], fail: Fail) -> Any:
    """The uninitialized tensor of ``body``, made once per name (kept in ``made``)."""
    from tensorweaver.contract.dtypes import ALL
    from tensorweaver.nn.parameter import UninitializedBuffer, UninitializedParameter

    if not (
        isinstance(body, list)
        and len(body) == 5
        and isinstance(body[0], str)
        and body[1] in ("parameter", "buffer")
        and all(isinstance(flag, bool) for flag in body[3:])
    ):
        fail(
            f"uninitialized node {body!r:.80} must be [name, 'parameter' or 'buffer', dtype, "
            "requires_grad, persistent]"
        )
    name, kind, dtype_name, requires_grad, persistent = body
    dtype = {d.name: d for d in ALL}.get(dtype_name)
    if dtype is None:
        fail(f"uninitialized tensor {name!r}: unknown dtype {dtype_name!r}")
    if name in tensor_names:
        fail(f"uninitialized tensor {name!r} has the name of a tensor the file holds")
    if name in made:
        if made[name][0] != body:
            fail(f"structure refers to uninitialized tensor {name!r} in two ways")
        return made[name][1]
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        fail(f"uninitialized tensor {name!r} of dtype {dtype_name} cannot require grad")
    # on the default device, as a tensor loaded without map_location
    if kind == "parameter":
        out: Any = UninitializedParameter(requires_grad, dtype=dtype)
    else:
        out = UninitializedBuffer(requires_grad, dtype=dtype, persistent=persistent)
    made[name] = (body, out)
    return out
