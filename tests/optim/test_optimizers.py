"""Every optimizer against ``torch.optim`` in float64, on every backend.

Both frameworks get the same gradients (computed in NumPy from PyTorch's current
parameters) for several steps; after each step the parameters and the whole state
dict must agree.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import optim

torch = pytest.importorskip("torch")

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.2, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    (
        "Adagrad",
        {
            "lr": 0.1,
            "lr_decay": 0.05,
            "weight_decay": 0.1,
            "initial_accumulator_value": 0.5,
            "eps": 1e-6,
            "maximize": True,
        },
    ),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "betas": (0.85, 0.99), "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]
SHAPES = [(3, 4), (4,), (), (2, 2)]  # the last one never gets a gradient
STEPS = 8  # RAdam switches to its rectified update at step 6 with beta2=0.999


def _pair(seed: int = 0) -> tuple[list[Any], list[Any]]:
    """The same float64 parameters in TensorWeaver and in PyTorch."""
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(shape) for shape in SHAPES]
    ours = [tw.tensor(v, dtype=tw.float64, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    return ours, theirs


def _groups(params: list[Any], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """Two param groups; the second has its own lr and holds the gradient-less parameter."""
    return [{"params": params[:2]}, {"params": params[2:], "lr": kwargs["lr"] * 0.5}]


def _feed(step: int, ours: list[Any], theirs: list[Any]) -> None:
    """Set the same gradient on both: that of a quadratic plus noise, at PyTorch's params."""
    rng = np.random.default_rng(100 + step)
    for a, b in zip(ours[:-1], theirs[:-1]):
        p = b.detach().numpy()
        grad = 1.5 * p - 0.3 + 0.5 * rng.standard_normal(p.shape)
        a.grad = tw.tensor(grad, dtype=tw.float64)
        b.grad = torch.tensor(grad, dtype=torch.float64)


def _host(value: Any) -> np.ndarray:
    return value.detach().numpy()


def _assert_same_state(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert set(ours["state"]) == set(theirs["state"])
    for index, expected in theirs["state"].items():
        got = ours["state"][index]
        assert set(got) == set(expected), index
        for key, value in expected.items():
            if isinstance(got[key], (int, float)):
                assert got[key] == pytest.approx(float(value), rel=1e-14), key
            else:
                assert tuple(got[key].shape) == tuple(value.shape), key
                np.testing.assert_allclose(_host(got[key]), _host(value), rtol=1e-12, atol=1e-15)
    for got, expected in zip(ours["param_groups"], theirs["param_groups"]):
        for key, value in got.items():
            assert value == expected[key] and type(value) is type(expected[key]), key


def _make(name: str, params: list[Any], kwargs: dict[str, Any], lib: Any) -> Any:
    return getattr(lib, name)(_groups(params, kwargs), **kwargs)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_matches_torch(backend: str, name: str, kwargs: dict[str, Any]) -> None:
    ours, theirs = _pair()
    assert ours[0].device == backend
    opt, ref = _make(name, ours, kwargs, optim), _make(name, theirs, kwargs, torch.optim)
    for step in range(STEPS):
        _feed(step, ours, theirs)
        opt.step()
        ref.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(_host(a), _host(b), rtol=1e-12, atol=1e-14)
        _assert_same_state(opt.state_dict(), ref.state_dict())
    np.testing.assert_array_equal(_host(ours[-1]), _host(theirs[-1]))  # no grad: untouched
    for p in ours:
        for value in opt.state[p].values():
            if isinstance(value, tw.Tensor):
                assert value.device == p.device and value.dtype is tw.float64


def _to_blob(state_dict: dict[str, Any]) -> tuple[dict[str, np.ndarray], str]:
    """Split a state dict into arrays and JSON, as a safetensors + JSON checkpoint does."""
    arrays: dict[str, np.ndarray] = {}

    def plain(value: Any) -> Any:
        if isinstance(value, tw.Tensor):
            arrays[str(len(arrays))] = value.numpy()
            return {"__tensor__": str(len(arrays) - 1)}
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):  # JSON writes a tuple (betas) as a list
            return [plain(v) for v in value]
        assert value is None or isinstance(value, (bool, int, float, str)), type(value)
        return value

    return arrays, json.dumps(plain(state_dict))


def _from_blob(arrays: dict[str, np.ndarray], text: str) -> dict[str, Any]:
    def hook(obj: dict[str, Any]) -> Any:
        if set(obj) == {"__tensor__"}:
            return tw.tensor(arrays[obj["__tensor__"]])
        return obj

    return json.loads(text, object_hook=hook)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_state_dict_round_trip_resumes_identically(
    backend: str, name: str, kwargs: dict[str, Any]
) -> None:
    ours, theirs = _pair()
    opt = _make(name, ours, kwargs, optim)
    for step in range(3):
        _feed(step, ours, theirs)
        opt.step()
    resumed = [tw.tensor(_host(p), requires_grad=True) for p in ours]
    restored = _make(name, resumed, {"lr": 1.0}, optim)  # options come from the state dict
    restored.load_state_dict(_from_blob(*_to_blob(opt.state_dict())))
    assert restored.param_groups[0]["lr"] == kwargs["lr"]
    for step in range(3, 6):
        _feed(step, ours, theirs)
        for a, b in zip(ours, resumed):
            b.grad = None if a.grad is None else a.grad.clone()
        opt.step()
        restored.step()
        for a, b in zip(ours, resumed):
            np.testing.assert_array_equal(_host(a), _host(b))


def test_loaded_state_is_shared(backend: str) -> None:
    ours, theirs = _pair()
    opt = optim.Adam(ours, lr=0.1)
    _feed(0, ours, theirs)
    opt.step()
    other = optim.Adam([tw.tensor(_host(p), requires_grad=True) for p in ours], lr=0.1)
    saved = opt.state_dict()
    other.load_state_dict(saved)
    before = saved["state"][0]["exp_avg"].numpy().copy()
    param = other.param_groups[0]["params"][0]
    param.grad = tw.ones(3, 4, dtype=tw.float64)
    other.step()
    # As PyTorch's: tensors of the param's dtype and device are loaded as they are, so the
    # step advances the state dict's (and the first optimizer's) too.
    assert other.state[param]["exp_avg"] is saved["state"][0]["exp_avg"]
    assert not np.array_equal(saved["state"][0]["exp_avg"].numpy(), before)
    assert saved["param_groups"][0]["betas"] == (0.9, 0.999)  # a tuple, as PyTorch's
    assert other.param_groups[0]["betas"] == (0.9, 0.999)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}), ("AdamW", {"lr": 0.05})],
)
def test_training_loop_with_autograd_matches_torch(
    backend: str, name: str, kwargs: dict[str, Any]
) -> None:
    rng = np.random.default_rng(1)
    x, w0, y = rng.standard_normal((8, 3)), rng.standard_normal((3, 2)), rng.standard_normal((8, 2))
    w = tw.tensor(w0, requires_grad=True)
    ref_w = torch.tensor(w0, requires_grad=True)
    opt, ref = getattr(optim, name)([w], **kwargs), getattr(torch.optim, name)([ref_w], **kwargs)
    tx, ty = tw.tensor(x), tw.tensor(y)
    rx, ry = torch.tensor(x), torch.tensor(y)

    def closure() -> Any:
        opt.zero_grad()
        loss = ((tx @ w - ty) ** 2).mean()
        loss.backward()
        return loss

    for _ in range(5):
        loss = opt.step(closure)
        ref.zero_grad()
        ref_loss = ((rx @ ref_w - ry) ** 2).mean()
        ref_loss.backward()
        ref.step()
        assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-12)
        np.testing.assert_allclose(w.detach().numpy(), _host(ref_w), rtol=1e-12)


def test_zero_grad(backend: str) -> None:
    p = tw.ones(3, dtype=tw.float64, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = tw.full((3,), 2.0, dtype=tw.float64)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    opt.zero_grad()
    assert p.grad is None


def test_add_param_group_takes_defaults(backend: str) -> None:
    a = tw.ones(2, dtype=tw.float64, requires_grad=True)
    b = tw.ones(2, dtype=tw.float64, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": b, "lr": 0.2})
    assert opt.param_groups[1]["momentum"] == 0.5 and opt.param_groups[1]["lr"] == 0.2
    b.grad = tw.ones(2, dtype=tw.float64)
    opt.step()
    np.testing.assert_allclose(_host(b), [0.8, 0.8], rtol=1e-15)
    np.testing.assert_array_equal(_host(a), [1.0, 1.0])
    assert a not in opt.state and b in opt.state


def test_named_parameters_keep_their_names(backend: str) -> None:
    w = tw.ones(2, requires_grad=True)
    opt = optim.Adam([("layer.weight", w)], lr=0.1)
    assert opt.param_groups[0]["params"][0] is w
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["layer.weight"]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: optim.SGD(p, lr=-0.1), ["SGD", "lr", "-0.1"]),
        (lambda p: optim.Adam(p, betas=(0.9, 1.0)), ["Adam", "betas", "1.0"]),
        (lambda p: optim.AdamW(p, eps=-1e-8), ["AdamW", "eps", "-1e-08"]),
        (lambda p: optim.RMSprop(p, alpha=-0.5), ["RMSprop", "alpha", "-0.5"]),
        (lambda p: optim.Adagrad(p, lr_decay=-1), ["Adagrad", "lr_decay", "-1"]),
        (lambda p: optim.NAdam(p, momentum_decay=-1), ["NAdam", "momentum_decay"]),
        (lambda p: optim.RAdam(p, weight_decay=-1), ["RAdam", "weight_decay"]),
        (lambda p: optim.SGD(p, lr=0.1, nesterov=True), ["nesterov", "momentum"]),
        (lambda p: optim.SGD([{"params": p, "lr": -1.0}], lr=0.1), ["lr", "-1.0"]),
        (lambda p: optim.SGD([{"params": p}, {"params": p}], lr=0.1), ["more than one"]),
        (lambda p: optim.SGD([], lr=0.1), ["empty"]),
    ],
)
def test_bad_options_raise(make: Any, words: list[str]) -> None:
    params = [tw.ones(2, requires_grad=True)]
    with pytest.raises(ValueError) as info:
        make(params)
    for word in words:
        assert word in str(info.value)


def test_non_tensor_and_non_leaf_params_raise() -> None:
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(tw.ones(2, requires_grad=True), lr=0.1)
    with pytest.raises(TypeError, match="Tensors"):
        optim.SGD([np.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([tw.ones(2, requires_grad=True) * 2], lr=0.1)


def test_load_state_dict_checks_the_layout() -> None:
    a, b = tw.ones(2, requires_grad=True), tw.ones(2, requires_grad=True)
    saved = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="param group 0 has 2"):
        optim.SGD([a], lr=0.1).load_state_dict(saved)
    with pytest.raises(ValueError, match="1 param groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(saved)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam"])
def test_float32_parameters_keep_float32(backend: str, name: str) -> None:
    rng = np.random.default_rng(2)
    value = rng.standard_normal((3, 2)).astype(np.float32)
    p = tw.tensor(value, requires_grad=True)
    ref_p = torch.tensor(value, requires_grad=True)
    opt, ref = getattr(optim, name)([p], lr=0.01), getattr(torch.optim, name)([ref_p], lr=0.01)
    for _ in range(3):
        grad = rng.standard_normal((3, 2)).astype(np.float32)
        p.grad, ref_p.grad = tw.tensor(grad), torch.tensor(grad)
        opt.step()
        ref.step()
    assert p.dtype is tw.float32
    # The moments take the parameter's dtype; the step count PyTorch's scalar dtype.
    named = [
        {k: str(v.dtype).split(".")[-1] for k, v in state.items() if hasattr(v, "dtype")}
        for state in (opt.state[p], ref.state[ref_p])
    ]
    assert named[0] == named[1]
    np.testing.assert_allclose(_host(p), _host(ref_p), rtol=1e-6, atol=1e-7)
