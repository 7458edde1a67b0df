"""``repr``/``str`` of tensors equal PyTorch's for the same values, character for character,
with PyTorch's ``torch.`` prefix read as ``tensorweaver.`` (the rule in
``tensorweaver/printing.py``): every dtype, 0-d to 4-d, empty, summarised, scientific,
integer-valued, signed zero, nan/inf, extreme magnitudes, the print options, the grad suffixes
and ``grad_fn`` names of the ops common models use."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import make, require
from tensorweaver.printing import get_printoptions, set_printoptions

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

rng = np.random.default_rng(0)

VALUES: dict[str, np.ndarray] = {
    "scalar": np.array(3.25),
    "scalar_int_valued": np.array(-7.0),
    "vector": np.array([1.5, -2.25, 3.0]),
    "int_valued": np.array([[1.0, -2.0], [300.0, 4.0]]),
    "int_valued_wide": np.array([1.0, 20000.0]),
    "matrix": rng.uniform(-3, 3, (3, 4)),
    "cube": rng.uniform(-1, 1, (2, 3, 4)),
    "four_d": rng.uniform(0, 10, (2, 2, 2, 3)),
    "wide_row": rng.uniform(-1, 1, (2, 30)),
    "sci_small": np.array([1.5e-5, 2.0, 3.0]),
    "sci_ratio": np.array([0.01, 25.0, 100.0]),
    "sci_large": np.array([1.0e9, -2.5e9]),
    "tiny": np.array([1e-30, -3e-25]),
    "huge": np.array([1e30, 7e35, -1.0]),
    "negative_zero": np.array([-0.0, 0.0, 1.5]),
    "all_zero": np.zeros((2, 2)),
    "nan_inf": np.array([np.nan, np.inf, -np.inf, 1.5]),
    "nan_inf_int_valued": np.array([np.nan, -np.inf, 2.0]),
    "only_nan": np.array([np.nan, np.nan]),
    "sci_nan": np.array([1e-8, np.nan, np.inf]),
    "big_1d": rng.uniform(-5, 5, 1500),
    "big_2d": rng.uniform(-5, 5, (40, 40)),
    "big_3d": rng.uniform(0, 1, (11, 12, 13)),
    "big_int_valued": np.arange(2000.0).reshape(2, 1000),
    "long_column": rng.uniform(-1, 1, (1200, 1)),
    "rounding": np.array([0.123456789, 2.0 / 3.0]),
    "sci_span": np.array([1e-8, 1.0, 1e8]),
}
INTS: dict[str, np.ndarray] = {
    "scalar": np.array(5),
    "vector": np.array([0, 1, 100, 7]),
    "matrix": np.arange(12).reshape(3, 4) * 11,
    "wide_row": np.arange(60).reshape(2, 30),
    "big": np.arange(3000).reshape(30, 100) % 97,
    "wide": np.array([[1, -1000000], [20, 3]]),
    "extremes": np.array([0, 255, 127, -128]),
}
EMPTY_SHAPES = [(0,), (0, 3), (2, 0, 4)]


SUFFIX_BREAK = re.compile(r",\n +(?=(?:device|size|dtype|requires_grad|grad_fn)=)")


def as_tensorweaver(text: str) -> str:
    """PyTorch's text with TensorWeaver's module name (the one deliberate renaming)."""
    return text.replace("torch.", "tensorweaver.")


def same_text(ours: Any, theirs: Any) -> None:
    """Equal text; where PyTorch's names a ``torch.`` object, the longer ``tensorweaver.``
    may move a suffix to a line of its own, so suffixes are then compared unwrapped."""
    for mine, their in ((repr(ours), repr(theirs)), (str(ours), str(theirs))):
        if "torch." in their:
            mine, their = SUFFIX_BREAK.sub(", ", mine), SUFFIX_BREAK.sub(", ", their)
        assert mine == as_tensorweaver(their)


def both(value: Any, dtype: str | None = None, requires_grad: bool = False) -> tuple[Any, Any]:
    return (
        make(tw, value, dtype, requires_grad=requires_grad),
        make(torch, value, dtype, requires_grad=requires_grad),
    )


@pytest.fixture
def options() -> Iterator[None]:
    """Leave both libraries' print options at their defaults afterwards."""
    yield
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_float_values(backend: str, name: str, dtype: str) -> None:
    require(dtype)
    same_text(*both(VALUES[name], dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(INTS))
def test_integer_and_bool_values(backend: str, name: str, dtype: str) -> None:
    # Wrapped into the dtype's range (int8 sees 255 as -1): any values serve.
    value = INTS[name] % 2 == 1 if dtype == "bool" else INTS[name].astype(dtype)
    same_text(*both(value, dtype))
    same_text(*both(value))  # the dtype inferred from the array


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", *FLOATS])
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty(backend: str, shape: tuple, dtype: str) -> None:
    require(dtype)
    value = np.zeros(shape, dtype=bool if dtype == "bool" else np.float64)
    same_text(*both(value, dtype))


def test_empty_list(backend: str) -> None:
    same_text(*both([]))


def test_default_dtype_float64(backend: str) -> None:
    previous = tw.get_default_dtype(), torch.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for dtype in ("float32", "float64", None):
            same_text(*both(VALUES["matrix"], dtype))
        same_text(*both(np.zeros((0, 2)), None))
    finally:
        tw.set_default_dtype(previous[0])
        torch.set_default_dtype(previous[1])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"precision": 2},
        {"precision": 8},
        {"threshold": 5},
        {"edgeitems": 1, "threshold": 10},
        {"edgeitems": 0, "threshold": 10},
        {"linewidth": 40},
        {"sci_mode": True},
        {"sci_mode": False},
        {"profile": "short"},
        {"profile": "full"},
        {"profile": "short", "precision": 6},
    ],
    ids=repr,
)
def test_print_options(options: None, kwargs: dict) -> None:
    """The options act on the host values the same way on every backend: NumPy's suffices."""
    set_printoptions(**kwargs)
    torch.set_printoptions(**kwargs)
    assert get_printoptions() == torch._tensor_str.get_printoptions()
    with tw.device("numpy"):
        for name in ("matrix", "big_2d", "sci_small", "int_valued", "wide_row"):
            same_text(*both(VALUES[name], "float32"))
        same_text(*both(INTS["big"], "int64"))


def test_unknown_profile_names_the_choices() -> None:
    with pytest.raises(ValueError, match="set_printoptions: unknown profile 'long'.*'short'"):
        set_printoptions(profile="long")


def test_requires_grad_and_parameter(backend: str) -> None:
    same_text(*both(VALUES["matrix"], "float32", requires_grad=True))
    same_text(*both(VALUES["scalar"], "float64", requires_grad=True))
    same_text(tw.nn.Parameter(tw.ones(2, 3)), torch.nn.Parameter(torch.ones(2, 3)))
    wrapped = both(VALUES["wide_row"][:1, :7], "float32", requires_grad=True)
    assert ",\n       requires_grad=True)" in repr(wrapped[1])  # the suffix wraps
    same_text(*wrapped)
    same_text(*both(VALUES["wide_row"][:1, :11], "float64", requires_grad=True))


# Ops whose graph node prints PyTorch's grad_fn name (MulBackward0, ...).
GRAD_FN_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda m, x: x + x,
    "add_scalar": lambda m, x: x + 1,
    "sub": lambda m, x: x - x.exp(),
    "mul": lambda m, x: x * 2,
    "div": lambda m, x: x / 3,
    "neg": lambda m, x: -x,
    "pow": lambda m, x: x**2,
    "pow_tensor": lambda m, x: x**x,
    "exp": lambda m, x: x.exp(),
    "log": lambda m, x: x.abs().log(),
    "sqrt": lambda m, x: x.abs().sqrt(),
    "abs": lambda m, x: x.abs(),
    "tanh": lambda m, x: x.tanh(),
    "sigmoid": lambda m, x: x.sigmoid(),
    "relu": lambda m, x: x.relu(),
    "sin": lambda m, x: x.sin(),
    "cos": lambda m, x: x.cos(),
    "sum": lambda m, x: x.sum(),
    "sum_dim": lambda m, x: x.sum(1),
    "mm": lambda m, x: x.mm(x.T),
    "matmul": lambda m, x: x @ x.T,
    "T": lambda m, x: x.T,
    "permute": lambda m, x: x.permute(1, 0),
    "view": lambda m, x: x.view(-1),
    "reshape": lambda m, x: x.reshape(2, 6),
    "flatten": lambda m, x: x.flatten(),
    "slice": lambda m, x: x[:, 1:],
    "cat": lambda m, x: m.cat([x, x]),
    "expand": lambda m, x: x[:1].expand(3, 4),
    "where": lambda m, x: m.where(x > 0, x, x * 2),
    "cumsum": lambda m, x: x.cumsum(0),
    "gather": lambda m, x: x.gather(1, m.tensor([[0], [1], [2]])),
    "prod": lambda m, x: x.prod(),
    "clone": lambda m, x: x.clone(),
    "to_float64": lambda m, x: x.double(),
    "softmax": lambda m, x: m.nn.functional.softmax(x, 1),
    "log_softmax": lambda m, x: m.nn.functional.log_softmax(x, 1),
    "conv2d": lambda m, x: m.nn.functional.conv2d(
        x.reshape(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2)
    ),
    "embedding": lambda m, x: m.nn.functional.embedding(m.tensor([0, 2]), x),
    "linear": lambda m, x: m.nn.functional.linear(x, x[:2], x[0, :2]),
    "linear_no_bias": lambda m, x: m.nn.functional.linear(x, x[:2]),
    "linear_batched": lambda m, x: m.nn.functional.linear(x.reshape(1, 3, 4), x[:2], x[0, :2]),
    "max_pool2d": lambda m, x: m.nn.functional.max_pool2d(x.reshape(1, 1, 3, 4), 2),
    "cross_entropy": lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([0, 3, 1])),
    "dropout": lambda m, x: m.nn.functional.dropout(x, 0.5),
    "rsub": lambda m, x: 1 - x,
    "rpow": lambda m, x: 2**x,
    "amax": lambda m, x: x.amax(1),
    "max": lambda m, x: x.max(),
    "min": lambda m, x: x.min(),
    "clamp": lambda m, x: x.clamp(min=0),
    "log1p": lambda m, x: x.abs().log1p(),
    "batched_matmul": lambda m, x: x.reshape(3, 1, 4) @ x.reshape(3, 4, 1),
    # Composites the core builds from primitives, labelled with PyTorch's name for the whole.
    "mean": lambda m, x: x.mean(),
    "mean_dim": lambda m, x: x.mean(1),
    "var": lambda m, x: x.var(),
    "std_dim": lambda m, x: x.std(1),
    "norm": lambda m, x: x.norm(),
    "logsumexp": lambda m, x: x.logsumexp(1),
    "unsqueeze": lambda m, x: x.unsqueeze(0),
    "squeeze_all": lambda m, x: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda m, x: x.unsqueeze(0).squeeze(0),
    "t": lambda m, x: x.t(),
    "transpose": lambda m, x: x.transpose(0, 1),
    "repeat": lambda m, x: x.repeat(2, 1),
    "stack": lambda m, x: m.stack([x, x]),
    "split": lambda m, x: x.split(2)[1],
    "split_sizes": lambda m, x: x.split([1, 3], 1)[0],
    "chunk": lambda m, x: x.chunk(2)[0],
    "roll": lambda m, x: x.roll(1, 0),
    "tril": lambda m, x: x.tril(),
    "triu": lambda m, x: x.triu(1),
    "maximum": lambda m, x: m.maximum(x, x * 2),
    "lerp": lambda m, x: x.lerp(x * 2, 0.5),
    "lerp_tensor": lambda m, x: x.lerp(x * 2, m.ones(1)),
    "masked_fill": lambda m, x: x.masked_fill(x > 0, 0),
    "masked_fill_tensor": lambda m, x: x.masked_fill(x > 0, m.tensor(1.0)),
    "index_select": lambda m, x: x.index_select(0, m.tensor([0, 2])),
    "bmm": lambda m, x: m.bmm(x.reshape(1, 3, 4), x.reshape(1, 4, 3)),
}


GRAD_FN = re.compile(r"grad_fn=<\w+>")


@pytest.mark.parametrize("name", sorted(GRAD_FN_OPS))
def test_grad_fn_names(backend: str, name: str) -> None:
    value = VALUES["matrix"]
    ours = GRAD_FN_OPS[name](tw, make(tw, value, "float32", requires_grad=True))
    theirs = GRAD_FN_OPS[name](torch, make(torch, value, "float32", requires_grad=True))
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert GRAD_FN.findall(repr(ours)) == GRAD_FN.findall(repr(theirs))
    # The name outlives backward, which frees what an operand-dependent name was read from.
    before = repr(ours)
    ours.sum().backward()
    assert repr(ours) == before


def _walk(fn: object) -> list:
    """Every (name, input position) pair of a grad_fn graph, depth first, as torchviz walks it."""
    if fn is None:
        return [None]
    return [fn.name(), [_walk(f) for f, _ in fn.next_functions]]


@pytest.mark.parametrize("name", ["mul", "sum", "T", "gather"])
def test_next_functions_walk_the_graph_like_torch(backend: str, name: str) -> None:
    value = VALUES["matrix"]
    ours = GRAD_FN_OPS[name](tw, make(tw, value, "float64", requires_grad=True))
    theirs = GRAD_FN_OPS[name](torch, make(torch, value, "float64", requires_grad=True))
    assert _walk(ours.grad_fn) == _walk(theirs.grad_fn)
    assert ours.grad_fn is ours.grad_fn


@pytest.mark.parametrize("name", ["linear", "conv2d"])
def test_a_composite_lists_one_function_per_argument_like_torch(backend: str, name: str) -> None:
    """Inside a composite the graphs differ (PyTorch's kernels are ours decomposed or fused),
    but its node names one input function per argument, None for an absent bias."""
    value = VALUES["matrix"]
    ours = GRAD_FN_OPS[name](tw, make(tw, value, "float64", requires_grad=True)).grad_fn
    theirs = GRAD_FN_OPS[name](torch, make(torch, value, "float64", requires_grad=True)).grad_fn
    assert [f is None for f, _ in ours.next_functions] == [
        f is None for f, _ in theirs.next_functions
    ]


@pytest.mark.cunumeric
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4, 5)])
def test_cross_entropy_grad_fn_without_a_fused_kernel(backend: str, shape: tuple) -> None:
    """cuPyNumeric has no cross_entropy kernel: its decomposition still ends in PyTorch's
    node name (it printed DivBackward0)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    target = rng.integers(0, shape[1], (shape[0], *shape[2:]))
    ours = tw.nn.functional.cross_entropy(tw.tensor(x, requires_grad=True), tw.tensor(target))
    theirs = torch.nn.functional.cross_entropy(
        torch.tensor(x, requires_grad=True), torch.tensor(target)
    )
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
