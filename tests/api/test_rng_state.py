"""tw.get_rng_state / set_rng_state, tw.random.fork_rng, checkpoint's preserve_rng_state and
tw.cuda's generator states against PyTorch's: a saved state puts the streams back exactly.

Each property is checked on torch first (its CPU generator), then on tensorweaver, where
``get_rng_state`` covers the default generator and the current device's stream (the
backends' optional ``get_rng_state``/``set_rng_state``, API 2.5). A backend without them
(cuPyNumeric; NumPy with them hidden) falls back to reseeding, with one warning.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
import torch.utils.checkpoint as tcp
from tensorweaver import random as rnd
from tensorweaver import registry
from tensorweaver.utils import checkpoint as wcp
from tw_backends import entered

SPECS = ["numpy", "torch:cpu"]
NO_CUDA = pytest.mark.skipif(tw.cuda.is_available(), reason="checks a machine without CUDA")
CUDA = pytest.mark.skipif(not tw.cuda.is_available(), reason="no CUDA device")


def _host(values: Any) -> list:
    """Each tensor's values as a NumPy array (torch's and tensorweaver's, on any device)."""
    return [v.cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v) for v in values]


def _draws(m: Any) -> list:
    """A draw of every kind from the streams ``get_rng_state`` covers (``m``: torch or tw)."""
    return _host(
        [
            m.randn(5),
            m.rand(2, 3),
            m.randint(0, 100, (7,)),
            m.randperm(9),
            m.nn.functional.dropout(m.ones(20), 0.5, True),
            m.empty(4).normal_(),
            m.empty(3).uniform_(-1.0, 1.0),
        ]
    )


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("spec", SPECS)
def test_get_and_set_rng_state_repeat_every_draw_as_torch(spec: str) -> None:
    for m in (torch, tw):
        m.manual_seed(11)
        state = m.get_rng_state()
        first = _draws(m)
        m.manual_seed(3)
        m.set_rng_state(state)
        assert _same(_draws(m), first), m.__name__
        assert m.initial_seed() == 11
    with entered(spec):
        tw.manual_seed(11)
        state = tw.get_rng_state()
        first = _draws(tw)
        tw.manual_seed(3)
        tw.random.set_rng_state(state)
        assert _same(_draws(tw), first)
        assert tw.initial_seed() == 11


@pytest.mark.parametrize("spec", SPECS)
def test_the_state_is_a_host_uint8_tensor_of_both_streams_and_reading_keeps_them(
    spec: str,
) -> None:
    with entered(spec) as entered_spec:
        backend = tw.random.seeded(registry.backend_object(entered_spec))
        tw.manual_seed(5)
        want = _draws(tw)
        tw.manual_seed(5)
        state = tw.get_rng_state()
        assert state.dtype is tw.uint8 and state.device == "numpy"  # as torch's: CPU
        assert tuple(state.shape) == (48 + len(backend.get_rng_state()),)
        np.testing.assert_array_equal(np.asarray(tw.random.get_rng_state()), np.asarray(state))
        assert _same(_draws(tw), want)


@pytest.mark.parametrize("spec", SPECS)
def test_set_rng_state_refuses_what_torch_refuses(spec: str) -> None:
    for m in (torch, tw):
        with pytest.raises(TypeError):
            m.set_rng_state(m.zeros(5056))
        with pytest.raises(TypeError):
            m.set_rng_state([0] * 5056)
        with pytest.raises(RuntimeError, match="size"):
            m.set_rng_state(m.zeros(3, dtype=m.uint8))
    with entered(spec):
        # A Generator's state holds the default generator's stream only: the wrong size.
        with pytest.raises(RuntimeError, match="48 of the default generator"):
            tw.set_rng_state(tw.Generator().get_state())
        other = "torch:cpu" if spec == "numpy" else "numpy"
        with tw.device(other):
            foreign = tw.get_rng_state()
        with pytest.raises(
            RuntimeError, match=f"found the input RNG state size to be {foreign.numel()}"
        ):
            tw.set_rng_state(foreign)


def _after_block(m: Any, fork: dict | None) -> list:
    """The draws after a block that draws, run in ``m.random.fork_rng(**fork)`` (None: no
    fork; ``m``: torch or tw)."""
    m.manual_seed(2)
    m.rand(1)
    with m.random.fork_rng(**fork) if fork is not None else contextlib.nullcontext():
        _draws(m)
    return _draws(m)


def _without_block(m: Any) -> list:
    m.manual_seed(2)
    m.rand(1)
    return _draws(m)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize(
    "fork",
    [{}, {"devices": []}, {"device_type": "cuda"}, {"devices": [], "device_type": "cuda"}],
    ids=["default", "devices=[]", "device_type", "both"],
)
def test_fork_rng_puts_the_streams_back_exactly_as_torch(spec: str, fork: dict) -> None:
    assert _same(_after_block(torch, fork), _without_block(torch))
    with entered(spec):
        assert _same(_after_block(tw, fork), _without_block(tw))


@pytest.mark.parametrize("spec", SPECS)
def test_fork_rng_forks_nothing_for_the_meta_device_type_as_torch(spec: str) -> None:
    fork = {"device_type": "meta"}
    assert _same(_after_block(torch, fork), _after_block(torch, None))
    with entered(spec):
        assert _same(_after_block(tw, fork), _after_block(tw, None))


@NO_CUDA
def test_fork_rng_of_a_listed_device_that_does_not_exist_raises_as_torch() -> None:
    with pytest.raises(AssertionError):  # torch's CPU build; its CUDA builds: RuntimeError
        with torch.random.fork_rng(devices=[0]):
            pass
    with pytest.raises(RuntimeError, match="cuda"):
        with tw.random.fork_rng(devices=[0]):
            pass


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_checkpoint_draws_what_the_function_draws_without_it_as_torch(
    spec: str, reentrant: bool
) -> None:
    p = 0.4

    def check(m: Any, ckpt: Any, x: Any) -> None:
        masks = []

        def f(v: Any) -> Any:
            dropped = m.nn.functional.dropout(v, p, True)
            masks.append(np.asarray(dropped.detach()) != 0)
            return dropped * 3.0 + m.rand(v.shape[0], dtype=v.dtype)

        m.manual_seed(0)
        plain = np.asarray(f(x).detach())
        after_plain, later = _draws(m), _draws(m)
        m.manual_seed(0)
        y = ckpt.checkpoint(f, x, use_reentrant=reentrant)
        np.testing.assert_array_equal(np.asarray(y.detach()), plain)
        assert _same(_draws(m), after_plain)
        y.sum().backward()  # recomputes f: its gradient holds the recomputed mask
        assert _same(_draws(m), later)
        assert np.array_equal(masks[1], masks[0]) and 0.5 < masks[0].mean() < 0.7
        np.testing.assert_allclose(np.asarray(x.grad), masks[0] * 3.0 / (1 - p), rtol=1e-12)

    values = np.random.default_rng(1).uniform(0.5, 1.5, 500)
    check(torch, tcp, torch.tensor(values, requires_grad=True))
    with entered(spec):
        check(tw, wcp, tw.tensor(values, dtype=tw.float64, requires_grad=True))


def _without_states(spec: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The backend of ``spec``, with its stream states hidden if it has them."""
    backend = registry.backend_object(spec)
    if rnd.has_state(backend):
        monkeypatch.setattr(backend, "get_rng_state", None, raising=False)
        monkeypatch.setattr(backend, "set_rng_state", None, raising=False)
    monkeypatch.setattr(rnd, "_warned", set())
    return backend


@pytest.mark.parametrize("spec", ["numpy", "cunumeric"])
def test_without_stream_states_the_core_reseeds_and_says_so_once(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with entered(spec):
        name = _without_states(spec, monkeypatch).device.name
        tw.manual_seed(4)
        with pytest.warns(tw.random.RngStateWarning, match="get_rng_state/set_rng_state"):
            state = tw.get_rng_state()
        assert tuple(state.shape) == (48,)  # the default generator's alone
        perm = np.asarray(tw.randperm(12))
        tw.set_rng_state(state)
        np.testing.assert_array_equal(np.asarray(tw.randperm(12)), perm)
        with warnings.catch_warnings():
            # said once already (for this device: fork_rng also forks the other CPU devices
            # earlier tests created, cuPyNumeric's among them, which may say it now)
            warnings.filterwarnings(
                "error", f".* of {re.escape(name)} ", category=tw.random.RngStateWarning
            )
            after = []
            for draws in (0, 2):  # later draws still do not depend on the block's
                tw.manual_seed(1)
                with tw.random.fork_rng():
                    for _ in range(draws):
                        tw.rand(5)
                after.append(np.asarray(tw.rand(4)))
            np.testing.assert_array_equal(after[0], after[1])
            x = tw.ones(300, dtype=tw.float32, requires_grad=True)
            y = wcp.checkpoint(
                lambda v: tw.nn.functional.dropout(v, 0.5, True), x, use_reentrant=False
            )
            y.sum().backward()
            np.testing.assert_array_equal(np.asarray(x.grad), np.asarray(y.detach()))


@NO_CUDA
def test_cuda_generator_states_without_cuda_as_torch() -> None:
    assert tw.cuda.get_rng_state_all() == torch.cuda.get_rng_state_all() == []
    for m in (torch, tw):
        m.cuda.set_rng_state_all([])
        m.cuda.set_rng_state(m.zeros(16, dtype=m.uint8))  # deferred to CUDA's start: never
        m.cuda.manual_seed(1)
        m.cuda.manual_seed_all(1)
    with pytest.raises(AssertionError):  # torch's CPU build; its CUDA builds: RuntimeError
        torch.cuda.get_rng_state()
    with pytest.raises(RuntimeError, match="cuda"):
        tw.cuda.get_rng_state()


# --- on a CUDA device (scripts/gpu-check.sh run ... tests/api/test_rng_state.py) ----------


def _cuda_draws(m: Any, device: Any = "cuda") -> list:
    return _host([m.rand(6, device=device), m.randn(5, device=device)])


@CUDA
def test_cuda_generator_states_put_each_device_back_as_torch() -> None:
    assert tw.cuda.device_count() == torch.cuda.device_count()
    for m in (torch, tw):
        state = m.cuda.get_rng_state()
        assert state.dtype == m.uint8
        assert tuple(state.shape) == tuple(torch.cuda.get_rng_state().shape)
        first = _cuda_draws(m)
        m.cuda.set_rng_state(state)
        assert _same(_cuda_draws(m), first), m.__name__
        states = m.cuda.get_rng_state_all()
        assert len(states) == torch.cuda.device_count()
        first = _cuda_draws(m, "cuda:0")
        m.cuda.set_rng_state_all(states)
        assert _same(_cuda_draws(m, "cuda:0"), first), m.__name__
        for seed in (m.cuda.manual_seed, m.cuda.manual_seed_all):
            seed(7)
            first = _cuda_draws(m)
            seed(7)
            assert _same(_cuda_draws(m), first), (m.__name__, seed.__name__)


@CUDA
@pytest.mark.parametrize("devices", [[0], []], ids=["devices=[0]", "devices=[]"])
def test_fork_rng_forks_the_listed_cuda_devices_as_torch(devices: list) -> None:
    for m in (torch, tw):
        m.cuda.manual_seed(3)
        with m.random.fork_rng(devices=devices):
            _cuda_draws(m)
        after = _cuda_draws(m)
        m.cuda.manual_seed(3)
        if not devices:  # not forked: the stream went on
            _cuda_draws(m)
        assert _same(after, _cuda_draws(m)), m.__name__


@CUDA
def test_get_rng_state_on_a_cuda_default_device_covers_its_stream() -> None:
    with entered("torch:cuda"):
        state = tw.get_rng_state()
        assert tuple(state.shape) == (48 + torch.cuda.get_rng_state().numel(),)
        first = _draws(tw)
        tw.set_rng_state(state)
        assert _same(_draws(tw), first)
