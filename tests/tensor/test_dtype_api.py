"""Dtype introspection as in PyTorch: aliases (``tw.float``, ``tw.long``, ...), dtype
attributes, ``tw.finfo``/``tw.iinfo``, ``x.type()`` and the legacy ``tw.FloatTensor`` types,
the byte-size methods, and ``set_default_dtype`` as every factory and layer sees it.

Each case runs the same call on tensorweaver and on PyTorch and compares the results.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import assert_like_torch, dtype_name, make, raises_like_torch, supports
from tensorweaver.contract import dtypes

DTYPES = tuple(d.name for d in dtypes.ALL)  # every tensorweaver dtype
ALIASES = ("float", "double", "half", "long", "int", "short", "cfloat", "cdouble")
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTEGERS = ("uint8", "int8", "int16", "int32", "int64")
LEGACY = (
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "FloatTensor",
    "DoubleTensor",
)


def both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    return fn(tw), fn(torch)


# -- dtype objects ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPES + ALIASES)
def test_dtype_names_and_attributes_match_torch(name: str) -> None:
    ours, theirs = both(lambda m: getattr(m, name))
    assert str(ours).replace("tensorweaver.", "torch.") == str(theirs)
    assert ours is getattr(tw, dtype_name(theirs))
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert dtype_name(ours.to_real()) == dtype_name(theirs.to_real())
    assert isinstance(ours, tw.dtype)


@pytest.mark.parametrize("name", DTYPES)
def test_dtypes_pickle_to_themselves(name: str) -> None:
    dtype = getattr(tw, name)
    assert pickle.loads(pickle.dumps(dtype)) is dtype


@pytest.mark.parametrize("name", ("float32", "float64", "complex64", "complex128"))
def test_to_complex_matches_torch(name: str) -> None:
    ours, theirs = both(lambda m: getattr(m, name).to_complex())
    assert dtype_name(ours) == dtype_name(theirs)


@pytest.mark.parametrize("name", ("float16", "bfloat16", "int64", "bool"))
def test_to_complex_of_a_dtype_without_a_complex_twin_is_a_type_error(name: str) -> None:
    # torch has complex32 for float16 (and errors for the rest); tensorweaver has no complex32.
    with pytest.raises(TypeError, match="complex counterpart"):
        getattr(tw, name).to_complex()


# -- finfo and iinfo ---------------------------------------------------------------------------

FINFO_FIELDS = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")


@pytest.mark.parametrize("name", FLOATS + ("complex64", "complex128"))
def test_finfo_matches_torch(name: str) -> None:
    ours, theirs = both(lambda m: m.finfo(getattr(m, name)))
    for field in FINFO_FIELDS:
        assert getattr(ours, field) == getattr(theirs, field), field
        assert type(getattr(ours, field)) is type(getattr(theirs, field)), field
    assert repr(ours) == repr(theirs)
    assert ours == tw.finfo(getattr(tw, name)) and hash(ours) == hash(tw.finfo(getattr(tw, name)))


@pytest.fixture
def default_float64() -> Iterator[None]:
    """PyTorch and tensorweaver both with float64 as the default dtype, restored after."""
    before = tw.get_default_dtype(), torch.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    torch.set_default_dtype(torch.float64)
    yield
    tw.set_default_dtype(before[0])
    torch.set_default_dtype(before[1])


def test_finfo_defaults_to_the_default_dtype() -> None:
    assert tw.finfo().dtype == torch.finfo().dtype


def test_finfo_follows_set_default_dtype(default_float64: None) -> None:
    assert tw.finfo().dtype == torch.finfo().dtype == "float64"
    assert tw.finfo().eps == torch.finfo().eps


@pytest.mark.parametrize("name", INTEGERS)
def test_iinfo_matches_torch(name: str) -> None:
    ours, theirs = both(lambda m: m.iinfo(getattr(m, name)))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
        assert type(getattr(ours, field)) is type(getattr(theirs, field)), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.finfo(m.int32),
        lambda m: m.finfo(m.bool),
        lambda m: m.iinfo(m.float32),
        lambda m: m.iinfo(m.bool),
        lambda m: m.finfo("float32"),
        lambda m: m.iinfo(),
    ],
    ids=["finfo-int", "finfo-bool", "iinfo-float", "iinfo-bool", "finfo-str", "iinfo-none"],
)
def test_info_of_the_wrong_kind_raises_like_torch(call: Callable[[Any], Any]) -> None:
    raises_like_torch(call)


# -- tensor introspection --------------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", DTYPES)
def test_size_and_kind_methods_match_torch(backend: str, name: str) -> None:
    if not supports(name):
        pytest.skip(f"{backend} has no {name}")
    ours, theirs = both(lambda m: make(m, np.ones((2, 3)), name))
    assert ours.type() == theirs.type()
    for method in ("element_size", "ndimension", "is_floating_point", "is_complex", "is_signed"):
        assert getattr(ours, method)() == getattr(theirs, method)(), method
    assert (ours.nbytes, ours.itemsize) == (theirs.nbytes, theirs.itemsize)
    assert tw.is_complex(ours) == torch.is_complex(theirs)
    assert tw.is_floating_point(ours) == torch.is_floating_point(theirs)


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "target",
    [
        lambda m: m.float64,
        lambda m: m.int32,
        lambda m: m.LongTensor,
        lambda m: m.BoolTensor,
        lambda m: "torch.DoubleTensor",
        lambda m: "torch.ByteTensor",
        lambda m: "torch.HalfTensor",
    ],
    ids=["float64", "int32", "LongTensor", "BoolTensor", "str-double", "str-byte", "str-half"],
)
def test_type_converts_like_torch(backend: str, target: Callable[[Any], Any]) -> None:
    ours, theirs = both(lambda m: make(m, np.array([[0.0, 1.5], [-2.5, 3.0]])).type(target(m)))
    assert_like_torch(ours, theirs)


def test_type_accepts_the_tensorweaver_prefix(backend: str) -> None:
    x = tw.tensor([1.5, 2.0])
    assert x.type("tensorweaver.LongTensor").dtype is tw.int64
    assert x.type(dtype="torch.IntTensor").dtype is tw.int32


def test_type_to_the_same_dtype_returns_the_tensor(backend: str) -> None:
    x = tw.tensor([1.5, 2.0])
    assert x.type(tw.float32) is x and x.type("torch.FloatTensor") is x


@pytest.mark.parametrize("bad", ["float", "torch.Foo", "FloatTensor", int])
def test_type_rejects_unknown_types_like_torch(backend: str, bad: Any) -> None:
    raises_like_torch(lambda m: m.zeros(2).type(bad), match=["invalid type"])


def test_type_refuses_to_move_devices_by_name(backend: str) -> None:
    with pytest.raises(ValueError, match=r"x\.to\(device, dtype\)"):
        tw.zeros(2).type("torch.cuda.FloatTensor")


# -- legacy constructors -----------------------------------------------------------------------


@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize(
    "data", [[1, 0, 2], (1.5, 2.7), [[1, 2], [3, 4]], np.array([0.5, 3.0])], ids=str
)
def test_legacy_constructor_from_data(backend: str, name: str, data: Any) -> None:
    if not supports(dtype_name(getattr(torch, name).dtype)):
        pytest.skip(f"{backend} has no {name}")
    ours, theirs = both(lambda m: getattr(m, name)(data))
    assert_like_torch(ours, theirs)
    assert isinstance(ours, getattr(tw, name)) and isinstance(theirs, getattr(torch, name))
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(ours, getattr(tw, other))


@pytest.mark.parametrize(
    "sizes", [(), (3,), (2, 3), (torch.Size([2, 4]),)], ids=["none", "n", "n-m", "Size"]
)
def test_legacy_constructor_from_sizes(backend: str, sizes: tuple) -> None:
    ours_sizes = tuple(tw.Size(s) if isinstance(s, torch.Size) else s for s in sizes)
    ours, theirs = tw.FloatTensor(*ours_sizes), torch.FloatTensor(*sizes)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype is tw.float32


def test_legacy_constructor_of_a_tensor(backend: str) -> None:
    x = tw.tensor([1, 2])
    assert tw.LongTensor(x) is x
    raises_like_torch(lambda m: m.FloatTensor(m.tensor([1, 2])))


def test_legacy_constructor_rejects_a_scalar(backend: str) -> None:
    raises_like_torch(lambda m: m.FloatTensor(2.5), match=["sequence"])


def test_legacy_type_facts() -> None:
    for name in LEGACY:
        ours, theirs = getattr(tw, name), getattr(torch, name)
        assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
        assert ours.is_cuda == theirs.is_cuda
        assert repr(ours) == repr(theirs).replace("torch.", "tensorweaver.")


# -- the default dtype in every factory ----------------------------------------------------------

FACTORIES: dict[str, Callable[[Any], Any]] = {
    "tensor-floats": lambda m: m.tensor([1.0, 2.5]),
    "tensor-float-scalar": lambda m: m.tensor(1.5),
    "tensor-mixed": lambda m: m.tensor([[1, 2.5], [3, 4]]),
    "tensor-empty": lambda m: m.tensor([]),
    "tensor-ints": lambda m: m.tensor([1, 2]),
    "tensor-bools": lambda m: m.tensor([True]),
    "tensor-numpy32": lambda m: m.tensor(np.ones(2, np.float32)),
    "tensor-numpy64": lambda m: m.tensor(np.ones(2)),
    "tensor-numpy-scalar": lambda m: m.tensor(np.float32(1.5)),
    "as_tensor": lambda m: m.as_tensor([1.0]),
    "full_like-int": lambda m: m.full_like(m.tensor([1, 2]), 1.5),
    "zeros": lambda m: m.zeros(2, 3),
    "ones": lambda m: m.ones(2),
    "empty": lambda m: m.empty(2),
    "full-float": lambda m: m.full((2,), 1.5),
    "full-int": lambda m: m.full((2,), 1),
    "full-bool": lambda m: m.full((2,), True),
    "rand": lambda m: m.rand(2),
    "randn": lambda m: m.randn(2, 2),
    "randint": lambda m: m.randint(0, 5, (3,)),
    "randperm": lambda m: m.randperm(4),
    "arange-int": lambda m: m.arange(5),
    "arange-float-step": lambda m: m.arange(0, 1, 0.25),
    "arange-float-end": lambda m: m.arange(2.5),
    "arange-float-start": lambda m: m.arange(0.5, 3),
    "linspace": lambda m: m.linspace(0, 1, 5),
    "eye": lambda m: m.eye(3),
    "eye-rect": lambda m: m.eye(2, 3),
    "int-true-divide": lambda m: m.tensor([1, 2]) / 2,
    "int-times-float": lambda m: m.tensor([1, 2]) * 1.5,
    "int-sqrt": lambda m: m.sqrt(m.tensor([1, 4])),
    "float-method": lambda m: m.tensor([1, 2]).float(),
    "linear": lambda m: m.nn.Linear(2, 3).weight,
    "linear-bias": lambda m: m.nn.Linear(2, 3).bias,
    "bilinear": lambda m: m.nn.Bilinear(2, 2, 3).weight,
    "conv2d": lambda m: m.nn.Conv2d(1, 2, 3).weight,
    "conv-transpose": lambda m: m.nn.ConvTranspose2d(1, 2, 3).bias,
    "layer-norm": lambda m: m.nn.LayerNorm(4).weight,
    "rms-norm": lambda m: m.nn.RMSNorm(4).weight,
    "group-norm": lambda m: m.nn.GroupNorm(2, 4).bias,
    "batch-norm-buffer": lambda m: m.nn.BatchNorm1d(3).running_mean,
    "embedding": lambda m: m.nn.Embedding(5, 2).weight,
    "lstm": lambda m: m.nn.LSTM(2, 3).weight_ih_l0,
    "gru": lambda m: m.nn.GRU(2, 3).bias_hh_l0,
    "attention": lambda m: m.nn.MultiheadAttention(4, 2).in_proj_weight,
    "prelu": lambda m: m.nn.PReLU().weight,
}


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_honour_set_default_dtype(backend: str, default_float64: None, name: str):
    ours, theirs = both(FACTORIES[name])
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype), name


def test_the_default_dtype_is_process_wide(default_float64: None) -> None:
    # PyTorch's default dtype is one setting for the process: a thread sees it too.
    import threading

    seen = []
    thread = threading.Thread(
        target=lambda: seen.append((tw.get_default_dtype(), tw.ones(1).dtype))
    )
    thread.start()
    thread.join()
    assert seen == [(tw.float64, tw.float64)]
