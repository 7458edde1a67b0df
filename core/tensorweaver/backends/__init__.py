"""``tw.backends``: PyTorch's per-device-family availability queries and switches."""

from tensorweaver.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
