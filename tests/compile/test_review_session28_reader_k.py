"""Reader K (session 28): differences the session-28 changes to ``tw.compile`` leave or add,
each a small program run as ``fn(torch)`` (eager torch, which ``torch.compile`` must equal)
and ``fn(tw)`` under ``tw.compile``. See .notes/reader_k_session28.md."""

from __future__ import annotations

import argparse
import gc
import types
import warnings
import weakref
from typing import Any

import tensorweaver as tw
import torch
from compiled_calls import compiled_calls
from snippet_outcomes import same, same_each


def _grow_a_log(m: Any, big: Any) -> None:
    log = [big]

    def step(x):
        log.append(1)  # a log the step grows (state.GROWN)
        return x * 2

    f = tw.compile(step) if m is tw else step
    for _ in range(4):  # two traces, then replays
        f(m.ones(2, dtype=m.float64))


def _grown_log_freed(m: Any) -> bool:
    big = m.ones(1000, dtype=m.float64)
    freed = weakref.ref(big)
    _grow_a_log(m, big)  # (its log, step and compiled step die with its frame)
    del big
    gc.collect()
    return freed() is None


def test_a_log_the_step_grows_is_freed_with_it():
    same(_grown_log_freed, "numpy")


def _lazily_filled(m: Any) -> list:
    cache: dict = {}

    def step(x):
        if "s" not in cache:
            cache["s"] = 2.0  # filled by the first (traced) call
        return x * cache["s"]

    # the caller changes it after the graph is confirmed
    return compiled_calls(m, step, lambda: cache.update(s=5.0))


def test_a_value_changed_in_a_dict_the_step_filled_is_seen():
    same(_lazily_filled, "numpy")


def _counted_beside_a_setting(m: Any, calls: int = 10) -> tuple:
    w = m.linspace(-0.5, 0.5, 6, dtype=m.float64).reshape(3, 2).requires_grad_()
    run = types.SimpleNamespace(global_step=0, scale=0.5)
    x = m.linspace(-1.0, 1.0, 6, dtype=m.float64).reshape(2, 3)

    def step(x):
        loss = (x @ w).pow(2).sum() * run.scale  # the step reads run.scale only
        loss.backward()
        with m.no_grad():
            w.sub_(0.1 * w.grad)
            w.grad.zero_()
        return loss.detach()

    f = tw.compile(step) if m is tw else step
    got = []
    for _ in range(calls):
        got.append(f(x))
        run.global_step += 1  # the caller counts steps on the same object
    return got, (f.traces <= 3) if m is tw else True


def test_a_counter_the_caller_bumps_beside_a_setting_the_step_reads_does_not_retrace():
    same(_counted_beside_a_setting, "numpy")


def _changed_under_pack_hooks(m: Any) -> list:
    w = m.nn.Parameter(m.linspace(0.1, 0.5, 3, dtype=m.float64))

    def fwd(x):
        return (x * w).exp()  # ExpBackward0 saves its result

    f = tw.compile(fwd) if m is tw else fwd
    got = []
    for i in range(5):
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            out = f(m.full((3,), i + 1.0, dtype=m.float64))
        out.mul_(2)  # torch: the packed tensor is out itself, no version check
        try:
            out.sum().backward()
            got.append(w.grad)
        except RuntimeError as e:
            got.append(str(e)[:20])
        w.grad = None
    return got[2:]  # the replays (tw's two tracing calls are eager: see the next test)


def test_replayed_result_changed_under_saved_tensors_hooks_gives_torchs_gradient():
    same(_changed_under_pack_hooks, "numpy")


def _eager_changed_under_pack_hooks(m: Any) -> Any:
    w = m.nn.Parameter(m.linspace(0.1, 0.5, 3, dtype=m.float64))
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        out = (m.full((3,), 2.0, dtype=m.float64) * w).exp()
    out.mul_(2)
    out.sum().backward()
    return w.grad


def test_eager_saved_output_changed_under_saved_tensors_hooks():
    same(_eager_changed_under_pack_hooks, "numpy")


class _Slotted:
    __slots__ = ("scale",)

    def __init__(self) -> None:
        self.scale = 1.0


def _setting_changed(m: Any, where: str) -> list:
    holder: Any = (
        argparse.Namespace(**{f"opt{i}": i for i in range(70)}, scale=1.0)
        if where == "wide namespace"
        else _Slotted()
    )

    def step(x):
        return x * holder.scale

    return compiled_calls(m, step, lambda: setattr(holder, "scale", 5.0))


def test_setting_on_a_wide_or_slotted_object_is_seen():
    same_each(
        {w: (lambda m, w=w: _setting_changed(m, w)) for w in ("wide namespace", "slots")},
        "numpy",
    )


def _returned_chunks(m: Any) -> tuple:
    w = m.linspace(-1.0, 1.0, 12, dtype=m.float64).reshape(4, 3)

    def project(x):
        return (x @ w).chunk(3, -1)  # q, k, v: views of a result it does not return

    f = tw.compile(project) if m is tw else project
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(5):
            got.append(f(m.full((2, 4), float(i), dtype=m.float64)))
    return got, [str(w.message)[:40] for w in caught if "compile" in str(w.message)]


def test_returned_chunks_of_one_result_still_replay():
    same(_returned_chunks, "numpy")


class _PlainSGD:
    """torch.optim.SGD(lr=0.1) on one tensor, by hand."""

    def __init__(self, w: Any) -> None:
        self.w = w

    def zero_grad(self) -> None:
        self.w.grad = None

    def step(self) -> None:
        with torch.no_grad():
            self.w.sub_(0.1 * self.w.grad)


def _user_attribute_on_builtin_optimizer(m: Any) -> list:
    w = m.linspace(-0.5, 0.5, 6, dtype=m.float64).reshape(3, 2).requires_grad_()
    # (torch's side: plain SGD by hand, as torch.optim.SGD(lr=0.1) steps; torch.optim's
    # first use costs seconds of imports)
    opt = tw.optim.SGD([w], lr=0.1) if m is tw else _PlainSGD(w)
    opt.loss_scale = 1.0  # the user's attribute on a built-in optimizer
    x = m.linspace(-1.0, 1.0, 6, dtype=m.float64).reshape(2, 3)

    def step(x):
        opt.zero_grad()
        loss = (x @ w).pow(2).sum() * opt.loss_scale
        loss.backward()
        opt.step()
        return loss.detach()

    return compiled_calls(m, step, lambda: setattr(opt, "loss_scale", 5.0), calls=7, x=x)


def test_a_users_attribute_on_a_builtin_optimizer_is_seen():
    same(_user_attribute_on_builtin_optimizer, "numpy")
