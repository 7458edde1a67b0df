"""The optimizers' scalar state tensors (``state["step"]``, NAdam's ``mu_product``, ...):
every change a user makes to one between steps (in place, through ``.data``, an alias,
NumPy's shared memory, a new tensor) is seen by the next step, eagerly and in a replay, as
in PyTorch 2.13 (a guard for any cache of their values on the host)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

BACKENDS = ["numpy", "torch:cpu"]


@pytest.fixture(params=BACKENDS)
def device(request: pytest.FixtureRequest) -> Any:
    """The test runs on this device."""
    with tw.device(request.param):
        yield request.param


def _setup(m: Any, name: str) -> tuple:
    rng = np.random.default_rng(0)
    w = m.nn.Parameter(m.tensor(rng.standard_normal((2, 3)), dtype=m.float64))
    x = m.tensor(rng.standard_normal((4, 3)), dtype=m.float64)
    opt = getattr(m.optim, name)([w], lr=0.1)

    def step() -> Any:
        opt.zero_grad()
        loss = ((x @ w.T) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    return w, opt, step


def _numpy_write(t: Any, value: float) -> None:
    t.numpy()[...] = value  # (shared memory on both backends, as torch:cpu's)


def _alias_write(t: Any, value: float) -> None:
    t.detach().fill_(value)


def _view_write(t: Any, value: float) -> None:
    t.view(1)[0] = value


CHANGES: dict[str, Callable[[Any, dict, str, float], None]] = {
    "fill_": lambda m, state, key, v: state[key].fill_(v),
    "data": lambda m, state, key, v: state[key].data.fill_(v),
    "data_assigned": lambda m, state, key, v: setattr(
        state[key], "data", m.tensor(v, dtype=state[key].dtype)
    ),
    "alias": lambda m, state, key, v: _alias_write(state[key], v),
    "view": lambda m, state, key, v: _view_write(state[key], v),
    "numpy": lambda m, state, key, v: _numpy_write(state[key], v),
    "copy_": lambda m, state, key, v: state[key].copy_(m.tensor(v, dtype=state[key].dtype)),
}


#: (device, change): every change on NumPy, those that reach the memory itself on torch:cpu.
CASES = [("numpy", change) for change in CHANGES] + [
    ("torch:cpu", "numpy"),
    ("torch:cpu", "alias"),
]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize(("device", "change"), CASES, indirect=["device"])
def test_a_users_change_of_the_step_count_is_seen(change: str, compiled: bool, device: str):
    w, opt, step = _setup(torch, "Adam")
    ours_w, ours_opt, ours_step = _setup(tw, "Adam")
    run = tw.compile(ours_step, backend="tensorweaver") if compiled else ours_step
    held = []
    for n in range(9):
        if n in (4, 7):  # (after the traces: a replay must see it)
            CHANGES[change](torch, opt.state[w], "step", 20.0 + n)
            CHANGES[change](tw, ours_opt.state[ours_w], "step", 20.0 + n)
        step()
        run()
        held.append(ours_opt.state[ours_w]["step"])
        assert ours_opt.state[ours_w]["step"].item() == opt.state[w]["step"].item()
        np.testing.assert_allclose(ours_w.detach().numpy(), w.detach().numpy(), rtol=1e-12)
    # The tensor the state holds is the one a user took: it shows each new count.
    assert all(t is held[0] for t in held) or change == "data_assigned"


def test_nadam_mu_product_read_back_as_its_dtype_rounds_it(device: str) -> None:
    # mu_product is float32 and no integer: the step reads back the value the tensor holds.
    # (A compiled NAdam step runs eagerly: its rounding to float32 is not recomputed.)
    w, opt, step = _setup(torch, "NAdam")
    ours_w, ours_opt, run = _setup(tw, "NAdam")
    for n in range(8):
        if n == 5:
            CHANGES["fill_"](torch, opt.state[w], "mu_product", 0.3)
            CHANGES["fill_"](tw, ours_opt.state[ours_w], "mu_product", 0.3)
        step()
        run()
        ours, theirs = ours_opt.state[ours_w]["mu_product"], opt.state[w]["mu_product"]
        assert ours.item() == theirs.item()
        np.testing.assert_allclose(ours_w.detach().numpy(), w.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("device", ["numpy"], indirect=True)
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_state_tensor_replaced_by_another_is_read(compiled: bool, device: str) -> None:
    w, opt, step = _setup(torch, "AdamW")
    ours_w, ours_opt, ours_step = _setup(tw, "AdamW")
    run = tw.compile(ours_step, backend="tensorweaver") if compiled else ours_step
    for n in range(8):
        if n == 5:
            opt.state[w]["step"] = torch.tensor(40.0)
            ours_opt.state[ours_w]["step"] = tw.tensor(40.0)
        step()
        run()
        assert ours_opt.state[ours_w]["step"].item() == opt.state[w]["step"].item()
        np.testing.assert_allclose(ours_w.detach().numpy(), w.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_write_into_numpy_memory_taken_steps_before_is_seen(compiled: bool, device: str):
    # The step's own writes keep the tensor's array (its memory is shared with NumPy), so
    # the array and version alone do not tell that the host wrote into it.
    w, opt, step = _setup(torch, "Adam")
    ours_w, ours_opt, ours_step = _setup(tw, "Adam")
    run = tw.compile(ours_step, backend="tensorweaver") if compiled else ours_step
    for n in range(9):
        if n == 2:
            theirs, ours = opt.state[w]["step"].numpy(), ours_opt.state[ours_w]["step"].numpy()
        if n in (5, 7):
            theirs[...] = ours[...] = 30.0 + n
        step()
        run()
        assert ours_opt.state[ours_w]["step"].item() == opt.state[w]["step"].item()
        np.testing.assert_allclose(ours_w.detach().numpy(), w.detach().numpy(), rtol=1e-12)
