"""Optimizer updates written into the parameters' own memory (backend API 2.7: owns_memory,
foreach_inplace; ops/in_place_writes.py), and everything that must still see them or must
make the core rebind instead: views, aliases, NumPy arrays sharing the memory, graphs that
saved the array. Each against torch 2.13's behaviour for the same program."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.ops.in_place_writes import SMALLEST, foreach_update

torch = pytest.importorskip("torch")

DEVICES = ["numpy", "torch:cpu"]
#: A layer whose weight is large enough to be written in place (its bias is not).
SIZE = 256
assert SIZE * SIZE >= SMALLEST > SIZE


@pytest.fixture(autouse=True)
def torch_float64() -> None:
    """(Overrides the folder's fixture: these tests build float32 layers with the default
    dtypes of both libraries.)"""


def _model(device: str) -> Any:
    tw.manual_seed(0)
    with tw.device(device):
        return tw.nn.Linear(SIZE, SIZE)


def _loss(m: Any, device: str) -> Any:
    x = np.linspace(-1, 1, 5 * SIZE).reshape(5, SIZE)
    return (m(tw.tensor(x, dtype=tw.float32, device=device)) ** 2).mean()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("SGD", {"lr": 0.01}),
        ("SGD", {"lr": 0.01, "momentum": 0.9, "nesterov": True}),
        ("Adam", {"lr": 0.01, "amsgrad": True}),
        ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ],
)
def test_a_step_writes_into_the_parameters_and_their_state(
    device: str, name: str, options: dict
) -> None:
    m = _model(device)
    opt = getattr(tw.optim, name)(m.parameters(), foreach=True, **options)
    # (weak references: a reference to an array is a holder, which makes the core rebind)
    arrays = [weakref.ref(p.native) for p in m.parameters()]
    for _ in range(3):
        opt.zero_grad()
        _loss(m, device).backward()
        opt.step()
    # the weight in place; the bias, too small to be worth the check, rebound (but by SGD,
    # which writes every size in place, as torch's _foreach_add_: optim/sgd.py)
    want = [True, name == "SGD"]
    assert [p.native is a() for p, a in zip(m.parameters(), arrays)] == want
    # the same numbers as the per-parameter path, which rebinds
    slow = _model(device)
    slow_opt = getattr(tw.optim, name)(slow.parameters(), foreach=False, **options)
    for _ in range(3):
        slow_opt.zero_grad()
        _loss(slow, device).backward()
        slow_opt.step()
    for p, q in zip(m.parameters(), slow.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_views_aliases_and_numpy_arrays_see_the_update(device: str) -> None:
    m = _model(device)
    w = m.weight
    _loss(m, device).backward()
    flat = w.view(-1)  # a view: the update rebinds, and the view follows
    alias = w.detach()
    shared = w.detach().numpy()  # NumPy over the parameter's memory, as torch's .numpy()
    before = w.detach().numpy().copy()
    with tw.no_grad():
        w.add_(w.grad, alpha=-0.5)
    want = before - 0.5 * w.grad.numpy()
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(flat.detach().numpy(), w.detach().numpy().reshape(-1))
    np.testing.assert_array_equal(alias.numpy(), w.detach().numpy())
    np.testing.assert_array_equal(shared, w.detach().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_p_data_add_with_an_alias_alive_writes_in_place(device: str) -> None:
    m = _model(device)
    w = m.weight
    _loss(m, device).backward()
    alias = w.detach()  # one more holder of the array, which the count expects
    array = weakref.ref(w.native)
    w.data.add_(w.grad, alpha=-0.1)
    assert w.native is array() and alias.native is array()
    # an update by the tensor itself (its array is an operand too) is still right
    before = w.detach().numpy().copy()
    w.data.add_(w, alpha=1.0)
    np.testing.assert_array_equal(w.detach().numpy(), before * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_a_clone_keeps_its_values(device: str) -> None:
    m = _model(device)
    kept = m.weight.detach().clone()
    _loss(m, device).backward()
    tw.optim.SGD(m.parameters(), lr=1.0).step()
    assert not np.array_equal(kept.numpy(), m.weight.detach().numpy())
    np.testing.assert_array_equal(kept.numpy(), _model(device).weight.detach().numpy())


def _step_then_backward(lib: Any, x_requires_grad: bool, device: str | None = None) -> None:
    """A step between a forward and its backward (the weight is updated under the graph)."""
    with tw.device(device or "numpy"):
        lin = lib.nn.Linear(SIZE, 3)
        x = lib.ones(2, SIZE, requires_grad=x_requires_grad)
    loss = (lin(x) ** 2).sum()
    lin.weight.grad = lib.ones_like(lin.weight)
    lin.bias.grad = lib.ones_like(lin.bias)
    lib.optim.SGD(lin.parameters(), lr=0.1).step()
    loss.backward()


@pytest.mark.parametrize("device", DEVICES)
def test_a_step_before_backward_raises_as_torch(device: str) -> None:
    """x's gradient reads the weight, which the step changed: torch's in-place error."""
    with pytest.raises(RuntimeError, match="inplace"):
        _step_then_backward(torch, True)
    with pytest.raises(RuntimeError, match="in-place"):
        _step_then_backward(tw, True, device)


@pytest.mark.parametrize("device", DEVICES)
def test_a_step_before_a_backward_that_reads_no_weight_runs_as_torch(device: str) -> None:
    """The weight's gradient reads x alone, and x wants none: torch checks only what the
    needed gradients read, so the step on the weight does not make the backward raise."""
    _step_then_backward(torch, False)
    _step_then_backward(tw, False, device)


@pytest.mark.parametrize("device", DEVICES)
def test_host_memory_of_from_numpy_is_written(device: str) -> None:
    array = np.ones((SIZE, SIZE), dtype=np.float32)
    p = tw.nn.Parameter(tw.from_numpy(array).to(device))
    p.grad = tw.full((SIZE, SIZE), 2.0, device=device)
    tw.optim.SGD([p], lr=0.5).step()
    np.testing.assert_array_equal(p.detach().numpy(), np.zeros((SIZE, SIZE), np.float32))
    if device == "numpy":  # the parameter IS the array's memory, as torch.from_numpy's
        np.testing.assert_array_equal(array, np.zeros((SIZE, SIZE), np.float32))


def test_some_tensors_in_place_and_others_rebound() -> None:
    """A group where one array is held elsewhere: the others are written in place, that
    one rebound, all with the same values."""
    n = SMALLEST
    ts = [tw.tensor(np.arange(n, dtype=np.float64) + i, device="torch:cpu") for i in range(4)]
    held = ts[1].view(2, n // 2)  # a view: ts[1] cannot be written in place
    ts.append(tw.zeros(3, dtype=tw.float64, device="torch:cpu"))  # too small
    arrays = [weakref.ref(t.native) for t in ts]
    foreach_update(ts, "add", ([t.native * 0 + 1 for t in ts], 2.0), "add_")
    assert [t.native is a() for t, a in zip(ts, arrays)] == [True, False, True, True, False]
    for i, t in enumerate(ts[:4]):
        np.testing.assert_array_equal(t.numpy(), np.arange(n) + i + 2)
    np.testing.assert_array_equal(ts[4].numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(held.numpy(), ts[1].numpy().reshape(2, n // 2))


def test_a_compiled_step_records_the_update_out_of_place() -> None:
    """tw.compile's recorder sees the step's primitives: an update written in place would
    escape its functional graph. Replays step as the eager steps do."""
    eager, compiled = _model("numpy"), _model("numpy")
    opts = [tw.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, compiled)]

    def step(m: Any, opt: Any) -> Any:
        opt.zero_grad()
        loss = _loss(m, "numpy")
        loss.backward()
        opt.step()
        return loss

    fast = tw.compile(step)
    for _ in range(5):
        a, b = step(eager, opts[0]), fast(compiled, opts[1])
        assert a.item() == b.item()
    for p, q in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_accumulation_adds_into_the_gradient(device: str) -> None:
    """A second backward adds into .grad's own memory (micro-batch accumulation), as torch's
    AccumulateGrad: a reference to .grad taken before sees the sum; the sum as torch's."""
    m = _model(device)
    theirs = torch.nn.Linear(SIZE, SIZE, dtype=torch.float32)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(m.weight.detach().numpy()))
        theirs.bias.copy_(torch.from_numpy(m.bias.detach().numpy()))
    x = np.linspace(-1, 1, 5 * SIZE).reshape(5, SIZE)
    _loss(m, device).backward()
    held = m.weight.grad
    array = weakref.ref(held.native)
    _loss(m, device).backward()
    assert m.weight.grad is held and held.native is array()
    for _ in range(2):
        (theirs(torch.tensor(x, dtype=torch.float32)) ** 2).mean().backward()
    np.testing.assert_allclose(held.numpy(), theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    ("device", "dtype"),
    [("torch:cpu", "float16"), ("torch:cpu", "bfloat16"), ("numpy", "float16")],
)
@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("SGD", {"lr": 0.1, "momentum": 0.9}),
        ("Adam", {"lr": 0.01, "betas": (0.9, 0.95), "amsgrad": True}),
        ("AdamW", {"lr": 0.01, "betas": (0.9, 0.95), "weight_decay": 0.05}),
    ],
)
def test_half_precision_updates_in_place_have_the_rebound_bits(
    device: str, dtype: str, name: str, options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two large float16/bfloat16 parameters (one foreach_inplace call over both): the bits
    of the out-of-place primitives, which torch's default (single-tensor) CPU step gives.
    torch._foreach_mul_ on the CPU rounds a Python number to the tensors' dtype first, where
    torch._foreach_mul and mul_ do not: the momentum, beta2 and decoupled weight-decay
    factors gave other bits in place."""

    def run() -> list[np.ndarray]:
        tw.manual_seed(0)
        with tw.device(device):
            m = tw.nn.Sequential(tw.nn.Linear(SIZE, SIZE), tw.nn.Linear(SIZE, SIZE))
        m = m.to(getattr(tw, dtype))
        opt = getattr(tw.optim, name)(m.parameters(), foreach=True, **options)
        x = tw.tensor(np.linspace(-1, 1, 5 * SIZE).reshape(5, SIZE), device=device)
        for _ in range(3):
            opt.zero_grad()
            (m(x.to(getattr(tw, dtype))).float() ** 2).mean().backward()
            opt.step()
        return [p.detach().float().numpy() for p in m.parameters()]

    in_place = run()
    monkeypatch.setattr("tensorweaver.ops.in_place_writes.SMALLEST", 1 << 62)  # all rebound
    for a, b in zip(in_place, run()):
        np.testing.assert_array_equal(a, b)


def _held_after_steps(lib: Any, device: str, name: str, options: dict) -> dict[str, Any]:
    """What a user keeps across an in-place step (state dicts, copies, the moments, the
    gradient), read after the step: ``lib`` is torch or tw, with the same weights."""
    import copy

    weight = np.linspace(-1, 1, SIZE * SIZE, dtype=np.float32).reshape(SIZE, SIZE)
    x = np.linspace(-1, 1, 5 * SIZE, dtype=np.float32).reshape(5, SIZE)
    k = np.cos(np.arange(5 * SIZE, dtype=np.float32)).reshape(5, SIZE)
    with tw.device(device):
        m = lib.nn.Linear(SIZE, SIZE, bias=False, dtype=lib.float32)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(weight))
        x, k = lib.tensor(x, dtype=lib.float32), lib.tensor(k, dtype=lib.float32)
    opt = getattr(lib.optim, name)(m.parameters(), foreach=True, **options)
    held: dict[str, Any] = {}
    for step in range(2):
        opt.zero_grad()
        (m(x) * k).sum().backward()
        w = m.weight
        held.update(
            state_dict=m.state_dict()["weight"],
            same_dtype=w.float(),
            deepcopy=copy.deepcopy(m).weight,
            averaged=lib.optim.swa_utils.AveragedModel(m).module.weight,
            grad=w.grad,
            grad_clone=w.grad.clone(),
        )
        if step:  # the optimizer's state exists from the first step on
            state = opt.state_dict()["state"][0]
            # (the moments and buffers; "step" is a 0-d tensor in torch, a number here)
            held.update({f"state {key}": v for key, v in state.items() if getattr(v, "ndim", 0)})
        opt.step()
    return {key: v.detach().numpy().copy() for key, v in held.items()}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("name", "options"),
    [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01, "amsgrad": True})],
)
def test_what_a_user_holds_across_a_step_is_as_torch(device: str, name: str, options: dict) -> None:
    """State dicts, the optimizer's state_dict() and float() of a float tensor share the
    memory in torch and see the update; copies (deepcopy, AveragedModel, clone) do not."""
    want = _held_after_steps(torch, "numpy", name, options)
    got = _held_after_steps(tw, device, name, options)
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
