"""tw.to_torch_module: a real torch.nn.Module trained by torch.optim, DDP, DLPack."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorweaver as tw  # noqa: E402
from tensorweaver import nn  # noqa: E402
from tensorweaver.interop.torch_module import from_torch_module, to_torch_module  # noqa: E402


def _model() -> nn.Module:
    tw.manual_seed(1)
    with tw.device("torch:cpu"):
        return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).double()


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((20, 6)), rng.integers(0, 3, 20)


def test_parameters_are_torch_parameters_with_the_models_names() -> None:
    model = _model()
    module = to_torch_module(model)
    assert isinstance(module, torch.nn.Module)
    names = [n for n, _ in module.named_parameters()]
    assert names == [n for n, _ in model.named_parameters()]
    assert all(isinstance(p, torch.nn.Parameter) for p in module.parameters())


def test_torch_optim_through_the_module_matches_the_same_steps_in_tensorweaver() -> None:
    x, y = _data()
    reference = _model()
    optimizer = tw.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    with tw.device("torch:cpu"):
        tx, ty = tw.tensor(x), tw.tensor(y)
    for _ in range(5):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(reference(tx), ty)
        loss.backward()
        optimizer.step()

    module = to_torch_module(_model())
    torch_optimizer = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
    x_t, y_t = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(5):
        torch_optimizer.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(module(x_t), y_t)
        torch_loss.backward()
        torch_optimizer.step()
    trained = from_torch_module(module)
    for (name, p), (_, q) in zip(trained.named_parameters(), reference.named_parameters()):
        np.testing.assert_allclose(
            p.detach().numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=name
        )
    assert abs(torch_loss.item() - loss.item()) < 1e-12


def test_from_torch_module_detaches_from_torchs_graph() -> None:
    module = to_torch_module(_model())
    model = from_torch_module(module)
    assert all(not p.native.requires_grad for p in model.parameters())
    with pytest.raises(TypeError, match="to_torch_module"):
        from_torch_module(torch.nn.Linear(2, 2))


@pytest.mark.skipif(
    not os.environ.get("TW_SWEEP_INDUCTOR"),
    reason="a cold torch.compile, ~30 s of a worker: CI runs it (TW_SWEEP_INDUCTOR=1, "
    "scripts/test-remainder.sh)",
)
def test_compile_option_runs_and_agrees_with_eager() -> None:
    x = torch.from_numpy(_data()[0])
    eager = to_torch_module(_model())
    expected = eager(x).detach()
    compiled = to_torch_module(_model(), compile=True)
    out = compiled(x).detach()  # compiled, or eager after one warning where no compiler works
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)


def test_dlpack_exchange_shares_memory_both_ways() -> None:
    t = torch.arange(6, dtype=torch.float64)
    x = tw.from_dlpack(t)
    assert x.device.backend == "torch"
    t[0] = 42.0  # zero-copy: the change is visible through the TensorWeaver tensor
    assert x[0].item() == 42.0
    back = torch.from_dlpack(x)
    assert back.data_ptr() == t.data_ptr()
    a = np.arange(4.0)
    y = tw.from_dlpack(a)
    assert y.device.backend == "numpy" and y.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("source", ["numpy", "torch"])
def test_in_place_writes_reach_a_dlpack_producer_as_torch(source: str) -> None:
    # tw.from_dlpack's tensor took its own array at its first in-place write: the producer
    # no longer saw the tensor's changes, nor the tensor the producer's.
    a = np.arange(4.0) if source == "numpy" else torch.arange(4.0)
    t = tw.from_dlpack(a)
    t.add_(1)
    a[3] = 7
    assert a.tolist() == t.tolist() == [1.0, 2.0, 3.0, 7.0]


DDP_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np, torch, torch.distributed as dist
    import tensorweaver as tw
    from tensorweaver import nn
    from tensorweaver.interop.torch_module import to_torch_module
    rank, rendezvous = int(sys.argv[1]), sys.argv[2]
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=2)
    tw.manual_seed(3)
    with tw.device("torch:cpu"):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).double()
    ddp = torch.nn.parallel.DistributedDataParallel(to_torch_module(model))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    rng = np.random.default_rng(rank)
    for _ in range(3):
        x = torch.from_numpy(rng.standard_normal((8, 4)))
        opt.zero_grad()
        ddp(x).pow(2).mean().backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
    out = [torch.zeros_like(flat) for _ in range(2)]
    dist.all_gather(out, flat)
    assert torch.equal(out[0], out[1]), "replicas diverged"
    print("ok", rank, flush=True)
    dist.destroy_process_group()
    # gloo's worker thread may free the finished all_gather's tensors while Python is
    # finalizing, which aborts the process in torch's teardown: leave without finalizing.
    os._exit(0)
    """
)


def test_ddp_with_two_gloo_processes(tmp_path) -> None:
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    # A file rendezvous: a TCP port picked here could be taken by the time gloo binds it.
    rendezvous = tmp_path / "rendezvous"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank), str(rendezvous)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for rank, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, out
        assert f"ok {rank}" in out


def test_torch_export_captures_the_model() -> None:
    tw.manual_seed(2)
    with tw.device("torch:cpu"):
        model = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.LayerNorm(64), nn.Linear(64, 3),
        )  # fmt: skip
    module = to_torch_module(model)
    x = torch.randn(2, 1, 8, 8)
    exported = torch.export.export(module, (x,), strict=False)
    # Shapes are specialised (the model computes them in Python); values are not.
    y = torch.randn(2, 1, 8, 8)
    torch.testing.assert_close(exported.module()(y), module(y))


def test_onnx_export_runs_like_the_model(tmp_path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    tw.manual_seed(3)
    with tw.device("torch:cpu"):
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.LayerNorm(8), nn.Linear(8, 2))
    module = to_torch_module(model)
    x = torch.randn(3, 4)
    path = tmp_path / "model.onnx"
    torch.onnx.export(module, (x,), dynamo=True).save(str(path))
    graph = onnx.load(str(path))
    onnx.checker.check_model(graph)
    (got,) = ReferenceEvaluator(graph).run(None, {graph.graph.input[0].name: x.numpy()})
    np.testing.assert_allclose(got, module(x).detach().numpy(), rtol=1e-5, atol=1e-6)
