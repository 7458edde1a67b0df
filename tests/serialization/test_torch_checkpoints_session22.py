"""``tw.load`` of files written by the real ``torch.save`` (zip format), against ``torch.load``:
values, dtypes, strides, sharing, Parameters, whole state dicts into tw modules and
optimizers; and files that must be refused without running anything."""

from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

# bfloat16 needs a device that has it (NumPy has not)
DEVICE = "torch:cpu"


def _values(t: Any) -> np.ndarray:
    out = t.detach()
    if out.dtype in (torch.bfloat16, tw.bfloat16):
        out = out.float()
    return np.asarray(out.cpu() if isinstance(out, torch.Tensor) else out)


def _same(ours: Any, theirs: torch.Tensor) -> None:
    assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride())
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_array_equal(_values(ours), _values(theirs))


def _saved(tmp_path: Path, obj: Any, **kwargs: Any) -> Path:
    path = tmp_path / "checkpoint.pt"
    torch.save(obj, path, **kwargs)
    return path


@pytest.mark.parametrize(
    "dtype",
    [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
     torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
     torch.bool],
    ids=str,
)  # fmt: skip
def test_every_dtype_torch_writes(tmp_path: Path, dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    values = torch.randn(3, 4, generator=g, dtype=torch.float64) * 50
    if dtype.is_complex:
        values = torch.complex(values, -values)
    obj = {"t": values.to(dtype), "scalar": values[0, 0].to(dtype), "empty": values[:0].to(dtype)}
    path = _saved(tmp_path, obj)
    expected = torch.load(path, weights_only=True)
    got = tw.load(path, map_location=DEVICE, weights_only=True)
    assert list(got) == list(expected)
    for key in expected:
        _same(got[key], expected[key])


def test_views_come_back_sharing_memory_as_in_torch(tmp_path: Path) -> None:
    base = torch.arange(24.0, dtype=torch.float64).reshape(4, 6)
    obj = {
        "base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2], "tail": base[3, 2:],
        "channels_last": torch.arange(24.0).reshape(1, 2, 3, 4).to(
            memory_format=torch.channels_last
        ),
        "alone_transposed": torch.arange(6.0).reshape(2, 3).t(),
    }  # fmt: skip
    path = _saved(tmp_path, obj)
    expected = torch.load(path, weights_only=True)
    got = tw.load(path)
    for key in expected:
        _same(got[key], expected[key])
    for sd in (expected, got):  # a write through one shows in the others, in both
        sd["base"][2, 3] = -1.0
    for key in ("t", "row", "cols", "tail"):
        np.testing.assert_array_equal(_values(got[key]), _values(expected[key]))


def test_parameters_and_tied_weights(tmp_path: Path) -> None:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(5, 3)
    head = torch.nn.Linear(3, 5)
    head.weight = emb.weight
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    obj = {"emb": emb.weight, "head": head.weight, "frozen": frozen, "plain": torch.ones(2)}
    path = _saved(tmp_path, obj)
    expected = torch.load(path, weights_only=True)
    got = tw.load(path)
    for key in expected:
        _same(got[key], expected[key])
        assert isinstance(got[key], tw.nn.Parameter) == isinstance(
            expected[key], torch.nn.Parameter
        )
    assert got["emb"] is got["head"]


def test_python_values_as_torch_loads_them(tmp_path: Path) -> None:
    obj = {
        "od": collections.OrderedDict([("b", 1), ("a", [2.5, None, True])]),
        "counter": collections.Counter(a=2, b=1),
        "nested": {3: (1, -(2**70), "s"), "set": {1, 2}},
        "bytes": b"\x00\xffab", "complex": 1 - 2j, "dtype": torch.float16,
        "size": torch.Size([2, 3]), "device": torch.device("cpu"),
    }  # fmt: skip
    path = _saved(tmp_path, obj)
    expected = torch.load(path, weights_only=True)
    got = tw.load(path)
    assert type(got["od"]) is collections.OrderedDict
    assert got["od"] == expected["od"]
    assert type(got["counter"]) is collections.Counter and got["counter"] == expected["counter"]
    assert got["nested"] == expected["nested"]
    assert (got["bytes"], got["complex"]) == (expected["bytes"], expected["complex"])
    assert got["dtype"] is tw.float16
    assert isinstance(got["size"], tw.Size) and tuple(got["size"]) == (2, 3)
    assert str(got["device"]) == str(expected["device"])


def test_protocol_4_pickles(tmp_path: Path) -> None:
    obj = {"w": torch.arange(4.0).reshape(2, 2), "names": ["a", "b"], "n": 10**30}
    path = _saved(tmp_path, obj, pickle_protocol=4)
    got = tw.load(path)
    _same(got["w"], obj["w"])
    assert (got["names"], got["n"]) == (obj["names"], obj["n"])


class _SmallCNN(torch.nn.Module):
    def __init__(self, nn: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)


def test_module_state_dicts_load_into_tw_modules(tmp_path: Path) -> None:
    torch.manual_seed(0)
    cnn, lstm = _SmallCNN(torch.nn), torch.nn.LSTM(3, 4, num_layers=2)
    cnn.bn.running_mean.uniform_()
    path = _saved(tmp_path, {"cnn": cnn.state_dict(), "lstm": lstm.state_dict()})
    loaded = tw.load(path, weights_only=True)
    ours_cnn = _tw_cnn()
    ours_lstm = tw.nn.LSTM(3, 4, num_layers=2)
    ours_cnn.load_state_dict(loaded["cnn"])
    ours_lstm.load_state_dict(loaded["lstm"])
    for ours, theirs in ((ours_cnn, cnn), (ours_lstm, lstm)):
        expected = theirs.state_dict()
        got = ours.state_dict()
        assert list(got) == list(expected)
        for key in expected:
            np.testing.assert_array_equal(_values(got[key]), _values(expected[key]))


def _tw_cnn() -> Any:
    class CNN(tw.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = tw.nn.Conv2d(1, 4, 3)
            self.bn = tw.nn.BatchNorm2d(4)
            self.fc = tw.nn.Linear(4, 2)

    return CNN()


def test_an_optimizer_state_dict_loads_into_tw_adam(tmp_path: Path) -> None:
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(3, dtype=torch.float64))
    b = torch.nn.Parameter(torch.randn(2, dtype=torch.float64))
    opt = torch.optim.Adam([w, b], lr=0.01, betas=(0.8, 0.9))
    for _ in range(2):
        opt.zero_grad()
        ((w**2).sum() + (b**3).sum()).backward()
        opt.step()
    path = _saved(tmp_path, opt.state_dict())
    expected = torch.load(path, weights_only=True)
    got = tw.load(path)
    assert got["param_groups"] == expected["param_groups"]
    ours_w = tw.nn.Parameter(tw.tensor(w.detach().numpy()))
    ours_b = tw.nn.Parameter(tw.tensor(b.detach().numpy()))
    ours = tw.optim.Adam([ours_w, ours_b], lr=0.01)
    ours.load_state_dict(got)
    assert ours.param_groups[0]["betas"] == (0.8, 0.9)
    for p, theirs in ((ours_w, w), (ours_b, b)):
        for key, value in opt.state[theirs].items():
            np.testing.assert_array_equal(_values(ours.state[p][key]), _values(value))
    # one more step each, from the loaded state: the same update
    for step in (opt, ours):
        step.zero_grad()
    ((w**2).sum() + (b**3).sum()).backward()
    ((ours_w**2).sum() + (ours_b**3).sum()).backward()
    opt.step()
    ours.step()
    np.testing.assert_allclose(_values(ours_w), _values(w), rtol=1e-12)
    np.testing.assert_allclose(_values(ours_b), _values(b), rtol=1e-12)


@pytest.mark.parametrize(
    "map_location",
    ["torch:cpu", "tw.device", {"cpu": "torch:cpu"}, "function", "function-none"],
    ids=str,
)
def test_map_location_forms(tmp_path: Path, map_location: Any) -> None:
    seen: list[str] = []

    def moved(storage: Any, location: str) -> Any:
        seen.append(location)
        return storage.to("torch:cpu")

    if map_location == "tw.device":
        map_location = tw.device("torch:cpu")
    elif map_location == "function":
        map_location = moved
    elif map_location == "function-none":
        map_location = lambda storage, location: None  # noqa: E731
    x = torch.arange(6.0).reshape(2, 3)
    path = _saved(tmp_path, {"x": x, "xt": x.t(), "y": torch.ones(2)})
    got = tw.load(path, map_location=map_location)
    for key, value in torch.load(path, weights_only=True).items():
        _same(got[key], value)
        assert got[key].device.type == "cpu"
        if map_location != "function-none" and not callable(map_location):
            assert got[key].device.backend == "torch"
    if map_location is moved:
        assert seen == ["cpu", "cpu"]  # once per storage


@pytest.mark.parametrize("weights_only", [True, None, False])
def test_weights_only_mmap_and_file_objects(tmp_path: Path, weights_only: Any) -> None:
    x = torch.arange(5.0)
    path = _saved(tmp_path, {"x": x})
    _same(tw.load(path, weights_only=weights_only, mmap=True)["x"], x)
    _same(tw.load(io.BytesIO(path.read_bytes()), weights_only=weights_only)["x"], x)
    with open(path, "rb") as f:
        _same(tw.load(f, weights_only=weights_only)["x"], x)


def test_a_large_checkpoint_loads_exactly(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(1)
    big = torch.randn(1 << 21, generator=g)  # 8 MiB
    path = _saved(tmp_path, {"big": big, "head": big[:10]})
    got = tw.load(path)
    _same(got["big"], big)
    _same(got["head"], big[:10])


# -- refused files ------------------------------------------------------------------------------


class _Evil:
    def __init__(self, func: Callable, arg: str) -> None:
        self.func, self.arg = func, arg

    def __reduce__(self) -> Any:
        return self.func, (self.arg,)


def _with_pickle(tmp_path: Path, data: bytes, obj: Any = None) -> Path:
    """A real torch.save checkpoint (of ``obj``) whose data.pkl is replaced by ``data``."""
    good = _saved(tmp_path, {"x": torch.ones(2)} if obj is None else obj)
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(path, "w") as out:
        for info in src.infolist():
            body = data if info.filename.endswith("/data.pkl") else src.read(info)
            out.writestr(info.filename, body)
    return path


@pytest.mark.parametrize(
    "payload, named",
    [
        (lambda marker: _Evil(os.system, f"touch {marker}"), "system"),
        (lambda marker: _Evil(eval, f"open({str(marker)!r}, 'w')"), r"\.eval'"),
        (lambda marker: {"w": _Evil(exec, f"open({str(marker)!r}, 'w')")}, r"\.exec'"),
        (lambda marker: collections.deque([1]), "collections.deque"),
    ],
    ids=["os.system", "eval", "nested-exec", "not-allowed-class"],
)
@pytest.mark.parametrize("weights_only", [True, False])
def test_globals_outside_the_allow_list_are_refused_unrun(
    tmp_path: Path, payload: Callable, named: str, weights_only: bool
) -> None:
    marker = tmp_path / "ran"
    path = _with_pickle(tmp_path, pickle.dumps(payload(marker), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=named) as info:
        tw.load(path, weights_only=weights_only)
    assert "state_dict" in str(info.value) and "weights_only=False" in str(info.value)
    assert not marker.exists()


@pytest.mark.parametrize(
    "data, match",
    [
        (b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00trueR.", "posix.system"),
        # an allowed constructor given a callable from nowhere: REDUCE calls only constructors
        (b"\x80\x02ctorch\nfloat32\n)R.", "not an allowed constructor"),
        (b"\x80\x02ctorch\nSize\n]\x85R.", "torch.Size"),
        (b"\x80\x02}q\x00X\x01\x00\x00\x00a", "truncated"),
        (b"\x80\x02h\x05.", "memo entry 5"),
        (b"\x80\x02N)\x81.", "NEWOBJ"),
        (b"\x80\x02\xff.", "opcode"),
        (b"\x80\x02]}X\x01\x00\x00\x00aK\x01sb.", "BUILD"),
    ],
    ids=["posix.system", "reduce-non-constructor", "bad-size", "truncated", "memo", "newobj",
         "unknown-opcode", "build"],
)  # fmt: skip
def test_malformed_pickles_are_unpickling_errors(tmp_path: Path, data: bytes, match: str) -> None:
    path = _with_pickle(tmp_path, data)
    with pytest.raises(pickle.UnpicklingError, match=match):
        tw.load(path)


def _rewritten(tmp_path: Path, change: Callable[[str, bytes], Any]) -> Path:
    good = _saved(tmp_path, {"x": torch.arange(4.0)})
    path = tmp_path / "changed.pt"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(path, "w") as out:
        for info in src.infolist():
            body = change(info.filename, src.read(info))
            if body is not None:
                out.writestr(info.filename, body)
    return path


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda name, body: None if name.endswith("/data/0") else body, "lacks the record"),
        (lambda name, body: body[:-4] if name.endswith("/data/0") else body, "12 bytes"),
        (lambda name, body: b"middle" if name.endswith("/byteorder") else body, "byteorder"),
        (lambda name, body: None if name.endswith("/data.pkl") else body, "data.pkl"),
    ],
    ids=["missing-storage", "size-mismatch", "bad-byteorder", "no-data.pkl"],
)
def test_damaged_archives_are_errors(tmp_path: Path, change: Callable, match: str) -> None:
    with pytest.raises(tw.SafetensorsError, match=match):
        tw.load(_rewritten(tmp_path, change))


def test_truncated_and_flipped_files_are_runtime_errors(tmp_path: Path) -> None:
    path = _saved(tmp_path, {"x": torch.arange(1000.0)})
    blob = path.read_bytes()
    with pytest.raises(RuntimeError, match="zip archive"):
        tw.load(io.BytesIO(blob[: len(blob) // 2]))
    at = blob.index(np.arange(1000.0, dtype="<f4").tobytes()) + 100
    flipped = blob[:at] + bytes([blob[at] ^ 0xFF]) + blob[at + 1 :]
    with pytest.raises(RuntimeError, match="CRC-32"):
        tw.load(io.BytesIO(flipped))


def test_legacy_torch_files_are_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, {"x": torch.ones(2)}, _use_new_zipfile_serialization=False)
    with pytest.raises(tw.SafetensorsError, match="legacy format"):
        tw.load(path)


def test_views_beyond_their_storage_are_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, torch.arange(4.0))
    with zipfile.ZipFile(path) as archive:
        real = archive.read("checkpoint/data.pkl")
    # torch's pickle holds the size (4,) as "K\x04\x85": make it (9,)
    edited = real.replace(b"K\x04\x85", b"K\x09\x85", 1)
    assert edited != real
    with pytest.raises(tw.SafetensorsError, match="reaches element"):
        tw.load(_with_pickle(tmp_path, edited, torch.arange(4.0)))


def _relocated(tmp_path: Path, location: bytes) -> Path:
    """A checkpoint whose storages say they were saved on ``location`` (a CUDA machine's)."""
    obj = {"x": torch.arange(3.0), "y": torch.ones(2, dtype=torch.int64)}
    path = _saved(tmp_path, obj)
    with zipfile.ZipFile(path) as archive:
        real = archive.read("checkpoint/data.pkl")
    cpu = b"X\x03\x00\x00\x00cpu"
    assert cpu in real
    edited = real.replace(cpu, b"X" + len(location).to_bytes(4, "little") + location)
    return _with_pickle(tmp_path, edited, obj)


def test_a_cuda_checkpoint_needs_map_location_without_cuda(tmp_path: Path) -> None:
    path = _relocated(tmp_path, b"cuda:0")
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(path, weights_only=True)
    with pytest.raises(RuntimeError, match="CUDA"):
        tw.load(path)
    expected = torch.load(path, weights_only=True, map_location="cpu")
    locations: list[str] = []
    for where in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: locations.append(loc) or s):
        got = tw.load(path, map_location=where)
        for key in expected:
            _same(got[key], expected[key])
    assert locations == ["cuda:0", "cuda:0"]


def test_big_endian_storages(tmp_path: Path) -> None:
    values = {"f": torch.linspace(-3, 5, 7, dtype=torch.float64), "i": torch.arange(-3, 4)}
    path = _saved(tmp_path, values)
    swapped = tmp_path / "big.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(swapped, "w") as out:
        for info in src.infolist():
            body = src.read(info)
            if info.filename.endswith("/byteorder"):
                body = b"big"
            elif "/data/" in info.filename:  # both are 8-byte elements
                body = np.frombuffer(body, "<u8").astype(">u8").tobytes()
            out.writestr(info.filename, body)
    got = tw.load(swapped)
    for key, value in values.items():
        _same(got[key], value)


def test_compressed_storage_records_are_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, {"x": torch.zeros(64)})
    packed = tmp_path / "packed.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info))
    with pytest.raises(tw.SafetensorsError, match="compressed"):
        tw.load(packed)


@pytest.mark.parametrize("depth, loads", [(150, True), (300, False)])
def test_deeply_nested_containers(tmp_path: Path, depth: int, loads: bool) -> None:
    nested: Any = [torch.ones(1)]
    for _ in range(depth):
        nested = [nested]
    path = _saved(tmp_path, nested)
    if not loads:
        with pytest.raises(tw.SafetensorsError, match="nests containers"):
            tw.load(path)
        return
    got = tw.load(path)
    for _ in range(depth):
        got = got[0]
    _same(got[0], torch.ones(1))


def test_an_unknown_saved_location_needs_map_location(tmp_path: Path) -> None:
    path = _relocated(tmp_path, b"xla:0")
    with pytest.raises(tw.SafetensorsError, match="'xla:0'.*map_location"):
        tw.load(path)
    _same(tw.load(path, map_location="cpu")["x"], torch.arange(3.0))


def test_mutated_pickles_raise_only_the_documented_errors(tmp_path: Path) -> None:
    """A seeded sweep: random byte edits of a real data.pkl load or raise
    UnpicklingError / SafetensorsError, never anything else."""
    x = torch.arange(12.0).reshape(3, 4)
    obj = {"x": x, "t": x.t(), "p": torch.nn.Parameter(torch.ones(2)), "i": torch.tensor(3),
           "od": collections.OrderedDict(a=[1, 2.5, (3, "s")])}  # fmt: skip
    path = _saved(tmp_path, obj)
    with zipfile.ZipFile(path) as archive:
        records = {info.filename: archive.read(info) for info in archive.infolist()}
    rng = np.random.default_rng(0)
    outcomes = collections.Counter()
    for _ in range(int(os.environ.get("TW_TORCH_CHECKPOINT_SWEEP", "150"))):
        data = bytearray(records["checkpoint/data.pkl"])
        for _ in range(rng.integers(1, 4)):
            data[rng.integers(len(data))] = rng.integers(256)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for name, body in records.items():
                archive.writestr(name, bytes(data) if name.endswith("data.pkl") else body)
        try:
            tw.load(io.BytesIO(out.getvalue()))
            outcomes["loaded"] += 1
        except (pickle.UnpicklingError, tw.SafetensorsError) as e:
            outcomes[type(e).__name__] += 1
    assert outcomes["UnpicklingError"] > 0


@pytest.mark.parametrize(
    "obj",
    [
        lambda: torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()),
        lambda: {"f": frozenset({1}), "d": collections.deque([2]), "w": torch.ones(2)},
        lambda: torch.nn.Linear(2, 3).state_dict(),
    ],
    ids=["whole-module", "refused-containers", "state-dict"],
)
def test_unsafe_globals_listed_as_torch_lists_them(tmp_path: Path, obj: Callable) -> None:
    path = _saved(tmp_path, obj())
    # (torch lists them in no fixed order)
    expected = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    assert sorted(tw.serialization.get_unsafe_globals_in_checkpoint(path)) == expected
    with open(path, "rb") as f:
        assert sorted(tw.serialization.get_unsafe_globals_in_checkpoint(f)) == expected


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint64, torch.float8_e4m3fn], ids=str)
def test_dtypes_tensorweaver_lacks_are_named(tmp_path: Path, dtype: torch.dtype) -> None:
    path = _saved(tmp_path, {"x": torch.zeros(2, dtype=dtype)})
    name = str(dtype)
    with pytest.raises(pickle.UnpicklingError, match=rf"dtype {name}, which TensorWeaver"):
        tw.load(path)
