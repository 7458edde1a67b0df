"""``F.embedding``'s indices out of range: on torch:cpu the plugin's fused kernel raises
torch's IndexError itself (``checked_indices``), so the core reads no range back first;
on numpy, and wherever the core decomposes (``reference_only``) or tw.compile traces, the
core checks as before. Outcomes against torch 2.13's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from snippet_outcomes import grid, same_each
from tensorweaver.ops.fusion import reference_only

DEVICES = ["numpy", "torch:cpu"]


def _lookup(indices: list, dtype: str = "int64", **options: Any) -> Any:
    def program(m: Any) -> Any:
        weight = grid(m, 5, 3).requires_grad_()
        out = m.nn.functional.embedding(
            m.tensor(indices, dtype=getattr(m, dtype)), weight, **options
        )
        out.sum().backward()
        return out, weight.grad

    return program


PROGRAMS = {
    "in range": _lookup([[0, 4], [2, 2]]),
    "past the end": _lookup([0, 5]),
    "far past the end": _lookup([[1, 70]]),
    "negative": _lookup([-1, 2]),
    "below minus the size": _lookup([-6]),
    "int32 past the end": _lookup([3, 5], "int32"),
    "empty": _lookup([]),
    "padding row, bad index": _lookup([1, 5], padding_idx=1),
    "scale_grad_by_freq, bad index": _lookup([1, 1, 9], scale_grad_by_freq=True),
    "max_norm, bad index": _lookup([0, 5], max_norm=1.0),
}


@pytest.mark.parametrize("device", DEVICES)
def test_outcomes_as_torch(device: str) -> None:
    same_each(PROGRAMS, device)


def test_torch_cpu_raises_torchs_words_naming_the_value() -> None:
    weight = tw.ones(5, 3, device="torch:cpu")
    for bad in (5, -1):
        with pytest.raises(IndexError, match=rf"index out of range in self.*index {bad}\b"):
            F.embedding(tw.tensor([0, bad], device="torch:cpu"), weight)


@pytest.mark.parametrize("device", DEVICES)
def test_the_range_is_read_back_only_where_no_kernel_checks(device: str, monkeypatch) -> None:
    """torch:cpu's kernel checks: no read of the indices' extremes. numpy's does not; nor
    does the core's decomposition, which runs under reference_only on torch:cpu too."""
    weight = tw.ones(5, 3, device=device)
    backend = weight.backend
    reads = []

    def host_aminmax(a: Any) -> tuple:
        reads.append(a)
        host = backend.to_host(a)
        return np.min(host).item(), np.max(host).item()

    monkeypatch.setattr(backend, "host_aminmax", host_aminmax, raising=False)
    index = tw.tensor([[1, 4]], device=device)
    F.embedding(index, weight)
    assert len(reads) == (0 if device == "torch:cpu" else 1)
    with reference_only():
        F.embedding(index, weight)
        with pytest.raises(IndexError, match="index 5 is out of bounds"):
            F.embedding(tw.tensor([5], device=device), weight)
    assert len(reads) == (2 if device == "torch:cpu" else 3)


def test_a_compiled_lookup_on_torch_cpu_still_refuses_a_bad_index() -> None:
    weight = tw.tensor(np.arange(12.0).reshape(6, 2), device="torch:cpu")
    step = tw.compile(lambda i: F.embedding(i, weight).sum(), backend="tensorweaver")
    rng = np.random.default_rng(0)
    for _ in range(4):
        index = rng.integers(0, 6, (2, 3))
        got = step(tw.tensor(index, device="torch:cpu")).item()
        assert got == np.arange(12.0).reshape(6, 2)[index].sum()
    with pytest.raises(IndexError):
        step(tw.tensor([[0, 6]], device="torch:cpu"))
