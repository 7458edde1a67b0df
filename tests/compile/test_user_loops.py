"""Compiled against eager training loops as users write them (gradient accumulation over two
calls, ``zero_grad(set_to_none=False)``, train/eval switches, ``no_grad`` evaluation between
steps, a scheduler stepped outside, gradient clipping, dropout from the same seed, integer
and boolean inputs, a smaller last batch, BatchNorm's running statistics): every loss,
weight, gradient and buffer bit for bit the eager loop's, on NumPy and on torch:cpu (the
core's replay: the same primitives in the same order), and the compiled loop replays."""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning

DEVICES = ["numpy", "torch:cpu"]


def model(device: str, dropout: float = 0.0, norm: bool = False) -> nn.Module:
    tw.manual_seed(0)
    with tw.device(device):
        middle = nn.BatchNorm1d(8) if norm else nn.Dropout(dropout)
        return nn.Sequential(nn.Linear(6, 8), middle, nn.ReLU(), nn.Linear(8, 3))


def batch(device: str, seed: int, n: int = 5) -> tuple[tw.Tensor, tw.Tensor]:
    rng = np.random.default_rng(seed)
    x = tw.tensor(rng.standard_normal((n, 6)).astype(np.float32), device=device)
    return x, tw.tensor(rng.integers(0, 3, n), device=device)


def host(t: tw.Tensor) -> np.ndarray:
    """A copy of ``t``'s values, through a clone: ``.numpy()`` of the tensor itself would
    share its memory with NumPy (see the test at the end)."""
    return t.detach().clone().numpy()


def weights(m: nn.Module) -> list[np.ndarray]:
    found = [host(p) for p in m.parameters()]
    return found + [host(p.grad) for p in m.parameters() if p.grad is not None]


def loop_accumulate(device: str, compile: Callable) -> tuple[list, list]:
    m = model(device)
    opt = tw.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def half_step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        loss = F.cross_entropy(m(x), y) / 2
        loss.backward()
        return loss

    fn, seen = compile(half_step), []
    for i in range(8):
        seen.append(host(fn(*batch(device, i))))
        if i % 2:
            opt.step()
            opt.zero_grad(set_to_none=i % 4 == 1)
            seen += weights(m)
    return seen, [fn]


def loop_zero_in_place(device: str, compile: Callable) -> tuple[list, list]:
    m = model(device)
    opt = tw.optim.Adam(m.parameters(), lr=0.01)

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    fn, seen = compile(step), []
    for i in range(6):
        seen.append(host(fn(*batch(device, i))))
        seen += weights(m)
    return seen, [fn]


def loop_train_eval(device: str, compile: Callable) -> tuple[list, list]:
    """Dropout from one seed; every third step in eval mode; a no_grad evaluation of the
    compiled module after each step, in eval mode."""
    m = model(device, dropout=0.3)
    opt = tw.optim.SGD(m.parameters(), lr=0.1)
    forward = compile(m)

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    fn, seen = compile(step), []
    tw.manual_seed(1)
    for i in range(9):
        m.train(i % 3 != 2)
        x, y = batch(device, i)
        seen.append(host(fn(x, y)))
        seen += weights(m)
        m.eval()
        with tw.no_grad():
            seen.append(host(forward(x)))
    return seen, [fn, forward]


def loop_schedule_and_clip(device: str, compile: Callable) -> tuple[list, list]:
    m = model(device)
    opt = tw.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
    schedule = tw.optim.lr_scheduler.StepLR(opt, 2, 0.5)

    def step(x: tw.Tensor, y: tw.Tensor) -> tuple[tw.Tensor, tw.Tensor]:
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y) * 10
        loss.backward()
        norm = nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        opt.step()
        return loss, norm

    fn, seen = compile(step), []
    for i in range(8):
        loss, norm = fn(*batch(device, i))
        schedule.step()
        seen += [host(loss), host(norm), *weights(m)]
    return seen, [fn]


def loop_integer_inputs(device: str, compile: Callable) -> tuple[list, list]:
    tw.manual_seed(0)
    with tw.device(device):
        embed, head = nn.Embedding(10, 4), nn.Linear(4, 1)
    params = [*embed.parameters(), *head.parameters()]
    opt = tw.optim.SGD(params, lr=0.1)

    def step(ids: tw.Tensor, keep: tw.Tensor, scale: int) -> tuple:
        opt.zero_grad()
        h = head(embed(ids)).squeeze(-1).masked_fill(~keep, 0.0)
        loss = (h * h).sum() * scale
        loss.backward()
        opt.step()
        return loss, (ids * 2).sum(), keep.logical_not()

    fn, seen = compile(step), []
    rng = np.random.default_rng(0)
    for i in range(6):
        ids = tw.tensor(rng.integers(0, 10, (3, 4)), device=device)
        keep = tw.tensor(rng.random((3, 4)) > 0.5, device=device)
        seen += [host(t) for t in fn(ids, keep, 2 if i < 3 else 3)]
        seen += [host(p) for p in params]
    return seen, [fn]


def loop_last_batch_smaller(device: str, compile: Callable) -> tuple[list, list]:
    """A smaller batch every fourth step, and BatchNorm's running statistics."""
    m = model(device, norm=True)
    opt = tw.optim.Adam(m.parameters(), lr=0.01)

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    fn, seen = compile(step), []
    for i in range(12):
        seen.append(host(fn(*batch(device, i, 5 if i % 4 != 3 else 2))))
        seen += [*weights(m), host(m[1].running_mean), host(m[1].running_var)]
    return seen, [fn]


LOOPS = [
    loop_accumulate,
    loop_zero_in_place,
    loop_train_eval,
    loop_schedule_and_clip,
    loop_integer_inputs,
    loop_last_batch_smaller,
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("loop", LOOPS, ids=lambda f: f.__name__)
def test_compiled_loop_equals_the_eager_loop(device: str, loop: Callable) -> None:
    want, _ = loop(device, lambda f: f)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # no step runs eagerly
        got, compiled = loop(device, lambda f: tw.compile(f, backend="tensorweaver"))
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"value {k}"
    for fn in compiled:
        assert fn.graph_source(), "never replayed"


def test_step_replays_after_numpy_of_its_weights() -> None:
    m = model("numpy")
    opt = tw.optim.SGD(m.parameters(), lr=0.1)

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for i in range(4):
            fn(*batch("numpy", i))
            [p.grad.numpy().copy() for p in m.parameters()]
    assert fn.graph_source()
