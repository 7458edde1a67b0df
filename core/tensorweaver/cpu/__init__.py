"""``tw.cpu``: PyTorch's ``torch.cpu`` namespace; so far its older mixed-precision spellings."""

from __future__ import annotations

from tensorweaver.cpu import amp

__all__ = ["amp"]
