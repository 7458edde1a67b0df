"""Inference tensors as torch 2.13, leftovers: each snippet runs on torch and on tensorweaver
with only the import changed, and the outcomes (an exception's class; else whether the
result requires grad, its grad_fn's name, whether it is an inference tensor, and values)
must match.

Copies of an inference tensor that requires grad into a new normal tensor (conversions,
clones, sort's values, diag's matrix) record torch's CopyBackwards/CopySlices; binary special
functions and activations of inference tensors alone record nothing, and refuse to save an
inference operand beside one that requires grad; index writes refuse to save an inference
index. Order statistics along a dim refuse an inference tensor that requires grad, as
torch's out= kernels do; index_copy/index_add/scatter of inference tensors alone clone the
input first (CopyBackwards), as torch's.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

#: Every test here checks the core's own logic (grad mode, inference flags, what a node saves),
#: not a backend primitive: one backend keeps the file fast.
CORE = "numpy"


def _plain(r: Any, m: Any) -> Any:
    if isinstance(r, (tuple, list)):
        return tuple(_plain(x, m) for x in r)
    if not isinstance(r, m.Tensor):
        return r
    values = np.asarray(r.detach().tolist(), dtype=float)
    return (
        r.requires_grad,
        type(r.grad_fn).__name__,
        r.is_inference(),
        str(r.dtype).split(".")[-1],
        tuple(r.shape),
        str(np.round(values, 6).tolist()),  # (6 digits: float16 and float32 results too)
    )


def _outcome(fn: Callable[[Any], Any], m: Any) -> Any:
    """What ``fn(m)`` gives, comparable across torch and tw (an exception as its class)."""
    try:
        return _plain(fn(m), m)
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__


def _same(fn: Callable[[Any], Any]) -> None:
    want = _outcome(fn, torch)
    with entered(CORE):
        assert _outcome(fn, tw) == want


def _inference(m: Any, *shape: int, requires_grad: bool = False) -> Any:
    n = int(np.prod(shape))
    with m.inference_mode():
        made = (m.arange(1.0, 1.0 + n, dtype=m.float64) / (n + 1)).reshape(shape)
        return made.requires_grad_(requires_grad)


def _unsorted(m: Any) -> Any:
    """An inference vector that requires grad, out of order (sort moves its elements)."""
    with m.inference_mode():
        return m.tensor([0.75, 0.25, 0.5], dtype=m.float64).requires_grad_()


def _normal(m: Any, n: int = 3) -> Any:
    """A non-leaf normal vector that requires grad."""
    return (m.arange(1.0, 1.0 + n, dtype=m.float64) / n).requires_grad_() * 1


def _with_grad(out: Any, p: Any, m: Any) -> Any:
    """``out`` and the gradient its weighted sum sends to ``p`` (None where none is recorded)."""
    if out.requires_grad:
        weights = m.arange(1.0, 1.0 + out.numel(), dtype=out.dtype).reshape(out.shape)
        (out * weights).sum().backward()
    return out, p.grad


# -- copies of an inference tensor that requires grad: CopyBackwards, CopySlices --------------

_COPIES: dict[str, Callable[[Any, Any], Any]] = {
    "to_dtype": lambda m, p: p.to(m.float32),
    "to_keyword": lambda m, p: p.to(dtype=m.float32),
    "to_other": lambda m, p: p.to(m.ones(1, dtype=m.float32)),
    "to_same_dtype_copy": lambda m, p: p.to(m.float64, copy=True),
    "to_same_dtype": lambda m, p: p.to(m.float64),
    "to_long": lambda m, p: p.to(m.int64),
    "float": lambda m, p: p.float(),
    "half": lambda m, p: p.half(),
    "double_itself": lambda m, p: p.double(),
    "long": lambda m, p: p.long(),
    "clone": lambda m, p: p.clone(),
    "clone_contiguous_format": lambda m, p: p.clone(memory_format=m.contiguous_format),
    "type_as": lambda m, p: p.type_as(m.ones(1, dtype=m.float32)),
    "type_as_same_dtype": lambda m, p: p.type_as(m.ones(1, dtype=m.float64)),
    "sort": lambda m, p: p.sort().values,
    "sort_descending": lambda m, p: p.sort(descending=True).values,
    "sort_stable": lambda m, p: p.sort(stable=True).values,
    "sort_indices": lambda m, p: p.sort().indices,
    "sort_0d": lambda m, p: p[0].sort().values,
    "msort": lambda m, p: m.msort(p),
    "argsort": lambda m, p: p.argsort(),
    "topk": lambda m, p: p.topk(2).values,
    "diag": lambda m, p: m.diag(p),
    "diag_offset": lambda m, p: m.diag(p, -1),
    "diag_embed": lambda m, p: m.diag_embed(p),
    "diagflat": lambda m, p: m.diagflat(p),
}


@pytest.mark.parametrize("op", list(_COPIES))
def test_copy_of_an_inference_tensor_that_requires_grad(op: str) -> None:
    def program(m: Any) -> Any:
        p = _unsorted(m)
        out = _COPIES[op](m, p)
        if out is p or not out.dtype.is_floating_point:
            return out is p, _plain(out, m)
        return _with_grad(out, p, m)  # (sort's: torch's identity, not the permutation)

    _same(program)


@pytest.mark.parametrize("k", [0, 4, 1, 2])
def test_rot90_of_an_inference_tensor_that_requires_grad(k: int) -> None:
    _same(lambda m: m.rot90(_inference(m, 2, 2, requires_grad=True), k))


@pytest.mark.parametrize("op", ["to_dtype", "float", "clone", "type_as", "sort", "diag"])
@pytest.mark.parametrize("mode", ["inference_mode", "no_grad"])
def test_copy_in_a_mode_records_nothing(op: str, mode: str) -> None:
    def program(m: Any) -> Any:
        p = _unsorted(m)
        with getattr(m, mode)():
            return _COPIES[op](m, p)

    _same(program)


@pytest.mark.parametrize("op", ["to_dtype", "clone", "sort", "diag"])
def test_copy_of_an_inference_tensor_without_grad_records_nothing(op: str) -> None:
    def program(m: Any) -> Any:
        p = _unsorted(m).detach()
        return _COPIES[op](m, p)

    _same(program)


# -- binary special functions and activations: inference tensors alone, saved operands ------

_BINARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "xlogy": lambda m, a, b: m.xlogy(a, b),
    "special_xlogy": lambda m, a, b: m.special.xlogy(a, b),
    "xlog1py": lambda m, a, b: m.special.xlog1py(a, b),
    "xlogy_number_input": lambda m, a, b: m.xlogy(2.0, a if a.requires_grad else b),
    "xlogy_number_other": lambda m, a, b: m.xlogy(a if a.requires_grad else b, 2.0),
    "fmax": lambda m, a, b: m.fmax(a, b),
    "fmin": lambda m, a, b: m.fmin(a, b),
    "heaviside": lambda m, a, b: m.heaviside(a, b),
    "copysign": lambda m, a, b: m.copysign(a, b),
    "prelu": lambda m, a, b: m.nn.functional.prelu(a, b[:1]),
}

#: (first operand, second operand): inference tensors alone (one of them requires grad), and
#: an inference operand beside a normal one that requires grad.
_OPERANDS: dict[str, Callable[[Any], tuple]] = {
    "alone_first_requires_grad": lambda m: (_inference(m, 3, requires_grad=True), _inference(m, 3)),
    "alone_second_requires_grad": lambda m: (
        _inference(m, 3),
        _inference(m, 3, requires_grad=True),
    ),
    "inference_second": lambda m: (_normal(m), _inference(m, 3)),
    "inference_first": lambda m: (_inference(m, 3), _normal(m)),
}


#: Names torch gives that tw does not (heaviside's NotImplemented node, copysign's node of
#: a zero gradient for ``other``): only inference operands alone are compared for these.
_ALONE_ONLY = ("heaviside", "copysign")


@pytest.mark.parametrize(
    ("op", "operands"),
    [
        (op, operands)
        for op in _BINARY
        for operands in _OPERANDS
        if op not in _ALONE_ONLY or operands.startswith("alone")
    ],
)
def test_binary_function_and_inference_operands(op: str, operands: str) -> None:
    def program(m: Any) -> Any:
        a, b = _OPERANDS[operands](m)
        return _BINARY[op](m, a, b)

    _same(program)


_UNARY: dict[str, Callable[[Any, Any], Any]] = {
    "gelu": lambda m, p: m.nn.functional.gelu(p),
    "gelu_tanh": lambda m, p: m.nn.functional.gelu(p, approximate="tanh"),
    "silu": lambda m, p: m.nn.functional.silu(p),
    "mish": lambda m, p: m.nn.functional.mish(p),
    "softplus": lambda m, p: m.nn.functional.softplus(p, beta=2.0, threshold=1.0),
    "hardswish": lambda m, p: m.nn.functional.hardswish(p),
    "hardsigmoid": lambda m, p: m.nn.functional.hardsigmoid(p),
    "logsigmoid": lambda m, p: m.nn.functional.logsigmoid(p),
    "elu": lambda m, p: m.nn.functional.elu(p, alpha=0.5),
    "selu": lambda m, p: m.nn.functional.selu(p),
    "celu": lambda m, p: m.nn.functional.celu(p),
    "hardtanh": lambda m, p: m.nn.functional.hardtanh(p, 0.3, 0.6),
    "relu6": lambda m, p: m.nn.functional.relu6(p),
    "rrelu": lambda m, p: m.nn.functional.rrelu(p),
    "float16_gelu": lambda m, p: m.nn.functional.gelu(p.detach().half().requires_grad_()),
    "exp2": lambda m, p: m.exp2(p),
    "signbit": lambda m, p: m.signbit(p),
    "logit": lambda m, p: m.logit(p),
    "logit_eps": lambda m, p: m.logit(p, 0.3),
    "sinc": lambda m, p: m.sinc(p),
    "entr": lambda m, p: m.special.entr(p),
    "deg2rad": lambda m, p: m.deg2rad(p),
    "rad2deg": lambda m, p: m.rad2deg(p),
}


@pytest.mark.parametrize("op", list(_UNARY))
def test_activation_of_an_inference_tensor_that_requires_grad(op: str) -> None:
    def program(m: Any) -> Any:
        return _UNARY[op](m, _inference(m, 3, requires_grad=True))

    _same(program)


@pytest.mark.parametrize("op", ["gelu", "elu", "hardtanh", "rrelu", "deg2rad", "exp2"])
def test_activation_in_inference_mode(op: str) -> None:
    def program(m: Any) -> Any:
        p = _inference(m, 3, requires_grad=True)
        with m.inference_mode():
            return _UNARY[op](m, p)

    _same(program)


@pytest.mark.parametrize("op", ["gelu", "silu", "elu", "xlogy"])
def test_normal_input_still_records_and_differentiates(op: str) -> None:
    def program(m: Any) -> Any:
        w = (m.arange(1.0, 4.0, dtype=m.float64) / 4).requires_grad_()
        if op == "xlogy":
            out = m.xlogy(w, w + 1)
        else:
            out = _UNARY[op](m, w)
        return _with_grad(out, w, m)

    _same(program)


# -- index writes with an inference index (or mask) -------------------------------------------

_INDEX_WRITES: dict[str, Callable[[Any, Any, Any, Any, Any], Any]] = {
    "index_copy_self": lambda m, w, s, i, k: w.index_copy(0, i, s.detach()),
    "index_copy_source": lambda m, w, s, i, k: w.detach().index_copy(0, i, s),
    "index_copy_": lambda m, w, s, i, k: (w * 1).index_copy_(0, i, s),
    "index_add_self": lambda m, w, s, i, k: w.index_add(0, i, s.detach()),
    "index_add_source": lambda m, w, s, i, k: w.detach().index_add(0, i, s, alpha=2),
    "index_add_": lambda m, w, s, i, k: (w * 1).index_add_(0, i, s),
    "index_fill_self": lambda m, w, s, i, k: w.index_fill(0, i, 7.0),
    "index_fill_value": lambda m, w, s, i, k: w.detach().index_fill(
        0, i, m.tensor(7.0, dtype=m.float64, requires_grad=True)
    ),
    "index_fill_": lambda m, w, s, i, k: (w * 1).index_fill_(0, i, 2.0),
    "index_fill_unrecorded": lambda m, w, s, i, k: w.detach().index_fill(0, i, 2.0),
    "index_put": lambda m, w, s, i, k: w.index_put((i,), s.detach(), accumulate=True),
    "masked_scatter": lambda m, w, s, i, k: w.masked_scatter(k, m.ones(6, dtype=m.float64)),
    "masked_scatter_unrecorded": lambda m, w, s, i, k: w.detach().masked_scatter(
        k, m.ones(6, dtype=m.float64)
    ),
}


@pytest.mark.parametrize("op", list(_INDEX_WRITES))
def test_index_write_with_an_inference_index(op: str) -> None:
    def program(m: Any) -> Any:
        with m.inference_mode():
            i = m.tensor([0, 2])
            k = m.tensor([[True, False], [False, True], [True, True]])
        w = m.ones(3, 2, dtype=m.float64, requires_grad=True)
        s = m.ones(2, 2, dtype=m.float64, requires_grad=True)
        return _INDEX_WRITES[op](m, w, s, i, k)

    _same(program)


# -- order statistics, conversions, index writes, special functions --------------------------


#: ``(m, p, q)``: ``p`` an inference vector that requires grad, ``q`` an inference index
#: (for the ops of :data:`_INDEXED`) or an inference vector.
_OTHERS: dict[str, Callable[[Any, Any, Any], Any]] = {
    # (mode and median() sort unrecorded, as torch's kernels: nothing recorded)
    "mode": lambda m, p, q: p.mode().values,
    "median": lambda m, p, q: p.median(),
    "nanmedian": lambda m, p, q: p.nanmedian(),
    # (along a dim, torch's out= kernels refuse)
    "median_dim": lambda m, p, q: p.median(0).values,
    "nanmedian_dim": lambda m, p, q: p.nanmedian(0).values,
    "type": lambda m, p, q: p.type(m.float32),
    "kthvalue": lambda m, p, q: p.kthvalue(2).values,
    "index_copy_normal_index": lambda m, p, q: p.index_copy(0, m.tensor([0]), q[:1]),
    "index_add_normal_index": lambda m, p, q: p.index_add(0, m.tensor([0]), q[:1]),
    "index_copy_alone": lambda m, p, q: p.index_copy(0, q[:1], p[1:]),
    "index_add_alone": lambda m, p, q: p.index_add(0, q[:1], p[1:]),
    "scatter_alone": lambda m, p, q: p.scatter(0, q[:1], p[1:]),
    "index_reduce": lambda m, p, q: (
        _normal(m).reshape(3, 1).index_reduce(0, q, p.reshape(2, 1), "prod")
    ),
    "put": lambda m, p, q: _normal(m).put(q, p.detach()),
    "put_alone": lambda m, p, q: p.put(q[:1], p[:1]),
    "index_reduce_inference_source": lambda m, p, q: (
        _normal(m).reshape(3, 1).index_reduce(0, m.tensor([0, 2]), q.reshape(2, 1), "mean")
    ),
    "zeta_inference_other": lambda m, p, q: m.special.zeta(_normal(m, 2) + 1, q),
    "igamma_normal_other": lambda m, p, q: m.igamma(p, q + 1),
    "igamma_alone": lambda m, p, q: m.igamma(p, q),
    "igammac_alone": lambda m, p, q: m.igammac(p, q),
    "nextafter_alone": lambda m, p, q: m.nextafter(p, q),
}


_INDEXED = (
    "index_copy_alone",
    "index_add_alone",
    "scatter_alone",
    "index_reduce",
    "put",
    "put_alone",
)


@pytest.mark.parametrize("op", list(_OTHERS))
def test_other_op_of_an_inference_tensor_that_requires_grad(op: str) -> None:
    def program(m: Any) -> Any:
        p = _inference(m, 2, requires_grad=True)
        with m.inference_mode():
            q = m.tensor([0, 2])
        return _OTHERS[op](m, p, q if op in _INDEXED else _inference(m, 2))

    _same(program)
