"""``tw.device`` as ``torch.device``: one class for naming, moving to and scoping a device.

Where PyTorch defines the answer (type, index, str, repr, equality, hash, errors) the same
calls go to ``torch.device``; kind-only specs (``cpu``, ``cuda``) resolve to the installed
backend that provides them, the tensor's own backend first.
"""

from __future__ import annotations

import asyncio
import itertools
import threading

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

SPECS = [("cpu",), ("cpu", 0), ("cuda",), ("cuda:1",), ("cuda", 1), ("cuda", 0), ("mps",), ("xpu",)]
BACKENDS = ["numpy", "torch:cpu", pytest.param("cunumeric", id="cunumeric")]
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")


@pytest.mark.parametrize("args", SPECS, ids=str)
def test_device_fields_are_torchs(args: tuple) -> None:
    ours, theirs = tw.device(*args), torch.device(*args)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))


def test_equality_and_hash_are_torchs() -> None:
    for a, b in itertools.product(SPECS, repeat=2):
        equal = torch.device(*a) == torch.device(*b)
        assert (tw.device(*a) == tw.device(*b)) is equal, (a, b)
        if equal:
            assert hash(tw.device(*a)) == hash(tw.device(*b))


@pytest.mark.parametrize("spec", ["cuda:x", "cpu:1:2"])
def test_bad_spec_raises_runtime_error_as_torch(spec: str) -> None:
    with pytest.raises(RuntimeError):
        torch.device(spec)
    with pytest.raises(RuntimeError, match="backend:kind:index"):
        tw.device(spec)


def test_device_is_one_class() -> None:
    assert isinstance(tw.ones(1).device, tw.device) and tw.Device is tw.device
    assert tw.device(tw.device("cuda:1")) == tw.device("cuda", 1)
    assert tw.device(torch.device("cuda:1")) == tw.device("cuda:1")
    assert {tw.device("cpu"): 1}[tw.zeros(1).device] == 1


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_tensor_device_has_torchs_fields_and_the_backend(spec: str) -> None:
    with entered(spec):
        x = tw.zeros(2)
    dev, theirs = x.device, torch.zeros(2).device
    assert (dev.type, dev.index, x.is_cuda, x.is_cpu) == (
        theirs.type,
        theirs.index,
        False,
        True,
    )
    assert dev == tw.device("cpu") and dev == "cpu" and dev == spec
    assert (dev.name, dev.backend, dev.kind) == (f"{dev.backend}:cpu:0", spec.split(":")[0], "cpu")
    assert dev != tw.device("cuda") and dev != "not a spec"


@pytest.mark.parametrize("spec", BACKENDS)
def test_to_cpu_stays_on_the_tensors_backend(spec: str) -> None:
    with entered(spec):
        x = tw.tensor([1.0, 2.0])
    for moved in (x.to("cpu"), x.to(tw.device("cpu")), x.cpu(), x.to(device="cpu")):
        assert moved.device.name == x.device.name
        np.testing.assert_array_equal(moved.numpy(), [1.0, 2.0])


def test_to_an_explicit_backend_then_back_to_cpu() -> None:
    x = tw.tensor([1.0, 2.0], device="numpy")
    y = x.to(tw.device("torch:cpu"))
    assert y.device.backend == "torch" and y.cpu().device.backend == "torch"
    back = y.to("numpy:cpu")
    assert back.device == x.device and back.tolist() == [1.0, 2.0]


def test_kind_only_scope_takes_the_current_backends_device() -> None:
    with tw.device("torch:cpu"), tw.device("cpu") as inner:
        assert inner.backend == "torch" and tw.zeros(1).device.backend == "torch"
    with tw.device("cpu") as plain:
        assert plain.backend == "numpy"


def test_kind_only_device_keyword_of_factories() -> None:
    assert tw.zeros(2, device="cpu").device.backend == "numpy"
    assert tw.ones(2, device=tw.device("cpu")).device.backend == "numpy"
    with tw.device("torch:cpu"):
        made = (tw.arange(3, device="cpu"), tw.randn(2, device="cpu"), tw.tensor(1, device="cpu"))
    assert [t.device.name for t in made] == ["torch:cpu:0"] * 3


@NO_CUDA
def test_cuda_without_a_provider_says_what_to_install() -> None:
    x = tw.ones(2)
    # .cuda() raises AssertionError, as torch's CPU build ("Torch not compiled with CUDA")
    with pytest.raises(AssertionError, match=r"no installed backend provides 'cuda'") as info:
        x.cuda()
    assert "tensorweaver[torch]" in str(info.value)
    calls = [
        lambda: x.to("cuda"),
        lambda: tw.device("cuda:1").__enter__(),
        lambda: tw.zeros(2, device="cuda"),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match=r"no installed backend provides 'cuda'") as info:
            call()
        assert "tensorweaver[torch]" in str(info.value)
    # An explicit backend names that backend's real devices instead.
    with pytest.raises(RuntimeError, match="torch:cpu:0"):
        x.to("torch:cuda")


def test_cuda_queries_agree_with_torch() -> None:
    assert tw.cuda.is_available() is torch.cuda.is_available()
    assert tw.cuda.device_count() == torch.cuda.device_count()
    assert tw.backends.mps.is_available() is torch.backends.mps.is_available()


@NO_CUDA
def test_cuda_calls_without_cuda() -> None:
    tw.cuda.manual_seed(1)  # ignored, as in PyTorch
    tw.cuda.manual_seed_all(1)
    for call in (tw.cuda.current_device, tw.cuda.synchronize):
        with pytest.raises(RuntimeError, match="provides 'cuda'"):
            call()


def test_module_to_accepts_devices() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2).double()
    model = tw.nn.Linear(3, 2).double()
    model.load_state_dict({k: tw.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    assert model.to(tw.device("cpu")).weight.device.backend == "numpy"
    model.to(tw.device("torch:cpu"))
    assert all(p.device == "torch:cpu" for p in model.parameters())
    model.to("cpu")  # already on a CPU: stays where it is, as in PyTorch
    assert model.weight.device.backend == "torch"
    data = np.random.default_rng(0).standard_normal((4, 3))
    out = model(tw.tensor(data, device=model.weight.device))
    np.testing.assert_allclose(out.detach().numpy(), ref(torch.tensor(data)).detach().numpy())


def test_default_device_get_and_set() -> None:
    assert tw.get_default_device() == "numpy" and tw.get_default_device().type == "cpu"
    try:
        tw.set_default_device(tw.device("torch:cpu"))
        assert tw.get_default_device() == "torch:cpu" and tw.ones(1).device.backend == "torch"
    finally:
        tw.set_default_device(None)
    assert tw.get_default_device() == "numpy"


def test_one_device_object_scopes_each_thread_and_task_alone() -> None:
    dev, seen, barrier = tw.device("torch:cpu"), {}, threading.Barrier(2)

    def inside(key: str) -> None:
        with dev:
            barrier.wait()  # both threads are inside the same object's scope now
            seen[key] = tw.zeros(1).device.backend
            barrier.wait()
        seen[key + " after"] = tw.zeros(1).device.backend

    def outside() -> None:
        seen["other thread"] = tw.zeros(1).device.backend

    threads = [threading.Thread(target=inside, args=(k,)) for k in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with dev:
        other = threading.Thread(target=outside)
        other.start()
        other.join()

    async def task(scoped: bool) -> str:
        if scoped:
            with dev:
                await asyncio.sleep(0.01)
                return tw.zeros(1).device.backend
        await asyncio.sleep(0.01)
        return tw.zeros(1).device.backend

    async def both() -> list[str]:
        return list(await asyncio.gather(task(True), task(False)))

    assert asyncio.run(both()) == ["torch", "numpy"]
    assert seen == {"a": "torch", "b": "torch", "a after": "numpy", "b after": "numpy"} | {
        "other thread": "numpy"
    }
    assert tw.zeros(1).device.backend == "numpy"
