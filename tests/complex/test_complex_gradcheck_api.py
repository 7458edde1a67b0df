"""``tw.autograd.gradcheck`` and ``gradgradcheck`` on complex inputs and outputs give
PyTorch's verdicts: a complex input is perturbed in its real and imaginary parts, a complex
output checked as its real and imaginary parts, and a backward that forgets a conjugate
is caught."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch
from complex_reference import cplx
from tensor_reference import signed


def _wrong_conjugate(m: Any) -> Callable[[Any], Any]:
    """x * x with a backward that forgets to conjugate its derivative (2x, not 2 conj(x))."""

    class Square(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return g * 2 * x

    return Square.apply


def _no_imaginary(m: Any) -> Callable[[Any], Any]:
    """|x|^2 with a backward that drops the imaginary part of its gradient."""

    class Norm(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return (x * x.conj()).real

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return g * 2 * x.real.to(x.dtype)

    return Norm.apply


FUNCTIONS: dict[str, tuple[Callable[[Any], Callable[..., Any]], tuple]] = {
    "abs": (lambda m: lambda x: x.abs(), ("z",)),
    "exp": (lambda m: lambda x: x.exp(), ("z",)),
    "times_conj": (lambda m: lambda x: x * x.conj() + x.sqrt(), ("z",)),
    "parts": (lambda m: lambda x: (x.real * 3 + x.imag, m.view_as_real(x)), ("z",)),
    "mixed": (lambda m: lambda x, r: (x * r).log() * r.sin(), ("z", "r")),
    "real_in_complex_out": (lambda m: lambda r: m.polar(r.abs() + 1, r), ("r",)),
    "matmul": (lambda m: lambda x, y: x @ y.mT, ("z", "w")),
    "wrong_conjugate": (_wrong_conjugate, ("z",)),
    "no_imaginary": (_no_imaginary, ("z",)),
}
VALUES = {"z": cplx((2, 3), 1), "w": cplx((2, 3), 2), "r": signed((2, 3), seed=3)}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_verdict_like_pytorch(backend: str, name: str) -> None:
    make, names = FUNCTIONS[name]
    verdicts = []
    for m in (tw, torch):
        inputs = tuple(m.tensor(VALUES[n], requires_grad=True) for n in names)
        verdicts.append(m.autograd.gradcheck(make(m), inputs, raise_exception=False))
    assert verdicts[0] == verdicts[1], f"tensorweaver {verdicts[0]}, PyTorch {verdicts[1]}"
    assert verdicts[1] == (name not in ("wrong_conjugate", "no_imaginary"))


def test_message_names_the_part_of_a_complex_output(backend: str) -> None:
    first_lines = []
    for m in (tw, torch):
        x = m.tensor(VALUES["z"], requires_grad=True)
        with pytest.raises(RuntimeError) as raised:
            m.autograd.gradcheck(_wrong_conjugate(m), (x,))
        first_lines.append(str(raised.value).splitlines()[0])
    assert first_lines[0] == first_lines[1]
    assert "part of complex outputs only" in first_lines[0]


@pytest.mark.parametrize("name", ["exp", "times_conj", "mixed"])
def test_gradgradcheck_like_pytorch(backend: str, name: str) -> None:
    make, names = FUNCTIONS[name]
    verdicts = []
    for m in (tw, torch):
        inputs = tuple(m.tensor(VALUES[n][:1, :2], requires_grad=True) for n in names)
        verdicts.append(m.autograd.gradgradcheck(make(m), inputs, raise_exception=False))
    assert verdicts == [True, True]


def test_only_single_precision_is_warned_about(backend: str) -> None:
    single = tw.tensor(VALUES["z"], dtype=tw.complex64, requires_grad=True)
    with pytest.warns(UserWarning, match="double precision"):
        tw.autograd.gradcheck(lambda t: t.exp(), (single,), raise_exception=False)
    double = tw.tensor(VALUES["z"], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tw.autograd.gradcheck(lambda t: t.exp(), (double,))
