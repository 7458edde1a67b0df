"""The core checks every index a user hands it before a backend sees it: the error class is
PyTorch's CPU one for that op, the message names the op and the bad value, on every backend.
Negative indices count from the end only in advanced indexing (``x[index]``). A mask must
match the dimensions it covers; 0-d masks, Python bools and uint8 masks index as in PyTorch;
``masked_fill``, ``masked_select`` and ``where`` take PyTorch's mask dtypes and shapes.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from tensor_reference import like_torch, raises_like_torch, uniform

X = uniform((3, 4))
X3 = uniform((2, 3, 4), seed=1)
#: Out of range for every dimension of X (and for X flattened): -1 only where PyTorch does
#: not count from the end.
NEGATIVE, LARGE, VERY_NEGATIVE = -1, 12, -13
ALL = (NEGATIVE, LARGE, VERY_NEGATIVE)


def number(value: int) -> str:
    """A regex for ``value`` as a whole number in a message."""
    return rf"(?<![\d-]){re.escape(str(value))}(?!\d)"


def row(m, bad):
    return m.tensor([[0, bad]])


def pair(m, bad):
    return m.tensor([0, bad])


# name: (call on either library with the bad index value, op named in the message, bad values)
OUT_OF_RANGE = {
    "gather-dim0": (lambda m, x, bad: x.gather(0, row(m, bad)), "gather", ALL),
    "gather-dim1": (lambda m, x, bad: m.gather(x, 1, row(m, bad)), "gather", ALL),
    "scatter": (lambda m, x, bad: x.scatter(0, row(m, bad), x[:1, :2]), "scatter", ALL),
    "scatter-value": (lambda m, x, bad: x.scatter(1, row(m, bad), 5.0), "scatter", ALL),
    "scatter_add": (lambda m, x, bad: x.scatter_add(0, row(m, bad), x[:1, :2]), "scatter_add", ALL),
    "scatter_add_": (
        lambda m, x, bad: x.clone().scatter_add_(1, row(m, bad), x[:1, :2]),
        "scatter_add",
        ALL,
    ),
    "scatter_reduce-sum": (
        lambda m, x, bad: x.scatter_reduce(0, row(m, bad), x[:1, :2], "sum"),
        "scatter_reduce",
        ALL,
    ),
    "scatter_reduce-amax": (
        lambda m, x, bad: x.scatter_reduce(1, row(m, bad), x[:1, :2], "amax"),
        "scatter_reduce",
        ALL,
    ),
    "scatter_reduce-mean-without-self": (
        lambda m, x, bad: x.scatter_reduce(0, row(m, bad), x[:1, :2], "mean", include_self=False),
        "scatter_reduce",
        ALL,
    ),
    "index_select-dim0": (lambda m, x, bad: x.index_select(0, pair(m, bad)), "index_select", ALL),
    "index_select-dim1": (
        lambda m, x, bad: m.index_select(x, 1, pair(m, bad)),
        "index_select",
        ALL,
    ),
    "index_select-1d": (lambda m, x, bad: x[0].index_select(0, pair(m, bad)), "index_select", ALL),
    "index_add-dim0": (lambda m, x, bad: x.index_add(0, pair(m, bad), x[:2]), "index_add", ALL),
    "index_add_-dim1": (
        lambda m, x, bad: x.clone().index_add_(1, pair(m, bad), x[:, :2]),
        "index_add",
        ALL,
    ),
    "index_reduce-prod-dim0": (
        lambda m, x, bad: x.index_reduce(0, pair(m, bad), x[:2], "prod"),
        "index_reduce",
        ALL,
    ),
    "index_reduce-amax-dim1": (
        lambda m, x, bad: x.index_reduce(1, pair(m, bad), x[:, :2], "amax"),
        "index_reduce",
        ALL,
    ),
    "take_along_dim-flattened": (
        lambda m, x, bad: m.take_along_dim(x, pair(m, bad)),
        "gather",
        ALL,
    ),
    "embedding": (lambda m, x, bad: m.nn.functional.embedding(pair(m, bad), x), "embedding", ALL),
    "one_hot": (lambda m, x, bad: m.nn.functional.one_hot(pair(m, bad), 4), "one_hot", ALL),
    "bincount": (lambda m, x, bad: m.bincount(pair(m, bad)), "bincount", (-1, -13)),
    "nll_loss": (
        lambda m, x, bad: m.nn.functional.nll_loss(x, m.tensor([0, 1, bad])),
        "nll_loss",
        ALL,
    ),
    "nll_loss-unreduced": (
        lambda m, x, bad: m.nn.functional.nll_loss(x, m.tensor([0, 1, bad]), reduction="none"),
        "nll_loss",
        ALL,
    ),
    "nll_loss-unbatched": (
        lambda m, x, bad: m.nn.functional.nll_loss(x[0], m.tensor(bad)),
        "nll_loss",
        ALL,
    ),
    "cross_entropy": (
        lambda m, x, bad: m.nn.functional.cross_entropy(x, m.tensor([0, 1, bad])),
        "cross_entropy",
        ALL,
    ),
    "cross_entropy-weighted": (
        lambda m, x, bad: m.nn.functional.cross_entropy(
            x, m.tensor([0, 1, bad]), weight=x[0].abs()
        ),
        "cross_entropy",
        ALL,
    ),
    "cross_entropy-smoothed": (
        lambda m, x, bad: m.nn.functional.cross_entropy(
            x, m.tensor([0, 1, bad]), label_smoothing=0.1
        ),
        "cross_entropy",
        ALL,
    ),
    # Advanced indexing counts -1 from the end; beyond -size it is an error too.
    "getitem": (lambda m, x, bad: x[pair(m, bad)], "indexing", (LARGE, VERY_NEGATIVE)),
    "getitem-second-dim": (lambda m, x, bad: x[:, [bad, 0]], "indexing", (LARGE, VERY_NEGATIVE)),
    "setitem": (
        lambda m, x, bad: x.__setitem__(pair(m, bad), 0.0),
        "indexing",
        (LARGE, VERY_NEGATIVE),
    ),
}
CUNUMERIC = {("gather-dim1", NEGATIVE), ("index_select-dim0", LARGE), ("nll_loss", NEGATIVE)}


def out_of_range_cases():
    for name, (_, _, values) in OUT_OF_RANGE.items():
        for bad in values:
            marks = pytest.mark.cunumeric if (name, bad) in CUNUMERIC else ()
            yield pytest.param(name, bad, marks=marks, id=f"{name}-{bad}")


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize(("name", "bad"), list(out_of_range_cases()))
class TestOutOfRangeIndex:
    def test_raises_like_torch_naming_op_and_value(self, backend, name, bad):
        fn, op, _ = OUT_OF_RANGE[name]
        raises_like_torch(lambda m, x: fn(m, x, bad), X, match=[op, number(bad)])


# name: index into X (3, 4) whose mask does not fit the dimensions it covers
BAD_MASKS = {
    "rows-short": lambda m: m.tensor([True, False]),
    "rows-long": lambda m: m.tensor([False, True, False, False]),
    "2d-second-dim": lambda m: m.ones(3, 3, dtype=m.bool),
    "after-slice": lambda m: (slice(None), m.tensor([True, False])),
    "after-ellipsis": lambda m: (Ellipsis, m.tensor([True, False, True])),
    "before-ellipsis": lambda m: (m.tensor([True, False]), Ellipsis),
    "after-none": lambda m: (None, m.tensor([True, False])),
    "after-int": lambda m: (1, m.tensor([True, False])),
    "second-of-two": lambda m: (m.tensor([True, False, True]), m.tensor([True, False, True])),
    "uint8": lambda m: m.tensor([1, 0], dtype=m.uint8),
    "list": lambda m: [True, False],
    "empty": lambda m: m.zeros(0, dtype=m.bool),
}


def mask_cases():
    for name in BAD_MASKS:
        marks = pytest.mark.cunumeric if name == "after-ellipsis" else ()
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.filterwarnings("ignore:indexing with dtype .*uint8")
@pytest.mark.parametrize("name", list(mask_cases()))
class TestMaskShape:
    def test_read_raises_like_torch(self, backend, name):
        index = BAD_MASKS[name]
        raises_like_torch(lambda m, x: x[index(m)], X, match=["mask", r"\[3, 4\]"])

    def test_write_raises_like_torch(self, backend, name):
        index = BAD_MASKS[name]
        raises_like_torch(lambda m, x: x.__setitem__(index(m), 0.0), X, match=["mask"])


# name: index into X3 (2, 3, 4) with a 0-d mask or a Python bool: a new dimension of size 1
# that keeps its element (True) or none (False)
ZERO_D_MASKS = {
    "python-true": lambda m: True,
    "python-false-then-int": lambda m: (False, 1),
    "after-slice": lambda m: (slice(None), m.tensor(True)),
    "with-a-list": lambda m: (m.tensor(True), [0, 1]),
    "separated-from-a-list": lambda m: ([0, 1], slice(None), m.tensor(True)),
    "false-then-int": lambda m: (m.tensor(False), 1),
    "after-ellipsis": lambda m: (Ellipsis, m.tensor(True)),
    "both-ends": lambda m: (m.tensor(True), Ellipsis, m.tensor(True)),
    "after-none": lambda m: (None, m.tensor(True)),
    "int-slice-true": lambda m: (1, slice(None), m.tensor(True)),
    "true-false": lambda m: (m.tensor(True), m.tensor(False)),
    "with-a-2d-index": lambda m: (slice(0, 1), m.tensor(True), m.tensor([[0], [2]])),
    "uint8": lambda m: m.tensor(1, dtype=m.uint8),
}


def zero_d_cases():
    for name in ZERO_D_MASKS:
        marks = pytest.mark.cunumeric if name == "both-ends" else ()
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(zero_d_cases()))
class TestZeroDimMask:
    def test_read_like_torch(self, backend, name):
        index = ZERO_D_MASKS[name]
        like_torch(lambda m, x: x[index(m)], X3)

    def test_write_like_torch(self, backend, name):
        index = ZERO_D_MASKS[name]

        def write(m, x):
            x[index(m)] = 2.5
            return x

        like_torch(write, X3)


# -- index dtypes -----------------------------------------------------------------------------


@pytest.mark.cunumeric
def test_uint8_tensors_index_as_masks_like_torch(backend):
    mask = np.array([1, 0, 1], dtype=np.uint8)
    with pytest.warns(UserWarning, match="uint8"):
        like_torch(lambda m, x, k: x[k], X, mask)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        like_torch(lambda m, x, k: x[k, 1:], X, mask)

        def write_rows(m, x, k):
            x[k] = m.ones(2, 4, dtype=x.dtype)
            return x

        like_torch(write_rows, X, mask)
        # PyTorch writes one value through masked_fill_, which refuses uint8 masks.
        raises_like_torch(lambda m, x, k: x.__setitem__(k, 1.0), X, mask, match=["uint8"])
        raises_like_torch(lambda m, x, k: x.__setitem__((k, 1), 1.0), X, mask, match=["uint8"])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_index_tensors_of_other_dtypes_raise_like_torch(backend, dtype):
    index = np.array([1, 0])
    raises_like_torch(lambda m, x, i: x[i], X, index.astype(dtype), match=[dtype])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.gather(0, m.tensor([[0, 1]], dtype=m.int32)),
        lambda m, x: x.scatter_add(1, m.tensor([[0, 3]], dtype=m.int32), x[:1, :2]),
        lambda m, x: x.scatter_reduce(1, m.tensor([[0, 3]], dtype=m.int32), x[:1, :2], "amin"),
    ],
    ids=["gather", "scatter_add", "scatter_reduce"],
)
def test_int32_positions_are_taken_by_gather_and_scatters_like_torch(backend, call):
    like_torch(call, X)


def test_index_select_edge_cases_like_torch(backend):
    # A 0-d input takes one index 0; an empty dimension takes none.
    like_torch(lambda m, x: x.index_select(0, m.tensor([0])), np.array(1.5))
    raises_like_torch(lambda m, x: x.index_select(0, m.tensor([0, 0])), np.array(1.5))
    raises_like_torch(lambda m, x: x.index_select(0, m.tensor([0])), np.zeros((0, 3)))


# -- masked_fill, masked_select, where --------------------------------------------------------


@pytest.mark.cunumeric
def test_masked_fill_broadcasts_the_mask_out_of_place_only_like_torch(backend):
    mask = uniform((2, 3, 4), seed=3) > 0
    like_torch(lambda m, x, k: x.masked_fill(k, 1.5), X, mask)
    like_torch(lambda m, x, k: m.masked_fill(x, k, 1.5), X, mask)
    raises_like_torch(lambda m, x, k: x.clone().masked_fill_(k, 1.5), X, mask)


def test_masked_fill_takes_a_0d_value_tensor_only_like_torch(backend):
    mask = np.array([True, False, True, False])
    like_torch(lambda m, x, k: x.masked_fill(k, m.tensor(2)), X, mask)
    raises_like_torch(lambda m, x, k: x.masked_fill(k, m.tensor([2.0])), X, mask, match=["0-d"])


def test_masked_select_takes_bool_masks_only_like_torch(backend):
    mask = np.array([1, 0, 1, 0], dtype=np.uint8)
    raises_like_torch(lambda m, x, k: x.masked_select(k), X, mask, match=["bool"])


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_where_takes_a_bool_condition_only_like_torch(backend, dtype):
    cond = (X > 0).astype(dtype)
    raises_like_torch(lambda m, c, x: m.where(c, x, 0.0), cond, X, match=["bool", dtype])
    raises_like_torch(lambda m, c, x: x.where(c, 0.0), cond, X, match=["bool", dtype])
