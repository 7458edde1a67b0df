"""Follow-ups of the twenty-eighth session's compiler work.

- A replayed forward differentiated with ``create_graph=True`` runs the function again; a
  number it reads through a dict or an object (guarded since this session,
  :class:`tensorweaver.compiler.state.ValuesRead`) changed between the forward and that
  backward was not part of the run again's check, so the gradient of another forward came
  back silently (torch's is the forward's own): it raises now, as for a number the
  function names.
- ``tw.save`` of a whole compiled module (an ``OptimizedModule``, which torch pickles as its
  module and compile settings) and ``tw.load`` of it.
"""

from __future__ import annotations

import collections
import io
import types
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import same

CALLS = 4  # two traces, then replays

CFG = {"k": 2.0}
SETTINGS = types.SimpleNamespace(k=2.0)


def _straight_through(m: Any, x: Any) -> Any:
    """``x``'s values with the gradient ``CFG["k"]``: the number reaches the backward alone
    (the forward's result does not show it)."""
    return (x.detach() + CFG["k"] * (x - x.detach())).tanh()


class Scaled(tw.nn.Module):
    """A forward reading an attribute of a module-level namespace."""

    def forward(self, x: tw.Tensor) -> tw.Tensor:
        return (x.detach() + SETTINGS.k * (x - x.detach())).tanh()


def _set(value: float) -> None:
    CFG["k"] = value
    SETTINGS.k = value


def _warm(compiled: Any) -> None:
    _set(2.0)
    for _ in range(CALLS):
        compiled(tw.full((3,), 0.3, dtype=tw.float64, requires_grad=True)).sum().backward()


def _compiled_programs() -> dict[str, Any]:
    return {
        "dict item": tw.compile(lambda x: _straight_through(tw, x), backend="tensorweaver"),
        "namespace attribute in a module's forward": tw.compile(Scaled(), backend="tensorweaver"),
    }


def _penalty(m: Any, f: Any, change: bool) -> tuple:
    """The gradient of ``f``'s forward (``create_graph=True``) and its own gradient, with
    the number changed after the forward if ``change``."""
    _set(2.0)
    x = m.full((3,), 0.3, dtype=m.float64, requires_grad=True)
    out = f(x).sum()
    if change:
        _set(5.0)
    try:
        (g,) = m.autograd.grad(out, [x], create_graph=True)
        g.square().sum().backward()
        return g, x.grad
    finally:
        _set(2.0)


@pytest.mark.parametrize("name", list(_compiled_programs()))
def test_a_number_read_through_an_object_changed_before_a_create_graph_backward(
    name: str,
) -> None:
    """Unchanged, the replay's double backward is torch's; changed (before: tw gave the
    gradient for 5.0, 4.58, where torch's forward used 2.0, 1.83) it raises."""
    compiled = _compiled_programs()[name]
    _warm(compiled)
    traces = compiled.traces

    def program(m: Any) -> tuple:
        return _penalty(m, compiled if m is tw else (lambda x: _straight_through(m, x)), False)

    same(program, "numpy")
    x = tw.full((3,), 0.3, dtype=tw.float64, requires_grad=True)
    out = compiled(x).sum()
    assert compiled.traces == traces  # (a replay: the case under test)
    _set(5.0)
    try:
        with pytest.raises(RuntimeError, match="cannot be run again"):
            tw.autograd.grad(out, [x], create_graph=True)
    finally:
        _set(2.0)
    # torch's gradient is the forward's own (k = 2), whatever the dict holds now
    xt = torch.full((3,), 0.3, dtype=torch.float64, requires_grad=True)
    out = _straight_through(torch, xt).sum()
    _set(5.0)
    try:
        (gt,) = torch.autograd.grad(out, [xt], create_graph=True)
    finally:
        _set(2.0)
    np.testing.assert_allclose(gt.detach().numpy(), 2.0 / np.cosh(0.3) ** 2, rtol=1e-12)


#: A number in an object of a library's class: the walk does not enter it (baked in).
UNWALKED = collections.OrderedDict(k=2.0)


def test_a_number_the_walk_does_not_reach_changed_before_a_create_graph_backward() -> None:
    """The run again gives another result than the replay: it raises rather than give the
    gradient of that other forward."""
    compiled = tw.compile(lambda x: (x * UNWALKED["k"]).tanh(), backend="tensorweaver")
    for _ in range(CALLS):
        compiled(tw.full((3,), 0.3, dtype=tw.float64, requires_grad=True)).sum().backward()
    traces = compiled.traces
    x = tw.full((3,), 0.3, dtype=tw.float64, requires_grad=True)
    out = compiled(x).sum()
    assert compiled.traces == traces
    UNWALKED["k"] = 5.0
    try:
        with pytest.raises(RuntimeError, match="another result than the replay"):
            tw.autograd.grad(out, [x], create_graph=True)
    finally:
        UNWALKED["k"] = 2.0


def test_optimized_module_is_exported() -> None:
    assert type(tw.compile(tw.nn.Linear(2, 2))) is tw.compiler.OptimizedModule
    assert "OptimizedModule" in tw.compiler.__all__


def _linear(m: Any) -> Any:
    lin = m.nn.Linear(2, 3).double()
    with m.no_grad():
        lin.weight.copy_(m.linspace(-1, 1, 6, dtype=m.float64).reshape(3, 2))
        lin.bias.fill_(0.25)
    return lin


def _round_trip(value: Any) -> Any:
    buffer = io.BytesIO()
    tw.save(value, buffer)
    buffer.seek(0)
    return tw.load(buffer)


def test_loaded_compiled_module_keeps_its_settings_and_replays() -> None:
    lin = _linear(tw)
    compiled = tw.compile(lin, backend="tensorweaver", mode="reduce-overhead", fullgraph=True)
    compiled.eval()
    loaded = _round_trip(compiled)
    settings = loaded.forward
    assert type(loaded) is tw.compiler.OptimizedModule and type(settings).__name__ == (
        "CompiledFunction"
    )
    assert (settings._fullgraph, settings._backend, settings._mode) == (
        True,
        "tensorweaver",
        "reduce-overhead",
    )
    assert not loaded.training and loaded._orig_mod is not lin
    ref = _linear(torch)
    value = np.linspace(-1.0, 1.0, 8).reshape(4, 2)
    for _ in range(CALLS):
        out = loaded(tw.tensor(value))
    assert loaded.traces == 2
    np.testing.assert_allclose(
        out.detach().numpy(), ref(torch.tensor(value)).detach().numpy(), rtol=1e-12
    )


def test_compiled_module_beside_its_module_stays_one_module() -> None:
    """A model holding a compiled block and the block itself comes back with one block (as
    torch's pickle keeps one object) and the state_dict it had (keys compared with torch's
    in test_compiled_module_session28.py)."""
    lin = _linear(tw)
    model = tw.nn.ModuleDict({"fast": tw.compile(lin), "plain": lin})
    loaded = _round_trip(model)
    assert loaded["fast"]._orig_mod is loaded["plain"]
    assert list(loaded.state_dict()) == list(model.state_dict())


def test_compiled_module_whose_forward_was_replaced_is_refused() -> None:
    compiled = tw.compile(_linear(tw))
    compiled.forward = lambda x: x
    with pytest.raises(TypeError, match="forward was replaced"):
        tw.save(compiled, io.BytesIO())


def _node(cls: str, compiled: Any, attributes: Any = ()) -> dict:
    """A module node holding a plain ``Module`` as ``_orig_mod`` (structure.py's format)."""
    inner = {"id": 1, "class": "tensorweaver.nn.modules.module:Module", "training": True}
    inner.update(parameters=[], buffers=[], modules=[], attributes=[])
    body = {"id": 0, "class": cls, "training": True, "parameters": [], "buffers": []}
    body.update(modules=[["_orig_mod", {"module": inner}]], attributes=list(attributes))
    if compiled is not None:
        body["compiled"] = compiled
    return {"module": body}


def _refused(message: str) -> Any:
    raise ValueError(message)


OPTIMIZED = "tensorweaver.compiler.compiled:OptimizedModule"
SETTINGS_NODE = {"fullgraph": False, "backend": "eager", "mode": None}


@pytest.mark.parametrize(
    ("node", "fragment"),
    [
        (_node("tensorweaver.nn.modules.module:Module", SETTINGS_NODE), "only an Optimized"),
        (_node(OPTIMIZED, None), "only an OptimizedModule"),
        (_node(OPTIMIZED, {**SETTINGS_NODE, "backend": "xla"}), "unknown backend"),
        (_node(OPTIMIZED, {**SETTINGS_NODE, "fullgraph": 1}), "must be a boolean"),
        (_node(OPTIMIZED, {"fullgraph": False}), "must have the fields"),
        (_node(OPTIMIZED, SETTINGS_NODE, [["scale", 2]]), "_orig_mod alone"),
    ],
    ids=str,
)
def test_malformed_compiled_module_nodes_are_refused(node: dict, fragment: str) -> None:
    from tensorweaver.serialization.structure import rebuild

    with pytest.raises(ValueError, match=fragment):
        rebuild(node, [], _refused, _refused)


def test_a_well_formed_compiled_module_node_is_rebuilt() -> None:
    """(The node the tests above spoil.)"""
    from tensorweaver.serialization.structure import rebuild

    loaded = rebuild(_node(OPTIMIZED, SETTINGS_NODE), [], _refused, _refused)
    assert type(loaded) is tw.compiler.OptimizedModule and loaded.forward._backend == "eager"
