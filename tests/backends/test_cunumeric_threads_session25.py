"""cuPyNumeric arrays freed in threads other than the one that started Legate.

Before the fix, an array whose last reference dropped in another thread crashed the whole
process (SIGSEGV in liblegion: ``box = [cn.ones(3) * 2]``, then ``box.pop()`` in a
``threading.Thread``), and one freed there by Python's cycle collector aborted it: a
tensor that died in a ``ThreadPoolExecutor`` worker, or a cycle that the collector met in a
``multiprocessing`` queue's feeder thread, killed the program. Now such arrays wait in a
queue until Legate's thread frees them (tensorweaver_cunumeric/deferred_frees.py).

Every case runs in one child interpreter (a crash there fails these tests, not pytest),
which prints what it saw; the values computed after the frees are compared with torch.
"""

from __future__ import annotations

import pytest
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

CHILD = """
import gc, json, threading, weakref
from concurrent.futures import ThreadPoolExecutor

# a worker thread that exists before Legate starts
pool = ThreadPoolExecutor(1)
pool.submit(int).result()

import numpy
import tensorweaver as tw
from tensorweaver.contract import dtypes as d
from tensorweaver_cunumeric import plugin
from tensorweaver_cunumeric.deferred_frees import pending

seen = {}

def in_a_thread(work):
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()

def main_thread_frees():
    # one op whose intermediate array Legate's thread frees
    return (tw.arange(4.0, dtype=tw.float64, device="cunumeric") * 3).sum().item()

with tw.device("cunumeric"):
    # 1. tensors made here (a graph, a view, a raw cuPyNumeric array) die in a new thread
    w = tw.linspace(0.5, 2.0, 3, dtype=tw.float64, requires_grad=True)
    import cupynumeric as cn  # Legate started (by the plugin, with its configuration)

    box = [(w * w).sum(), tw.arange(6.0)[2:], tw.ones(2, 3).T, cn.ones(3) * 2]
    refs = [weakref.ref(getattr(t, "native", t)) for t in box]
    # (what holds each array's store: the array gives it up to the queue as it dies)
    thunks = [weakref.ref(getattr(t, "native", t)._thunk) for t in box]
    in_a_thread(box.clear)
    seen["dropped_arrays_gone"] = sum(r() is None for r in refs)
    seen["dropped_alive"] = sum(r() is not None for r in thunks)
    seen["dropped_pending"] = pending()
    seen["value_after"] = main_thread_frees()
    seen["dropped_freed"] = sum(r() is None for r in thunks)
    seen["pending_after_main"] = pending()

    # 2. cycles that Python's collector frees in another thread, on its own schedule
    gc.disable()
    for i in range(40):
        t = tw.full((2,), float(i))
        cycle = [t, t.native]
        cycle.append(cycle)
    del t, cycle
    def allocate():
        gc.enable()  # these allocations start a collection in this thread
        return [[] for _ in range(3000)]
    in_a_thread(allocate)
    seen["cycles_pending"] = pending()
    seen["cycles_value_after"] = main_thread_frees()
    seen["cycles_pending_after_main"] = pending()

    # 3. a ThreadPoolExecutor (its thread began before Legate) reads tensors and drops them;
    # an op there raises instead of aborting
    xs = [tw.full((3,), float(i)) for i in range(5)]
    seen["shapes"] = list(pool.map(lambda t: list(t.shape), xs))
    pool.submit(xs.clear).result()
    seen["pool_pending"] = pending()
    try:
        pool.submit(lambda: tw.ones(2, device="cunumeric") + 1).result()
        seen["pool_op"] = "no error"
    except RuntimeError as e:
        seen["pool_op"] = str(e)
    y = (w * w).sum()
    y.backward()
    seen["grad"] = w.grad.tolist()
    seen["pool_pending_after_main"] = pending()

    # 4. an error raised inside cuPyNumeric, caught and kept in a cycle, collected in a thread
    backend = plugin.tw_create_backend(device=plugin.tw_devices(probe=True)[0])
    def caught():
        a = backend.from_host(numpy.ones(3), d.float64)
        b = backend.from_host(numpy.ones((4, 2)), d.float64)
        try:
            backend.matmul(a, b)
        except ValueError as e:
            error = e  # this frame and the error now refer to each other
            frames = []
            tb = e.__traceback__
            while tb is not None:
                name = tb.tb_frame.f_globals.get("__name__", "")
                if name.startswith("cupynumeric"):
                    frames.append(len(tb.tb_frame.f_locals))
                tb = tb.tb_next
            return frames
    seen["error_frames_locals"] = caught()
    in_a_thread(gc.collect)
    seen["error_value_after"] = main_thread_frees()

    # 5. arrays still waiting at exit are freed when Legate shuts down
    last = [tw.ones(1000)]
    in_a_thread(last.clear)
    seen["pending_at_exit"] = pending()
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def seen() -> dict:
    return run_python(CHILD, timeout=120)


def want_value() -> float:
    return (torch.arange(4.0, dtype=torch.float64) * 3).sum().item()


def test_tensors_dying_in_another_thread_wait_for_legates_thread(seen) -> None:
    assert seen["dropped_arrays_gone"] == 4  # the arrays themselves die at once
    assert seen["dropped_alive"] == 4  # their thunks kept alive, queued (before: SIGSEGV)
    assert seen["dropped_pending"] >= 4
    assert seen["value_after"] == want_value()
    assert seen["dropped_freed"] == 4  # freed by the next free in Legate's thread
    assert seen["pending_after_main"] == 0


def test_cycles_collected_in_another_thread(seen) -> None:
    assert seen["cycles_pending"] >= 40  # before: abort
    assert seen["cycles_value_after"] == want_value()
    assert seen["cycles_pending_after_main"] == 0


def test_thread_pool_begun_before_legate(seen) -> None:
    assert seen["shapes"] == [[3]] * 5
    assert seen["pool_pending"] >= 5
    assert "thread that started Legate" in seen["pool_op"]
    w = torch.linspace(0.5, 2.0, 3, dtype=torch.float64, requires_grad=True)
    (w * w).sum().backward()
    assert seen["grad"] == w.grad.tolist()
    assert seen["pool_pending_after_main"] == 0


def test_a_caught_error_keeps_no_legate_objects_in_cupynumeric_frames(seen) -> None:
    # cuPyNumeric's frames in the traceback have had their variables cleared: Legate stores
    # there have no finalizer that could defer their free to Legate's thread
    assert seen["error_frames_locals"] and not any(seen["error_frames_locals"])
    assert seen["error_value_after"] == want_value()


def test_arrays_still_waiting_at_exit(seen) -> None:
    # the child exited cleanly after this (run_python checks its exit status)
    assert seen["pending_at_exit"] >= 1
