"""Tensor attributes and in-place shape changes scripts and copied optimizer code use
(``is_sparse``, ``is_pinned()``, ``squeeze_``, ``t_``, ``resize_``, ...), and
``tw.empty_strided``, ``tw.scalar_tensor``, ``tw.fill``, ``tw.can_cast``, against torch."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import same_each
from tw_backends import FAST, entered

sys.path.insert(0, str(Path(__file__).parent.parent / "tensor"))
from tensor_reference import grads_like_torch, like_torch, raises_like_torch  # noqa: E402


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest):
    with entered(request.param) as spec:
        yield spec


X = np.arange(6.0).reshape(2, 3)
CUBE = np.arange(24.0).reshape(2, 3, 4)


def test_layout_facts_are_torchs(backend: str) -> None:
    ours, theirs = tw.tensor(X), torch.tensor(X)
    names = ("is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_vulkan")
    for name in (*names, "is_maia"):
        assert getattr(ours, name) is getattr(theirs, name) is False
    for name in ("is_inference", "is_pinned"):
        assert getattr(ours, name)() is getattr(theirs, name)() is False
    assert tw.is_inference(ours) is torch.is_inference(theirs)
    assert ours.is_same_size(ours.t().t()) and not tw.is_same_size(ours, ours.t())
    assert ours.share_memory_() is ours
    pinned = ours.pin_memory()
    assert pinned is not ours and tw.equal(pinned, ours)
    pinned.zero_()
    assert ours.sum().item() == 15.0  # a copy
    assert tw.is_distributed(ours) is torch.is_distributed(theirs) is False
    assert ours.to_dense() is ours and ours.to_dense(tw.float32).dtype is tw.float32
    assert ours.dense_dim() == theirs.dense_dim() == 2
    assert ours.const_data_ptr() == ours.data_ptr()
    assert ours.record_stream(None) is None
    cube, torch_cube = tw.ones(2, 3, 4), torch.ones(2, 3, 4)
    for order in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        assert cube.permute(order).dim_order() == torch_cube.permute(order).dim_order()


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.squeeze_(),
        lambda x: x.squeeze_(0),
        lambda x: x.squeeze_((0, 2)),
        lambda x: x.unsqueeze_(-1),
        lambda x: x.transpose_(0, 2),
        lambda x: x.swapaxes_(1, 2),
        lambda x: x.swapdims_(0, 1),
        lambda x: x[0].t_(),
    ],
)
def test_in_place_shape_changes_like_torch(backend: str, call) -> None:
    ours, theirs = tw.tensor(X.reshape(1, 2, 3)), torch.tensor(X.reshape(1, 2, 3))
    a, b = call(ours), call(theirs)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(np.asarray(a), b.numpy())
    assert (a is ours) == (b is theirs) and tuple(ours.shape) == tuple(theirs.shape)


def test_in_place_shape_change_of_a_non_leaf_is_in_the_graph(backend: str) -> None:
    def fn(m, x):
        y = x * 2
        y.t_()
        y.unsqueeze_(0)
        y.transpose_(0, 2).squeeze_(2)
        return y * m.arange(6.0, dtype=m.float64).reshape(2, 3)

    grads_like_torch(fn, X)
    raises_like_torch(lambda m, x: x.requires_grad_().t_(), X, match=["leaf"])


@pytest.mark.parametrize(
    "call",
    [lambda x: x.t().t_(), lambda x: x[0].unsqueeze_(0), lambda x: x[:, :1].squeeze_(1)],
)
def test_in_place_shape_change_of_a_view_of_a_leaf_refused_like_torch(backend: str, call) -> None:
    raises_like_torch(lambda m, x: call(x.requires_grad_()), X, match=["view of a leaf"])
    with tw.no_grad():  # allowed there, as in PyTorch
        call(tw.tensor(X, requires_grad=True))


def test_view_changed_in_place_still_writes_into_its_base(backend: str) -> None:
    for m in (tw, torch):
        base = m.tensor(X)
        v = base[0:2]
        v.t_()
        v.mul_(2)
        w = base[1]
        w.unsqueeze_(0)
        w.add_(100)
        np.testing.assert_array_equal(np.asarray(base), X * 2 + [[0], [100]], err_msg=str(m))
        base.zero_()  # the views follow their base as PyTorch's share its memory
        assert tuple(v.shape) == (3, 2) and not v.abs().sum().item(), m
        assert tuple(w.shape) == (1, 3) and not w.abs().sum().item(), m


def test_views_of_a_tensor_changed_in_place_still_share_it(backend: str) -> None:
    for m in (tw, torch):
        base = m.tensor(X)
        row = base[0]
        base.unsqueeze_(0)
        base.fill_(7.0)
        assert row.tolist() == [7.0] * 3, m
        row.zero_()
        assert base.tolist() == [[[0.0] * 3, [7.0] * 3]], m


def test_numpy_memory_stays_shared() -> None:
    host = X.copy()
    with entered("numpy"):
        t = tw.from_numpy(host)
        t.t_()
        t[0].fill_(-1.0)
    assert tuple(host.shape) == (2, 3) and (host[:, 0] == -1).all()


@pytest.mark.parametrize("size", [(3, 2), (2, 2), (4,), (0,), (2, 5)])
def test_resize_like_torch(backend: str, size: tuple) -> None:
    ours, theirs = tw.tensor(X), torch.tensor(X)
    assert ours.resize_(*size) is ours
    theirs.resize_(*size)
    n = min(6, int(np.prod(size)))  # PyTorch's grown elements are uninitialised
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(np.asarray(ours).ravel()[:n], theirs.numpy().ravel()[:n])
    assert (np.asarray(ours).ravel()[n:] == 0).all()
    other = tw.tensor(X)
    assert other.resize_as_(tw.zeros(*size)).shape == ours.shape


def test_resize_refuses_what_torch_refuses(backend: str) -> None:
    raises_like_torch(lambda m, x: x.requires_grad_().resize_(3, 2), X, match=["grad"])
    raises_like_torch(lambda m, x: (x.requires_grad_() * 1).resize_(3), X, match=["grad"])
    raises_like_torch(lambda m, x: x.resize_(2, 3.0), X, match=["int"])
    raises_like_torch(lambda m, x: x.resize_(True), X, match=["int"])
    assert tuple(tw.tensor(X).resize_(tw.tensor(4), np.int64(1)).shape) == (4, 1)


def test_resize_of_a_view_within_its_memory_as_torch(backend: str) -> None:
    # Before session 17 these raised ("shares memory"): PyTorch lays the new shape out
    # contiguously from the view's storage offset, over its base's memory.
    results = []
    for m in (tw, torch):
        base = m.arange(6.0)
        grown = base[:2].resize_(4)
        strided = base.reshape(2, 3)[:, 1:].resize_(2)
        shrunk = base[:4]
        shrunk.resize_(2)  # a contiguous shrink keeps following its base
        shrunk[1] = -1.0
        results.append([grown.tolist(), strided.tolist(), base.tolist()])
    assert results[0] == results[1]

    def beyond(m):  # before session 25: RuntimeError ("beyond the end"); torch grows storage
        base = m.arange(6.0)
        view = base[2:].resize_(30)
        view[4:] = m.arange(26.0)  # (torch's grown elements are uninitialised)
        view[0], base[5] = -1.0, -7.0
        return base, view, view.storage_offset()

    same_each({"beyond": beyond}, backend, decimals=None)


def test_creation_spellings_like_torch(backend: str) -> None:
    for call in (
        lambda m: m.empty_strided((2, 3), (1, 2)).shape,
        lambda m: m.empty_strided((2, 3), (3, 1), dtype=m.int64).dtype,
        lambda m: m.zeros(2).new_empty_strided((4,), (1,), dtype=m.int32).dtype,
        lambda m: m.scalar_tensor(3),
        lambda m: m.scalar_tensor(True, dtype=m.bool),
        lambda m: m.scalar_tensor(m.tensor(2.5), dtype=m.float64),
        lambda m: m.fill(m.ones(2, 2), 3),
        lambda m: m.fill(m.ones(2, dtype=m.int64), 2.7),
        lambda m: m.fill(m.ones(3), m.tensor(4.0)),
    ):
        ours, theirs = call(tw), call(torch)
        if isinstance(theirs, torch.Tensor):
            like_torch(lambda m, c=call: c(m))
        else:
            assert str(ours).rsplit(".", 1)[-1] == str(theirs).rsplit(".", 1)[-1]
    raises_like_torch(lambda m: m.empty_strided((2, 3), (1,)), match=["strides"])
    raises_like_torch(lambda m: m.fill(m.ones(3), m.ones(2)), match=["0-dimension"])
    grads_like_torch(lambda m, v: m.fill(m.ones(2, 3, dtype=m.float64), v), np.array(1.5))


def test_can_cast_like_torch() -> None:
    names = ["bool", "uint8", "int8", "int64", "float16", "float32", "float64", "complex64"]
    for a in names:
        for b in names:
            got = tw.can_cast(getattr(tw, a), getattr(tw, b))
            assert got is torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)
    raises_like_torch(lambda m: m.can_cast(1, m.int8), match=["from_"])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.unsafe_split(x, 2, 2),
        lambda m, x: x.unsafe_split(1),
        lambda m, x: m.unsafe_split_with_sizes(x, [1, 3], -1),
        lambda m, x: x.unsafe_chunk(2, 1),
        lambda m, x: m.unsafe_chunk(x, 3, 2),
    ],
)
def test_unsafe_splits_like_torch(backend: str, call) -> None:
    like_torch(call, CUBE)
    grads_like_torch(lambda m, x: m.cat([p.reshape(-1) for p in call(m, x)]), CUBE)


def test_deprecated_out_of_place_resize_like_torch(backend: str) -> None:
    with pytest.warns(UserWarning, match="deprecated"):
        like_torch(lambda m, x: x.resize(3, 2), X)
    with pytest.warns(UserWarning, match="deprecated"):
        like_torch(lambda m, x: x.resize_as(m.ones(6)), X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads_like_torch(lambda m, x: x.resize(6) * m.arange(6.0, dtype=m.float64), X)
        raises_like_torch(lambda m, x: x.resize(2, 2), X, match=["preserving"])


def test_memory_formats_are_torchs_names() -> None:
    import pickle

    for name in ("channels_last", "channels_last_3d", "contiguous_format", "preserve_format"):
        ours, theirs = getattr(tw, name), getattr(torch, name)
        assert isinstance(ours, tw.memory_format) and isinstance(theirs, torch.memory_format)
        assert repr(ours).replace("tensorweaver", "torch") == repr(theirs)
        assert pickle.loads(pickle.dumps(ours)) is ours
    assert tw.channels_last is not tw.contiguous_format


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.alias_copy(x),
        lambda m, x: m.diagonal_copy(x, 1, 1, 2),
        lambda m, x: m.expand_copy(x[:1], [3, 3, 4]),
        lambda m, x: m.narrow_copy(x, 2, 1, 2),
        lambda m, x: m.permute_copy(x, [2, 0, 1]),
        lambda m, x: m.select_copy(x, 1, -1),
        lambda m, x: m.slice_copy(x, -1, 1, None, 2),
        lambda m, x: m.split_copy(x, 2, 2),
        lambda m, x: m.split_with_sizes_copy(x, [1, 2], 1),
        lambda m, x: m.squeeze_copy(x[:1], 0),
        lambda m, x: m.t_copy(x[0]),
        lambda m, x: m.transpose_copy(x, 0, 2),
        lambda m, x: m.unbind_copy(x, 1),
        lambda m, x: m.unfold_copy(x, 2, 2, 1),
        lambda m, x: m.unsqueeze_copy(x, 1),
        lambda m, x: m.view_copy(x, [4, 6]),
        lambda m, x: m.view_as_real_copy(m.view_as_complex_copy(x.detach().reshape(2, 6, 2))),
    ],
)
def test_view_copies_like_torch(backend: str, call) -> None:
    ours = like_torch(call, CUBE)
    base = tw.tensor(CUBE)
    out = call(tw, base)
    theirs = call(torch, torch.tensor(CUBE))
    for piece, twin in zip(*(o if isinstance(o, tuple) else (o,) for o in (out, theirs))):
        assert piece.is_contiguous() is twin.is_contiguous() is True  # new row-major memory
        piece.add_(1000.0)  # a copy: the input stays
    assert tw.equal(base, tw.tensor(CUBE))

    def flat(m, x):
        out = call(m, x)
        return m.cat([p.reshape(-1) for p in out]) if isinstance(ours, tuple) else out

    if flat(tw, tw.tensor(CUBE, requires_grad=True)).requires_grad:
        grads_like_torch(flat, CUBE)


def test_set_default_tensor_type_like_torch() -> None:
    before, torch_before = tw.get_default_dtype(), torch.get_default_dtype()
    try:
        for t in ("DoubleTensor", "FloatTensor"):
            with pytest.warns(UserWarning, match="deprecated"):
                tw.set_default_tensor_type(getattr(tw, t))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.set_default_tensor_type(getattr(torch, t))
            assert str(tw.get_default_dtype()).split(".")[-1] == str(torch.get_default_dtype())[6:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tw.set_default_tensor_type("torch.DoubleTensor")
            assert tw.ones(1).dtype is tw.float64
            raises_like_torch(lambda m: m.set_default_tensor_type(m.LongTensor), match=["float"])
            if not torch.cuda.is_available():  # then no CUDA device here either: refused
                tw.set_default_dtype(tw.float32)
                spec = "torch.cuda.DoubleTensor"
                raises_like_torch(lambda m: m.set_default_tensor_type(spec), match=["available"])
                assert tw.get_default_dtype() is tw.float32
    finally:
        tw.set_default_dtype(before)
        torch.set_default_dtype(torch_before)
