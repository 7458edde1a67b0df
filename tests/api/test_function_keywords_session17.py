"""PyTorch's keyword names for the ``tw.*`` functions: a script that calls ``torch.add(a,
other=b)``, ``torch.pow(x, exponent=2)`` or ``torch.mm(input=a, mat2=b)`` runs with only its
imports changed.

Two sweeps. The signature sweep reads torch 2.13's own binding signatures (the overloads in
``torch/_C/_VariableFunctions.pyi``) and checks that every argument name torch takes is one
that ``tw``'s function takes; the call sweep (seeded) calls torch and tw with every argument
by keyword and compares the results. Before this session the functions of ops/elementwise.py,
ops/linalg.py and ops/reduce.py named their arguments ``a``, ``b``, ``x`` (``tw.add(a,
other=b)`` was a TypeError). The gaps left, in modules other than those, are strict xfails.
"""

from __future__ import annotations

import ast
import inspect
import os
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

# -- the signature sweep ------------------------------------------------------------------------

#: Names torch's bindings list that are no keyword of its Python API a script would pass:
#: ``self`` (the deprecated Scalar-first overloads; a function whose only overload names it,
#: ``numel``, takes ``input=``), the storage options (checked by the creation tests), and
#: ``out_dtype`` (mm/bmm's, NotImplementedError on CPU).
_NOT_KEYWORDS = {"self", "layout", "pin_memory", "memory_format", "names", "out_dtype"}
#: Functions torch binds without keywords, though its stub names their argument.
_POSITIONAL_ONLY = {"from_numpy", "set_num_interop_threads", "set_num_threads"}


def _torch_overloads() -> dict[str, list[list[str]]]:
    path = os.path.join(os.path.dirname(torch.__file__), "_C", "_VariableFunctions.pyi")
    with open(path) as stub:
        tree = ast.parse(stub.read())
    found: dict[str, list[list[str]]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            found.setdefault(node.name, []).append(names)
    for overloads in found.values():
        if len(overloads) == 1 and overloads[0][:1] == ["self"]:
            overloads[0][0] = "input"
    return found


OVERLOADS = _torch_overloads()


def _function(name: str) -> Callable[..., Any] | None:
    value = getattr(tw, name, None)
    return value if callable(value) and not isinstance(value, type) else None


def _missing(name: str) -> set[str]:
    """The argument names of torch's ``name`` that ``tw.<name>`` does not take (for one that
    reads its keywords itself, ``**kwargs``: the names it gives its arguments that torch's
    have not, such as ``x`` for ``input``)."""
    parameters = inspect.signature(_function(name)).parameters.values()
    taken = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    wanted = {n for names in OVERLOADS[name] for n in names} - _NOT_KEYWORDS
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return taken - wanted - {"out"}
    return wanted - taken


#: The modules this sweep holds to torch's names; a gap in one of them fails.
_HELD = {
    "tensorweaver.ops.elementwise",
    "tensorweaver.ops.linalg",
    "tensorweaver.ops.reduce",
    "tensorweaver.ops.creation",
    "tensorweaver.ops.creation_spellings",
    "tensorweaver.ops.views",
    "tensorweaver.ops.movement",
    "tensorweaver.ops.spellings",
    "tensorweaver.ops.structure",
    "tensorweaver.ops.membership",
    "tensorweaver.ops.inplace_shape",
    "tensorweaver.promotion",
    "tensorweaver.threads",
    "tensorweaver.array_api.creation",
    "tensorweaver",
}

#: What is left, in other modules (each a strict xfail below, by name).
KNOWN_GAPS: dict[str, str] = {}


def _gaps() -> dict[str, str]:
    """Every function of tw with a torch twin whose argument names it lacks: name -> module."""
    found = {}
    for name in sorted(OVERLOADS):
        if name.startswith("_") or name in _POSITIONAL_ONLY or _function(name) is None:
            continue
        try:
            lacking = _missing(name)
        except (TypeError, ValueError):  # no Python signature
            continue
        if lacking:
            found[name] = inspect.unwrap(_function(name)).__module__
    return found


def test_functions_take_torchs_argument_names() -> None:
    gaps = _gaps()
    held = {n: sorted(_missing(n)) for n, module in gaps.items() if module in _HELD}
    assert not held, f"functions lacking torch's argument names: {held}"
    new = {n: sorted(_missing(n)) for n in gaps if n not in KNOWN_GAPS}
    assert not new, f"new gaps (fix them, or record them in KNOWN_GAPS): {new}"


@pytest.mark.parametrize("name", sorted(KNOWN_GAPS))
@pytest.mark.xfail(strict=True, reason="keyword names: see KNOWN_GAPS")
def test_known_gap(name: str) -> None:
    assert not _missing(name), KNOWN_GAPS[name]


# -- the call sweep ---------------------------------------------------------------------------

RNG = np.random.default_rng(17)
M = RNG.standard_normal((3, 4))
N = RNG.standard_normal((3, 4)) + 0.5
P = np.abs(RNG.standard_normal((3, 4))) + 0.5
SQ = RNG.standard_normal((4, 4))
V = RNG.standard_normal(4)
B3 = RNG.standard_normal((2, 3, 4))
B4 = RNG.standard_normal((2, 4, 3))
K = RNG.integers(-5, 6, (3, 4))
J = RNG.integers(1, 6, (3, 4))


def _t(lib: Any, value: np.ndarray) -> Any:
    return lib.tensor(value)


def _binary(name: str, left: np.ndarray = M, right: np.ndarray = N, **extra: Any) -> tuple:
    return name, lambda m: {"input": _t(m, left), "other": _t(m, right), **extra}


def _unary(name: str, value: np.ndarray = P, **extra: Any) -> tuple:
    return name, lambda m: {"input": _t(m, value), **extra}


CALLS: list[tuple[str, Callable[[Any], dict]]] = [
    _binary("add", alpha=2),
    _binary("sub", alpha=3),
    _binary("subtract", alpha=0.5),
    _binary("mul"),
    _binary("multiply"),
    _binary("div"),
    _binary("div", rounding_mode="floor"),
    _binary("divide", rounding_mode="trunc"),
    _binary("true_divide"),
    _binary("floor_divide", K, J),
    _binary("remainder", K, J),
    _binary("maximum"),
    _binary("minimum"),
    _binary("atan2"),
    *(_binary(op) for op in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "less_equal")),
    *(_binary(op, K > 0, J > 2) for op in ("logical_and", "logical_or", "logical_xor")),
    *(_binary(op, K, J) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    ("pow", lambda m: {"input": _t(m, P), "exponent": 2}),
    ("pow", lambda m: {"input": _t(m, P), "exponent": _t(m, N)}),
    ("matmul", lambda m: {"input": _t(m, M), "other": _t(m, SQ)}),
    ("mm", lambda m: {"input": _t(m, M), "mat2": _t(m, SQ)}),
    ("bmm", lambda m: {"input": _t(m, B3), "mat2": _t(m, B4)}),
    ("dot", lambda m: {"input": _t(m, V), "tensor": _t(m, V)}),
    ("outer", lambda m: {"input": _t(m, V), "vec2": _t(m, V)}),
    ("ger", lambda m: {"input": _t(m, V), "vec2": _t(m, V)}),
    ("clamp", lambda m: {"input": _t(m, M), "min": -0.5, "max": 0.5}),
    ("clip", lambda m: {"input": _t(m, M), "max": 0.1}),
    ("where", lambda m: {"condition": _t(m, M > 0), "input": _t(m, M), "other": _t(m, N)}),
    ("lerp", lambda m: {"input": _t(m, M), "end": _t(m, N), "weight": 0.25}),
    ("addcmul", lambda m: {"input": _t(m, M), "tensor1": _t(m, N), "tensor2": _t(m, P)}),
    ("addcdiv", lambda m: {"input": _t(m, M), "tensor1": _t(m, N), "tensor2": _t(m, P)}),
    *(
        _unary(op)
        for op in (
            "abs exp log log2 log10 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu neg "
            "negative reciprocal square floor ceil trunc fix sign isnan isinf isfinite "
            "absolute erf"
        ).split()
    ),
    _unary("round", decimals=1),
    _unary("nan_to_num", nan=0.5),
    _unary("logical_not", K),
    _unary("bitwise_not", K),
    _unary("sum", dim=1, keepdim=True, dtype=torch.float64),
    _unary("sum", dtype=torch.float32),
    _unary("prod", dim=0, keepdim=True),
    _unary("mean", dim=(0, 1), keepdim=True),
    _unary("amax", dim=1, keepdim=True),
    _unary("amin", dim=(0,)),
    _unary("argmax", dim=1, keepdim=True),
    _unary("argmin", dim=0),
    _unary("max"),
    _unary("max", dim=1, keepdim=True),
    _unary("min", dim=0),
    ("max", lambda m: {"input": _t(m, M), "other": _t(m, N)}),
    ("min", lambda m: {"input": _t(m, M), "other": _t(m, N)}),
    _unary("any", dim=1),
    _unary("all", dim=0, keepdim=True),
    _unary("std", dim=1, correction=0, keepdim=True),
    _unary("var", dim=0, unbiased=False),
    _unary("logsumexp", dim=1, keepdim=True),
    _unary("cumsum", dim=1, dtype=torch.float64),
    _unary("norm", p=1, dim=1, keepdim=True),
    _unary("count_nonzero", K, dim=0),
    _unary("zeros_like", dtype=torch.float64),
    _unary("ones_like"),
    ("full_like", lambda m: {"input": _t(m, M), "fill_value": 3}),
]


def _convert(m: Any, kwargs: dict) -> dict:
    """torch's dtypes in the table, as ``m``'s."""
    return {k: getattr(m, str(v).split(".")[-1]) if isinstance(v, torch.dtype) else v
            for k, v in kwargs.items()}  # fmt: skip


def _outcome(m: Any, name: str, arguments: Callable[[Any], dict]) -> Any:
    out = getattr(m, name)(**_convert(m, arguments(m)))
    values = out if isinstance(out, tuple) else (out,)
    return [(str(v.dtype).split(".")[-1], tuple(v.shape), v.double().numpy()) for v in values]


@pytest.mark.parametrize(
    ("name", "arguments"), CALLS, ids=[f"{i}-{c[0]}" for i, c in enumerate(CALLS)]
)
def test_call_by_keyword_as_torch(name: str, arguments: Callable[[Any], dict]) -> None:
    want, got = _outcome(torch, name, arguments), _outcome(tw, name, arguments)
    assert len(got) == len(want)
    for (g_dtype, g_shape, g), (w_dtype, w_shape, w) in zip(got, want):
        assert (g_dtype, g_shape) == (w_dtype, w_shape)
        tolerance = 1e-6 if w_dtype == "float32" else 1e-12  # (sum(dtype=tw.float32))
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance)


# -- regressions: each failed before this session ---------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m, a, b: m.add(a, other=b),
        lambda m, a, b: m.pow(a, exponent=2),
        lambda m, a, b: m.mm(a, mat2=b.T),
        lambda m, a, b: m.matmul(input=a, other=b.T),
        lambda m, a, b: m.sub(a, b, alpha=2),
        lambda m, a, b: m.div(a, other=b, rounding_mode="floor"),
        lambda m, a, b: m.atan2(a, other=b),
        lambda m, a, b: m.sum(input=a, dim=1),
        lambda m, a, b: m.max(a, other=b),
        lambda m, a, b: a.max(other=b),
        lambda m, a, b: a.pow(exponent=3),
        lambda m, a, b: a.add(other=b, alpha=0.5),
        lambda m, a, b: m.zeros_like(input=a),
    ],
)
def test_brief_examples(call: Callable[..., Any]) -> None:
    # each was a TypeError (unexpected keyword argument), but atan2's and sub's
    want = call(torch, torch.tensor(M), torch.tensor(N))
    got = call(tw, tw.tensor(M), tw.tensor(N))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


METHOD_CALLS = {
    "addcmul": lambda m: {"tensor1": _t(m, N), "tensor2": _t(m, P), "value": 0.5},
    "addcdiv": lambda m: {"tensor1": _t(m, N), "tensor2": _t(m, P)},
    "dot": lambda m: {"tensor": _t(m, V[:4])},
    "outer": lambda m: {"vec2": _t(m, V)},
    "ger": lambda m: {"vec2": _t(m, V)},
    "multiply": lambda m: {"other": _t(m, N)},
    "divide": lambda m: {"other": _t(m, N), "rounding_mode": "floor"},
    "subtract": lambda m: {"other": _t(m, N), "alpha": 2},
    "true_divide": lambda m: {"other": _t(m, N)},
    "maximum": lambda m: {"other": _t(m, N)},
    "less_equal": lambda m: {"other": _t(m, N)},
    "logical_xor": lambda m: {"other": _t(m, N)},
    "pow": lambda m: {"exponent": 2},
    "add": lambda m: {"other": _t(m, N), "alpha": 3},
    "lerp": lambda m: {"end": _t(m, N), "weight": 0.5},
}


def _method_outcome(m: Any, name: str, inplace: bool) -> np.ndarray:
    self = _t(m, V if name in ("dot", "outer", "ger") else M)
    out = getattr(self.clone(), name + "_" * inplace)(**METHOD_CALLS[name](m))
    return out.double().numpy()


@pytest.mark.parametrize("inplace", [False, True], ids=["", "in-place"])
@pytest.mark.parametrize("name", list(METHOD_CALLS))
def test_method_takes_torchs_keywords(name: str, inplace: bool) -> None:
    # (the methods took these through a per-call wrapper, ops/methods.py's
    # TORCH_METHOD_KEYWORDS; now through the functions' own names, as the functions do)
    if inplace and not hasattr(torch.Tensor, name + "_"):
        pytest.skip(f"torch has no {name}_")
    want = _method_outcome(torch, name, inplace)
    np.testing.assert_allclose(_method_outcome(tw, name, inplace), want, rtol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.sum(x, dtype="float32"),
        lambda m, x: m.sum(x, dtype=np.float64),
        lambda m, x: m.cumsum(x, 1, dtype="f"),
        lambda m, x: m.mean(x, 1, dtype=float),
        lambda m, x: m.sum(x, dtype=float),
        lambda m, x: m.prod(x, 0, dtype=int),
        lambda m, x: m.mm(x, [1.0, 2.0]),
        lambda m, x: m.mm(x.tolist(), x.T),
        lambda m, x: m.bmm(x[None], 2),
        lambda m, x: m.dot(x[0], [1.0, 2.0, 3.0, 4.0]),
        lambda m, x: m.max(x, 1, "t"),
        lambda m, x: m.min(x, 1, 1),
    ],
)
def test_wrong_argument_types_as_torch(call: Callable[..., Any]) -> None:
    # a dtype that is no dtype was an AttributeError (torch: TypeError; float is float64),
    # a list for mm's matrix an AttributeError, and max(x, 1, "t") was taken
    def outcome(m: Any) -> Any:
        try:
            out = call(m, m.tensor(M))
        except Exception as error:  # noqa: BLE001 - the class is what is compared
            return type(error).__name__
        return str(out.dtype).split(".")[-1], out.double().numpy()

    got, want = outcome(tw), outcome(torch)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
    else:
        assert got[0] == want[0]
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


# -- the shape, indexing and spelling functions by torch's keywords (second wave) ------------

IDX = RNG.integers(0, 4, (3, 2))
ROWS = np.array([2, 0])
C4 = RNG.standard_normal((2, 3, 4, 2))


def _idx(m: Any, value: np.ndarray = IDX) -> Any:
    return m.tensor(value)


KEYWORD_CALLS: list[tuple[str, Callable[[Any], dict]]] = [
    _unary("reshape", M, shape=(4, 3)),
    _unary("flatten", B3, start_dim=1, end_dim=2),
    _unary("unflatten", M, dim=1, sizes=(2, 2)),
    _unary("squeeze", M[None], dim=0),
    _unary("unsqueeze", M, dim=1),
    _unary("transpose", M, dim0=0, dim1=1),
    _unary("swapaxes", M, axis0=0, axis1=1),
    _unary("swapdims", M, dim0=1, dim1=0),
    _unary("permute", B3, dims=(2, 0, 1)),
    _unary("t", M),
    _unary("narrow", M, dim=1, start=1, length=2),
    _unary("chunk", M, chunks=2, dim=1),
    _unary("unbind", M, dim=1),
    _unary("movedim", B3, source=0, destination=2),
    _unary("moveaxis", B3, source=(0, 1), destination=(1, 2)),
    _unary("broadcast_to", V, size=(3, 4)),
    _unary("flip", M, dims=(0, 1)),
    _unary("roll", M, shifts=1, dims=1),
    _unary("tril", SQ, diagonal=-1),
    _unary("triu", SQ, diagonal=1),
    ("gather", lambda m: {"input": _t(m, M), "dim": 1, "index": _idx(m), "sparse_grad": False}),
    ("index_select", lambda m: {"input": _t(m, M), "dim": 0, "index": _idx(m, ROWS)}),
    (
        "index_add",
        lambda m: {"input": _t(m, M), "dim": 0, "index": _idx(m, ROWS), "source": _t(m, N[:2])},
    ),
    ("scatter", lambda m: {"input": _t(m, M), "dim": 1, "index": _idx(m), "value": 2.5}),
    (
        "scatter_add",
        lambda m: {"input": _t(m, M), "dim": 1, "index": _idx(m), "src": _t(m, N)},
    ),
    ("masked_fill", lambda m: {"input": _t(m, M), "mask": _t(m, M > 0), "value": -1.0}),
    ("masked_select", lambda m: {"input": _t(m, M), "mask": _t(m, M > 0)}),
    ("take_along_dim", lambda m: {"input": _t(m, M), "indices": _idx(m), "dim": 1}),
    ("addmm", lambda m: {"input": _t(m, N[:, :3]), "mat1": _t(m, M), "mat2": _t(m, M.T)}),
    ("addmv", lambda m: {"input": _t(m, V[:3]), "mat": _t(m, M), "vec": _t(m, V), "beta": 2}),
    ("baddbmm", lambda m: {"input": _t(m, B3[:, :, :3]), "batch1": _t(m, B3), "batch2": _t(m, B4)}),
    _unary("tensor_split", M, sections=3, dim=1),
    _unary("tensor_split", M, indices=[1, 3], dim=1),
    ("tensor_split", lambda m: {"input": _t(m, M), "tensor_indices_or_sections": _idx(m, ROWS)}),
    _unary("hsplit", M, sections=2),
    _unary("vsplit", M, indices=[1]),
    _unary("dsplit", C4, sections=2),
    _unary("clone", M),
    _unary("detach", M),
    ("isin", lambda m: {"elements": _t(m, K), "test_element": 3}),
    ("isin", lambda m: {"element": 3, "test_elements": _t(m, K)}),
    ("isin", lambda m: {"elements": _t(m, K), "test_elements": _t(m, J), "invert": True}),
    ("tril_indices", lambda m: {"row": 3, "col": 4, "offset": 1, "requires_grad": False}),
    ("triu_indices", lambda m: {"row": 4, "col": 3, "offset": -1, "requires_grad": False}),
    ("view_copy", lambda m: {"input": _t(m, M), "size": (2, 6)}),
    ("view_copy", lambda m: {"input": _t(m, M), "dtype": m.int64}),
    ("asarray", lambda m: {"obj": [[1.0, 2.0], [3.0, 4.0]], "dtype": m.float64}),
]


@pytest.mark.parametrize(
    ("name", "arguments"),
    KEYWORD_CALLS,
    ids=[f"{i}-{c[0]}" for i, c in enumerate(KEYWORD_CALLS)],
)
def test_shape_and_index_functions_by_keyword(name: str, arguments: Callable[[Any], dict]) -> None:
    # each was a TypeError (their first argument was x, not input; addmm's a and b, ...)
    want, got = _outcome(torch, name, arguments), _outcome(tw, name, arguments)
    assert len(got) == len(want)
    for (g_dtype, g_shape, g), (w_dtype, w_shape, w) in zip(got, want):
        assert (g_dtype, g_shape) == (w_dtype, w_shape)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.numel(input=m.tensor(M)),
        lambda m: m.is_floating_point(input=m.tensor(M)),
        lambda m: m.is_complex(input=m.tensor(M)),
        lambda m: str(m.promote_types(type1=m.int32, type2=m.float32)).split(".")[-1],
        lambda m: str(m.result_type(tensor=m.tensor(K), other=2.5)).split(".")[-1],
        lambda m: str(m.result_type(scalar=2, tensor=m.tensor(M))).split(".")[-1],
        lambda m: str(m.result_type(scalar1=2, scalar2=True)).split(".")[-1],
        lambda m: str(m.result_type(m.tensor(K), m.tensor(J, dtype=m.int8))).split(".")[-1],
    ],
)
def test_queries_by_keyword(call: Callable[[Any], Any]) -> None:
    # each was a TypeError (x, a/b and *operands where torch names input, type1/type2, ...)
    assert call(tw) == call(torch)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.set_num_threads(**{"int": 1}),
        lambda m: m.set_num_threads(num=1),
        lambda m: m.result_type(m.tensor(M), m.tensor(N), m.tensor(P)),
        lambda m: m.reshape(m.tensor(M), (4, 3), shape=(4, 3)),
        lambda m: m.tensor(M).permute(1, dims=(1, 0)),
        lambda m: m.tensor_split(m.tensor(M), 2, sections=2),
        lambda m: m.tensor_split(m.tensor(M), sections=[1, 2]),
        lambda m: m.hsplit(m.tensor(M), indices=2),
        lambda m: m.isin(m.tensor(K), m.tensor(J), test_element=2),
        lambda m: m.view_copy(m.tensor(M), (12,), dtype=m.int64),
    ],
)
def test_keyword_misuse_raises_as_torch(call: Callable[[Any], Any]) -> None:
    # set_num_threads(int=1) and result_type of three operands were taken (torch's binding
    # takes no keyword, and two operands)
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError):
        call(tw)


def test_gather_sparse_grad_refused_clearly() -> None:
    # torch gives a sparse gradient; TensorWeaver has no sparse tensors, so it says so rather
    # than hand back a dense one where a script expects sparse
    x, index = tw.tensor(M, requires_grad=True), tw.tensor(IDX)
    with pytest.raises(NotImplementedError, match="sparse_grad"):
        tw.gather(x, 1, index, sparse_grad=True)
    tw.gather(x, 1, index, sparse_grad=False).sum().backward()
    want = torch.tensor(M, requires_grad=True)
    torch.gather(want, 1, torch.tensor(IDX), sparse_grad=True).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), want.grad.to_dense().numpy())


def test_clone_takes_memory_format() -> None:
    # tw.clone(x) took no memory_format (a TypeError), torch's does
    x = RNG.standard_normal((2, 3, 4, 5))
    got = tw.clone(tw.tensor(x), memory_format=tw.channels_last)
    want = torch.clone(torch.tensor(x), memory_format=torch.channels_last)
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.swapdims_(dim0=0, dim1=1),
        lambda x: x.swapaxes_(axis0=1, axis1=0),
        lambda x: x.resize_as_(the_template=x.T),
    ],
)
def test_in_place_shape_methods_by_keyword(call: Callable[[Any], Any]) -> None:
    # swapdims_ took swapaxes_'s names (axis0=, axis1=): dim0= was a TypeError
    want, got = call(torch.tensor(M)), call(tw.tensor(M))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
