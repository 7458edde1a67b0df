"""arrayapi: a TensorWeaver backend on array-api-strict, written as a template to copy."""

__version__ = "0.1.0"
