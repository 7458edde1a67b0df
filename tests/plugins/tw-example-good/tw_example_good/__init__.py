"""pyref: a complete third-party TensorWeaver backend, the proof that the contract suffices."""

__version__ = "0.1.0"
