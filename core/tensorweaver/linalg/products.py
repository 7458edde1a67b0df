"""Products and polynomials of matrices: ``matrix_power``, ``matrix_exp``, ``multi_dot``,
``cross``, ``vander``, ``vecdot``, and ``tw.linalg``'s names for ``matmul`` and
``diagonal``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tensorweaver.amp import autocast_dtype
from tensorweaver.contract import dtypes
from tensorweaver.linalg._shared import eye_like, mH, to_batch
from tensorweaver.linalg.errors import check_float, check_square, need_tensor
from tensorweaver.linalg.fused import fused_or_reference
from tensorweaver.linalg.solvers import inv
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import structure as st
from tensorweaver.ops.apply import broadcast_shapes
from tensorweaver.ops.complex import conj_physical
from tensorweaver.ops.linalg import autocast_operands, matmul
from tensorweaver.tensor import Tensor

#: Taylor terms of exp after scaling the matrix to a 1-norm of at most 1/2: the remainder
#: is below 0.5**19 / 19! (1e-23), under float64's rounding.
_TAYLOR_TERMS = 18


def matrix_power(input: Tensor, n: int) -> Tensor:  # noqa: A002  (PyTorch's name)
    """A^n by repeated squaring for A = ``input`` (n = 0: the identity; n < 0: the inverse's
    power)."""
    need_tensor("linalg.matrix_power", input, "input")
    A = input
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, got shape {list(A.shape)}"
        )
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        eye = to_batch(eye_like(A, A.shape[-1]), A.shape[:-2])
        # (PyTorch writes the identity into a copy of A: CopyBackwards over CloneBackward0)
        return A.clone().copy_(eye) if A.requires_grad else eye.clone()
    if n == 1:  # a copy, as PyTorch's (CloneBackward0): never the input itself
        return A.clone()
    if n < 0:
        A, n = inv(A), -n
    if n == 3:  # PyTorch's order of the products (its node's inputs: (A @ A, A))
        return matmul(matmul(A, A), A)
    result = None
    while n:
        if n & 1:
            result = A if result is None else matmul(result, A)
        n >>= 1
        if n:
            A = matmul(A, A)
    return result


def matrix_exp(A: Tensor) -> Tensor:
    """e^A: the backend's whole kernel where it has one (``linalg_function``), else scaling
    and squaring: A / 2^s has a 1-norm of at most 1/2, its exponential a Taylor series,
    squared s times."""
    need_tensor("linalg.matrix_exp", A, "input")
    if A.dtype in (dtypes.float16, dtypes.bfloat16):  # PyTorch has these on the CPU too
        # (its own half kernel overflows to inf / nan on ordinary matrices: in float32 here)
        return matrix_exp(A.to(dtypes.float32)).to(A.dtype)
    check_square("linalg.matrix_exp", A, complex_ok=True)
    check_float("linalg.matrix_exp", A, complex_ok=True)
    return fused_or_reference(
        "matrix_exp",
        "LinalgMatrixExpBackward0",
        _matrix_exp,
        (A,),
        (),
        (None,),
        formula=_matrix_exp_backward,
    )[0]


def _matrix_exp_backward(saved: tuple, grads: tuple) -> tuple:
    """PyTorch's gradient of e^A: the top right block of exp([[A^H, G], [0, A^H]]), from A
    as it is at backward (PyTorch's node saves A, whose memory a write through ``.data``
    reaches), not the scaling and squaring's intermediates."""
    a, g = saved[0], grads[0]
    n = a.shape[-1]
    a_h = mH(a)
    top = mv.cat([a_h, g], -1)
    bottom = mv.cat([cr.zeros_like(a_h), a_h], -1)
    block = matrix_exp(mv.cat([top, bottom], -2))
    return (mv.narrow(mv.narrow(block, -2, 0, n), -1, n, n),)


def _matrix_exp(A: Tensor) -> tuple[Tensor]:
    if A.numel() == 0:
        return (A.clone(),)
    wide = {dtypes.float32: dtypes.float64, dtypes.complex64: dtypes.complex128}.get(A.dtype)
    if wide in A.backend.dtypes:  # (a device without double precision stays in single)
        # In double precision, rounded once: the s squarings in single precision lose about
        # s bits of the small entries (torch 2.13's own float32 result is ~1e-3 off in some)
        return (_matrix_exp(A.to(wide))[0].to(A.dtype),)
    largest = float(rd.amax(rd.sum(ew.abs(A.detach()), -2)).item())
    # (no scaling for a non-finite norm: its logarithm has no integer ceiling)
    steps = math.ceil(math.log2(largest / 0.5)) if 0.5 < largest < math.inf else 0
    scaled = ew.mul(A, 0.5**steps)
    term = to_batch(eye_like(A, A.shape[-1]), A.shape[:-2])
    total = term
    for k in range(1, _TAYLOR_TERMS + 1):
        term = ew.mul(matmul(term, scaled), 1.0 / k)
        total = ew.add(total, term)
    for _ in range(steps):
        total = matmul(total, total)
    return (total,)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of 2-d matrices (the first may be a row vector, the last a column one)
    in the order of fewest multiplications."""
    mats = list(tensors)
    if len(mats) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(mats)}")
    first, last = mats[0].ndim == 1, mats[-1].ndim == 1
    if first:
        mats[0] = mv.unsqueeze(mats[0], 0)
    if last:
        mats[-1] = mv.unsqueeze(mats[-1], -1)
    for i, m in enumerate(mats):
        if m.ndim != 2:
            raise RuntimeError(
                f"multi_dot(): tensor {i} must be 2D{' or 1D' if i in (0, len(mats) - 1) else ''}"
                f" but got {m.ndim}D"
            )
        if m.dtype is not mats[0].dtype:  # PyTorch never promotes a matrix product
            raise RuntimeError(
                f"multi_dot(): all tensors must have the same dtype, but tensor 0 is "
                f"{mats[0].dtype.name} and tensor {i} is {m.dtype.name}; convert them with .to()"
            )
        if i and mats[i - 1].shape[1] != m.shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i - 1} and {i} with shapes {list(mats[i - 1].shape)} "
                f"and {list(m.shape)} cannot be multiplied"
            )
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    split = _order(dims)
    product = _chain(mats, split, 0, len(mats) - 1)
    if first:
        product = mv.squeeze(product, 0)
    if last:
        product = mv.squeeze(product, -1)
    return product


def _order(dims: list[int]) -> np.ndarray:
    """The matrix chain's cheapest split points (dynamic programming over sub-chains)."""
    n = len(dims) - 1
    cost = np.zeros((n, n))
    split = np.zeros((n, n), np.int64)
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            options = [
                cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                for k in range(i, j)
            ]
            best = int(np.argmin(options))
            cost[i, j], split[i, j] = options[best], i + best
    return split


def _chain(mats: list[Tensor], split: np.ndarray, i: int, j: int) -> Tensor:
    if i == j:
        return mats[i]
    k = int(split[i, j])
    return matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The 3-vector cross product along ``dim``, the operands broadcast."""
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions, got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    st.check_cross_dtypes("linalg.cross", input, other)
    axis = dim + input.ndim if dim < 0 else dim
    if 0 <= axis < input.ndim and (input.shape[axis] != 3 or other.shape[axis] != 3):
        # checked before broadcasting, as PyTorch does (an out-of-range dim raises below)
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[axis]} and {other.shape[axis]}"
        )
    broadcast_shapes("linalg.cross", input.shape, other.shape)  # (its error names linalg.cross)
    # st.cross broadcasts them: its node's inputs are these, as PyTorch's
    return st.cross(input, other, dim)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803  (PyTorch's name)
    """Columns x^0, x^1, ..., x^(N-1) (N = the length of x's last dimension)."""
    need_tensor("linalg.vander", x, "x")
    refused = {dtypes.bool: "Bool", dtypes.float16: "Half", dtypes.bfloat16: "BFloat16"}
    if x.dtype in refused:  # PyTorch's kernel has float32/64, complex and integers only
        raise RuntimeError(
            f"linalg.vander supports floating point, complex, and integer tensors, but got "
            f"{refused[x.dtype]}"
        )
    if not x.dtype.is_floating_point and not x.dtype.is_complex:
        x = x.to(dtypes.int64)  # integers in int64, as PyTorch's (a cumulative product)
    x = mv.reshape(x, (1,)) if x.ndim == 0 else x  # a 0-d x is one point, as PyTorch's
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {n}")
    # A real range converted: complex ranges do not exist
    powers = cr.arange(n, device=x.device).to(x.dtype)
    return ew.pow(mv.unsqueeze(x, -1), powers)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of the vectors along ``dim``, the operands broadcast (of one dtype,
    as PyTorch requires; complex ``x`` is conjugated)."""
    low = autocast_dtype()
    if low is not None:  # on PyTorch's CPU lower-precision list: in the autocast dtype
        x, y = autocast_operands(low, x, y)
    names = dtypes.SCALAR_TYPE_NAMES
    if x.dtype is not y.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{names[x.dtype.name]} and y of type {names[y.dtype.name]} instead"
        )
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(
            "linalg.vecdot: Expected a floating point or complex tensor as input. Got "
            f"{names[x.dtype.name]} (cast both operands to a float dtype)"
        )
    if x.dtype.is_complex:
        x = conj_physical(x)
    return rd.sum(ew.mul(x, y), dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.diagonal`` with the matrices in the last two dimensions by default."""
    need_tensor("linalg.diagonal", A, "A")
    return st.diagonal(A, offset, dim1, dim2)
