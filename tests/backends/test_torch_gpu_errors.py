"""A GPU's out-of-memory error from torch is caught as ``tw.cuda.OutOfMemoryError``.

``except`` ignores virtual subclasses, so the torch plugin's GPU backends raise torch's
error as a class with both bases. The CPU cannot raise torch.OutOfMemoryError, so these
tests build the GPU form of the backend over the CPU record and give it a method that
raises torch's error the way the CUDA allocator does; scripts/gpu_smoke.py checks a real
allocation on a GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
import tensorweaver as tw  # noqa: E402
from tensorweaver.contract import dtypes as d  # noqa: E402
from tensorweaver_torch import plugin  # noqa: E402
from tensorweaver_torch.backend import TorchBackend  # noqa: E402
from tensorweaver_torch.errors import on_a_gpu  # noqa: E402

MESSAGE = "CUDA out of memory. Tried to allocate 128.00 TiB."


class Exhausted(TorchBackend):
    """A backend whose device has no memory left for a new array."""

    def full(self, shape, value, dtype):
        raise torch.OutOfMemoryError(MESSAGE)

    def compile_graph(self, graph):
        def run(*inputs):
            raise torch.OutOfMemoryError(MESSAGE)

        return run


def cpu_record():
    return next(r for r in plugin.tw_devices(False) if r.kind == "cpu")


@pytest.mark.parametrize("clause", [tw.cuda.OutOfMemoryError, torch.OutOfMemoryError, MemoryError])
def test_every_except_clause_catches_it(clause: type) -> None:
    backend = on_a_gpu(Exhausted)(cpu_record())
    with pytest.raises(clause, match="CUDA out of memory"):
        backend.full((2,), 0.0, d.float32)
    with pytest.raises(clause, match="CUDA out of memory"):
        backend.compile_graph(None)()


def test_the_gpu_form_computes_what_the_plain_backend_does() -> None:
    plain, gpu = TorchBackend(cpu_record()), on_a_gpu(TorchBackend)(cpu_record())
    a = torch.arange(6.0).reshape(2, 3)
    for name, args in [("add", (a, a)), ("matmul", (a, a.T)), ("sum", (a, (1,), False))]:
        np.testing.assert_array_equal(getattr(gpu, name)(*args), getattr(plain, name)(*args))
    assert gpu.device is plain.device or gpu.device == plain.device
    assert isinstance(gpu, TorchBackend) and gpu.dtypes == plain.dtypes


def test_other_errors_pass_unchanged() -> None:
    gpu = on_a_gpu(TorchBackend)(cpu_record())
    with pytest.raises(RuntimeError) as caught:
        gpu.matmul(torch.ones(2, 3), torch.ones(2, 3))
    assert type(caught.value) is RuntimeError


def test_the_cpu_backend_is_not_wrapped() -> None:
    backend = plugin.tw_create_backend(cpu_record())
    assert type(backend) is TorchBackend
