"""The generated guard checks the modules', optimizers' and named tensors' facts in line
(compiler/state_checks.py) rather than by walking the modules: each fact of the signature
that changes must still make it refuse (so that the step traces again), and a call it
accepts must have the signature it was made for."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler.guards import make_guard
from tensorweaver.compiler.state import StepState


class Step:
    """A training step whose model nests modules with parameters and buffers."""

    def __init__(self, optimizer: str = "sgd", seed: int = 0) -> None:
        tw.manual_seed(seed)
        self.model = nn.Sequential(
            nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Sequential(nn.ReLU(), nn.Linear(6, 3))
        )
        params = self.model.parameters()
        if optimizer == "sgd":
            self.optim = tw.optim.SGD(params, lr=0.1, momentum=0.9)
        else:
            self.optim = tw.optim.Adam(params, lr=0.01)
        self.scale = tw.ones(3)  # a tensor the step names itself
        rng = np.random.default_rng(seed)
        self.x = tw.tensor(rng.standard_normal((8, 4)), dtype=tw.float32)
        self.y = tw.tensor(rng.integers(0, 3, 8))

    def __call__(self) -> Any:
        self.optim.zero_grad()
        loss = F.cross_entropy(self.model(self.x) * self.scale, self.y)
        loss.backward()
        self.optim.step()
        return loss


class Guarded:
    """The guard of a step's signature now, and the checks of later calls against it."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.state = StepState(fn, (), {})
        self.key = self.state.signature((), {})
        self.guard = make_guard(self.state, fn, (), self.key)
        assert self.guard is not None

    def signature_kept(self) -> bool:
        return StepState(self.fn, (), {}, self.state).signature((), {}) == self.key

    def accepts(self) -> bool:
        """Whether the guard accepts the call now; it must not accept a changed signature
        (it may refuse more: a refused call computes its signature)."""
        accepted = self.guard((), {})
        assert accepted in (True, False)
        assert not accepted or self.signature_kept()
        return accepted

    def refuses(self) -> bool:
        """A fact of the signature changed, and the guard refuses."""
        return not self.signature_kept() and not self.accepts()


def settled(optimizer: str = "sgd") -> tuple[Step, Guarded]:
    """A step after two calls (gradients and optimizer state exist) and its guard."""
    step = Step(optimizer)
    step()
    step()
    guarded = Guarded(step.__call__)
    assert guarded.accepts()
    return step, guarded


def test_module_facts_fail_the_guard() -> None:
    step, guarded = settled()
    model = step.model
    inner = model[2]
    inner.eval()  # a nested module's training flag
    assert guarded.refuses()
    inner.train()
    assert guarded.accepts()
    weight = inner[1].weight
    inner[1].weight = nn.Parameter(weight.detach().clone())  # a parameter replaced
    assert guarded.refuses()
    inner[1].weight = weight
    assert guarded.accepts()
    inner[1].register_parameter("extra", nn.Parameter(tw.zeros(2)))  # a parameter added
    assert guarded.refuses()
    del inner[1].extra
    assert guarded.accepts()
    inner[1].register_buffer("count", tw.zeros(1))  # a buffer added
    assert guarded.refuses()
    del inner[1].count
    assert guarded.accepts()
    mean = model[1].running_mean
    model[1]._buffers["running_mean"] = mean.clone()  # a buffer replaced in the dict itself
    assert guarded.refuses()
    model[1]._buffers["running_mean"] = mean
    assert guarded.accepts()
    inner._modules["extra"] = nn.Identity()  # a module added in the dict itself
    assert guarded.refuses()
    del inner._modules["extra"]
    assert guarded.accepts()
    relu = inner[0]
    inner[0] = nn.ReLU()  # a module replaced by an equal one
    assert guarded.refuses()
    inner[0] = relu
    assert guarded.accepts()
    # The same parameters in another order: the signature lists them in that order.
    linear = model[0]
    w, b = linear.weight, linear.bias
    del linear._parameters["weight"]
    linear._parameters["weight"] = w
    assert guarded.refuses()
    del linear._parameters["bias"]
    del linear._parameters["weight"]
    linear._parameters["weight"], linear._parameters["bias"] = w, b
    assert guarded.accepts()


def test_tensor_facts_of_parameters_buffers_and_named_tensors_fail_the_guard() -> None:
    step, guarded = settled()
    weight = step.model[0].weight
    native = weight.native
    weight.data = tw.zeros(6, 5)  # its shape
    assert guarded.refuses()
    weight.data = tw.zeros(6, 4, dtype=tw.float64)  # its dtype
    assert guarded.refuses()
    weight.data = tw.ones(6, 4)  # another array of the same kind: accepted
    assert guarded.accepts()
    weight.native = native
    weight.requires_grad_(False)  # requires_grad
    assert guarded.refuses()
    weight.requires_grad_(True)
    grad = weight.grad
    weight.grad = None  # the gradient went
    assert guarded.refuses()
    weight.grad_dtype = None  # (as PyTorch: a gradient of another dtype is asked for)
    weight.grad = grad.double()  # the gradient's dtype
    assert guarded.refuses()
    weight.grad = grad
    assert guarded.accepts()
    mean = step.model[1].running_mean
    mean.data = tw.zeros(7)  # a buffer's shape
    assert guarded.refuses()
    mean.data = tw.zeros(6)
    assert guarded.accepts()
    step.scale.requires_grad_(True)  # a tensor the code names
    assert guarded.refuses()
    step.scale.requires_grad_(False)
    step.scale.grad = tw.zeros(3)
    assert guarded.refuses()
    step.scale.grad = None
    with tw.device("torch:cpu"):  # a backend
        step.model[0].bias.data = tw.zeros(6)
    assert guarded.refuses()


def test_optimizer_facts_fail_the_guard() -> None:
    step, guarded = settled()
    group = step.optim.param_groups[0]
    group["lr"] = 0.05  # recomputed by the replay (schedulers change them): not a guard
    group["momentum"] = 0.5
    assert guarded.accepts()
    group["momentum"] = 1  # its type
    assert guarded.refuses()
    group["momentum"] = 0.9
    group["dampening"] = 0.5  # a setting
    assert guarded.refuses()
    group["dampening"] = 0
    assert guarded.accepts()
    group["weight_decay"] = 0.0  # its type (0 before)
    assert guarded.refuses()
    group["weight_decay"] = 0
    group["extra"] = 1  # a key
    assert guarded.refuses()
    del group["extra"]
    assert guarded.accepts()
    params = group["params"]
    first = params[0]
    params[0] = nn.Parameter(first.detach().clone())  # a parameter of the group
    assert guarded.refuses()
    params[0] = first
    assert guarded.accepts()
    state = step.optim.state[first]
    buffer = state["momentum_buffer"]
    state["momentum_buffer"] = buffer.double()  # a state tensor's dtype
    assert guarded.refuses()
    del state["momentum_buffer"]  # a state entry
    assert guarded.refuses()
    state["momentum_buffer"] = buffer
    assert guarded.accepts()
    saved = step.optim.state_dict()
    step.optim.state.clear()  # all state
    assert guarded.refuses()
    step.optim.load_state_dict(saved)  # new group and state dicts (the replay reads them)
    assert guarded.refuses()
    step.optim.add_param_group({"params": [nn.Parameter(tw.zeros(2))]})  # a group
    assert guarded.refuses()


def test_adam_state_numbers() -> None:
    step, guarded = settled("adam")
    group = step.optim.param_groups[0]
    state = step.optim.state[group["params"][0]]
    count = state["step"]
    count.fill_(7.0)  # the step count's value: recomputed, not a guard
    assert guarded.accepts()
    state["step"] = 3.0  # its type (a 0-d tensor, as PyTorch's)
    assert guarded.refuses()
    state["step"] = count.double()  # its dtype
    assert guarded.refuses()
    state["step"] = count
    group["betas"] = (0.8, 0.99)  # recomputed by the replay (a scheduler cycles beta1)
    assert guarded.accepts()
    group["betas"] = [0.9, 0.999]  # its type
    assert guarded.refuses()
    group["betas"] = (0.9, 1)  # an element's type
    assert guarded.refuses()
    group["betas"] = (0.9, 0.999)
    group["eps"] = -group["eps"]  # a float setting, with its sign
    assert guarded.refuses()
    group["eps"] = 1e-8
    assert guarded.accepts()
    state["exp_avg"] = state["exp_avg"][:1]  # a state tensor's shape
    assert guarded.refuses()


class OwnParameters(nn.Module):
    """A module whose parameters() is its own: the guard calls the signature's walk."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.hidden = [nn.Parameter(tw.ones(3))]

    def parameters(self, recurse: bool = True) -> Any:
        yield from super().parameters(recurse)
        yield from self.hidden

    def forward(self, x: Any) -> Any:
        return self.linear(x) * self.hidden[0]


def test_a_module_with_its_own_traversal_is_guarded_by_the_signature() -> None:
    model = OwnParameters()
    x = tw.ones(2, 4)

    def fn() -> Any:
        return model(x).sum()

    guarded = Guarded(fn)
    assert guarded.accepts()
    model.hidden[0] = nn.Parameter(tw.ones(3))  # seen only through its parameters()
    assert guarded.refuses()


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.model[2].eval(),
        lambda s: setattr(s.model[2][1], "bias", nn.Parameter(tw.zeros(3))),
        lambda s: s.model[1].register_buffer("extra", tw.zeros(1)),
        lambda s: s.optim.param_groups[0].__setitem__("dampening", 0.5),
        lambda s: s.optim.state.clear(),
    ],
    ids=["training flag", "parameter", "buffer", "setting", "state"],
)
def test_a_changed_fact_traces_again_and_steps_as_eagerly(change: Callable) -> None:
    eager, ours = Step(), Step()
    compiled = tw.compile(ours.__call__)
    for _ in range(5):
        assert tw.equal(eager(), compiled())
    assert compiled._fast is not None
    traces = compiled.traces
    change(eager)
    change(ours)
    for _ in range(4):
        assert tw.equal(eager(), compiled())
    assert compiled.traces > traces
    for a, b in zip(eager.model.parameters(), ours.model.parameters()):
        assert tw.equal(a, b)


def test_a_module_swapped_for_another_without_parameters_traces_again() -> None:
    # The signature held training flags alone: a ReLU swapped for a Tanh replayed the ReLU.
    def model() -> Any:
        tw.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))

    x = tw.tensor(np.random.default_rng(0).standard_normal((8, 4)), dtype=tw.float32)
    eager, ours = model(), model()
    compiled = tw.compile(ours)
    for _ in range(4):
        assert tw.equal(eager(x), compiled(x))
    eager[1], ours[1] = nn.Tanh(), nn.Tanh()
    for _ in range(4):
        assert tw.equal(eager(x), compiled(x))


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_load_state_dict_between_compiled_steps(optimizer: str) -> None:
    # load_state_dict makes new group and state dicts: the replay read the learning rate and
    # the state from the old ones (a silent wrong answer) while the signature was equal.
    eager, ours = Step(optimizer), Step(optimizer)
    compiled = tw.compile(ours.__call__)
    for _ in range(5):
        assert tw.equal(eager(), compiled())
    for step in (eager, ours):
        step.optim.load_state_dict(step.optim.state_dict())
        step.optim.param_groups[0]["lr"] = 0.5
    for _ in range(5):
        assert tw.equal(eager(), compiled())
    for a, b in zip(eager.model.parameters(), ours.model.parameters()):
        assert tw.equal(a, b)
