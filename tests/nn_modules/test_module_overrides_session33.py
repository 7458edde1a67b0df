"""Module.parameters() honours a named_parameters/named_modules set on the instance or on a
child instance, as torch's (reader r3, session 33: a parameters() fast path tried in this
session ignored the first; named_modules ignored the second before); a compiled forward
under saved_tensors_hooks calls the hooks as eager does (it runs eagerly: session 34)."""

from __future__ import annotations

import warnings
from typing import Any

import tensorweaver as tw
from snippet_outcomes import same_each


def _only_second_layer(m: Any) -> list:
    net = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.Linear(2, 3))
    every = net.named_parameters

    def named_parameters(prefix="", recurse=True, remove_duplicate=True):
        return ((n, p) for n, p in every(prefix, recurse, remove_duplicate) if n[0] == "1")

    net.named_parameters = named_parameters  # (a wrapper hiding frozen parameters)
    return [tuple(p.shape) for p in net.parameters()]


def _no_modules(m: Any) -> list:
    lin = m.nn.Linear(2, 2)
    lin.named_modules = lambda memo=None, prefix="", remove_duplicate=True: iter(())
    return [tuple(p.shape) for p in lin.parameters()]


def _child_walks_itself(m: Any) -> list:
    net = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.Sequential(m.nn.Linear(2, 3)))
    child = net[1]
    child.named_modules = lambda memo=None, prefix="", remove_duplicate=True: iter(
        [(prefix, child)]
    )
    return [tuple(p.shape) for p in net.parameters()]


def test_parameters_honours_an_instance_override() -> None:
    same_each({"named_parameters": _only_second_layer, "named_modules": _no_modules}, "numpy")


def test_parameters_honours_a_childs_instance_named_modules() -> None:
    same_each({"child": _child_walks_itself}, "numpy")


def _hook_calls_per_call(wrap: Any) -> list:
    tw.manual_seed(0)
    w = tw.randn(3, 3, requires_grad=True)
    forward = wrap(lambda x: (x @ w).tanh().sum())
    x = tw.randn(2, 3)
    counts = {"pack": 0, "unpack": 0}

    def pack(t: Any) -> Any:
        counts["pack"] += 1
        return t

    def unpack(t: Any) -> Any:
        counts["unpack"] += 1
        return t

    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tw.autograd.graph.saved_tensors_hooks(pack, unpack):
            for _ in range(4):
                loss = forward(x)
                packed = counts["pack"]
                loss.backward()
                seen.append((packed, counts["unpack"]))
    return seen


def test_compiled_forward_calls_saved_tensors_hooks_as_eager() -> None:
    assert _hook_calls_per_call(tw.compile) == _hook_calls_per_call(lambda f: f)
