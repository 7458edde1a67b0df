"""TensorWeaver's NumPy backend."""

__version__ = "0.3.0"
