"""A sweep of every optimizer and its options against ``torch.optim``, on every backend.

Each case starts TensorWeaver and PyTorch from the same parameters (several shapes, a 0-d
one, one without a gradient, two param groups with different options), feeds both the
same gradients for a few steps, and compares the parameters and the whole state dict:
state keys, tensor shapes, dtypes and values, and the param groups' contents and types.
The state's scalars (``step``, NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``) are
Python floats here (tw.compile replays them symbolically) where PyTorch keeps 0-d tensors;
their values are compared.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import optim
from tw_backends import FAST, entered

torch = pytest.importorskip("torch")


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """NumPy and torch:cpu (a sweep this size takes minutes on cuPyNumeric)."""
    with entered(request.param) as spec:
        yield spec


# (optimizer, options of both groups, the second group's own options)
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("SGD", {"lr": 0.1}, {"lr": 0.05}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2}, {"momentum": 0.5}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, {"weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "weight_decay": 0.1, "maximize": True}, {"lr": 0.01}),
    ("Adam", {"lr": 0.01}, {"lr": 0.02, "betas": (0.8, 0.9)}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}, {"maximize": True}),
    ("Adam", {"lr": 0.01, "decoupled_weight_decay": True, "weight_decay": 0.1}, {"eps": 1e-3}),
    ("AdamW", {"lr": 0.01}, {"weight_decay": 0.5}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True}, {"amsgrad": False}),
    ("Adamax", {"lr": 0.01}, {"betas": (0.5, 0.9)}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}, {"eps": 1e-2}),
    ("NAdam", {"lr": 0.01}, {"momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}, {"lr": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}, {"betas": (0.8, 0.99)}),
    ("RAdam", {"lr": 0.01, "betas": (0.9, 0.9)}, {"lr": 0.02}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}, {}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}, {"eps": 1e-4}),
    ("Adagrad", {"lr": 0.1}, {"lr_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.3, "weight_decay": 0.1}, {}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "eps": 1e-3}, {"lr": 0.2}),
    ("Adadelta", {}, {"rho": 0.5}),
    ("Adadelta", {"lr": 0.5, "weight_decay": 0.1, "maximize": True}, {"eps": 1e-3}),
    ("RMSprop", {}, {"alpha": 0.5}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}, {"weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "maximize": True}, {"momentum": 0.9}),
    ("Rprop", {}, {"etas": (0.3, 1.5)}),
    ("Rprop", {"lr": 0.05, "step_sizes": (1e-3, 0.1), "maximize": True}, {"lr": 0.01}),
    ("ASGD", {}, {"lambd": 0.01}),
    ("ASGD", {"lr": 0.05, "t0": 2, "alpha": 0.5, "weight_decay": 0.1}, {"maximize": True}),
    ("Adafactor", {}, {"lr": 0.05}),
    ("Adafactor", {"beta2_decay": -0.5, "eps": (1e-20, 1e-2), "d": 1.5}, {"weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.02, "maximize": True}, {"eps": (None, 0.1)}),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]
FOREACH = (None, False, True)
STEPS = 5
# (shape, has a gradient); the first two form group 0, the rest group 1
PARAMS = [((3, 4), True), ((4,), True), ((), True), ((2, 3, 2), True), ((2, 2), False)]


def _make(lib: Any, name: str, params: list[Any], options: dict, second: dict, **more: Any) -> Any:
    groups = [{"params": params[:2]}, {"params": params[2:], **second}]
    return getattr(lib.optim, name)(groups, **options, **more)


def _pair(dtypes: list[str], complex_: bool = False) -> tuple[list[Any], list[Any]]:
    """The same parameters in TensorWeaver and in PyTorch."""
    rng = np.random.default_rng(0)
    values = []
    for (shape, _), dtype in zip(PARAMS, dtypes):
        value = rng.standard_normal(shape)
        if complex_:
            value = value + 1j * rng.standard_normal(shape)
        values.append(value.astype(dtype))
    ours = [tw.tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    return ours, theirs


def _feed(step: int, ours: list[Any], theirs: list[Any]) -> None:
    """The same gradient on both: a quadratic's plus noise, at PyTorch's parameters."""
    rng = np.random.default_rng(100 + step)
    for (_, has_grad), a, b in zip(PARAMS, ours, theirs):
        if not has_grad:
            continue
        p = b.detach().numpy()
        grad = 1.5 * p - 0.3 + 0.5 * rng.standard_normal(p.shape)
        if np.iscomplexobj(p):
            grad = grad + 0.5j * rng.standard_normal(p.shape)
        grad = grad.astype(p.dtype)
        a.grad, b.grad = tw.tensor(grad), torch.tensor(grad)


def _tol(dtype: Any) -> dict[str, float]:
    single = str(dtype).split(".")[-1] in ("float32", "complex64")
    return {"rtol": 2e-5, "atol": 2e-6} if single else {"rtol": 1e-11, "atol": 1e-13}


def _assert_params_match(ours: list[Any], theirs: list[Any]) -> None:
    for a, b in zip(ours, theirs):
        assert a.dtype.name == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), **_tol(b.dtype))


def _assert_value_matches(key: Any, got: Any, want: Any) -> None:
    if isinstance(want, torch.Tensor):
        # (the scalar state too: 'step', NAdam's mu_product, ... are 0-d tensors, as torch's)
        assert isinstance(got, tw.Tensor), (key, type(got))
        assert tuple(got.shape) == tuple(want.shape), key
        assert got.dtype.name == str(want.dtype).split(".")[-1], key
        np.testing.assert_allclose(
            np.asarray(got), want.numpy(), err_msg=str(key), **_tol(want.dtype)
        )
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), key
        for g, w in zip(got, want):
            _assert_value_matches(key, g, w)
    else:
        assert got == want and type(got) is type(want), (key, got, want)


def _assert_state_dicts_match(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert list(ours) == list(theirs)
    assert set(ours["state"]) == set(theirs["state"])
    for index, expected in theirs["state"].items():
        got = ours["state"][index]
        assert set(got) == set(expected), index
        for key, value in expected.items():
            _assert_value_matches(key, got[key], value)
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for got, expected in zip(ours["param_groups"], theirs["param_groups"]):
        assert list(got) == list(expected)
        for key, value in expected.items():
            _assert_value_matches(key, got[key], value)


def _run(opt: Any, ref: Any, ours: list[Any], theirs: list[Any], steps: int = STEPS) -> None:
    for step in range(steps):
        _feed(step, ours, theirs)
        opt.step()
        ref.step()
        _assert_params_match(ours, theirs)
        _assert_state_dicts_match(opt.state_dict(), ref.state_dict())


@pytest.mark.parametrize("foreach", FOREACH)
@pytest.mark.parametrize(("name", "options", "second"), CASES, ids=IDS)
def test_matches_torch(backend: str, name: str, options: dict, second: dict, foreach: Any) -> None:
    ours, theirs = _pair(["float64"] * len(PARAMS))
    opt = _make(tw, name, ours, options, second, foreach=foreach)
    ref = _make(torch, name, theirs, options, second, foreach=foreach)
    _run(opt, ref, ours, theirs)
    np.testing.assert_array_equal(np.asarray(ours[-1].detach()), theirs[-1].detach().numpy())


FIRST_OF_EACH = [case for i, case in enumerate(CASES) if i == 0 or CASES[i - 1][0] != case[0]]


@pytest.mark.parametrize("foreach", [None, True])
@pytest.mark.parametrize(("name", "options", "second"), FIRST_OF_EACH, ids=lambda v: str(v)[:9])
def test_mixed_dtypes_match_torch(
    backend: str, name: str, options: dict, second: dict, foreach: Any
) -> None:
    """float32 and float64 parameters in one group (PyTorch's foreach splits them)."""
    ours, theirs = _pair(["float32", "float64", "float64", "float32", "float32"])
    opt = _make(tw, name, ours, options, second, foreach=foreach)
    ref = _make(torch, name, theirs, options, second, foreach=foreach)
    _run(opt, ref, ours, theirs)


COMPLEX_CASES = [case for case in CASES if case[0] != "Adafactor"]


@pytest.mark.parametrize(("name", "options", "second"), COMPLEX_CASES, ids=lambda v: str(v)[:9])
def test_complex_params_match_torch(backend: str, name: str, options: dict, second: dict) -> None:
    """PyTorch steps a complex parameter as pairs of reals (``view_as_real``)."""
    ours, theirs = _pair(["complex128"] * len(PARAMS), complex_=True)
    _run(
        _make(tw, name, ours, options, second),
        _make(torch, name, theirs, options, second),
        ours,
        theirs,
    )


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_complex_params_raise_like_torch(backend: str, name: str) -> None:
    for lib in (tw, torch):
        p = lib.tensor(np.ones((2, 2)) * (1 + 1j), requires_grad=True)
        opt = getattr(lib.optim, name)([p])
        p.grad = lib.ones_like(p)
        with pytest.raises(RuntimeError, match="does not support complex parameters"):
            opt.step()


TENSOR_LR = [(name, options, second) for name, options, second in FIRST_OF_EACH]


@pytest.mark.parametrize(("name", "options", "second"), TENSOR_LR, ids=lambda v: str(v)[:9])
def test_lr_as_a_tensor_matches_torch(backend: str, name: str, options: dict, second: dict) -> None:
    ours, theirs = _pair(["float64"] * len(PARAMS))
    lr = options.get("lr", 0.01)
    opt = _make(tw, name, ours, {**options, "lr": tw.tensor(lr, dtype=tw.float64)}, second)
    ref = _make(
        torch, name, theirs, {**options, "lr": torch.tensor(lr, dtype=torch.float64)}, second
    )
    _run(opt, ref, ours, theirs)
    assert isinstance(opt.param_groups[0]["lr"], tw.Tensor)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_betas_as_tensors_match_torch(backend: str, name: str) -> None:
    ours, theirs = _pair(["float64"] * len(PARAMS))
    opt = _make(
        tw,
        name,
        ours,
        {"betas": (tw.tensor(0.8, dtype=tw.float64), tw.tensor(0.95, dtype=tw.float64))},
        {},
    )
    ref = _make(torch, name, theirs, {"betas": (torch.tensor(0.8), torch.tensor(0.95))}, {})
    _run(opt, ref, ours, theirs)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("option", ["lr", "betas"])
def test_tensor_options_with_foreach_raise_like_torch(name: str, option: str) -> None:
    for lib in (tw, torch):
        value = lib.tensor(0.01) if option == "lr" else (lib.tensor(0.9), lib.tensor(0.999))
        with pytest.raises(ValueError, match="as a Tensor is not supported for capturable=False"):
            getattr(lib.optim, name)(
                [lib.zeros(2, requires_grad=True)], foreach=True, **{option: value}
            )


def _to_torch(value: Any) -> Any:
    if isinstance(value, tw.Tensor):
        return torch.tensor(np.asarray(value))
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_torch(v) for v in value)
    return value


def _to_tw(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return tw.tensor(value.numpy())
    if isinstance(value, dict):
        return {k: _to_tw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_tw(v) for v in value)
    return value


@pytest.mark.parametrize(("name", "options", "second"), FIRST_OF_EACH, ids=lambda v: str(v)[:9])
def test_state_dicts_load_across_frameworks(
    backend: str, name: str, options: dict, second: dict
) -> None:
    """PyTorch's state dict (as arrays) resumes here, and ours resumes in PyTorch."""
    ours, theirs = _pair(["float64"] * len(PARAMS))
    opt = _make(tw, name, ours, options, second)
    ref = _make(torch, name, theirs, options, second)
    for step in range(2):
        _feed(step, ours, theirs)
        opt.step()
        ref.step()
    resumed, resumed_ref = _pair(["float64"] * len(PARAMS))
    for a, b, p, q in zip(resumed, resumed_ref, ours, theirs):
        with tw.no_grad():
            a.copy_(tw.tensor(q.detach().numpy()))
        with torch.no_grad():
            b.copy_(torch.tensor(np.asarray(p.detach())))
    loaded = _make(tw, name, resumed, {**options, "lr": 1.0}, {})
    loaded.load_state_dict(_to_tw(ref.state_dict()))  # from PyTorch
    loaded_ref = _make(torch, name, resumed_ref, {**options, "lr": 1.0}, {})
    loaded_ref.load_state_dict(_to_torch(opt.state_dict()))  # from TensorWeaver
    assert loaded.param_groups[1]["lr"] == ref.param_groups[1]["lr"]
    _run(loaded, ref, resumed, theirs, steps=3)
    _run(opt, loaded_ref, ours, resumed_ref, steps=3)


INVALID = [
    ("SGD", {"lr": -0.1}),
    ("SGD", {"lr": 0.1, "momentum": -1.0}),
    ("SGD", {"lr": 0.1, "weight_decay": -1.0}),
    ("SGD", {"lr": 0.1, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}),
    ("SGD", {"lr": 0.1, "foreach": True, "fused": True}),
    ("Adam", {"lr": -1.0}),
    ("Adam", {"eps": -1.0}),
    ("Adam", {"betas": (1.0, 0.9)}),
    ("Adam", {"betas": (0.9, 1.0)}),
    ("Adam", {"betas": (-0.1, 0.9)}),
    ("Adam", {"weight_decay": -1.0}),
    ("Adam", {"lr": float("nan")}),
    ("Adam", {"lr": torch.ones(2)}),
    ("Adam", {"foreach": True, "fused": True}),
    ("AdamW", {"betas": (0.9, 1.5)}),
    ("AdamW", {"betas": (torch.tensor(0.9), 0.999)}),
    ("Adam", {"betas": (0, 0.999)}),
    ("Adamax", {"eps": -1.0}),
    ("Adamax", {"betas": (0.9, 1.0)}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("NAdam", {"betas": (1.0, 0.9)}),
    ("RAdam", {"weight_decay": -1.0}),
    ("Adagrad", {"lr_decay": -1.0}),
    ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("Adagrad", {"eps": -1.0}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"rho": -0.1}),
    ("RMSprop", {"alpha": -1.0}),
    ("RMSprop", {"momentum": -1.0}),
    ("Rprop", {"etas": (1.5, 1.2)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
    ("ASGD", {"lr": -1.0}),
    ("ASGD", {"weight_decay": -1.0}),
    ("LBFGS", {"lr": -1.0}),
    ("Adafactor", {"lr": -1.0}),
    ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1.0, 1e-3)}),
    ("Adafactor", {"eps": (None, -1.0)}),
    ("Adafactor", {"d": 0.5}),
    ("Adafactor", {"weight_decay": -1.0}),
    ("Muon", {"lr": -1.0}),
    ("Muon", {"momentum": -1.0}),
    ("Muon", {"weight_decay": -1.0}),
    ("Muon", {"adjust_lr_fn": "other"}),
]


@pytest.mark.parametrize(("name", "options"), INVALID, ids=lambda v: str(v)[:20])
def test_invalid_options_raise_like_torch(name: str, options: dict) -> None:
    """The same exception class, and PyTorch's message within ours."""
    with pytest.raises(Exception) as theirs:
        getattr(torch.optim, name)([torch.zeros(2, 2, requires_grad=True)], **options)
    ours_options = {k: _to_tw(v) for k, v in options.items()}
    with pytest.raises(type(theirs.value)) as ours:
        getattr(optim, name)([tw.zeros(2, 2, requires_grad=True)], **ours_options)
    assert name in str(ours.value)
    assert str(theirs.value) in str(ours.value)


def test_options_torch_accepts_are_accepted() -> None:
    """ASGD's alpha, lambd and t0 may be negative; SGD's dampening too."""
    for lib in (tw, torch):
        p = lib.zeros(2, requires_grad=True)
        lib.optim.ASGD([p], alpha=-1.0, lambd=-1.0, t0=-1.0)
        lib.optim.SGD([p], lr=0.1, dampening=-1.0)
        lib.optim.Adam([p], fused=True)


def test_muon_rejects_what_torch_rejects() -> None:
    for lib in (tw, torch):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            lib.optim.Muon([lib.zeros(3, requires_grad=True)])
        p = lib.zeros(2, 2, requires_grad=True)
        opt = lib.optim.Muon([p], ns_steps=100)
        p.grad = lib.ones(2, 2)
        with pytest.raises(ValueError, match="Number of steps must be less than 100"):
            opt.step()


MUON_CASES = [
    {},
    {"lr": 0.02, "nesterov": False, "adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.01},
    {"momentum": 0.5, "adjust_lr_fn": "original", "ns_steps": 3},
]


@pytest.mark.parametrize("options", MUON_CASES)
def test_muon_matches_torch_where_bfloat16_exists(options: dict) -> None:
    """The bfloat16 iterations match PyTorch's bit for bit; the float32 update of the
    parameter may differ in the last bit (PyTorch's kernel fuses the multiply-add)."""
    with tw.device("torch:cpu"):
        ours = [tw.tensor(v, requires_grad=True) for v in _muon_values()]
    theirs = [torch.tensor(v, requires_grad=True) for v in _muon_values()]
    opt, ref = optim.Muon(ours, **options), torch.optim.Muon(theirs, **options)
    for step in range(4):
        rng = np.random.default_rng(step)
        for a, b in zip(ours, theirs):
            grad = rng.standard_normal(tuple(b.shape)).astype(np.float32)
            a.grad, b.grad = tw.tensor(grad, device="torch:cpu"), torch.tensor(grad)
        opt.step()
        ref.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=3e-7)
        _assert_state_dicts_match(opt.state_dict(), ref.state_dict())


def _muon_values() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.standard_normal(shape).astype(np.float32) for shape in [(3, 4), (6, 2)]]


def _newton_schulz_float32(g: np.ndarray, steps: int = 5) -> np.ndarray:
    """PyTorch's iterations in float32 (the fallback where there is no bfloat16)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.astype(np.float32)
    x = x.T if g.shape[0] > g.shape[1] else x
    x = x / max(np.linalg.norm(x), 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def test_muon_without_bfloat16_iterates_in_float32() -> None:
    with tw.device("numpy"):
        ours = [tw.tensor(v, requires_grad=True) for v in _muon_values()]
    opt = optim.Muon(ours, lr=0.1, weight_decay=0.01, nesterov=False)
    expected = _muon_values()
    for step in range(2):
        rng = np.random.default_rng(step)
        for p, value in zip(ours, expected):
            grad = rng.standard_normal(value.shape).astype(np.float32)
            p.grad = tw.tensor(grad, device="numpy")
            buf = opt.state[p]["momentum_buffer"].numpy() if p in opt.state else 0 * grad
            buf = buf + (grad - buf) * (1 - 0.95)
            ratio = max(1, value.shape[0] / value.shape[1]) ** 0.5
            value *= 1 - 0.1 * 0.01
            value -= 0.1 * ratio * _newton_schulz_float32(buf)
        opt.step()
        for p, value in zip(ours, expected):
            np.testing.assert_allclose(p.detach().numpy(), value, rtol=1e-5, atol=1e-6)


# -- the optimizer's API around the step ------------------------------------------------------


def _hook_log(lib: Any) -> list[Any]:
    p = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.SGD([p], lr=0.1)
    log: list[Any] = []

    def pre(o: Any, args: tuple, kwargs: dict) -> Any:
        log.append(("pre", o is opt, len(args), sorted(kwargs)))
        return None

    def replace(o: Any, args: tuple, kwargs: dict) -> Any:
        log.append(("replace", len(args)))
        return args, {"closure": lambda: 7.0}

    def post(o: Any, args: tuple, kwargs: dict) -> None:
        log.append(("post", o is opt, len(args), sorted(kwargs)))

    module = importlib.import_module(f"{lib.__name__}.optim.optimizer")
    glob = module.register_optimizer_step_pre_hook(lambda o, a, k: log.append("global pre"))
    globp = module.register_optimizer_step_post_hook(lambda o, a, k: log.append("global post"))
    handles = [opt.register_step_pre_hook(pre), opt.register_step_post_hook(post)]
    p.grad = lib.ones(2, dtype=lib.float64)
    opt.step()
    replaced = opt.register_step_pre_hook(replace)
    log.append(("loss", opt.step()))
    for handle in [*handles, replaced, glob]:
        handle.remove()
    opt.step()
    globp.remove()
    opt.step()
    return [*log, p.tolist()]


def test_step_hooks_like_torch() -> None:
    assert _hook_log(tw) == _hook_log(torch)


def test_step_pre_hook_returning_junk_raises_like_torch() -> None:
    for lib in (tw, torch):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([p])
        opt.register_step_pre_hook(lambda o, a, k: 5)
        with pytest.raises(RuntimeError, match="must return None or a tuple of"):
            opt.step()


def _state_dict_hook_log(lib: Any) -> list[Any]:
    p = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.Adam([p], lr=0.1)
    p.grad = lib.ones(2, dtype=lib.float64)
    opt.step()
    log: list[Any] = []

    def post(o: Any, state_dict: dict) -> dict:
        log.append(("post", sorted(state_dict)))
        return {**state_dict, "extra": 1}

    def load_pre(o: Any, state_dict: dict) -> dict:
        log.append(("load pre", sorted(state_dict)))
        groups = [{**g, "lr": 0.5} for g in state_dict["param_groups"]]
        return {"state": state_dict["state"], "param_groups": groups}

    opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: log.append("pre first"), prepend=True)
    opt.register_state_dict_post_hook(post)
    opt.register_load_state_dict_pre_hook(load_pre)
    opt.register_load_state_dict_post_hook(lambda o: log.append("load post"))
    opt.load_state_dict(opt.state_dict())
    return [*log, opt.param_groups[0]["lr"]]


def test_state_dict_hooks_like_torch() -> None:
    assert _state_dict_hook_log(tw) == _state_dict_hook_log(torch)


def test_subclass_step_runs_hooks_once() -> None:
    class Doubled(optim.SGD):
        def step(self, closure: Any = None) -> Any:
            return super().step(closure)

    p = tw.zeros(2, requires_grad=True)
    opt = Doubled([p], lr=0.1)
    calls: list[str] = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    p.grad = tw.ones(2)
    opt.step()
    assert calls == ["pre", "post"]


def test_add_param_group_like_torch(backend: str) -> None:
    for lib in (tw, torch):
        a, b = lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)
        opt = lib.optim.SGD([a], lr=0.1, momentum=0.5)
        group = {"params": b, "lr": 0.2}
        opt.add_param_group(group)
        assert opt.param_groups[1] is group  # the caller's dict, filled with the defaults
        assert group["momentum"] == 0.5 and group["params"] == [b]
        group["lr"] = 0.3
        b.grad = lib.ones(3)
        opt.step()
        assert b.tolist() == pytest.approx([-0.3] * 3)
        with pytest.raises(
            ValueError, match="some parameters appear in more than one parameter group"
        ):
            opt.add_param_group({"params": [a]})
        with pytest.raises(TypeError, match="ordered collections|ordered collection"):
            opt.add_param_group({"params": {lib.zeros(1, requires_grad=True)}})


def test_zero_grad_and_closure_like_torch(backend: str) -> None:
    results = []
    for lib in (tw, torch):
        p = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.Adam([p], lr=0.1)

        def closure(opt: Any = opt, p: Any = p) -> Any:
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss

        losses = [float(opt.step(closure)) for _ in range(3)]
        opt.zero_grad(set_to_none=False)
        zeroed = p.grad.tolist()
        opt.zero_grad()
        results.append((losses, p.tolist(), zeroed, p.grad))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-14)
    assert results[0][1] == pytest.approx(results[1][1], rel=1e-14)
    assert results[0][2:] == results[1][2:]


def test_step_without_gradients_keeps_state_empty(backend: str) -> None:
    for lib in (tw, torch):
        opt = lib.optim.Adam([lib.zeros(2, requires_grad=True)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt.step()
        assert opt.state_dict()["state"] == {}


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_lbfgs_matches_torch(backend: str, dtype: str, line_search_fn: Any) -> None:
    """A complex parameter counts as its real and imaginary parts (PyTorch's flat views)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    a = a @ a.T + np.eye(4)
    start = rng.standard_normal(4) + (1j * rng.standard_normal(4) if dtype == "complex128" else 0)
    results = []
    for lib in (tw, torch):
        x = lib.tensor(start, requires_grad=True)
        m = lib.tensor(a.astype(start.dtype))
        opt = lib.optim.LBFGS(
            [x], lr=0.5, max_iter=5, history_size=3, line_search_fn=line_search_fn
        )

        def closure(opt: Any = opt, x: Any = x, m: Any = m) -> Any:
            opt.zero_grad()
            y = m @ x
            loss = (y.conj() * y).real.sum() + (x.abs() ** 3).sum()
            loss.backward()
            return loss

        losses = [float(opt.step(closure)) for _ in range(3)]
        results.append((losses, np.asarray(x.detach())))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


def test_extra_group_keys_are_kept_like_torch(backend: str) -> None:
    """Keys an optimizer does not use (a group's name, timm's lr_scale) stay in the group."""
    for lib in (tw, torch):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([{"params": [p], "name": "encoder", "lr_scale": 0.5}])
        assert opt.param_groups[0]["name"] == "encoder"
        assert opt.state_dict()["param_groups"][0]["lr_scale"] == 0.5


def _custom_optimizer_run(lib: Any) -> list[float]:
    class Sign(lib.optim.Optimizer):
        """A user's optimizer: PyTorch's base class checks none of its options."""

        def __init__(self, params: Any) -> None:
            super().__init__(params, {"lr": -0.5, "betas": (0.9, 0.99, 0.999), "eps": "unused"})

        def step(self, closure: Any = None) -> Any:
            with lib.no_grad():
                for group in self.param_groups:
                    for q in group["params"]:
                        if q.grad is not None:
                            q.add_(q.grad.sign(), alpha=-group["lr"])
            return None

    p = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
    opt = Sign([p])
    calls: list[str] = []
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    p.grad = lib.tensor([3.0, -1.0], dtype=lib.float64)
    opt.step()
    return [*p.tolist(), *calls]


def test_custom_optimizers_are_not_checked_like_torch() -> None:
    assert _custom_optimizer_run(tw) == _custom_optimizer_run(torch)


def _raised(make: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        make()
    return info.value


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.optim.SGD([], lr=0.1),
        lambda lib: lib.optim.SGD([lib.zeros(2, requires_grad=True) * 2], lr=0.1),
        lambda lib: lib.optim.SGD([{"params": {lib.zeros(2, requires_grad=True)}}], lr=0.1),
        lambda lib: lib.optim.SGD(
            [lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)], lr=0.1
        ).load_state_dict(lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1).state_dict()),
        lambda lib: lib.optim.SGD(
            [{"params": [lib.zeros(1, requires_grad=True)]}, {"params": [lib.zeros(1)]}], lr=0.1
        ).load_state_dict(lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1).state_dict()),
    ],
    ids=["empty", "non-leaf", "set", "load-size", "load-groups"],
)
def test_construction_and_loading_errors_like_torch(make: Any) -> None:
    theirs, ours = _raised(lambda: make(torch)), _raised(lambda: make(tw))
    assert type(ours) is type(theirs)
    assert str(theirs) in str(ours)


DIFFERENTIABLE = [
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "maximize": True}),
    ("Adam", {"lr": 0.1}),
    ("AdamW", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1}),
    ("Adadelta", {}),
    ("NAdam", {"lr": 0.1}),
    ("RAdam", {"lr": 0.1}),
    ("ASGD", {"lr": 0.1}),
]


def _differentiated(lib: Any, name: str, options: dict) -> list[np.ndarray]:
    """Two steps from a non-leaf parameter, then d(loss)/d(start) and d(loss)/d(gradient)."""
    start = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    g = lib.tensor([0.3, 0.1, -0.7], dtype=lib.float64, requires_grad=True)
    p = start.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **options)
    for i in range(2):
        p.grad = g * (i + 1)
        opt.step()
    grads = lib.autograd.grad((p * p).sum(), (start, g))
    return [np.asarray(t.detach()) for t in (p, *grads)]


@pytest.mark.parametrize(("name", "options"), DIFFERENTIABLE, ids=lambda v: str(v)[:12])
def test_differentiable_steps_match_torch(backend: str, name: str, options: dict) -> None:
    """With differentiable=True the step is recorded: gradients flow through it."""
    for ours, theirs in zip(
        _differentiated(tw, name, options), _differentiated(torch, name, options)
    ):
        # (atol: a gradient of 1e-7 here is a difference of terms of size 1)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


def test_differentiable_step_of_a_leaf_raises_like_torch() -> None:
    for lib in (tw, torch):
        p = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, differentiable=True)
        p.grad = lib.ones(2)
        with pytest.raises(
            RuntimeError, match="leaf .* that requires grad is being used in an in-place"
        ):
            opt.step()
