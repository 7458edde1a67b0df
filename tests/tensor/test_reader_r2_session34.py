"""Reader r2, session 34: threshold_ into repeated memory (a regression of wave 1, fixed
before landing) and older defects (solve left=False on numpy, backward after a view's
in-place shape change, tw.compile of a lazy model) as strict xfails."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from snippet_outcomes import same


@pytest.mark.parametrize("how", ["threshold_", "F.threshold", "nn.Threshold", "numpy_memory"])
def test_threshold_in_place_into_an_expand_view_that_keeps_its_values(spec: str, how: str) -> None:
    # (a first version of session 34 refused these, as torch refuses the other in-place
    # activations there; torch's threshold_ does no overlap check)
    def program(m: Any) -> Any:
        a = m.tensor([[3.0, 2.0, 0.5]], dtype=m.float64)
        b = a.expand(2, 3)
        if how == "numpy_memory":  # (memory shared with NumPy that repeats its elements)
            b = m.from_numpy(
                np.lib.stride_tricks.as_strided(np.array([3.0, 2.0, 0.5]), (2, 3), (0, 8))
            )
            m.nn.functional.threshold_(b, 0.1, 20.0)
        elif how == "threshold_":
            m.nn.functional.threshold_(b, 0.1, 20.0)
        elif how == "F.threshold":
            m.nn.functional.threshold(b, 0.1, 20.0, inplace=True)
        else:
            m.nn.Threshold(0.1, 20.0, inplace=True)(b)
        return a, b

    same(program, spec)


@pytest.mark.xfail(
    strict=True,
    reason="threshold_ into an expand() view whose repeated values it changes: Tensor._assign "
    "(setitem's op, nn/functional/activation.py _threshold) refuses a change of repeated "
    "elements; torch's threshold_ does no overlap check and writes each one with the same "
    "value. Fix: an op that Tensor._assign lets write repeated memory (as _fills' ops)",
)
@pytest.mark.parametrize("graphed", [False, True], ids=["plain", "graphed"])
def test_threshold_in_place_into_an_expand_view_that_changes(spec: str, graphed: bool) -> None:
    # older (HEAD refused too): torch writes each repeated element with the same value
    def program(m: Any) -> Any:
        x = m.tensor([[-1.0, 2.0, 0.5]], dtype=m.float64, requires_grad=graphed)
        b = (x * 1 if graphed else x).expand(2, 3)
        m.nn.functional.threshold_(b, 0.1, 20.0)
        return b

    same(program, spec)


@pytest.mark.parametrize("where", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("change", ["no_grad", "data_create_graph"])
def test_solve_right_sees_a_later_change_of_A(where: str, change: str) -> None:
    # (on numpy, left=False solved a transposed copy of A: no error for A changed under
    # no_grad, and a create_graph backward read A as at the call)
    def program(m: Any) -> Any:
        a = m.eye(3, dtype=m.float64) * 3 + m.arange(9.0, dtype=m.float64).reshape(3, 3) / 10
        a.requires_grad_()
        b = m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        x = m.linalg.solve(a, b, left=False)
        if change == "no_grad":
            with m.no_grad():
                a.mul_(2)
        else:
            a.data.mul_(2)
        return m.autograd.grad((x**3).sum(), (a, b), create_graph=change != "no_grad")

    same(program, where)


def test_compile_of_a_lazy_model_before_its_first_call(spec: str) -> None:
    def program(m: Any) -> Any:
        m.manual_seed(0)
        net = m.nn.Sequential(m.nn.LazyLinear(4), m.nn.ReLU(inplace=True), m.nn.LazyLinear(2))
        # (torch's eager call: torch.compile gives its result at ~10 s of startup)
        call = m.compile(net) if m.__name__ == "tensorweaver" else net
        out = call(m.ones(3, 5))
        return out.shape, [tuple(p.shape) for p in net.parameters()]

    same(program, spec)


@pytest.mark.parametrize("change", ["t_", "unsqueeze_", "as_strided_", "unsqueeze_ of a non-view"])
def test_backward_of_an_op_of_a_view_after_its_shape_changed(spec: str, change: str) -> None:
    # older (HEAD 5bada70 raised too)
    def program(m: Any) -> Any:
        x = m.arange(12.0, dtype=m.float64).reshape(3, 4).requires_grad_()
        v = (x * 1)[1:] if change != "unsqueeze_ of a non-view" else x * 1
        z = v.exp()
        if change == "t_":
            v.t_()
        elif change.startswith("unsqueeze_"):
            v.unsqueeze_(0)
        else:
            v.as_strided_((2, 2), (1, 2))
        z.sum().backward()
        return x.grad, v.shape

    same(program, spec)
