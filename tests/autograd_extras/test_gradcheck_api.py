"""``tw.autograd.gradcheck`` / ``gradgradcheck``: pass on correct gradients, fail (raise
``GradcheckError`` or return False) on wrong ones, with PyTorch's keywords and messages."""

from __future__ import annotations

import re
import warnings

import pytest
import tensorweaver as tw
import torch
from tensorweaver.autograd import GradcheckError, gradcheck, gradgradcheck


class Cube(tw.autograd.Function):
    """x ** 3 with a hand-written backward that is itself differentiable."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * x * g  # the factor should be 3


class FlatDoubleBackward(Cube):
    """Right first derivative, but computed from a detached input: its own derivative is 0."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x.detach() * x.detach() * g


class ScaledPair(tw.autograd.Function):
    """Two outputs and a non-tensor argument: (a * b * k, a + b)."""

    @staticmethod
    def forward(ctx, a, b, k):
        ctx.save_for_backward(a, b)
        ctx.k = k
        return a * b * k, a + b

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        return g1 * b * ctx.k + g2, g1 * a * ctx.k + g2, None


class WrongSecondPair(ScaledPair):
    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        return g1 * b * ctx.k + g2, g1 * b * ctx.k + g2, None  # b's gradient uses b, not a


def _x(*shape, low=0.5):
    return (tw.rand(*shape) + low).requires_grad_()


def test_correct_function_passes(backend):
    assert gradcheck(Cube.apply, (_x(3, 2),), eps=1e-6, atol=1e-4) is True
    assert gradcheck(Cube.apply, _x(4)) is True  # a bare tensor is accepted too


def test_composite_function_and_two_outputs_pass(backend):
    a, b = _x(2, 3), _x(2, 3)
    assert gradcheck(ScaledPair.apply, (a, b, 1.5))
    assert gradcheck(lambda u, v: ((u * v).tanh(), u.exp().sum(1)), (a, b))


def test_wrong_backward_raises_with_indices_and_jacobians(backend):
    x = _x(2)
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongCube.apply, (x,))
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,\n")
    numerical, analytical = re.search(r"numerical:(.*)\nanalytical:(.*)\n", message, re.S).groups()
    x2 = x.detach().numpy() ** 2
    for text, factor in ((numerical, 3), (analytical, 2)):  # diagonal Jacobians, 2 x 2
        values = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", text)]
        assert values == pytest.approx([factor * x2[0], 0, 0, factor * x2[1]], rel=1e-3, abs=1e-3)
    assert isinstance(info.value, RuntimeError)


def test_wrong_backward_returns_false_without_raising(backend):
    assert gradcheck(WrongCube.apply, (_x(3),), raise_exception=False) is False


def test_mismatch_names_the_second_input(backend):
    with pytest.raises(GradcheckError, match="for output 0 with respect to input 1,"):
        gradcheck(lambda u, v: WrongSecondPair.apply(u, v, 2.0)[0], (_x(3), _x(3)))


def test_output_index_counts_differentiable_outputs(backend):
    # The first output is fine; the second one (index 1) has the wrong gradient.
    with pytest.raises(GradcheckError, match="for output 1 with respect to input 0"):
        gradcheck(lambda u: (u.exp(), WrongCube.apply(u)), (_x(2),))


def test_inputs_that_do_not_require_grad_are_constants(backend):
    constant = tw.rand(3)
    assert gradcheck(lambda u, c: u * c, (_x(3), constant))


def test_no_input_requires_grad_is_a_value_error(backend):
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda u: u * 2, (tw.rand(2),))


def test_float32_input_warns_as_in_pytorch(backend):
    x = tw.rand(3, dtype=tw.float32).requires_grad_()
    with pytest.warns(UserWarning, match=r"Input #0 requires gradient and is not a double"):
        assert gradcheck(lambda u: u * 2, (x,), eps=1e-3, atol=1e-2)


def test_double_inputs_do_not_warn(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(Cube.apply, (_x(2),))


def test_tolerances_decide(backend):
    # A 1 % error in the gradient passes only once rtol allows it.
    class Off(Cube):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3.03 * x * x * g

    x = _x(3)
    assert not gradcheck(Off.apply, (x,), raise_exception=False)
    assert gradcheck(Off.apply, (x,), rtol=0.02)


def test_backward_not_multiplied_by_grad_output(backend):
    class IgnoresGrad(Cube):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x + 0 * g  # right only for g == 1

    x = _x(1)  # one output element: the unit vector is the only grad_output tried by rows
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(IgnoresGrad.apply, (x,))


def test_nondeterministic_backward_is_not_reentrant(backend):
    calls = []

    class Drifts(Cube):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            calls.append(1)
            return 3 * x * x * g * (1 + 1e-9 * len(calls))

    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Drifts.apply, (_x(2),))
    assert gradcheck(Drifts.apply, (_x(2),), nondet_tol=1e-6, atol=1e-4)


def test_unsupported_modes_are_rejected(backend):
    x = _x(2)
    with pytest.raises(NotImplementedError, match="check_batched_grad"):
        gradcheck(Cube.apply, (x,), check_batched_grad=True)
    with pytest.raises(NotImplementedError, match="check_batched_forward_grad"):
        gradcheck(Cube.apply, (x,), check_batched_forward_grad=True, check_forward_ad=True)
    with pytest.raises(AssertionError, match="requires check_forward_ad"):
        gradcheck(Cube.apply, (x,), check_batched_forward_grad=True)
    # forward mode is checked; as PyTorch, it needs a Function's jvp
    with pytest.raises(NotImplementedError, match="must implement the jvp"):
        gradcheck(Cube.apply, (x,), check_forward_ad=True)
    with pytest.raises(AssertionError, match="check_forward_ad or check_backward_ad"):
        gradcheck(Cube.apply, (x,), check_backward_ad=False)
    # Accepted: fast_mode runs the full check, which catches the same errors.
    assert gradcheck(Cube.apply, (x,), fast_mode=True, masked=False, check_undefined_grad=False)
    assert not gradcheck(WrongCube.apply, (x,), fast_mode=True, raise_exception=False)


def test_gradgradcheck_passes_and_fails(backend):
    x = _x(3)
    assert gradgradcheck(Cube.apply, (x,))
    assert gradgradcheck(lambda u, v: (u * v).sin(), (x, _x(3)))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to"):
        gradgradcheck(FlatDoubleBackward.apply, (x,))
    assert gradgradcheck(FlatDoubleBackward.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_with_given_grad_outputs(backend):
    x = _x(2, 2)
    g = tw.rand(2, 2).requires_grad_()
    assert gradgradcheck(lambda u: u.exp() * u, (x,), (g,))
    assert gradgradcheck(lambda u: u.exp() * u, (x,), g)


def test_agrees_with_torch_on_the_same_cases():
    """The same functions through torch.autograd.gradcheck give the same verdicts."""

    def cases(lib):
        class Good(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.cos()

        class Bad(Good):
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.sin()

        return Good.apply, Bad.apply

    values = [0.3, -1.2, 2.0]
    with tw.device("numpy"):
        x = tw.tensor(values, dtype=tw.float64, requires_grad=True)
        ours = [gradcheck(f, (x,), raise_exception=False) for f in cases(tw)]
    xt = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    theirs = [torch.autograd.gradcheck(f, (xt,), raise_exception=False) for f in cases(torch)]
    assert ours == theirs == [True, False]
