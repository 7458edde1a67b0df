"""TensorWeaver's backend on cuPyNumeric (Legate): CPUs, GPUs and clusters."""

__version__ = "0.3.0"
