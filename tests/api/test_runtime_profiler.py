"""tw.profiler: PyTorch's profiler API over wall times of record_function ranges."""

from __future__ import annotations

import gzip
import json
import time

import pytest
import tensorweaver as tw
import torch
from tensorweaver import profiler as P
from tensorweaver.autograd import profiler as legacy


def _sleep_ranges() -> None:
    with P.record_function("outer"):
        for _ in range(2):
            with P.record_function("inner"):
                time.sleep(0.01)


def test_table_reports_wall_times_of_nested_ranges() -> None:
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]) as prof:
        _sleep_ranges()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["inner"].count == 2 and rows["outer"].count == 1
    assert rows["inner"].cpu_time_total >= 2e4  # two sleeps of 10 ms, in us
    assert rows["outer"].cpu_time_total >= rows["inner"].cpu_time_total
    # Self time excludes the nested ranges.
    outer_self = rows["outer"].cpu_time_total - rows["inner"].cpu_time_total
    assert rows["outer"].self_cpu_time_total == pytest.approx(outer_self, abs=1e-6)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=1)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert lines[3].split()[0] == "outer" and "inner" not in table
    assert lines[-1].startswith("Self CPU time total:")
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")


def test_events_make_a_table_and_lists_total_as_torch() -> None:
    with P.profile() as prof:
        _sleep_ranges()
    events = prof.events()
    rows = [line.split()[0] for line in events.table().splitlines()[3:-2]]
    assert sorted(rows) == ["inner", "inner", "outer"]  # one row per range, as torch's
    for listing in (events, prof.key_averages()):
        total = listing.total_average()
        assert total.key == "Total" and total.count == 3
        expected = sum(e.cpu_time_total for e in events)
        assert total.cpu_time_total == pytest.approx(expected, abs=1e-6)


def test_table_columns_as_torch() -> None:
    with torch.profiler.profile() as tprof, torch.profiler.record_function("r"):
        pass
    with P.profile() as prof, P.record_function("r"):
        pass
    header = [line for line in tprof.key_averages().table().splitlines() if "Name" in line]
    ours = [line for line in prof.key_averages().table().splitlines() if "Name" in line]
    assert ours[0].split() == header[0].split()


def test_record_function_decorates_and_costs_nothing_without_profiler() -> None:
    @P.record_function("decorated")
    def f(x):
        return x * 2

    assert f(tw.ones(2)).tolist() == [2.0, 2.0]
    with P.profile() as prof:
        f(tw.ones(2))
        f(tw.ones(2))
    assert [(r.key, r.count) for r in prof.key_averages()] == [("decorated", 2)]

    @P.record_function("recursive")
    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    with P.profile() as prof:
        assert depth(3) == 3
    (row,) = prof.key_averages()
    assert row.count == 4 and row.self_cpu_time_total <= row.cpu_time_total


def test_schedule_actions_match_torch() -> None:
    kwargs = {"wait": 1, "warmup": 1, "active": 2, "repeat": 2, "skip_first": 1}
    ours, theirs = P.schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(12)] == [theirs(i).name for i in range(12)]
    with pytest.warns(UserWarning, match="warmup"):
        P.schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError):
        P.schedule(wait=0, warmup=1, active=0)


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_steps_hand_each_active_window_to_on_trace_ready() -> None:
    traces = []
    sched = P.schedule(wait=1, warmup=1, active=2, repeat=2)
    with P.profile(schedule=sched, on_trace_ready=lambda p: traces.append(p.events())) as prof:
        for i in range(10):
            with P.record_function(f"work{i}"):
                pass
            prof.step()
    names = [sorted({e.name for e in t}) for t in traces]
    assert names == [
        ["ProfilerStep#2", "ProfilerStep#3", "work2", "work3"],
        ["ProfilerStep#6", "ProfilerStep#7", "work6", "work7"],
    ]
    assert {r.key: r.count for r in prof.key_averages()}["ProfilerStep*"] == 2
    with P.profile(schedule=sched, acc_events=True) as prof:
        for _ in range(10):
            prof.step()
    assert {r.key: r.count for r in prof.key_averages()}["ProfilerStep*"] == 4


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_last_trace_at_exit_as_torch() -> None:
    """With repeat=0 the schedule cycles on; exiting mid-cycle saves that step's trace."""
    keys = []
    for lib in (torch.profiler, P):
        with lib.profile(schedule=lib.schedule(wait=0, warmup=1, active=2)) as prof:
            for _ in range(4):
                prof.step()
        keys.append([(r.key, r.count) for r in prof.key_averages()])
    assert keys[0] == keys[1] == [("ProfilerStep*", 1)]


def test_chrome_trace_and_tensorboard_handler(tmp_path) -> None:
    with P.profile(on_trace_ready=P.tensorboard_trace_handler(str(tmp_path), "w0", True)):
        _sleep_ranges()
    (path,) = tmp_path.iterdir()
    assert path.name.startswith("w0.") and path.name.endswith(".pt.trace.json.gz")
    events = json.loads(gzip.open(path).read())["traceEvents"]
    assert sorted(e["name"] for e in events) == ["inner", "inner", "outer"]
    assert all(e["ph"] == "X" and e["dur"] > 0 for e in events)


def test_autograd_profiler_spelling() -> None:
    with legacy.profile() as prof:
        _sleep_ranges()
    assert {e.name for e in prof.function_events} == {"inner", "outer"}
    assert "outer" in prof.table(sort_by="self_cpu_time_total")
    with legacy.profile(enabled=False) as off, legacy.record_function("x"):
        pass
    assert len(off.key_averages()) == 0
