"""Session 31: a compiled replay moves the versions of the tensors it changes in place as the
eager step does (once per write, views and NumPy-shared memory included); the walk of the
values a step reads tells attribute names from dict keys, and reads the containers a
forward subscripts through ``self`` where they are. Each program runs under torch eagerly
and under ``tw.compile`` (compared by snippet_outcomes.same_each)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from compiled_calls import compiled_calls
from snippet_outcomes import refused_in_place, same_each

DEVICES = ["numpy", "torch:cpu"]


def _compiled(m: Any, step: Any, backend: str | None = None) -> Any:
    return m.compile(step, backend=backend) if m is tw else step


def _base_written_views_read(m: Any, views: int, writes: int, into_view: bool = False) -> tuple:
    x = m.zeros(6, dtype=m.float64)
    vs = [x[i : i + 2] for i in range(views)]

    def step(t):
        (vs[0] if into_view else x).add_(t)
        for _ in range(writes - 1):
            x.mul_(2)
        return (vs[-1] if vs else t) * 1

    f = _compiled(m, step)
    seen = []
    for i in range(4):
        out = f(m.tensor(float(i), dtype=m.float64))
        seen.append((out, x._version, [v._version for v in vs]))
    return seen, x


def _numpy_shared_written(m: Any, views: int, writes: int, backend: str | None) -> tuple:
    a = np.zeros(6)
    x = m.from_numpy(a)
    vs = [x[i : i + 2] for i in range(views)]

    def step(t):
        x.add_(t)
        for _ in range(writes - 1):
            x.mul_(2)
        return t * 2

    f = _compiled(m, step, backend)
    seen = []
    for i in range(4):
        f(m.tensor(float(i), dtype=m.float64))
        seen.append((a.tolist(), x._version, [v._version for v in vs]))
    return seen


def _closed_over_and_passed_in(m: Any) -> list:
    x = m.zeros(3, dtype=m.float64)

    def step(a, t):
        x.add_(t)
        return a * 1

    f = _compiled(m, step)
    seen = []
    for i in range(4):
        seen.append((f(x, m.tensor(float(i), dtype=m.float64)), x._version))
    return seen


def test_a_replayed_write_moves_the_versions_once_per_write() -> None:
    """(before: a write into a base that the step read through k views moved its version
    1 + k per replay; two writes moved it once, or 1 + k; a tensor both closed over and
    passed in moved twice)"""
    same_each(
        {
            "one view": lambda m: _base_written_views_read(m, 1, 1),
            "three views": lambda m: _base_written_views_read(m, 3, 1),
            "three views, two writes": lambda m: _base_written_views_read(m, 3, 2),
            "written through a view": lambda m: _base_written_views_read(m, 3, 1, True),
            "no view, two writes": lambda m: _base_written_views_read(m, 0, 2),
            "closed over and passed in": _closed_over_and_passed_in,
        },
        "numpy",
    )


def _optimizer_versions(m: Any, name: str, eager: bool = False, **options: Any) -> list:
    w = m.nn.Parameter(m.ones(3, dtype=m.float64))
    opt = getattr(m.optim, name)([w], lr=0.01, **options)
    x = m.arange(3.0, dtype=m.float64)

    def step():
        opt.zero_grad()
        loss = (w * x).square().sum()
        loss.backward()
        opt.step()
        return loss

    f = step if eager else _compiled(m, step)
    seen = []
    for _ in range(4):
        f()
        state = opt.state[w].items()
        seen.append((w._version, [(k, v._version) for k, v in state if isinstance(v, m.Tensor)]))
    return seen


#: Optimizers whose state tensors a step changes in place, more than once for some.
_OPTIMIZERS = {
    "Adam": {},
    "AdamW": {},
    "RMSprop": {},
    "Adagrad": {},
    "NAdam": {},
    "RAdam": {},
    "ASGD": {},
    "Rprop": {},
    "Adadelta": {},
    "SGD nesterov": {"momentum": 0.9, "nesterov": True},
    "Adam amsgrad": {"amsgrad": True},
}


def test_replayed_optimizer_steps_move_the_state_versions_as_eagerly() -> None:
    """(before: each replay moved a scalar count's version as eagerly but each traced call
    twice, and a tensor written twice once: Adam's exp_avg_sq, AdamW's parameter)"""
    same_each(
        {
            name: (
                lambda m, name=name, options=options: _optimizer_versions(
                    m, name.split()[0], **options
                )
            )
            for name, options in _OPTIMIZERS.items()
        },
        "numpy",
    )


def test_adamax_moves_exp_infs_version_twice_a_step() -> None:
    same_each({"Adamax": lambda m: _optimizer_versions(m, "Adamax", eager=True)}, "numpy")


@pytest.mark.parametrize("spec", DEVICES)
def test_a_replayed_write_into_numpy_shared_memory_moves_its_version(spec: str) -> None:
    """(before: the graph's writes into the memory moved no version; on torch:cpu the
    replay alone: torch.compile's first replay costs seconds, and
    tests/tensor/test_reader_r1_session30.py runs one write through it)"""
    backend = None if spec == "numpy" else "tensorweaver"
    same_each(
        {
            "one write": lambda m: _numpy_shared_written(m, 0, 1, backend),
            "two writes, views": lambda m: _numpy_shared_written(m, 2, 2, backend),
        },
        spec,
    )


def _saved_view_then_base_written(m: Any) -> Any:
    w = m.ones(2, dtype=m.float64, requires_grad=True)
    x = m.zeros(4, dtype=m.float64)
    v = x[0:2]

    def step(t):
        x.add_(t)
        return t * 1

    f = _compiled(m, step)
    for i in range(3):  # (traced, then replayed)
        f(m.tensor(float(i), dtype=m.float64))
    y = (v * w).sum()  # (saves v at its version)
    f(m.tensor(1.0, dtype=m.float64))
    return refused_in_place(y.backward), w.grad


def test_a_view_saved_before_a_replayed_write_is_refused_in_backward() -> None:
    """(before: the replay's write moved the version but not the count of in-place changes
    that tells backward to check versions, so the stale view's gradient came back)"""
    same_each({"saved view": _saved_view_then_base_written}, "numpy")


# -- what the walk reads --------------------------------------------------------------------


def test_an_attribute_name_is_no_dict_key() -> None:
    """A caller's counter at ``state["lr"]`` beside a setting the step reads, where the step
    reads an attribute ``lr`` (before: code_names took attribute names for dict keys too, so
    the counter was read and guarded, and each call traced again)."""
    cfg = type("Cfg", (), {})()
    cfg.lr = 0.5
    state = {"scale": 2.0, "lr": 0}

    def step(x):
        return x * cfg.lr * state["scale"]

    f = tw.compile(step)
    for k in range(6):
        state["lr"] = k
        f(tw.ones(2, dtype=tw.float64))
    assert f.traces <= 2


def _setting_beside_attribute_names(m: Any) -> list:
    opt_like = type("Opt", (), {"lr": 0.5})()
    state = {"scale": 2.0, "lr": 3.0}

    def step(x):
        return x * opt_like.lr * state["scale"]

    return compiled_calls(m, step, lambda: state.update(scale=7.0))


class _Stack:
    """Makes a model whose forward indexes its ModuleList by a loop variable."""

    @staticmethod
    def make(m: Any, read: Any) -> Any:
        class Net(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = m.nn.ModuleList([m.nn.Linear(3, 3) for _ in range(3)])

            def forward(self, x):
                for i in range(len(self.layers)):
                    x = self.layers[i](x)
                return x * read()

        m.manual_seed(0)
        return Net().double()


#: A vocabulary wider than the walk's _WIDTH (64 entries), read at a constant key.
VOCAB = {**{f"w{i}": i for i in range(100)}, "pad": 1}


def test_a_forward_indexing_its_module_list_beside_a_wide_vocabulary_replays() -> None:
    """(before: ``self.layers[i]`` counted as a dict read at any key, so every dict met was
    read whole and a dict wider than _WIDTH made the step run eagerly)"""
    net = _Stack.make(tw, lambda: VOCAB["pad"])
    f = tw.compile(net)
    x = tw.ones(2, 3, dtype=tw.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.compiler.CompileWarning)
        got = [f(x).tolist() for _ in range(4)]
    assert got == [net(x).tolist()] * 4
    assert f.traces <= 2


def test_a_callers_counter_does_not_retrace_a_forward_indexing_its_module_list() -> None:
    state = {"scale": 2.0, "count": 0}
    f = tw.compile(_Stack.make(tw, lambda: state["scale"]))
    for k in range(6):
        state["count"] = k
        f(tw.ones(2, 3, dtype=tw.float64))
    assert f.traces <= 2


def _forward_keying_its_own_dict(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}

    class Scale(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = hp
            self.name = "wd"

        def forward(self, x):
            return x * self.table[self.name] * hp["lr"]

    return compiled_calls(m, Scale(), lambda: hp.update(wd=100.0))


def _method_keying_its_objects_dict(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}

    class Holder:
        def __init__(self):
            self.table = hp

        def scale(self, x, name):
            return x * self.table[name] * hp["lr"]

    h = Holder()
    return compiled_calls(m, lambda x: h.scale(x, "wd"), lambda: hp.update(wd=100.0))


def _either_dict_by_a_variable_key(m: Any) -> list:
    a, b = {"lr": 1.0}, {"lr": 2.0}
    key = "lr"

    def step(x, first=False):
        return x * (a if first else b).get(key) * a["lr"]

    return compiled_calls(m, step, lambda: b.update(lr=100.0))


def test_values_read_at_variable_keys_through_attributes_are_guarded() -> None:
    same_each(
        {
            "forward: self.table[name]": _forward_keying_its_own_dict,
            "method: self.table[name]": _method_keying_its_objects_dict,
            "(a if c else b).get(key)": _either_dict_by_a_variable_key,
            "attribute names beside keys": _setting_beside_attribute_names,
        },
        "numpy",
    )


def _module_attribute_changed(m: Any, read: str) -> list:
    class Scale(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = {"lr": 1.0, "wd": 2.0}
            self.name = "wd"
            self.pair = (1.0, 2.0)

        def forward(self, x):
            if read == "constant key":
                return x * self.cfg["lr"]
            if read == "attribute key":
                return x * self.cfg[self.name]
            return x * self.pair[1]

    s = Scale()

    def change() -> None:
        s.cfg.update(lr=100.0, wd=100.0)
        s.pair = (1.0, 3.0)

    return compiled_calls(m, s, change)


def _library_modules_user_attribute(m: Any) -> list:
    ident = m.nn.Identity()
    ident.cfg = {"scale": 2.0}

    def step(x):
        return ident(x) * ident.cfg["scale"]

    return compiled_calls(m, step, lambda: ident.cfg.update(scale=5.0))


def test_a_modules_own_containers_read_by_the_step_are_guarded() -> None:
    """(before: the walk never read a module's attributes but its numbers and tensors, so a
    dict or tuple attribute read in forward, or by the step, kept its traced value)"""
    same_each(
        {
            **{
                read: (lambda m, read=read: _module_attribute_changed(m, read))
                for read in ("constant key", "attribute key", "tuple")
            },
        },
        "numpy",
    )


def test_a_users_container_on_a_library_module_is_guarded() -> None:
    same_each({"nn.Identity().cfg": _library_modules_user_attribute}, "numpy")
