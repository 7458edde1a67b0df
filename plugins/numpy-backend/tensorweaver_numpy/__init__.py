"""TensorWeaver's NumPy backend."""

__version__ = "0.2.0"
