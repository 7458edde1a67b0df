"""A seeded differential sweep of ``tw.save`` / ``tw.load`` against ``torch.save`` /
``torch.load`` (PyTorch 2.13, default ``weights_only=True``).

Each case is a random nesting of what scripts save (dicts with str and int keys, lists,
tuples, OrderedDicts, numbers, strings, ``None``, bools; tensors of every dtype, 0-d, empty,
views that are not contiguous, some sharing memory, tensors that require grad), made once for
each library from the same values.
Both libraries save it (to a str path, a ``pathlib.Path``, an open file or an
``io.BytesIO``) and load it back (``map_location`` as a string, a device, a dict or a
function); what comes back must match what PyTorch gives: containers and their types, key
order, dtypes, shapes, values bit for bit and ``requires_grad``. The suite runs
``TW_SAVE_SWEEP_CASES`` cases (40 by default); named regression tests for what the sweep found
follow.
"""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import random
import struct
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from safetensors_files import forge

CASES = int(os.environ.get("TW_SAVE_SWEEP_CASES", "40"))
DTYPES = [
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip
TORCH_CPU = tw.device("torch:cpu")


def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    """A torch tensor of ``dtype`` and ``shape`` with random values (NaN and inf in floats)."""
    t = getattr(torch, dtype)
    if dtype == "bool":
        return torch.from_numpy(np.asarray(rng.random(shape) < 0.5))
    if t.is_floating_point or t.is_complex:
        real = torch.from_numpy(np.asarray(rng.standard_normal(shape) * 100))
        if real.numel() > 2:
            real.view(-1)[:2] = torch.tensor([float("nan"), float("-inf")], dtype=real.dtype)
        x = torch.complex(real, real.flip(-1) if real.ndim else real) if t.is_complex else real
        return x.to(t)
    info = torch.iinfo(t)
    drawn = rng.integers(info.min, info.max, shape, endpoint=True)
    return torch.from_numpy(np.asarray(drawn)).to(t)


def _tw_of(x: torch.Tensor) -> tw.Tensor:
    """The same values as a TensorWeaver tensor (bfloat16 on torch:cpu, the backend with it)."""
    name = str(x.dtype).split(".")[1]
    if name == "bfloat16":
        return tw.tensor(x.float().numpy(), dtype=tw.bfloat16, device=TORCH_CPU)
    return tw.tensor(x.numpy(), dtype=getattr(tw, name))


class Builder:
    """A random object of a case, as a pair (torch's, TensorWeaver's)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.r = random.Random(seed)
        self.bf16 = False
        self.bases: list[tuple[str, tuple[Any, Any]]] = []  # memory two tensors may share

    def tensor(self) -> tuple[Any, Any]:
        if self.bases and self.r.random() < 0.25:  # another view of earlier memory
            dtype, pair = self.r.choice(self.bases)
        else:
            dtype = self.r.choice(DTYPES)
            self.bf16 |= dtype == "bfloat16"
            shape = self.r.choice([(), (0,), (3,), (2, 3), (2, 0, 4), (3, 4, 2)])
            base = _values(self.rng, dtype, shape)
            pair = base, _tw_of(base)
            self.bases.append((dtype, pair))
        shape = tuple(pair[0].shape)
        view = self.r.choice(["whole", "whole", "T", "step", "row"]) if len(shape) >= 2 else ""
        if view == "T":
            pair = pair[0].transpose(0, 1), pair[1].transpose(0, 1)
        elif view == "step":
            pair = pair[0][:, ::2], pair[1][:, ::2]
        elif view == "row":
            pair = pair[0][1], pair[1][1]
        if getattr(torch, dtype).is_floating_point and self.r.random() < 0.3:
            pair = pair[0].detach().requires_grad_(True), pair[1].detach().requires_grad_(True)
        return pair

    def scalar(self) -> tuple[Any, Any]:
        if self.r.random() < 0.1:
            return torch.Size([2, 3]), tw.Size([2, 3])
        value = self.r.choice([0, -7, 2**40, 1.5, float("inf"), "text", "", None, True, False])
        if self.r.random() < 0.2:
            value = self.r.choice([b"\x00b", bytearray(b"z"), 2 - 1j, {3, "s", None}])
        return value, value

    def node(self, depth: int = 0) -> tuple[Any, Any]:
        kind = self.r.choice(["tensor", "tensor", "scalar", "dict", "ordered", "list", "tuple"])
        if depth >= 3 or kind == "tensor":
            return self.tensor()
        if kind == "scalar":
            return self.scalar()
        items = [self.node(depth + 1) for _ in range(self.r.randint(0, 4))]
        if kind in ("dict", "ordered"):
            keys = self.r.sample(["w", "b", "state", "z", "a", 0, 1, 5, -2], len(items))
            cls = dict if kind == "dict" else collections.OrderedDict
            return (
                cls((k, v[0]) for k, v in zip(keys, items)),
                cls((k, v[1]) for k, v in zip(keys, items)),
            )
        cls = list if kind == "list" else tuple
        return cls(v[0] for v in items), cls(v[1] for v in items)


def same(ours: Any, ref: Any, where: str = "top") -> None:
    """``ours`` (tw.load's) holds what ``ref`` (torch.load's) holds."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(ours, tw.Tensor), where
        assert ours.dtype.name == str(ref.dtype).split(".")[1], where
        assert tuple(ours.shape) == tuple(ref.shape), where
        assert ours.requires_grad == ref.requires_grad, where
        if ref.dtype == torch.bfloat16:
            got, want = ours.float().detach().numpy(), ref.detach().float().numpy()
        else:
            got, want = ours.detach().numpy(), ref.detach().numpy()
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    expected_type = tw.Size if type(ref) is torch.Size else type(ref)
    assert type(ours) is expected_type, (where, type(ours), type(ref))
    if isinstance(ref, dict):
        assert list(ours) == list(ref), where
        for key in ref:
            same(ours[key], ref[key], f"{where}.{key}")
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref), where
        for i, (a, b) in enumerate(zip(ours, ref)):
            same(a, b, f"{where}.{i}")
    else:
        assert ours == ref, where


def _round_trip(
    save: Callable, load: Callable, obj: Any, how: str, tmp_path: Path, **load_kwargs: Any
) -> Any:
    """``load(save(obj))`` through a file of kind ``how``."""
    path = tmp_path / f"{how}-{save.__module__.split('.')[0]}.bin"
    if how == "bytesio":
        buffer = io.BytesIO()
        save(obj, buffer)
        buffer.seek(0)
        return load(buffer, **load_kwargs)
    if how == "file":
        with open(path, "wb") as f:
            save(obj, f)
        with open(path, "rb") as f:
            return load(f, **load_kwargs)
    target = str(path) if how == "str" else path
    save(obj, target)
    return load(target, **load_kwargs)


def _map_location(r: random.Random, bf16: bool) -> Any:
    if bf16:  # bfloat16 loads only on a backend that has it
        return r.choice(["torch:cpu", TORCH_CPU])
    return r.choice([None, "cpu", "numpy", "torch:cpu", TORCH_CPU, {"cpu": "torch:cpu"}, _keep])


def _keep(storage: Any, location: str) -> Any:
    assert location == "cpu"
    return storage


@pytest.mark.parametrize("seed", range(CASES))
def test_sweep_round_trip_matches_torch(seed: int, tmp_path: Path) -> None:
    builder = Builder(seed)
    ref_obj, our_obj = builder.node()
    how = builder.r.choice(["str", "pathlib", "file", "bytesio"])
    ref = _round_trip(torch.save, torch.load, ref_obj, how, tmp_path)
    where = _map_location(builder.r, builder.bf16)
    ours = _round_trip(tw.save, tw.load, our_obj, how, tmp_path, map_location=where)
    same(ours, ref)
    # Memory the saved tensors shared is shared after loading: a write shows in the others.
    for m, loaded in ((torch, ref), (tw, ours)):
        written = next((t for t in _tensors(loaded) if t.numel()), None)
        if written is not None:
            with m.no_grad():
                written.fill_(True if written.dtype == m.bool else 3)
    same(ours, ref)
    on_torch = where is TORCH_CPU or (isinstance(where, (str, dict)) and "torch:cpu" in str(where))
    for t in _tensors(ours):
        assert t.device.name.startswith("torch:cpu" if on_torch else "numpy:cpu"), (where, t.device)


def _tensors(obj: Any) -> list[Any]:
    if isinstance(obj, (tw.Tensor, torch.Tensor)):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _tensors(item)]
    return []


def test_sweep_optimizer_and_model_state_match_torch(tmp_path: Path) -> None:
    """A checkpoint as scripts write it: model and optimizer state dicts, epoch, loss."""
    torch.manual_seed(0)
    ref_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    model = tw.nn.Sequential(tw.nn.Linear(3, 4), tw.nn.ReLU(), tw.nn.Linear(4, 2))
    model.load_state_dict({k: _tw_of(v) for k, v in ref_model.state_dict().items()})
    ref_opt = torch.optim.Adam(ref_model.parameters(), lr=0.01)
    opt = tw.optim.Adam(model.parameters(), lr=0.01)
    x = np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32)
    ref_model(torch.from_numpy(x)).square().sum().backward()
    model(tw.tensor(x)).square().sum().backward()
    ref_opt.step()
    opt.step()
    ckpt = {"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict(), "loss": 0.5}
    ref_ckpt = {"epoch": 3, "model": ref_model.state_dict(), "optimizer": ref_opt.state_dict()}
    ref_ckpt["loss"] = 0.5
    ref = _round_trip(torch.save, torch.load, ref_ckpt, "bytesio", tmp_path)
    ours = _round_trip(tw.save, tw.load, ckpt, "bytesio", tmp_path)
    assert list(ours) == list(ref) and list(ours["model"]) == list(ref["model"])
    assert list(ours["optimizer"]["state"]) == list(ref["optimizer"]["state"]) == [0, 1, 2, 3]
    for key, value in ref["model"].items():
        np.testing.assert_allclose(ours["model"][key].numpy(), value.numpy(), rtol=1e-6)
    ref_group, group = ref["optimizer"]["param_groups"][0], ours["optimizer"]["param_groups"][0]
    assert group["params"] == ref_group["params"] and group["betas"] == ref_group["betas"]
    assert type(group["betas"]) is type(ref_group["betas"]) is tuple
    for index, state in ref["optimizer"]["state"].items():
        assert sorted(ours["optimizer"]["state"][index]) == sorted(state)
    opt.load_state_dict(ours["optimizer"])  # what resuming does


# Named regression tests: what the sweep found, each failing before its fix.


def _both(obj_torch: Any, obj_tw: Any) -> tuple[Any, Any]:
    ref, ours = io.BytesIO(), io.BytesIO()
    torch.save(obj_torch, ref)
    ref.seek(0)
    tw.save(obj_tw, ours)
    ours.seek(0)
    return tw.load(ours), torch.load(ref)


def test_bfloat16_0d_tensor_saves() -> None:
    """Was: AttributeError ('numpy.uint16' object has no attribute 'ctypes')."""
    x = tw.tensor(1.5, dtype=tw.bfloat16, device=TORCH_CPU)
    nan = tw.tensor(float("nan"), dtype=tw.bfloat16, device=TORCH_CPU)
    buffer = io.BytesIO()
    tw.save({"x": x, "nan": nan}, buffer)
    buffer.seek(0)
    loaded = tw.load(buffer, map_location="torch:cpu")
    assert (
        loaded["x"].shape == () and loaded["x"].dtype is tw.bfloat16 and loaded["x"].item() == 1.5
    )
    assert np.isnan(loaded["nan"].item())


def test_requires_grad_of_a_plain_tensor_is_kept_as_torch(tmp_path: Path) -> None:
    """Was: every loaded tensor had requires_grad=False; torch.load keeps the flag (a
    script that saves hand-made weights and trains them again relies on it)."""
    w = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    ref_obj = {"w": w, "same": w, "derived": w * 2, "plain": torch.ones(2)}
    ref = _round_trip(torch.save, torch.load, ref_obj, "bytesio", tmp_path)
    our_w = _tw_of(w.detach()).requires_grad_(True)
    obj = {"w": our_w, "same": our_w, "derived": our_w * 2, "plain": tw.ones(2)}
    ours = _round_trip(tw.save, tw.load, obj, "str", tmp_path)
    same(ours, ref)
    assert ours["w"] is ours["same"] and ours["w"].is_leaf and ours["derived"].is_leaf
    ours["w"].square().sum().backward()
    np.testing.assert_array_equal(ours["w"].grad.numpy(), 2 * w.detach().numpy())
    z = tw.complex(tw.ones(2), tw.zeros(2)).requires_grad_(True)
    assert _round_trip(tw.save, tw.load, {"z": z}, "bytesio", tmp_path)["z"].requires_grad


def test_torch_save_and_load_keywords_are_accepted() -> None:
    """Was: TypeError for PyTorch's keywords (``pickle_protocol=4``,
    ``_use_new_zipfile_serialization=False``, ``encoding="latin1"``, ...), so scripts that
    pass them failed; they configure pickling, which tw never does."""
    buffer = io.BytesIO()
    tw.save({"x": tw.ones(2)}, buffer, pickle, 4, _use_new_zipfile_serialization=False)
    tw.save({"x": tw.ones(2)}, io.BytesIO(), pickle_protocol=2, _disable_byteorder_record=True)
    for kwargs in ({"encoding": "latin1"}, {"pickle_module": pickle, "weights_only": False}):
        buffer.seek(0)
        assert tw.load(buffer, **kwargs)["x"].tolist() == [1.0, 1.0]
    buffer.seek(0)
    assert tw.load(buffer, None, pickle)["x"].tolist() == [1.0, 1.0]


def test_pickle_module_with_weights_only_is_runtime_error_as_torch() -> None:
    ref, ours = io.BytesIO(), io.BytesIO()
    torch.save({"x": torch.ones(1)}, ref)
    tw.save({"x": tw.ones(1)}, ours)
    for load, buffer in ((torch.load, ref), (tw.load, ours)):
        buffer.seek(0)
        with pytest.raises(RuntimeError, match="pickle_module"):
            load(buffer, pickle_module=pickle, weights_only=True)
    with pytest.raises(TypeError, match="no_such_keyword"):
        tw.load(io.BytesIO(ours.getvalue()), no_such_keyword=1)


@pytest.mark.parametrize(
    "value",
    [{1, "a", (2, 3), None}, set(), b"\x00ab", bytearray(b"ab"), 1 + 2j, complex("nan+infj")],
    ids=["set", "empty_set", "bytes", "bytearray", "complex", "complex_nan"],
)
def test_other_python_values_torch_loads_with_weights_only(value: Any) -> None:
    """Was: TypeError from tw.save for values torch.load(weights_only=True) gives back."""
    ours, ref = _both({"v": value, "nested": [value]}, {"v": value, "nested": [value]})
    assert type(ours["v"]) is type(ref["v"]) and type(ours["nested"][0]) is type(ref["v"])
    for got, want in ((ours["v"], ref["v"]), (ours["nested"][0], ref["nested"][0])):
        if isinstance(want, complex):
            assert repr(got) == repr(want)  # NaN != NaN
        else:
            assert got == want  # (a set's repr follows its insertion order, not its items)


def test_size_type_is_kept() -> None:
    """Was: a saved tw.Size loaded as a plain tuple (torch.load keeps torch.Size)."""
    shape = tw.ones(2, 3).shape
    ours, ref = _both(
        {"s": torch.ones(2, 3).shape, "e": torch.Size([])}, {"s": shape, "e": tw.Size([])}
    )
    assert type(ours["s"]) is tw.Size and ours["s"] == ref["s"] == (2, 3)
    assert type(ours["e"]) is tw.Size and ours["e"] == ()


def test_set_of_tensors_and_empty_bytes_round_trip() -> None:
    # torch.load(weights_only=True) refuses an empty bytes object, so tw's alone is checked.
    ours, _ = _both({"s": {torch.arange(3)}}, {"s": {tw.arange(3)}, "e": b""})
    (loaded,) = ours["s"]
    assert loaded.tolist() == [0, 1, 2] and ours["e"] == b""


@pytest.mark.parametrize(
    "node",
    [{"bytes": "zz"}, {"bytes": 3}, {"bytes": "AB"}, {"bytes": "ab cd"}, {"size": [True]},
     {"size": [1.5]}, {"size": "2"}, {"complex_number": [1]}, {"complex_number": [10**400, 0]},
     {"set": [{"list": []}]}, {"set": 1}],
)  # fmt: skip
def test_malformed_other_value_nodes_are_safetensors_errors(node: dict) -> None:
    from tensorweaver.serialization import structure

    def fail(what: str) -> None:
        raise tw.SafetensorsError(what)

    with pytest.raises(tw.SafetensorsError):
        structure.rebuild(node, [], lambda name: None, fail)


def test_a_truncated_checkpoint_is_a_runtime_error_as_torch(tmp_path: Path) -> None:
    """Was: SafetensorsError was no RuntimeError, so a script's ``except RuntimeError`` (what
    torch.load raises for a truncated checkpoint) fallback did not catch it."""
    ref, ours = io.BytesIO(), io.BytesIO()
    torch.save({"x": torch.ones(3)}, ref)
    tw.save({"x": tw.ones(3)}, ours)
    for load, blob in ((torch.load, ref.getvalue()), (tw.load, ours.getvalue())):
        path = tmp_path / f"{load.__module__}.bin"
        path.write_bytes(blob[: len(blob) // 2])
        with pytest.raises(RuntimeError):
            load(path)
    with pytest.raises(tw.SafetensorsError, match="not a valid safetensors file"):
        tw.load(io.BytesIO(ours.getvalue()[:-1]))


# Found in review of the sweep's fixes, each failing before its fix.


def _format_of(blob: bytes) -> str:
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(json.loads(blob[8 : 8 + n])["__metadata__"]["tensorweaver"])["format"]


def test_new_node_kinds_make_a_format_older_readers_refuse_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was: PyTorch's tutorial checkpoint (``"loss": loss``, a tensor that requires grad), or
    any set, bytes or Size, was written as ``tensorweaver/3``, which TensorWeaver 0.3.0 reads:
    it called the file's structure bad ("unknown structure node 'requires_grad'") instead of
    asking for an upgrade. The tutorial's checkpoint without the loss tensor stays
    ``tensorweaver/2``, a Parameter ``tensorweaver/3``."""
    from tensorweaver.serialization import document

    torch.manual_seed(0)
    ref_model = torch.nn.Linear(3, 2)
    model = tw.nn.Linear(3, 2)
    model.load_state_dict({k: _tw_of(v) for k, v in ref_model.state_dict().items()})
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    ref_loss, loss = ref_model(torch.from_numpy(x)).sum(), model(tw.tensor(x)).sum()
    ours, ref = _both(
        {"epoch": 2, "model_state_dict": ref_model.state_dict(), "loss": ref_loss},
        {"epoch": 2, "model_state_dict": model.state_dict(), "loss": loss},
    )
    same(ours, ref)
    assert ours["loss"].requires_grad and ours["loss"].is_leaf
    formats = {}
    for name, obj in [
        ("state", {"epoch": 2, "model_state_dict": model.state_dict()}),
        ("parameter", {"w": model.weight}),
        ("loss", {"loss": loss}),
        ("size", {"s": tw.Size([2])}),
        ("set", {"s": {1}}),
        ("bytes", {"b": b"x"}),
        ("complex", {"c": 1j}),
    ]:
        buffer = io.BytesIO()
        tw.save(obj, buffer)
        formats[name] = _format_of(buffer.getvalue())
    assert formats == {
        "state": "tensorweaver/2",
        "parameter": "tensorweaver/3",
        **{k: "tensorweaver/3.1" for k in ("loss", "size", "set", "bytes", "complex")},
    }
    # TensorWeaver 0.3.0's reader: it knew tensorweaver/2 and /3 only.
    monkeypatch.setattr(document, "FORMATS", ("tensorweaver/2", "tensorweaver/3"))
    buffer = io.BytesIO()
    tw.save({"loss": loss}, buffer)
    buffer.seek(0)
    with pytest.raises(tw.SafetensorsError, match="format 'tensorweaver/3.1'.*upgrade"):
        tw.load(buffer)


@pytest.mark.parametrize(
    ("structure", "dtype"),
    [({"requires_grad": "i"}, np.int64), ({"parameter": ["i", True]}, np.int64)],
    ids=["requires_grad", "parameter"],
)
def test_a_forged_integer_tensor_that_requires_grad_is_a_safetensors_error(
    structure: dict, dtype: type
) -> None:
    """Was: RuntimeError from requires_grad_ (only floating point tensors can require grad),
    not the damaged-file error."""
    blob = forge(structure, {"i": np.arange(3, dtype=dtype)}, version="tensorweaver/3.1")
    with pytest.raises(tw.SafetensorsError, match="'i' of dtype int64 cannot require grad"):
        tw.load(io.BytesIO(blob))


def test_a_set_item_that_cannot_be_made_keeps_its_own_error() -> None:
    """Was: the TypeError of a bfloat16 tensor loaded onto NumPy (which lacks bfloat16) was
    taken for an unhashable set item: a SafetensorsError calling the file's structure bad."""
    buffer = io.BytesIO()
    tw.save({"s": {tw.ones(2, dtype=tw.bfloat16, device=TORCH_CPU)}}, buffer)
    buffer.seek(0)
    with pytest.raises(TypeError, match="cannot be created.*pass device="):
        tw.load(buffer, map_location="numpy")


def test_a_size_with_negative_entries_round_trips_as_torch() -> None:
    """Was: tw.save wrote tw.Size([-1, 3]) and tw.load refused the file it wrote (torch.Size
    holds any int64, and torch.load gives it back)."""
    ours, ref = _both({"s": torch.Size([-1, 3])}, {"s": tw.Size([-1, 3])})
    assert type(ours["s"]) is tw.Size and ours["s"] == ref["s"] == (-1, 3)


def test_a_set_is_saved_as_the_same_bytes_whatever_its_order() -> None:
    """Was: a set's items were stored in its iteration order, which depends on the order of
    insertion and (for strings) on the hash seed: one state, different files."""
    # 1 and 9 collide in a small set's table: inserted in other orders, they iterate apart.
    one, other = set([1, 9, "a"]), set([9, 1, "a"])
    assert one == other and list(one) != list(other)
    blobs = []
    for items in (one, other):
        buffer = io.BytesIO()
        tw.save({"s": items}, buffer)
        blobs.append(buffer.getvalue())
    assert blobs[0] == blobs[1]
    buffer = io.BytesIO(blobs[0])
    assert tw.load(buffer)["s"] == {1, 9, "a"}
    # The order must not put a module's reference to another before that one's own node.
    linear = tw.nn.Linear(2, 2)
    for _ in range(5):
        buffer = io.BytesIO()
        tw.save({"s": {tw.nn.Sequential(linear), linear}}, buffer)
        buffer.seek(0)
        loaded = tw.load(buffer)["s"]
        (outer,) = [m for m in loaded if isinstance(m, tw.nn.Sequential)]
        assert outer[0] in loaded


# Differences from PyTorch found since, each failing before its fix (shared storages and
# OrderedDicts: test_shared_storages.py and test_ordered_dicts.py).


def test_views_of_one_storage_still_share_after_load() -> None:
    """Was: each view was stored with its own values and loaded as a separate tensor."""
    base, ref_base = tw.arange(4.0), torch.arange(4.0)
    ours, ref = _both({"a": ref_base, "b": ref_base[1:]}, {"a": base, "b": base[1:]})
    ref["a"][1] = 100.0
    ours["a"][1] = 100.0
    assert ours["b"].tolist() == ref["b"].tolist()


def test_load_state_dict_of_loaded_tensors_that_require_grad_keeps_frozen_parameters() -> None:
    # copy_ under no_grad made its destination require grad when its source did (torch leaves
    # the flag alone): a frozen parameter came back trainable after load_state_dict.
    ref_model, model = torch.nn.Linear(2, 2), tw.nn.Linear(2, 2)
    ref_state = {k: v.detach().requires_grad_(True) for k, v in ref_model.state_dict().items()}
    state = {k: v.detach().requires_grad_(True) for k, v in model.state_dict().items()}
    ours, ref = _both(ref_state, state)
    for m, loaded in ((ref_model, ref), (model, ours)):
        m.weight.requires_grad_(False)
        m.load_state_dict(loaded)
    assert model.weight.requires_grad is ref_model.weight.requires_grad is False


def test_an_asgd_checkpoint_is_a_plain_state_dict_as_torch() -> None:
    # ASGD's state['ax'].copy_(param) under no_grad made the average require grad.
    ref_model, model = torch.nn.Linear(3, 1), tw.nn.Linear(3, 1)
    ref_opt, opt = torch.optim.ASGD(ref_model.parameters()), tw.optim.ASGD(model.parameters())
    x = np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32)
    ref_model(torch.from_numpy(x)).sum().backward()
    model(tw.tensor(x)).sum().backward()
    ref_opt.step()
    opt.step()
    buffer = io.BytesIO()
    tw.save(opt.state_dict(), buffer)
    ours, ref = _both(ref_opt.state_dict(), opt.state_dict())
    assert ours["state"][0]["ax"].requires_grad is ref["state"][0]["ax"].requires_grad is False
    assert _format_of(buffer.getvalue()) == "tensorweaver/2"


def test_ordered_dict_type_is_kept() -> None:
    """Was: an OrderedDict loaded as a dict (its order kept)."""
    od = collections.OrderedDict(b=1, a=2)
    ours, ref = _both(od, od)
    assert type(ours) is type(ref) is collections.OrderedDict
