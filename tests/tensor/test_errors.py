"""Bad input raises the built-in error class PyTorch raises, with a message that names the
op and the shapes, devices or dtypes involved."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorweaver as tw
from tensor_reference import like_torch, raises_like_torch, shape_pattern

CROSS_DEVICE = {
    "add": lambda a, b: a + b,
    "mul-reversed": lambda a, b: b * a,
    "matmul": lambda a, b: a @ b.mT,
    "cat": lambda a, b: tw.cat([a, b]),
    "where": lambda a, b: tw.where(a > 0, a, b),
    "maximum": lambda a, b: tw.maximum(a, b),
    "add_": lambda a, b: a.add_(b),
    "gather": lambda a, b: a.gather(1, b.long()),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("op", CROSS_DEVICE.keys())
def test_ops_on_two_devices_name_both(backend, op):
    other = "torch:cpu" if backend != "torch:cpu" else "numpy"
    a = tw.ones(2, 3)
    with tw.device(other):
        b = tw.zeros(2, 3)
    with pytest.raises(RuntimeError) as error:
        CROSS_DEVICE[op](a, b)
    for device in (a.device, b.device):
        assert re.search(re.escape(str(device)), str(error.value)), str(error.value)


def s(*shape: int) -> str:
    return shape_pattern(shape)


# name: (call on either library, arguments (host arrays become float32 tensors),
#        patterns the message must match)
MISUSES = {
    "add-shapes": (lambda m, a, b: a + b, ((2, 3), (4,)), [r"add|\+", s(2, 3), s(4)]),
    "mul-shapes": (lambda m, a, b: a * b, ((2, 3), (3, 2)), [r"mul|\*", s(2, 3), s(3, 2)]),
    "sub-shapes": (lambda m, a, b: b - a, ((5,), (2, 4)), [r"sub|-", s(5), s(2, 4)]),
    "maximum-shapes": (
        lambda m, a, b: m.maximum(a, b),
        ((2, 3), (2, 4)),
        ["maximum", s(2, 3), s(2, 4)],
    ),
    "where-shapes": (
        lambda m, a, b: m.where(a > 0, a, b),
        ((2, 3), (3, 1)),
        ["where", s(2, 3), s(3, 1)],
    ),
    "add_-broadcast-into-smaller": (
        lambda m, a, b: a.add_(b),
        ((3,), (2, 3)),
        ["add_", s(3), s(2, 3)],
    ),
    "matmul-shapes": (lambda m, a, b: a @ b, ((2, 3), (4, 5)), ["matmul|@", s(2, 3), s(4, 5)]),
    "matmul-batch": (
        lambda m, a, b: m.matmul(a, b),
        ((2, 3, 4), (3, 4, 5)),
        ["matmul", s(2, 3, 4), s(3, 4, 5)],
    ),
    "matmul-0d": (lambda m, a, b: m.matmul(a, b), ((), (3,)), ["matmul", "1-?d|dim"]),
    "mm-3d": (lambda m, a, b: m.mm(a, b), ((2, 3, 4), (4, 2)), ["mm", s(2, 3, 4)]),
    "bmm-batch": (
        lambda m, a, b: m.bmm(a, b),
        ((2, 3, 4), (3, 4, 5)),
        ["bmm", s(2, 3, 4), s(3, 4, 5)],
    ),
    "cat-shapes": (lambda m, a, b: m.cat([a, b]), ((2, 3), (2, 4)), ["cat", s(2, 3), s(2, 4)]),
    "stack-shapes": (lambda m, a, b: m.stack([a, b]), ((2, 3), (3, 2)), ["stack", s(2, 3)]),
    "reshape-numel": (lambda m, a: a.reshape(4, 2), ((2, 3),), ["reshape|view", s(4, 2), "6"]),
    "view-numel": (lambda m, a: a.view(-1, 4), ((2, 3),), ["view|reshape", "6"]),
    "expand-shapes": (lambda m, a: a.expand(4, 3), ((2, 3),), ["expand", s(2, 3), s(4, 3)]),
    "permute-dims": (lambda m, a: a.permute(1, 0), ((2, 3, 4),), ["permute"]),
    "sum-dim-out-of-range": (lambda m, a: a.sum(dim=5), ((2, 3),), ["5"]),
    "unsqueeze-dim-out-of-range": (lambda m, a: a.unsqueeze(-4), ((2, 3),), ["-4"]),
    "transpose-dim-out-of-range": (lambda m, a: a.transpose(0, 2), ((2, 3),), ["2"]),
    "index-out-of-range": (lambda m, a: a[5], ((3,),), ["5", "3"]),
    "tensor-index-out-of-range": (lambda m, a: a[m.tensor([0, 5])], ((3,),), ["5", "3"]),
    "float-index": (lambda m, a: a[m.tensor([0.5])], ((3,),), ["ind(ex|ices)", "float"]),
    "gather-ndim": (lambda m, a: a.gather(1, m.tensor([0, 1])), ((2, 3),), ["gather"]),
    "masked_fill-shape": (
        lambda m, a: a.masked_fill(m.tensor([True, False]), 0.0),
        ((2, 3),),
        ["masked_fill", s(2, 3), s(2)],
    ),
    "bitwise-on-floats": (lambda m, a, b: a & b, ((2,), (2,)), [r"and|&", "float"]),
    "negative-size": (lambda m: m.zeros(2, -1), (), ["-1"]),
    "ragged-list": (lambda m: m.tensor([[1.0, 2.0], [3.0]]), (), ["2", "1"]),
}


@pytest.mark.parametrize("name", MISUSES.keys())
def test_misuse_raises_a_clear_error_like_torch(backend, name):
    fn, shapes, patterns = MISUSES[name]
    args = [np.ones(shape, dtype=np.float32) for shape in shapes]
    raises_like_torch(fn, *args, match=patterns)


#: Matrix products of two dtypes: PyTorch promotes elementwise ops but refuses these.
MIXED_PRODUCTS = {
    "matmul-float64": lambda m, a, b: a @ b.double(),
    "matvec-int64": lambda m, a, b: a @ b[:, 0].long(),
    "vecmat-complex": lambda m, a, b: a[0].to(m.complex64) @ b,
    "mm": lambda m, a, b: m.mm(a.double(), b),
    "bmm": lambda m, a, b: m.bmm(a[None], b[None].double()),
    "linear": lambda m, a, b: m.nn.functional.linear(a, b.mT.double()),
    "addmm-input": lambda m, a, b: m.addmm(m.zeros(2, 4, dtype=m.float64), a, b),
    "addmv-input": lambda m, a, b: m.addmv(m.zeros(2, dtype=m.float64), a, b[:, 0]),
    "baddbmm-input": lambda m, a, b: m.baddbmm(m.zeros(1, 2, 4, dtype=m.int64), a[None], b[None]),
    "addbmm-input": lambda m, a, b: m.addbmm(m.zeros(2, 4, dtype=m.float64), a[None], b[None]),
    "vecdot": lambda m, a, b: m.linalg.vecdot(a, b.mT[:2].double()),
    "cdist": lambda m, a, b: m.cdist(a, b.mT.double()),
}


@pytest.mark.parametrize("name", MIXED_PRODUCTS.keys())
def test_matrix_products_of_two_dtypes_raise_like_torch(backend, name):
    a, b = np.ones((2, 3), dtype=np.float32), np.ones((3, 4), dtype=np.float32)
    raises_like_torch(MIXED_PRODUCTS[name], a, b, match=["dtype"])


def test_addr_promotes_like_torch(backend):
    # An outer product's added tensor is promoted by PyTorch, unlike the matrix products'.
    a, b = np.ones((2, 4), np.float32), np.ones((3, 4), np.float32)
    like_torch(lambda m, a, b: m.addr(a.double(), b[0, :2], b[1]), a, b)
