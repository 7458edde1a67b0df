"""Backends that each break one rule, for the conformance kit's tests (see each module)."""

__version__ = "0.1.0"
