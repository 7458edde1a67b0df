"""``torch.func.rearrange``: einops' ``rearrange`` (transpose, reshape, squeeze, unsqueeze,
stack and concatenate written as a pattern such as ``"b h w c -> b (h w) c"``).

A pattern's two sides are parsed into groups of axis names (a parenthesised group is one
dimension of the tensor, ``1`` or ``()`` a dimension of size 1, ``...`` the dimensions not
named); the input is reshaped into its elementary axes, permuted into the right side's
order, and reshaped into the right side's groups. Pattern errors are PyTorch's.
"""

from __future__ import annotations

import math
import re
from typing import Union

from tensorweaver.ops.movement import stack
from tensorweaver.tensor import Tensor

__all__ = ["rearrange"]

_ELLIPSIS = "…"  # "..." while parsing: one token


class DimensionBindError(Exception):
    """The tensor's sizes do not fit the pattern (PyTorch's functorch.dim error)."""


class _Side:
    """One side of a pattern: its groups (``[]`` a unit axis; an ellipsis outside
    brackets as the string itself, inside as a name), its axis names, and where an
    ellipsis or a numbered axis appeared."""

    def __init__(self, expression: str) -> None:
        self.groups: list[Union[str, list[str]]] = []
        self.names: set[str] = set()
        self.ellipsis_in_group = False
        self.non_unitary = False
        if "." in expression:
            if "..." not in expression:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if expression.count("...") != 1 or expression.count(".") != 3:
                raise ValueError(
                    "Expression may contain dots only inside ellipsis (...); only one ellipsis "
                    "for tensor "
                )
            expression = expression.replace("...", _ELLIPSIS)
        group: Union[list[str], None] = None
        for token in re.findall(r"[()]|[^\s()]+", expression):
            if token == "(":
                if group is not None:
                    raise ValueError(
                        "Axis composition is one-level (brackets inside brackets not allowed)"
                    )
                group = []
            elif token == ")":
                if group is None:
                    raise ValueError("Brackets are not balanced")
                self.groups.append(group)
                group = None
            else:
                self._add(token, group)
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")

    def _add(self, token: str, group: Union[list[str], None]) -> None:
        bad = next((c for c in token if not (c.isalnum() or c in "_" + _ELLIPSIS)), None)
        if bad is not None:
            raise ValueError(f"Unknown character '{bad}'")
        if token in self.names:
            raise ValueError(f"Indexing expression contains duplicate dimension '{token}'")
        if token == _ELLIPSIS:
            self.names.add(token)
            self.ellipsis_in_group = group is not None
            if group is None:
                self.groups.append(token)
                return
        elif token.isdecimal():
            if int(token) != 1:
                if int(token) < 1:
                    raise ValueError(f"Anonymous axis should have positive length, not {token}")
                self.non_unitary = True
            if group is None:
                self.groups.append([])  # a unit axis: no name
            return
        else:
            reason = _invalid_name(token)
            if reason:
                raise ValueError(f"Invalid axis identifier: {token}\n{reason}")
            self.names.add(token)
        if group is None:
            self.groups.append([token])
        else:
            group.append(token)


def _invalid_name(name: str) -> str:
    """Why ``name`` cannot name an axis (empty if it can: keywords too, as einops')."""
    if not name.isidentifier():
        return "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        return "axis name should should not start or end with underscore"
    return ""


def _sides(pattern: str, axes_lengths: dict) -> tuple[_Side, _Side]:
    """The parsed sides, with PyTorch's checks of the pattern and ``axes_lengths``."""
    parts = pattern.split("->")
    if len(parts) != 2:
        raise ValueError("Pattern must contain a single '->' separator")
    if "..." in axes_lengths:
        raise ValueError("'...' is not an allowed axis identifier")
    left, right = _Side(parts[0]), _Side(parts[1])
    if _ELLIPSIS in right.names and _ELLIPSIS not in left.names:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left.ellipsis_in_group:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.non_unitary or right.non_unitary:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    only_one_side = left.names ^ right.names
    if only_one_side:
        raise ValueError(
            "Identifiers only on one side of rearrange expression (should be on both): "
            f"{only_one_side}"
        )
    unmatched = axes_lengths.keys() - left.names
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
    return left, right


def _expand(groups: list[Union[str, list[str]]], ellipsis: list[str]) -> list[list[str]]:
    """The groups with the ellipsis replaced by its axes (each its own group at the top
    level, inside a group when parenthesised)."""
    out: list[list[str]] = []
    for group in groups:
        if group == _ELLIPSIS:
            out.extend([e] for e in ellipsis)
        else:
            out.append([n for name in group for n in (ellipsis if name == _ELLIPSIS else [name])])
    return out


def _bind(groups: list[list[str]], shape: tuple, known: dict[str, int]) -> None:
    """Each axis name's size, from the tensor's dims and the given lengths."""
    for group, size in zip(groups, shape):
        unknown = [n for n in group if n not in known]
        if len(unknown) > 1:
            raise DimensionBindError(
                f"cannot infer the sizes of two dimensions at once {' and '.join(unknown)}"
            )
        product = math.prod(known[n] for n in group if n in known)
        if unknown:
            if size % product:  # ZeroDivisionError for a length 0, as PyTorch's
                raise DimensionBindError(
                    f"inferred dimension does not evenly fit into larger dimension: {size} vs "
                    f"{tuple(known[n] if n in known else '?' for n in group)}"
                )
            known[unknown[0]] = size // product
        elif product != size:
            raise DimensionBindError(
                f"Dimension sizes to do not match ({size} != {product}) when matching "
                f"dimension pack {tuple(group)}"
            )


def rearrange(
    tensor: Union[Tensor, list[Tensor], tuple[Tensor, ...]], pattern: str, **axes_lengths: int
) -> Tensor:
    """``tensor`` (or the tensors stacked along a new first dim) rearranged as ``pattern``
    says, e.g. ``rearrange(x, "b c h w -> b (h w) c")``; ``axes_lengths`` give the sizes
    of axes the tensor's shape does not determine."""
    if not isinstance(tensor, Tensor):
        tensor = stack(list(tensor))
    left, right = _sides(pattern, axes_lengths)
    n = tensor.dim()
    named = len(left.names)
    if _ELLIPSIS in left.names:
        units = sum(1 for g in left.groups if not g)
        if units + named - 1 > n:
            raise ValueError(
                f"Number of dimensions in pattern ({units + named - 1}) must be less than or "
                f"equal to the number of dimensions in the tensor ({n})"
            )
        ellipsis = [f"{_ELLIPSIS}{i}" for i in range(n - len(left.groups) + 1)]
    else:
        if len(left.groups) != n:
            raise ValueError(
                f"Number of dimensions in pattern ({len(left.groups)}) must be equal to the "
                f"number of dimensions in the tensor ({n})"
            )
        ellipsis = []
    left_groups, right_groups = _expand(left.groups, ellipsis), _expand(right.groups, ellipsis)
    known = dict(axes_lengths)
    _bind(left_groups, tuple(tensor.shape), known)
    axes = [name for group in left_groups for name in group]
    order = [axes.index(name) for group in right_groups for name in group]
    elementary = tensor.reshape([known[name] for name in axes]).permute(order)
    return elementary.reshape([math.prod(known[name] for name in g) for g in right_groups])
