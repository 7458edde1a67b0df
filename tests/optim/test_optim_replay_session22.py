"""Optimizers' scalar state (NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``) as PyTorch
2.13 keeps it (float32 when that is the default dtype): tw.compile's replay of a step that
rounds it to float32 runs compiled (it ran eagerly, its rounding baked in) and gives the
eager step's and PyTorch's results; and its shared arrays (optim/scalar_arrays.py) stay
right and bounded when threads step optimizers at once."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.compiler.compiled import CompileWarning
from tensorweaver.optim import scalar_arrays

STEPS = 9


@pytest.fixture(params=["float32", "float64"])
def default_dtype(request: pytest.FixtureRequest) -> Iterator[str]:
    """Both libraries' default dtype (the dtype of their scalar optimizer state)."""
    previous = torch.get_default_dtype(), tw.get_default_dtype()
    torch.set_default_dtype(getattr(torch, request.param))
    tw.set_default_dtype(getattr(tw, request.param))
    try:
        yield request.param
    finally:
        torch.set_default_dtype(previous[0])
        tw.set_default_dtype(previous[1])


def _setup(m: Any, name: str, dtype: str, options: dict) -> tuple:
    rng = np.random.default_rng(3)
    w = m.nn.Parameter(m.tensor(rng.standard_normal((4, 3)), dtype=getattr(m, dtype)))
    x = m.tensor(rng.standard_normal((6, 3)), dtype=getattr(m, dtype))
    opt = getattr(m.optim, name)([w], **options)

    def step() -> Any:
        opt.zero_grad()
        loss = ((x @ w.T).tanh() ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    return w, opt, step


CASES = {
    "NAdam": {"lr": 0.05},
    "NAdamW": {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True},
    "ASGD": {"lr": 0.05, "lambd": 0.3, "t0": 1e6},
    # mu leaves 1 at step t0 + 2: two comparisons of the count change outcome in consecutive
    # steps, so this one may run eagerly (each trace stale at once); its results still agree.
    "ASGD_t0": {"lr": 0.05, "lambd": 0.3, "t0": 4.0},
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_step_replays_compiled_as_eager_and_torch(case: str, dtype: str, default_dtype: str):
    name = case.split("_")[0].replace("NAdamW", "NAdam")
    w, opt, step = _setup(torch, name, dtype, CASES[case])
    eager_w, eager_opt, eager_step = _setup(tw, name, dtype, CASES[case])
    ours_w, ours_opt, ours_step = _setup(tw, name, dtype, CASES[case])
    compiled = tw.compile(ours_step, backend="tensorweaver")
    rtol = 1e-5 if "float32" in (dtype, default_dtype) else 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if case == "ASGD_t0" else "error", CompileWarning)
        for _ in range(STEPS):
            loss = step()
            np.testing.assert_allclose(eager_step().item(), loss.item(), rtol=rtol)
            np.testing.assert_allclose(compiled().item(), loss.item(), rtol=rtol)
    # Every signature replays a graph (none fell back to eager replay).
    replayed = compiled._cache and all(v != "eager" for v in compiled._cache.values())
    assert replayed or case == "ASGD_t0"
    for ours in (eager_w, ours_w):
        np.testing.assert_allclose(ours.detach().numpy(), w.detach().numpy(), rtol=rtol)
    for key in NAME_SCALARS[name]:
        theirs = opt.state[w][key].item()
        assert eager_opt.state[eager_w][key].item() == theirs
        np.testing.assert_allclose(ours_opt.state[ours_w][key].item(), theirs, rtol=rtol)


NAME_SCALARS = {"NAdam": ("step", "mu_product"), "ASGD": ("step", "eta", "mu")}


@pytest.fixture
def frequent_switches() -> Iterator[None]:
    """Threads switch every microsecond: races show within a short test."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _in_threads(work: Callable[[int], Any], count: int) -> list:
    results: list = [None] * count
    errors: list = []

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except Exception as exc:  # (re-raised in the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def test_scalar_arrays_stay_bounded_and_right_in_threads(frequent_switches: None) -> None:
    def work(i: int) -> None:
        t = tw.tensor(0.0, dtype=tw.float32)
        for n in range(8000):  # (each a new value: every put makes an array, most evict)
            value = float(i * 10_000 + n) + 0.25
            scalar_arrays.put(t, value)
            assert scalar_arrays.get(t) == value == t.item()

    _in_threads(work, 4)
    assert len(scalar_arrays._ARRAYS) <= scalar_arrays._RECENT
    assert len(scalar_arrays._VALUES) <= scalar_arrays._RECENT


@pytest.mark.parametrize("default_dtype", ["float32"], indirect=True)
def test_two_threads_step_two_optimizers_as_torch(frequent_switches: None, default_dtype: str):
    options = [("NAdam", CASES["NAdam"]), ("ASGD", CASES["ASGD"])]
    runs = [_setup(tw, name, "float32", o) for name, o in options]
    theirs = [_setup(torch, name, "float32", o) for name, o in options]
    _in_threads(lambda i: [runs[i][2]() for _ in range(40)], 2)
    for _ in range(40):
        for _, _, step in theirs:
            step()
    for (w, opt, _), (tw_w, tw_opt, _), (name, _) in zip(theirs, runs, options):
        np.testing.assert_allclose(tw_w.detach().numpy(), w.detach().numpy(), rtol=1e-5)
        for key in NAME_SCALARS[name]:
            assert tw_opt.state[tw_w][key].item() == opt.state[w][key].item()


DUPLICATED = ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adagrad", "Adadelta"]
DUPLICATED += ["RMSprop", "Rprop", "ASGD", "Adafactor"]


def _listed_twice(m: Any, name: str, foreach: Any) -> tuple[np.ndarray, list[str]]:
    p = m.tensor([1.0, -2.0, 0.5], dtype=m.float64, requires_grad=True)
    q = m.tensor([0.3, 0.2], dtype=m.float64, requires_grad=True)
    options: dict = {"lr": 0.1}
    if name == "SGD":
        options["momentum"] = 0.9
    if name != "Adafactor":
        options["foreach"] = foreach
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        opt = getattr(m.optim, name)([p, q, p], **options)
    for _ in range(3):
        opt.zero_grad()
        ((p**2).sum() + (q**3).sum()).backward()
        opt.step()
    values = np.concatenate([p.detach().numpy(), q.detach().numpy()])
    return values, [w.category.__name__ for w in seen]


@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("name", DUPLICATED)
def test_a_parameter_listed_twice_warns_and_steps_per_listing(name: str, foreach: Any):
    # (PyTorch's foreach=True steps such a parameter otherwise: its grouped ops alias.)
    theirs, their_warnings = _listed_twice(torch, name, foreach)
    ours, our_warnings = _listed_twice(tw, name, foreach)
    assert our_warnings == their_warnings == ["UserWarning"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def _complex_listed_twice(m: Any, name: str) -> np.ndarray:
    p = m.tensor([1.0 + 2.0j, -2.0 + 0.5j], dtype=m.complex128, requires_grad=True)
    q = m.tensor([0.5, -1.0], dtype=m.float64, requires_grad=True)
    options = {"momentum": 0.9} if name == "SGD" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the duplicate's, checked above)
        opt = getattr(m.optim, name)([p, q, p], lr=0.1, **options)
    for _ in range(3):
        opt.zero_grad()
        ((p.abs() ** 2).sum() + (q**2).sum()).backward()
        opt.step()
    return np.concatenate([p.detach().numpy(), q.detach().numpy()])


@pytest.mark.parametrize("name", ["SGD", "Adam", "NAdam"])
def test_a_complex_parameter_listed_twice_steps_per_listing(name: str) -> None:
    # (complex_params.py gave each listing a stand-in of its own: one grouped step)
    theirs, ours = _complex_listed_twice(torch, name), _complex_listed_twice(tw, name)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def _clip_mixed(m: Any, low: str, foreach: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    params = []
    for shape, dtype in [((5, 4), "float32"), ((7,), low), ((3,), low)]:
        p = m.zeros(shape, dtype=getattr(m, dtype), requires_grad=True)
        p.grad = m.tensor(rng.standard_normal(shape) * 10).to(getattr(m, dtype))
        params.append(p)
    m.nn.utils.clip_grad_norm_(params, 1.0, foreach=foreach)
    return [np.asarray(p.grad.double().tolist()) for p in params]


@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize(
    ("device", "low"),
    [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")],
)
def test_clip_grad_norm_scales_low_precision_gradients_in_float32(
    device: str, low: str, foreach: Any
) -> None:
    with tw.device(device):
        ours = _clip_mixed(tw, low, foreach)
    for mine, theirs in zip(ours, _clip_mixed(torch, low, foreach)):
        np.testing.assert_array_equal(mine, theirs)


CAPTURABLE = ["Adam", "AdamW", "NAdam", "RAdam", "Adamax", "ASGD", "Rprop", "RMSprop", "Adadelta"]


@pytest.mark.parametrize("name", CAPTURABLE)
def test_capturable_on_a_cpu_device_raises_as_torch(name: str) -> None:
    errors = []
    for m in (torch, tw):
        p = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
        opt = getattr(m.optim, name)([p], lr=0.1, capturable=True)
        (p**2).sum().backward()
        with pytest.raises(AssertionError) as info:
            opt.step()
        errors.append(str(info.value))
    assert "supported devices" in errors[0] and "supported devices" in errors[1]
