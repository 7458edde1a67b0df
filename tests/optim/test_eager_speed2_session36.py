"""torch:cpu's ``p.data.add_(p.grad, alpha=-lr)``, written into the parameter's memory where
the backend's ``owns_memory`` says nothing else uses it (ops/in_place_writes.py
``add_scaled``), gives torch's values and versions, and what holds that memory (a view, a
``.data`` alias, a tensor made over it) sees the write as under torch; a clone does not."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same_each


def _parameter(m: Any) -> Any:
    p = m.nn.Parameter(m.arange(1.0, 13.0).reshape(3, 4) / 7)
    p.grad = (m.arange(12.0).reshape(3, 4) - 5) / 3
    return p


def _stepped(hold: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        p = _parameter(m)
        held = hold(m, p)
        p.data.add_(p.grad, alpha=-0.3)
        p.data.sub_(p.grad, alpha=2)
        return p, p._version, held, getattr(held, "_version", None)

    return program


HOLDERS = {
    "nothing": lambda m, p: None,
    "a view": lambda m, p: p.detach()[1],
    "a .data alias": lambda m, p: p.data,
    "a transposed view of .data": lambda m, p: p.data.t(),
    "a clone": lambda m, p: p.detach().clone(),
    "requires_grad view": lambda m, p: p[0],
}


@pytest.mark.parametrize("spec", ["torch:cpu", "numpy"])
def test_data_add_with_holders_matches_torch(spec: str) -> None:
    same_each({name: _stepped(hold) for name, hold in HOLDERS.items()}, spec, decimals=None)


def _lone(m: Any) -> Any:
    p = _parameter(m)
    address = p.data_ptr()
    for _ in range(3):
        p.data.add_(p.grad, alpha=-0.3)
    return p, p._version, p.data_ptr() == address


def _made_over(m: Any) -> Any:
    # (another tensor over the parameter's storage: owns_memory is False, the write still
    # reaches it as torch's does)
    p = _parameter(m)
    other = p.data.view(12)
    p.data.add_(p.grad, alpha=-0.3)
    return p, other, other._version


def test_lone_and_shared_parameter_on_torch_cpu() -> None:
    same_each({"lone": _lone, "made over": _made_over}, "torch:cpu", decimals=None)
