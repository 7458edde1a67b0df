"""``ChannelShuffle``: the channels of each group spread over all groups."""

from __future__ import annotations

from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor


class ChannelShuffle(Module):
    """:func:`F.channel_shuffle <tensorweaver.nn.functional.channel_shuffle>` of
    ``(N, C, *)`` inputs into ``groups``."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
