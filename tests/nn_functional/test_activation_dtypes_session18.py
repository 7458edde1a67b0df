"""Activations on integer and bool inputs raise as torch 2.13's float-only CPU kernels do
(they returned float32 results), and the float32/float64 activations that are compositions
carry torch's node names (hardswish's grad_fn was DivBackward0, gelu's MulBackward0, ...)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as WF
import torch
import torch.nn.functional as TF


def _plain(name: str) -> Callable[[Any, Any], Any]:
    return lambda F, x: getattr(F, name)(x)


_FLOAT_ONLY: dict[str, Callable[[Any, Any], Any]] = {
    name: _plain(name)
    for name in (
        "gelu silu mish hardswish hardsigmoid elu selu celu softplus leaky_relu logsigmoid "
        "glu hardshrink softshrink rrelu hardtanh relu6"
    ).split()
}
_FLOAT_ONLY["rrelu_training"] = lambda F, x: F.rrelu(x, training=True)
_FLOAT_ONLY["gelu_tanh"] = lambda F, x: F.gelu(x, approximate="tanh")
_FLOAT_ONLY["silu_inplace"] = lambda F, x: F.silu(x, inplace=True)
_FLOAT_ONLY["elu_"] = lambda F, x: F.elu_(x)
_FLOAT_ONLY["threshold"] = lambda F, x: F.threshold(x, 0.5, 2.0)
_FLOAT_ONLY["gumbel_softmax"] = lambda F, x: F.gumbel_softmax(x)


def _raised(m: Any, F: Any, call: Callable[[Any, Any], Any], dtype: str) -> type | None:
    x = m.tensor([[1, 0], [2, 3]], dtype=getattr(m, dtype))
    try:
        call(F, x)
    except Exception as error:  # noqa: BLE001 (the class is what is compared)
        return type(error)
    return None


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
@pytest.mark.parametrize("name", sorted(_FLOAT_ONLY))
def test_integer_inputs_raise_as_torch(backend: str, name: str, dtype: str) -> None:
    want = _raised(torch, TF, _FLOAT_ONLY[name], dtype)
    assert _raised(tw, WF, _FLOAT_ONLY[name], dtype) is want


_NAMED = ["gelu", "silu", "mish", "hardswish", "hardsigmoid", "logsigmoid", "softplus", "glu"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", _NAMED)
def test_activation_node_names_as_torch(backend: str, name: str, dtype: str) -> None:
    names = []
    for m, F in ((torch, TF), (tw, WF)):
        x = m.tensor([[1.0, -0.5], [2.0, 3.0]], dtype=getattr(m, dtype), requires_grad=True)
        names.append(getattr(F, name)(x).grad_fn.name())
    assert names[1] == names[0]
