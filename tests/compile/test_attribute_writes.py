"""A compiled replay leaves a module as the eager call does when the call rebinds Python
attributes: pruning's and ``weight_norm``'s forward pre-hooks ``setattr`` the weight they
compute, a forward rebinds a buffer or a plain tensor attribute, counts its calls. Each
case runs the same steps eagerly in PyTorch 2.13 and in TensorWeaver, eagerly and under
``tw.compile``, and compares every output, rebound attribute, gradient and parameter."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.utils.prune as tw_prune
import torch
import torch.nn.utils.prune as torch_prune
from tensorweaver.compiler import CompileWarning

STEPS = 6
RNG = np.random.default_rng(7)
W = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)
XS = RNG.standard_normal((STEPS, 2, 4)).astype(np.float32)
U, V = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
U, V = U / np.linalg.norm(U), V / np.linalg.norm(V)


def _linear(m: Any) -> Any:
    lin = m.nn.Linear(4, 3)
    with m.no_grad():
        lin.weight.copy_(m.tensor(W))
        lin.bias.copy_(m.tensor(B))
    return lin


def _pruned(m: Any) -> Any:
    lin = _linear(m)
    (tw_prune if m is tw else torch_prune).l1_unstructured(lin, "weight", 0.5)
    return lin


def _weight_normed(m: Any) -> Any:
    with warnings.catch_warnings():  # (PyTorch deprecates the hook-based weight_norm)
        warnings.simplefilter("ignore", FutureWarning)
        return m.nn.utils.weight_norm(_linear(m))


def _spectral_normed(m: Any) -> Any:
    """spectral_norm's pre-hook: a power iteration on the buffers weight_u and weight_v
    (PyTorch's writes them in place, TensorWeaver's rebinds them), then ``setattr``."""
    lin = m.nn.utils.spectral_norm(_linear(m))
    with m.no_grad():  # (drawn at random: the same start in both)
        lin.weight_u.copy_(m.tensor(U))
        lin.weight_v.copy_(m.tensor(V))
    return lin


def _host(value: Any) -> Any:
    if value is None or isinstance(value, (int, float)):
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    return np.asarray(value.detach()).copy()


def _picture(model: Any, names: tuple[str, ...]) -> dict:
    """The attributes ``names``, every parameter and its gradient, as NumPy arrays."""
    out = {name: _host(getattr(model, name)) for name in names}
    for name, p in model.named_parameters():
        out[name] = _host(p)
        out[f"{name}.grad"] = _host(p.grad)
    return out


def _same(want: list, got: list, rtol: float = 1e-4) -> None:
    """Pictures equal step for step (to float32 rounding, which grows with the steps)."""
    assert len(want) == len(got)
    for step, (a, b) in enumerate(zip(want, got)):
        assert a.keys() == b.keys(), step
        for key in a:
            if a[key] is None or isinstance(a[key], (int, float)):
                assert b[key] == a[key], (step, key)
            else:
                scale = float(np.abs(a[key]).max(initial=1.0))
                np.testing.assert_allclose(b[key], a[key], rtol, rtol * scale, err_msg=key)


def _train_forward(m: Any, build: Callable, names: tuple, compiled: bool) -> tuple[list, Any]:
    """SGD steps over ``build``'s model; the forward compiled, backward and step outside."""
    model = build(m)
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    forward = tw.compile(model) if compiled else model
    pictures = []
    for x in XS:
        opt.zero_grad()
        out = forward(m.tensor(x))
        (out**2).sum().backward()
        opt.step()
        pictures.append({"out": _host(out), **_picture(model, names)})
    return pictures, forward


def _train_step(m: Any, build: Callable, names: tuple, compiled: bool) -> tuple[list, Any]:
    """SGD steps over ``build``'s model, the whole step (forward, backward, step) compiled."""
    model = build(m)
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = (model(x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    fn = tw.compile(step) if compiled else step
    pictures = []
    for x in XS:
        loss = fn(m.tensor(x))
        pictures.append({"loss": _host(loss), **_picture(model, names)})
    return pictures, fn


def _evaluate(m: Any, build: Callable, names: tuple, compiled: bool) -> tuple[list, Any]:
    """Forwards under no_grad, the parameters changed in place between them."""
    model = build(m)
    forward = tw.compile(model) if compiled else model
    pictures = []
    for x in XS:
        with m.no_grad():
            for p in model.parameters():
                p.add_(0.25)
            out = forward(m.tensor(x))
        pictures.append({"out": _host(out), **_picture(model, names)})
    return pictures, forward


BUILDS = {"pruned": (_pruned, ("weight",)), "weight_norm": (_weight_normed, ("weight",))}
RUNS = {"train_forward": _train_forward, "train_step": _train_step, "evaluate": _evaluate}


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("build", list(BUILDS))
def test_a_replay_rebinds_the_weight_a_pre_hook_computes(build: str, run: str) -> None:
    # Before: a replay left module.weight as the last trace had computed it (the pre-hook's
    # setattr is Python, which a replay does not run).
    make, names = BUILDS[build]
    want, _ = RUNS[run](torch, make, names, False)
    eager, _ = RUNS[run](tw, make, names, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # replayed, not run eagerly
        got, compiled = RUNS[run](tw, make, names, True)
    _same(want, eager)
    _same(eager, got, 1e-6)
    assert compiled.traces <= 3  # the later steps replay


def test_the_replayed_weight_carries_the_gradient_to_the_parameters() -> None:
    # A backward through the rebound attribute itself (alone, or with the output) reaches
    # weight_orig, as eagerly.
    grads = []
    for compiled in (False, True):
        lin = _pruned(tw)
        forward = tw.compile(lin) if compiled else lin
        for i, x in enumerate(XS):
            lin.weight_orig.grad = None
            out = forward(tw.tensor(x))
            loss = (lin.weight * 3.0).sum() + (out.sum() if i % 2 else 0.0)
            loss.backward()
            grads.append(np.asarray(lin.weight_orig.grad).copy())
        assert lin.weight.requires_grad and lin.weight.grad_fn is not None
    for a, b in zip(grads[:STEPS], grads[STEPS:]):
        np.testing.assert_array_equal(b, a)


def test_an_attribute_the_call_stores_or_deletes_is_as_eager() -> None:
    # A forward that stores its argument, and deletes a temporary attribute it made.
    class Storing(tw.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(tw)
            self.seen = tw.zeros(2, 4)

        def forward(self, x: Any) -> Any:
            self.seen = x
            self.tmp = self.lin(x)
            out = self.tmp * 2.0
            del self.tmp
            return out

    model = Storing()
    compiled = tw.compile(model)
    with tw.no_grad():
        for x in XS:
            arg = tw.tensor(x)
            out = compiled(arg)
            assert model.seen is arg and "tmp" not in vars(model)
            np.testing.assert_array_equal(np.asarray(out), np.asarray(model.lin(arg) * 2.0))
    assert compiled.traces <= 3


def _counting(m: Any) -> Any:
    """A forward that counts its calls in a Python int and uses the count."""

    class Counting(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(m)
            self.calls = 0

        def forward(self, x: Any) -> Any:
            self.calls += 1
            return self.lin(x) * self.calls

    return Counting()


def _rebinding_buffer(m: Any) -> Any:
    """A forward that rebinds a buffer to a new tensor (not an in-place update)."""

    class Running(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(m)
            self.register_buffer("running", m.zeros(3))

        def forward(self, x: Any) -> Any:
            y = self.lin(x)
            self.running = self.running * 0.9 + y.detach().mean(0)
            return y - self.running

    return Running()


def _caching(m: Any) -> Any:
    """A forward that keeps tensors it computes in plain attributes, one with a graph."""

    class Caching(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(m)
            self.last = m.zeros(2, 3)
            self.scaled = m.zeros(3, 4)

        def forward(self, x: Any) -> Any:
            self.scaled = self.lin.weight * 2.0
            y = x @ self.scaled.T + self.last.sum()
            self.last = y.detach()
            return y

    return Caching()


OTHERS = {
    "counting": (_counting, ("calls",)),
    "rebinding_buffer": (_rebinding_buffer, ("running",)),
    "caching": (_caching, ("last", "scaled")),
    "spectral_norm": (_spectral_normed, ("weight", "weight_u", "weight_v")),
}


#: The cases that run eagerly, with a warning: a Python number the forward changes (the
#: graph would bake it in; torch.compile recompiles until its limit, then runs eagerly too).
EAGER = {("counting", run) for run in RUNS}


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("build", list(OTHERS))
def test_a_compiled_call_leaves_rebound_attributes_as_eagerly(build: str, run: str) -> None:
    # Before: a rebound buffer (tw's spectral_norm rebinds weight_u and weight_v) changed
    # the signature on every call, so the step traced three times and then ran eagerly; a
    # detach() of a differentiated forward's result kept in an attribute ran eagerly.
    make, names = OTHERS[build]
    want, _ = RUNS[run](torch, make, names, False)
    eager, _ = RUNS[run](tw, make, names, False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompileWarning)
        got, compiled = RUNS[run](tw, make, names, True)
    _same(want, eager)
    _same(eager, got, 1e-6)
    warned = [w for w in caught if issubclass(w.category, CompileWarning)]
    if (build, run) in EAGER:
        assert len(warned) == 1
    else:
        assert not warned and compiled.traces <= 3  # the later steps replay


def test_a_forward_that_keeps_its_result_leaves_one_object() -> None:
    # Before: the attribute kept the result of the last trace.
    class Keeping(tw.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(tw)

        def forward(self, x: Any) -> Any:
            self.out = self.lin(x)
            return self.out

    grads = []
    for compiled in (False, True):
        model = Keeping()
        forward = tw.compile(model) if compiled else model
        for x in XS:
            model.lin.weight.grad = None
            y = forward(tw.tensor(x))
            assert model.out is y
            (y.sum() + model.out.sum()).backward()
            grads.append(np.asarray(model.lin.weight.grad).copy())
        assert not compiled or forward.traces <= 3
    for a, b in zip(grads[:STEPS], grads[STEPS:]):
        np.testing.assert_array_equal(b, a)


def test_a_kept_detach_of_the_result_shares_its_memory_as_eagerly() -> None:
    class Keeping(tw.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(tw)

        def forward(self, x: Any) -> Any:
            out = self.lin(x)
            self.last = out.detach()
            return out

    # Before: it ran eagerly, with a warning (the alias of a result that autograd
    # differentiates later was not rebuilt).
    model = Keeping()
    forward = tw.compile(model)
    for x in XS:
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            y = forward(tw.tensor(x))
        assert not model.last.requires_grad
        with tw.no_grad():
            y.add_(1.0)  # reaches the kept detach(), as eagerly
        np.testing.assert_array_equal(np.asarray(model.last), np.asarray(y.detach()))
    assert forward.traces <= 3
