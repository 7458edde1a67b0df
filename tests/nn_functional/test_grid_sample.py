"""grid_sample (every mode and padding mode, 4-D and 5-D, align_corners) and affine_grid
against torch.nn.functional in float64: outputs and gradients of the input and the grid."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import check, gradcheck, randn
from tw_backends import entered


def grid(*shape: int, seed: int = 3, reach: float = 1.3) -> np.ndarray:
    """Positions partly outside [-1, 1], where the padding modes differ."""
    return np.random.default_rng(seed).uniform(-reach, reach, shape)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_4d(backend: str, mode: str, padding_mode: str, align_corners: bool) -> None:
    # nearest: the grid's gradient is zero (PyTorch's too); checked for the input only
    check(
        lambda F, x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
        randn(2, 3, 5, 7),
        grid(2, 4, 6, 2),
        grad=(0,) if mode == "nearest" else None,
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d(backend: str, mode: str, padding_mode: str, align_corners: bool) -> None:
    check(
        lambda F, x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
        randn(1, 2, 3, 4, 5),
        grid(1, 3, 2, 4, 3),
        grad=(0,) if mode == "nearest" else None,
    )


def test_grid_sample_single_pixel_axis(backend: str) -> None:
    check(
        lambda F, x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=True),
        randn(1, 2, 1, 4),
        grid(1, 3, 3, 2),
    )


def test_grid_sample_float32_within_float32_tolerance(backend: str) -> None:
    check(
        lambda F, x, g: F.grid_sample(x, g, mode="bicubic", align_corners=False),
        randn(2, 3, 5, 6).astype("float32"),
        grid(2, 3, 4, 2).astype("float32"),
        rtol=1e-5,
        atol=1e-5,
    )


def test_gradcheck_grid_sample(backend: str) -> None:
    gradcheck(
        lambda F, x, g: F.grid_sample(x, g, padding_mode="border", align_corners=False),
        randn(1, 2, 4, 5),
        grid(1, 3, 2, 2, reach=0.9),
    )


@pytest.mark.filterwarnings("ignore:.*affine_grid")  # a unit-size axis with align_corners
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 2, 3, 4, 5), (1, 1, 2, 1, 3)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(backend: str, size: tuple, align_corners: bool) -> None:
    rank = len(size) - 2
    check(
        lambda F, t: F.affine_grid(t, size, align_corners=align_corners),
        randn(size[0], rank, rank + 1),
    )


def test_affine_grid_then_grid_sample_rotates(backend: str) -> None:
    theta = np.array([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]])  # a quarter turn
    check(
        lambda F, x, t: F.grid_sample(
            x, F.affine_grid(t, (1, 2, 4, 4), align_corners=False), align_corners=False
        ),
        randn(1, 2, 4, 4),
        theta,
    )


def test_affine_grid_warns_for_unit_axes_with_align_corners(backend: str) -> None:
    with pytest.warns(UserWarning, match="axis of size 1"):
        tw.nn.functional.affine_grid(tw.zeros(1, 2, 3), (1, 1, 1, 4), align_corners=True)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda F: F.grid_sample(tw.ones(1, 1, 3, 3), tw.ones(1, 2, 2, 3)), RuntimeError,
         r"expected a grid of shape \(N, \*out, 2\)"),
        (lambda F: F.grid_sample(tw.ones(2, 1, 3, 3), tw.ones(1, 2, 2, 2)), RuntimeError,
         "with the input's batch size"),
        (lambda F: F.grid_sample(tw.ones(1, 1, 3, 3), tw.ones(1, 2, 2, 2), mode="cubic"),
         ValueError, "mode must be"),
        (lambda F: F.grid_sample(tw.ones(1, 1, 3, 3), tw.ones(1, 2, 2, 2), padding_mode="wrap"),
         ValueError, "padding_mode must be"),
        (lambda F: F.grid_sample(tw.ones(1, 1, 2, 3, 3), tw.ones(1, 1, 2, 2, 3), mode="bicubic"),
         RuntimeError, "bicubic interpolation needs a 4-D input"),
        (lambda F: F.grid_sample(tw.ones(1, 1, 3, 3), tw.ones(1, 2, 2, 2, dtype=tw.float64)),
         RuntimeError, "of one dtype"),
        (lambda F: F.affine_grid(tw.ones(2, 2, 3), (1, 1, 3, 3)), RuntimeError,
         r"expected theta of shape \(1, 2, 3\)"),
        (lambda F: F.affine_grid(tw.ones(1, 2, 3), (1, 3)), NotImplementedError,
         "only 4-D and 5-D sizes"),
    ],
)  # fmt: skip
def test_errors(backend: str, call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call(tw.nn.functional)


def test_grid_sample_on_cunumeric() -> None:
    with entered("cunumeric"):
        check(
            lambda F, x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=False),
            randn(1, 2, 4, 5),
            grid(1, 3, 2, 2),
        )
