"""``functional_call(..., strict=True)``'s error, compared with ``torch.func`` 2.13: the
class and the whole message (unexpected names first, then missing ones, each sorted,
quoted and joined by ", ", a line only when it has names)."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch


def _given(net: Any, case: str) -> dict:
    weight, bias = net[0].weight, net[0].bias
    return {
        "both": {"0.weight": weight, "zeta": weight, "alpha": bias, "1.weight": net[1].weight},
        "unexpected": {**dict(net.named_parameters()), "foo": weight},
        "missing": {"0.weight": weight},
    }[case]


@pytest.mark.parametrize("case", ["both", "unexpected", "missing"])
@pytest.mark.parametrize("tie_weights", [True, False])
def test_strict_message_is_torchs(backend, case, tie_weights):
    """The message listed Python lists, missing names first, and printed an empty list
    for the side without names; torch prints sorted quoted names, unexpected first."""
    errors = []
    for m in (torch, tw):
        net = m.nn.Sequential(m.nn.Linear(3, 3), m.nn.Linear(3, 3, bias=False))
        net[1].weight = net[0].weight
        with pytest.raises(RuntimeError) as info:
            m.func.functional_call(
                net, _given(net, case), (m.ones(2, 3),), strict=True, tie_weights=tie_weights
            )
        errors.append(str(info.value))
    assert errors[1] == errors[0]
