"""The core distribution's version (kept in step with pyproject.toml)."""

__version__ = "0.3.0"
