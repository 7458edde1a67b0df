"""tensorweaver.contract.cpu_loops against torch: which elements torch's CPU half-precision
kernels compute in their scalar loop.

Every element of these tensors holds values for which torch's two loops give different
bits (the scalar loop's value is torch's on a one-element tensor, the vectorized loop's
torch's on a contiguous run of 32), so torch's result shows which loop computed each one.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensorweaver.contract import dtypes
from tensorweaver.contract.cpu_loops import (
    HALF_STEP,
    cached_scalar_loop_mask,
    scalar_loop_mask,
)
from tensorweaver.registry import backend_object

pytestmark = pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"),
    reason="the module models torch's AVX2 and AVX-512 loops",
)

ALPHA = 0.3


def _vector(op, *args: torch.Tensor) -> torch.Tensor:
    """op of 1-d ``args`` in torch's vectorized loop: contiguous, padded to whole steps."""
    n = args[0].numel()
    pad = -n % HALF_STEP + HALF_STEP
    return op(*(torch.cat([a, a[:1].expand(pad)]) for a in args))[:n]


def _scalar(op, *args: torch.Tensor) -> torch.Tensor:
    """op of 1-d ``args`` in torch's scalar loop: one element a call."""
    return torch.cat([op(*(a[i : i + 1] for a in args)) for i in range(args[0].numel())])


def _add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.add(x, y, alpha=ALPHA)


def _telling(op, pools: list[torch.Tensor]) -> list[torch.Tensor]:
    """The elements of ``pools`` (1-d, one per operand) where torch's two loops differ."""
    differ = _scalar(op, *pools) != _vector(op, *pools)
    return [p[differ] for p in pools]


def _observed(op, operands: list[torch.Tensor]) -> np.ndarray:
    """True where torch computed op's element in its scalar loop (every element tells)."""
    got = op(*operands)
    flat = [o.broadcast_to(got.shape).reshape(-1) for o in operands]
    scalar, vector = _scalar(op, *flat), _vector(op, *flat)
    assert bool(((got.reshape(-1) == scalar) != (got.reshape(-1) == vector)).all())
    return (got.reshape(-1) == scalar).reshape(got.shape).numpy()


def _layouts(values: torch.Tensor, shape: tuple[int, ...]) -> list[torch.Tensor]:
    """``values`` over ``shape`` in several memory layouts (each a view holding them in the
    same logical order: torch has no flipped views)."""
    logical = values[: int(np.prod(shape))].reshape(shape)
    ranks = list(range(len(shape)))
    views = [logical]
    for order in (ranks[::-1], ranks[1:] + ranks[:1]):
        back = np.argsort(order).tolist()
        views.append(logical.permute(order).contiguous().permute(back))
    wide = torch.zeros((*shape[:-1], 2 * shape[-1]), dtype=values.dtype)
    wide[..., ::2] = logical
    views.append(wide[..., ::2])
    return views


def _predicted(shape: tuple[int, ...], operands: list[torch.Tensor]) -> np.ndarray:
    mask = scalar_loop_mask(shape, [o.broadcast_to(shape).stride() for o in operands])
    return np.zeros(shape, bool) if mask is None else np.broadcast_to(mask, shape)


# lengths whose remainders by 16, 32 and 64 differ, and multiples of 32
SHAPES = [(100,), (50,), (96,), (10, 10), (4, 20), (8, 12), (3, 33), (5, 1, 40), (2, 3, 9)]


@pytest.fixture(scope="module")
def rsqrt_values() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    pool = torch.rand(3000, generator=g).mul(100).half()
    (values,) = _telling(torch.rsqrt, [pool])
    return values


@pytest.fixture(scope="module")
def add_values() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    pools = [torch.randn(3000, generator=g).half() for _ in range(2)]
    return _telling(_add, pools)


@pytest.mark.parametrize("shape", SHAPES)
def test_rsqrt_scalar_elements_are_torchs(rsqrt_values: torch.Tensor, shape: tuple) -> None:
    for x in _layouts(rsqrt_values, shape):
        want = _observed(torch.rsqrt, [x])
        assert (_predicted(shape, [x]) == want).all(), (shape, x.stride())


@pytest.mark.parametrize("shape", SHAPES)
def test_add_alpha_scalar_elements_are_torchs(add_values: list, shape: tuple) -> None:
    xs, ys = (_layouts(v, shape) for v in add_values)
    for x in xs:
        for y in (ys[0], ys[1], ys[-1]):
            want = _observed(_add, [x, y])
            assert (_predicted(shape, [x, y]) == want).all(), (shape, x.stride(), y.stride())


@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("shape", [(10, 10), (4, 20), (3, 33)])
def test_add_alpha_broadcast_operand(shape: tuple, first: bool) -> None:
    # y broadcast along either dimension (it stays put there), as add's first or second operand
    g = torch.Generator().manual_seed(2)
    pool = torch.randn(600, generator=g).half()
    for dim in (0, 1):
        y = torch.randn([1 if d == dim else s for d, s in enumerate(shape)], generator=g).half()

        def order(x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
            return [y, x] if first else [x, y]

        # each element's x tells the loops apart for the y it meets
        telling = {float(v): _telling(_add, order(pool, v.expand(len(pool)))) for v in y.view(-1)}
        met = y.expand(shape).reshape(-1).tolist()
        pick = [telling[v][1 if first else 0] for v in met]
        xs = torch.stack([p[i % len(p)] for i, p in enumerate(pick)])
        for x in _layouts(xs, shape):
            want = _observed(_add, order(x, y))
            assert (_predicted(shape, order(x, y)) == want).all(), (shape, dim, x.stride())


def test_byte_strides_and_cached_native_masks_agree() -> None:
    shape, strides = (5, 1, 40), ((40, 40, 1), (0, 0, 1))
    want = scalar_loop_mask(shape, strides)
    in_bytes = tuple(tuple(2 * s for s in st) for st in strides)
    assert np.array_equal(scalar_loop_mask(shape, in_bytes, itemsize=2), want)
    host = cached_scalar_loop_mask(shape, in_bytes, itemsize=2)
    assert host is cached_scalar_loop_mask(shape, in_bytes, itemsize=2)  # kept
    assert not host.flags.writeable  # shared between callers
    for name in ("numpy", "torch:cpu"):
        backend = backend_object(name)
        native = cached_scalar_loop_mask(shape, strides, backend=backend)
        assert np.array_equal(backend.to_host(native), want)
        assert backend.to_host(native).dtype == np.dtype(dtypes.bool_.numpy_name)
