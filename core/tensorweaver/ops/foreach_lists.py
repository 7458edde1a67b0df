"""``torch._foreach_*``: one elementwise op over each tensor of a list (EMA updates, optimizers).

Each is the matching Tensor method applied tensor by tensor, so dtypes, broadcasting, autograd
and the in-place checks are those of the method; what is added here is PyTorch's handling of
the list arguments: a Python scalar, a list of scalars, a list of tensors (one each), or a
0-dim tensor. The in-place forms return the list they were given, as PyTorch does; the others
return a tuple of new tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number
from typing import Any, Callable, Optional, Union

from tensorweaver.tensor import Tensor

Other = Union[Number, Tensor, Sequence[Number], Sequence[Tensor]]


def _checked(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{name}(): expected Tensor as element {i} in argument 0, "
                f"but got {type(t).__name__}"
            )
    return tensors


def _operands(
    name: str, tensors: list[Tensor], other: Any, alpha: Optional[Number], tensor_alpha: bool
) -> list:
    """``other`` as one operand for each tensor of ``tensors``; ``tensor_alpha``: ``alpha=``
    goes with one 0-dim tensor (``_foreach_add`` but not ``_foreach_sub``, as PyTorch)."""
    if isinstance(other, Tensor):
        if alpha is not None and not tensor_alpha:
            raise TypeError(
                f"{name}(): argument 'other' (position 2) must be tuple of Tensors, not Tensor "
                "when alpha= is given"
            )
        if other.dim() != 0:
            raise RuntimeError(
                f"scalar tensor expected to be 0 dim but it has {other.dim()} dimensions "
                f"and {other.numel()} elements."
            )
        return [other] * len(tensors)
    listed = isinstance(other, (list, tuple))
    if listed and other and all(isinstance(o, Tensor) for o in other):
        if len(other) != len(tensors):
            raise RuntimeError(
                "Tensor lists must have the same number of tensors, "
                f"got {len(tensors)} and {len(other)}"
            )
        return list(other)
    if alpha is not None:
        raise TypeError(
            f"{name}(): alpha= is accepted with a tensor or a list of tensors, not with "
            f"{'a list of scalars' if listed else 'a scalar'}; scale the scalar(s) instead"
        )
    if not listed:
        return [other] * len(tensors)
    if len(other) != len(tensors):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return list(other)


def _each(method: str, self: Sequence[Tensor], other: Any, alpha: Optional[Number]) -> list:
    name = f"_foreach_{method}"
    tensors = _checked(name, self)
    keywords = {} if alpha is None else {"alpha": alpha}
    operands = _operands(name, tensors, other, alpha, tensor_alpha=method.startswith("add"))
    return [getattr(t, method)(o, **keywords) for t, o in zip(tensors, operands)]


def _foreach_add(self: Sequence[Tensor], other: Other, *, alpha: Any = None) -> tuple:
    """``self[i] + alpha * other[i]`` for each i."""
    return tuple(_each("add", self, other, alpha))


def _foreach_add_(self: list[Tensor], other: Other, *, alpha: Any = None) -> list[Tensor]:
    """``self[i].add_(other[i], alpha=alpha)`` for each i."""
    _each("add_", self, other, alpha)
    return self


def _foreach_sub(self: Sequence[Tensor], other: Other, *, alpha: Any = None) -> tuple:
    """``self[i] - alpha * other[i]`` for each i."""
    return tuple(_each("sub", self, other, alpha))


def _foreach_sub_(self: list[Tensor], other: Other, *, alpha: Any = None) -> list[Tensor]:
    """``self[i].sub_(other[i], alpha=alpha)`` for each i."""
    _each("sub_", self, other, alpha)
    return self


def _foreach_mul(self: Sequence[Tensor], other: Other) -> tuple:
    """``self[i] * other[i]`` for each i."""
    return tuple(_each("mul", self, other, None))


def _foreach_mul_(self: list[Tensor], other: Other) -> list[Tensor]:
    """``self[i].mul_(other[i])`` for each i."""
    _each("mul_", self, other, None)
    return self


def _foreach_div(self: Sequence[Tensor], other: Other) -> tuple:
    """``self[i] / other[i]`` for each i."""
    return tuple(_each("div", self, other, None))


def _foreach_div_(self: list[Tensor], other: Other) -> list[Tensor]:
    """``self[i].div_(other[i])`` for each i."""
    _each("div_", self, other, None)
    return self


def _lerp_each(method: str, self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any):
    name = f"_foreach_{method}"
    tensors = _checked(name, self)
    ends = _operands(name, tensors, _checked(name, tensors1), None, False)
    weights = _operands(name, tensors, weight, None, False)
    return [getattr(t, method)(e, w) for t, e, w in zip(tensors, ends, weights)]


def _foreach_lerp(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Other) -> tuple:
    """``self[i] + weight[i] * (tensors1[i] - self[i])`` for each i."""
    return tuple(_lerp_each("lerp", self, tensors1, weight))


def _foreach_lerp_(self: list[Tensor], tensors1: Sequence[Tensor], weight: Other) -> list[Tensor]:
    """``self[i].lerp_(tensors1[i], weight[i])`` for each i (an EMA update)."""
    _lerp_each("lerp_", self, tensors1, weight)
    return self


def _unary(method: str) -> tuple[Callable[..., tuple], Callable[..., list]]:
    """The out-of-place and in-place ``_foreach_<method>`` of a one-argument method."""

    def out_of_place(self: Sequence[Tensor]) -> tuple:
        return tuple(getattr(t, method)() for t in _checked(f"_foreach_{method}", self))

    def in_place(self: list[Tensor]) -> list[Tensor]:
        for t in _checked(f"_foreach_{method}_", self):
            getattr(t, method + "_")()
        return self

    out_of_place.__name__, in_place.__name__ = f"_foreach_{method}", f"_foreach_{method}_"
    out_of_place.__doc__ = f"``self[i].{method}()`` for each i."
    in_place.__doc__ = f"``self[i].{method}_()`` for each i."
    return out_of_place, in_place


_foreach_abs, _foreach_abs_ = _unary("abs")
_foreach_exp, _foreach_exp_ = _unary("exp")
_foreach_neg, _foreach_neg_ = _unary("neg")
_foreach_sqrt, _foreach_sqrt_ = _unary("sqrt")


def _foreach_zero_(self: list[Tensor]) -> list[Tensor]:
    """``self[i].zero_()`` for each i."""
    for t in _checked("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_copy_(
    self: list[Tensor], src: Sequence[Tensor], non_blocking: bool = False
) -> list[Tensor]:
    """``self[i].copy_(src[i])`` for each i."""
    tensors = _checked("_foreach_copy_", self)
    for t, s in zip(tensors, _operands("_foreach_copy_", tensors, list(src), None, False)):
        t.copy_(s)
    return self


def _foreach_norm(self: Sequence[Tensor], ord: float = 2, dtype: Any = None) -> tuple:
    """``torch.linalg.vector_norm(self[i], ord, dtype=dtype)`` for each i (0-dim tensors)."""
    from tensorweaver.linalg import vector_norm

    return tuple(vector_norm(t, ord, dtype=dtype) for t in _checked("_foreach_norm", self))


def _values(name: str, tensors: list[Tensor], value: Any) -> list:
    """``value`` of addcmul/addcdiv per tensor: a number, a list, or a 1-D tensor of them."""
    if isinstance(value, Tensor):
        if value.dim() != 1 or value.numel() != len(tensors):
            raise RuntimeError(
                f"{name}: expected a 1-D tensor of {len(tensors)} scalars (one per tensor), "
                f"got a tensor of shape {tuple(value.shape)}"
            )
        value = value.tolist()
    return _operands(name, tensors, value, None, False)


def _pointwise(method: str, self, tensor1, tensor2, value: Any) -> list:
    name = f"_foreach_{method}"
    tensors = _checked(name, self)
    firsts = _operands(name, tensors, _checked(name, tensor1), None, False)
    seconds = _operands(name, tensors, _checked(name, tensor2), None, False)
    values = _values(name, tensors, value)
    return [
        getattr(t, method)(a, b, value=v) for t, a, b, v in zip(tensors, firsts, seconds, values)
    ]


def _foreach_addcmul(self: Sequence[Tensor], tensor1, tensor2, value: Any = 1) -> tuple:
    """``self[i] + value[i] * tensor1[i] * tensor2[i]`` for each i."""
    return tuple(_pointwise("addcmul", self, tensor1, tensor2, value))


def _foreach_addcmul_(self: list[Tensor], tensor1, tensor2, value: Any = 1) -> list[Tensor]:
    """``self[i].addcmul_(tensor1[i], tensor2[i], value=value[i])`` for each i."""
    _pointwise("addcmul_", self, tensor1, tensor2, value)
    return self


def _foreach_addcdiv(self: Sequence[Tensor], tensor1, tensor2, value: Any = 1) -> tuple:
    """``self[i] + value[i] * tensor1[i] / tensor2[i]`` for each i."""
    return tuple(_pointwise("addcdiv", self, tensor1, tensor2, value))


def _foreach_addcdiv_(self: list[Tensor], tensor1, tensor2, value: Any = 1) -> list[Tensor]:
    """``self[i].addcdiv_(tensor1[i], tensor2[i], value=value[i])`` for each i."""
    _pointwise("addcdiv_", self, tensor1, tensor2, value)
    return self
