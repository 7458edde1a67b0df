"""``tw.profiler.profile`` and ``record_function``: wall times of named ranges.

What is measured: the wall time of each ``record_function`` range (and of each step,
``ProfilerStep#N``, when a ``schedule`` is given), on the host, with ``time.perf_counter_ns``.
Backend kernels and single ops are not recorded (there is no per-op hook in the IR), nor are
device time, memory, shapes or stacks: ``record_shapes``, ``profile_memory``, ``with_stack``,
``with_flops`` and ``with_modules`` are accepted and change nothing. A backend that runs
asynchronously (cuPyNumeric) may finish a range's work after the range closes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from tensorweaver.profiler.events import EventList, FunctionEvent, export_chrome_trace
from tensorweaver.profiler.events import key_averages as _averages

_ACTIVE: list[profile] = []  # profilers recording now
_LOCAL = threading.local()  # this thread's open ranges


class ProfilerActivity(Enum):
    """What a profiler records (PyTorch's names); only host wall time is measured here."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """What a profiler does during a step (the value a ``schedule`` returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities() -> set[ProfilerActivity]:
    """The activities recorded here: the host's."""
    return {ProfilerActivity.CPU}


def schedule(
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
    skip_first_wait: int = 0,
) -> Callable[[int], ProfilerAction]:
    """Step ``n`` -> action: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps, ``repeat`` times (0: forever); the last active
    step of a cycle hands the trace to ``on_trace_ready``."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class record_function(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """A named range, timed by every profiler recording while it is open; a context manager
    or a decorator. Without an active profiler it costs two clock reads."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args

    def _recreate_cm(self) -> record_function:
        # A decorated function gets a fresh range per call, so recursive calls nest.
        return record_function(self.name, self.args)

    def __enter__(self) -> record_function:
        stack = getattr(_LOCAL, "stack", None)
        if stack is None:
            stack = _LOCAL.stack = []
        self._event = FunctionEvent(self.name, threading.get_ident(), time.perf_counter_ns())
        self._parent = stack[-1] if stack else None
        self._profilers = [p for p in _ACTIVE if p._recording]
        stack.append(self._event)
        return self

    def __exit__(self, *exc: Any) -> None:
        event = self._event
        event.end_ns = time.perf_counter_ns()
        _LOCAL.stack.remove(event)
        if self._parent is not None:
            self._parent.children_ns += event.end_ns - event.start_ns
        for p in self._profilers:
            if p._recording:
                p._events.append(event)


class profile:  # noqa: N801 - PyTorch's name
    """Record ``record_function`` ranges while active (a context manager, or ``start``/
    ``stop``); ``step()`` ends a step of the ``schedule``; ``key_averages().table()``
    summarises the last trace (``acc_events=True``: every trace so far). See the module for
    what is and is not measured."""

    def __init__(
        self,
        *,
        activities: Iterable[Any] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[..., Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
        execution_trace_observer: Any = None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback: Callable[[], str] | None = None,
        post_processing_timeout_s: float | None = None,
    ) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule or _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._events: list[FunctionEvent] = []
        self._trace: list[FunctionEvent] = []
        self._step_range: record_function | None = None

    @property
    def _recording(self) -> bool:
        return self.current_action in _RECORDING

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Begin at step ``step_num`` (0)."""
        _ACTIVE.append(self)
        self.current_action = self.schedule(self.step_num)
        self._open_step()

    def stop(self) -> None:
        """End: a trace being recorded is handed to ``on_trace_ready``."""
        self._close_step()
        if self._recording:
            self._save()
        self.current_action = ProfilerAction.NONE
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def step(self) -> None:
        """End the current step; the schedule says what the next one does."""
        self._close_step()
        done = self.current_action is ProfilerAction.RECORD_AND_SAVE
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if done or (self._events and not self._recording):
            self._save()
        self._open_step()

    def _open_step(self) -> None:
        if self.record_steps and self._recording:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _save(self) -> None:
        if self._trace and not self.acc_events:
            warnings.warn(
                "Warning: Profiler clears events at the end of each cycle. Only events from "
                "the current cycle will be reported. To keep events across cycles, set "
                "acc_events=True.",
                stacklevel=3,
            )
        self._trace = self._trace + self._events if self.acc_events else self._events
        self._events = []
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def events(self) -> EventList:
        """The ranges of the last trace, in order of closing."""
        return EventList(self._trace)

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, **kwargs: Any
    ) -> EventList:
        """The last trace's ranges grouped by name (no shapes or stacks are recorded)."""
        return _averages(self._trace)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write the last trace as a Chrome trace JSON file (``.gz``: compressed)."""
        export_chrome_trace(self._trace, path)


def tensorboard_trace_handler(
    dir_name: str,
    worker_name: str | None = None,
    use_gzip: bool = False,
    use_python_export: bool = False,
) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as
    ``<worker>.<ns>.pt.trace.json[.gz]`` (PyTorch's names); the file holds the recorded
    ranges only (see the module)."""

    def handler_fn(prof: profile) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler_fn
