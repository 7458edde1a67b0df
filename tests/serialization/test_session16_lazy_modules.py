"""tw.save / tw.load of lazy modules before their first forward, as torch saves them: the
state dict of uninitialized parameters (tw.save raised ValueError reading their values) and
the whole module (TypeError on its first-forward hook's handle). The file holds no tensor for
an uninitialized one, only what it is (see serialization/uninitialized.py)."""

from __future__ import annotations

import copy
import io
import json
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.nn.parameter import is_lazy


def _round_trip(obj: Any) -> Any:
    buffer = io.BytesIO()
    tw.save(obj, buffer)
    buffer.seek(0)
    return tw.load(buffer)


LAZY: dict[str, Callable[[Any], Any]] = {
    "LazyLinear": lambda m: m.nn.LazyLinear(3),
    "LazyLinear without bias": lambda m: m.nn.LazyLinear(3, bias=False),
    "LazyConv1d": lambda m: m.nn.LazyConv1d(4, 2),
    "LazyBatchNorm1d": lambda m: m.nn.LazyBatchNorm1d(),
    "LazyInstanceNorm1d stats": lambda m: m.nn.LazyInstanceNorm1d(track_running_stats=True),
    "Sequential": lambda m: m.nn.Sequential(m.nn.LazyLinear(4), m.nn.ReLU(), m.nn.LazyLinear(2)),
}


def _input(m: Any, name: str) -> Any:
    return m.ones(2, 3, 5) if "1d" in name else m.ones(2, 3)


def _state(m: Any, name: str) -> list[tuple[str, str, bool]]:
    """Each state dict entry's name, class name and requires_grad, with torch's names."""
    state = LAZY[name](m).state_dict()
    return [(k, type(v).__name__, v.requires_grad) for k, v in state.items()]


@pytest.mark.parametrize("name", list(LAZY))
def test_state_dict_before_forward_round_trips_as_torch(name: str) -> None:
    module = LAZY[name](tw)
    loaded = _round_trip(module.state_dict())
    assert [(k, type(v).__name__, v.requires_grad) for k, v in loaded.items()] == _state(
        torch, name
    )
    for k, v in module.state_dict().items():
        assert loaded[k].dtype is v.dtype and is_lazy(loaded[k]) == is_lazy(v), k
    # loaded into a fresh lazy module, it leaves it uninitialized, as torch's does
    target = LAZY[name](tw)
    target.load_state_dict(loaded)
    assert tuple(target(_input(tw, name)).shape) == tuple(
        LAZY[name](torch)(_input(torch, name)).shape
    )


@pytest.mark.parametrize("name", list(LAZY))
def test_whole_module_before_forward_round_trips(name: str) -> None:
    loaded = _round_trip(LAZY[name](tw))
    reference = LAZY[name](torch)
    assert type(loaded).__name__ == type(reference).__name__
    assert tuple(loaded(_input(tw, name)).shape) == tuple(reference(_input(torch, name)).shape)
    reference(_input(torch, name))
    assert type(loaded).__name__ == type(reference).__name__  # became LazyLinear's Linear...
    assert list(loaded.state_dict()) == list(reference.state_dict())
    # and it saves again, now with values
    again = _round_trip(loaded)
    for (k, v), w in zip(loaded.state_dict().items(), again.state_dict().values()):
        np.testing.assert_array_equal(v.numpy(), w.numpy(), err_msg=k)


def test_lazy_half_dtype_and_requires_grad_kept() -> None:
    state = {"weight": tw.nn.LazyLinear(3, dtype=tw.float16).weight}
    state["frozen"] = tw.nn.UninitializedParameter(requires_grad=False, dtype=tw.float64)
    loaded = _round_trip(state)
    assert loaded["weight"].dtype is tw.float16 and loaded["weight"].requires_grad
    assert loaded["frozen"].dtype is tw.float64 and not loaded["frozen"].requires_grad


def test_one_uninitialized_parameter_twice_loads_as_one() -> None:
    weight = tw.nn.UninitializedParameter()
    loaded = _round_trip({"a": weight, "b": [weight]})
    assert loaded["a"] is loaded["b"][0] and is_lazy(loaded["a"])


def test_non_persistent_uninitialized_buffer() -> None:
    buffer = tw.nn.UninitializedBuffer(persistent=False)
    (loaded,) = _round_trip([buffer])
    assert isinstance(loaded, tw.nn.UninitializedBuffer) and loaded.persistent is False


def test_file_holds_no_tensor_for_uninitialized() -> None:
    buffer = io.BytesIO()
    tw.save(tw.nn.LazyLinear(3).state_dict(), buffer)
    blob = buffer.getvalue()
    header = json.loads(blob[8 : 8 + int.from_bytes(blob[:8], "little")])
    assert set(header) == {"__metadata__"}


BAD_NODES = [
    ["w", "weight", "float32", True, True],  # not a parameter or buffer
    ["w", "parameter", "float99", True, True],
    ["w", "parameter", "int64", True, True],  # integers cannot require grad
    ["w", "parameter", "float32", "yes", True],
    ["w", "parameter"],
]


@pytest.mark.parametrize("body", BAD_NODES, ids=range(len(BAD_NODES)))
def test_malformed_uninitialized_node_refused(body: list) -> None:
    from tensorweaver.serialization import structure

    def fail(what: str) -> Any:
        raise ValueError(what)

    with pytest.raises(ValueError, match="uninitialized"):
        structure.rebuild({"uninitialized": body}, [], lambda name: None, fail)


def test_deepcopy_of_lazy_parameters_only() -> None:
    # torch copies an uninitialized parameter but refuses an uninitialized buffer
    assert is_lazy(copy.deepcopy(tw.nn.LazyLinear(3)).weight)
    with pytest.raises(ValueError):
        copy.deepcopy(tw.nn.UninitializedBuffer())
    with pytest.raises(ValueError):
        copy.deepcopy(torch.nn.UninitializedBuffer())
