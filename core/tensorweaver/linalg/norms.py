"""Vector and matrix norms (``vector_norm``, ``matrix_norm``, ``norm``)."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.amp import autocast_dtype, float32_operands, outside_autocast
from tensorweaver.autograd.mode import no_grad
from tensorweaver.contract import dtypes
from tensorweaver.linalg.eigen import svdvals
from tensorweaver.linalg.errors import check_float, check_matrix, need_tensor
from tensorweaver.linalg.primitives import composite
from tensorweaver.linalg.solvers import inv_ex
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import views
from tensorweaver.ops.apply import labelled
from tensorweaver.promotion import promote_types
from tensorweaver.tensor import Tensor

#: The dtypes PyTorch's norms compute in float32 and round the result to.
_HALF = (dtypes.float16, dtypes.bfloat16)


def _cast(name: str, x: Tensor, dtype: Any) -> Tensor:
    """``x`` in ``dtype`` (``x`` itself without), with PyTorch's checks of both."""
    if x.dtype not in _HALF:
        check_float(name, x, complex_ok=True)
    if dtype is None:
        return x
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            f"{name}: dtype should be floating point or complex, but got {dtype.name}"
        )
    if dtype.is_complex != x.dtype.is_complex:
        kind = "complex" if x.dtype.is_complex else "real"
        raise RuntimeError(
            f"{name}: dtype should be {kind} for {kind} inputs, but got {dtype.name}"
        )
    if promote_types(x.dtype, dtype) is not dtype:  # float16 to bfloat16 narrows too
        raise RuntimeError(
            f"{name}: the dtype of the input ({x.dtype.name}) should be convertible without "
            f"narrowing to the specified dtype ({dtype.name})"
        )
    return x.to(dtype)


def vector_norm(
    x: Tensor,
    ord: Any = 2,  # noqa: A002  (PyTorch's name)
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """sum(|x|^ord)^(1/ord) over ``dim`` (all by default); inf/-inf: max/min |x|, 0: the
    number of nonzeros. float16 and bfloat16 inputs are summed in float32, as PyTorch's."""
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(
            f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__} "
            "(matrix norms such as 'fro' and 'nuc' are tw.linalg.matrix_norm's)"
        )
    x = _cast("linalg.vector_norm", x, dtype)
    if x.dtype in _HALF:  # no overflow of the squares: the sum in float32, the result rounded
        return ew.cast(vector_norm(ew.cast(x, dtypes.float32), ord, dim, keepdim), x.dtype)
    if isinstance(dim, list):
        dim = tuple(dim)
    if dim is None and keepdim:
        dim = tuple(range(x.ndim))
    if ord < 0 or ord == math.inf:
        _check_identity(x, ord, dim)
    if ord == 0 and x.requires_grad:  # a count: PyTorch's requires grad, with zero gradient
        with no_grad():
            count = rd.norm(x, ord, dim, keepdim)
        return composite("linalg_vector_norm_0", count, x)
    return rd.norm(x, ord, dim, keepdim)


def _check_identity(x: Tensor, ord: Any, dim: Any) -> None:  # noqa: A002
    """max, min and negative powers have no value over no elements: PyTorch's RuntimeError
    where a reduced dimension (or, without ``dim``, the tensor) is empty."""
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                "the operation does not have an identity"
            )
        return
    for d in (dim,) if isinstance(dim, int) else dim:
        if -x.ndim <= d < x.ndim and x.shape[d] == 0:  # (a bad dim: the reduction's error)
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on the dimension {d} "
                "because this dimension is empty and the operation does not have an identity"
            )


def matrix_norm(
    A: Tensor,
    ord: Any = "fro",  # noqa: A002
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """'fro', 'nuc', 2/-2 (largest/smallest singular value), 1/-1 (max/min column sum of
    |A|), inf/-inf (max/min row sum) over the two dimensions ``dim``; float16 and bfloat16
    inputs as PyTorch's (in float32, but for the singular values, which they refuse)."""
    need_tensor("linalg.matrix_norm", A, "input")
    A = _cast("linalg.matrix_norm", A, dtype)
    if A.dtype in _HALF:  # as vector_norm: in float32, the result rounded (no SVD in them)
        if ord in ("nuc", 2, -2):
            raise RuntimeError(
                f"linalg.matrix_norm: Low precision dtypes not supported. Got {A.dtype.name} "
                f"(ord={ord!r} needs singular values; convert with .float())"
            )
        return ew.cast(matrix_norm(ew.cast(A, dtypes.float32), ord, dim, keepdim), A.dtype)
    if A.ndim < 2:
        raise RuntimeError(
            f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got "
            f"shape {list(A.shape)}"
        )
    rows, cols = (d % A.ndim for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({rows}, {cols})")
    if ord == "fro":
        return rd.norm(A, 2, (rows, cols), keepdim)
    if ord in ("nuc", 2, -2):
        order = [d for d in range(A.ndim) if d not in (rows, cols)] + [rows, cols]
        s = svdvals(views.permute(A, order))  # (a view, PermuteBackward0 even unmoved)
        if ord == "nuc":  # a sum over a dim: SumBackward1, also where it is s's only one
            value = labelled(rd.sum(s, -1, keepdim), "SumBackward1", s)
        else:
            value = (_largest if ord == 2 else rd.amin)(s, -1, keepdim)
        if keepdim:  # PyTorch's chain: the kept dim, one more, then the permutation undone
            back = [order.index(d) for d in range(A.ndim)]
            value = views.permute(mv.unsqueeze(value, -1), back)
        return value
    if ord in (1, -1, math.inf, -math.inf):
        # PyTorch's chain: the 1-norm of each column (row), then its max or min
        summed, kept = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = rd.norm(A, 1, (summed,), keepdim)
        if not keepdim and summed < kept:
            kept -= 1
        return (_largest if ord > 0 else rd.amin)(sums, kept, keepdim)
    raise RuntimeError(
        f"linalg.matrix_norm: Order {ord} not supported; use 'fro', 'nuc', 2, -2, 1, -1, inf "
        "or -inf"
    )


def _largest(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    """The largest of the nonnegative ``x`` along ``dim``: where that is empty (``amax`` has
    no identity), zeros outside the graph, as PyTorch's norms give."""
    if x.shape[dim]:
        return rd.amax(x, dim, keepdim)
    with no_grad():
        return rd.sum(x, dim, keepdim)


def norm(
    A: Tensor,
    ord: Any = None,  # noqa: A002
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """A vector norm over one dimension (or all, flattened, when ``ord`` is None), a matrix
    norm over two; with ``ord`` and no ``dim``, the input must be 1-d or 2-d."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim or (-2, -1), keepdim, dtype=dtype)
    if dim is None and ord is not None and A.ndim != 1:
        raise RuntimeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.ndim}D."
        )
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: ord={ord} is only a matrix norm; pass two dims")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cond(A: Tensor, p: Any = None) -> Tensor:  # noqa: N803
    """The condition number in the ``p`` norm: the ratio of the extreme singular values
    for p None, 2 or -2, else ``matrix_norm(A, p) * matrix_norm(inv(A), p)`` (inf where A is
    singular); 0 for empty
    matrices, as PyTorch (which checks that 'fro' and 'nuc' have square ones first)."""
    need_tensor("linalg.cond", A, "input")
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32): in float32
        # throughout, as PyTorch's kernel runs below autocast
        return outside_autocast(cond, *float32_operands(A), p)
    if A.numel() == 0 and p not in ("fro", "nuc"):
        check_matrix("linalg.cond", A, complex_ok=True)
        return cr.zeros(A.shape[:-2], dtype=A.dtype.to_real(), device=A.device)
    if p in (None, 2, -2):
        s = svdvals(A)  # (descending: PyTorch's ratio of its first and last, whose gradient
        # goes to those two where singular values tie, as at cond(eye(n)))
        first, last = mv.narrow(s, -1, 0, 1), mv.narrow(s, -1, s.shape[-1] - 1, 1)
        return mv.squeeze(ew.div(last, first) if p == -2 else ew.div(first, last), -1)
    inverse, info = inv_ex(A)
    # A singular matrix's condition number is infinite, as PyTorch's (which does not raise);
    # its non-finite inverse is not given to the norm, whose SVD ('nuc') would raise.
    singular = ew.gt(info, 0)
    inverse = ew.where(mv.unsqueeze(mv.unsqueeze(singular, -1), -1), 0.0, inverse)
    return ew.where(singular, math.inf, ew.mul(matrix_norm(A, p), matrix_norm(inverse, p)))
