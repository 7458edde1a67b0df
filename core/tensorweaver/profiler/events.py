"""The ranges a profiler recorded, their per-name averages, and PyTorch's summary table."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FunctionEvent:
    """One recorded range: ``name``, its thread, start and end (ns, ``time.perf_counter_ns``),
    and the time spent in ranges opened directly inside it."""

    name: str
    thread: int
    start_ns: int
    end_ns: int = 0
    children_ns: int = 0

    count = 1  # one call: a list of events makes a table as a list of averages does

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        """Wall time in microseconds, nested ranges included."""
        return (self.end_ns - self.start_ns) / 1e3

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        """Wall time in microseconds outside the ranges nested in it."""
        return (self.end_ns - self.start_ns - self.children_ns) / 1e3


@dataclass
class FunctionEventAvg:
    """The ranges of one name together (PyTorch's columns; device time and memory are not
    measured: 0)."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    events: list = field(default_factory=list, repr=False)
    device_time_total = self_device_time_total = cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0

    @property
    def cpu_time(self) -> float:
        """Mean wall time per call (us)."""
        return self.cpu_time_total / max(self.count, 1)

    def add(self, event: FunctionEvent | FunctionEventAvg) -> None:
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.events.append(event)


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events or averages, with PyTorch's ``table`` and ``export_chrome_trace``."""

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
    ) -> str:
        """The summary table: per name, self and total wall time, mean time and calls.
        ``sort_by`` is an attribute (``"cpu_time_total"``, ``"self_cpu_time_total"``,
        ``"count"``, ...), largest first; ``row_limit`` rows at most (-1: all)."""
        rows = list(self)
        if sort_by is not None:
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit >= 0:
            rows = rows[:row_limit]
        self_total = sum(r.self_cpu_time_total for r in self)
        width = min(max([len("Name"), *(len(r.key) for r in rows)]), max_name_column_width)
        heads = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        heads.append("# of Calls")
        line = "-" * width + "  " + "  ".join(["-" * 12] * len(heads)) + "  "

        def share(us: float) -> str:
            return f"{100 * us / self_total:.2f}%" if self_total else "0.00%"

        out = [header] if header else []
        out += [line, "  ".join([f"{'Name':>{width}}", *(f"{h:>12}" for h in heads)]) + "  "]
        out.append(line)
        for r in rows:
            name = r.key if len(r.key) <= width else r.key[: width - 3] + "..."
            cells = [
                share(r.self_cpu_time_total),
                _format_time(r.self_cpu_time_total),
                share(r.cpu_time_total),
                _format_time(r.cpu_time_total),
                _format_time(r.cpu_time),
                str(r.count),
            ]
            out.append("  ".join([f"{name:>{width}}", *(f"{c:>12}" for c in cells)]) + "  ")
        out += [line, f"Self CPU time total: {_format_time(self_total)}", ""]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def total_average(self) -> FunctionEventAvg:
        """The events (or averages) together, under the key ``"Total"``."""
        total = FunctionEventAvg("Total")
        for event in self:
            total.add(event)
        return total


def key_averages(events: list[FunctionEvent]) -> EventList:
    """One :class:`FunctionEventAvg` per name, in order of first appearance; the steps
    (``ProfilerStep#N``) together as ``ProfilerStep*``, as PyTorch groups them."""
    groups: dict[str, FunctionEventAvg] = {}
    for event in events:
        key = "ProfilerStep*" if event.name.startswith("ProfilerStep#") else event.name
        groups.setdefault(key, FunctionEventAvg(key)).add(event)
    return EventList(groups.values())


def export_chrome_trace(events: list[FunctionEvent], path: str) -> None:
    """Write the ranges as a Chrome trace (``chrome://tracing``, Perfetto, TensorBoard's
    profiler plugin); gzip-compressed when ``path`` ends with ``.gz``."""
    trace = {
        "traceEvents": [
            {
                "name": e.name,
                "ph": "X",
                "cat": "user_annotation",
                "ts": e.start_ns / 1e3,
                "dur": e.cpu_time_total,
                "pid": os.getpid(),
                "tid": e.thread,
            }
            for e in events
        ]
    }
    data: Any = json.dumps(trace).encode()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)
