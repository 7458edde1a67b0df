"""Utilities under PyTorch's names (``tensorweaver.utils.data``)."""

from tensorweaver.utils import data

__all__ = ["data"]
