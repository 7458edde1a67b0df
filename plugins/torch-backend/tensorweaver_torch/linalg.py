"""The optional linear algebra (tw.linalg: solve, cholesky, eigh, svd, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them."""

from __future__ import annotations


class LinearAlgebra:
    """Mixed into the backend class; each method is one optional primitive."""
