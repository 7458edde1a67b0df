"""Errors a backend raises that the core and users catch by class."""

from __future__ import annotations


class OutOfMemoryError(RuntimeError, MemoryError):
    """An array does not fit the device's memory (``torch.OutOfMemoryError``).

    A backend raises it *before* asking its library for an array it knows will not fit, where
    the library would otherwise abort the process (Legate does). Both a ``RuntimeError``, as
    PyTorch's, and a ``MemoryError``, as Python's and NumPy's, so either ``except`` catches it.
    """


class LinAlgError(RuntimeError):
    """A linear algebra kernel failed on its input: a singular or non-positive-definite
    matrix, or one whose factorization did not converge (``torch.linalg.LinAlgError``, a
    RuntimeError). A backend raises it where its library raises its own error (NumPy's
    ``LinAlgError`` is a ValueError, which ``except RuntimeError`` misses)."""
