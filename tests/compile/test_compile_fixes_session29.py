"""``tw.compile`` fixes of session 29, each program run as ``fn(torch)`` (eager torch, which
``torch.compile`` must equal) and ``fn(tw)`` under ``tw.compile`` (two traces, then replays),
on NumPy:

- pieces of one result the step does not return (``chunk()``, ``unbind()``, rows, views of
  views) are rebuilt per replay as views of one rebuilt base: one version counter, one
  base, a write into one written back into it (before: each a tensor of its own, version 0);
- values read through holders the walk could not guard (more than 256 reads, a wide dict
  read through ``.items()``) make the step run eagerly with a warning; wide holders read by
  name and tuples past 64 items are guarded (before: baked in silently);
- a forward that registers a gradient hook on a tensor it computes runs eagerly: the hook
  runs once per backward with the gradient torch gives it (before: twice on tracing calls,
  once with the placeholder gradient of the recording);
- a pack hook of ``saved_tensors_hooks`` that copies a replayed result keeps the copy for
  backward, as torch's (before: the forward-time array, right only by chance).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch
from compiled_calls import compiled_calls
from snippet_outcomes import same, same_each
from tensorweaver.compiler import CompileWarning

CALLS = 4  # two traces, then replays


def _root(t: Any) -> Any:
    """The tensor whose memory ``t`` views (PyTorch's ``_base``), or None."""
    if isinstance(t, torch.Tensor):
        return t._base
    if t._view_of is None:
        return None
    while t._view_of is not None:
        t = t._view_of[0]
    return t


_CUTS: dict[str, Callable[[Any], Any]] = {
    "chunk": lambda a: a.chunk(2, -1),
    "unbind": lambda a: a.unbind(0),
    "every other row": lambda a: (a[::2], a[1::2]),
    "views of views": lambda a: (a[0][:1], a[0][1:], a[1]),
}


def _pieces_written(m: Any, cut: Callable[[Any], Any]) -> list:
    """Per call: each piece's version, values and whether all view one base, after a write
    into the first piece."""
    f = tw.compile(lambda x: cut(x * 2)) if m is tw else (lambda x: cut(x * 2))
    got = []
    with m.no_grad():
        for i in range(CALLS):
            pieces = f(m.arange(4.0, dtype=m.float64).reshape(2, 2) + i)
            root = _root(pieces[0])
            pieces[0].add_(100)
            one_base = root is not None and all(_root(p) is root for p in pieces)
            got.append(([p._version for p in pieces], [p.clone() for p in pieces], one_base))
    return got


def test_pieces_of_a_hidden_result_share_its_version_and_base():
    same_each({n: (lambda m, c=cut: _pieces_written(m, c)) for n, cut in _CUTS.items()}, "numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # replayed, not run eagerly
        for cut in _CUTS.values():
            f = tw.compile(lambda x, c=cut: c(x * 2))
            with tw.no_grad():
                for _ in range(CALLS):
                    f(tw.ones(2, 2, dtype=tw.float64))
            assert f.traces == 2


def _backward_through_pieces(m: Any) -> list:
    w = m.linspace(0.5, 1.5, 2, dtype=m.float64).requires_grad_()
    f = tw.compile(lambda x: (x * 2).chunk(2)) if m is tw else (lambda x: (x * 2).chunk(2))
    got = []
    for i in range(CALLS):
        with m.no_grad():
            q, k = f(m.arange(4.0, dtype=m.float64) + i)
        ((q * w).sum() + (k * w * 3).sum()).backward()
        got.append(w.grad.clone())
        w.grad = None
    return got


def test_backward_through_replayed_pieces():
    same(_backward_through_pieces, "numpy")


def _many_reads(m: Any) -> list:
    configs = [{f"k{j}": float(j) for j in range(30)} for _ in range(12)]  # 360 values

    def step(x):
        return x * sum(v for c in configs for _, v in c.items())

    return compiled_calls(m, step, lambda: configs[11].update(k29=1000.0))


def test_more_reads_than_a_guard_checks_run_eagerly():
    same(_many_reads, "numpy")
    with pytest.warns(CompileWarning, match="more Python values"):
        _many_reads(tw)


def _wide_dict_read_through_items(m: Any) -> list:
    table = {f"k{j}": float(j) for j in range(100)}

    def step(x):
        return x * sum(v for k, v in table.items() if k == "k99")

    return compiled_calls(m, step, lambda: table.update(k99=-1.0))


def _wide_dict_read_by_name(m: Any) -> tuple:
    cfg = {f"opt{j}": j for j in range(100)}
    cfg["scale"] = 0.5

    def step(x):
        return x * cfg["scale"]

    f = tw.compile(step) if m is tw else step
    got = [f(m.ones(2, dtype=m.float64)) for _ in range(CALLS)]
    replayed = f.traces == 2 if m is tw else True
    cfg["scale"] = 4.0
    got += [f(m.ones(2, dtype=m.float64)) for _ in range(2)]
    return got, replayed


def _tuple_past_64(m: Any) -> list:
    holders = tuple({"s": float(j)} for j in range(70))

    def step(x):
        return x * holders[69]["s"]

    return compiled_calls(m, step, lambda: holders[69].update(s=-3.0))


def test_values_in_wide_holders_are_guarded():
    same_each(
        {
            "wide dict read through items()": _wide_dict_read_through_items,
            "wide dict read by name (replayed)": _wide_dict_read_by_name,
            "tuple of 70 dicts": _tuple_past_64,
        },
        "numpy",
    )


def _gradients_a_forward_hook_sees(m: Any) -> list:
    """A module keeping its activation's gradient (Grad-CAM): the hook registered in its
    forward."""

    class Net(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = m.nn.Parameter(m.linspace(0.1, 0.5, 3, dtype=m.float64))
            self.seen: list = []

        def forward(self, x: Any) -> Any:
            h = x * self.w
            h.register_hook(lambda g: self.seen.append(g.clone()))
            return h.sin()

    net = Net()
    f = tw.compile(net) if m is tw else net
    got = []
    for i in range(CALLS):
        (f(m.full((3,), i + 1.0, dtype=m.float64)) * 2).sum().backward()
        got.append((len(net.seen), net.seen[-1], net.w.grad.clone()))
    return got


def test_a_hook_the_forward_registers_sees_the_callers_gradient_once():
    same(_gradients_a_forward_hook_sees, "numpy")


def _packed_copy_of_a_replayed_result(m: Any) -> list:
    w = m.nn.Parameter(m.linspace(0.1, 0.5, 3, dtype=m.float64))
    f = tw.compile(lambda x: (x * w).exp()) if m is tw else (lambda x: (x * w).exp())
    got = []
    for i in range(CALLS + 1):
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            out = f(m.full((3,), i + 1.0, dtype=m.float64))
        out.mul_(2)  # the packed copy keeps the forward's values
        try:
            out.sum().backward()
            got.append(w.grad)
        except RuntimeError as e:
            got.append(str(e)[:20])
        w.grad = None
    # (the replays: eager tw, so the two tracing calls, refuses the change: a strict xfail
    # in test_review_session28_reader_k.py, autograd/node.py)
    return got[2:]


def test_a_pack_hook_copying_a_replayed_result():
    same(_packed_copy_of_a_replayed_result, "numpy")
