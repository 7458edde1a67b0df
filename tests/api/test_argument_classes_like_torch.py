"""Exception classes of bad calls the session-12 sweeps met outside their own areas, against
torch 2.13: an empty list to cat (ValueError, not RuntimeError), a non-tensor operand of
linear (TypeError naming the argument, not AttributeError)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")

CALLS: dict[str, Callable[[Any], Any]] = {
    "cat_empty_list": lambda m: m.cat([]),
    "cat_empty_tuple": lambda m: m.cat(()),
    "parameters_to_vector_of_nothing": lambda m: m.nn.utils.parameters_to_vector([]),
    "linear_list_input": lambda m: m.nn.functional.linear([m.ones(2)], m.ones(3, 2)),
    "linear_list_weight": lambda m: m.nn.functional.linear(m.ones(2), [[1.0, 2.0]]),
    "linear_list_bias": lambda m: m.nn.functional.linear(m.ones(2), m.ones(3, 2), [1.0] * 3),
}


@pytest.mark.parametrize("name", CALLS)
def test_bad_call_raises_torchs_class(name: str) -> None:
    with pytest.raises(Exception) as theirs:
        CALLS[name](torch)
    with pytest.raises(Exception) as ours:
        CALLS[name](tw)
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
    if isinstance(theirs.value, TypeError):  # the message names the argument, as torch's
        assert str(ours.value).split(" must ")[0] == str(theirs.value).split(" must ")[0]
