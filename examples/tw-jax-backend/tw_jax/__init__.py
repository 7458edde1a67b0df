"""jax: a TensorWeaver backend on JAX (jax.numpy on the CPU)."""

__version__ = "0.1.0"
