"""Views and shared memory: the divergences tests/tensor/test_sweep_views.py found, each
compared with torch on the same inputs (each failed before its fix), and the view forms of
``unfold``, ``real``/``imag`` and ``view_as_real``/``view_as_complex``.

``Tensor.unfold``, ``Tensor.real``/``imag`` and ``tw.view_as_real``/``view_as_complex`` are
still ops/windows.py's and ops/complex.py's copies (ops/methods.py names them); the view
forms are taken from tensorweaver.ops.views here."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform
from tensorweaver.ops import views

X = uniform((3, 4), seed=11)


def _unfold(m, x, d, size, step):
    return x.unfold(d, size, step) if m is torch else views.unfold(x, d, size, step)


def _part(m, x, name):
    return getattr(x, name) if m is torch else getattr(views, name)(x)


# -- slices -----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [slice(None, None, -1), slice(3, 0, -2), slice(None, None, 0)])
def test_backward_and_zero_slice_steps_are_refused_like_torch(backend: str, key) -> None:
    raises_like_torch(lambda m, x: x[key], X, match=["step"])
    raises_like_torch(lambda m, x: x[:, key], X, match=["step"])


# -- layouts: a view keeps PyTorch's strides after writes --------------------------------------


def test_a_view_keeps_its_strides_after_a_write_through_it_like_torch(backend: str) -> None:
    """A write through ``x[:, :3]`` left it holding its own contiguous array: a reshape of it
    then viewed (and followed ``x``) where PyTorch copies."""

    def fn(m, x):
        z = x.clone()
        v = z.narrow(1, 0, 3)
        v.add_(0.5)
        flat = v.reshape(-1)  # a copy in PyTorch: v is not contiguous
        z.fill_(2.0)
        return flat, v, tuple(v.stride())

    like_torch(fn, X)


def test_a_base_keeps_its_layout_after_a_write_through_a_transposed_view(backend: str) -> None:
    """The write-back of ``z.T[1] = ...`` gave ``z`` a Fortran-ordered array: its transposed
    view then became contiguous and a reshape of it viewed where PyTorch copies."""

    def fn(m, x):
        z = x.clone()
        t = z.movedim(0, 1)
        t[1] = 7.0
        flat = t.reshape(-1)
        z.zero_()
        return flat, tuple(z.stride()), tuple(t.stride())

    like_torch(fn, X)


# -- writes PyTorch refuses: nothing changes ----------------------------------------------------


def test_a_refused_write_into_numpy_memory_changes_nothing_like_torch(backend: str) -> None:
    """The undo of a refused write into host-shared memory restored a copy, which the view
    then held instead of the shared memory (later changes of the base were lost)."""

    def fn(m, a):
        x = m.from_numpy(a)
        e = x.expand(2, 3, 2)
        r = e[0:1]
        with pytest.raises(RuntimeError, match="single memory location"):
            r.add_(0.5)
        flat = r.flatten()  # a copy in PyTorch
        x.sub_(1.0)
        return r.clone(), flat

    host = X[:, :1].copy()
    like_torch(lambda m: fn(m, host.copy()))


def test_a_write_into_elements_an_expand_does_not_repeat_through_a_transpose(
    backend: str,
) -> None:
    """``e.mT[0] = row`` writes one column of ``e``: no element twice (it raised here)."""

    def fn(m, x):
        b = x[:, :1].clone()
        e = b.expand(3, 2)
        e.mT[0] = m.tensor([1.0, 2.0, 3.0], dtype=x.dtype)
        with pytest.raises(RuntimeError, match="single memory location"):
            e.mT.add_(1.0)
        return b, e

    like_torch(fn, X)


def test_a_write_through_a_piece_of_an_expand_updates_the_piece(backend: str) -> None:
    def fn(m, x):
        b = x[:, :1].clone()
        e = b.expand(3, 2)
        piece = e.split(1, 1)[0]  # all of e's rows, its first column
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            piece.index_put_((m.tensor([0, 2]),), m.ones(2, 1, dtype=x.dtype))
        return b, e, piece

    like_torch(fn, X)


# -- several views of one op ------------------------------------------------------------------


@pytest.mark.parametrize(
    "take",
    [
        lambda y: y.unbind(0)[1],
        lambda y: y.split(2, 0)[1],
        lambda y: y.chunk(1, 0)[0],  # one piece: still a view
        lambda y: y.split(2, 1)[0][1],  # a view of a piece
    ],
    ids=["unbind", "split", "chunk-one", "view-of-piece"],
)
def test_pieces_refuse_in_place_changes_with_grad_like_torch(backend: str, take) -> None:
    for m in (torch, tw):
        y = m.tensor(X, requires_grad=True) * 1
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            take(y).mul_(2)
        with m.no_grad():
            take(y).mul_(2)  # allowed without grad


def test_a_piece_used_after_its_base_changed_raises_like_torch(backend: str) -> None:
    """PyTorch raises when the piece is next used in autograd; here at the backward."""
    for m in (torch, tw):
        y = m.tensor(X, requires_grad=True) * 1
        piece = y.unbind(0)[2]
        y.mul_(2)
        with pytest.raises(RuntimeError, match="its base or another view of its base"):
            (piece * 2).sum().backward()


def test_pieces_of_a_tensor_without_grad_are_written_like_torch(backend: str) -> None:
    def fn(m, x):
        z = x.clone()
        for row in z.unbind(0):
            row.mul_(2)
        z.split(3, 1)[1].zero_()
        return z

    like_torch(fn, X)


# -- unfold as a view ---------------------------------------------------------------------------


@pytest.mark.parametrize("size, step", [(2, 2), (3, 1), (1, 3)])
def test_unfold_is_a_view_like_torch(backend: str, size, step) -> None:
    def fn(m, x):
        z = x.clone()
        w = _unfold(m, z, 1, size, step)
        z.mul_(3)  # the windows follow
        if step >= size:  # windows that share no element: writes reach z
            w[0].fill_(-1.0)
            w[:, -1].add_(10)
        return z, w

    like_torch(fn, X)


def test_a_write_into_overlapping_windows_changes_only_what_it_writes(backend: str) -> None:
    """Positions held by two windows: the unchanged copy put the old value back."""

    def fn(m, x):
        z = x.clone()
        w = _unfold(m, z, 1, 2, 1)
        w[0, 0, 1] = 5.0  # z[0, 1], also w[0, 1, 0]
        return z, w

    like_torch(fn, X)


def test_unfold_view_gradients_like_torch(backend: str) -> None:
    grads_like_torch(lambda m, x: _unfold(m, x * 1, 1, 2, 1).sin(), X)

    def fn(m, x):
        z = x * 1
        _unfold(m, z, 0, 2, 1)[1].mul_(3)
        return z.exp()

    grads_like_torch(fn, X)


def test_unfold_errors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, x: _unfold(m, x, 1, 5, 1), X, match=["size"])
    raises_like_torch(lambda m, x: _unfold(m, x, 1, 2, 0), X, match=["step"])


# -- complex parts as views ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["real", "imag"])
def test_complex_parts_are_views_like_torch(backend: str, name: str) -> None:
    def fn(m, re, im):
        z = m.complex(re, im)
        p = _part(m, z, name)
        p[1].fill_(0.25)  # into z
        z.mul_(2j)  # p follows
        return z, p

    like_torch(fn, X, X[::-1].copy())


@pytest.mark.cunumeric
def test_view_as_real_and_complex_are_views_like_torch(backend: str) -> None:
    def fn(m, re, im):
        z = m.complex(re, im)
        r = m.view_as_real(z) if m is torch else views.view_as_real(z)
        r[0, 1, 0] = 9.0
        c = m.view_as_complex(r) if m is torch else views.view_as_complex(r)
        c.mul_(1j)
        return z, r, c

    like_torch(fn, X, X + 1)


# -- view(dtype) ----------------------------------------------------------------------------------


def _view(m, x, dtype):
    # (Tensor.view is ops/views.py's reshape until ops/methods.py names views.view)
    return x.view(dtype) if m is torch else views.view(x, dtype)


@pytest.mark.parametrize(
    "source, target",
    [
        ("float32", "int32"),
        ("float64", "int64"),
        ("int32", "float32"),
        ("uint8", "int8"),
        ("float32", "uint8"),  # smaller items: the last dimension grows
        ("uint8", "float32"),  # larger items: it shrinks
        ("int64", "float32"),
        ("float32", "float32"),
    ],
)
def test_view_as_another_dtype_like_torch(backend: str, source: str, target: str) -> None:
    host = np.arange(24).reshape(2, 12) * 3 + 1

    def fn(m):
        x = m.tensor(host).to(getattr(m, source))
        v = _view(m, x, getattr(m, target))
        return x, v, tuple(v.shape), tuple(v.stride())

    like_torch(fn)


@pytest.mark.cunumeric
def test_writes_through_a_dtype_view_reach_the_base_like_torch(backend: str) -> None:
    host = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)

    def fn(m):
        x = m.tensor(host)
        bits = _view(m, x, m.int32)
        bits[0, 1] = 1065353216  # the bits of 1.0
        x.mul_(2)  # the view follows
        return x, bits

    like_torch(fn)


def test_bfloat16_bits_like_torch(backend: str) -> None:
    if backend != "torch:cpu":
        pytest.skip("bfloat16 is a torch-backend dtype")
    host = np.array([1.0, -2.5, 3.0e10, 0.0], dtype=np.float32)
    like_torch(lambda m: _view(m, m.tensor(host).to(m.bfloat16), m.int16))
    like_torch(lambda m: _view(m, m.tensor([16256, -16160], dtype=m.int16), m.bfloat16))


@pytest.mark.parametrize(
    "make, target",
    [
        (lambda m: m.zeros((), dtype=m.uint8), "int16"),  # 0-d
        (lambda m: m.zeros(6, dtype=m.uint8), "float32"),  # 6 bytes are no whole float
        (lambda m: m.zeros(3, 2, dtype=m.uint8).T, "int16"),  # a strided last dimension
        (lambda m: m.zeros(6, dtype=m.uint8)[1:5], "int16"),  # a misaligned offset
        (lambda m: m.zeros(2, 3, dtype=m.uint8)[:, :2], "int16"),  # an odd row stride
        (lambda m: m.zeros(4, 2, dtype=m.int16).T, "uint8"),
    ],
)
def test_view_dtype_errors_like_torch(backend: str, make, target: str) -> None:
    raises_like_torch(lambda m: _view(m, make(m), getattr(m, target)), match=[r"to view \w+ as"])
