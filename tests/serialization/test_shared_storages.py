"""Tensors sharing memory through ``tw.save``/``tw.load`` as through ``torch.save``/``torch.load``
(PyTorch 2.13): views of one memory come back sharing it (a write through one shows in the
others), the memory is stored once, files without sharing are unchanged, and a file's view
entries are checked before use."""

from __future__ import annotations

import io
import json
import struct
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from safetensors_files import forge

W = np.arange(12.0).reshape(3, 4)


def round_trip(m: Any, obj: Any) -> Any:
    buffer = io.BytesIO()
    m.save(obj, buffer)
    buffer.seek(0)
    return m.load(buffer)


def header(obj: Any) -> tuple[list[str], str]:
    """The file tensors' names and the format of ``tw.save(obj)``'s file."""
    buffer = io.BytesIO()
    tw.save(obj, buffer)
    blob = buffer.getvalue()
    (n,) = struct.unpack("<Q", blob[:8])
    found = json.loads(blob[8 : 8 + n])
    entry = json.loads(found.pop("__metadata__")["tensorweaver"])
    return sorted(found), entry["format"]


def views_of_a_weight(m: Any) -> dict:
    w = m.nn.Parameter(m.tensor(W))
    return {"w": w.detach(), "t": w.detach().t(), "row": w.detach()[1], "col": w.detach()[:, 2]}


def shared_tail(m: Any) -> dict:
    base = m.tensor(W).reshape(-1)
    return {"b": base[2:7], "c": base[5:], "d": base[:4].view(2, 2)}


def weight_and_parameter(m: Any) -> dict:
    w = m.nn.Parameter(m.tensor(W))
    return {"param": w, "t": w.t(), "alias": w.detach()}


def complex_views(m: Any) -> dict:
    base = m.tensor(W).to(m.complex64) * (1 - 2j)
    return {"z": base, "row": base[1], "t": base.t()}


def other_dtypes(m: Any) -> dict:
    ints, flags = m.arange(6).reshape(2, 3), m.tensor([True, False, True])
    return {"i": ints, "it": ints.t(), "f": flags, "ft": flags[1:], "e": m.arange(3.0)}


def expanded(m: Any) -> dict:
    row = m.tensor(W[0])
    return {"row": row, "rows": row.expand(3, 4)}


CASES: dict[str, Callable[[Any], dict]] = {
    "views of a weight": views_of_a_weight,
    "slices of an unsaved base": shared_tail,
    "parameter, view and alias": weight_and_parameter,
    "complex views": complex_views,
    "integer and bool views": other_dtypes,
    "expanded": expanded,
}
WRITES = {
    "views of a weight": ("t", (2, 1), -5.0),
    "slices of an unsaved base": ("c", (0,), -5.0),
    "parameter, view and alias": ("alias", (1, 2), -5.0),
    "complex views": ("row", (3,), 7 - 1j),
    "integer and bool views": ("it", (1, 1), 100),
    "expanded": ("row", (2,), -5.0),
}


def values(m: Any, loaded: dict) -> dict:
    return {k: (v.detach().numpy().copy(), v.requires_grad) for k, v in loaded.items()}


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("name", list(CASES))
def test_views_share_after_load_as_in_torch(name: str, spec: str) -> None:
    """(Each view loaded as a tensor of its own before.)"""
    with tw.device(spec):
        ours = round_trip(tw, CASES[name](tw))
    ref = round_trip(torch, CASES[name](torch))
    key, index, value = WRITES[name]
    for loaded, m in ((ours, tw), (ref, torch)):
        assert list(loaded) == list(ref)
        with m.no_grad():
            loaded[key][index] = value
    got, expected = values(tw, ours), values(torch, ref)
    for k in expected:
        np.testing.assert_array_equal(got[k][0], expected[k][0], err_msg=k)
        assert got[k][1] == expected[k][1], k
    if "param" in ref:
        assert type(ours["param"]) is tw.nn.Parameter and type(ref["param"]) is torch.nn.Parameter


def test_the_memory_is_stored_once_under_a_members_name() -> None:
    assert header(views_of_a_weight(tw)) == (["w"], "tensorweaver/3.2")
    names, version = header(shared_tail(tw))
    assert names == ["b.storage"] and version == "tensorweaver/3.2"


def test_files_without_sharing_are_unchanged() -> None:
    """A view saved without its base, or a tensor and a copy, keep their own values and the
    oldest format that holds them."""
    base = tw.tensor(W)
    assert header({"a": base[1:], "b": base.clone()}) == (["a", "b"], "tensorweaver/2")
    assert header({"a": tw.nn.Linear(2, 2).state_dict()}) == (
        ["a.bias", "a.weight"],
        "tensorweaver/2",
    )


def test_tied_weights_stay_tied_through_a_state_dict_as_in_torch() -> None:
    loaded = []
    for m in (torch, tw):
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Embedding(5, 3), m.nn.Linear(3, 5, bias=False))
        model[1].weight = model[0].weight
        state = round_trip(m, model.state_dict())
        with m.no_grad():
            state["0.weight"][0, 0] = 42.0
        loaded.append(float(state["1.weight"][0, 0]))
    assert loaded == [42.0, 42.0]
    assert header(model.state_dict())[0] == ["0.weight"]


def test_older_readers_ask_for_an_upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorweaver.serialization import document

    blob = io.BytesIO()
    tw.save(views_of_a_weight(tw), blob)
    monkeypatch.setattr(
        document, "FORMATS", document.FORMATS[: document.FORMATS.index("tensorweaver/3.2")]
    )
    blob.seek(0)
    with pytest.raises(tw.SafetensorsError, match="format 'tensorweaver/3.2'.*upgrade"):
        tw.load(blob)


def test_a_member_the_backend_copied_keeps_its_own_values() -> None:
    """NumPy's flip copies where PyTorch's gives a view with negative strides... which
    PyTorch cannot save either way: a TensorWeaver flip is saved with its own values."""
    base = tw.tensor(W)
    loaded = round_trip(tw, {"a": base, "f": base.flip(0)})
    np.testing.assert_array_equal(np.asarray(loaded["f"]), W[::-1])
    np.testing.assert_array_equal(np.asarray(loaded["a"]), W)


STORAGE = {"s": np.arange(6.0)}


def forged(views: list, keys: tuple[str, ...] = ("a",)) -> bytes:
    node = {"dict": [[k, {"tensor": k}] for k in keys]}
    return forge({"shared": [views, node]}, STORAGE, version="tensorweaver/3.2")


def test_a_view_entry_up_to_the_last_element_loads() -> None:
    loaded = tw.load(io.BytesIO(forged([["a", "s", [2, 2], [3, 2], 0]])))
    np.testing.assert_array_equal(np.asarray(loaded["a"]), [[0.0, 2.0], [3.0, 5.0]])


@pytest.mark.parametrize(
    ("views", "keys", "match"),
    [
        ([["a", "s", [3], [1], 4]], ("a",), "reaches element 6 of a storage of 6"),
        ([["a", "nope", [3], [1], 0]], ("a",), "storage the file does not hold"),
        ([["a", "s", [3], [-1], 2]], ("a",), "ints >= 0"),
        ([["a", "s", [3], [1, 1], 0]], ("a",), "ints >= 0"),
        ([["a", "s", [3], [1]]], ("a",), r"must be \[name, storage"),
        ([["a", "s", [3], [1], 0], ["a", "s", [2], [1], 0]], ("a",), "named twice"),
        ([["a", "s", [3], [1], 0]], (), "never refers to: 's', 'a'"),
        # Each of these hung, ran out of memory or raised NumPy's ValueError/OverflowError:
        # a broadcast of a small storage to 10**18 elements (as_strided makes every element),
        ([["a", "s", [10**9, 10**9], [0, 0], 0]], ("a",), "beyond 16777216 elements more"),
        # a zero-size view with a dimension of 2**40 (as_strided indexes each dimension),
        ([["a", "s", [0, 2**40], [1, 1], 0]], ("a",), "beyond 16777216 elements more"),
        # a size beyond NumPy's intp, a stride too, where the bounds do not multiply them,
        ([["a", "s", [0, 10**30], [1, 10**30], 0]], ("a",), "ints >= 0 and < 2\\*\\*62"),
        ([["a", "s", [1], [10**30], 0]], ("a",), "ints >= 0 and < 2\\*\\*62"),
        # and views each within the bound whose sum is not (zero-size ones: quick to make).
        (
            [["a", "s", [0, 2**23], [1, 1], 0], ["b", "s", [0, 2**23 + 13], [1, 1], 0]],
            ("a", "b"),
            f"view 'b' of shape \\[0, {2**23 + 13}\\] over a storage of 6 ",
        ),
    ],
)
def test_bad_view_entries_are_safetensors_errors(views: list, keys: tuple, match: str) -> None:
    with pytest.raises(tw.SafetensorsError, match=match):
        tw.load(io.BytesIO(forged(views, keys)))


def test_a_changed_view_entry_fails_the_header_checksum() -> None:
    buffer = io.BytesIO()
    tw.save(views_of_a_weight(tw), buffer)
    blob = buffer.getvalue()
    entry = b'"row\\",\\"w\\",[4],[1],4]'  # the row: shape, strides, offset
    assert blob.count(entry) == 1
    damaged = blob.replace(entry, entry[:-2] + b"5]")
    with pytest.raises(tw.SafetensorsError, match="header .* does not match the SHA-256"):
        tw.load(io.BytesIO(damaged))


def test_save_keeps_within_the_budget_load_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member whose view would take the file beyond the bound is saved with its own
    values, so that tw.load reads every file tw.save writes."""
    from tensorweaver.serialization import storages

    monkeypatch.setattr(storages, "MAX_VIEW_EXCESS", 10)
    x = tw.arange(4.0)
    loaded = round_trip(tw, {"x": x, "wide": x.expand(3, 4), "over": x.expand(2, 4)})
    loaded["x"].add_(1)
    np.testing.assert_array_equal(np.asarray(loaded["wide"]), np.tile(np.arange(4.0) + 1, (3, 1)))
    np.testing.assert_array_equal(np.asarray(loaded["over"]), np.tile(np.arange(4.0), (2, 1)))
