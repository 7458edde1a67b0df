"""``tw.backends``: PyTorch's per-device-family availability queries."""

from tensorweaver.backends import mps

__all__ = ["mps"]
