"""Exact integer ``matmul`` on cuPyNumeric, which has only float (BLAS) kernels.

A float64 product is exact only while every sum stays below 2**53: int32 and int64
operands near their range's ends came back wrong (cuPyNumeric 26.6: ``[[2**31 - 1, 1]] @
[[2], [-2**31]]`` gave -2**31, not 2**31 - 2 wrapped to int32). Each operand is cut into
16-bit pieces (``a = sum a_i 2**(16 i)``, the top piece signed), so that every product of
pieces is below 2**32 in size; the pieces whose weights ``2**(16 (i + j))`` fall inside the
result's width are multiplied in float64 (one matmul per weight, the pieces of that weight
joined along the summed axis), exactly while ``k * (pieces) < 2**21`` (longer sums go in
chunks), then shifted and added in int64, which wraps as NumPy's integer matmul does.
int32: 3 matmuls and about 15 other calls; int64: 4 matmuls and about 35; the narrower
types are one piece: 1 matmul, as before. Operands whose largest magnitudes bound every sum
below 2**52 (``k * max|a| * max|b|``, the usual small integers) take one float64 matmul
instead: two reductions read back, ~3 ms against ~11 ms for a (64, 64) int64 product
(operands past the bound pay those ~3 ms on top).
"""

from __future__ import annotations

import numpy

from tensorweaver_cunumeric import legate_config

_BITS = 16
#: |sum| <= terms * 2**32 must stay below 2**53
_MOST_TERMS = 2**21
_F64 = numpy.dtype("float64")
_I64 = numpy.dtype("int64")


def _pieces(a, count: int) -> list:
    """``a``'s ``count`` 16-bit pieces, lowest first, as float64; the top one signed."""
    cn = legate_config.import_library()
    wide = a.astype(_I64)
    found = []
    for i in range(count):
        piece = cn.right_shift(wide, _BITS * i) if i else wide
        if i < count - 1:
            piece = cn.bitwise_and(piece, (1 << _BITS) - 1)
        found.append(piece.astype(_F64))
    return found


def _exact(a_pieces: list, b_pieces: list, weight: int):
    """sum over i + j == weight of a_i @ b_j, as int64 (every sum below 2**53)."""
    cn = legate_config.import_library()
    left = [a_pieces[i] for i in range(weight + 1)]
    right = [b_pieces[weight - i] for i in range(weight + 1)]
    if len(left) > 1:
        left, right = [cn.concatenate(left, axis=-1)], [cn.concatenate(right, axis=-2)]
    return cn.matmul(left[0], right[0]).astype(_I64)


def _small(a, b):
    """``a @ b`` in one float64 matmul if every partial sum is an integer below 2**52
    (a factor 2 under float64's last integer, for the bound's own rounding), else None."""
    cn = legate_config.import_library()
    if a.size == 0 or b.size == 0:
        return None
    wide_a, wide_b = a.astype(_F64), b.astype(_F64)  # (abs of int64's minimum would wrap)
    bound = float(cn.max(cn.abs(wide_a))) * float(cn.max(cn.abs(wide_b))) * a.shape[-1]
    if bound >= 2.0**52:
        return None
    return cn.matmul(wide_a, wide_b).astype(_I64).astype(a.dtype)


def integer_matmul(a, b):
    """``a @ b`` of integer arrays (one dtype, ndim >= 2, batch axes broadcast), exact,
    wrapped to their dtype."""
    cn = legate_config.import_library()
    count = max(1, a.dtype.itemsize * 8 // _BITS)
    if count > 1:  # (one piece is one matmul already)
        quick = _small(a, b)
        if quick is not None:
            return quick
    k = a.shape[-1]
    step = max(1, _MOST_TERMS // count)
    total = None
    for start in range(0, k, step):  # one chunk unless k >= 2**19
        stop = min(k, start + step)
        a_pieces = _pieces(a[..., start:stop], count)
        b_pieces = _pieces(b[..., start:stop, :], count)
        for weight in range(count):
            part = _exact(a_pieces, b_pieces, weight)
            if weight:
                part = cn.left_shift(part, _BITS * weight)
            total = part if total is None else total + part
    if total is None:  # k == 0: sums of nothing
        shape = (*numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
        return cn.zeros(shape, a.dtype)
    return total.astype(a.dtype)
