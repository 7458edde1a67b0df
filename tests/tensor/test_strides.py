"""Memory layout: ``stride``, ``is_contiguous``, ``storage_offset`` and ``data_ptr`` report
the layout of the backend's own array, and match PyTorch's for views (``t``, ``permute``,
stepped slices, ``expand``, ...) and for the results of elementwise ops and reductions.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import uniform

#: Ops whose result's layout PyTorch defines (views, and ops that keep their input's layout).
LAYOUTS: dict[str, Callable[[Any, Any], Any]] = {
    "itself": lambda m, x: x,
    "t": lambda m, x: x[0].t(),
    "mT": lambda m, x: x.mT,
    "permute": lambda m, x: x.permute(2, 0, 1),
    "transpose": lambda m, x: x.transpose(0, 2),
    "stepped_slice": lambda m, x: x[:, ::2, 1:],
    "int_index": lambda m, x: x[1],
    "last_index": lambda m, x: x[..., 0],
    "narrow": lambda m, x: x.narrow(2, 1, 2),
    "chunk": lambda m, x: x.chunk(2, 2)[1],
    "expand": lambda m, x: x[:, :1].expand(2, 5, 4),
    "expand_new_dims": lambda m, x: x[0, 0].expand(3, 4),
    "unsqueeze": lambda m, x: x.unsqueeze(1),
    "squeeze": lambda m, x: x[:, :1].squeeze(1),
    "reshape": lambda m, x: x.reshape(6, 4),
    "flatten_transposed": lambda m, x: x.transpose(0, 1).flatten(),
    "add": lambda m, x: x + 1,
    "add_transposed": lambda m, x: x.transpose(0, 2) + 1,
    "exp_permuted": lambda m, x: x.permute(2, 0, 1).exp(),
    "sum": lambda m, x: x.sum(1),
    "matmul": lambda m, x: x @ x.mT,
    "cat": lambda m, x: m.cat([x, x]),
    "where": lambda m, x: m.where(x > 3, x, 0.0),
    "flip": lambda m, x: x.flip(0),
    "scalar": lambda m, x: x[1, 2, 3],
    "empty": lambda m, x: x[:, :0],
}


def layout(t: Any) -> tuple:
    return t.stride(), t.is_contiguous(), t.storage_offset()


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("source", ["from_numpy", "tensor"])
def test_layout_like_torch(backend: str, name: str, source: str) -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x = tw.from_numpy(a.copy()) if source == "from_numpy" else tw.tensor(a)
    ours = LAYOUTS[name](tw, x)
    theirs = LAYOUTS[name](torch, torch.from_numpy(a.copy()))
    assert layout(ours) == layout(theirs)
    for dim in range(-ours.ndim, ours.ndim):
        assert ours.stride(dim) == theirs.stride(dim)


def test_data_ptr_is_the_arrays_address(backend: str) -> None:
    a = uniform((3, 4))
    t = tw.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    assert t[1].data_ptr() == a[1].ctypes.data
    assert t[:, 2:].data_ptr() - t.data_ptr() == 2 * t.element_size()
    assert t.numpy().ctypes.data == t.data_ptr()


def test_strided_array_keeps_its_strides_like_torch(backend: str) -> None:
    a = uniform((4, 6))[::2, 1::3]
    assert tw.from_numpy(a).stride() == torch.from_numpy(a).stride()
    assert not tw.from_numpy(a).is_contiguous()
    b = np.asfortranarray(uniform((3, 5)))
    assert tw.from_numpy(b).stride() == torch.from_numpy(b).stride() == (1, 3)


def test_elementwise_results_of_contiguous_inputs_are_contiguous(backend: str) -> None:
    x = tw.tensor(uniform((3, 4)))
    for result in (x + x, x.exp(), x * 2.0, x.relu(), x.sum(0), x @ x.t()):
        assert result.is_contiguous()
        assert result.stride() == torch.empty(result.shape).stride()


def test_stride_errors_like_torch(backend: str) -> None:
    for m in (tw, torch):
        with pytest.raises(IndexError):
            m.zeros(2, 3).stride(2)


def test_contiguous_makes_a_contiguous_tensor(backend: str) -> None:
    x = tw.tensor(uniform((3, 4))).t()
    assert not x.is_contiguous()
    assert x.contiguous().is_contiguous()


def test_channels_last_like_torch(backend: str) -> None:
    a = uniform((2, 3, 4, 5))
    # TensorWeaver has no memory-format objects; it reads PyTorch's by name.
    for view in (lambda x: x, lambda x: x.permute(0, 2, 3, 1), lambda x: x[:, :, 0]):
        ours, theirs = view(tw.tensor(a)), view(torch.from_numpy(a))
        for fmt in (torch.channels_last, torch.contiguous_format):
            assert ours.is_contiguous(memory_format=fmt) == theirs.is_contiguous(memory_format=fmt)
    nhwc = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    ours, theirs = tw.from_numpy(nhwc), torch.from_numpy(nhwc)
    assert ours.is_contiguous(memory_format=torch.channels_last)
    assert theirs.is_contiguous(memory_format=torch.channels_last)
    assert ours.is_contiguous() == theirs.is_contiguous() is False


@pytest.mark.cunumeric
def test_contiguous_tensor_reports_c_order(backend: str) -> None:
    t = tw.zeros(2, 3, 4)
    assert t.stride() == (12, 4, 1) and t.is_contiguous() and t.storage_offset() == 0
    assert tw.zeros(()).stride() == ()
