"""The optimizers' scalar state (``step``, NAdam's ``mu_product``, ASGD's ``eta``/``mu``) is
0-d tensors as PyTorch 2.13 keeps them (``capturable``/``fused`` off): read with ``.item()``,
counted in place, saved and loaded, and replayed by ``tw.compile``."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.compiler import CompileWarning

NAMES = [
    "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adagrad", "Adadelta", "ASGD", "RMSprop",
    "Rprop", "Adafactor",
]  # fmt: skip


def _stepped(m, name: str, steps: int = 3) -> tuple:
    rng = np.random.default_rng(0)
    w = m.nn.Parameter(m.tensor(rng.standard_normal((2, 3))))
    opt = getattr(m.optim, name)([w], lr=0.01)
    for _ in range(steps):
        w.grad = m.tensor(rng.standard_normal((2, 3)))
        opt.step()
    return w, opt


def _scalars(m, w, opt) -> dict:
    """Each 0-d entry of ``w``'s state: its value and dtype name (others: their type)."""
    out = {}
    for key, value in opt.state[w].items():
        if isinstance(value, m.Tensor) and value.dim() == 0:
            out[key] = (value.item(), str(value.dtype).split(".")[-1])
        elif not isinstance(value, m.Tensor):
            out[key] = type(value).__name__
    return out


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_scalar_state_is_torchs_0d_tensors(name: str, default: str) -> None:
    before = torch.get_default_dtype(), tw.get_default_dtype()
    torch.set_default_dtype(getattr(torch, default))
    tw.set_default_dtype(getattr(tw, default))
    try:
        ours = _scalars(tw, *_stepped(tw, name))
        theirs = _scalars(torch, *_stepped(torch, name))
    finally:
        torch.set_default_dtype(before[0])
        tw.set_default_dtype(before[1])
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert ours[key][1] == theirs[key][1], key
        assert ours[key][0] == pytest.approx(theirs[key][0], rel=1e-6), key


def test_users_step_arithmetic_works_as_torchs() -> None:
    got = []
    for m in (tw, torch):
        w, opt = _stepped(m, "Adam", steps=2)
        state = opt.state[w]
        count = state["step"]
        state["step"] += 1  # in place on the 0-d tensor
        got.append((state["step"] is count, int(state["step"]), float(count), count.item()))
    assert got[0] == got[1]


def _loaded_step(m) -> tuple:
    w, opt = _stepped(m, "Adam", steps=2)
    buffer = io.BytesIO()
    m.save(opt.state_dict(), buffer)
    buffer.seek(0)
    saved = m.load(buffer)
    w2 = m.nn.Parameter(w.detach().clone())
    opt2 = m.optim.Adam([w2], lr=0.01)
    opt2.load_state_dict(saved)
    step = opt2.state[w2]["step"]
    kept = step is saved["state"][0]["step"]  # (PyTorch's loads it as it is: shared)
    w2.grad = m.ones_like(w2)
    opt2.step()
    after = opt2.state[w2]["step"].item(), saved["state"][0]["step"].item()
    return type(step).__name__, str(step.dtype).split(".")[-1], kept, after


def test_saved_and_loaded_with_tw_save_the_count_goes_on() -> None:
    assert _loaded_step(tw) == _loaded_step(torch)


def test_a_checkpoint_with_a_number_for_step_loads_as_a_tensor() -> None:
    w, opt = _stepped(tw, "Adam", steps=2)
    saved = opt.state_dict()
    saved["state"][0]["step"] = 2.0  # as tw's checkpoints before session 20 kept it
    opt.load_state_dict(saved)
    w.grad = tw.ones_like(w)
    opt.step()
    assert isinstance(opt.state[w]["step"], tw.Tensor) and opt.state[w]["step"].item() == 3.0


def test_compiled_adam_counts_its_step_tensor_in_place() -> None:
    tw.manual_seed(0)
    model = tw.nn.Linear(3, 2)
    opt = tw.optim.Adam(model.parameters(), lr=0.1)
    x, y = tw.randn(4, 3), tw.randn(4, 2)

    def step() -> tw.Tensor:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        compiled()
        count = opt.state[model.weight]["step"]
        for _ in range(5):
            compiled()
    assert compiled.traces == 3 and len(compiled.graph_source()) == 1
    assert opt.state[model.weight]["step"] is count and count.item() == 6.0
