"""The generated guard covers tuples and lists of tensors among the arguments (an LSTM's
hidden state), as strictly as the signature it stands for."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
from tensorweaver.compiler.guards import make_guard
from tensorweaver.compiler.state import StepState


def recurrent(x: Any, hidden: Any, k: float) -> Any:
    h, c = hidden
    return ((x * h + c) * k).sum()


def leaf(values: Any, dtype: Any = tw.float32, requires_grad: bool = False) -> Any:
    return tw.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


def test_a_guard_of_tensors_in_a_tuple_accepts_exactly_its_signature() -> None:
    x = leaf([1.0, 2.0], requires_grad=True)
    args = (x, (leaf([3.0, 4.0]), leaf([5.0, 6.0])), 2.0)
    state = StepState(recurrent, args, {})
    key = state.signature(args, {})
    guard = make_guard(state, recurrent, args, key)
    assert guard is not None

    def check(*call: Any) -> bool:
        accepted = guard(call, {})
        assert accepted in (True, False)
        assert not accepted or StepState(recurrent, call, {}, state).signature(call, {}) == key
        return accepted

    h, c = leaf([7.0, 8.0]), leaf([9.0, 1.0])
    assert check(x, (h, c), 2.0)  # other tensors alike
    assert not check(x, [h, c], 2.0)  # a list for the tuple
    assert not check(x, (h,), 2.0)  # its length
    assert not check(x, (h, c, c), 2.0)
    assert not check(x, (leaf([7.0, 8.0, 9.0]), c), 2.0)  # an element's shape
    assert not check(x, (h, leaf([9.0, 1.0], tw.float64)), 2.0)  # dtype
    assert not check(x, (h, leaf([9.0, 1.0], requires_grad=True)), 2.0)  # requires_grad
    assert not check(x, (h, h), 2.0)  # two elements share an array
    assert not check(x, (h, 3.0), 2.0)  # a number for a tensor
    assert not check(x, (h, c), 3.0)  # the scalar beside them


def test_a_tuple_argument_replays_through_the_generated_guard() -> None:
    @tw.compile
    def step(x: Any, hidden: Any) -> Any:
        return recurrent(x, hidden, 2.0)

    x = leaf([1.0, 2.0])
    for n in (4.0, 5.0, 6.0, 7.0):
        hidden = (leaf([n, 1.0]), leaf([2.0, n]))
        assert tw.equal(step(x, hidden), recurrent(x, hidden, 2.0))
    assert step._fast is not None  # the last signature's guard accepted the call
    traces = step.traces
    wide = (leaf([1.0, 2.0, 3.0]), leaf([1.0, 2.0, 3.0]))
    assert tw.equal(step(leaf([1.0, 2.0, 3.0]), wide), recurrent(leaf([1.0, 2.0, 3.0]), wide, 2.0))
    assert step.traces > traces  # another shape traced again
