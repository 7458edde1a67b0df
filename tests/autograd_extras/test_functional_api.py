"""``tw.autograd.functional`` against ``torch.autograd.functional`` on the same functions and
inputs in float64: values, and the result structure (tensor or tuples) exactly."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.autograd import functional as F

# Functions written with the API both libraries share.
ONE_TO_ONE = lambda x: (x.exp() * x.sin()).sum(1)  # noqa: E731
ONE_TO_TWO = lambda x: (x * x, x.tanh().sum())  # noqa: E731
TWO_TO_ONE = lambda x, y: (x * y.cos()).sum(0) + y.sum()  # noqa: E731
TWO_TO_TWO = lambda x, y: (x @ y, (x.sin() * 2).sum())  # noqa: E731
SCALAR_ONE = lambda x: (x.pow(3) * x.sin()).sum()  # noqa: E731
SCALAR_TWO = lambda x, y: (x.exp() * (y @ y)).sum() + (x * x).sum()  # noqa: E731
SCALAR_UNUSED = lambda x, y: (x * x).sum()  # noqa: E731


def _values(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s) for s in shapes]


def _pair(arrays, single):
    ours = tuple(tw.tensor(a) for a in arrays)
    theirs = tuple(torch.tensor(a) for a in arrays)
    return (ours[0], theirs[0]) if single else (ours, theirs)


def _assert_same(ours, theirs):
    """Same nesting of tuples and tensors, same shapes, same values."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _assert_same(o, t)
        return
    assert isinstance(ours, tw.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), 1e-10, 1e-12)


JACOBIAN_CASES = [
    (ONE_TO_ONE, [(3, 4)], True),
    (ONE_TO_TWO, [(3,)], True),
    (TWO_TO_ONE, [(2, 3), (3,)], False),
    (TWO_TO_TWO, [(2, 3), (3, 2)], False),
    (ONE_TO_ONE, [(2, 2)], False),  # one input given as a 1-tuple
]


@pytest.mark.parametrize("func, shapes, single", JACOBIAN_CASES)
def test_jacobian(backend, func, shapes, single):
    ours, theirs = _pair(_values(1, *shapes), single)
    _assert_same(F.jacobian(func, ours), torch.autograd.functional.jacobian(func, theirs))


def test_jacobian_vectorize_and_forward_strategy_give_the_same_values(backend):
    ours, theirs = _pair(_values(2, (2, 3), (3,)), False)
    expected = torch.autograd.functional.jacobian(TWO_TO_ONE, theirs)
    _assert_same(F.jacobian(TWO_TO_ONE, ours, vectorize=True), expected)
    _assert_same(F.jacobian(TWO_TO_ONE, ours, vectorize=True, strategy="forward-mode"), expected)


@pytest.mark.parametrize(
    "func, shapes, single",
    [(SCALAR_ONE, [(3,)], True), (SCALAR_TWO, [(2,), (2, 2)], False), (SCALAR_ONE, [(2,)], False)],
)
def test_hessian(backend, func, shapes, single):
    ours, theirs = _pair(_values(3, *shapes), single)
    _assert_same(F.hessian(func, ours), torch.autograd.functional.hessian(func, theirs))


@pytest.mark.parametrize("name", ["vjp", "jvp"])
@pytest.mark.parametrize(
    "func, shapes, single", [(ONE_TO_ONE, [(3, 4)], True), (TWO_TO_TWO, [(2, 3), (3, 2)], False)]
)
def test_vjp_jvp(backend, name, func, shapes, single):
    ours, theirs = _pair(_values(4, *shapes), single)
    with torch.no_grad():
        outputs = func(*(theirs if isinstance(theirs, tuple) else (theirs,)))
    like = outputs if name == "vjp" else theirs
    v_arrays = _values(5, *[tuple(t.shape) for t in (like if isinstance(like, tuple) else (like,))])
    v_ours, v_theirs = _pair(v_arrays, not isinstance(like, tuple))
    _assert_same(
        getattr(F, name)(func, ours, v_ours),
        getattr(torch.autograd.functional, name)(func, theirs, v_theirs),
    )


@pytest.mark.parametrize("name", ["vhp", "hvp"])
@pytest.mark.parametrize(
    "func, shapes, single",
    [(SCALAR_ONE, [(4,)], True), (SCALAR_TWO, [(2,), (2, 2)], False)],
)
def test_vhp_hvp(backend, name, func, shapes, single):
    ours, theirs = _pair(_values(6, *shapes), single)
    v_ours, v_theirs = _pair(_values(7, *shapes), single)
    _assert_same(
        getattr(F, name)(func, ours, v_ours),
        getattr(torch.autograd.functional, name)(func, theirs, v_theirs),
    )


def test_v_may_be_omitted_for_one_element(backend):
    ours, theirs = _pair(_values(8, (1,)), True)
    for name in ("vjp", "jvp", "vhp", "hvp"):
        _assert_same(
            getattr(F, name)(SCALAR_ONE, ours),
            getattr(torch.autograd.functional, name)(SCALAR_ONE, theirs),
        )


def test_unused_input_gives_zeros_or_strict_error(backend):
    ours, theirs = _pair(_values(9, (2,), (3,)), False)
    _assert_same(F.vjp(SCALAR_UNUSED, ours), torch.autograd.functional.vjp(SCALAR_UNUSED, theirs))
    _assert_same(
        F.hessian(SCALAR_UNUSED, ours), torch.autograd.functional.hessian(SCALAR_UNUSED, theirs)
    )
    message = "The output of the user-provided function is independent of input 1"
    with pytest.raises(RuntimeError, match=message):
        torch.autograd.functional.vjp(SCALAR_UNUSED, theirs, strict=True)
    with pytest.raises(RuntimeError, match=message):
        F.vjp(SCALAR_UNUSED, ours, strict=True)


def test_results_are_detached_unless_create_graph(backend):
    x = tw.tensor(_values(10, (3,))[0], requires_grad=True)
    out, vjp = F.vjp(SCALAR_ONE, x)
    assert not out.requires_grad and not vjp.requires_grad
    assert not F.jacobian(ONE_TO_TWO, x)[0].requires_grad
    out, vjp = F.vjp(SCALAR_ONE, x, create_graph=True)
    (g,) = tw.autograd.grad(vjp.sum(), x)  # differentiable back to the caller's x
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    _, vjp_t = torch.autograd.functional.vjp(SCALAR_ONE, xt, create_graph=True)
    (gt,) = torch.autograd.grad(vjp_t.sum(), xt)
    _assert_same(g, gt)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.autograd.functional.vjp(ONE_TO_ONE, x),  # v needed: 3 outputs
        lambda lib, x: lib.autograd.functional.jvp(ONE_TO_ONE, x),
        lambda lib, x: lib.autograd.functional.hessian(ONE_TO_ONE, x),  # not a scalar
        lambda lib, x: lib.autograd.functional.vhp(ONE_TO_TWO, x, x),
        lambda lib, x: lib.autograd.functional.vjp(ONE_TO_ONE, x, x),  # wrong size of v
        lambda lib, x: lib.autograd.functional.jvp(ONE_TO_ONE, x, (x, x)),
        lambda lib, x: lib.autograd.functional.jacobian(ONE_TO_ONE, [x]),  # a list
        lambda lib, x: lib.autograd.functional.jacobian(ONE_TO_ONE, x, strategy="sideways"),
        lambda lib, x: lib.autograd.functional.jacobian(ONE_TO_ONE, x, strategy="forward-mode"),
        lambda lib, x: lib.autograd.functional.jacobian(ONE_TO_ONE, x, vectorize=True, strict=True),
    ],
)
def test_errors_match_torch(backend, call):
    (a,) = _values(11, (3, 3))
    with pytest.raises(Exception) as theirs:
        call(torch, torch.tensor(a))
    with pytest.raises(type(theirs.value)) as ours:
        call(tw, tw.tensor(a))
    # Ours names tensorweaver and its Size; PyTorch's forward-mode message lacks a space.
    expected = str(theirs.value).replace("isonly", "is only")
    assert str(ours.value).replace("tensorweaver.Size", "torch.Size") == expected.replace(
        "torch.autograd", "tensorweaver.autograd"
    )
