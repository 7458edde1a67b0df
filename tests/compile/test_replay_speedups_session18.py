"""Session 18's cheaper replays: the result's autograd face built by a generated function,
the guard's two-test form of "no gradient hook", a constant ``x * 1`` feeding a foreach
update kept as ``x``, and the NumPy hook's gradient accumulation (``foreach_add`` with
alpha 1) as one add per pair, its ``sum`` without the method's frame, and float16 foreach
adds as the backend computes them. Each compiled step must give the eager bits, and the
guards must fire as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def accumulate(a: Any, b: Any) -> Any:
    y = ((a * b) + a).sum()
    y.backward()
    return y


def leaves(dtype: Any, device: str = "numpy") -> tuple[Any, Any]:
    a = tw.tensor(np.linspace(-1, 1, 16), dtype=dtype, device=device, requires_grad=True)
    b = tw.tensor(np.linspace(2, 3, 16), dtype=dtype, device=device, requires_grad=True)
    return a, b


@pytest.mark.parametrize("dtype", [tw.float64, tw.float32, tw.float16])
def test_accumulated_gradients_are_the_eager_bits(dtype: Any) -> None:
    eager, compiled = leaves(dtype), leaves(dtype)
    step = tw.compile(accumulate)
    for _ in range(6):
        want, got = accumulate(*eager), step(*compiled)
        assert np.array_equal(np.asarray(got.detach()), np.asarray(want.detach()))
    assert step.traces == 3 and len(step.graph_source()) == 1
    for e, c in zip(eager, compiled):
        assert np.array_equal(np.asarray(c.grad), np.asarray(e.grad))
    # and the eager values are torch's (float64: exact sums of these numbers)
    if dtype is tw.float64:
        ta, tb = (torch.tensor(np.asarray(t.detach()), requires_grad=True) for t in leaves(dtype))
        for _ in range(6):
            accumulate(ta, tb)
        np.testing.assert_allclose(np.asarray(compiled[0].grad), ta.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(compiled[1].grad), tb.grad.numpy(), rtol=1e-12)


def test_replayed_result_has_the_eager_autograd_face() -> None:
    eager, compiled = leaves(tw.float32), leaves(tw.float32)
    step = tw.compile(accumulate)
    for _ in range(5):
        want, got = accumulate(*eager), step(*compiled)
    first, second = step(*compiled), step(*compiled)
    for t in (want, got):
        assert t.requires_grad and not t.is_leaf
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    names = [type(f).__name__ for f, _ in got.grad_fn.next_functions if f is not None]
    wanted = [type(f).__name__ for f, _ in want.grad_fn.next_functions if f is not None]
    assert names == wanted
    assert first.grad_fn is not second.grad_fn  # fresh nodes on every replay, as eagerly
    with pytest.raises(RuntimeError, match="second time"):
        want.backward()
    with pytest.raises(RuntimeError, match="second time"):
        got.backward()


def keep(a: Any, b: Any) -> Any:
    y = (a * b).sum()
    y.retain_grad()
    y.backward()
    return y


def test_retained_result_keeps_its_grad_as_eagerly() -> None:
    eager, compiled = leaves(tw.float32), leaves(tw.float32)
    step = tw.compile(keep)
    for _ in range(5):
        want, got = keep(*eager), step(*compiled)
    assert step.traces == 3 and len(step.graph_source()) == 1
    assert got.grad is not None and np.array_equal(np.asarray(got.grad), np.asarray(want.grad))
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__


def test_hook_on_another_tensor_replays_and_a_hook_on_an_argument_retraces() -> None:
    a, b = leaves(tw.float32)
    step = tw.compile(accumulate)
    for _ in range(5):
        step(a, b)
    traces = step.traces
    other = tw.ones(3, requires_grad=True)
    handle = other.register_hook(lambda g: g * 2)  # a registry no longer empty
    step(a, b)
    assert step.traces == traces  # the guard looks at a's and b's hooks: none, still
    seen: list[Any] = []
    a_handle = a.register_hook(lambda g: seen.append(g) or g * 0)
    before = np.asarray(a.grad).copy()
    step(a, b)
    assert step.traces == traces + 1 and len(seen) == 1  # the guard fired: traced, hook ran
    assert np.array_equal(np.asarray(a.grad), before)  # its zeroed gradient added nothing
    a_handle.remove()
    handle.remove()


def test_float16_sgd_step_is_the_eager_bits() -> None:
    """The NumPy hook's foreach add ignored float16 (it rounded the product, then the sum,
    in float16, where the backend computes in float32 and rounds once): a compiled float16
    SGD step drifted from the eager one by one float16 step (before session 18)."""

    def make() -> tuple[Any, Any]:
        tw.manual_seed(0)
        model = tw.nn.Linear(70, 70).half()
        return model, tw.optim.SGD(model.parameters(), lr=0.1, foreach=True)

    def train(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
        return loss

    tw.manual_seed(1)
    x = tw.randn(8, 70).half()
    (m1, o1), (m2, o2) = make(), make()
    step = tw.compile(train)
    for _ in range(6):
        train(m1, o1, x), step(m2, o2, x)
    assert len(step.graph_source()) == 1
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert np.array_equal(np.asarray(p.detach()), np.asarray(q.detach()))


def test_complex_gradient_accumulation_keeps_the_eager_bits() -> None:
    """A complex ``y * 1`` is not ``y`` (an imaginary -0.0 becomes 0.0): accumulated complex
    gradients keep the eager bits and torch's signs of zero."""

    def step(a: Any, c: Any) -> Any:
        y = (a * c).real.sum()
        y.backward()
        return y

    values = np.array([1 + 1j, -2 + 0.5j, 3 - 1j], np.complex64)
    weights = np.array([2 + 0j, -1 + 0j, 0.5 + 0j], np.complex64)
    eager, compiled = (tw.tensor(values, requires_grad=True) for _ in range(2))
    c = tw.tensor(weights)
    fn = tw.compile(step)
    for _ in range(6):
        step(eager, c), fn(compiled, c)
    assert len(fn.graph_source()) == 1
    got, want = np.asarray(compiled.grad), np.asarray(eager.grad)
    assert np.array_equal(got.view(np.float32), want.view(np.float32))
    theirs = torch.tensor(values, requires_grad=True)
    for _ in range(6):
        step(theirs, torch.tensor(weights))
    np.testing.assert_array_equal(got, theirs.grad.numpy())
    assert np.array_equal(np.signbit(got.imag), np.signbit(theirs.grad.numpy().imag))
