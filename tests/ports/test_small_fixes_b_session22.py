"""Small fixes of the twenty-second session's third wave, each compared with torch 2.13 with
only the import changed (``fn(torch)`` and ``fn(tw)``): outer's 1-D check, named_modules'
memo of modules, Module.to(complex), an optimizer's numbering of a repeated parameter across
groups, advanced indices that do not broadcast, and string fill values.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``, or the class of what it raises."""
    try:
        return fn()
    except Exception as e:  # the class is what is compared
        return type(e).__name__


def _same(spec: str, fn: Callable[[Any], Any]) -> None:
    want = fn(torch)
    with entered(spec):
        assert fn(tw) == want


def test_outer_and_ger_take_vectors_only(spec: str) -> None:
    def fn(m: Any) -> Any:
        shapes = [((2, 2), (2,)), ((2,), (2, 2)), ((), (3,)), ((3,), ()), ((2,), (3,))]
        out = []
        for a, b in shapes:
            x = m.arange(float(max(a, default=1) ** len(a)), dtype=m.float64).reshape(a)
            y = m.arange(float(max(b, default=1) ** len(b)), dtype=m.float64).reshape(b) - 1
            for f in (m.outer, m.ger, lambda u, v: u.outer(v)):
                out.append(_outcome(lambda: f(x, y).tolist()))  # noqa: B023 (called at once)
        return out

    _same(spec, fn)


def test_outer_message_names_the_argument() -> None:
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec2, but got 2-D"):
        tw.outer(tw.ones(2), tw.ones(1, 2))
    with pytest.raises(RuntimeError, match="Expected 1-D argument self, but got 0-D"):
        tw.ger(tw.ones(()), tw.ones(2))


def test_named_modules_memo_holds_modules(spec: str) -> None:
    def fn(m: Any) -> Any:
        inner = m.nn.Sequential(m.nn.ReLU(), m.nn.Tanh())
        net = m.nn.Sequential(inner, m.nn.Linear(2, 2), inner)
        memo = {inner[1]}
        names = [n for n, _ in net.named_modules(memo=memo)]
        held = sorted(type(x).__name__ for x in memo)
        again = [n for n, _ in net.named_modules(memo=set(memo))]
        return names, held, again, len(list(net.modules()))

    _same(spec, fn)


def test_module_to_complex_and_back(spec: str) -> None:
    def fn(m: Any) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bn = m.nn.BatchNorm1d(2).to(m.complex128)
            kinds = [str(t.dtype).split(".")[-1] for t in bn.state_dict().values()]
            lin = m.nn.Linear(2, 1).double().to(m.complex64)
            back = str(lin.to(m.float32).weight.dtype).split(".")[-1]
        classes = sorted({w.category.__name__ for w in caught})
        return kinds, str(lin.weight.dtype).split(".")[-1], back, classes

    _same(spec, fn)


def test_module_to_an_integer_dtype_is_refused(spec: str) -> None:
    _same(spec, lambda m: _outcome(lambda: m.nn.Linear(2, 2).to(m.int64)))


def test_state_dict_numbers_repeats_by_position(spec: str) -> None:
    def fn(m: Any) -> Any:
        a, b, c = (m.nn.Parameter(m.tensor([0.5, -1.0 + k], dtype=m.float64)) for k in range(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the duplicate-parameter warning
            opt = m.optim.SGD([{"params": [a, b, a]}, {"params": [c, c]}], lr=0.1, momentum=0.9)
        (a.sum() + 2 * b.sum() + 3 * c.sum()).backward()
        opt.step()
        state = opt.state_dict()
        numbering = sorted(state["state"]), [g["params"] for g in state["param_groups"]]
        opt.load_state_dict(state)  # the round trip keeps each buffer with its parameter
        opt.step()
        # (rounded: the momentum update may round differently in the last bit)
        return numbering, [[round(v, 12) for v in p.tolist()] for p in (a, b, c)]

    _same(spec, fn)


def test_index_tensors_that_do_not_broadcast_read_and_write(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = m.arange(24.0, dtype=m.float64).reshape(2, 3, 4)
        i, j = m.tensor([0, 1]), m.tensor([0, 1, 2])
        out = [
            _outcome(lambda: x[i, j]),
            _outcome(lambda: x[:, i, m.tensor([[0, 1, 2]]).T].tolist()),  # (3, 1) with (2,)
            _outcome(lambda: x.__setitem__((i, slice(None), j), 1.0)),
        ]
        return out

    _same(spec, fn)


def test_index_mismatch_message() -> None:
    x = tw.ones(3, 3)
    with pytest.raises(IndexError, match=r"shapes \[2\], \[3\]"):
        x[tw.tensor([0, 1]), tw.tensor([0, 1, 2])]


@pytest.mark.parametrize("value", ["x", "1.5", b"1"])
def test_string_fill_values_are_type_errors_on_each_fill(spec: str, value: Any) -> None:
    def fn(m: Any) -> Any:
        x, mask = m.ones(2), m.ones(2, dtype=m.bool)
        return [
            _outcome(lambda: m.full((2,), value)),
            _outcome(lambda: m.full_like(x, value)),
            _outcome(lambda: x.clone().fill_(value)),
            _outcome(lambda: x.masked_fill(mask, value)),
            _outcome(lambda: x.clone().masked_fill_(mask, value)),
            _outcome(lambda: x.index_fill(0, m.tensor([0]), value)),
        ]

    _same(spec, fn)
