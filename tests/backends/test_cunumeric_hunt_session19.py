"""Process-killing calls on the cuPyNumeric backend, found with user-level code.

Any cuPyNumeric call from a thread other than the one that started Legate aborted the
process (Legion: "Invalid task context"): ``(x + 1).sum()`` in a ``threading.Thread`` did.
Each primitive now raises RuntimeError there.

Legate aborts the whole process (SIGABRT, "Out of memory") where an array does not fit the
memory it was started with (``--sysmem``); the plugin refuses such an array up front with
``OutOfMemoryError`` (torch's class for it). These primitives made one larger than any of
their inputs without asking: a widening ``cast`` (int8 to float64 is 8 times the bytes),
``cat`` of one array listed many times, ``take`` of a few indices into large rows,
``gather`` of complex values, ``complex``, ``where`` between two scalars, ``scatter_add``
into a large array (its histogram holds three float64 values a place), integer ``pow``
and ``matmul`` (computed through float64), and the sums and scans of float16/float32
(accumulated in float64: cuPyNumeric converts the whole operand first). With 256 MiB,
``tw.zeros(40_000_000, dtype=tw.int8).double()`` and the float32 sum of a 160 MB array
killed the interpreter. ``argsort`` of float16/float32 sorted a float64 copy (cuPyNumeric's
``where`` widens with a Python float).

In process, each case is a broadcast view (no memory behind it) one element past what fits;
one child interpreter with 256 MiB checks the public API on real arrays.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import tensorweaver as tw
import torch
from cunumeric_child import run_python
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.errors import OutOfMemoryError
from tensorweaver_cunumeric import legate_config

pytestmark = [
    pytest.mark.cunumeric,
    pytest.mark.skipif(
        legate_config.library_name() is None,
        reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
    ),
]


@pytest.fixture(scope="module")
def cpu():
    from tensorweaver_cunumeric import plugin

    return plugin.tw_create_backend(device=plugin.tw_devices(probe=True)[0])


def view(cpu, n: int, dtype, value=0):
    """``n`` elements of ``dtype`` that take no memory (a broadcast view of one)."""
    return cpu.expand(cpu.full((1,), value, dtype), (n,))


def past_capacity(cpu, itemsize: int) -> int:
    """The fewest elements of ``itemsize`` bytes that do not fit."""
    return cpu._capacity // itemsize + 1


def _cast(cpu):
    cpu.cast(view(cpu, past_capacity(cpu, 8), d.int8), d.float64)


def _cat(cpu):
    part = view(cpu, past_capacity(cpu, 8) // 4 + 1, d.float64)
    cpu.cat([part] * 4, 0)


def _take(cpu):
    rows = cpu.expand(cpu.full((1, 1), 0.0, d.float64), (1, 2**20))
    count = past_capacity(cpu, 8 * 2**20)
    cpu.take(rows, 0, cpu.full((count,), 0, d.int64))


def _gather(cpu):
    index = view(cpu, past_capacity(cpu, 16), d.int64)
    cpu.gather(cpu.full((1,), 0.0, d.complex128), 0, index)


def _complex(cpu):
    part = view(cpu, past_capacity(cpu, 16), d.float64)
    cpu.complex(part, part)


def _where(cpu):
    cond = view(cpu, past_capacity(cpu, 8), d.bool, True)
    cpu.where(cond, cpu.full((), 1.0, d.float64), cpu.full((), 0.0, d.float64))


def _sum_float32(cpu):
    cpu.sum(view(cpu, past_capacity(cpu, 8), d.float32), (0,), False)


def _prod_float16(cpu):
    cpu.prod(view(cpu, past_capacity(cpu, 8), d.float16), (0,), False)


def _scatter_add(cpu):
    # a few positions into a large array: histogram's task holds 3 float64 values a place
    target = view(cpu, past_capacity(cpu, 24), d.float32)
    index = cpu.full((2,), 0, d.int64)
    cpu.scatter_add(target, 0, index, cpu.full((2,), 1.0, d.float32))


def _integer_pow(cpu):
    cpu.pow(view(cpu, past_capacity(cpu, 8), d.int8, 3), cpu.full((), 2, d.int8))


def _integer_matmul(cpu):
    k = past_capacity(cpu, 32)  # four float64 pieces of each int64
    a = cpu.expand(cpu.full((1, 1), 1, d.int64), (1, k))
    cpu.matmul(a, cpu.expand(cpu.full((1, 1), 1, d.int64), (k, 1)))


CASES = {
    f.__name__[1:]: f
    for f in (
        _cast,
        _cat,
        _take,
        _gather,
        _complex,
        _where,
        _sum_float32,
        _prod_float16,
        _scatter_add,
        _integer_pow,
        _integer_matmul,
    )
}


@pytest.mark.parametrize("name", CASES)
def test_a_result_past_sysmem_raises_before_legate_aborts(cpu, name: str) -> None:
    with pytest.raises(OutOfMemoryError, match=r"--sysmem"):
        CASES[name](cpu)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_argsort_sorts_narrow_floats_in_their_own_type(cpu, dtype, monkeypatch) -> None:
    # cuPyNumeric's `where` with a Python float returns float64: argsort's NaN-as-inf copy
    # of a float32 array took twice its memory (a float16's four times), and a sort of a
    # float32 array of half the memory Legate had aborted the process.
    from tensorweaver_cunumeric import backend

    sorted_types = []
    real_argsort = backend.cn.argsort

    def argsort(a, *args, **kwargs):
        sorted_types.append(str(a.dtype))
        return real_argsort(a, *args, **kwargs)

    monkeypatch.setattr(backend.cn, "argsort", argsort)
    values = np.array([2.5, np.nan, -np.inf, 1.0, np.nan, 2.5, np.inf, -0.0], dtype=dtype)
    got = cpu.to_host(cpu.argsort(cpu.from_host(values, d.BY_NAME[dtype]), 0))
    assert sorted_types and sorted_types[0] == dtype
    want = torch.sort(torch.from_numpy(values), stable=True).indices.numpy()
    np.testing.assert_array_equal(got, want)


def in_a_thread(work) -> list[str]:
    """The RuntimeErrors ``work`` raised in a new thread (before the fix: an abort)."""
    errors: list[str] = []

    def run() -> None:
        try:
            work()
        except RuntimeError as e:
            errors.append(str(e))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return errors


def test_a_call_from_another_thread_raises_instead_of_aborting(cpu) -> None:
    x = tw.arange(4.0, dtype=tw.float64, device="cunumeric")
    for work in (
        lambda: cpu.full((2,), 1.0, d.float64),
        lambda: (x + 1).sum().item(),
        lambda: tw.ones(2, device="cunumeric"),
        lambda: x.to("numpy"),
    ):
        (error,) = in_a_thread(work)
        assert "thread that started Legate" in error
    # the thread that started Legate goes on computing
    want = (torch.arange(4.0, dtype=torch.float64) + 1).sum().item()
    assert (x + 1).sum().item() == want


PUBLIC = {
    "cast": "tw.zeros(40_000_000, dtype=tw.int8).double()",
    "cat": "tw.cat([tw.zeros(4_000_000, dtype=tw.float64)] * 10)",
    "index": "tw.zeros(1000, 1000, dtype=tw.float64)[tw.zeros(40_000, dtype=tw.int64)]",
    "sum": "tw.zeros(40_000_000, dtype=tw.float32).sum()",
    "index_add": "tw.zeros(12_000_000).index_add(0, tw.tensor([0, 0]), tw.ones(2))",
}


def test_the_public_api_raises_and_the_process_lives_on() -> None:
    # Before the fixes each statement killed the child (SIGABRT); each now raises, and the
    # runtime still computes afterwards.
    code = f"""
        import json, sys
        import tensorweaver as tw
        tw.set_backend("cunumeric")
        outcomes = {{}}
        for name, statement in {PUBLIC!r}.items():
            try:
                eval(statement)
                outcomes[name] = "computed"
            except Exception as e:
                outcomes[name] = type(e).__name__
        after = tw.cat([tw.arange(3.0)] * 2).double().cumsum(0).tolist()
        print(json.dumps([outcomes, after]))
    """
    outcomes, after = run_python(
        code,
        timeout=120,
        LEGATE_AUTO_CONFIG="0",
        LEGATE_CONFIG="--cpus 1 --gpus 0 --utility 1 --sysmem 256 --logging gpu=6",
    )
    assert outcomes == dict.fromkeys(PUBLIC, "OutOfMemoryError")
    want = torch.cat([torch.arange(3.0, dtype=torch.float64)] * 2).cumsum(0)
    np.testing.assert_array_equal(after, want.numpy())
