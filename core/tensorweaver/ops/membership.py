"""``tw.isin``: which elements of one tensor occur in another (by sorting the second and a
binary search, O((n + m) log m), rather than comparing every pair)."""

from __future__ import annotations

from numbers import Number
from typing import Any

from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.ops.order_stats import sorted_position
from tensorweaver.ops.sort import check_flags, sort
from tensorweaver.promotion import result_type
from tensorweaver.tensor import Tensor


def isin(
    elements: Tensor | Number | None = None,
    test_elements: Tensor | Number | None = None,
    *,
    assume_unique: bool = False,
    invert: bool = False,
    element: Number | None = None,
    test_element: Number | None = None,
) -> Tensor:
    """A bool tensor of ``elements``' shape: whether each element equals one of
    ``test_elements`` (compared in their promoted dtype; NaN equals nothing), or, with
    ``invert``, whether it equals none. Either argument, not both, may be a number (by
    keyword: PyTorch's ``element=`` or ``test_element=``)."""
    if element is not None or test_element is not None:
        elements = _number("element", element, elements)
        test_elements = _number("test_element", test_element, test_elements)
    if type(assume_unique) is not bool or type(invert) is not bool:
        check_flags("isin", assume_unique=assume_unique, invert=invert)
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(
            "isin(): expected elements or test_elements to be a tensor, got "
            f"{type(elements).__name__} and {type(test_elements).__name__}"
        )
    like = elements if isinstance(elements, Tensor) else test_elements
    for given in (elements, test_elements):
        if isinstance(given, Tensor) and given.dtype.kind not in "iuf":
            raise RuntimeError(
                f"Unsupported input type encountered for isin(): {given.dtype.name} (isin "
                "compares integer and floating-point tensors)"
            )
    dtype = result_type(elements, test_elements)
    values = cr.as_tensor(elements, dtype=dtype, device=like.device).detach()
    tests = mv.reshape(cr.as_tensor(test_elements, dtype=dtype, device=like.device).detach(), (-1,))
    if not tests.numel():
        return cr.full(values.shape, invert, device=like.device)
    table = sort(tests).values
    # (sorted_position, not searchsorted: a NaN in the table is sorted last, where
    # PyTorch's search would step past it)
    at = sorted_position(table, mv.reshape(values, (-1,))).reshape(values.shape)
    at = at.clamp(max=tests.numel() - 1)
    found = table[at] == values
    return ~found if invert else found


def _number(name: str, number: Number | None, other: Tensor | Number | None) -> Any:
    """isin's argument given as ``name=number`` (PyTorch's name for a number there) or as
    ``other`` (by position, or by the name of the tensor form): one of the two."""
    if number is None:
        return other
    if other is not None:
        raise TypeError(f"isin(): got both {name}s and {name}=; pass one of them")
    if not isinstance(number, Number):
        raise TypeError(
            f"isin(): {name}= takes a number, got {type(number).__name__}; pass a tensor as "
            f"{name}s="
        )
    return number
