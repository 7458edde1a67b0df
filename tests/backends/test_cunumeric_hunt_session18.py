"""Defects of the cuPyNumeric backend found with user-level code, against torch 2.13.

Three of them took the process down: the smallest signed integer divided by -1 trapped
(SIGFPE); a 6-d ``matmul`` made Legate abort (its contraction needs 7 dimensions); a
DataLoader worker indexing a dataset of cuPyNumeric tensors hung for ever (Legate's runtime
does not survive fork). One gave silently wrong answers: integer ``**`` went through float64
(``3 ** 39`` lost its low bits, ``2 ** 64`` gave INT64_MIN instead of 0). All run in one
child interpreter, whose results each test compares with torch.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import tensorweaver as tw
import torch
from cunumeric_child import run_python
from tensorweaver_cunumeric import legate_config

pytestmark = [
    pytest.mark.cunumeric,
    pytest.mark.skipif(
        legate_config.library_name() is None,
        reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
    ),
]

SIGNED = ("int8", "int16", "int32", "int64")


def _division_by_minus_one(lib, dtype: str) -> list:
    """``//`` and ``%`` where the divisor is -1, the dividend the type's smallest value."""
    t = getattr(lib, dtype)
    low = torch.iinfo(getattr(torch, dtype)).min
    a = lib.tensor([low, low, 7, -7, 5, low + 1], dtype=t)
    b = lib.tensor([-1, 1, -1, -1, 2, -1], dtype=t)
    # (torch itself traps on div(rounding_mode="trunc") of int32/int64: not compared)
    return [a // b, a % b, lib.div(a, b, rounding_mode="floor"), lib.fmod(a, b), a // -1, a % -1]


def _rng(shape: tuple, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _matmul_6d(lib, dtype: str) -> list:
    """6-d products with broadcast batch axes, an empty one, and a vector on either side."""
    t = getattr(lib, dtype)

    def operand(shape, seed):
        return lib.tensor(np.round(_rng(shape, seed) * 10), dtype=lib.float64).to(t)

    a = operand((2, 1, 2, 1, 3, 4), 1)
    b = operand((1, 2, 1, 2, 4, 2), 2)
    batch_of_b = operand((1, 2, 2, 2, 4, 3), 3)
    vector = operand((4,), 4)
    empty = operand((0, 1, 2, 1, 3, 4), 6)
    return [a @ b, vector @ batch_of_b, a @ vector, operand((3, 4), 5) @ b, empty @ b]


def _matmul_6d_gradients(lib) -> list:
    a = lib.tensor(_rng((2, 1, 2, 1, 3, 4), 1), requires_grad=True)
    b = lib.tensor(_rng((1, 2, 1, 2, 4, 2), 2), requires_grad=True)
    (a @ b).square().sum().backward()
    return [a.grad, b.grad]


def _powers(lib, dtype: str) -> list:
    t = getattr(lib, dtype)
    info = torch.iinfo(getattr(torch, dtype))
    base = [3, 3, 7, -3, 2, 2, 5, -1, 0, 1, info.max, info.min]
    exponent = [39, 40, 22, 39, 63, 64, 27, 101, 0, 70, 3, 2]
    if info.min == 0:  # uint8: no negative bases
        base = [abs(x) % 256 for x in base]
    a, b = lib.tensor(base, dtype=t), lib.tensor(exponent, dtype=t)
    return [a**b, a**5, lib.pow(a, 2)]


CASES = {
    **{f"division_by_minus_one_{d}": partial(_division_by_minus_one, dtype=d) for d in SIGNED},
    **{f"matmul_6d_{d}": partial(_matmul_6d, dtype=d) for d in ("float64", "int64", "int32")},
    "matmul_6d_gradients": _matmul_6d_gradients,
    **{f"powers_{d}": partial(_powers, dtype=d) for d in ("uint8", *SIGNED)},
}


def results(lib, names) -> dict[str, list]:
    """Each case's tensors as (dtype, nested lists)."""
    return {
        name: [(str(t.dtype).split(".")[-1], t.tolist()) for t in CASES[name](lib)]
        for name in names
    }


class MadeInWorkers:
    """A map-style dataset whose items are made where they are fetched."""

    def __init__(self, lib) -> None:
        self.lib = lib

    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: int):
        return self.lib.full((2,), float(i))


def batch_sums(loader) -> str:
    return repr([batch.sum().item() for batch in loader])


def loader_outcomes() -> dict[str, str]:
    """Batch sums from DataLoaders with a worker, or the error they raised: over a dataset that
    holds cuPyNumeric tensors (indexed in the forked workers), and over one whose items the
    workers make (on the host, as they always do)."""
    from tensorweaver.utils.data import DataLoader

    held = tw.arange(10.0).reshape(5, 2)  # a tensor is a map-style dataset of its rows
    outcomes = {}
    for name, dataset in {"held": held, "made": MadeInWorkers(tw)}.items():
        try:
            outcomes[name] = batch_sums(DataLoader(dataset, batch_size=2, num_workers=1))
        except RuntimeError as e:
            outcomes[name] = f"RuntimeError: {e}"
    return outcomes


@pytest.fixture(scope="module")
def on_cunumeric() -> dict:
    # In a child: before the fixes, the division killed the process (SIGFPE), the product
    # made Legate abort, and the loader's workers hung for ever (the timeout). One child for
    # all, so that this test process never starts Legate.
    code = """
        import json
        import tensorweaver as tw
        tw.set_default_dtype(tw.float64)
        from tw_backends import entered
        from test_cunumeric_hunt_session18 import CASES, loader_outcomes, results
        with entered("cunumeric"):
            print(json.dumps({"cases": results(tw, CASES), "loaders": loader_outcomes()}))
    """
    return run_python(code, timeout=120)


def test_a_dataloader_worker_refuses_cunumeric_tensors_instead_of_hanging(on_cunumeric) -> None:
    # As torch refuses CUDA in a forked worker: Legate's runtime does not survive fork.
    assert on_cunumeric["loaders"]["held"].startswith("RuntimeError: ")
    assert "forked" in on_cunumeric["loaders"]["held"]
    # Workers that make their items on the host still work (they seed every backend).
    want = batch_sums(torch.utils.data.DataLoader(MadeInWorkers(torch), batch_size=2))
    assert on_cunumeric["loaders"]["made"] == want


@pytest.mark.parametrize("name", CASES)
def test_torchs_answer_without_a_crash(on_cunumeric, name: str) -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        want = results(torch, [name])[name]
    finally:
        torch.set_default_dtype(previous)
    got = [tuple(r) for r in on_cunumeric["cases"][name]]
    assert [dtype for dtype, _ in got] == [dtype for dtype, _ in want]
    for (dtype, g), (_, w) in zip(got, want):
        if dtype.startswith("float"):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        else:  # integers exactly (float64 would round values near 2**63)
            assert g == w
