"""Complex numbers (API 2.4): the parts of a complex array, and one made from its parts."""

from __future__ import annotations

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
        if bool(cn.isfinite(im).all()):
            # cuPyNumeric cannot write an array's parts; im * 1j is exact for finite im.
            return re.astype(dtype) + im.astype(dtype) * dtype(1j)
        # 1j * inf would be (nan, inf): build the rare non-finite case on the host.
        host = numpy.empty(re.shape, dtype)
        host.real, host.imag = numpy.asarray(re), numpy.asarray(im)
        return cn.array(host)
