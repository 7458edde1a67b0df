"""The allow-list (PyTorch's add_safe_globals / safe_globals / get_safe_globals /
clear_safe_globals), and files that name what must never be used: a forged file, with valid
checksums, naming os.system, builtins.eval or a module never imported is refused, and nothing
it names is called or imported. A loaded module's class runs none of its own code.

PyTorch's own allow-list is the reference for scoping (process-wide, not per thread)."""

from __future__ import annotations

import builtins
import io
import os
import pickle
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn as nn
import torch
from safetensors_files import forge
from tensorweaver import serialization as ser


class Net(nn.Module):
    """A user class whose own code records every time it runs."""

    runs: list[str] = []

    def __new__(cls, *args: Any, **kwargs: Any) -> Net:
        Net.runs.append("__new__")
        return super().__new__(cls)

    def __init__(self) -> None:
        Net.runs.append("__init__")
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.width = 2

    def __setattr__(self, name: str, value: Any) -> None:
        Net.runs.append("__setattr__")
        super().__setattr__(name, value)

    def __setstate__(self, state: dict) -> None:
        Net.runs.append("__setstate__")

    def forward(self, x: Any) -> Any:
        return self.fc(x)


class Other(nn.Module):
    pass


@pytest.fixture(autouse=True)
def no_allowed_globals() -> Iterator[None]:
    before = ser.get_safe_globals()
    ser.clear_safe_globals()
    yield
    ser.clear_safe_globals()
    ser.add_safe_globals(before)


def saved(obj: Any) -> bytes:
    buffer = io.BytesIO()
    ser.save(obj, buffer)
    return buffer.getvalue()


def load(blob: bytes) -> Any:
    return ser.load(io.BytesIO(blob))


def refused(blob: bytes, name: str) -> str:
    with pytest.raises(pickle.UnpicklingError) as info:
        load(blob)
    assert repr(name) in str(info.value)
    return str(info.value)


# --- the API ---------------------------------------------------------------------------------


def test_add_get_clear() -> None:
    blob = saved(Net())
    refused(blob, f"{__name__}:Net")
    assert ser.get_unsafe_globals_in_checkpoint(io.BytesIO(blob)) == [f"{__name__}:Net"]
    ser.add_safe_globals([Net])
    ser.add_safe_globals([Net])
    assert ser.get_safe_globals() == [Net]
    assert type(load(blob)) is Net
    assert ser.get_unsafe_globals_in_checkpoint(io.BytesIO(blob)) == []
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    refused(blob, f"{__name__}:Net")


def test_pairs_name_an_object_by_either_spelling() -> None:
    blob = saved(Net())
    for name in (f"{__name__}:Net", f"{__name__}.Net"):  # tw's spelling, and PyTorch's
        with ser.safe_globals([(Net, name)]):
            assert type(load(blob)) is Net
    with ser.safe_globals([(Other, f"{__name__}:Net")]):
        assert type(load(blob)) is Other, "the pair says which object the name stands for"
    with pytest.raises(ValueError, match="pair"):
        ser.add_safe_globals([(Net, "a", "b")])
    with pytest.raises(TypeError, match="as a str"):
        ser.add_safe_globals([(Net, 3)])
    with pytest.raises(TypeError, match="no module-level name"):
        ser.add_safe_globals([lambda: None])
    assert ser.get_safe_globals() == []


def test_context_manager_scoping() -> None:
    blob = saved(Net())
    with ser.safe_globals([Net]):
        assert ser.get_safe_globals() == [Net] and type(load(blob)) is Net
        with ser.safe_globals([Other, Net]):
            assert ser.get_safe_globals() == [Net, Other]
        assert ser.get_safe_globals() == [Net], "the inner block removes only what it added"
    refused(blob, f"{__name__}:Net")
    with pytest.raises(KeyError), ser.safe_globals([Net]):
        raise KeyError("left by an error")
    assert ser.get_safe_globals() == []
    ser.add_safe_globals([Net])
    with ser.safe_globals([Net]):
        pass
    assert ser.get_safe_globals() == [Net], "allowed before the block, allowed after it"


def test_allow_list_is_process_wide_like_pytorchs() -> None:
    def seen_from_a_thread(get: Any) -> list:
        out: list = []
        thread = threading.Thread(target=lambda: out.extend(get()))
        thread.start()
        thread.join()
        return out

    with torch.serialization.safe_globals([Net]):
        theirs = Net in seen_from_a_thread(torch.serialization.get_safe_globals)
    with ser.safe_globals([Net]):
        ours = Net in seen_from_a_thread(ser.get_safe_globals)
    assert theirs and ours


# --- what a file names is looked up, never imported or called ---------------------------------


def module_node(cls_name: str, attributes: list | None = None) -> dict:
    body = {
        "id": 0,
        "class": cls_name,
        "training": True,
        "parameters": [["weight", {"parameter": ["weight", True]}]],
        "buffers": [],
        "modules": [],
        "attributes": attributes or [],
    }
    return {"module": body}


WEIGHT = {"weight": np.ones((2, 2), np.float32)}


@pytest.fixture
def recorders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Calls of os.system and eval, replaced by recorders (exec is left alone: imports use it).
    One load first, so that nothing is imported for the first time while they are replaced."""
    load(saved(nn.Linear(1, 1)))
    calls: list[str] = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append("os.system"))
    monkeypatch.setattr(builtins, "eval", lambda *a: calls.append("eval"))
    return calls


@pytest.mark.parametrize("name", ["posix:system", "os:system", "builtins:eval", "builtins:exec"])
def test_dangerous_callables_are_refused(recorders: list[str], name: str) -> None:
    message = refused(forge(module_node(name), WEIGHT), name)
    assert "add_safe_globals" in message
    as_attribute = module_node("tensorweaver.nn.modules.module:Module", [["f", {"global": name}]])
    refused(forge(as_attribute, WEIGHT), name)
    assert recorders == []


def test_a_module_never_imported_stays_unimported() -> None:
    if "this" in sys.modules:
        pytest.skip("the module 'this' is imported already")
    refused(forge(module_node("this:s"), WEIGHT), "this:s")
    refused(forge({"global": "this:s"}, {}), "this:s")
    assert "this" not in sys.modules


def test_an_allowed_function_is_assigned_never_called(recorders: list[str]) -> None:
    system = os.system
    node = module_node("tensorweaver.nn.modules.module:Module", [["f", {"global": "posix:system"}]])
    with ser.safe_globals([(system, "posix:system")]):
        loaded = load(forge(node, WEIGHT))
        assert loaded.f is system
        with pytest.raises(ser.SafetensorsError, match="not a tw.nn.Module subclass"):
            load(forge(module_node("posix:system"), WEIGHT))
    assert recorders == []


def test_rebuilding_runs_none_of_the_class_code() -> None:
    net = Net()
    x = tw.randn(3, 2)
    blob = saved(net)
    Net.runs.clear()
    with ser.safe_globals([Net]):
        loaded = load(blob)
    assert Net.runs == [], "no __new__, __init__, __setattr__ or __setstate__"
    assert loaded.width == 2
    np.testing.assert_array_equal(loaded(x).detach().numpy(), net(x).detach().numpy())


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"attributes": [["_parameters", {}]]}, "clashes with the module's own state"),
        ({"attributes": [["weight", 1]]}, "clashes with the module's own state"),
        ({"parameters": [["weight", {"tensor": "weight"}]]}, "is a Tensor"),
        ({"parameters": [["a.b", {"parameter": ["weight", True]}]]}, "without dots"),
        ({"modules": [["m", {"tensor": "weight"}]], "parameters": []}, "is a Tensor"),
        ({"buffers": [["b", {"tensor": "weight"}, "yes"]], "parameters": []}, "persistent flag"),
        ({"training": 1}, "training flag"),
        ({"id": 3}, "out of sequence"),
        ({"extra": 1}, "must have the fields"),
    ],
    ids=str,
)
def test_malformed_module_nodes(change: dict, fragment: str) -> None:
    node = module_node("tensorweaver.nn.modules.module:Module")
    node["module"].update(change)
    with pytest.raises(ser.SafetensorsError, match="bad structure") as info:
        load(forge(node, WEIGHT))
    assert fragment in str(info.value)


def test_references_to_modules_and_tensors_must_agree() -> None:
    later = {"list": [{"module": 0}, module_node("tensorweaver.nn.modules.module:Module")]}
    with pytest.raises(ser.SafetensorsError, match="module 0, which comes later or never"):
        load(forge(later, WEIGHT))
    both = {"list": [{"tensor": "weight"}, {"parameter": ["weight", True]}]}
    with pytest.raises(ser.SafetensorsError, match="both as tensor and as"):
        load(forge(both, WEIGHT))
    with pytest.raises(ser.SafetensorsError, match="unknown dtype"):
        load(forge({"dtype": "complex512"}, {}))
