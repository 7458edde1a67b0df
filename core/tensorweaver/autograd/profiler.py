"""``tw.autograd.profiler``: PyTorch's older profiler module (see ``tw.profiler``)."""

from tensorweaver.profiler.legacy import profile, record_function

__all__ = ["profile", "record_function"]
