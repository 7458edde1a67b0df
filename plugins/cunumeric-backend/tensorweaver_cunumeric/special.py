"""The optional elementwise and special functions (acos, lgamma, erfinv, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them: cuPyNumeric has the trigonometric and hyperbolic family; the rest (lgamma,
erfinv, zeta, ...) the core computes through the host."""

from __future__ import annotations

from tensorweaver_cunumeric import legate_config


def _ufunc(name: str) -> object:
    def method(self: object, *arrays: object) -> object:
        # Imported on call: Legate starts with the backend, after this module is loaded.
        return getattr(legate_config.import_library(), name)(*arrays)

    method.__name__ = method.__qualname__ = name
    return method


class SpecialFunctions:
    """Mixed into the backend class; each method is one optional primitive."""

    #: All of them elementwise: their results are laid out as their operands (see .layouts).
    ELEMENTWISE = ("acos", "asin", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2")

    acos = _ufunc("arccos")
    asin = _ufunc("arcsin")
    atan = _ufunc("arctan")
    sinh = _ufunc("sinh")
    cosh = _ufunc("cosh")
    asinh = _ufunc("arcsinh")
    acosh = _ufunc("arccosh")
    atanh = _ufunc("arctanh")
    atan2 = _ufunc("arctan2")
