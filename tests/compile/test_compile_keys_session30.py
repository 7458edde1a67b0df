"""Python values a compiled step reads at a key or name that is not a constant of its code
(an argument, a closure or global variable, a computed string): changed once after the
graph is replayed, the next call sees them as eagerly. Each program runs under torch
eagerly and under ``tw.compile`` (compiled_calls.py)."""

from __future__ import annotations

import dataclasses
import operator
import types
from typing import Any

import tensorweaver as tw
from compiled_calls import compiled_calls
from snippet_outcomes import same_each

HP = {"lr": 1.0, "wd": 2.0}
KEY = "lr"


def _by_get_with_an_argument(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}
    return compiled_calls(m, lambda x, key="lr": x * hp.get(key, 0.0), lambda: hp.update(lr=100.0))


def _by_a_global_key_of_a_global_dict(m: Any) -> list:
    def step(x):
        return x * HP[KEY]

    def change() -> None:
        HP["lr"] = 100.0

    try:
        return compiled_calls(m, step, change)
    finally:
        HP["lr"] = 1.0


def _by_a_helper(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}
    key = "wd"

    def scale(x, name):
        return x * hp[name]

    return compiled_calls(m, lambda x: scale(x, key) + 1, lambda: hp.update(wd=100.0))


def _by_an_f_string(m: Any) -> list:
    hp = {f"k{i}": float(i) for i in range(10)}

    def step(x, i=3):
        return x * hp[f"k{i}"]

    return compiled_calls(m, step, lambda: hp.update(k3=100.0))


def _nested_dict_by_variable_keys(m: Any) -> list:
    hp = {"a": {"lr": 1.0}, "b": {"lr": 2.0}}
    outer, inner = "b", "lr"
    return compiled_calls(m, lambda x: x * hp[outer][inner], lambda: hp["b"].update(lr=100.0))


def _by_a_modules_forward(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}

    class Scale(m.nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def forward(self, x):
            return x * hp[self.name]

    return compiled_calls(m, Scale("wd"), lambda: hp.update(wd=100.0))


def _getattr_with_a_variable_name(m: Any) -> list:
    cfg = types.SimpleNamespace(lr=1.0, wd=2.0)
    name = "wd"
    return compiled_calls(m, lambda x: x * getattr(cfg, name), lambda: setattr(cfg, "wd", 9.0))


@dataclasses.dataclass
class _Config:
    lr: float = 1.0
    wd: float = 2.0


def _getattr_of_a_dataclass(m: Any) -> list:
    cfg = _Config()
    name = "lr"
    return compiled_calls(m, lambda x: x * getattr(cfg, name), lambda: setattr(cfg, "lr", 9.0))


def _list_by_a_variable_index(m: Any) -> list:
    scales = [1.0, 2.0, 3.0]
    i = 2
    return compiled_calls(m, lambda x: x * scales[i], lambda: scales.__setitem__(2, 30.0))


def _items_of_a_changed_dict(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}

    def step(x):
        for _, v in hp.items():
            x = x * v
        return x

    return compiled_calls(m, step, lambda: hp.update(wd=5.0))


def _items_of_a_grown_dict(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}

    def step(x):
        return x * sum(v for _, v in hp.items())

    return compiled_calls(m, step, lambda: hp.update(extra=7.0))


def _tensor_by_a_variable_key(m: Any) -> list:
    shifts = {"a": m.ones(2, dtype=m.float64), "b": m.ones(2, dtype=m.float64) * 2}
    key = "b"

    def change() -> None:
        shifts["b"] = m.ones(2, dtype=m.float64) * 10

    return compiled_calls(m, lambda x: x + shifts[key], change)


def test_dict_entries_read_at_keys_the_code_does_not_spell() -> None:
    # Before: a replay kept the entry's traced value (calls 4 and 5 gave the old product).
    same_each(
        {
            "get": _by_get_with_an_argument,
            "global key": _by_a_global_key_of_a_global_dict,
            "helper": _by_a_helper,
            "f-string": _by_an_f_string,
            "nested": _nested_dict_by_variable_keys,
            "forward": _by_a_modules_forward,
        },
        "numpy",
    )


def test_values_read_by_variable_names_and_indices() -> None:
    same_each(
        {
            "getattr": _getattr_with_a_variable_name,
            "dataclass": _getattr_of_a_dataclass,
            "list": _list_by_a_variable_index,
            "items": _items_of_a_changed_dict,
            "grown": _items_of_a_grown_dict,
            "tensor": _tensor_by_a_variable_key,
        },
        "numpy",
    )


def _operator_getitem(m: Any) -> list:
    hp = {"lr": 1.0, "wd": 2.0}
    key = "lr"
    return compiled_calls(m, lambda x: x * operator.getitem(hp, key), lambda: hp.update(lr=9.0))


class _Settings:
    lr = 1.0


class _MoreSettings(_Settings):
    wd = 2.0


def _class_attribute(m: Any) -> list:
    def change() -> None:
        _Settings.lr = 50.0

    try:
        return compiled_calls(m, lambda x: x * _MoreSettings.lr, change)
    finally:
        _Settings.lr = 1.0


def _class_attribute_through_an_instance(m: Any) -> list:
    class Config:
        lr = 1.0

        def __init__(self) -> None:
            self.wd = 2.0

    cfg = Config()
    return compiled_calls(m, lambda x: x * cfg.lr * cfg.wd, lambda: setattr(Config, "lr", 50.0))


def _user_module_attribute(m: Any) -> list:
    config = types.ModuleType("user_config_session30")
    config.lr = 1.0
    return compiled_calls(m, lambda x: x * config.lr, lambda: setattr(config, "lr", 50.0))


def test_settings_in_user_classes_and_modules() -> None:
    # Before: classes and modules were not walked, so a replay kept the traced setting.
    same_each(
        {
            "getitem": _operator_getitem,
            "class": _class_attribute,
            "instance's class": _class_attribute_through_an_instance,
            "module": _user_module_attribute,
        },
        "numpy",
    )


def _view_whose_base_starts_requiring_grad(m: Any) -> list:
    base = m.ones(4, dtype=m.float64)
    view = base[:2]

    def step(x):
        return (x * 2).sum()

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(6):
        if i == 4:
            base.requires_grad_()  # (the view's flag, given by its base, turns True)
        y = f(view)
        got.append((y.detach(), y.requires_grad))
    return got


def test_the_guard_reads_a_views_flag_from_its_base() -> None:
    # The fast guard reads Tensor's slots; a view's requires_grad comes from its base.
    same_each({"view": _view_whose_base_starts_requiring_grad}, "numpy")
