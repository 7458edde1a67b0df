"""``tw.utils.checkpoint(..., use_reentrant=False)`` against PyTorch 2.13's: in-place changes
of the inputs (in the function and after the call), which outputs require grad, the graph's
memory, hooks, nesting, the autocast state of the recomputation and the determinism check."""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

X = np.array([0.5, -1.25, 2.0])
W = np.array([3.0, -1.0, 0.25])


def checkpointed(m: Any, function: Any, *args: Any, **kwargs: Any) -> Any:
    return m.utils.checkpoint.checkpoint(function, *args, use_reentrant=False, **kwargs)


def in_place_run(m: Any, name: str, plain: bool = False) -> list:
    """Output, input, weight gradients and the changed input of case ``name``, where the
    function changes its (non-leaf) first input in place."""
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    c = x * 1
    function = IN_PLACE[name]
    out = function(c, w) if plain else checkpointed(m, function, c, w)
    out.sum().backward()
    zeros = m.zeros(3, dtype=m.float64)
    values = [out, x.grad, zeros if w.grad is None else w.grad, c]
    return [np.asarray(v.detach()) if m is tw else v.detach().numpy() for v in values]


IN_PLACE: dict[str, Any] = {
    "returned": lambda a, w: a.mul_(2),
    "then a linear op": lambda a, w: a.mul_(2) + 1,
    "by a weight": lambda a, w: a.add_(w),
    "then a view": lambda a, w: a.mul_(-1)[1:],
}


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_in_place_change_of_an_input_like_torch(name: str) -> None:
    """(Raised before: the recomputation ran on leaf copies of the inputs.)"""
    for got, expected in zip(in_place_run(tw, name), in_place_run(torch, name)):
        np.testing.assert_allclose(got, expected, rtol=1e-14)


def test_an_input_returned_is_returned_itself_as_in_torch() -> None:
    for m in (torch, tw):
        x = m.tensor(X, requires_grad=True)
        c = x * 1
        out = checkpointed(m, lambda a, b: (a.mul_(2), b, b.exp()), c, x)
        assert out[0] is c and out[1] is x and out[2] is not x


NEEDS_RECOMPUTATION: dict[str, Any] = {
    "then exp": lambda a, w: a.mul_(2).exp(),
    "then times a weight": lambda a, w: a.mul_(2) * w,
}


@pytest.mark.parametrize("name", list(NEEDS_RECOMPUTATION))
def test_in_place_change_where_torch_raises_gives_the_gradient_without_checkpoint(
    name: str,
) -> None:
    """PyTorch raises its in-place version error here (its recomputation changes the input
    again); the recomputation here starts from the value the call saw, so the gradients are
    those of the function without checkpoint (documented in checkpoint.py)."""
    IN_PLACE[name] = NEEDS_RECOMPUTATION[name]
    try:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            in_place_run(torch, name)
        got, plain = in_place_run(tw, name), in_place_run(torch, name, plain=True)
    finally:
        del IN_PLACE[name]
    for g, e in zip(got, plain):
        np.testing.assert_allclose(g, e, rtol=1e-14)


def changed_after(m: Any, leaf: bool) -> type | None:
    x = m.tensor(X, requires_grad=True)
    t = x if leaf else x * 1
    out = checkpointed(m, lambda a: a.exp(), t)
    with m.no_grad():
        t.mul_(2)
    try:
        out.sum().backward()
    except RuntimeError as exc:
        return type(exc)
    return None


@pytest.mark.parametrize("leaf", [True, False])
def test_input_changed_after_the_call_raises_in_backward_like_torch(leaf: bool) -> None:
    assert changed_after(tw, leaf) is changed_after(torch, leaf) is RuntimeError


def outputs_of(m: Any) -> list:
    x = m.tensor(X, requires_grad=True)
    out = checkpointed(m, lambda t: (t.exp(), t.detach() * 2, t.long(), t[1:], 3, None), x)
    return [(o.requires_grad, o.is_leaf, str(o.dtype).split(".")[1]) for o in out[:4]] + [out[4:]]


def test_which_outputs_require_grad_like_torch() -> None:
    """(The detached product required grad before: the forward ran without grad.)"""
    assert outputs_of(tw) == outputs_of(torch)


def test_under_no_grad_outputs_do_not_require_grad_as_in_torch() -> None:
    for m in (torch, tw):
        x = m.tensor(X, requires_grad=True)
        with m.no_grad():
            out = checkpointed(m, lambda t: t.exp() * t, x)
        assert not out.requires_grad


# (A tuple, list or dict kept the graph alive before: the node held the returned structure.)
PACKED = {
    "a tensor": lambda y: y,
    "a tuple": lambda y: (y, 1),
    "a list": lambda y: [y],
    "a dict of a tuple": lambda y: {"out": (y,)},
}


def intermediate_freed(m: Any, pack: Any) -> bool:
    refs = []

    def function(t: Any) -> Any:
        y = t.exp()
        refs.append(weakref.ref(y))
        return pack(y.sin())

    # Objects made before the call are frozen: the collection walks only the call's own (a
    # whole collection of a worker's heap late in the suite costs seconds).
    gc.freeze()
    try:
        out = checkpointed(m, function, m.tensor(X, requires_grad=True))
        gc.collect()
        assert out is not None
        return refs[0]() is None
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("packed", list(PACKED))
def test_the_graph_of_the_call_is_freed_as_in_torch(packed: str) -> None:
    assert intermediate_freed(tw, PACKED[packed]) and intermediate_freed(torch, PACKED[packed])


def hook_calls(m: Any) -> list:
    calls = []

    def function(t: Any) -> Any:
        y = t.exp()
        y.register_hook(lambda g: calls.append(("inner", g.sum().item())))
        return y.sin()

    x = m.tensor(X, requires_grad=True)
    x.register_hook(lambda g: calls.append(("input", g.sum().item())))
    checkpointed(m, function, x).sum().backward()
    return calls


def test_tensor_hooks_fire_once_as_in_torch() -> None:
    got, expected = hook_calls(tw), hook_calls(torch)
    assert [name for name, _ in got] == [name for name, _ in expected]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in expected], rtol=1e-14)


def nested(m: Any) -> list:
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True)

    def inner(b: Any) -> Any:
        return (b * w).sin()

    def outer(a: Any) -> Any:
        return checkpointed(m, inner, a.exp()) * w

    out = checkpointed(m, outer, x)
    (gx,) = m.autograd.grad(out.sum(), [x], retain_graph=True)
    out.pow(2).sum().backward()
    return [np.asarray(v.detach()) for v in (out, gx, x.grad, w.grad)]


def test_nested_checkpoints_like_torch() -> None:
    for got, expected in zip(nested(tw), nested(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-13)


def under_autocast(m: Any) -> list:
    rs = np.random.RandomState(0)
    x = m.tensor(rs.randn(5, 8).astype(np.float32), requires_grad=True)
    w = m.tensor(rs.randn(8, 3).astype(np.float32), requires_grad=True)
    with m.autocast("cpu", dtype=m.bfloat16):
        out = checkpointed(m, lambda t: (t @ w).relu() * 3, x)
    assert str(out.dtype).endswith("bfloat16")
    out.float().pow(2).sum().backward()
    return [np.asarray(v.detach().float()) for v in (out, x.grad, w.grad)]


def test_recomputation_runs_under_the_autocast_state_of_the_forward_as_in_torch() -> None:
    """(Before, backward outside the block recomputed in float32: other gradients.)"""
    with entered("torch:cpu"):
        got, expected = under_autocast(tw), under_autocast(torch)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def nondeterministic(m: Any, check: str) -> str:
    """The exception class of a backward whose recomputation returns another shape."""
    repeats = [1]

    def function(t: Any) -> Any:
        return t.repeat(repeats[0]).exp()

    out = checkpointed(m, function, m.tensor(X, requires_grad=True), determinism_check=check)
    repeats[0] = 2
    try:
        out.sum().backward()
    except RuntimeError as exc:
        return type(exc).__name__
    return "no error"


@pytest.mark.parametrize("check", ["default", "none"])
def test_determinism_check_like_torch(check: str) -> None:
    assert nondeterministic(tw, check) == nondeterministic(torch, check)
    assert issubclass(tw.utils.checkpoint.CheckpointError, RuntimeError)


def side_effects(m: Any) -> list:
    runs = []

    def function(t: Any) -> Any:
        y = t.exp()  # the only op that saves a tensor: PyTorch's recomputation stops here
        runs.append("after exp")
        return y.sum()

    x = m.tensor(X, requires_grad=True)
    checkpointed(m, function, x).backward()
    return runs


@pytest.mark.xfail(
    strict=True,
    reason="checkpoint.py: the recomputation runs the whole function; PyTorch's stops once "
    "the last saved tensor is recomputed (early_stop=True), so code after it runs once",
)
def test_early_stop_like_torch() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert side_effects(tw) == side_effects(torch)


def _twice(a: Any) -> tuple:
    b = a.exp()
    return b, b


def _base_and_views(a: Any) -> tuple:
    b = a * 2
    return b[1:][::2], b, b.view(2, 2).t()


# (Wrong before: each output was a new tensor, so an in-place change of one missed the
# others, whose gradients were then those of the unchanged values.)
OUTPUTS_SHARING: dict[str, Any] = {
    "an output returned twice": _twice,
    "views of another output": _base_and_views,
    "an output twice and a view of it": lambda a: (lambda b: (b, b[1:], b))(a * 2),
}


@pytest.mark.parametrize("name", list(OUTPUTS_SHARING))
def test_outputs_sharing_memory_stay_shared_as_in_torch(name: str) -> None:
    def run(m: Any) -> list:
        x = m.tensor([1.0, -2.0, 3.0, 0.5], dtype=m.float64, requires_grad=True)
        out = checkpointed(m, OUTPUTS_SHARING[name], x)
        out[1].mul_(10)
        sum(o.pow(2).sum() for o in out).backward()
        same = [a is b for a in out for b in out]
        return [same, *(v.detach().numpy().tolist() for v in (*out, x.grad))]

    assert run(tw) == run(torch)


WEIGHT: list = []
# name: (function, input made of x, tensor then changed under no_grad)
VIEWS_OF_INPUTS: dict[str, tuple] = {
    "a view of the input": (lambda a: (a[1:], a.exp()), lambda x: (x, x)),
    "a view of a non-leaf input": (
        lambda a: (a.view(2, 2)[0], a.sin()),
        lambda x: (x * 1,) * 2,
    ),
    "a view of an input that views a non-leaf": (
        lambda a: (a[0:2], a.exp()),
        lambda x: (lambda h: (h[1:], h))(x * 1),
    ),
    "a view of a weight it reads": (lambda a: (WEIGHT[0][1:], a * WEIGHT[0][0]), lambda x: (x, x)),
}


@pytest.mark.parametrize("name", list(VIEWS_OF_INPUTS))
def test_an_output_viewing_a_tensor_from_before_the_call_views_it_as_in_torch(name: str) -> None:
    """(Wrong before: the output was a copy, which later changes of the tensor missed.)"""

    def run(m: Any) -> list:
        x = m.tensor([1.0, -2.0, 3.0, 0.5], dtype=m.float64, requires_grad=True)
        WEIGHT[:] = [m.tensor([0.5, 2.0, -1.0, 3.0], dtype=m.float64, requires_grad=True)]
        function, make = VIEWS_OF_INPUTS[name]
        given, changed = make(x)
        out = checkpointed(m, function, given)
        with m.no_grad():
            changed.mul_(3)
            WEIGHT[0].add_(1)
        return [o.detach().numpy().tolist() for o in out]

    assert run(tw) == run(torch)


def test_a_parameter_changed_between_forward_and_backward_like_torch() -> None:
    def run(m: Any) -> list:
        x = m.tensor(X, requires_grad=True)
        lin = m.nn.Linear(3, 2).double()
        with m.no_grad():
            lin.weight.copy_(m.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], dtype=m.float64))
            lin.bias.zero_()
        out = checkpointed(m, lambda a: lin(a).tanh(), x)
        with m.no_grad():
            lin.weight.add_(0.25)  # an optimizer step before backward
        out.sum().backward()
        return [x.grad.numpy(), lin.weight.grad.numpy()]

    for got, expected in zip(run(tw), run(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-14)
