"""Overlap checks of an ``out=`` that is resized, in PyTorch 2.13's order (found when views
became resizable within their memory in session 17: these calls then ran unrefused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import tensorweaver as tw
import torch


def _error(call: Callable[[Any], Any], m: Any) -> str:
    try:
        call(m)
    except RuntimeError as error:
        return "unsupported operation" if "unsupported operation" in str(error) else str(error)
    return "no error"


def _gather_into_a_view_resized_over_its_index(m: Any) -> None:
    # out (1 element) grows to 2 over ind's memory: gather checks after resizing
    ind = m.tensor([2, 1, 0])
    m.gather(ind.clone(), 0, ind[1:], out=ind[:1])


def _index_select_into_an_expanded_out(m: Any) -> None:
    # index_select refuses an out repeating memory before resizing it
    out = m.zeros(1, 6).expand(2, 6)
    m.index_select(m.ones(3, 6), 1, m.tensor([0, 1]), out=out)


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize(
    "call", [_gather_into_a_view_resized_over_its_index, _index_select_into_an_expanded_out]
)
def test_a_resized_out_is_checked_in_torch_s_order(call: Callable[[Any], Any]) -> None:
    assert _error(call, tw) == _error(call, torch) == "unsupported operation"
