"""``tw.profiler``: PyTorch's profiler API over wall-clock timing of named ranges.

See :mod:`tensorweaver.profiler.profile` for what is measured (``record_function`` ranges
and steps, on the host) and what is not (single ops, device time, memory).
"""

from tensorweaver.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from tensorweaver.profiler.profile import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]
