"""Device and runtime queries a script makes, answered as PyTorch's CPU build answers them:
``tw.cuda`` memory/streams, ``tw.mps``, ``tw.xpu``, ``tw.backends.*``, ``tw.distributed``,
``tw.compiler``, ``tw.nn.attention`` and ``tw.nn.modules.utils``."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
import tensorweaver as tw
import torch
import torch.nn.attention as tattn
import torch.nn.modules.utils as tutils
from tensorweaver import backends as wbackends
from tensorweaver import distributed as wdist
from tensorweaver.compiler import public as wcompiler
from tensorweaver.nn import attention as wattn
from tensorweaver.nn.modules import utils as wutils

wmps = importlib.import_module("tensorweaver.mps")
wxpu = importlib.import_module("tensorweaver.xpu")


def _outcome(fn, *args, **kwargs):
    """What a call returns, or the class of what it raises."""
    try:
        return ("returns", fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return ("raises", type(e))


@pytest.mark.parametrize(
    "name, args",
    [
        ("empty_cache", ()),
        ("memory_allocated", ()),
        ("memory_allocated", (0,)),
        ("max_memory_allocated", ()),
        ("memory_reserved", ()),
        ("max_memory_reserved", ("cuda:0",)),
        ("memory_stats", ()),
        ("reset_peak_memory_stats", ()),
        ("set_device", (0,)),
        ("set_device", ("cpu",)),
        ("set_device", (-1,)),
        ("current_stream", ()),
        ("default_stream", ()),
        ("Stream", ()),
        ("Event", ()),
    ],
)
def test_cuda_runtime_without_cuda_as_torch_cpu(name: str, args: tuple) -> None:
    expected = _outcome(getattr(torch.cuda, name), *args)
    got = _outcome(getattr(tw.cuda, name), *args)
    if expected[0] == "returns" and isinstance(expected[1], dict):
        expected = ("returns", dict(expected[1]))
    assert got == expected


def test_cuda_stream_none_and_event_timing_without_cuda() -> None:
    with tw.cuda.stream(None), torch.cuda.stream(None):
        pass
    expected = _outcome(torch.cuda.Event, enable_timing=True)
    assert _outcome(tw.cuda.Event, enable_timing=True) == expected


@pytest.mark.parametrize(
    "name",
    [
        "empty_cache",
        "synchronize",
        "device_count",
        "manual_seed",
        "is_available",
        "current_allocated_memory",
        "driver_allocated_memory",
        "recommended_max_memory",
        "set_per_process_memory_fraction",
    ],
)
def test_mps_without_mps_as_torch(name: str) -> None:
    args = {"manual_seed": (0,), "set_per_process_memory_fraction": (0.5,)}.get(name, ())
    assert _outcome(getattr(wmps, name), *args) == _outcome(getattr(torch.mps, name), *args)


@pytest.mark.parametrize(
    "name",
    [
        "is_available",
        "device_count",
        "empty_cache",
        "manual_seed",
        "manual_seed_all",
        "synchronize",
        "current_device",
    ],
)
def test_xpu_as_torch_without_xpu(name: str) -> None:
    args = (0,) if name.startswith("manual_seed") else ()
    assert _outcome(getattr(wxpu, name), *args) == _outcome(getattr(torch.xpu, name), *args)


def test_backend_build_facts_as_torch() -> None:
    assert wbackends.mps.is_built() is torch.backends.mps.is_built()
    assert wbackends.mps.is_available() is torch.backends.mps.is_available()
    assert wbackends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    assert wbackends.mkldnn.is_available() is torch.backends.mkldnn.is_available()
    assert wbackends.mkldnn.enabled is torch.backends.mkldnn.enabled
    assert wbackends.openmp.is_available() is torch.backends.openmp.is_available()
    assert wbackends.opt_einsum.is_available() is torch.backends.opt_einsum.is_available()
    assert wbackends.opt_einsum.enabled is torch.backends.opt_einsum.enabled
    assert wbackends.opt_einsum.strategy == torch.backends.opt_einsum.strategy


def test_build_facts_and_switch_do_not_depend_on_torch_being_imported_yet() -> None:
    # A script asks before any tensor reached the torch backend: torch is not imported yet.
    script = (
        "import os, tensorweaver as tw\n"
        "b = tw.backends\n"
        "facts = [b.mkldnn.is_available(), b.openmp.is_available(), b.cpu.get_cpu_capability()]\n"
        "b.mkldnn.enabled = False\n"
        "import torch\n"
        "print(facts == [torch.backends.mkldnn.is_available(),"
        " torch.backends.openmp.is_available(), torch.backends.cpu.get_cpu_capability()],"
        " torch.backends.mkldnn.enabled, os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    # torch imported through the plugin, which sets OpenMP's waiting before torch loads
    assert run.stdout.split() == ["True", "False", "PASSIVE"], run.stderr


def test_mkldnn_switch_reaches_torch() -> None:
    try:
        wbackends.mkldnn.enabled = False
        assert torch.backends.mkldnn.enabled is False
    finally:
        wbackends.mkldnn.enabled = True
    assert torch.backends.mkldnn.enabled is True


@pytest.mark.parametrize(
    "name", ["get_rank", "get_world_size", "barrier", "get_backend", "destroy_process_group"]
)
def test_distributed_without_a_group_raises_as_torch(name: str) -> None:
    import torch.distributed as tdist

    expected = _outcome(getattr(tdist, name))
    assert expected[0] == "raises"
    with pytest.raises(expected[1], match="init_process_group|cannot be None"):
        getattr(wdist, name)()


def test_init_process_group_says_multi_process_is_not_supported() -> None:
    with pytest.raises(RuntimeError, match="multi-process training is not supported yet"):
        wdist.init_process_group("gloo", world_size=2, rank=0)
    assert wdist.is_nccl_available() is False and wdist.is_gloo_available() is False
    import torch.distributed as tdist

    assert wdist.is_torchelastic_launched() is tdist.is_torchelastic_launched()
    assert [(op.name, int(op)) for op in wdist.ReduceOp] == [
        (name, int(op)) for name, op in tdist.ReduceOp.RedOpType.__members__.items()
    ]
    assert wdist.ReduceOp.SUM.name == tdist.ReduceOp.SUM.name


def test_compiler_disable_and_is_compiling() -> None:
    seen = []

    @wcompiler.disable
    def helper(x):
        return x + 1

    @tw.compile
    def step(x):
        seen.append(wcompiler.is_compiling())
        return helper(x) * 2

    x = tw.ones(3)
    for _ in range(3):
        assert step(x).tolist() == [4.0, 4.0, 4.0]
    assert seen and all(seen)
    assert wcompiler.is_compiling() is torch.compiler.is_compiling() is False
    assert (
        helper.__name__ == "helper"
        and wcompiler.disable(reason="r")(helper)(x).tolist() == [2.0] * 3
    )


def test_compiling_a_disabled_function_runs_it_eagerly() -> None:
    calls = []

    @wcompiler.disable
    def step(x):
        calls.append(1)  # Python runs only when the step runs eagerly, never on a replay
        return x * 2

    compiled = tw.compile(step)
    for _ in range(4):
        assert compiled(tw.ones(2)).tolist() == [2.0, 2.0]
    assert len(calls) == 4


def test_sdpa_kernel_sets_and_restores_the_cuda_switches_as_torch() -> None:
    assert [(m.name, m.value) for m in wattn.SDPBackend] == [
        (name, int(m)) for name, m in tattn.SDPBackend.__members__.items()
    ]
    kinds = ("flash", "mem_efficient", "math", "cudnn")
    with (
        wattn.sdpa_kernel(wattn.SDPBackend.MATH),
        tattn.sdpa_kernel(tattn.SDPBackend.MATH),
    ):
        for kind in kinds:
            assert (
                getattr(wbackends.cuda, f"{kind}_sdp_enabled")()
                is getattr(torch.backends.cuda, f"{kind}_sdp_enabled")()
            )
    for kind in kinds:
        assert getattr(wbackends.cuda, f"{kind}_sdp_enabled")() is True
    with pytest.raises(AssertionError), wattn.sdpa_kernel("math"):
        pass
    with pytest.raises(AssertionError), tattn.sdpa_kernel("math"):
        pass


@pytest.mark.parametrize("value", [3, (1, 2), [4, 5, 6], range(2)])
def test_module_utils_tuples_as_torch(value) -> None:
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        assert getattr(wutils, name)(value) == getattr(tutils, name)(value)
        assert getattr(wutils, name).__name__ == name
    assert wutils._ntuple(5)(value) == tutils._ntuple(5)(value)
    assert wutils._reverse_repeat_tuple((1, 2, 3), 2) == tutils._reverse_repeat_tuple((1, 2, 3), 2)


def test_list_with_default_and_prefix_stripping_as_torch() -> None:
    assert wutils._list_with_default([None, 4], [1, 2, 3]) == tutils._list_with_default(
        [None, 4], [1, 2, 3]
    )
    with pytest.raises(ValueError):
        tutils._list_with_default([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        wutils._list_with_default([1, 2, 3], [1, 2])
    from collections import OrderedDict

    dicts = []
    for _ in range(2):
        d = OrderedDict([("module.a", 1), ("module.b.c", 2), ("x", 3)])
        d._metadata = OrderedDict([("", {}), ("module", {}), ("module.b", {})])
        dicts.append(d)
    wutils.consume_prefix_in_state_dict_if_present(dicts[0], "module.")
    tutils.consume_prefix_in_state_dict_if_present(dicts[1], "module.")
    assert list(dicts[0].items()) == list(dicts[1].items())
    assert list(dicts[0]._metadata) == list(dicts[1]._metadata)
