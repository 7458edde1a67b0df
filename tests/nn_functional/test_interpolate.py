"""interpolate (every mode, size or scale_factor, align_corners, recompute_scale_factor) and
the deprecated upsample aliases against torch.nn.functional in float64 and float32."""

from __future__ import annotations

import pytest
import tensorweaver as tw
from functional_reference import check, randn
from tw_backends import entered

SHAPES = {"linear": (2, 3, 7), "bilinear": (2, 2, 5, 7), "bicubic": (1, 2, 5, 6),
          "trilinear": (1, 2, 3, 4, 5)}  # fmt: skip
SIZES = [
    {"size": 11},
    {"size": 3},
    {"scale_factor": 1.7},
    {"scale_factor": 0.6},
    {"scale_factor": 2.5, "recompute_scale_factor": True},
    {"scale_factor": 2},
]


@pytest.mark.parametrize("mode", list(SHAPES))
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("how", SIZES)
def test_interpolating_modes(backend: str, mode: str, align_corners: bool, how: dict) -> None:
    check(
        lambda F, x: F.interpolate(x, mode=mode, align_corners=align_corners, **how),
        randn(*SHAPES[mode]),
    )


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "area"])
@pytest.mark.parametrize("shape", [(2, 3, 7), (1, 2, 5, 7), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("how", [{"size": 9}, {"size": 2}, {"scale_factor": 1.5},
                                 {"scale_factor": 0.7}, {"scale_factor": 3}])  # fmt: skip
def test_nearest_and_area(backend: str, mode: str, shape: tuple, how: dict) -> None:
    check(lambda F, x: F.interpolate(x, mode=mode, **how), randn(*shape))


@pytest.mark.parametrize(
    ("mode", "kwargs"),
    [
        ("bilinear", {"size": (4, 9)}),
        ("bicubic", {"scale_factor": (1.5, 0.75)}),
        ("nearest", {"scale_factor": (2.0, 1.0 / 3.0)}),
        ("trilinear", {"size": (2, 5, 3), "align_corners": True}),
        ("area", {"size": (3, 1)}),
    ],
)
def test_per_axis_sizes_and_scales(backend: str, mode: str, kwargs: dict) -> None:
    shape = (1, 2, 3, 4, 5) if mode == "trilinear" else (2, 3, 6, 5)
    check(lambda F, x: F.interpolate(x, mode=mode, **kwargs), randn(*shape))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(
    "how", [{"size": (4, 5)}, {"size": (17, 3)}, {"scale_factor": 0.37}, {"size": (1, 2)}]
)
def test_antialias(backend: str, mode: str, align_corners: bool, how: dict) -> None:
    check(
        lambda F, x: F.interpolate(
            x, mode=mode, align_corners=align_corners, antialias=True, **how
        ),
        randn(2, 2, 9, 13),
    )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_float32_within_float32_tolerance(backend: str, mode: str) -> None:
    check(
        lambda F, x: F.interpolate(x, scale_factor=1.6, mode=mode),
        randn(2, 3, 5, 6).astype("float32"),
        rtol=1e-5,
        atol=1e-5,
    )


def test_integer_input_nearest(backend: str) -> None:
    x = (abs(randn(1, 2, 3, 4)) * 50).astype("uint8")
    check(lambda F, x: F.interpolate(x, scale_factor=2.5), x)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "call",
    [
        lambda F, x: F.upsample(x, scale_factor=2, mode="bilinear"),
        lambda F, x: F.upsample_nearest(x, size=(7, 3)),
        lambda F, x: F.upsample_bilinear(x, scale_factor=1.5),
    ],
)
def test_deprecated_upsample_aliases(backend: str, call) -> None:
    check(call, randn(2, 3, 4, 5))


def test_upsample_warns_it_is_deprecated(backend: str) -> None:
    with pytest.warns(UserWarning, match="upsample is deprecated"):
        tw.nn.functional.upsample(tw.ones(1, 1, 2, 2), scale_factor=2)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda F, x: F.interpolate(x, size=3, scale_factor=2), ValueError, "only one of"),
        (lambda F, x: F.interpolate(x), ValueError, "either size or scale_factor"),
        (lambda F, x: F.interpolate(x, size=3, align_corners=True), ValueError,
         "align_corners option can only be set"),
        (lambda F, x: F.interpolate(x, size=3, mode="linear"), NotImplementedError,
         "got 4D input, but linear mode needs 3D input"),
        (lambda F, x: F.interpolate(x, size=(3, 4, 5)), ValueError, "has 3 entries"),
        (lambda F, x: F.interpolate(x, size=3, recompute_scale_factor=True), ValueError,
         "recompute_scale_factor is not meaningful"),
        (lambda F, x: F.interpolate(x, size=3, mode="cubic"), NotImplementedError,
         "mode must be one of"),
        (lambda F, x: F.interpolate(x[0, 0], size=3), NotImplementedError, "only 3-D, 4-D"),
        (lambda F, x: F.interpolate(x, scale_factor=0.1), RuntimeError, "must be positive"),
        (lambda F, x: F.interpolate(x, size=3, mode="nearest", antialias=True), ValueError,
         "anti-alias option is restricted to bilinear and bicubic"),
    ],
)  # fmt: skip
def test_errors(backend: str, call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call(tw.nn.functional, tw.ones(1, 2, 4, 4))


def test_interpolate_on_cunumeric() -> None:
    with entered("cunumeric"):
        check(lambda F, x: F.interpolate(x, size=(3, 7), mode="bicubic"), randn(1, 2, 4, 5))
