"""A compiled step whose class targets hold ``ignore_index`` (-100 beside the classes, as
padding in a language model) replays: the targets' range check reads back two numbers, and
the replay checks that the next batch's decide alike instead of requiring equal values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.compiler import CompileWarning
from tw_backends import FAST, entered

CLASSES = 5


def batches(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    out = []
    for i in range(n):
        target = rng.integers(0, CLASSES - i % 3, 12)  # the largest class differs too
        target[rng.integers(0, 12, 3)] = -100  # padding, at new places each batch
        out.append(target)
    return out


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_a_step_with_ignored_targets_replays_and_equals_eager(spec: str, loss: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 4))
    targets = batches(rng, 8)

    def run(compiled: bool) -> tuple[list[float], np.ndarray, int]:
        with entered(spec, float64=True, seed=0):
            model = tw.nn.Linear(4, CLASSES)
            opt = tw.optim.SGD(model.parameters(), lr=0.1)
            fn = getattr(tw.nn.functional, loss)

            def step(inputs: tw.Tensor, target: tw.Tensor) -> tw.Tensor:
                opt.zero_grad()
                out = model(inputs)
                out = out.log_softmax(1) if loss == "nll_loss" else out
                value = fn(out, target, ignore_index=-100)
                value.backward()
                opt.step()
                return value

            run_step = tw.compile(step) if compiled else step
            with warnings.catch_warnings():
                # before: "two traces gave different graphs", and every step ran eagerly
                warnings.simplefilter("error", CompileWarning)
                losses = [run_step(tw.tensor(x), tw.tensor(t)).item() for t in targets]
            traces = run_step.traces if compiled else 0
            return losses, np.asarray(model.weight.detach()), traces

    want, want_weight, _ = run(False)
    got, weight, traces = run(True)
    # bit-identical on NumPy; torch:cpu hands the graph to inductor, which fuses
    rtol = 0 if spec == "numpy" else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol)
    np.testing.assert_allclose(weight, want_weight, rtol=rtol)
    assert traces <= 3  # then every batch replays


@pytest.mark.parametrize("spec", FAST)
def test_an_out_of_range_target_still_raises_in_a_replay(spec: str) -> None:
    with entered(spec, float64=True, seed=0):
        model = tw.nn.Linear(4, CLASSES)
        step = tw.compile(lambda x, t: tw.nn.functional.cross_entropy(model(x), t))
        x = tw.ones(3, 4)
        for _ in range(4):
            step(x, tw.tensor([0, -100, 4]))
        with pytest.raises(IndexError, match="out of bounds"):
            step(x, tw.tensor([0, -100, CLASSES]))
        with pytest.raises(IndexError, match="out of bounds"):
            step(x, tw.tensor([-3, 1, 2]))
