"""Session 34: ``Tensor.untyped_storage()`` (before: AttributeError) against torch 2.13: one
storage object for a tensor, its views (those holding arrays of their own too: ``as_strided``,
``unfold``, ``diagonal``) and its ``detach()`` aliases; its bytes, address, length and element
size; ``storage()``'s typed view of it; ``is_set_to``; the storage a ``set_`` or ``.data``
assignment takes; resizing refused but to its own size. And in-place activations of an
``expand()`` view, which torch refuses whatever the values; the version counter an in-place
shape change (``t_``, ``squeeze_``, ...) moves."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from snippet_outcomes import grid, outcome, same_each


def _family(m: Any) -> list:
    x = grid(m, 12)
    return [
        x,
        x[3:],
        x.view(3, 4).t(),
        x[3:].detach(),
        x.as_strided((3,), (2,), 1),
        x.unfold(0, 3, 2),
        x.view(3, 4).diagonal(),
        x.data,
    ]


def _shared(m: Any) -> Any:
    family = _family(m)
    s = family[0].untyped_storage()
    return (
        [t.untyped_storage() is s for t in family],
        [t.untyped_storage().nbytes() for t in family],
        [t.untyped_storage().data_ptr() - s.data_ptr() for t in family],
        [t.data_ptr() - s.data_ptr() for t in family],
    )


def _facts(m: Any) -> Any:
    s = grid(m, 3, dtype=m.float32).untyped_storage()
    return (s.size(), len(s), s.element_size(), s.untyped() is s, s.is_cuda)


def _apart(m: Any) -> Any:
    a, b = grid(m, 3), grid(m, 3)
    return a.untyped_storage() is b.untyped_storage(), a.untyped_storage().data_ptr() == (
        b.untyped_storage().data_ptr()
    )


def _after_writes(m: Any) -> Any:
    x = grid(m, 6)
    d = x[2:].detach()
    d[0] = -1.0
    x.add_(1)
    return d.untyped_storage() is x.untyped_storage(), d.untyped_storage().nbytes()


def _set_and_data(m: Any) -> Any:
    q, z = m.zeros(4, dtype=m.float64), m.ones(2, dtype=m.float64)
    q.set_(z)
    b = m.zeros(4, dtype=m.float64)
    vb = b[1:]
    b.data = m.ones(6, dtype=m.float64)
    return (
        q.untyped_storage() is z.untyped_storage(),
        vb.untyped_storage() is b.untyped_storage(),
        (b.untyped_storage().nbytes(), vb.untyped_storage().nbytes()),
    )


def _results(m: Any) -> Any:
    made = [
        m.ones(2, 3, dtype=m.float64).t().contiguous(),
        m.ones(2, 3, dtype=m.float64)[:, 1],
        m.ones(3, 1, dtype=m.float64).expand(3, 4),
        m.ones(3, dtype=m.float16),
        m.ones(3, dtype=m.bool),
        m.view_as_real(m.ones(3, dtype=m.complex64)),
        *m.arange(10.0, dtype=m.float64).chunk(3),
    ]
    return [t.untyped_storage().nbytes() for t in made]


def _empty(m: Any) -> Any:
    s = m.empty(0, dtype=m.float64).untyped_storage()
    return s.nbytes(), s.data_ptr()


def _typed(m: Any) -> Any:
    x = grid(m, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (deprecated in both)
        s, h = x[2:].storage(), m.ones(3, dtype=m.float16).storage()
    return (
        (s.size(), len(s), s.nbytes(), s.element_size(), str(s.dtype).split(".")[-1]),
        (s.data_ptr() - x.data_ptr(), s.untyped() is x.untyped_storage()),
        (h.size(), h.element_size(), s.resize_(6), s.size()),
    )


def _set_to(m: Any) -> Any:
    a, e = grid(m, 4, dtype=m.float32), m.ones(0)
    c, d = m.zeros(4), m.zeros(1)
    d.set_(c)
    pairs = [(a, a[:]), (a, a.view(4)), (a, a.detach()), (a, a[1:]), (a, a.view(m.int32))]
    pairs += [(a.view(2, 2), a.view(2, 2)), (a.view(2, 2), a.view(2, 2).t()), (e, m.ones(0))]
    pairs += [(d, c), (a, grid(m, 4, dtype=m.float32))]
    return [x.is_set_to(y) for x, y in pairs], outcome(lambda m: a.is_set_to(1), m)


def _resize(size: int) -> Any:
    return lambda m: grid(m, 3).untyped_storage().resize_(size).nbytes()


PROGRAMS = {
    "a family shares one storage": _shared,
    "facts": _facts,
    "tensors apart": _apart,
    "after writes": _after_writes,
    "set_ and .data": _set_and_data,
    "results of operations": _results,
    "empty": _empty,
    "resize_ to its size": _resize(24),
    "storage()": _typed,
    "is_set_to": _set_to,
}


def test_untyped_storage_as_torchs(spec: str) -> None:
    same_each(PROGRAMS, spec)


@pytest.mark.xfail(
    strict=True,
    reason="resize_ of a storage to another size (FSDP frees parameters' memory with "
    "resize_(0)): ops/untyped_storage.py UntypedStorage.resize_ refuses it (RuntimeError), "
    "as a tensor's memory here is its backend's array, which the functional IR rebinds but "
    "cannot free under the tensors using it. Fix: a storage-level rebind of every tensor "
    "over the memory (tensor.py), which nothing provides yet",
)
@pytest.mark.parametrize("size", [0, 48])
def test_untyped_storage_resize(spec: str, size: int) -> None:
    same_each({"resize_": _resize(size)}, spec)


@pytest.mark.xfail(
    strict=True,
    reason="from_numpy of a slice on numpy: the storage is the slice's owner ndarray (arr[2:]: "
    "80 bytes, storage_offset 2; [:, 1:] of its 2x5 reshape: 80, offset 1), where torch's "
    "from_numpy makes a storage from the slice's first byte to its last (64, offset 0; 72, "
    "offset 0). "
    "Not in _owner (numpy plugin host.py): NumPy links the slice's .base straight to its "
    "owner, so wrap_host's view of it cannot tell the slice. Fix: wrap_host makes a new "
    "memory root over the slice's extent (an ndarray from __array_interface__ held by a "
    "non-ndarray), but backend.storage identity is how the core tells shared memory "
    "(tensor.py _WRITTEN, ops/host_strided_views.py, which wraps its strided views with "
    "wrap_host too, compiler/graph.py aliasing): two from_numpy of overlapping slices would "
    "then count as apart, so those readers must first compare memory ranges",
)
def test_from_numpy_of_a_slice_storage_on_numpy() -> None:
    arr = np.arange(10.0)  # (torch:cpu's storage is torch's: no test there)

    def program(m: Any) -> Any:
        made = (m.from_numpy(arr[2:]), m.from_numpy(arr.reshape(2, 5)[:, 1:]))
        return [(t.storage_offset(), t.untyped_storage().nbytes()) for t in made]

    same_each({"from_numpy": program}, "numpy")


def _activation_in_place(name: str) -> Any:
    def program(m: Any) -> Any:
        expanded = m.ones(1, 3, dtype=m.float64).expand(2, 3)
        return getattr(m.nn.functional, name)(expanded)

    return program


@pytest.mark.parametrize("name", ["relu_", "hardtanh_", "leaky_relu_", "elu_"])
def test_activation_in_place_of_an_expanded_view(spec: str, name: str) -> None:
    same_each({name: _activation_in_place(name)}, spec)


_SHAPE_CHANGES = {
    "squeeze_": lambda v: v.squeeze_(),
    "unsqueeze_": lambda v: v.unsqueeze_(0),
    "t_": lambda v: v.t_(),
    "transpose_": lambda v: v.transpose_(0, 1),
    "as_strided_": lambda v: v.as_strided_((2,), (1,)),
    "resize_": lambda v: v.resize_(2),
}


def _shape_changed(name: str, which: str) -> Any:
    def program(m: Any) -> Any:
        a = m.arange(1.0, 10.0, dtype=m.float64).reshape(3, 3).requires_grad_()
        b = a * 1
        saved = b * b  # (mul saves b)
        family = {"view": b[1:2], "base": b, "alias": b.detach()}
        kept = [b, *family.values(), b[:, 1]]
        _SHAPE_CHANGES[name](family[which])
        versions = [t._version for t in kept]
        try:
            saved.sum().backward()
        except RuntimeError as e:  # torch: b was modified by an inplace operation
            return versions, "modified by an" in str(e)
        return versions, a.grad

    return program


def _grown(which: str) -> Any:
    def program(m: Any) -> Any:
        x = m.zeros(4, dtype=m.float64)
        family = {"view": x[1:], "base": x, "alias": x.detach()}
        family[which].resize_(8)  # (beyond the end of the memory: it grows)
        return [t._version for t in (x, *family.values())]

    return program


@pytest.mark.parametrize("which", ["view", "base", "alias"])
def test_shape_change_in_place_moves_the_shared_counter(spec: str, which: str) -> None:
    programs = {name: _shape_changed(name, which) for name in _SHAPE_CHANGES}
    same_each({**programs, "resize_ grows": _grown(which)}, spec)
