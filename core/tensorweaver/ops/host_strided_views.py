"""``numpy()`` of a view whose array is a copy (a diagonal, ``as_strided``/``unfold``
windows, complex parts, ``view(dtype)``, and views of those: ops/views.py), as PyTorch's:
a NumPy array over its base's memory with the view's strides, so writes on either side are
seen by the other.

The base moves into host-shared memory (as ``numpy()`` of it would), and the view then holds
that strided memory itself (the backend's ``wrap_host`` of it), so it sees the host's writes
and its in-place methods write there, as a view that shares its base's array does."""

from __future__ import annotations

from typing import Any

from tensorweaver.tensor import Tensor, _writes_through


class _Interface:
    """An object NumPy makes an array of (``__array_interface__``), which keeps ``base``
    (the array whose memory it points into) alive."""

    def __init__(self, base: Any, interface: dict) -> None:
        self.base = base
        self.__array_interface__ = interface


def share_with_host(view: Tensor) -> Any | None:
    """The NumPy array over the memory ``view`` lies in, with its strides and offset there
    (PyTorch's, :func:`tensorweaver.ops.views.view_layout`); None where they cannot be told
    (a view of a copy the backend made), where ``view`` holds a position twice, or where the
    backend cannot wrap such an array."""
    import numpy as np

    from tensorweaver.ops.views import _overlapping, holds_memory_values, view_layout

    if not holds_memory_values(view):  # (a conjugate: that memory holds other values)
        return None
    if _overlapping(tuple(view.shape), view.stride()) is not False:
        # (a position held twice: a write of the whole view would put the other copies' old
        # values back, so such a view keeps writing through its own array)
        return None
    backend, root = view.backend, view
    while root._view_of is not None:  # up to the tensor whose memory it is
        up = root._view_of[0]
        if backend.storage(up.native) is not backend.storage(root.native):
            if view_layout(root) is None:
                return None
        root = up
    host = backend.host_view(root.native) if _writes_through(root) else root._share_with_host()
    if host is None or not host.size:
        return None
    strides, offset, _ = view._layout()  # (after the move: the base's new memory)
    item = view.dtype.itemsize
    start = offset * item - root._layout()[1] * root.dtype.itemsize
    reach = sum((n - 1) * s for n, s in zip(view.shape, strides)) * item + item
    span = sum((n - 1) * s for n, s in zip(host.shape, host.strides)) + host.itemsize
    if start < 0 or min(strides, default=0) < 0 or (view.numel() and start + reach > span):
        return None
    interface = {
        "version": 3,
        "shape": tuple(view.shape),
        "typestr": np.dtype(view.dtype.numpy_name).str,
        "strides": tuple(s * item for s in strides),
        "data": (host.__array_interface__["data"][0] + start, False),
    }
    strided = np.asarray(_Interface(host, interface))
    native = backend.wrap_host(strided)
    if native is None:
        return None
    view._move_to(native)
    return backend.host_view(view.native)
