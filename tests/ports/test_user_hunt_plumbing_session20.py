"""Snippets a demanding PyTorch user writes around the training loop (random generators,
learning-rate schedulers, autocast and GradScaler, SWA, batching, checkpoints), run on torch
2.13 and on tensorweaver with only the import changed (``fn(torch)`` and ``fn(tw)`` inside the
device), on every backend.

The first tests are divergences found in the twentieth session's hunt, each fixed; the rest
keep the corners of that hunt that matched, so that they keep matching.
"""

from __future__ import annotations

import collections
import io
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from test_user_hunt_session18 import CUNUMERIC, _check, _check_raises, _weights
from tw_backends import FAST, entered


@pytest.fixture(params=[*FAST, *CUNUMERIC])
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


# -- divergences, fixed ---------------------------------------------------------------------


# before: Generator.manual_seed took any value int() takes: 1.5 and 3.0 seeded 1 and 3, True
# seeded 1, "1" seeded 1; PyTorch's method (unlike the module-level manual_seed) takes only a
# Python int and raises RuntimeError ("expected a long"), TypeError for a NumPy integer
@pytest.mark.parametrize(
    "seed",
    [1.5, 3.0, True, "1", None, np.float64(2.0), np.int64(3)],
    ids=["float", "integral_float", "bool", "str", "None", "np_float64", "np_int64"],
)
def test_generator_manual_seed_takes_only_ints(seed: Any) -> None:
    _check_raises("numpy", lambda m: m.Generator().manual_seed(seed))


@pytest.mark.parametrize("seed", [0, 7, -1, 2**64 - 1, -(2**63)])
def test_generator_manual_seed_ints(seed: int) -> None:
    _check("numpy", lambda m: m.Generator().manual_seed(seed).initial_seed())


# The module-level spelling converts with int(), as PyTorch's does.
@pytest.mark.parametrize("seed", [3.0, 1.5, "4", np.int64(5), True])
def test_module_manual_seed_converts(seed: Any) -> None:
    _check("numpy", lambda m: m.manual_seed(seed).initial_seed())


# before: AttributeError, Generator had no clone_state (PyTorch 2.13 has)
def test_generator_clone_state(spec: str) -> None:
    def fn(m: Any) -> Any:
        g = m.Generator().manual_seed(3)
        m.rand(2, generator=g)
        twin = g.clone_state()
        same = bool((m.rand(4, generator=g) == m.rand(4, generator=twin)).all())
        return same, twin.initial_seed(), type(twin).__name__

    _check(spec, fn)


def _saved_and_loaded(m: Any, obj: Any, **load_args: Any) -> Any:
    buf = io.BytesIO()
    m.save(obj, buf)
    buf.seek(0)
    return m.load(buf, **load_args)


# before: tw.save raised TypeError ("cannot store a device"): a checkpoint with a device entry
# (or a whole module with a ``self.device``) could not be saved; torch.load gives it back
# (torch.device is among weights_only's allowed globals)
def test_checkpoint_holds_devices() -> None:
    def fn(m: Any) -> Any:
        devices = {"run": m.device("cpu"), "gpu": m.device("cuda", 1), "w": m.ones(2)}
        back = _saved_and_loaded(m, devices)
        return [(k, str(v), type(v).__name__) for k, v in back.items() if k != "w"], back["w"]

    _check("numpy", fn)


class _OnDevice(tw.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = tw.nn.Linear(2, 1)
        self.device = tw.device("cpu")


def test_whole_module_with_a_device_attribute() -> None:
    with tw.serialization.safe_globals([_OnDevice]):
        back = _saved_and_loaded(tw, _OnDevice())
    assert isinstance(back, _OnDevice) and back.device == tw.device("cpu")


# before: AssertionError (moving a tensor to a missing CUDA raises it, as PyTorch's lazy CUDA
# start does); torch.load raises RuntimeError ("Attempting to deserialize object on a CUDA
# device but torch.cuda.is_available() is False") for each spelling of the target
@pytest.mark.parametrize(
    "target", ["cuda", "cuda:1", {"cpu": "cuda:0"}], ids=["cuda", "cuda1", "mapping"]
)
def test_loading_onto_a_missing_cuda_raises_runtime_error(target: Any) -> None:
    if tw.cuda.is_available():
        pytest.skip("this machine has CUDA")
    _check_raises("numpy", lambda m: _saved_and_loaded(m, {"w": m.ones(2)}, map_location=target))


# before: TypeError ("object of type 'generator' has no len()"): without workers, iter(loader)
# was a generator; PyTorch's loader iterators have the length of their (batch) sampler
def test_loader_iterator_has_a_length() -> None:
    def fn(m: Any) -> Any:
        lengths = []
        for loader in [
            m.utils.data.DataLoader(range(5), batch_size=2),
            m.utils.data.DataLoader(range(5), batch_size=2, drop_last=True),
            m.utils.data.DataLoader(range(5), batch_size=None),
        ]:
            it = iter(loader)
            first = next(it)
            lengths.append((first, len(it), list(it)))
        return lengths

    _check("numpy", fn)


# ... but an iterable dataset's iterator has none, even where the dataset has a length
def test_iterable_loader_iterator_has_no_length() -> None:
    def fn(m: Any) -> Any:
        class Stream(m.utils.data.IterableDataset):
            def __iter__(self) -> Any:
                return iter(range(7))

            def __len__(self) -> int:
                return 7

        return len(iter(m.utils.data.DataLoader(Stream(), batch_size=3)))

    _check_raises("numpy", fn)


# before: RuntimeError; PyTorch raises ValueError ("Default process group has not been
# initialized") when num_replicas or rank is left to a process group that does not exist
def test_distributed_sampler_without_a_process_group() -> None:
    with pytest.raises(ValueError):
        torch.utils.data.distributed.DistributedSampler(range(10))
    with pytest.raises(ValueError, match="pass num_replicas and rank"):
        tw.utils.data.distributed.DistributedSampler(range(10))


# before: AttributeError: PyTorch's deprecated per-device spellings of the autocast state
# (older training scripts call them) were missing; now in tw.amp, warning as PyTorch's do
def test_deprecated_per_device_autocast_state() -> None:
    def run(m: Any, where: Any) -> Any:
        out = [where.is_autocast_cpu_enabled(), where.get_autocast_cpu_dtype()]
        out.append(where.get_autocast_gpu_dtype())
        where.set_autocast_cpu_dtype(m.float16)
        where.set_autocast_cpu_enabled(True)
        out += [m.is_autocast_enabled("cpu"), m.get_autocast_dtype("cpu")]
        where.set_autocast_cpu_enabled(False)
        where.set_autocast_cpu_dtype(m.bfloat16)
        where.set_autocast_gpu_dtype(m.bfloat16)
        out.append(m.get_autocast_dtype("cuda"))
        where.set_autocast_gpu_dtype(m.float16)
        return [str(x).rsplit(".")[-1] for x in out]

    with pytest.warns(DeprecationWarning) as theirs_warned:
        theirs = run(torch, torch)
    with pytest.warns(DeprecationWarning) as ours_warned:
        ours = run(tw, tw.amp)
    assert ours == theirs
    assert len(ours_warned) == len(theirs_warned)


def test_deprecated_autocast_spellings_at_the_top_level() -> None:
    ours = tw.is_autocast_cpu_enabled
    with pytest.warns(DeprecationWarning):
        assert ours() is torch.is_autocast_cpu_enabled()


def _warmup_scheduler(m: Any, rates: Any) -> Any:
    class Warmup(m.optim.lr_scheduler.LRScheduler):
        def get_lr(self) -> list:
            return rates(self)

    return Warmup


# before: a custom get_lr returning fewer lrs than param groups set the first groups only and
# went on; PyTorch pairs them strictly and raises ValueError
@pytest.mark.parametrize("count", [1, 3])
def test_custom_scheduler_with_a_wrong_lr_count(count: int) -> None:
    def fn(m: Any) -> Any:
        opt = _optimizer(m)
        sched = _warmup_scheduler(m, lambda s: [0.1] * count)(opt)
        opt.step()
        sched.step()

    _check_raises("numpy", fn)


def test_custom_scheduler_subclass() -> None:
    def fn(m: Any) -> Any:
        def rates(s: Any) -> list:
            return [b * min(1.0, (s.last_epoch + 1) / 4) for b in s.base_lrs]

        opt = _optimizer(m)
        sched = _warmup_scheduler(m, rates)(opt)
        out = [sched.get_last_lr()]
        for _ in range(6):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr())
        return out, sorted(sched.state_dict())

    _check("numpy", fn)


# -- corners that matched -------------------------------------------------------------------


def _optimizer(m: Any) -> Any:
    p = m.nn.Parameter(m.zeros(2, dtype=m.float64))
    q = m.nn.Parameter(m.zeros(2, dtype=m.float64))
    return m.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)


_SCHEDULERS = {
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, [3, 3, 10, 20], gamma=0.5),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=12, power=1.7),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, 3, 2, 1e-3),
    "CyclicLR_triangular2": lambda s, o: s.CyclicLR(
        o, [0.01, 0.02], [0.1, 0.3], step_size_up=3, step_size_down=5, mode="triangular2"
    ),
    "CyclicLR_exp_range": lambda s, o: s.CyclicLR(o, 0.01, 0.1, 4, mode="exp_range", gamma=0.9),
    "OneCycleLR_three_phase": lambda s, o: s.OneCycleLR(
        o, max_lr=[1.0, 2.0], total_steps=40, three_phase=True, anneal_strategy="linear"
    ),
    "SequentialLR": lambda s, o: s.SequentialLR(
        o,
        [s.ConstantLR(o, 0.1, total_iters=3), s.StepLR(o, 4, 0.5), s.CosineAnnealingLR(o, 6)],
        milestones=[4, 12],
    ),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler(
        [s.ConstantLR(o, 0.1, total_iters=5), s.ExponentialLR(o, 0.9)], optimizer=o
    ),
}


# Learning rates and momenta over 30 steps, then a state_dict round trip into a fresh pair.
@pytest.mark.parametrize("name", list(_SCHEDULERS))
def test_scheduler_30_steps_and_resume(name: str) -> None:
    def fn(m: Any) -> Any:
        make = _SCHEDULERS[name]
        opt = _optimizer(m)
        sched = make(m.optim.lr_scheduler, opt)
        out = []
        for _ in range(30):
            opt.step()
            sched.step()
            out.append([*sched.get_last_lr(), *(g["momentum"] for g in opt.param_groups)])
        opt2 = _optimizer(m)
        sched2 = make(m.optim.lr_scheduler, opt2)
        sched2.load_state_dict(sched.state_dict())
        opt2.load_state_dict(opt.state_dict())
        for _ in range(3):
            opt2.step()
            sched2.step()
            out.append(sched2.get_last_lr())
        return out

    _check("numpy", fn)


def test_reduce_on_plateau_cooldown_and_min_lrs() -> None:
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.8, 0.8, 0.8, 0.8, 0.85, 0.7] * 2

    def fn(m: Any) -> Any:
        opt = _optimizer(m)
        sched = m.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="max", threshold_mode="abs", patience=1, cooldown=2, min_lr=[0.01, 0.2]
        )
        out = []
        for v in metrics:
            opt.step()
            sched.step(v)
            out.append(sched.get_last_lr())
        return out, sched.num_bad_epochs, sched.cooldown_counter

    _check("numpy", fn)


def test_cosine_warm_restarts_fractional_epochs() -> None:
    def fn(m: Any) -> Any:
        opt = _optimizer(m)
        sched = m.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 3, T_mult=2, eta_min=0.01)
        out = []
        for epoch in [0.0, 0.5, 1.3, 2.9, 3.0, 4.7, 9.0, 9.5, 21.2, 2.0]:
            opt.step()
            sched.step(epoch)
            out.append([*sched.get_last_lr(), sched.T_cur, sched.T_i])
        return out

    _check("numpy", fn)


def test_autocast_cpu_bfloat16_op_dtypes() -> None:
    def fn(m: Any) -> Any:
        f = m.nn.functional
        a, b, d = m.ones(3, 4), m.ones(4, 2), m.ones(3, 4, dtype=m.float64)
        with m.autocast("cpu", dtype=m.bfloat16):
            outs = [
                a @ b,
                a + a,
                f.linear(a, b.t()),
                a.sum(),
                d @ d.t(),
                m.baddbmm(a[None][:, :, :2], a[None], b[None]),
                f.conv1d(a[None], m.ones(2, 3, 2)),
                f.layer_norm(a, (4,)),
                f.cross_entropy(a, m.tensor([0, 1, 2])),
                m.cat([a, a.bfloat16()]),
                f.scaled_dot_product_attention(a[None], a, a),
            ]
            with m.autocast("cpu", enabled=False):
                outs.append(a @ b)
        return [str(o.dtype).rsplit(".")[-1] for o in outs], m.is_autocast_enabled("cpu")

    _check("torch:cpu", fn)


def test_grad_scaler_skips_inf_steps_and_backs_off() -> None:
    def fn(m: Any) -> Any:
        p = m.nn.Parameter(m.tensor([1.0, 2.0]))
        opt = m.optim.SGD([p], lr=0.1)
        scaler = m.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=2)
        out = []
        for i in range(6):
            opt.zero_grad()
            loss = (p * p).sum() * (float("inf") if i == 2 else 1.0)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            out += [p.grad.clone(), scaler.step(opt)]
            scaler.update()
            out += [scaler.get_scale(), p.detach().clone()]
        return out, sorted(scaler.state_dict().items())

    _check("numpy", fn)


def test_averaged_model_ema_and_update_bn() -> None:
    x = np.random.default_rng(20).standard_normal((10, 3))

    def fn(m: Any) -> Any:
        net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.Linear(4, 1))
        net = _weights(net.double(), m)
        swa = m.optim.swa_utils
        avg = swa.AveragedModel(net, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9))
        opt = m.optim.SGD(net.parameters(), lr=0.1)
        sched = swa.SWALR(opt, swa_lr=0.05, anneal_epochs=2)
        inputs = m.tensor(x)
        for _ in range(3):
            opt.zero_grad()
            net(inputs).pow(2).mean().backward()
            opt.step()
            sched.step()
            avg.update_parameters(net)
        swa.update_bn([inputs[:5], (inputs[5:], 0)], avg)
        return [*avg.parameters(), *avg.buffers(), sched.get_last_lr()]

    _check("numpy", fn)


_Pair = collections.namedtuple("_Pair", "x y")


def test_default_collate_of_nested_records() -> None:
    def flat(batch: Any) -> Any:
        if isinstance(batch, dict):
            return type(batch).__name__, [(k, flat(v)) for k, v in batch.items()]
        if isinstance(batch, (list, tuple)):
            return type(batch).__name__, [flat(v) for v in batch]
        return batch

    def fn(m: Any) -> Any:
        rows = [
            {"img": np.full(2, i, np.float32), "p": _Pair(i, 0.5 * i), "s": f"r{i}", "b": i > 0}
            for i in range(3)
        ]
        loader = m.utils.data.DataLoader(rows, batch_size=2)
        return [flat(b) for b in loader], flat(m.utils.data.default_convert(rows[0]))

    _check("numpy", fn)


@pytest.mark.parametrize(
    "where",
    [
        *FAST,
        pytest.param(
            "cunumeric",
            marks=pytest.mark.cunumeric,
        ),
    ],
)
def test_checkpoint_round_trip_keeps_sharing(where: str) -> None:
    def fn(m: Any) -> Any:
        base = m.arange(6.0)
        state = {"w": base, "alias": base, "row": base.view(2, 3)[1], "h": base.half(), 0: (1, "s")}
        buf = io.BytesIO()
        m.save(state, buf)
        buf.seek(0)
        back = m.load(buf, map_location="cpu")
        back["w"][4] = -1.0
        return back["alias"], back["row"], back["h"], back[0], back["alias"] is back["w"]

    _check(where, fn)


def test_rng_state_and_fork_rng_round_trip(spec: str) -> None:
    with entered(spec):
        tw.manual_seed(5)
        state = tw.get_rng_state()
        first = [tw.rand(3), tw.randperm(6)]
        tw.set_rng_state(state)
        again = [tw.rand(3), tw.randperm(6)]
        with tw.random.fork_rng():
            tw.rand(4)
        after = tw.rand(3)
        tw.manual_seed(5)
        tw.rand(3), tw.randperm(6)
        fresh = tw.rand(3)
    for a, b in [*zip(first, again), (after, fresh)]:
        assert np.asarray(a).tolist() == np.asarray(b).tolist()
