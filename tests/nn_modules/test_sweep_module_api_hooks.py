"""Module hooks against PyTorch, the same code run with ``m = torch`` and
``m = tensorweaver``: forward pre-hooks and hooks (with_kwargs, prepend, always_call,
replacing inputs and outputs), full backward hooks and backward pre-hooks (seeing and
replacing gradients), the global hooks of nn.modules.module, and handles."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import test_sweep_module_api
import torch

backend = test_sweep_module_api.backend  # the fixture: numpy and torch:cpu in float64
same = test_sweep_module_api.same


def scaled(m: Any) -> Any:
    """``x * w`` with w = [1, 2, 3] (a Parameter), and a keyword ``shift``."""

    class Scale(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = m.nn.Parameter(m.tensor([1.0, 2.0, 3.0]))

        def forward(self, x: Any, y: Any = None, shift: float = 0.0) -> Any:
            out = x * self.w + shift
            return out if y is None else out + y

    return Scale()


def run(m: Any, module: Any, *args: Any, **kwargs: Any) -> list:
    """Forward and backward; the output, then every leaf's gradient."""
    leaves = [m.tensor(a, requires_grad=True) for a in args]
    out = module(*leaves, **kwargs)
    out.sum().backward()
    return [out, *(leaf.grad for leaf in leaves), module.w.grad]


def test_forward_pre_hook_replaces_args(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        seen: list = []
        module.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        module.register_forward_pre_hook(lambda mod, args: seen.append(len(args)))
        module.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a bare value
        return run(m, module, [1.0, 1.0, 1.0]), seen

    same(code)


def test_forward_pre_hook_with_kwargs(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        seen: list = []

        def hook(mod: Any, args: tuple, kwargs: dict) -> Any:
            seen.append(sorted(kwargs))
            return args, {**kwargs, "shift": 10.0}

        module.register_forward_pre_hook(hook, with_kwargs=True)
        return run(m, module, [1.0, 2.0, 3.0], shift=1.0), seen

    same(code)


def test_forward_pre_hook_bad_return(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        module.register_forward_pre_hook(lambda mod, a, k: a, with_kwargs=True)
        return module(m.ones(3))

    same(code)


def test_forward_hooks_order_prepend_and_replace(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        order: list = []
        module.register_forward_hook(lambda mod, args, out: order.append("a"))
        module.register_forward_hook(lambda mod, args, out: (order.append("b"), out * 3)[1])
        module.register_forward_hook(lambda mod, args, out: order.append("first"), prepend=True)
        module.register_forward_pre_hook(lambda mod, args: order.append("pre2"))
        module.register_forward_pre_hook(lambda mod, args: order.append("pre1"), prepend=True)
        return run(m, module, [1.0, 2.0, 3.0]), order

    same(code)


def test_forward_hook_with_kwargs(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        seen: list = []

        def hook(mod: Any, args: tuple, kwargs: dict, out: Any) -> Any:
            seen.append((len(args), dict(kwargs)))
            return out + kwargs["shift"]

        module.register_forward_hook(hook, with_kwargs=True)
        return run(m, module, [1.0, 2.0, 3.0], shift=2.0), seen

    same(code)


@pytest.mark.parametrize("always_call", [True, False])
def test_forward_hook_always_call(backend: str, always_call: bool) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        calls: list = []
        module.register_forward_hook(
            lambda mod, args, out: calls.append(out), always_call=always_call
        )
        try:
            module(m.ones(2))  # wrong size: forward raises
        except RuntimeError:
            pass
        return calls

    same(code)


def test_handles_remove_and_context(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        calls: list = []
        handle = module.register_forward_hook(lambda *a: calls.append("kept?"))
        handle.remove()
        handle.remove()  # twice is fine
        with module.register_forward_pre_hook(lambda *a: calls.append("ctx")):
            module(m.ones(3))
        module(m.ones(3))
        return calls, len(module._forward_hooks), len(module._forward_pre_hooks)

    same(code)


def test_full_backward_hook_sees_and_replaces(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        seen: list = []

        def hook(mod: Any, grad_input: tuple, grad_output: tuple) -> Any:
            seen.append((list(grad_input), list(grad_output)))
            return tuple(None if g is None else g * 10 for g in grad_input)

        module.register_full_backward_hook(hook)
        return run(m, module, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), seen

    same(code)


def test_full_backward_hook_input_without_grad(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        seen: list = []
        module.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        module(x, m.ones(3)).sum().backward()
        return seen, x.grad

    same(code)


def test_full_backward_hook_no_input_requires_grad(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        seen: list = []
        module.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
        module(m.ones(3)).sum().backward()
        return seen, module.w.grad

    same(code)


def test_backward_pre_hook_replaces_grad_output(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        order: list = []
        module.register_full_backward_pre_hook(
            lambda mod, go: (order.append("pre"), (go[0] * 2,))[1]
        )
        module.register_full_backward_hook(lambda mod, gi, go: order.append(("full", go)))
        module.register_full_backward_pre_hook(lambda mod, go: order.append("first"), prepend=True)
        return run(m, module, [1.0, 2.0, 3.0]), order

    same(code)


def test_backward_hook_wrong_count(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        module.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        return run(m, module, [1.0, 2.0, 3.0])

    same(code)


def test_global_forward_hooks_run_first(backend: str) -> None:
    def code(m: Any) -> Any:
        order: list = []
        module = m.nn.Sequential(scaled(m))
        module[0].register_forward_pre_hook(lambda mod, args: order.append("own pre"))
        module[0].register_forward_hook(lambda mod, args, out: order.append("own"))
        hooks = m.nn.modules.module
        handles = [
            hooks.register_module_forward_pre_hook(
                lambda mod, args: order.append(("pre", type(mod).__name__))
            ),
            hooks.register_module_forward_hook(
                lambda mod, args, out: (order.append(("post", type(mod).__name__)), out + 1)[1]
            ),
            hooks.register_module_forward_hook(
                lambda mod, args, kwargs, out: order.append(("kw", sorted(kwargs))),
                with_kwargs=True,
            ),
        ]
        try:
            out = module(m.tensor([1.0, 1.0, 1.0]))
        finally:
            for handle in handles:
                handle.remove()
        module(m.ones(3))  # removed: no more global calls
        return out, order

    same(code)


def test_global_backward_hooks(backend: str) -> None:
    def code(m: Any) -> Any:
        order: list = []
        module = scaled(m)
        module.register_full_backward_hook(lambda mod, gi, go: order.append("own"))
        hooks = m.nn.modules.module
        handles = [
            hooks.register_module_full_backward_pre_hook(
                lambda mod, go: order.append(("global pre", go))
            ),
            hooks.register_module_full_backward_hook(
                lambda mod, gi, go: (order.append("global"), (gi[0] * 0,))[1]
            ),
        ]
        try:
            result = run(m, module, [1.0, 2.0, 3.0])
        finally:
            for handle in handles:
                handle.remove()
        return result, order

    same(code)


def test_global_registration_hooks(backend: str) -> None:
    def code(m: Any) -> Any:
        seen: list = []
        hooks = m.nn.modules.module
        handles = [
            hooks.register_module_parameter_registration_hook(
                lambda mod, name, p: seen.append(("param", name))
            ),
            hooks.register_module_buffer_registration_hook(
                lambda mod, name, b: (seen.append(("buffer", name)), b * 0)[1]
            ),
            hooks.register_module_module_registration_hook(
                lambda mod, name, sub: seen.append(("module", name, type(sub).__name__))
            ),
        ]
        try:
            module = m.nn.Linear(2, 1)
            module.register_buffer("running", m.ones(2))
            module.child = m.nn.ReLU()
            module.running = m.ones(2) * 5
        finally:
            for handle in handles:
                handle.remove()
        return seen, module.running

    same(code)


def test_hooks_survive_deepcopy_and_state(backend: str) -> None:
    def code(m: Any) -> Any:
        import copy

        module = scaled(m)
        module.register_forward_hook(lambda mod, args, out: out * 0)
        clone = copy.deepcopy(module)
        return clone(m.ones(3)), len(clone._forward_hooks)

    same(code)


def test_lazy_linear_via_hook(backend: str) -> None:
    def code(m: Any) -> Any:
        layer = m.nn.LazyLinear(2)
        before = (
            type(layer).__name__,
            layer.has_uninitialized_params(),
            len(layer._forward_pre_hooks),
        )
        with m.no_grad():
            layer(m.ones(4, 3))
        return (
            before,
            type(layer).__name__,
            tuple(layer.weight.shape),
            len(layer._forward_pre_hooks),
        )

    same(code)


def test_lazy_state_dict_roundtrip(backend: str) -> None:
    def code(m: Any) -> Any:
        source = m.nn.LazyLinear(2)
        source(m.ones(1, 3))
        target = m.nn.LazyLinear(2)
        result = target.load_state_dict(source.state_dict())
        return repr(result), tuple(target.weight.shape), type(target).__name__

    same(code)


def test_repr_uninitialized(backend: str) -> None:
    same(lambda m: repr(m.nn.LazyLinear(3)))
    same(lambda m: repr(m.nn.LazyConv2d(4, 3)))


def test_hook_module_is_called_with_self(backend: str) -> None:
    def code(m: Any) -> Any:
        module = scaled(m)
        same_module: list = []
        module.register_forward_hook(lambda mod, args, out: same_module.append(mod is module))
        module.register_full_backward_hook(lambda mod, gi, go: same_module.append(mod is module))
        module(m.ones(3, requires_grad=True)).sum().backward()
        return same_module

    same(code)


def test_not_a_module_subclass_call(backend: str) -> None:
    for m in (tw, torch):
        with pytest.raises(NotImplementedError):
            m.nn.Module()(m.ones(1))


def custom_lazy(m: Any) -> Any:
    """A user-written lazy module: a scale as long as the input's last dimension."""

    class LazyScale(m.nn.modules.lazy.LazyModuleMixin, m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = m.nn.parameter.UninitializedParameter()
            self.register_buffer("count", m.nn.parameter.UninitializedBuffer())

        def initialize_parameters(self, x: Any) -> None:
            if self.has_uninitialized_params():
                with m.no_grad():
                    self.scale.materialize((x.shape[-1],))
                    self.scale.fill_(2.0)
                    self.count.materialize((1,))
                    self.count.zero_()

        def forward(self, x: Any) -> Any:
            return x * self.scale

    return LazyScale()


LAZY = {
    "custom before": lambda m: (
        repr(custom_lazy(m)),
        [type(v).__name__ for v in custom_lazy(m).state_dict().values()],
        [n for n, _ in custom_lazy(m).named_parameters()],
    ),
    "custom forward": lambda m: (
        lambda layer: (
            layer(m.ones(2, 3)),
            type(layer.scale).__name__,
            layer.has_uninitialized_params(),
            list(layer.state_dict()),
        )
    )(custom_lazy(m)),
    "to dtype before init": lambda m: (
        m.nn.LazyLinear(2).to(m.float32)(m.ones(1, 3, dtype=m.float32)).dtype
    ),
    "load uninitialized into uninitialized": lambda m: (
        m.nn.LazyLinear(2).load_state_dict(m.nn.LazyLinear(2).state_dict()).missing_keys
    ),
    "size mismatch after init": lambda m: (
        lambda layer: (
            layer(m.ones(1, 3)),
            layer.load_state_dict({"weight": m.ones(2, 4), "bias": m.ones(2)}),
        )
    )(m.nn.LazyLinear(2)),
    "conv": lambda m: (
        lambda layer: (layer(m.ones(1, 3, 4, 4)).shape, type(layer).__name__, repr(layer))
    )(m.nn.LazyConv2d(2, 3)),
    "batchnorm": lambda m: (
        lambda layer: (layer(m.ones(2, 3)).shape, layer.num_features, list(layer.state_dict()))
    )(m.nn.LazyBatchNorm1d()),
    "deepcopy then init": lambda m: (
        lambda layer: (layer(m.ones(1, 3)).shape, type(layer).__name__)
    )(__import__("copy").deepcopy(m.nn.LazyLinear(2))),
    "in a Sequential": lambda m: repr(m.nn.Sequential(m.nn.LazyLinear(4), m.nn.ReLU())),
    "gradient": lambda m: (
        lambda layer: (layer(m.ones(1, 3)).sum().backward(), layer.weight.grad)[1]
    )(m.nn.LazyLinear(2)),
    "second input size": lambda m: (lambda layer: (layer(m.ones(1, 3)), layer(m.ones(1, 4))))(
        m.nn.LazyLinear(2)
    ),
}


@pytest.mark.parametrize("name", list(LAZY))
def test_lazy(backend: str, name: str) -> None:
    same(LAZY[name])


def fixed_linear(m: Any, out: int) -> Any:
    layer = m.nn.Linear(2, out)
    with m.no_grad():
        layer.weight.copy_(m.arange(2 * out, dtype=m.float64).reshape(out, 2) / 3 - 0.5)
        layer.bias.fill_(0.25)
    return layer


def two_outputs(m: Any) -> Any:
    class Two(m.nn.Module):
        def forward(self, x: Any, y: Any = None) -> Any:
            return x * 2, (x * 3).sum()

    return Two()


def watched(m: Any, module: Any) -> list:
    seen: list = []
    module.register_full_backward_hook(lambda mod, gi, go: seen.append(("full", gi, go)))
    module.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", go)))
    return seen


def backward_case(kind: str) -> Callable[[Any], Any]:
    def code(m: Any) -> Any:
        x = m.tensor([[1.0, 2.0]], requires_grad=True)
        if kind in ("both outputs", "one output used", "keyword tensor"):
            module = two_outputs(m)
            seen = watched(m, module)
            y = m.tensor([[1.0, 2.0]], requires_grad=True)
            a, b = module(x, y=y) if kind == "keyword tensor" else module(x)
            loss = a.sum() if kind == "one output used" else a.sum() + b
        elif kind == "non-tensor argument":
            inner = fixed_linear(m, 1)

            class Scaled(m.nn.Module):
                def forward(self, x: Any, k: int) -> Any:
                    return inner(x) * k

            module = Scaled()
            seen = watched(m, module)
            loss = module(x, 3).sum()
        else:  # called twice in one graph
            module = fixed_linear(m, 1)
            seen = watched(m, module)
            loss = (module(x) + module(x * 2)).sum()
        loss.backward()
        return seen, x.grad

    return code


@pytest.mark.parametrize(
    "kind",
    ["both outputs", "one output used", "keyword tensor", "non-tensor argument", "twice"],
)
def test_backward_hooks_arguments(backend: str, kind: str) -> None:
    """grad_input / grad_output as PyTorch gives them (None for an output no gradient
    reaches, zeros for an input the output does not depend on)."""
    same(backward_case(kind))
