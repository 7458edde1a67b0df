"""Session 33: which check ``tw.autograd.grad`` fails first, as torch 2.13's: the outputs'
grad_outputs (shape, an implicit gradient of a non-scalar), then each output's requires_grad
("element 0 of tensors ... does not have a grad_fn"), then each input's, then an unused input;
also under ``allow_unused``, ``materialize_grads`` and ``is_grads_batched``. Before, grad()
checked the inputs' requires_grad first (autograd/engine.py), blaming an input where the
output was constant or its grad_output was wrong."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same_each
from tw_backends import FAST

#: The check an error message names, by a phrase torch's and tw's messages share.
_CHECKS = {
    "grad_fn": "output requires no grad",
    "Mismatch in shape": "grad_output shape",
    "implicitly created": "implicit gradient",
    "does not require grad": "input requires no grad",
    "used in the graph": "input unused",
}


def _blamed(call: Callable[[], Any]) -> str:
    """The check ``call`` fails ("ok" where none fails)."""
    try:
        call()
    except RuntimeError as e:
        return next((v for k, v in _CHECKS.items() if k in str(e)), f"other: {e}")
    return "ok"


def _program(kind: str, **kw: Any) -> Callable[[Any], str]:
    """grad of an output (``kind``: "const", a constant one; "vector", a non-scalar one that
    requires grad; "scalar") with respect to ``kw["wrt"]``: "const" (an input that requires no
    grad), "leaf" (the output's leaf) or "other" (an unrelated leaf)."""
    wrt = kw.pop("wrt")

    def program(m: Any) -> str:
        const = m.linspace(0, 1, 3, dtype=m.float64)
        x = m.linspace(1, 2, 3, dtype=m.float64).requires_grad_()
        other = m.ones(3, dtype=m.float64, requires_grad=True)
        out = {"const": const * 2, "vector": x * 2, "scalar": (x * 2).sum()}[kind]
        inputs = {"const": const, "leaf": x, "other": other}[wrt]
        args = {k: v(m) if callable(v) else v for k, v in kw.items()}
        return _blamed(lambda: m.autograd.grad(out, inputs, **args))

    return program


#: One grad_output per row of a batch of 3 (``is_grads_batched``).
_BATCHED = {"grad_outputs": lambda m: m.eye(3, dtype=m.float64), "is_grads_batched": True}

_PROGRAMS = {
    "constant output, constant input": _program("const", wrt="const"),
    "constant output, leaf input": _program("const", wrt="leaf"),
    "constant output, allow_unused": _program("const", wrt="const", allow_unused=True),
    "constant output, materialize_grads": _program("const", wrt="const", materialize_grads=True),
    "scalar output, constant input": _program("scalar", wrt="const"),
    "scalar output, unrelated input": _program("scalar", wrt="other"),
    "scalar output, unrelated input, allow_unused": _program(
        "scalar", wrt="other", allow_unused=True
    ),
    "vector output, no grad_output, constant input": _program("vector", wrt="const"),
    "vector output, wrong grad_output, constant input": _program(
        "vector", wrt="const", grad_outputs=lambda m: m.ones(2, dtype=m.float64)
    ),
    "constant output, batched, constant input": _program("const", wrt="const", **_BATCHED),
    "vector output, batched, constant input": _program("vector", wrt="const", **_BATCHED),
    "constant output, batched, leaf input": _program("const", wrt="leaf", **_BATCHED),
}


@pytest.mark.parametrize("spec", FAST)
def test_grad_checks_in_torchs_order(spec: str) -> None:
    same_each(_PROGRAMS, spec)
