"""High-rank cases for backends with a largest rank (``max_ndim``; cuPyNumeric's is 6), and a
child process that runs them on cuPyNumeric, where a rank over 6 aborts the whole process.

Every case is ``fn(m, *tensors)`` over host arrays built from its input specs, written once
for ``m = tensorweaver`` and ``m = torch`` (the same API). This module imports neither, so a
child process loads only what it runs.

* :data:`BUILDERS`: ops whose result fits in 6 dimensions but whose decomposition built
  larger intermediates; each is compared with PyTorch.
* :data:`TOO_MANY`: requests for a 7-d tensor; each must raise RuntimeError.
* :func:`sweep`: a broad set of ops on a 5-d and a 6-d input, compared with the NumPy backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

HERE = Path(__file__).parent


class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]
    #: one per tensor: a shape (float64 normal samples) or ("int", shape, high)
    specs: tuple = ()


def host_inputs(case: Case) -> list[np.ndarray]:
    """The case's input arrays, the same in every process (seeded by the case's name)."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    arrays = []
    for spec in case.specs:
        if spec and spec[0] == "int":
            arrays.append(rng.integers(0, spec[2], spec[1]).astype(np.int64))
        else:
            arrays.append(rng.standard_normal(spec))
    return arrays


def run(m: Any, case: Case) -> list[np.ndarray]:
    """The case's results on library ``m`` (on its current default device), as host arrays."""
    out = case.fn(m, *(m.tensor(a) for a in host_inputs(case)))
    parts = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(p.detach().numpy()) for p in parts]


def grads(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The gradient of ``sum(fn(...) ** 2)`` with respect to every float input."""

    def gradients(m: Any, *tensors: Any) -> Any:
        floats = [t.requires_grad_() for t in tensors if t.is_floating_point()]
        return m.autograd.grad((fn(m, *tensors) ** 2).sum(), floats)

    return gradients


def _cdist(p: float) -> Callable[..., Any]:
    return lambda m, x, y: m.cdist(x, y, p=p)


def _gqa(m: Any, q: Any, k: Any, v: Any) -> Any:
    return m.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def kron(m: Any, a: Any, b: Any) -> Any:
    return m.kron(a, b)


_CDIST_SHAPES = ((2, 1, 2, 1, 3, 2), (1, 2, 1, 2, 4, 2))

BUILDERS: list[Case] = [
    Case("repeat (issue 12)", lambda m, x: x.repeat(2, 4, 3, 4), ((4, 6, 3),)),
    Case("repeat 6-d", lambda m, x: x.repeat(2, 2, 2, 2, 2, 2), ((1, 2, 1, 2, 1, 2),)),
    Case("repeat 3-d to 6-d", lambda m, x: x.repeat(2, 1, 2, 3, 1, 2), ((2, 3, 2),)),
    Case("repeat zero", lambda m, x: x.repeat(2, 0, 2, 3, 1, 2), ((2, 3, 2),)),
    Case("repeat grad", grads(lambda m, x: x.repeat(2, 2, 3, 2)), ((2, 3, 1, 2),)),
    Case("tile", lambda m, x: m.tile(x, (2, 3, 2, 2)), ((2, 3, 2, 2),)),
    Case("repeat_interleave", lambda m, x: x.repeat_interleave(2, dim=2), ((2,) * 6,)),
    Case("repeat_interleave last", lambda m, x: x.repeat_interleave(3, dim=-1), ((2,) * 6,)),
    Case("repeat_interleave grad", grads(lambda m, x: x.repeat_interleave(2, 1)), ((2,) * 6,)),
    Case("kron 4-d", kron, ((2, 2, 2, 2), (2, 3, 2, 2))),
    Case("kron 6-d", kron, ((2, 2, 2, 1, 1, 2), (2, 2, 2, 2, 2, 2))),
    Case("kron mixed rank", kron, ((3, 2), (2, 1, 2, 3, 2))),
    Case("kron grad", grads(kron), ((2, 3, 2, 2), (2, 2, 1, 2))),
    Case("cdist p=1", _cdist(1.0), _CDIST_SHAPES),
    Case("cdist p=0", _cdist(0.0), _CDIST_SHAPES),
    Case("cdist p=3", _cdist(3.0), _CDIST_SHAPES),
    Case("cdist p=inf", _cdist(float("inf")), _CDIST_SHAPES),
    Case("cdist grad", grads(_cdist(1.5)), _CDIST_SHAPES),
    Case("cartesian_prod", lambda m, *t: m.cartesian_prod(*t), ((2,),) * 7),
    Case("attention gqa", _gqa, ((2, 1, 2, 4, 3, 2), (2, 1, 2, 2, 5, 2), (2, 1, 2, 2, 5, 2))),
    Case("strided slice grad", grads(lambda m, x: x[..., ::2]), ((2, 1, 3, 2, 2, 5),)),
]

TOO_MANY: list[Case] = [
    Case("zeros", lambda m: m.zeros(1, 2, 1, 2, 1, 2, 1)),
    Case("ones", lambda m: m.ones((1,) * 7)),
    Case("full", lambda m: m.full((1,) * 7, 2.0)),
    Case("randn", lambda m: m.randn(1, 1, 1, 1, 1, 1, 2)),
    Case("tensor", lambda m: m.tensor(np.zeros((1,) * 7))),
    Case("to", lambda m: m.zeros((1,) * 7, device="numpy").to(m.get_backend())),
    Case("index list", lambda m, x: x[np.zeros((1,) * 7, dtype=np.int64)], ((2,),)),
    Case("reshape", lambda m, x: x.reshape(2, 1, 1, 1, 1, 1, 2), ((4,),)),
    Case("view", lambda m, x: x.view(1, 2, 1, 1, 1, 1, 2), ((2, 2),)),
    Case("unsqueeze", lambda m, x: x.unsqueeze(0), ((2,) * 6,)),
    Case("unflatten", lambda m, x: x.unflatten(0, (2, 2)), ((4, 1, 1, 1, 1, 2),)),
    Case("expand", lambda m, x: x.expand(3, *x.shape), ((2,) * 6,)),
    Case("stack", lambda m, x: m.stack([x, x]), ((2,) * 6,)),
    Case("repeat", lambda m, x: x.repeat(2, 1, 1, 1, 1, 1, 1), ((2,) * 6,)),
    Case("index None", lambda m, x: x[None], ((2,) * 6,)),
    Case("meshgrid", lambda m, *t: m.meshgrid(*t, indexing="ij"), ((2,),) * 7),
    Case("diag_embed", lambda m, x: m.diag_embed(x), ((2,) * 6,)),
]

#: The sweep's input shapes: every dimension but one has size 2 or 3 (index tensors hold 0
#: and 1), one has size 1 (for squeeze and broadcasting).
SWEEP_SHAPES = ((2, 3, 1, 2, 3), (2, 1, 3, 2, 2, 3))

#: (name, fn, inputs): ``x``, ``y`` float64 and ``k`` int64 in {0, 1}, all of the input shape.
SWEEP_OPS: list[tuple[str, Callable[..., Any], str]] = [
    # elementwise
    ("add", lambda m, x, y: x + y, "xy"),
    ("sub alpha", lambda m, x, y: m.sub(x, y, alpha=2), "xy"),
    ("mul", lambda m, x, y: x * y, "xy"),
    ("div", lambda m, x, y: x / (y.abs() + 1), "xy"),
    ("pow", lambda m, x, y: x.abs() ** y, "xy"),
    ("neg exp", lambda m, x: (-x).exp(), "x"),
    ("log family", lambda m, x: (x.abs() + 1).log() + x.abs().log1p() + (x.abs() + 1).log2(), "x"),
    ("expm1 sqrt rsqrt", lambda m, x: x.expm1() + x.abs().sqrt() + (x.abs() + 1).rsqrt(), "x"),
    ("trig", lambda m, x: x.sin() + x.cos() + x.tan() + x.tanh(), "x"),
    ("sigmoid relu erf", lambda m, x: x.sigmoid() + x.relu() + x.erf(), "x"),
    ("abs sign", lambda m, x: x.abs() + x.sign(), "x"),
    ("rounding", lambda m, x: (3 * x).floor() + (3 * x).ceil() + (3 * x).round() + x.trunc(), "x"),
    (
        "frac reciprocal square",
        lambda m, x: x.frac() + (x.abs() + 1).reciprocal() + x.square(),
        "x",
    ),
    ("clamp", lambda m, x: x.clamp(-0.5, 0.5), "x"),
    ("maximum minimum", lambda m, x, y: m.maximum(x, y) - m.minimum(x, y), "xy"),
    ("where", lambda m, x, y: m.where(x > 0, x, y), "xy"),
    ("lerp", lambda m, x, y: m.lerp(x, y, 0.3), "xy"),
    ("hypot logaddexp", lambda m, x, y: m.hypot(x, y) + m.logaddexp(x, y), "xy"),
    ("fmod remainder", lambda m, x: m.fmod(x, 0.7) + m.remainder(x, 0.7), "x"),
    ("floor_divide", lambda m, x: m.floor_divide(x, 0.7), "x"),
    ("comparisons", lambda m, x, y: ((x < y), (x >= y), (x == x), (x != y)), "xy"),
    ("logical", lambda m, x, y: (m.logical_and(x > 0, y > 0), m.logical_xor(x > 0, y > 0)), "xy"),
    ("isnan nan_to_num", lambda m, x: (m.isnan(x / x.round()), m.nan_to_num(x / x.round())), "x"),
    ("bitwise", lambda m, k: ((k & 1) | (k ^ 1), ~k), "k"),
    ("int arithmetic", lambda m, k: (k * 3 + 1) // 2 - k % 2, "k"),
    ("cast", lambda m, x: ((x * 10).long(), (x * 10).int(), x > 0.5, x.float()), "x"),
    ("broadcast lower rank", lambda m, x, y: x + y[0], "xy"),
    ("broadcast size 1", lambda m, x, y: x * y.sum(0, keepdim=True) + y[..., :1], "xy"),
    (
        "addcmul addcdiv",
        lambda m, x, y: m.addcmul(x, x, y, value=2) + m.addcdiv(x, x, y.abs() + 1),
        "xy",
    ),
    # reductions
    ("sum", lambda m, x: (x.sum(), x.sum(0), x.sum(2), x.sum(-1), x.sum((1, 3))), "x"),
    ("mean prod", lambda m, x: (x.mean(-1, keepdim=True), x.prod(1), x.mean()), "x"),
    ("amax amin", lambda m, x: (x.amax((0, 2)), x.amin(-1), x.amax()), "x"),
    ("max min dim", lambda m, x: (*x.max(dim=1), *x.min(dim=-1, keepdim=True)), "x"),
    ("argmax argmin", lambda m, x: (x.argmax(2), x.argmin(), x.argmax(-1, keepdim=True)), "x"),
    ("var std", lambda m, x: (x.var(1), x.std((0, -1)), *m.var_mean(x, 2), *m.std_mean(x)), "x"),
    ("logsumexp", lambda m, x: x.logsumexp(-1), "x"),
    ("cumsum cumprod", lambda m, x: (x.cumsum(2), x.cumprod(1), x.cumsum(-1)), "x"),
    ("cummax cummin", lambda m, x: (*x.cummax(1), *x.cummin(-1)), "x"),
    ("logcumsumexp", lambda m, x: x.logcumsumexp(3), "x"),
    ("all any", lambda m, x: ((x > 0).all(1), (x > 0).any(), (x > 0).any(-1)), "x"),
    ("norm", lambda m, x: (x.norm(), x.norm(dim=1), x.norm(p=1, dim=(0, -1))), "x"),
    (
        "count_nonzero",
        lambda m, x: (m.count_nonzero(x.round()), m.count_nonzero(x.round(), 1)),
        "x",
    ),
    ("median", lambda m, x: (*x.median(dim=1), x.median()), "x"),
    ("nan reductions", lambda m, x: (m.nansum(x), m.nanmean(x, 1)), "x"),
    ("aminmax", lambda m, x: m.aminmax(x, dim=-1), "x"),
    ("kthvalue", lambda m, x: x.kthvalue(2, dim=-1), "x"),
    ("quantile", lambda m, x: (x.quantile(0.3, dim=1), x.quantile(0.7)), "x"),
    ("sort", lambda m, x: (*x.sort(dim=1), x.argsort(dim=-1), *x.topk(2, dim=-1)), "x"),
    ("msort unique", lambda m, x, k: (m.msort(x), m.unique(k)), "xk"),
    ("mode", lambda m, k: m.mode(k, dim=-1), "k"),
    # movement
    ("reshape view", lambda m, x: (x.reshape(x.shape[0], -1), x.view(-1), x.flatten(1, 3)), "x"),
    ("unflatten", lambda m, x: x.flatten(0, 1).unflatten(0, x.shape[:2]), "x"),
    (
        "permute transpose",
        lambda m, x: (x.permute(*reversed(range(x.dim()))), x.transpose(0, -1), x.mT),
        "x",
    ),
    ("movedim", lambda m, x: m.movedim(x, 0, -1), "x"),
    ("squeeze unsqueeze", lambda m, x: (x.squeeze(), x.squeeze().unsqueeze(1), x.squeeze(2)), "x"),
    (
        "expand",
        lambda m, x, y: (
            x[:, :1].expand(y.shape),
            x[:1].expand_as(y),
            m.broadcast_to(x[:1], x.shape),
        ),
        "xy",
    ),
    ("repeat", lambda m, x: (x.repeat(2, *[1] * (x.dim() - 1)), x.repeat(*[2] * x.dim())), "x"),
    ("tile", lambda m, x: m.tile(x, (2, 1, 2)), "x"),
    (
        "repeat_interleave",
        lambda m, x: (x.repeat_interleave(2, dim=1), x.repeat_interleave(2)),
        "x",
    ),
    ("repeat_interleave tensor", lambda m, x: x.repeat_interleave(m.tensor([1, 0]), dim=0), "x"),
    (
        "flip roll",
        lambda m, x: (x.flip((0, 2)), x.roll(1, 2), x.roll((1, -1), (0, -1)), x.roll(2)),
        "x",
    ),
    ("narrow split chunk", lambda m, x: (x.narrow(-1, 1, 2), *x.split(2, -1), *x.chunk(2, 0)), "x"),
    (
        "cat stack",
        lambda m, x, y: (m.cat([x, y], 1), m.cat([x, y], -1), m.stack([x[0], y[0]], 2)),
        "xy",
    ),
    ("unbind", lambda m, x: x.unbind(1), "x"),
    ("tril triu", lambda m, x: (x.tril(), x.triu(1)), "x"),
    ("diagonal", lambda m, x: (x.diagonal(), x.diagonal(1, 0, -1)), "x"),
    ("diag_embed", lambda m, x: m.diag_embed(x[0], 1), "x"),
    ("clone contiguous", lambda m, x: (x.clone(), x.mT.contiguous()), "x"),
    ("pad", lambda m, x: m.nn.functional.pad(x, (1, 1, 0, 2)), "x"),
    (
        "pad modes",
        # PyTorch pads at most 3 trailing dims in these modes, of a 4-d or 5-d input.
        lambda m, x: tuple(
            m.nn.functional.pad(
                x if x.ndim <= 5 else x.flatten(0, 1), (1, 1, 1, 0, 0, 0), mode=mode
            )
            for mode in ("reflect", "replicate", "circular")
        ),
        "x",
    ),
    # indexing
    ("basic index", lambda m, x: (x[0], x[:, 1:], x[..., ::2], x[1, ..., 0], x[:, None, 0]), "x"),
    (
        "advanced index",
        lambda m, x: (x[[1, 0]], x[:, [0, 0]], x[[0, 1], [0, 0]], x[..., [0, 2]]),
        "x",
    ),
    ("mask index", lambda m, x: (x[x > 0], m.masked_select(x, x > 0), (x > 0).nonzero()), "x"),
    (
        "index tensor",
        lambda m, x, k: (x[k.flatten()[:4]], x[0].flatten(0, 1)[k.flatten()[:4].view(2, 2)]),
        "xk",
    ),
    ("gather", lambda m, x, k: (x.gather(0, k), x.gather(-1, k), m.take_along_dim(x, k, 0)), "xk"),
    ("scatter", lambda m, x, y: x.scatter(0, y.argsort(0), y), "xy"),
    ("scatter_add", lambda m, x, y, k: x.scatter_add(0, k, y), "xyk"),
    (
        "scatter_reduce",
        lambda m, x, y, k: (x.scatter_reduce(0, k, y, "amax"), x.scatter_reduce(-1, k, y, "prod")),
        "xyk",
    ),
    (
        "index_select add",
        lambda m, x, y: (x.index_select(1, m.tensor([0, 0])), x.index_add(0, m.tensor([1, 1]), y)),
        "xy",
    ),
    ("index_reduce", lambda m, x, y: x.index_reduce(0, m.tensor([1, 1]), y, "amax"), "xy"),
    ("masked_fill", lambda m, x: x.masked_fill(x > 0, 0.5), "x"),
    ("setitem", lambda m, x, y: _setitem(x, y), "xy"),
    # linear algebra
    (
        "matmul",
        lambda m, x, y: (x @ y.mT, x @ y[0].mT, x @ y[0, 0, 0].flatten()[: x.shape[-1]]),
        "xy",
    ),
    (
        "einsum",
        lambda m, x, y: (m.einsum("...ij,...kj->...ik", x, y), m.einsum("...i,...i->...", x, y)),
        "xy",
    ),
    ("tensordot", lambda m, x, y: m.tensordot(x, y, dims=([0, 1, 2], [0, 1, 2])), "xy"),
    ("cdist", lambda m, x, y: (m.cdist(x, y), m.cdist(x, y, p=1)), "xy"),
    ("cross", lambda m, x, y: m.cross(x, y, dim=-1), "xy"),
    (
        "outer dot kron",
        lambda m, x, y: (
            m.outer(x[0, 0, 0].flatten(), y.flatten()[:5]),
            m.dot(x.flatten(), y.flatten()),
            m.kron(x[0], y[0, 0]),
        ),
        "xy",
    ),
    # nn.functional
    (
        "softmax",
        lambda m, x: (
            m.nn.functional.softmax(x, 1),
            m.nn.functional.log_softmax(x, -1),
            m.nn.functional.softmin(x, 0),
        ),
        "x",
    ),
    (
        "layer_norm rms_norm",
        lambda m, x: (
            m.nn.functional.layer_norm(x, x.shape[-2:]),
            m.nn.functional.rms_norm(x, x.shape[-1:]),
        ),
        "x",
    ),
    ("normalize", lambda m, x: m.nn.functional.normalize(x, dim=1), "x"),
    (
        "group_norm batch_norm",
        lambda m, x: (
            m.nn.functional.group_norm(x, 1),
            m.nn.functional.batch_norm(x, None, None, training=True),
        ),
        "x",
    ),
    ("activations", lambda m, x: tuple(f(x) for f in _activations(m)), "x"),
    (
        "glu prelu",
        lambda m, x: (
            m.nn.functional.glu(x, 0),
            m.nn.functional.prelu(x, m.tensor([0.25] * x.shape[1], dtype=x.dtype)),
        ),
        "x",
    ),
    ("losses", lambda m, x, y: _losses(m, x, y), "xy"),
    ("cosine_similarity", lambda m, x, y: m.nn.functional.cosine_similarity(x, y, dim=1), "xy"),
    ("cross_entropy", lambda m, x, k: _class_losses(m, x, k), "xk"),
    ("attention", lambda m, x, y: m.nn.functional.scaled_dot_product_attention(x, y, y), "xy"),
    (
        "one_hot embedding",
        lambda m, x, k: (
            m.nn.functional.one_hot(k[0], 2),
            m.nn.functional.embedding(k[0], x[0, 0].flatten(0, -2)),
        ),
        "xk",
    ),
    ("dropout eval", lambda m, x: m.nn.functional.dropout(x, 0.5, training=False), "x"),
    ("conv pool", lambda m, x, y: _conv_pool(m, x, y), "xy"),
    # gradients
    ("grad elementwise", grads(lambda m, x, y: (x * y).exp() + x.sigmoid() * y), "xy"),
    ("grad reductions", grads(lambda m, x: x.sum(1).amax(0) + x.mean((0, 2)).sum()), "x"),
    (
        "grad movement",
        grads(lambda m, x: x.permute(*reversed(range(x.dim()))).flip(0).roll(1, 2)[1:]),
        "x",
    ),
    (
        "grad expand repeat",
        grads(lambda m, x: x[:, :1].expand(x.shape) * x.repeat(2, *[1] * (x.dim() - 1))[:2]),
        "x",
    ),
    ("grad index", grads(lambda m, x, k: x.gather(0, k) + x[[1, 0]] + x[k.flatten()[:2]]), "xk"),
    ("grad matmul", grads(lambda m, x, y: x @ y.mT), "xy"),
    (
        "grad softmax norm",
        grads(lambda m, x: m.nn.functional.layer_norm(m.nn.functional.softmax(x, 1), x.shape[-1:])),
        "x",
    ),
    ("grad strided slice", grads(lambda m, x: x[..., ::2]), "x"),
]


def _setitem(x: Any, y: Any) -> Any:
    z = x.clone()
    z[0, ..., 1] = 3.0
    z[z > 1] = 0.0
    z[:, :1] = y[:, :1]
    return z


def _activations(m: Any) -> list:
    f = m.nn.functional
    return [
        f.gelu, f.silu, f.mish, f.elu, f.selu, f.celu, f.softplus, f.leaky_relu, f.hardtanh,
        f.hardswish, f.hardsigmoid, f.logsigmoid, f.softsign, f.relu6,
    ]  # fmt: skip


def _losses(m: Any, x: Any, y: Any) -> tuple:
    f = m.nn.functional
    return (
        f.mse_loss(x, y),
        f.l1_loss(x, y, reduction="none"),
        f.smooth_l1_loss(x, y),
        f.huber_loss(x, y, delta=0.5),
        f.kl_div(f.log_softmax(x, 1), f.softmax(y, 1), reduction="batchmean"),
        f.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
        f.binary_cross_entropy_with_logits(x, y.sigmoid()),
    )


def _class_losses(m: Any, x: Any, k: Any) -> tuple:
    f = m.nn.functional
    target = k[:, 0] % x.shape[1]  # (N, d1, ...) class indices for (N, C, d1, ...) scores
    return f.cross_entropy(x, target), f.nll_loss(f.log_softmax(x, 1), target, reduction="none")


def _conv_pool(m: Any, x: Any, y: Any) -> tuple:
    """Convolutions and pooling of x as (N, C, 2, 3) images, with weights from y."""
    f = m.nn.functional
    images = x.reshape(x.shape[0], -1, *x.shape[-2:])
    weight = y.flatten()[: 8 * images.shape[1]].reshape(2, images.shape[1], 2, 2)
    return (
        f.conv2d(images, weight, padding=1),
        f.conv_transpose2d(images, weight.transpose(0, 1), stride=2),
        f.max_pool2d(images, 2, padding=1),
        f.avg_pool2d(images, 2, 1),
        f.unfold(images, 2),
    )


def sweep() -> list[Case]:
    """Every op of :data:`SWEEP_OPS` on each of :data:`SWEEP_SHAPES`."""
    kinds = {"x": lambda s: s, "y": lambda s: s, "k": lambda s: ("int", s, 2)}
    return [
        Case(f"{name} {len(shape)}-d", fn, tuple(kinds[c](shape) for c in inputs))
        for shape in SWEEP_SHAPES
        for name, fn, inputs in SWEEP_OPS
    ]


TABLES: dict[str, Callable[[], list[Case]]] = {
    "BUILDERS": lambda: BUILDERS,
    "TOO_MANY": lambda: TOO_MANY,
    "SWEEP": sweep,
}

_CHILD = """
    import json, sys
    import numpy as np
    sys.path.insert(0, {here!r})
    import rank_cases
    import tensorweaver as tw

    tw.set_backend("cunumeric")
    results, errors = {{}}, {{}}
    for i, case in enumerate(rank_cases.TABLES[{table!r}]()):
        print(case.name, file=sys.stderr, flush=True)  # the last one named is the one that ended it
        try:
            for j, array in enumerate(rank_cases.run(tw, case)):
                results[f"{{i}}_{{j}}"] = array
        except Exception as e:
            errors[case.name] = [type(e).__name__, str(e)]
    np.savez({out!r} + ".npz", **results)
    with open({out!r} + ".json", "w") as f:
        limit = getattr(tw.zeros(()).backend, "max_ndim", None)
        json.dump({{"errors": errors, "max_ndim": limit}}, f)
"""


class ChildRun(NamedTuple):
    results: dict[str, list]  # case name: its result arrays
    errors: dict[str, list]  # case name: [exception type, message]
    max_ndim: Any  # the cuPyNumeric backend's


def run_on_cunumeric(table: str, out: Path) -> ChildRun:
    """Run :data:`TABLES` ``[table]`` on cuPyNumeric in a child process, with files at ``out``
    (a path without suffix). A child that dies (Legate aborts the process on an array of more
    than 6 dimensions) fails with the name of the case it was running."""
    code = textwrap.dedent(_CHILD.format(here=str(HERE), table=table, out=str(out)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORWEAVER_")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    if proc.returncode:
        names = {c.name for c in TABLES[table]()}
        ran = [line for line in proc.stderr.splitlines() if line in names]
        after = proc.stderr.rpartition(ran[-1] + "\n")[2] if ran else proc.stderr
        raise AssertionError(
            f"the cuPyNumeric child process died (exit code {proc.returncode}) in case "
            f"{ran[-1] if ran else '?'!r}:\n{after[:1500]}"
        )
    cases = TABLES[table]()
    with np.load(f"{out}.npz") as data:
        arrays = {
            case.name: [data[f"{i}_{j}"] for j in range(_count(data, i))]
            for i, case in enumerate(cases)
        }
    with open(f"{out}.json") as f:
        facts = json.load(f)
    return ChildRun(arrays, facts["errors"], facts["max_ndim"])


def _count(data: Any, i: int) -> int:
    return sum(1 for key in data.files if key.split("_")[0] == str(i))
