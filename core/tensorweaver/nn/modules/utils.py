"""PyTorch's argument helpers of ``torch.nn.modules.utils``, which custom layers import
(``from torch.nn.modules.utils import _pair``), and its state-dict prefix helper."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A function that makes ``x`` a tuple: an iterable as it is, else ``n`` copies of it."""

    def parse(x: Any) -> tuple:
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: Iterable, n: int) -> tuple:
    """``t`` reversed, each item ``n`` times: a conv's ``padding`` as ``F.pad`` takes it."""
    return tuple(x for x in reversed(tuple(t)) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list[int]) -> Any:
    """``out_size`` with each None taken from the matching trailing ``defaults`` (an int
    passes unchanged)."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place (and
    from its ``_metadata`` keys, as PyTorch does): a DataParallel checkpoint's ``module.``."""
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix) :]] = metadata.pop(key)
