"""``tw.backends``: PyTorch's per-device-family availability queries and switches."""

from tensorweaver.backends import cudnn, mps

__all__ = ["cudnn", "mps"]
