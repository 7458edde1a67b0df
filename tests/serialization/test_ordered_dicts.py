"""OrderedDicts through ``tw.save``/``tw.load`` as through ``torch.save``/``torch.load``
(PyTorch 2.13): the type, the order and a state dict's ``_metadata`` come back, and the file
of a state dict stays one that earlier TensorWeaver versions read as the same dict."""

from __future__ import annotations

import collections
import io
import json
import struct
from typing import Any

import pytest
import tensorweaver as tw
import torch
from safetensors_files import forge


def round_trip(m: Any, obj: Any) -> Any:
    buffer = io.BytesIO()
    m.save(obj, buffer)
    buffer.seek(0)
    return m.load(buffer)


def entry_of(obj: Any) -> dict:
    buffer = io.BytesIO()
    tw.save(obj, buffer)
    blob = buffer.getvalue()
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(json.loads(blob[8 : 8 + n])["__metadata__"]["tensorweaver"])


def shape_of(value: Any) -> Any:
    """Types, keys in order and ``_metadata`` of nested containers (tensors by type)."""
    if isinstance(value, dict):
        items = [(k, shape_of(v)) for k, v in value.items()]
        return (type(value).__name__, items, shape_of(getattr(value, "_metadata", None)))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [shape_of(v) for v in value])
    return "tensor" if isinstance(value, (tw.Tensor, torch.Tensor)) else value


def objects(m: Any) -> dict:
    od = collections.OrderedDict
    return {
        "ordered": od(b=1, a=2),
        "nested": {"x": od([(3, od(z=None)), (1, [od(q=1.5)])]), "plain": {"k": 1, "j": 2}},
        "empty": od(),
        "state dict": m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3)).state_dict(),
        "empty state dict": m.nn.ReLU().state_dict(),
        "one key": od(only=True),
    }


@pytest.mark.parametrize("name", list(objects(tw)))
def test_ordered_dicts_come_back_as_in_torch(name: str) -> None:
    """(An OrderedDict loaded as a dict, without ``_metadata``, before.)"""
    ours, ref = round_trip(tw, objects(tw)[name]), round_trip(torch, objects(torch)[name])
    assert shape_of(ours) == shape_of(ref)


def test_load_state_dict_from_a_loaded_state_dict() -> None:
    source = tw.nn.Sequential(tw.nn.Linear(2, 3), tw.nn.BatchNorm1d(3))
    target = tw.nn.Sequential(tw.nn.Linear(2, 3), tw.nn.BatchNorm1d(3))
    state = round_trip(tw, source.state_dict())
    assert state._metadata == source.state_dict()._metadata
    target.load_state_dict(state)
    for a, b in zip(source.state_dict().values(), target.state_dict().values()):
        assert a.tolist() == b.tolist()


def test_a_state_dict_file_reads_as_the_same_dict_without_the_mark() -> None:
    """A reader that knows dict nodes only (TensorWeaver before the mark) takes the pairs in
    order, a later one replacing an earlier one: it gets the state dict's keys in order and
    the file keeps format tensorweaver/2."""
    state = tw.nn.Sequential(tw.nn.Linear(2, 3), tw.nn.BatchNorm1d(3)).state_dict()
    entry = entry_of(state)
    assert entry["format"] == "tensorweaver/2"
    kind, pairs = next(iter(entry["structure"].items()))
    assert kind == "dict"
    assert list(dict((k, v) for k, v in pairs)) == list(state)
    assert all(v == {"tensor": k} for k, v in dict((k, v) for k, v in pairs).items())


def test_only_an_empty_ordered_dict_needs_the_newer_format() -> None:
    assert entry_of(collections.OrderedDict())["format"] == "tensorweaver/3.2"
    assert entry_of(collections.OrderedDict(a=1))["format"] == "tensorweaver/2"
    assert entry_of({"a": collections.OrderedDict(b=2)})["format"] == "tensorweaver/2"


def test_the_mark_needs_the_same_key_of_the_same_json_type() -> None:
    """1 and 1.0 are one key in Python, two in JSON: such a file (no dict saves it) is a dict."""
    blob = forge({"dict": [[1, None], [1.0, 5]]}, {})
    loaded = tw.load(io.BytesIO(blob))
    assert type(loaded) is dict and loaded == {1: 5}
    marked = tw.load(io.BytesIO(forge({"dict": [[1, None], [1, 5]]}, {})))
    assert type(marked) is collections.OrderedDict and marked == {1: 5}


METADATA = {
    "an empty OrderedDict": lambda: collections.OrderedDict(),
    "an int": lambda: 5,
    "a list": lambda: [1, 2],
    "a dict": lambda: {"a": 1},
}


@pytest.mark.parametrize("name", list(METADATA))
def test_any_metadata_comes_back_as_in_torch(name: str) -> None:
    """(tw.save wrote these, and tw.load refused them: "_metadata ... must be a dict node".)"""

    def run(m: Any) -> Any:
        od = collections.OrderedDict(a=1)
        od._metadata = METADATA[name]()  # type: ignore[attr-defined]
        return shape_of(round_trip(m, od))

    assert run(tw) == run(torch)
