"""float16 ``add``/``sub`` with alpha and ``rsqrt`` bit for bit as torch 2.13's CPU kernels,
whose vectorized loop computes in float32 and rounds once while its scalar loop rounds an
intermediate (b * alpha; sqrt) to half first. Found in review of session 17's rule ("the
last n mod 64 elements"), which held for no layout but a contiguous one and even there was
wrong: torch's x86 loop (AVX2 and AVX-512 alike) leaves the last n mod 32 elements of each
inner loop to its scalar loop, and a strided operand, or a broadcast one whose rows are short,
sends every element there.

Before the fix: a (10, 10) + (10,) broadcast with alpha differed in 18 of 100 elements on
NumPy and on torch:cpu; contiguous n = 100 / 127 in 4 / 7 elements on NumPy; ``a[::2] +
b[::2]`` in 11 of 100 on NumPy; rsqrt of n = 127 in 8-12 elements on both backends.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

#: torch's vectorized loop exists for half on x86 with AVX2 or AVX-512 (its "default"
#: capability runs every element in the scalar loop); the NumPy backend follows the former.
_VECTOR_LOOP = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


def _needs_vector_loop(backend: str) -> None:
    if backend.startswith("numpy") and not _VECTOR_LOOP:
        pytest.skip(
            "torch's CPU capability here is "
            f"{torch.backends.cpu.get_cpu_capability()}, not AVX2/AVX512: its half loop "
            "differs from the one the NumPy backend follows"
        )


def _tw(t: torch.Tensor) -> Any:
    return tw.tensor(t.double().numpy()).to(tw.float16)


def _same_bits(ours: Any, theirs: torch.Tensor) -> None:
    assert str(ours.dtype) == "tensorweaver.float16", ours.dtype
    got, want = np.asarray(ours.detach().double()), theirs.detach().double().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    differ = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    assert not differ.any(), f"{differ.sum()} of {differ.size} differ at {np.argwhere(differ)}"


def _halves(shape: tuple, seed: int, scale: float = 1.0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal(shape) * scale).half()


def _both(
    a: torch.Tensor, b: torch.Tensor, view: Callable[[Any], Any] = lambda t: t
) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """(torch operands, tw operands): the same values through the same view."""
    ta, tb = view(a), view(b)
    wa, wb = view(_tw(a)), view(_tw(b))
    for t, w in ((ta, wa), (tb, wb)):
        assert tuple(w.shape) == tuple(t.shape)
    return (ta, tb), (wa, wb)


def _check_add_sub(torch_ops: tuple, tw_ops: tuple) -> None:
    for alpha in (0.3, -1.7, 2.5e-3):
        for name in ("add", "sub"):
            want = getattr(torch, name)(*torch_ops, alpha=alpha)
            _same_bits(getattr(tw, name)(*tw_ops, alpha=alpha), want)


# -- 1. broadcast operands -------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [
        ((10, 10), (10,)),  # rows of 10: all in the scalar loop (18 of 100 differed)
        ((10, 10), (10, 1)),  # b stays put along the rows: vectorized over each row of 10
        ((10,), (10, 10)),  # the broadcast operand first
        ((6, 100), (100,)),  # rows of 100: each row's last 4 in the scalar loop
        ((6, 100), ()),  # a 0-d b: one vectorized loop over all 600 (tail 24)
        ((3, 1, 70), (1, 5, 70)),  # both broadcast
    ],
)
def test_broadcast_operands_as_torch(backend: str, shapes: tuple) -> None:
    _needs_vector_loop(backend)
    a, b = _halves(shapes[0], 1), _halves(shapes[1], 2)
    _check_add_sub(*_both(a, b))


def test_broadcast_add_in_place_as_torch(backend: str) -> None:
    """``x.add_(y, alpha=)`` with a broadcast y (the out-of-place path, then written)."""
    _needs_vector_loop(backend)
    x, y = _halves((10, 10), 3), _halves((10,), 4)
    ours = _tw(x)
    ours.add_(_tw(y), alpha=0.3)
    _same_bits(ours, x.clone().add_(y, alpha=0.3))


def test_half_with_a_zero_dim_wider_operand_as_torch(backend: str) -> None:
    """A 0-d float64/float32 b leaves the result float16 (torch converts b to half first)."""
    _needs_vector_loop(backend)
    a = _halves((100,), 5)
    for dtype in (torch.float64, torch.float32):
        b = torch.tensor(0.7311, dtype=dtype)
        wb = tw.tensor(0.7311, dtype=getattr(tw, str(dtype).split(".")[1]))
        for name in ("add", "sub"):
            want = getattr(torch, name)(a, b, alpha=0.3)
            _same_bits(getattr(tw, name)(_tw(a), wb, alpha=0.3), want)


# -- 2. the tail: n mod 32 (n mod 64 before) ---------------------------------------------------


@pytest.mark.parametrize("n", [100, 127])
def test_contiguous_tail_is_n_mod_32(backend: str, n: int) -> None:
    """n = 100, 127: n mod 32 (4, 31) and n mod 64 (36, 63) differ (NumPy differed at
    indices 65, 66, 68, 94 for n = 100)."""
    _needs_vector_loop(backend)
    a, b = _halves((n,), 6), _halves((n,), 7, 0.1)
    _check_add_sub(*_both(a, b))
    ours = _tw(a)
    ours.add_(_tw(b), alpha=-0.1)  # the in-place fast path (one foreach_add)
    _same_bits(ours, a.clone().add_(b, alpha=-0.1))


def test_one_thread_above_the_grain_size(backend: str) -> None:
    """Above 32768 elements torch's threads split the loop (each part has its own tail); with
    one thread it is one loop: 40036 elements leave 4 to the scalar loop (n mod 64: 36)."""
    _needs_vector_loop(backend)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = _halves((40036,), 8), _halves((40036,), 9)
        for name in ("add", "sub"):
            want = getattr(torch, name)(a, b, alpha=0.3)
            _same_bits(getattr(tw, name)(_tw(a), _tw(b), alpha=0.3), want)
    finally:
        torch.set_num_threads(threads)


# -- 3. strided operands ---------------------------------------------------------------------

_VIEWS: dict[str, tuple[tuple, Callable[[Any], Any]]] = {
    "every other": ((200,), lambda t: t[::2]),  # 11 of 100 differed on NumPy
    "transposed": ((40, 70), lambda t: t.t()),  # dense: one loop in memory order
    "column slice": ((20, 80), lambda t: t[:, 5:75]),  # rows of 70: each row's last 6
    "row step": ((40, 70), lambda t: t[::2]),  # rows stay contiguous, 70 each
    "permuted": ((5, 6, 7), lambda t: t.permute(2, 0, 1)),
}


@pytest.mark.parametrize("case", sorted(_VIEWS))
def test_strided_operands_as_torch(backend: str, case: str) -> None:
    _needs_vector_loop(backend)
    shape, view = _VIEWS[case]
    a, b = _halves(shape, 10), _halves(shape, 11)
    _check_add_sub(*_both(a, b, view))


@pytest.mark.parametrize("case", sorted(_VIEWS))
def test_add_in_place_into_a_strided_view_as_torch(backend: str, case: str) -> None:
    """``view.add_(y, alpha=)`` (the one-``foreach_add`` fast path) written through into the
    base: 10-28 of the elements differed on NumPy."""
    _needs_vector_loop(backend)
    shape, view = _VIEWS[case]
    base, other = _halves(shape, 16), _halves(shape, 17)
    ours = _tw(base)
    view(ours).add_(view(_tw(other)), alpha=0.3)
    theirs = base.clone()
    view(theirs).add_(view(other), alpha=0.3)
    _same_bits(ours, theirs)


def test_one_strided_one_contiguous_operand_as_torch(backend: str) -> None:
    """a transposed, b contiguous: torch orders the loop by a's strides first."""
    _needs_vector_loop(backend)
    a, b = _halves((70, 40), 12), _halves((40, 70), 13)
    _check_add_sub((a.t(), b), (_tw(a).t(), _tw(b)))


# -- 4. rsqrt: the scalar loop rounds sqrt(x) first --------------------------------------------


def _positive_halves(n: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    values = np.exp(rng.uniform(-9, 11, n))
    values[-6:] = [0.0, np.inf, np.nan, -1.0, 6e-8, 65504.0]  # the edges, in the tail
    return torch.tensor(values).half()


@pytest.mark.parametrize("n", [100, 127])
def test_rsqrt_contiguous_tail_as_torch(backend: str, n: int) -> None:
    """n = 127 differed in 12 elements (98-123) on both backends."""
    _needs_vector_loop(backend)
    x = _positive_halves(n, 14)
    _same_bits(tw.rsqrt(_tw(x)), torch.rsqrt(x))
    ours = _tw(x).requires_grad_()
    got = ours.rsqrt()
    _same_bits(got, torch.rsqrt(x))
    got.sum().backward()
    assert ours.grad is not None and tuple(ours.grad.shape) == (n,)


@pytest.mark.parametrize(
    ("shape", "view"),
    [
        ((200,), lambda t: t[::2]),
        ((40, 70), lambda t: t.t()),
        ((20, 80), lambda t: t[:, 5:75]),
        ((10, 1), lambda t: t.expand(10, 50)),
        ((), lambda t: t),
    ],
    ids=["every other", "transposed", "column slice", "expanded", "0-d"],
)
def test_rsqrt_views_as_torch(backend: str, shape: tuple, view: Callable) -> None:
    _needs_vector_loop(backend)
    n = int(np.prod(shape))
    x = _positive_halves(max(n, 6), 15)[:n].reshape(shape)
    _same_bits(tw.rsqrt(view(_tw(x))), torch.rsqrt(view(x)))
