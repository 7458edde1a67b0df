"""The hook-based ``spectral_norm`` updates its ``_u``/``_v`` buffers in place, as PyTorch
does: the buffers stay the same objects (so a module holding them, a state_dict taken
before, or a replica sharing their memory sees each power iteration), and two forwards
can still be differentiated together (the values used are clones)."""

from __future__ import annotations

import numpy as np
import tensorweaver as tw
import torch

W = np.random.default_rng(0).standard_normal((5, 4))
X = np.random.default_rng(1).standard_normal((3, 4))


def _normed(lib):
    lin = lib.nn.Linear(4, 5, dtype=lib.float64)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(W))
        lin.bias.zero_()
    lin = lib.nn.utils.spectral_norm(lin)
    with lib.no_grad():  # (the same start for both libraries' power iteration)
        lin.weight_u.copy_(lib.tensor(np.linspace(1.0, 2.0, 5) / 4))
        lin.weight_v.copy_(lib.tensor(np.linspace(-1.0, 1.0, 4) / 3))
    return lin


def test_power_iteration_writes_the_buffers_in_place(backend):
    seen = []
    for lib in (tw, torch):
        lin = _normed(lib)
        u, v = lin.weight_u, lin.weight_v
        state = lin.state_dict()
        lin(lib.tensor(X))
        lin(lib.tensor(X))
        seen.append(
            (
                lin.weight_u is u and lin.weight_v is v,
                state["weight_u"].numpy().copy(),
                u._version > 0,
                lin.weight.detach().numpy().copy(),
            )
        )
    assert seen[0][0] and seen[1][0]
    assert seen[0][2] == seen[1][2]
    np.testing.assert_allclose(seen[0][1], seen[1][1], rtol=1e-12)
    np.testing.assert_allclose(seen[0][3], seen[1][3], rtol=1e-12)


def test_two_forwards_differentiate_together(backend):
    grads = []
    for lib in (tw, torch):
        lin = _normed(lib)
        loss = lin(lib.tensor(X)).sum() - lin(lib.tensor(X) * 2).square().sum()
        loss.backward()
        grads.append(lin.weight_orig.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)
