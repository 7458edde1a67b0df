"""The grad_fn a result prints (``type(y.grad_fn).__name__``) is PyTorch 2.13's for the
composite ops the core builds from several primitives, with the values and the gradients of
the inputs unchanged by the label; the deprecated ``Module.register_backward_hook``; and an
optimizer state of another shape than its parameter, which raises PyTorch's RuntimeError.

Before the nineteenth session's fixes: mse_loss printed ``MeanBackward0`` (torch
``MseLossBackward0``), pad ``CatBackward0``, a batched conv1d ``SqueezeBackward1``, pools
``AvgPoolBackward0`` (torch ``AvgPool2DBackward0``; its 1-d pools ``SqueezeBackward1``),
interpolate's decomposed modes ``IndexSelectBackward0``, addmm ``AddBackward0``, sort
``GatherBackward0``, topk and diagonal ``SliceBackward0``, x.mT ``PermuteBackward0``, unbind
``SqueezeBackward1``, a copying reshape ``ViewBackward0``, x[i] = v ``ViewBackward0``
(torch ``CopySlices``, ``IndexPutBackward0``, ``FillBackward3`` or ``CopyBackwards`` by the
index); register_backward_hook was missing; the NumPy backend's optimizer step raised NumPy's
ValueError. The sweep of that session also relabelled take, rot90, block_diag, renorm,
masked_select, index_add/copy/fill, cummax/cummin, fmod, frac, nansum, var_mean, std_mean,
aminmax, binary_cross_entropy, multi_margin_loss, pixel_(un)shuffle, prelu, unfold, fold,
affine_grid, kron, instance_norm, lp_pool and polar; and addmm(beta=0) (with addmv, addr,
baddbmm, addbmm) gave its input no gradient (None; torch: zeros).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from grad_fn_label_harness import assert_label_values_and_gradients_match_torch
from tw_backends import entered

_RNG = np.random.default_rng(1919)
_M = (3, 4)


def _written(index: Callable[[Any], Any], value: Callable[[Any], Any] | None = None) -> Any:
    """``y[index] = value`` into a copy of the first operand (a number where no value)."""

    def fn(m: Any, a: Any) -> Any:
        y = a.clone()
        y[index(m)] = 1.5 if value is None else value(m)
        return y

    return fn


def _row(m: Any) -> Any:
    return m.ones(4, dtype=m.float64)


def _f(m: Any) -> Any:
    return m.nn.functional


#: name: (fn(library, *operands), operand shapes)
_CASES: dict[str, tuple] = {
    "mse_loss": (lambda m, a, b: _f(m).mse_loss(a, b), _M, _M),
    "mse_loss_none": (lambda m, a, b: _f(m).mse_loss(a, b, reduction="none"), _M, _M),
    "bce_with_logits": (
        lambda m, a, b: _f(m).binary_cross_entropy_with_logits(a, b.sigmoid()),
        _M,
        _M,
    ),
    "pad_constant": (lambda m, a: _f(m).pad(a, (1, 2)), _M),
    "pad_reflect_2d": (lambda m, a: _f(m).pad(a, (1, 1, 1, 0), mode="reflect"), (1, 2, 4, 4)),
    "pad_replicate_1d": (lambda m, a: _f(m).pad(a, (2, 1), mode="replicate"), (1, 2, 4)),
    "pad_replicate_3d": (
        lambda m, a: _f(m).pad(a, (1,) * 6, mode="replicate"),
        (1, 1, 2, 3, 3),
    ),
    "pad_circular": (lambda m, a: _f(m).pad(a, (1, 1), mode="circular"), (1, 2, 4)),
    "conv1d": (lambda m, a, w: _f(m).conv1d(a, w), (2, 3, 6), (4, 3, 2)),
    "conv1d_unbatched": (lambda m, a, w: _f(m).conv1d(a, w), (3, 6), (4, 3, 2)),
    "conv_transpose1d": (lambda m, a, w: _f(m).conv_transpose1d(a, w), (1, 3, 6), (3, 4, 2)),
    "avg_pool1d": (lambda m, a: _f(m).avg_pool1d(a, 2), (1, 2, 6)),
    "avg_pool2d": (lambda m, a: _f(m).avg_pool2d(a, 2), (1, 2, 4, 4)),
    "avg_pool2d_unbatched": (lambda m, a: _f(m).avg_pool2d(a, 2), (2, 4, 4)),
    "avg_pool3d": (lambda m, a: _f(m).avg_pool3d(a, 2), (1, 1, 4, 4, 4)),
    "max_pool1d": (lambda m, a: _f(m).max_pool1d(a, 2), (1, 2, 6)),
    "max_pool3d_unbatched": (lambda m, a: _f(m).max_pool3d(a, 2), (1, 4, 4, 4)),
    "max_pool2d_indices": (
        lambda m, a: _f(m).max_pool2d(a, 2, return_indices=True)[0],
        (1, 2, 4, 4),
    ),
    "adaptive_avg_pool1d": (lambda m, a: _f(m).adaptive_avg_pool1d(a, 2), (1, 2, 6)),
    "adaptive_avg_pool2d": (lambda m, a: _f(m).adaptive_avg_pool2d(a, 2), (2, 4, 4)),
    "adaptive_max_pool2d": (lambda m, a: _f(m).adaptive_max_pool2d(a, 2), (1, 2, 4, 4)),
    "adaptive_max_pool3d_indices": (
        lambda m, a: _f(m).adaptive_max_pool3d(a, 2, return_indices=True)[0],
        (1, 1, 4, 4, 4),
    ),
    "interpolate_nearest_1d": (lambda m, a: _f(m).interpolate(a, scale_factor=2.0), (1, 2, 3)),
    "interpolate_area_1d": (
        lambda m, a: _f(m).interpolate(a, scale_factor=0.5, mode="area"),
        (1, 2, 6),
    ),
    "interpolate_bilinear": (
        lambda m, a: _f(m).interpolate(a, scale_factor=1.5, mode="bilinear"),
        (1, 1, 3, 3),
    ),
    "addmm": (lambda m, a, b, c: m.addmm(a, b, c), (3, 2), _M, (4, 2)),
    "addmm_beta0": (lambda m, a, b, c: m.addmm(a, b, c, beta=0, alpha=2), (3, 2), _M, (4, 2)),
    "addmv": (lambda m, a, b, c: m.addmv(a, b, c), (3,), _M, (4,)),
    "addr": (lambda m, a, b, c: m.addr(a, b, c), _M, (3,), (4,)),
    "baddbmm": (lambda m, a, b, c: m.baddbmm(a, b, c), (2, 3, 5), (2, 3, 4), (2, 4, 5)),
    "addbmm": (lambda m, a, b, c: m.addbmm(a, b, c), (3, 5), (2, 3, 4), (2, 4, 5)),
    "mv": (lambda m, a, b: m.mv(a, b), _M, (4,)),
    "sort": (lambda m, a: a.sort(1).values, _M),
    "sort_stable": (lambda m, a: m.sort(a, stable=True, descending=True)[0], _M),
    "msort": (lambda m, a: m.msort(a), _M),
    "topk": (lambda m, a: a.topk(2).values, _M),
    "diagonal": (lambda m, a: a.diagonal(1), _M),
    "diag_of_matrix": (lambda m, a: m.diag(a), _M),
    "diag_of_vector": (lambda m, a: m.diag(a), (4,)),
    "diag_embed": (lambda m, a: m.diag_embed(a), (2, 3)),
    "trace": (lambda m, a: m.trace(a), _M),
    "mT": (lambda m, a: a.mT, (2, 3, 4)),
    "mH": (lambda m, a: a.mH, _M),
    "H": (lambda m, a: a.H, _M),
    "adjoint": (lambda m, a: a.adjoint(), _M),
    "unbind": (lambda m, a: a.unbind(1)[2], _M),
    "reshape_copy": (lambda m, a: a.t().reshape(12), _M),
    "flatten_copy": (lambda m, a: a.t().flatten(), _M),
    "reshape_view": (lambda m, a: a.reshape(2, 6), _M),
    "setitem_int": (_written(lambda m: 0), _M),
    "setitem_slice": (_written(lambda m: (slice(None), slice(1, 3))), _M),
    "setitem_negative_start": (_written(lambda m: slice(-3, None)), _M),
    "setitem_whole_number": (_written(lambda m: slice(None)), _M),
    "setitem_ellipsis_tensor": (_written(lambda m: Ellipsis, _row), _M),
    "setitem_mask": (_written(lambda m: m.tensor([True, False, True])), _M),
    "setitem_list": (_written(lambda m: [0, 2], _row), _M),
    "setitem_index_then_whole": (_written(lambda m: (m.tensor([0, 2]), slice(None))), _M),
    "setitem_none_then_index": (_written(lambda m: (None, [0])), _M),
    "rot90": (lambda m, a: m.rot90(a, 2), _M),
    "take": (lambda m, a: m.take(a, m.tensor([1, 3])), _M),
    "block_diag": (lambda m, a, b: m.block_diag(a, b), _M, (2,)),
    "renorm": (lambda m, a: a.renorm(2, 0, 1.0), _M),
    "masked_select": (lambda m, a: a.masked_select(m.tensor([True, False, True, True])), _M),
    "index_add": (lambda m, a, b: a.index_add(0, m.tensor([0, 2]), b), _M, (2, 4)),
    "index_copy": (lambda m, a, b: a.index_copy(0, m.tensor([0, 2]), b), _M, (2, 4)),
    "index_fill": (lambda m, a: a.index_fill(0, m.tensor([0, 2]), 1.0), _M),
    "index_fill_tensor": (
        lambda m, a: a.index_fill(1, m.tensor([1]), m.tensor(2.0, dtype=m.float64)),
        _M,
    ),
    "cummin": (lambda m, a: a.cummin(1).values, _M),
    "fmod": (lambda m, a: a.fmod(0.7), _M),
    "fmod_tensor": (lambda m, a: a.fmod(m.tensor(0.7, dtype=m.float64)), _M),
    "frac": (lambda m, a: a.frac(), _M),
    "nansum": (lambda m, a: a.nansum(1), _M),
    "var_mean": (lambda m, a: m.var_mean(a, 1)[0], _M),
    "std_mean_mean": (lambda m, a: m.std_mean(a)[1], _M),
    "aminmax": (lambda m, a: m.aminmax(a, dim=1).max, _M),
    "bce": (lambda m, a, b: _f(m).binary_cross_entropy(a.sigmoid(), b.sigmoid()), _M, _M),
    "pixel_shuffle": (lambda m, a: _f(m).pixel_shuffle(a, 2), (1, 4, 2, 3)),
    "pixel_unshuffle": (lambda m, a: _f(m).pixel_unshuffle(a, 2), (4, 2, 4)),
    "prelu": (lambda m, a, w: _f(m).prelu(a, w), (2, 3, 2), (3,)),
    "unfold": (lambda m, a: _f(m).unfold(a, 2), (2, 3, 3)),
    "fold": (lambda m, a: _f(m).fold(a, (3, 3), 2), (1, 4, 4)),
    "affine_grid": (
        lambda m, a: _f(m).affine_grid(a, (1, 1, 2, 3), align_corners=False),
        (1, 2, 3),
    ),
    "multi_margin_loss": (lambda m, a: _f(m).multi_margin_loss(a, m.tensor([0, 1, 3])), _M),
    "kron": (lambda m, a, b: m.kron(a, b), _M, (2, 2)),
    "instance_norm": (lambda m, a: _f(m).instance_norm(a), (2, 3, 4)),
    "lp_pool1d": (lambda m, a: _f(m).lp_pool1d(a, 2, 2), (1, 2, 6)),
    "setitem_through_a_view": (lambda m, a: (lambda y: (y[1].mul_(2), y)[1])(a.clone()), _M),
}


_WEIGHTS = np.random.default_rng(7).standard_normal(256)


@pytest.mark.parametrize("name", list(_CASES))
def test_grad_fn_label_values_and_gradients_match_torch(spec: str, name: str) -> None:
    arrays = [_RNG.standard_normal(shape) for shape in _CASES[name][1:]]
    # (this file's tolerances: NumPy's default rtol, no atol on the values)
    assert_label_values_and_gradients_match_torch(
        spec, _CASES[name][0], arrays, weights=_WEIGHTS, rtol=1e-7, atol=0, grad_rtol=1e-7
    )


# -- Module.register_backward_hook (PyTorch's deprecated, non-full form) ------------------


def _hooked_relu(m: Any, upstream: bool) -> tuple:
    """ReLU whose non-full hook records the gradients and doubles its grad_input; the input
    a leaf, or (``upstream``) the output of a node the ReLU node takes directly."""
    seen: list = []
    relu = m.nn.ReLU()
    relu.register_backward_hook(
        lambda mod, gi, go: (
            seen.append([mod is relu, gi[0].tolist(), go[0].tolist()]) or (gi[0] * 2,)
        )
    )
    x = m.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=m.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = relu(x * 3 if upstream else x)
    (y * m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)).sum().backward()
    return seen, x.grad.tolist(), [w.category.__name__ for w in caught]


@pytest.mark.parametrize("upstream", [False, True], ids=["leaf_input", "node_input"])
def test_register_backward_hook_runs_replaces_and_warns_as_torch(spec: str, upstream: bool) -> None:
    expected = _hooked_relu(torch, upstream)
    with entered(spec):
        assert _hooked_relu(tw, upstream) == expected


@pytest.mark.parametrize("first", ["full", "non_full"])
def test_backward_hooks_of_both_kinds_on_one_module_raise(spec: str, first: str) -> None:
    def mixed(m: Any) -> None:
        lin = m.nn.Linear(2, 1)
        kinds = [lin.register_full_backward_hook, lin.register_backward_hook]
        if first == "non_full":
            kinds.reverse()
        kinds[0](lambda *a: None)
        kinds[1](lambda *a: None)

    with pytest.raises(RuntimeError, match="both regular backward hooks and full"):
        mixed(torch)
    with entered(spec), pytest.raises(RuntimeError, match="both regular backward hooks and full"):
        mixed(tw)


# -- an optimizer state of another shape ----------------------------------------------------


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("size", [3, 70_000], ids=["rebound", "written_in_place"])
def test_state_of_another_shape_raises_runtime_error(spec: str, optimizer: str, size: int) -> None:
    """A state loaded from a model whose parameter had another shape: PyTorch's step raises
    RuntimeError (the size of tensor a must match that of b); tensors of 65536 elements and
    more are written in place, the others rebound."""

    def step(m: Any) -> None:
        options = {"momentum": 0.9} if optimizer == "SGD" else {}
        a = m.zeros(size - 1, dtype=m.float64, requires_grad=True)
        first = getattr(m.optim, optimizer)([a], lr=0.1, **options)
        a.grad = m.ones(size - 1, dtype=m.float64)
        first.step()
        b = m.zeros(size, dtype=m.float64, requires_grad=True)
        second = getattr(m.optim, optimizer)([b], lr=0.1, **options)
        second.load_state_dict(first.state_dict())
        b.grad = m.ones(size, dtype=m.float64)
        second.step()

    with pytest.raises(RuntimeError, match="size of tensor a"):
        step(torch)
    with entered(spec), pytest.raises(RuntimeError, match=r"size of tensor a .* tensor b"):
        step(tw)
