"""Leftovers of the twenty-first session's hunts, as PyTorch 2.13's: each case runs the same
program on torch and on tensorweaver (only the module differs) and compares what it returns
(values, flags) or the class of the error it raises.

Fixed here (each failed before):
* an op through ops/apply.py whose operands are all inference tensors (one made in the mode
  with requires_grad=True) recorded a graph outside the mode; PyTorch records none;
* ``y[idx] = v`` with an index tensor made in the mode, where the write is recorded, was not
  refused (PyTorch's node saves its indices), and a basic-index write into a ``detach()`` of
  an inference tensor was accepted (it writes a view of it: refused) (ops/index.py);
* ``x[idx] = v`` with an index array into NumPy memory that repeats elements was refused
  where PyTorch's ``index_put_`` writes (ops/index.py ``setitem``);
* inside ``tw.func.vmap``, ``int(t)``, ``float(t)`` and ``t.tolist()`` of the user's function
  used the current element's value; PyTorch raises (tensor.py, func/vmap.py).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _outcome(fn: Any, m: Any) -> Any:
    """What ``fn(m)`` returns (as lists), or its error's class name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn(m)
        except RuntimeError as e:
            return type(e).__name__
    return [r.tolist() if isinstance(r, (tw.Tensor, torch.Tensor)) else r for r in result]


def _like_torch(fn: Any) -> None:
    assert _outcome(fn, tw) == _outcome(fn, torch)


def _requiring_grad_in_the_mode(m: Any) -> Any:
    with m.inference_mode():
        return m.arange(1.0, 5.0, dtype=m.float64, requires_grad=True)


_OPS_OF_INFERENCE_TENSORS = {
    "sum": lambda m, p: p.sum(),
    "cumsum": lambda m, p: p.cumsum(0),
    "matmul": lambda m, p: p.reshape(4, 1) @ p.reshape(1, 4),
    "flip": lambda m, p: p.flip(0),
    "cat": lambda m, p: m.cat([p, p]),
}


@pytest.mark.parametrize("case", list(_OPS_OF_INFERENCE_TENSORS))
def test_op_of_inference_tensors_alone_records_no_graph(backend: str, case: str) -> None:
    def program(m: Any) -> Any:
        out = _OPS_OF_INFERENCE_TENSORS[case](m, _requiring_grad_in_the_mode(m))
        return out.requires_grad, out.grad_fn is None, out

    _like_torch(program)


def test_op_of_an_inference_tensor_and_a_normal_one_records_a_graph(backend: str) -> None:
    def program(m: Any) -> Any:
        out = m.cat([_requiring_grad_in_the_mode(m), m.ones(2, dtype=m.float64)])
        return out.requires_grad, out.grad_fn is None

    _like_torch(program)


def _inference_index(m: Any, mask: bool) -> Any:
    with m.inference_mode():
        return m.tensor([True, False, True, False]) if mask else m.tensor([0, 2])


@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("recorded", [False, True])
def test_inference_index_of_an_assignment(backend: str, mask: bool, recorded: bool) -> None:
    def program(m: Any) -> Any:
        w = m.ones(4, dtype=m.float64, requires_grad=recorded)
        y = w * 1
        y[_inference_index(m, mask)] = 0.0
        return (y,)

    _like_torch(program)


_BASIC_WRITES = {
    "int": 0,
    "slice_of_part": slice(0, 2),
    "slice_of_all": slice(None),
    "none": None,
    "ellipsis": Ellipsis,
    "int_then_list": (0, [1]),
    "list": [1],
}


@pytest.mark.parametrize("case", list(_BASIC_WRITES))
def test_write_into_detach_of_an_inference_tensor(backend: str, case: str) -> None:
    def program(m: Any) -> Any:
        with m.inference_mode():
            x = m.arange(6.0).reshape(2, 3)
        d = x.detach()
        d[_BASIC_WRITES[case]] = 5.0
        return (d,)

    _like_torch(program)


@pytest.mark.parametrize("index", [[1], [0, 3]], ids=["one_element", "two_elements"])
def test_index_put_into_repeated_host_memory(backend: str, index: list) -> None:
    def program(m: Any) -> Any:
        base = np.zeros(1, np.float32)
        p = m.from_numpy(np.lib.stride_tricks.as_strided(base, (4,), (0,)))
        p[m.tensor(index)] = m.full((len(index),), 2.0)
        return base.tolist(), p

    _like_torch(program)


_VMAP_READS = {
    "int": lambda a: a * int(a[0]),
    "float": lambda a: a * float(a[0]),
    "tolist": lambda a: a * len(a.tolist()),
    "item": lambda a: a * a[0].item(),
    "bool": lambda a: a if a[0] else -a,
}


@pytest.mark.parametrize("case", list(_VMAP_READS))
def test_reading_a_value_in_vmap_raises(backend: str, case: str) -> None:
    def program(m: Any) -> Any:
        return (m.func.vmap(_VMAP_READS[case])(m.arange(1.0, 7.0).reshape(2, 3)),)

    _like_torch(program)


def test_reads_by_ops_in_vmap_pass(backend: str) -> None:
    # an op's own reads of values (here: a 0-d index tensor) are no reads of the user's
    def program(m: Any) -> Any:
        return (m.func.vmap(lambda a: a[m.tensor(1)])(m.arange(6.0).reshape(2, 3)),)

    _like_torch(program)


def test_reading_an_unbatched_value_in_vmap(backend: str) -> None:
    def program(m: Any) -> Any:
        return (m.func.vmap(lambda a: a * m.tensor(2.0).item())(m.ones(2, 3)),)

    _like_torch(program)


def test_reading_an_unmapped_argument_in_vmap(backend: str) -> None:
    def program(m: Any) -> Any:
        scale = m.tensor(2.0)
        return (m.func.vmap(lambda a, s: a * s.item(), in_dims=(0, None))(m.ones(2, 3), scale),)

    _like_torch(program)


def test_another_threads_reads_during_vmap_pass(backend: str) -> None:
    # before: the count of vmap calls under way was the process's, so a second thread's
    # .item() raised while any vmap ran (a logging thread, a data loader's)
    import threading

    with tw.device(backend):
        started, finish = threading.Event(), threading.Event()
        seen: list = []

        def elementwise(a: Any) -> Any:
            started.set()
            finish.wait(5)
            return a * 2

        def reader() -> None:
            started.wait(5)
            try:
                seen.append(tw.tensor(3.0).item())
            except RuntimeError as error:
                seen.append(error)
            finally:
                finish.set()

        thread = threading.Thread(target=reader)
        thread.start()
        out = tw.func.vmap(elementwise)(tw.ones(2, 3))
        thread.join(5)
    assert seen == [3.0]
    assert np.asarray(out).tolist() == [[2.0] * 3] * 2
