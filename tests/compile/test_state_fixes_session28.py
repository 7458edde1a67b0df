"""What ``tw.compile`` guards of the values a step reads through a named holder (session 28):
only the entries its code can name, all of them where its code reads entries it does not
name, and a step whose read value the caller changes on every call settles eagerly. Each
program runs as ``fn(torch)`` (eager torch, which ``torch.compile`` must equal) and
``fn(tw)`` under ``tw.compile``."""

from __future__ import annotations

import types
import warnings
from typing import Any

import tensorweaver as tw
from compiled_calls import compiled_calls
from snippet_outcomes import same
from tensorweaver.compiler.compiled import CACHE_SIZE


def _counter_read_each_call(m: Any) -> list:
    run = types.SimpleNamespace(global_step=0)

    def step(x):
        return x * run.global_step  # a value the caller changes on every call

    f = tw.compile(step) if m is tw else step
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(CACHE_SIZE + 4):
            got.append(f(m.ones(2, dtype=m.float64)))
            run.global_step += 1
    if m is tw:  # (bounded retraces, and said so)
        assert f.traces <= CACHE_SIZE + 1, f.traces
        assert any("runs eagerly from now on" in str(w.message) for w in caught)
    return got


def test_a_value_read_that_changes_on_every_call_settles_eagerly():
    same(_counter_read_each_call, "numpy")


def _entries_read_unnamed(m: Any) -> list:
    cfg = {"a": 1.0, "b": 2.0}

    def step(x):
        return x * sum(value for _, value in cfg.items())  # no key named in the code

    return compiled_calls(m, step, lambda: cfg.update(b=5.0))


def test_entries_a_step_reads_without_naming_them_are_guarded():
    same(_entries_read_unnamed, "numpy")


def _setting_beside_a_counter(m: Any) -> list:
    run = {"scale": 0.5, "step": 0}

    def step(x):
        return x * run["scale"]

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(8):
        if i == 6:
            run["scale"] = 3.0  # the setting the step names: seen
        got.append(f(m.ones(2, dtype=m.float64)))
        run["step"] += 1  # the caller's counter, never read by the step
    if m is tw:
        assert f.traces <= 4, f.traces  # (two at first, two once the setting changes)
    return got


def test_a_setting_beside_a_counter_is_seen_and_the_counter_retraces_nothing():
    same(_setting_beside_a_counter, "numpy")
