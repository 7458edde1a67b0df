"""``tw.signal``: PyTorch's ``torch.signal`` (its window functions, ``tw.signal.windows``)."""

from tensorweaver.signal import windows

__all__ = ["windows"]
