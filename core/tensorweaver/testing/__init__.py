"""``tw.testing``: comparing results in tests, as ``torch.testing``."""

from tensorweaver.testing.comparison import assert_close

__all__ = ["assert_close"]
