"""Python values a compiled step reads other than through its arguments, modules and
optimizer groups (reader I, session 27: D3, D4, D6, D7): a number or tensor read through a
named dict, list or plain object, a default argument, a helper function's globals, a
module's forward hook or a tensor hook, or a custom optimizer's attribute, changed once
after the graph is confirmed, is seen by the next call as eagerly (``torch.compile``
guards all of these). Each program runs under torch eagerly and under ``tw.compile``."""

from __future__ import annotations

import functools
import types
from typing import Any

import tensorweaver as tw
from compiled_calls import compiled_calls
from snippet_outcomes import same_each

SCALE = 1.0
SHIFT = tw.ones(2, dtype=tw.float64)


def _number_through(m: Any, where: str) -> list:
    holder: Any = {
        "dict": {"scale": 1.0},
        "list": [1.0],
        "attr": types.SimpleNamespace(scale=1.0),
    }[where]
    read = {
        "dict": lambda x: x * holder["scale"],
        "list": lambda x: x * holder[0],
        "attr": lambda x: x * holder.scale,
    }[where]

    def change() -> None:
        if where == "dict":
            holder["scale"] = 5.0
        elif where == "list":
            holder[0] = 5.0
        else:
            holder.scale = 5.0

    return compiled_calls(m, read, change)


def _default_number(m: Any) -> list:
    def step(x, scale=2.0):
        return x * scale

    return compiled_calls(m, step, lambda: setattr(step, "__defaults__", (7.0,)))


def _keyword_default_number(m: Any) -> list:
    def step(x, *, scale=2.0):
        return x * scale

    return compiled_calls(m, step, lambda: step.__kwdefaults__.update(scale=7.0))


def test_numbers_read_through_named_objects_retrace() -> None:
    # Before: the traced number stayed in the graph (calls 4 and 5 gave the old product).
    same_each(
        {
            "dict": lambda m: _number_through(m, "dict"),
            "list": lambda m: _number_through(m, "list"),
            "attr": lambda m: _number_through(m, "attr"),
            "default": _default_number,
            "keyword default": _keyword_default_number,
        },
        "numpy",
    )


def _scaled(t: Any) -> Any:
    return t * SCALE  # a global read by a helper, not by the compiled function


def _set_scale(value: float) -> None:
    global SCALE
    SCALE = value


def _global_read_by_a_helper(m: Any) -> list:
    _set_scale(1.0)
    return compiled_calls(m, lambda x: _scaled(x) + 1, lambda: _set_scale(10.0))


def _global_read_two_helpers_down(m: Any) -> list:
    _set_scale(1.0)

    def outer(x):
        return _scaled(x) - 1

    return compiled_calls(m, lambda x: outer(x) * 2, lambda: _set_scale(10.0))


def _global_read_through_a_partial(m: Any) -> list:
    _set_scale(1.0)
    scaled = functools.partial(lambda t, k: _scaled(t) * k, k=3.0)
    return compiled_calls(m, lambda x: scaled(x) + 1, lambda: scaled.keywords.update(k=4.0))


def _global_read_by_a_forward_hook(m: Any) -> list:
    _set_scale(1.0)
    lin = m.nn.Linear(2, 2).double()
    with m.no_grad():
        lin.weight.fill_(0.5)
        lin.bias.fill_(0.1)
    lin.register_forward_hook(lambda mod, i, o: o * SCALE)
    return compiled_calls(m, lin, lambda: _set_scale(10.0))


def _global_read_by_a_forward(m: Any) -> list:
    _set_scale(1.0)

    class Scaled(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = m.nn.Linear(2, 2).double()

        def forward(self, x):
            return self.lin(x) * SCALE

    net = Scaled()
    with m.no_grad():
        net.lin.weight.fill_(0.5)
        net.lin.bias.fill_(0.1)
    return compiled_calls(m, net, lambda: _set_scale(10.0))


def _trained(m: Any, w: Any, opt: Any, change: Any) -> tuple:
    """Seven compiled steps of ``opt`` on the loss ``((w * x) ** 2).sum()`` (``change()``
    before the fifth): the losses, and ``w`` after them."""

    def step(x):
        opt.zero_grad()
        loss = ((w * x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    return compiled_calls(m, step, change, calls=7), w


def _global_read_by_a_tensor_hook(m: Any) -> tuple:
    _set_scale(1.0)
    w = m.nn.Parameter(m.ones(2, dtype=m.float64))
    w.register_hook(lambda g: g * SCALE)
    opt = m.optim.SGD([w], lr=0.1)
    return _trained(m, w, opt, lambda: _set_scale(3.0))


def test_numbers_read_by_helpers_and_hooks_retrace() -> None:
    # Before: a global read by a function the step calls, by a module's forward hook or its
    # forward, or by a tensor hook kept its traced value.
    same_each(
        {
            "helper": _global_read_by_a_helper,
            "helper of a helper": _global_read_two_helpers_down,
            "partial": _global_read_through_a_partial,
            "forward hook": _global_read_by_a_forward_hook,
            "forward": _global_read_by_a_forward,
            "tensor hook": _global_read_by_a_tensor_hook,
        },
        "numpy",
    )


def _custom_optimizer_number(m: Any) -> tuple:
    class Scaled(m.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})
            self.scale = 1.0

        @m.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad, alpha=-group["lr"] * self.scale)

    w = m.nn.Parameter(m.ones(2, dtype=m.float64))
    opt = Scaled([w])
    return _trained(m, w, opt, lambda: setattr(opt, "scale", 5.0))


def test_a_custom_optimizers_number_retraces() -> None:
    # Before: the replays kept scale 1.0 (losses 0.21, 0.14 where torch's are 0, 0).
    same_each({"optimizer attribute": _custom_optimizer_number}, "numpy")


def _tensor_rebound_on_a_plain_object(m: Any) -> list:
    cfg = types.SimpleNamespace(t=m.ones(2, dtype=m.float64))
    return compiled_calls(
        m, lambda x: x * cfg.t, lambda: setattr(cfg, "t", m.full((2,), 3.0, dtype=m.float64))
    )


def _shifted(t: Any) -> Any:
    return t + SHIFT  # a global tensor read by a helper


def _tensor_rebound_in_a_helpers_global(m: Any) -> list:
    global SHIFT
    SHIFT = m.ones(2, dtype=m.float64)

    def change() -> None:
        global SHIFT
        SHIFT = m.full((2,), 3.0, dtype=m.float64)

    return compiled_calls(m, lambda x: _shifted(x) * 2, change)


def test_a_tensor_the_caller_rebinds_is_read_anew() -> None:
    # Before: the replay kept reading the old tensor, found by the search of live tensors.
    same_each(
        {
            "plain object": _tensor_rebound_on_a_plain_object,
            "helper's global": _tensor_rebound_in_a_helpers_global,
        },
        "numpy",
    )


def test_unchanged_values_keep_replaying_under_the_fast_guard() -> None:
    """Values read elsewhere that hold still cost no trace, and the guard generated for the
    signature checks them (a change after it is caught on the fast path)."""
    cfg = types.SimpleNamespace(scale=2.0, inner={"shift": 1.0})
    f = tw.compile(lambda x: _scaled(x) * cfg.scale + cfg.inner["shift"])
    x = tw.ones(2, dtype=tw.float64)
    _set_scale(1.0)
    for _ in range(6):
        assert tw.equal(f(x), tw.full((2,), 3.0, dtype=tw.float64))
    assert f.traces == 2 and f._fast is not None  # (replaying under the generated guard)
    cfg.inner["shift"] = -1.0
    assert tw.equal(f(x), tw.full((2,), 1.0, dtype=tw.float64))


def _log_and_scales(m: Any) -> tuple:
    log: list = []
    scales = [1.0, 2.0]

    def step(x):
        log.append(1)  # a side effect of the step: not a change of what it reads
        return x * scales[0] + scales[1]

    got = compiled_calls(m, step, lambda: scales.__setitem__(1, -3.0))
    return got, len(log) > 0


def test_a_list_the_step_appends_to_is_no_guard_but_one_the_caller_changes_is() -> None:
    same_each({"log and scales": _log_and_scales}, "numpy")
    log: list = []
    f = tw.compile(lambda x: log.append(1) or x * 2)
    for _ in range(5):
        f(tw.ones(2))
    assert f.traces == 2 and len(log) == 2  # (side effects happen on the calls that trace)
