"""Optimizers' step counts after session 21's cheaper writes (optim/scalar_arrays.py: the
tensors that take one value share its 0-d array): a user's change of one parameter's
``state["step"]`` reaches that parameter alone, eagerly and in a replay, including a replay
that uses the step tensors as operands; a compiled step that uses the scalar state after
``opt.step()`` (as an operand, returned, read with ``.item()``, for a schedule) sees the new
values; SparseAdam's step is a Python int, as PyTorch 2.13's. Compared with torch 2.13
doing the same, in float64."""

from __future__ import annotations

import warnings
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


def _setup(m: Any, name: str, operands: bool = False) -> tuple:
    """Three parameters stepped by ``name``; with ``operands`` the step also returns a sum
    that uses each parameter's step tensor (read before the update)."""
    rng = np.random.default_rng(1)
    ws = [m.nn.Parameter(m.tensor(rng.standard_normal((2, 3)), dtype=m.float64)) for _ in "abc"]
    x = m.tensor(rng.standard_normal((4, 3)), dtype=m.float64)
    opt = getattr(m.optim, name)(ws, lr=0.1)

    def step() -> Any:
        opt.zero_grad()
        loss = sum(((x @ w.T) ** 2).sum() for w in ws)
        loss.backward()
        used = None
        if operands and opt.state:
            used = sum(w.detach().sum() * opt.state[w]["step"] for w in ws)
        opt.step()
        return loss.detach() if used is None else used

    return ws, opt, step


def _numpy_write(t: Any, value: float) -> None:
    t.numpy()[...] = value  # (shared memory on both backends, as torch:cpu's)


CHANGES: dict[str, Callable[[Any, float], None]] = {
    "add_": lambda t, v: t.add_(v),
    "data": lambda t, v: t.data.fill_(v),
    "view": lambda t, v: t.view(1).__setitem__(0, v),
    "numpy": _numpy_write,
}


def _run(compiled: bool, change: str, operands: bool) -> None:
    theirs, their_opt, their_step = _setup(torch, "Adam", operands)
    ours, our_opt, our_step = _setup(tw, "Adam", operands)
    run = tw.compile(our_step, backend="tensorweaver") if compiled else our_step
    for n in range(7):
        if n == 4:  # the middle parameter's count alone changes
            CHANGES[change](their_opt.state[theirs[1]]["step"], 20.0)
            CHANGES[change](our_opt.state[ours[1]]["step"], 20.0)
        expected, got = their_step(), run()
        np.testing.assert_allclose(np.asarray(got), expected.detach().numpy(), rtol=1e-12)
        for w, t in zip(ours, theirs):
            assert our_opt.state[w]["step"].item() == their_opt.state[t]["step"].item()
            np.testing.assert_allclose(np.asarray(w.detach()), t.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_of_one_parameters_step_reaches_it_alone(
    device: str, change: str, compiled: bool
) -> None:
    _run(compiled, change, operands=False)


@pytest.mark.parametrize("change", ["add_", "numpy"])
def test_a_replay_that_uses_the_step_tensors_reads_each_ones_own(device: str, change: str):
    # (Before the guard in compiler/graph.py's ``value``, the replay read the second
    # parameter's count from the first's location, which held the same array when traced.)
    _run(True, change, operands=True)


def test_a_step_tensor_used_after_the_update_has_the_new_count() -> None:
    w = tw.nn.Parameter(tw.tensor([1.0, 2.0], dtype=tw.float64))
    opt = tw.optim.Adam([w], lr=0.1)

    def step() -> Any:
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        return opt.state[w]["step"] * 1.0

    run = tw.compile(step, backend="tensorweaver")
    assert [run().item() for _ in range(4)] == [1.0, 2.0, 3.0, 4.0]


def _sparse_setup(m: Any) -> tuple:
    rng = np.random.default_rng(2)
    emb = m.nn.Embedding(5, 3, sparse=True)
    with m.no_grad():
        emb.weight.copy_(m.tensor(rng.standard_normal((5, 3)), dtype=m.float32))
    index = m.tensor([1, 3, 3])
    opt = m.optim.SparseAdam(emb.parameters(), lr=0.1)

    def step() -> Any:
        opt.zero_grad()
        loss = (emb(index) ** 2).sum()
        loss.backward()
        opt.step()
        return loss.detach()

    return emb, opt, step


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_sparse_adams_step_is_an_int_as_torchs(device: str, compiled: bool) -> None:
    emb, opt, step = _sparse_setup(tw)
    ref_emb, ref_opt, ref_step = _sparse_setup(torch)
    run = tw.compile(step, backend="tensorweaver") if compiled else step
    for _ in range(4):
        run()
        ref_step()
        ours, theirs = opt.state[emb.weight]["step"], ref_opt.state[ref_emb.weight]["step"]
        assert type(ours) is type(theirs) is int and ours == theirs
        np.testing.assert_allclose(
            np.asarray(emb.weight.detach()), ref_emb.weight.detach().numpy(), rtol=1e-6
        )
    assert type(opt.state_dict()["state"][0]["step"]) is int


def test_sparse_adam_loads_torchs_int_step() -> None:
    emb, opt, step = _sparse_setup(tw)
    ref_emb, ref_opt, ref_step = _sparse_setup(torch)
    ref_step()
    ref_step()
    saved = ref_opt.state_dict()
    loaded = {
        "state": {
            k: {n: v if n == "step" else tw.tensor(v.numpy()) for n, v in s.items()}
            for k, s in saved["state"].items()
        },
        "param_groups": saved["param_groups"],
    }
    opt.load_state_dict(loaded)
    step()
    ref_step()
    assert type(opt.state[emb.weight]["step"]) is int
    assert opt.state[emb.weight]["step"] == ref_opt.state[ref_emb.weight]["step"] == 3


#: Each optimizer's scalar state entries (0-d tensors) that a step may use after updating.
SCALARS = {
    "Adam": ("step",),
    "AdamW": ("step",),
    "NAdam": ("step", "mu_product"),
    "RAdam": ("step",),
    "Adamax": ("step",),
    "ASGD": ("step", "eta", "mu"),
}


def _after_update(m: Any, name: str, use: str) -> tuple:
    """A step of ``name`` that uses its scalar state after the update as ``use`` says."""
    w = m.nn.Parameter(m.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=m.float64))
    x = m.tensor([[0.3, -1.2], [2.0, 0.7]], dtype=m.float64)
    opt = getattr(m.optim, name)([w], lr=0.1)

    def step() -> Any:
        opt.zero_grad()
        (x @ w).pow(2).sum().backward()
        opt.step()
        state = opt.state[w]
        if use == "returned":
            return state["step"]
        if use == "item":
            return state["step"].item()
        if use == "schedule":  # the next step's rate from this step's count
            opt.param_groups[0]["lr"] = 0.1 / (1.0 + state["step"].item())
            return w.detach().sum()
        return sum(state[key] * 0.5 for key in SCALARS[name])  # "operand"

    return w, step


@pytest.mark.parametrize("use", ["operand", "returned", "item", "schedule"])
@pytest.mark.parametrize("name", list(SCALARS))
def test_scalar_state_read_after_the_update_is_eagers(device: str, name: str, use: str) -> None:
    # (Before: a replay read the step tensor before writing the new count, one step behind.)
    theirs, their_step = _after_update(torch, name, use)
    ours, our_step = _after_update(tw, name, use)
    run = tw.compile(our_step, backend="tensorweaver")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tw.compiler.CompileWarning)  # (host reads: eager)
        for _ in range(5):
            expected, got = their_step(), run()
            expected = expected.item() if isinstance(expected, torch.Tensor) else expected
            got = got.item() if isinstance(got, tw.Tensor) else got
            assert got == pytest.approx(expected, rel=1e-12)
            np.testing.assert_allclose(
                np.asarray(ours.detach()), theirs.detach().numpy(), rtol=1e-12
            )


@pytest.fixture
def float64_default() -> Any:
    """Both libraries' default dtype is float64 (their scalar state is float64 then: float32
    state, which the optimizer rounds on the host, runs eagerly, baked in by the trace)."""
    ours, theirs = tw.get_default_dtype(), torch.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    torch.set_default_dtype(torch.float64)
    yield
    tw.set_default_dtype(ours)
    torch.set_default_dtype(theirs)


@pytest.mark.parametrize("name", ["NAdam", "ASGD"])
def test_scalar_state_read_after_the_update_replays_as_eager(
    device: str, name: str, float64_default: Any
) -> None:
    # (The replay lagged a step behind before.)
    theirs, their_step = _after_update(torch, name, "operand")
    ours, our_step = _after_update(tw, name, "operand")
    run = tw.compile(our_step, backend="tensorweaver")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.compiler.CompileWarning)  # (it replays)
        for _ in range(5):
            assert run().item() == pytest.approx(their_step().item(), rel=1e-12)
    np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), rtol=1e-12)
    assert run.traces == 3
