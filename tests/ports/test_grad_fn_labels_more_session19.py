"""The grad_fn a result prints (``type(y.grad_fn).__name__``) is PyTorch 2.13's for vector
products, 0-d tensor operands of ``-`` and ``**``, addcmul/addcdiv/square, the smooth-L1,
Huber, NLL and cross-entropy losses, the batch/group/layer/instance norms, the distances,
and ``.T`` of tensors under two dimensions; the label leaves values and gradients as they
were (compared with PyTorch's).

Before the nineteenth session's second fix: a 1-d @ 1-d product and ``tw.dot`` printed
``SumBackward0`` (torch ``DotBackward0``), matrix @ vector ``SqueezeBackward1`` (torch
``MvBackward0``; vector @ matrix ``SqueezeBackward4``, batched ``UnsafeViewBackward0``);
``x ** tensor(2.)`` ``PowBackward0`` and ``tensor(2.) ** x`` ``PowBackward2`` (torch
``PowBackward1``); ``tensor(2.) - x`` ``RsubBackward1`` (torch ``SubBackward0``); addcmul and
addcdiv ``AddBackward0``; square ``MulBackward0`` (torch ``PowBackward0``); smooth_l1_loss
and huber_loss ``MeanBackward0``/``WhereBackward0``; nll_loss of a 3-d to 5-d input
``DivBackward0``/``NegBackward0`` (torch ``NllLoss2DBackward0``, or ``ViewBackward0``
unreduced where it is not 4-d); unreduced cross_entropy of an image ``MulBackward0``;
group_norm ``ViewBackward0``/``AddBackward0``, batch_norm ``MulBackward0``/``AddBackward0``
(torch ``NativeGroupNormBackward0``, ``NativeBatchNormBackward0``); pairwise_distance
``MaskedFillBackward0`` (torch ``NormBackward1``); cosine_similarity of vectors
``SumBackward0``; and ``x.T`` of a 0-d or 1-d ``x`` was ``x`` itself, with no node (torch:
a view, ``PermuteBackward0``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from grad_fn_label_harness import assert_label_values_and_gradients_match_torch
from tw_backends import entered

_M = (3, 4)
_IMAGE = (2, 3, 2, 2)


def _f(m: Any) -> Any:
    return m.nn.functional


def _classes(m: Any, shape: tuple) -> Any:
    """Class-index targets for an ``(N, C, ...)`` input (or a ``(C,)`` one) of ``shape``."""
    size, classes = (shape[:1] + shape[2:], shape[1]) if len(shape) > 1 else ((), shape[0])
    return m.tensor(np.arange(int(np.prod(size))).reshape(size) % classes)


def _nll(shape: tuple, reduction: str) -> tuple:
    return (lambda m, a: _f(m).nll_loss(a, _classes(m, shape), reduction=reduction), shape)


def _stats(m: Any) -> tuple:
    return m.zeros(4, dtype=m.float64), m.ones(4, dtype=m.float64) * 1.5


def _const(m: Any) -> Any:
    return m.tensor(1.5, dtype=m.float64)


#: name: (fn(library, *operands), operand shapes); operands are float64 and require grad
_CASES: dict[str, tuple] = {
    "vector_at_vector": (lambda m, a, b: a @ b, (4,), (4,)),
    "matrix_at_vector": (lambda m, a, b: a @ b, _M, (4,)),
    "vector_at_matrix": (lambda m, a, b: a @ b, (3,), _M),
    "batch_at_vector": (lambda m, a, b: a @ b, (2, 3, 4), (4,)),
    "vector_at_batch": (lambda m, a, b: a @ b, (3,), (2, 3, 4)),
    "dot": (lambda m, a, b: m.dot(a, b), (4,), (4,)),
    "pow_0d_exponent": (lambda m, a: a.exp() ** _const(m), _M),
    "pow_0d_base": (lambda m, a: _const(m) ** a, _M),
    "pow_0d_exponent_with_grad": (lambda m, a, b: a.exp() ** b, _M, ()),
    "sub_from_0d": (lambda m, a: _const(m) - a, _M),
    "sub_from_0d_of_0d": (lambda m, a: _const(m) - a, ()),
    "sub_from_0d_alpha": (lambda m, a: m.sub(_const(m), a, alpha=2), _M),
    "sub_from_int_0d": (lambda m, a: m.tensor(2) - a, _M),
    "sub_from_number": (lambda m, a: 1.5 - a, _M),
    "addcmul": (lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), _M, _M, (4,)),
    "addcmul_inplace": (lambda m, a, b, c: a.clone().addcmul_(b, c), _M, _M, _M),
    "addcdiv": (lambda m, a, b, c: m.addcdiv(a, b, c.exp(), value=0.5), _M, _M, _M),
    "square": (lambda m, a: m.square(a), _M),
    "smooth_l1": (lambda m, a, b: _f(m).smooth_l1_loss(a, b, beta=0.5), _M, _M),
    "smooth_l1_none": (lambda m, a, b: _f(m).smooth_l1_loss(a, b, reduction="none"), _M, _M),
    "smooth_l1_beta0": (lambda m, a, b: _f(m).smooth_l1_loss(a, b, beta=0.0), _M, _M),
    "huber": (lambda m, a, b: _f(m).huber_loss(a, b, delta=0.5), _M, _M),
    "huber_sum": (lambda m, a, b: _f(m).huber_loss(a, b, reduction="sum"), _M, _M),
    "huber_weighted": (
        lambda m, a, b: _f(m).huber_loss(a, b, weight=m.ones(_M, dtype=m.float64) * 2),
        _M,
        _M,
    ),
    "nll_unbatched_none": _nll((4,), "none"),
    "nll_3d": _nll((2, 3, 2), "mean"),
    "nll_3d_none": _nll((2, 3, 2), "none"),
    "nll_4d": _nll(_IMAGE, "mean"),
    "nll_4d_none": _nll(_IMAGE, "none"),
    "nll_5d_sum": _nll((2, 3, 2, 1, 2), "sum"),
    "nll_5d_none": _nll((2, 3, 2, 1, 2), "none"),
    "nll_weighted_4d": (
        lambda m, a: _f(m).nll_loss(a, _classes(m, _IMAGE), weight=m.ones(3, dtype=m.float64)),
        _IMAGE,
    ),
    "cross_entropy_3d_none": (
        lambda m, a: _f(m).cross_entropy(a, _classes(m, (2, 3, 2)), reduction="none"),
        (2, 3, 2),
    ),
    "cross_entropy_4d_sum": (
        lambda m, a: _f(m).cross_entropy(a, _classes(m, _IMAGE), reduction="sum"),
        _IMAGE,
    ),
    "cross_entropy_unbatched_none": (
        lambda m, a: _f(m).cross_entropy(a, m.tensor(1), reduction="none"),
        (4,),
    ),
    "cross_entropy_smoothing_unbatched_none": (
        lambda m, a: _f(m).cross_entropy(a, m.tensor(1), reduction="none", label_smoothing=0.1),
        (4,),
    ),
    "cross_entropy_probabilities": (
        lambda m, a, b: _f(m).cross_entropy(a, b.softmax(1)),
        _M,
        _M,
    ),
    "cross_entropy_probabilities_sum": (
        lambda m, a, b: _f(m).cross_entropy(a, b.softmax(1), reduction="sum"),
        _M,
        _M,
    ),
    "group_norm": (lambda m, a: _f(m).group_norm(a, 2), (2, 4, 3)),
    "group_norm_affine": (lambda m, a, w, b: _f(m).group_norm(a, 2, w, b), (2, 4, 3), (4,), (4,)),
    "batch_norm_train": (lambda m, a: _f(m).batch_norm(a, None, None, training=True), (3, 4)),
    "batch_norm_train_affine": (
        lambda m, a, w, b: _f(m).batch_norm(a, *_stats(m), w, b, training=True),
        (3, 4, 2),
        (4,),
        (4,),
    ),
    "batch_norm_eval": (lambda m, a: _f(m).batch_norm(a, *_stats(m)), (3, 4)),
    "batch_norm_eval_affine": (
        lambda m, a, w, b: _f(m).batch_norm(a, *_stats(m), w, b),
        (3, 4),
        (4,),
        (4,),
    ),
    "batch_norm_module": (lambda m, a: m.nn.BatchNorm1d(4).double()(a), (3, 4, 2)),
    "layer_norm_affine": (lambda m, a, w, b: _f(m).layer_norm(a, (3,), w, b), (2, 3), (3,), (3,)),
    "instance_norm_running_stats": (
        lambda m, a: _f(m).instance_norm(a, *_stats(m), use_input_stats=False),
        (2, 4, 3),
    ),
    "pairwise_distance": (lambda m, a, b: _f(m).pairwise_distance(a, b), _M, _M),
    "pairwise_distance_p1": (lambda m, a, b: _f(m).pairwise_distance(a, b, p=1.0), _M, _M),
    "pairwise_distance_inf": (
        lambda m, a, b: _f(m).pairwise_distance(a, b, p=float("inf"), keepdim=True),
        _M,
        _M,
    ),
    "pairwise_distance_vectors": (lambda m, a, b: _f(m).pairwise_distance(a, b), (4,), (4,)),
    "pairwise_distance_scalars": (lambda m, a, b: _f(m).pairwise_distance(a, b), (), ()),
    "cosine_similarity_vectors": (
        lambda m, a, b: _f(m).cosine_similarity(a, b, dim=0),
        (4,),
        (4,),
    ),
    "T_of_0d": (lambda m, a: a.T, ()),
    "T_of_1d": (lambda m, a: a.T, (4,)),
}

_RNG = np.random.default_rng(1920)


@pytest.mark.filterwarnings("ignore::UserWarning")  # (torch's .T of a 0-d or 1-d tensor)
@pytest.mark.parametrize("name", list(_CASES))
def test_grad_fn_label_values_and_gradients_match_torch(spec: str, name: str) -> None:
    arrays = [_RNG.standard_normal(shape) for shape in _CASES[name][1:]]
    assert_label_values_and_gradients_match_torch(spec, _CASES[name][0], arrays)


#: The same in float16 and mixed precision (float16 input, float32 parameters): the label only
_HALF_CASES: dict[str, Any] = {
    "addcmul": lambda m, a: m.addcmul(a, a, a),
    "addcdiv": lambda m, a: m.addcdiv(a, a, a.exp()),
    "smooth_l1": lambda m, a: _f(m).smooth_l1_loss(a, a.flip(0)),
    "huber": lambda m, a: _f(m).huber_loss(a, a.flip(0)),
    "group_norm": lambda m, a: _f(m).group_norm(a, 2),
    "group_norm_mixed": lambda m, a: _f(m).group_norm(a, 2, m.ones(4), m.zeros(4)),
    "batch_norm": lambda m, a: _f(m).batch_norm(a, None, None, training=True),
    "batch_norm_mixed": lambda m, a: _f(m).batch_norm(a, m.zeros(4), m.ones(4), m.ones(4)),
    "layer_norm": lambda m, a: _f(m).layer_norm(a, (2,)),
    "instance_norm_mixed": lambda m, a: _f(m).instance_norm(a, weight=m.ones(4)),
}


@pytest.mark.parametrize("name", list(_HALF_CASES))
def test_half_precision_labels_match_torch(spec: str, name: str) -> None:
    x = _RNG.standard_normal((3, 4, 2))

    def label(m: Any) -> str:
        a = m.tensor(x, dtype=m.float16, requires_grad=True)
        return type(_HALF_CASES[name](m, a).grad_fn).__name__

    expected = label(torch)
    with entered(spec):
        assert label(tw) == expected
