"""The optional elementwise and special functions (acos, lgamma, erfinv, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them."""

from __future__ import annotations


class SpecialFunctions:
    """Mixed into the backend class; each method is one optional primitive."""
