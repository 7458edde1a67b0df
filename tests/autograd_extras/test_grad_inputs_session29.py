"""``autograd.grad``/``backward`` with their inputs named in a dict, and batched gradients
with ``materialize_grads``, next to torch 2.13's (autograd/engine.py ``_inputs``, ``grad``,
``_batched``)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from snippet_outcomes import same_each


def _leaves(m: Any) -> tuple:
    x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    w = m.tensor([2.0], dtype=m.float64, requires_grad=True)
    return x, w


def _backward_into_a_dict(m: Any) -> Any:
    x, w = _leaves(m)
    (x**2 * w).sum().backward(inputs={"x": x})
    return x.grad, w.grad


def _grad_of_another_mapping(m: Any) -> Any:
    x, _ = _leaves(m)
    return m.autograd.grad((x**2).sum(), OrderedDict(x=x))


def _backward_into_another_mapping(m: Any) -> Any:
    x, _ = _leaves(m)
    (x**2).sum().backward(inputs=OrderedDict(x=x))
    return x.grad


def _one_tensor_by_two_names(m: Any) -> Any:
    x, _ = _leaves(m)
    grads = m.autograd.grad((x**3).sum(), {"a": x, "b": x})
    return sorted(grads), grads["a"], grads["b"], grads["a"] is grads["b"]


def _unused_by_name(m: Any) -> Any:
    x, w = _leaves(m)
    grads = m.autograd.grad((x**2).sum(), {"x": x, "w": w}, allow_unused=True)
    materialized = m.autograd.grad((x**2).sum(), {"x": x, "w": w}, materialize_grads=True)
    return grads["x"], grads["w"], materialized["w"]


def _empty_dict(m: Any) -> Any:
    x, _ = _leaves(m)
    return m.autograd.grad((x**2).sum(), {})


def _batched_by_name(m: Any) -> Any:
    x, _ = _leaves(m)
    grads = m.autograd.grad(x.sin(), {"x": x}, m.eye(3, dtype=m.float64), is_grads_batched=True)
    return type(grads).__name__, grads["x"]


def _batched_materialized_under_create_graph(m: Any) -> Any:
    x, w = _leaves(m)
    y = (x**2).sin()
    jx, jw = m.autograd.grad(
        y, (x, w), m.eye(3, dtype=m.float64), is_grads_batched=True, create_graph=True,
        materialize_grads=True,
    )  # fmt: skip
    return jx, jw, jw.requires_grad, jw.grad_fn is None, jx.requires_grad


def _batched_unused_refused(m: Any) -> Any:
    x, w = _leaves(m)
    return m.autograd.grad(x.sin(), (x, w), m.eye(3, dtype=m.float64), is_grads_batched=True)


def _batched_unused_allowed(m: Any) -> Any:
    x, w = _leaves(m)
    return m.autograd.grad(
        x.sin(), (x, w), m.eye(3, dtype=m.float64), is_grads_batched=True, allow_unused=True
    )


INPUTS_BY_NAME = {
    "backward-dict": _backward_into_a_dict,
    "grad-ordered-dict": _grad_of_another_mapping,
    "backward-ordered-dict": _backward_into_another_mapping,
    "two-names": _one_tensor_by_two_names,
    "unused": _unused_by_name,
    "empty": _empty_dict,
    "batched": _batched_by_name,
}

BATCHED = {
    "materialized-create-graph": _batched_materialized_under_create_graph,
    "unused-refused": _batched_unused_refused,
    "unused-allowed": _batched_unused_allowed,
}


def test_inputs_named_in_a_dict_as_torch(spec: str) -> None:
    same_each(INPUTS_BY_NAME, spec)


def test_batched_grads_of_unused_inputs_as_torch(spec: str) -> None:
    same_each(BATCHED, spec)
