"""Complex numbers (API 2.4): the parts of a complex array, and one made from its parts;
and the complex operands cuPyNumeric 26.6 cannot reduce or scatter itself:

* ``prod`` of a complex128 array over any axes raises from Legate (``ValueError: LEGATE
  ERROR`` in ``AutoTask.add_reduction``: no complex128 product reduction; complex64's is
  right): :meth:`_complex_prod` multiplies halves pairwise instead [about 2 log2(n) calls].
* ``scatter_add`` sums duplicates with a weighted ``histogram``, whose weights are real
  (the cast to float64 silently kept only the real parts): each part is summed on its own
  and the complex sums built from them by :meth:`_from_parts` [+10].
"""

from __future__ import annotations

import math

import numpy

from tensorweaver_cunumeric import legate_config


class ComplexNumbers:
    """The primitives a backend listing complex64/complex128 in its ``dtypes`` provides."""

    def real(self, a):
        return legate_config.import_library().real(a).copy()

    def imag(self, a):
        return legate_config.import_library().imag(a).copy()

    def conj(self, a):
        return legate_config.import_library().conjugate(a)

    def complex(self, re, im):
        cn = legate_config.import_library()
        dtype = cn.complex128 if re.dtype == cn.float64 else cn.complex64
        self._check_fits(re.shape, dtype)  # twice the bytes of either part
        if bool(cn.isfinite(im).all()):
            # cuPyNumeric cannot write an array's parts; im * 1j is exact for finite im.
            return re.astype(dtype) + im.astype(dtype) * dtype(1j)
        # 1j * inf would be (nan, inf): build the rare non-finite case on the host.
        host = numpy.empty(re.shape, dtype)
        host.real, host.imag = numpy.asarray(re), numpy.asarray(im)
        return cn.array(host)

    def _complex_prod(self, a, axes, keepdims):
        """The product of complex128 ``a`` over ``axes`` (cuPyNumeric's own raises): the reduced
        axes moved last and joined into one, whose halves are multiplied until one is left
        (pairwise, so the rounding is within the sequential product's tolerance)."""
        cn = legate_config.import_library()
        kept = tuple(i for i in range(a.ndim) if i not in axes)
        kept_shape = tuple(a.shape[i] for i in kept)
        n = math.prod(a.shape[i] for i in axes)
        x = self.reshape(self.permute(a, (*kept, *axes)), (*kept_shape, n))
        if n == 0:
            out = cn.ones(kept_shape, dtype=a.dtype)
        else:
            # The identity times every factor first, as a reduction from 1 does (torch's and
            # NumPy's): (1 + 0j) * (inf + 0j) is inf + nan*j, and the NaN then propagates.
            # It also makes x a new array, never a view of the input.
            x = x * a.dtype.type(1)
            while n > 1:
                half, odd = divmod(n, 2)
                head = x[..., :half] * x[..., half : 2 * half]
                x = cn.concatenate([head, x[..., 2 * half :]], axis=-1) if odd else head
                n = half + odd
            out = x[..., 0]
        if keepdims:
            out = self.reshape(out, tuple(1 if i in axes else s for i, s in enumerate(a.shape)))
        return out

    def _from_parts(self, re, im, dtype):
        """The complex array re + i*im of ``dtype`` from two real arrays of one shape, on the
        device (:meth:`complex` reads back whether ``im`` is finite): ``im * 1j`` has a NaN
        real part where ``im`` is infinite (inf * 0), so those places take 0 + i*im from
        constants; complex addition then joins the parts exactly."""
        cn = legate_config.import_library()
        c = dtype.type
        inf, nan = float("inf"), float("nan")
        imag = cn.where(
            cn.isfinite(im),
            im.astype(dtype) * c(1j),
            cn.where(
                cn.isnan(im),
                c(complex(0.0, nan)),
                cn.where(im > 0, c(complex(0.0, inf)), c(complex(0.0, -inf))),
            ),
        )
        return re.astype(dtype) + imag
