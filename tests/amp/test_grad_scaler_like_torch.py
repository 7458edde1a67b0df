"""``tw.amp.GradScaler("cpu")`` against ``torch.amp.GradScaler("cpu")``: the same calls on the
same weights give the same scales, weights, state dicts and exceptions."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

W0 = [1.0, -2.0, 0.5]


def _outcome(action: Callable[[], Any]) -> Any:
    """What ``action`` returned, or its exception's class and message."""
    try:
        return action()
    except (AssertionError, RuntimeError, ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)


def _run(m: Any, script: Callable[..., list], optimizer: str = "SGD", **scaler: Any) -> list:
    w = m.tensor(W0, requires_grad=True)
    opt = getattr(m.optim, optimizer)([w], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = m.amp.GradScaler("cpu", **scaler)
    return script(m, w, opt, s)


def _like_torch(script: Callable[..., list], optimizer: str = "SGD", **scaler: Any) -> None:
    ours = _run(tw, script, optimizer, **scaler)
    theirs = _run(torch, script, optimizer, **scaler)
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs):
        if isinstance(want, torch.Tensor):
            np.testing.assert_allclose(
                got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-7
            )
        else:
            assert got == want


def _backward(m: Any, s: Any, w: Any, factor: float = 1.0) -> None:
    s.scale((w * w).sum() * factor).backward()


def test_unscale_twice_and_after_step_raise_like_torch() -> None:
    def script(m, w, opt, s):
        _backward(m, s, w)
        first = s.unscale_(opt)
        out = [first, w.grad.clone(), _outcome(lambda: s.unscale_(opt))]
        out += [s.step(opt), _outcome(lambda: s.unscale_(opt)), _outcome(lambda: s.step(opt))]
        s.update()
        return [*out, w.clone(), s.get_scale()]

    _like_torch(script, init_scale=4.0)


def test_calls_before_scale_raise_like_torch() -> None:
    def script(m, w, opt, s):
        (w * w).sum().backward()
        return [
            _outcome(lambda: s.unscale_(opt)),
            _outcome(lambda: s.step(opt)),
            _outcome(lambda: s.update()),
            s.get_scale(),
            s.state_dict(),
        ]

    _like_torch(script, init_scale=8.0)


def test_update_without_a_step_and_step_without_grads_raise_like_torch() -> None:
    def script(m, w, opt, s):
        s.scale((w * w).sum())  # no backward: no gradient to check
        return [_outcome(lambda: s.update()), _outcome(lambda: s.step(opt))]

    _like_torch(script)


def test_closure_is_refused_when_enabled_and_passed_through_when_disabled() -> None:
    def script(m, w, opt, s):
        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        _backward(m, s, w)
        return [_outcome(lambda: s.step(opt, closure=closure)), w.clone()]

    _like_torch(script)

    def disabled(m, w, opt, s):
        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        return [s.step(opt, closure=closure).detach(), w.clone(), s.scale(w) is w]

    _like_torch(disabled, optimizer="Adam", enabled=False)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_growth_backoff_and_skips_over_many_steps_like_torch(optimizer: str) -> None:
    # The pattern of overflowing steps exercises growth after growth_interval clean steps,
    # the reset of the run of clean steps by an overflow, and NaN as well as inf.
    pattern = [1, 1, float("inf"), 1, 1, 1, float("nan"), 1, 1]

    def script(m, w, opt, s):
        out = []
        for factor in pattern:
            opt.zero_grad()
            _backward(m, s, w, factor)
            out += [s.step(opt) is None, w.clone()]
            s.update()
            out += [s.get_scale(), s.state_dict()]
        return out

    _like_torch(script, optimizer, init_scale=3.0, growth_interval=2, backoff_factor=0.25)


def test_scale_growth_stops_where_float32_overflows_like_torch() -> None:
    def script(m, w, opt, s):
        out = []
        for _ in range(3):
            opt.zero_grad()
            s.scale(w.sum()).backward()
            s.step(opt)
            s.update()
            out.append(s.get_scale())
        return out

    _like_torch(script, init_scale=2.0**126, growth_interval=1, growth_factor=2.0)


def test_scale_of_nested_lists_and_tuples_like_torch() -> None:
    def script(m, w, opt, s):
        got = s.scale([w, (w * 2, [w.sum()]), w.half()])
        flat = [got[0], got[1][0], got[1][1][0], got[2]]
        kinds = [type(got).__name__, type(got[1]).__name__, type(got[1][1]).__name__]
        return [*flat, kinds, str(got[2].dtype).rsplit(".")[-1], _outcome(lambda: s.scale(3.0))]

    _like_torch(script, init_scale=8.0)


def test_fp16_gradients_are_refused_like_torch() -> None:
    def script(m, w, opt, s):
        h = w.detach().half().requires_grad_()
        opt16 = m.optim.SGD([h], lr=0.1)
        s.scale((h * h).sum()).backward()
        return [_outcome(lambda: s.unscale_(opt16))]

    _like_torch(script)


def test_state_dict_round_trip_and_disabled_scaler_like_torch() -> None:
    def script(m, w, opt, s):
        for factor in (1.0, float("inf"), 1.0):
            opt.zero_grad()
            _backward(m, s, w, factor)
            s.step(opt)
            s.update()
        saved = s.state_dict()
        fresh = m.amp.GradScaler("cpu")
        fresh.load_state_dict(saved)
        before = fresh.get_scale()
        fresh.scale(w.sum())
        off = m.amp.GradScaler("cpu", enabled=False)
        return [
            saved,
            before,
            fresh.state_dict(),
            off.state_dict(),
            off.get_scale(),
            off.is_enabled(),
            s.is_enabled(),
            off.load_state_dict(saved),
            _outcome(lambda: fresh.load_state_dict({})),
            (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()),
        ]

    _like_torch(script, init_scale=16.0, growth_interval=2)


def test_setters_and_explicit_new_scale_like_torch() -> None:
    def script(m, w, opt, s):
        s.set_growth_factor(4.0)
        s.set_backoff_factor(0.125)
        s.set_growth_interval(1)
        out = []
        for factor in (1.0, float("inf")):
            opt.zero_grad()
            _backward(m, s, w, factor)
            s.step(opt)
            s.update()
            out.append(s.get_scale())
        s.update(3.0)
        out.append(s.get_scale())
        s.update(m.tensor(5.0))
        out.append(s.get_scale())
        out.append(_outcome(lambda: s.update(m.tensor([1.0, 2.0]))))
        return out

    _like_torch(script, init_scale=2.0)


@pytest.mark.parametrize(("growth", "backoff"), [(1.0, 0.5), (2.0, 1.0)])
def test_bad_factors_raise_like_torch(growth: float, backoff: float) -> None:
    def make(m):
        return _outcome(
            lambda: m.amp.GradScaler("cpu", growth_factor=growth, backoff_factor=backoff) and None
        )

    assert make(tw) == make(torch)


def test_the_deprecated_cpu_spelling_warns_like_torch() -> None:
    import tensorweaver.cpu.amp

    for m in (tw, torch):
        with pytest.warns(FutureWarning, match=r"torch\.amp\.GradScaler\('cpu'"):
            scaler = m.cpu.amp.GradScaler(init_scale=8.0)
        assert isinstance(scaler, m.amp.GradScaler) and scaler.get_scale() == 8.0
    assert tensorweaver.cpu.amp.GradScaler is tw.cpu.amp.GradScaler


def test_a_cuda_scaler_without_cuda_disables_itself_like_torch() -> None:
    # Stayed enabled (get_scale() 8.0, no warning) where PyTorch warns and disables it.
    def make(m):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            scaler = m.amp.GradScaler(init_scale=8.0)
        return scaler.is_enabled(), scaler.get_scale(), [str(w.message) for w in seen]

    if tw.cuda.is_available() != torch.cuda.is_available():
        pytest.skip("TensorWeaver and PyTorch see different CUDA devices here")
    assert make(tw) == make(torch)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize("zero_d", [True, False])
def test_scale_of_a_low_precision_loss_like_torch(dtype: str, zero_d: bool) -> None:
    # A 0-d float16 loss times 2**16 overflowed to inf in float16: PyTorch multiplies by a
    # float32 0-d tensor, so a 0-d half loss is scaled in float32.
    def script(m, w, opt, s):
        loss = ((w.sum() + 2) if zero_d else (w[:2] + 2)).to(getattr(m, dtype))
        scaled = s.scale(loss)
        return [scaled.float(), str(scaled.dtype).rsplit(".")[-1]]

    with tw.device("torch:cpu"):
        _like_torch(script)


def test_fit_scales_fp16_losses_on_the_cpu_with_a_cpu_scaler() -> None:
    # fit(precision="fp16") built the default GradScaler(), which is "cuda": without CUDA it
    # now disables itself (as PyTorch's), so fit passes its device's kind.
    from tensorweaver.training.precision import Precision

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "CUDA is not available. Disabling." here
        numerics = Precision("fp16", tw.device("torch:cpu"))
    assert numerics.scaler.is_enabled()
    assert numerics.scaler.get_scale() == torch.amp.GradScaler("cpu").get_scale()
