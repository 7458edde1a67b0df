"""Memory shared with host code (API 2.2): the NumPy backend's arrays ARE host arrays.

``tw.from_numpy`` wraps the caller's array itself and ``Tensor.numpy()`` hands out the
tensor's own array, as PyTorch's CPU tensors do; the core writes an in-place result into
such an array with :meth:`HostMemory.write_into` so both sides see it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

A = np.ndarray


def _owner(a: A) -> A:
    """The ndarray at the end of ``a``'s ``.base`` chain: the one whose memory ``a`` uses."""
    base = a.base
    while isinstance(base, np.ndarray):  # NumPy links a view straight to its owner
        a, base = base, base.base
    return a


def _strides(a: A) -> Optional[tuple[int, ...]]:
    """``a``'s strides in elements, or None where the core is to take C order's."""
    # NumPy 2 makes a new empty array with strides of 0 (PyTorch's are C order's: the
    # core's answer where a backend cannot tell); an empty view keeps its base's.
    if type(a) is not np.ndarray or (not a.size and not any(a.strides)):
        return None
    size = a.itemsize
    # (a list built first: cheaper than a generator for a few axes)
    return tuple([s // size for s in a.strides])


class HostMemory:
    """The optional host-memory methods of :data:`tensorweaver.contract.ir.OPTIONAL`."""

    # Views, not the arrays themselves: the caller may reshape its array in place
    # (``a.shape = ...``), which must not change the tensor's, as in PyTorch.
    def wrap_host(self, array: A) -> A:
        return array.view()

    def host_view(self, a: A) -> Optional[A]:
        # A 0-d result may be a NumPy scalar, which owns no memory an array could share.
        return a.view() if type(a) is np.ndarray else None

    def write_into(self, dst: A, src: A) -> bool:
        if type(dst) is not np.ndarray or not dst.flags.writeable:
            return False
        if any(s == 0 and n > 1 for s, n in zip(dst.strides, dst.shape)):
            return False  # a broadcast view: several elements are one memory location
        np.copyto(dst, src)  # NumPy buffers a src that overlaps dst
        return True

    def storage(self, a: A) -> Optional[A]:
        return _owner(a) if type(a) is np.ndarray else None

    def owns_memory(self, a: A) -> bool:
        # An array over memory of its own; every view of it holds it in .base, so the
        # core's count of the references to it sees them.
        return type(a) is np.ndarray and a.base is None and a.flags.writeable

    def memory_users(self, a: A, views: list) -> Optional[int]:
        # NumPy links every view straight to the array that owns the memory (.base): each
        # view holds one reference to a, and any other array or export over that memory
        # holds one more, which the core's count of the references to a then sees.
        return len(views) if self.owns_memory(a) else None

    def strides(self, a: A) -> Optional[tuple[int, ...]]:
        # The address layout() reads (a dict NumPy builds per read) is half its cost.
        return _strides(a)

    def layout(self, a: A) -> Optional[tuple[tuple[int, ...], int, int]]:
        strides = _strides(a)
        if strides is None:
            return None
        size = a.itemsize
        owner = _owner(a)
        address = a.__array_interface__["data"][0]  # (a dict built per read: read it once)
        start = address if owner is a else owner.__array_interface__["data"][0]
        return strides, (address - start) // size, address
