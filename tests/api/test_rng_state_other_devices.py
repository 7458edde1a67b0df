"""Random streams of the devices a block draws on besides the current one and its inputs'.

PyTorch has one CPU generator, so ``checkpoint`` and ``fork_rng`` cover every CPU draw. Here
each CPU backend (NumPy, torch:cpu, cuPyNumeric) has its own stream: a checkpointed block
that moves its input to another CPU backend and draws there must recompute the same mask,
and seeds set inside ``fork_rng`` must not leak out to the devices created after it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.utils import checkpoint as wcp
from tw_backends import entered

PAIRS = [("numpy", "torch:cpu"), ("torch:cpu", "numpy")]


@pytest.mark.parametrize(("home", "other"), PAIRS, ids=["numpy-to-torch", "torch-to-numpy"])
@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_checkpoint_repeats_draws_on_another_cpu_backend(
    home: str, other: str, reentrant: bool
) -> None:
    p = 0.5
    masks: list[np.ndarray] = []

    def block(v: Any) -> Any:
        dropped = tw.nn.functional.dropout(v.to(other), p, True)
        masks.append(np.asarray(dropped.detach()) != 0)
        return dropped.to(home) * 2.0

    with entered(home):
        tw.manual_seed(3)
        x = tw.ones(400, dtype=tw.float64, requires_grad=True)
        y = wcp.checkpoint(block, x, use_reentrant=reentrant)
        y.sum().backward()
    assert len(masks) == 2 and 0.4 < masks[0].mean() < 0.6
    np.testing.assert_array_equal(masks[1], masks[0])  # the recomputation drew the same
    np.testing.assert_array_equal(np.asarray(x.grad), masks[0] * 2.0 / (1 - p))


def test_checkpoint_puts_another_cpu_backends_stream_back() -> None:
    """Draws on the other backend after the backward are those of a run without it."""

    def block(v: Any) -> Any:
        return tw.nn.functional.dropout(v.to("torch:cpu"), 0.5, True).to("numpy") * 1.0

    def after(checkpointed: bool) -> np.ndarray:
        with entered("numpy"):
            tw.manual_seed(5)
            x = tw.ones(50, dtype=tw.float64, requires_grad=True)
            y = wcp.checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
            y.sum().backward()
            return np.asarray(tw.rand(6, device="torch:cpu"))

    np.testing.assert_array_equal(after(True), after(False))


def _first_draws_on_torch_cpu(block: str) -> list:
    """In a fresh process: seed 11, run ``block``, then make torch:cpu's backend and draw."""
    code = (
        "import tensorweaver as tw\n"
        "tw.set_backend('numpy')\n"
        "tw.manual_seed(11)\n"
        f"{block}\n"
        "print(tw.rand(4, device='torch:cpu').tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_seed_set_inside_fork_rng_does_not_reach_devices_made_after_it() -> None:
    tw.manual_seed(11)  # a backend that exists draws what one made after the seed draws
    want = tw.rand(4, device="torch:cpu").tolist()
    assert _first_draws_on_torch_cpu("with tw.random.fork_rng():\n    tw.manual_seed(99)") == want
