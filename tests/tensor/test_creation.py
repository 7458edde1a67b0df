"""Creating tensors, their attributes and conversions, compared with PyTorch's results."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import (
    assert_values,
    host,
    like_torch,
    raises_like_torch,
    require,
    uniform,
)

DATA = {
    "float-matrix": [[1.0, 2.0]],
    "int-list": [1, 2, 3],
    "bool-list": [True, False],
    "mixed-int-float": [1, 2.5],
    "mixed-bool-int": [True, 2],
    "float-scalar": 3.5,
    "int-scalar": 7,
    "bool-scalar": True,
    "empty": [],
    "empty-rows": [[], []],
    "ndarray-float64": np.array([[0.5, -1.0]]),
    "ndarray-float16": np.array([0.5, 2.0], dtype=np.float16),
    "ndarray-int32": np.array([3, -4], dtype=np.int32),
    "ndarray-uint8": np.array([3, 250], dtype=np.uint8),
    "ndarray-bool": np.array([True, False]),
    "ndarray-0d": np.array(2.5),
    "numpy-float64-scalar": np.float64(0.1),
    "numpy-float16-scalar": np.float16(1.5),
    "numpy-int32-scalar": np.int32(3),
    "ndarray-transposed": np.arange(6.0).reshape(2, 3).T,
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("data", DATA.values(), ids=DATA.keys())
def test_tensor_infers_dtype_and_shape_like_torch(backend, data):
    t = like_torch(lambda m: m.tensor(data))
    assert t.device == tw.get_backend()
    assert not t.requires_grad and t.is_leaf and t.grad is None


@pytest.mark.parametrize("name", ["float64", "float32", "float16", "bfloat16", "int8", "bool"])
def test_tensor_with_dtype(backend, name):
    require(name)
    like_torch(lambda m: m.tensor([[0.0, 1.5], [-2.0, 3.0]], dtype=getattr(m, name)))


def test_tensor_requires_grad(backend):
    t = tw.tensor([1.0, 2.0], dtype=tw.float64, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad is None
    assert t.dtype is tw.float64


@pytest.mark.parametrize("np_dtype", ["float64", "float32", "float16", "int64", "int32", "uint8"])
def test_from_numpy_and_as_tensor_keep_the_numpy_dtype(backend, np_dtype):
    array = np.arange(-3, 3).reshape(2, 3).T.astype(np_dtype) % 7  # non-contiguous
    like_torch(lambda m: m.from_numpy(array))
    like_torch(lambda m: m.as_tensor(array))
    like_torch(lambda m: m.as_tensor(array, dtype=m.float64))


def test_as_tensor_returns_a_tensor_itself(backend):
    t = tw.ones(2, 3)
    assert tw.as_tensor(t) is t


SIZES = {"varargs": (2, 3), "tuple": ((2, 3),), "list": ([2, 3],), "0-d": ((),), "empty": (0, 3)}


@pytest.mark.cunumeric
@pytest.mark.parametrize("factory", ["zeros", "ones"])
@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_zeros_ones(backend, factory, size):
    like_torch(lambda m: getattr(m, factory)(*size))
    like_torch(lambda m: getattr(m, factory)(*size, dtype=m.int32))
    t = getattr(tw, factory)(*size, dtype=tw.float64, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.dtype is tw.float64


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_empty_has_shape_and_dtype(backend, size):
    t = tw.empty(*size, dtype=tw.float16)
    assert tuple(t.shape) == tuple(torch.empty(*size).shape)
    assert t.dtype is tw.float16


@pytest.mark.parametrize("value", [1.5, 3, True, -0.0, float("inf")])
def test_full_infers_dtype_from_value(backend, value):
    like_torch(lambda m: m.full((2, 3), value))
    like_torch(lambda m: m.full((2,), value, dtype=m.float64))


@pytest.mark.parametrize("source", ["float64", "int64", "bool"])
def test_like_factories(backend, source):
    x = uniform((2, 3)) * 3
    like_torch(lambda m, x: m.zeros_like(x), x, dtype=source)
    like_torch(lambda m, x: m.ones_like(x), x, dtype=source)
    like_torch(lambda m, x: m.ones_like(x, dtype=m.float16), x, dtype=source)
    like_torch(lambda m, x: m.full_like(x, 2.7), x, dtype=source)
    like_torch(lambda m, x: m.full_like(x, 5, dtype=m.int8), x, dtype=source)
    t = tw.tensor(x, dtype=getattr(tw, source))
    assert tuple(tw.empty_like(t).shape) == (2, 3) and tw.empty_like(t).dtype is t.dtype


def test_random_like_factories(backend):
    t = tw.zeros(40, 50, dtype=tw.float64)
    for sample in (tw.rand_like(t), tw.randn_like(t)):
        assert tuple(sample.shape) == (40, 50) and sample.dtype is tw.float64
        assert sample.device == t.device
    values = host(tw.rand_like(t))
    assert values.min() >= 0.0 and values.max() < 1.0 and len(np.unique(values)) > 1900


ARANGE = {
    "stop": (5,),
    "start-stop": (1, 4),
    "float-step": (0, 1, 0.1),
    "negative-step": (5, 0, -1),
    "float-args": (0.0, 3.0),
    "int-step": (2, 11, 3),
    "empty": (0,),
    "negative-float": (1.0, -1.0, -0.25),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("args", ARANGE.values(), ids=ARANGE.keys())
def test_arange(backend, args):
    like_torch(lambda m: m.arange(*args))
    like_torch(lambda m: m.arange(*args, dtype=m.float64))


@pytest.mark.parametrize(
    "args", [(5, 0, 1), (0, 5, -1), (0, 5, 0), (0.0, float("inf"), 1.0), (0.0, float("nan"))]
)
def test_arange_refuses_what_torch_refuses(backend, args):
    # An empty range the wrong way round was an empty tensor; torch names the mistake.
    raises_like_torch(lambda m: m.arange(*args), match=["arange"])


def test_arange_matches_numpy_in_float64(backend):
    assert_values(tw.arange(-1.5, 2.0, 0.125, dtype=tw.float64), np.arange(-1.5, 2.0, 0.125))


@pytest.mark.parametrize("args", [(0, 1, 5), (-1, 1, 1), (2, 3, 0), (3, -3, 7), (0, 10, 4)])
def test_linspace(backend, args):
    like_torch(lambda m: m.linspace(*args))
    assert_values(tw.linspace(*args, dtype=tw.float64), np.linspace(*args))


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,)])
def test_eye(backend, args):
    like_torch(lambda m: m.eye(*args))
    like_torch(lambda m: m.eye(*args, dtype=m.int64))


@pytest.mark.cunumeric
def test_manual_seed_makes_random_tensors_reproducible(backend):
    for draw in (lambda: tw.rand(50), lambda: tw.randn(5, 10), lambda: tw.randint(0, 9, (50,))):
        tw.manual_seed(1234)
        first = host(draw())
        second = host(draw())
        tw.manual_seed(1234)
        np.testing.assert_array_equal(host(draw()), first)
        assert not np.array_equal(first, second)


def test_rand_and_randn_distributions(backend):
    tw.manual_seed(0)
    uniform_sample = tw.rand(40, 50)
    assert tuple(uniform_sample.shape) == (40, 50) and uniform_sample.dtype is tw.float32
    u = host(uniform_sample)
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.05
    normal_sample = tw.randn((40, 50), dtype=tw.float64)
    assert tuple(normal_sample.shape) == (40, 50) and normal_sample.dtype is tw.float64
    n = host(normal_sample)
    assert abs(n.mean()) < 0.15 and 0.9 < n.std() < 1.1


def test_randint_and_randperm(backend):
    tw.manual_seed(0)
    r = tw.randint(-2, 3, (20, 30))
    assert r.dtype is tw.int64 and tuple(r.shape) == (20, 30)
    assert set(np.unique(host(r))) == {-2, -1, 0, 1, 2}
    p = tw.randperm(50)
    assert p.dtype is tw.int64 and tuple(p.shape) == (50,)
    values = host(p)
    np.testing.assert_array_equal(np.sort(values), np.arange(50))
    assert not np.array_equal(values, np.arange(50))


def test_uniform_and_normal_in_place(backend):
    tw.manual_seed(0)
    x = tw.empty(2000, dtype=tw.float64)
    assert x.uniform_(-1.0, 3.0) is x
    u = host(x)
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.15
    assert x.normal_(mean=5.0, std=0.5) is x
    n = host(x)
    assert abs(n.mean() - 5.0) < 0.05 and 0.45 < n.std() < 0.55


@pytest.fixture
def default_float64() -> Iterator[None]:
    """Float64 as the default dtype in TensorWeaver and in PyTorch, for one test."""
    before = tw.get_default_dtype(), torch.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        tw.set_default_dtype(before[0])
        torch.set_default_dtype(before[1])


def test_default_dtype_is_float32(backend):
    assert tw.get_default_dtype() is tw.float32


def test_set_default_dtype(backend, default_float64):
    assert tw.get_default_dtype() is tw.float64
    like_torch(lambda m: m.tensor([1.5, 2.0]))
    like_torch(lambda m: m.tensor([1, 2]))
    like_torch(lambda m: m.zeros(2))
    like_torch(lambda m: m.full((2,), 0.5))
    like_torch(lambda m: m.arange(0.0, 1.0, 0.5))
    like_torch(lambda m: m.tensor([1, 2]) / 3)
    like_torch(lambda m: m.tensor([1, 2]) * 0.5)
    assert tw.rand(3).dtype is tw.float64 and tw.randn(3).dtype is tw.float64


def test_shape_attributes(backend):
    t = tw.tensor(uniform((2, 3, 4)))
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert t.size() == (2, 3, 4) and t.size(0) == 2 and t.size(-1) == 4
    assert t.dim() == 3 and t.ndim == 3 and t.numel() == 24
    s = tw.tensor(1.5)
    assert s.shape == () and s.dim() == 0 and s.numel() == 1
    e = tw.zeros(0, 5)
    assert e.shape == (0, 5) and e.numel() == 0


@pytest.mark.parametrize(
    "data", [2.5, -7, True, [[1.5]], [3]], ids=["float", "int", "bool", "1x1", "one"]
)
def test_item(backend, data):
    like_torch(lambda m: m.tensor(data).item())


def test_item_of_many_elements_is_an_error(backend):
    with pytest.raises((RuntimeError, ValueError), match="item|element"):
        tw.ones(2, 3).item()


@pytest.mark.parametrize("data", [[[1.5, -2.0]], [[1, 2], [3, 4]], [True, False], 4.0, []])
def test_tolist(backend, data):
    like_torch(lambda m: m.tensor(data).tolist())


@pytest.mark.parametrize("name", ["float64", "float32", "float16", "int64", "int8", "bool"])
def test_numpy(backend, name):
    t = tw.tensor([[1, 0], [2, 3]], dtype=getattr(tw, name))
    array = t.numpy()
    assert isinstance(array, np.ndarray) and array.dtype == np.dtype(name)
    np.testing.assert_array_equal(array, np.array([[1, 0], [2, 3]]).astype(name))


CASTS = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"]


@pytest.mark.cunumeric
@pytest.mark.parametrize("target", CASTS)
@pytest.mark.parametrize("source", ["float64", "float32", "int64", "bool"])
def test_to_dtype_casts_like_torch(backend, source, target):
    require(target)
    # Floats to ints truncate toward zero; values stay in every target's range.
    values = np.array([[-2.75, -0.5, 0.0], [0.5, 1.0, 99.9]])
    if target == "uint8":
        values = np.abs(values)
    like_torch(lambda m, x: x.to(getattr(m, target)), values, dtype=source)


@pytest.mark.parametrize("method", ["float", "double", "long", "int", "bool"])
def test_conversion_methods(backend, method):
    like_torch(lambda m, x: getattr(x, method)(), np.array([-1.5, 0.0, 2.25]))


def test_type_as(backend):
    like_torch(lambda m, x, y: x.type_as(y), np.array([1.7, -2.2]), np.array([1], dtype=np.int32))


def test_clone_is_independent(backend):
    x = tw.tensor([1.0, 2.0])
    c = x.clone()
    c.add_(10.0)
    assert_values(x, [1.0, 2.0])
    assert_values(c, [11.0, 12.0])


def test_data_and_detach_leave_the_graph(backend):
    x = tw.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    for d in (y.detach(), y.data, x.data):
        assert not d.requires_grad and d.is_leaf
    assert_values(y.detach(), [3.0, 6.0])


def test_requires_grad_(backend):
    x = tw.tensor([1.0, 2.0])
    assert x.requires_grad_() is x and x.requires_grad
    assert not x.requires_grad_(False).requires_grad


def test_to_same_device_or_dtype_keeps_the_tensor(backend):
    t = tw.ones(2)
    assert t.to(t.dtype) is t
    assert t.to(t.device) is t


@pytest.mark.cunumeric
def test_to_moves_between_devices_with_gradient(backend):
    other = "torch:cpu" if backend != "torch:cpu" else "numpy"
    x = tw.tensor(uniform((2, 3)), requires_grad=True)
    y = x.to(other)
    assert y.device.name.startswith(other) and y.dtype is tw.float64
    assert y.requires_grad and not y.is_leaf
    assert_values(y, host(x))
    (y * y).sum().backward()
    assert x.grad.device == x.device
    assert_values(x.grad, 2 * host(x))
    back = y.to(backend)
    assert back.device == x.device


def test_tensor_copies_its_data(backend):
    x = uniform((2, 2))
    t = tw.tensor(x)
    expected = x.copy()
    x[...] = 0
    assert_values(t, expected)


# Scripts pass PyTorch's storage keywords (channels_last training loops, pinned loaders):
# each raised TypeError. Values are unchanged; a bad value raises as PyTorch does.
@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.to(memory_format=m.channels_last),
        lambda m, x: x.to(m.float64, memory_format=m.channels_last),
        lambda m, x: m.zeros_like(x, memory_format=m.preserve_format),
        lambda m, x: m.empty_like(x, memory_format=m.channels_last).zero_(),
        lambda m, x: m.ones_like(x, memory_format=m.contiguous_format),
        lambda m, x: m.full_like(x, 2.5, memory_format=m.preserve_format),
        lambda m, x: m.empty(2, 3, 4, 5, memory_format=m.channels_last).zero_(),
        lambda m, x: m.zeros(2, 3, layout=m.strided, pin_memory=False),
        lambda m, x: m.full((2,), 3.0, layout=m.strided),
        lambda m, x: m.rand_like(x, memory_format=m.preserve_format).shape,
    ],
)
def test_storage_keywords_are_taken(call: Any) -> None:
    got = call(tw, tw.ones(2, 3, 4, 5))
    want = call(torch, torch.ones(2, 3, 4, 5))
    if isinstance(want, torch.Size):
        assert tuple(got) == tuple(want)
    else:
        assert got.tolist() == want.tolist() and str(got.dtype)[13:] == str(want.dtype)[6:]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.zeros_like(m.ones(2), memory_format="channels_last"),
        lambda m: m.zeros(2, pin_memory="yes"),
        lambda m: m.zeros(2, foo=1),
        lambda m: m.ones(2).to(memory_format=3),
    ],
)
def test_bad_storage_keywords_raise_type_error(call: Any) -> None:
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError):
        call(tw)
