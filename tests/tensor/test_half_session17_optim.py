"""Optimizer steps on float16 parameters as torch 2.13 (session 17).

torch's per-tensor Adam computes its half-precision updates in float32 and rounds each once
(``exp_avg.lerp_``, ``exp_avg_sq.mul_().addcmul_()``, ``addcdiv_``); tw's per-tensor ops do the
same. The NumPy backend's foreach primitives (the default path, ``foreach=None``) computed
them in float16 before session 17: 18 of 200 float16 parameters differed from torch after
3 Adam steps (91 of 200 first moments).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

STEPS = {
    "Adam": {"lr": 1e-2},
    "Adam amsgrad": {"lr": 1e-2, "amsgrad": True},
    "AdamW": {"lr": 1e-2, "weight_decay": 0.1},
    "Adam maximize": {"lr": 3e-3, "betas": (0.6, 0.95), "maximize": True},
}


def _stepped(m: Any, name: str, foreach: bool) -> list[np.ndarray]:
    """A float16 parameter and its moments after 3 seeded steps."""
    rng = np.random.default_rng(17)
    p = m.tensor(rng.standard_normal(200), dtype=m.float16, requires_grad=True)
    opt = getattr(m.optim, name.split()[0])([p], foreach=foreach, **STEPS[name])
    for _ in range(3):
        p.grad = m.tensor(rng.standard_normal(200) * 0.1, dtype=m.float16)
        opt.step()
    state = opt.state[p]
    return [np.asarray(t.detach().double().numpy()) for t in (p, state["exp_avg"])]


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("name", list(STEPS))
def test_float16_adam_step_as_torch(spec: str, name: str, foreach: bool) -> None:
    # held to torch's per-tensor step (torch's own foreach AdamW rounds the decay otherwise:
    # 8 of 200 parameters here; tw's foreach path keeps the per-tensor values on both)
    want = _stepped(torch, name, False)
    with entered(spec):
        got = _stepped(tw, name, foreach)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_numpy_float16_foreach_in_place_as_out_of_place() -> None:
    # foreach_inplace must write the out-of-place primitive's bits (computed in float32)
    rng = np.random.default_rng(3)
    y, z = ([rng.standard_normal(50).astype(np.float16) + 2] for _ in range(2))
    with entered("numpy"):
        backend = tw.empty(0).backend
        for name, args in (
            ("mul", (0.999,)),
            ("div_scalars", ([1.3],)),
            ("lerp", (y, 0.1)),
            ("lerp", (y, 0.7)),
            ("addcmul", (y, z, 0.01)),
            ("addcdiv", (y, z, [0.3])),
        ):
            xs = [rng.standard_normal(50).astype(np.float16)]
            want = getattr(backend, f"foreach_{name}")(xs, *args)
            assert backend.foreach_inplace(name, xs, *args)
            np.testing.assert_array_equal(xs[0], want[0])
