"""The safetensors format itself: bfloat16 bits, the byte layout tw.save writes (parsed here by
hand and compared with PyTorch's own bytes), foreign files, and every way a file can be bad.

References are independent of the module under test: PyTorch's bfloat16 conversion and
``Tensor.numpy()`` bytes, and files assembled here with ``struct`` and ``json`` from the spec.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import serialization as ser

TORCH_DTYPES = {
    "BOOL": torch.bool,
    "U8": torch.uint8,
    "I8": torch.int8,
    "I16": torch.int16,
    "I32": torch.int32,
    "I64": torch.int64,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F32": torch.float32,
    "F64": torch.float64,
}
TW_DTYPES = {
    "BOOL": tw.bool,
    "U8": tw.uint8,
    "I8": tw.int8,
    "I16": tw.int16,
    "I32": tw.int32,
    "I64": tw.int64,
    "F16": tw.float16,
    "BF16": tw.bfloat16,
    "F32": tw.float32,
    "F64": tw.float64,
}


# Where tw tensors are made from PyTorch references: the backend that has every dtype.
ON = "torch:cpu"


def code_of(t: torch.Tensor) -> str:
    return next(c for c, d in TORCH_DTYPES.items() if d == t.dtype)


def from_torch(t: torch.Tensor) -> object:
    """A tw tensor with ``t``'s dtype and values (bfloat16 travels as its float32 values)."""
    host = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return tw.tensor(host, dtype=TW_DTYPES[code_of(t)], device=ON)


def torch_bytes(t: torch.Tensor) -> bytes:
    """PyTorch's little-endian bytes of ``t`` (bfloat16 through an int16 view)."""
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    assert sys.byteorder == "little", "these references assume a little-endian host"
    return t.contiguous().numpy().tobytes()


def sample(code: str, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    if code == "BOOL":
        return torch.from_numpy(rng.random(shape) < 0.5)
    if code in ("F16", "BF16", "F32", "F64"):
        return torch.from_numpy(rng.standard_normal(shape) * 100).to(TORCH_DTYPES[code])
    info = torch.iinfo(TORCH_DTYPES[code])
    return torch.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True)).to(
        TORCH_DTYPES[code]
    )


def write_raw(path: Path, header: object, data: bytes = b"", *, raw: bytes | None = None) -> Path:
    """A file from the spec: 8-byte little-endian length, the JSON header, the data."""
    head = raw if raw is not None else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + data)
    return path


def assemble(path: Path, tensors: dict[str, torch.Tensor], metadata: dict | None = None) -> Path:
    """A valid file of ``tensors`` in the given order, written without the module under test."""
    header: dict = {"__metadata__": metadata} if metadata is not None else {}
    data = b""
    for name, t in tensors.items():
        b = torch_bytes(t)
        header[name] = {"dtype": code_of(t), "shape": list(t.shape), "data_offsets": [len(data)]}
        header[name]["data_offsets"].append(len(data) + len(b))
        data += b
    return write_raw(path, header, data)


# --- bfloat16 --------------------------------------------------------------------------


def test_bfloat16_rounding_matches_torch() -> None:
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    # Exact ties (low half 0x8000) with even and odd kept bits, and the range edges.
    ties = (rng.integers(0, 2**16, 1000, dtype=np.uint32) << 16) | np.uint32(0x8000)
    edges = np.array([0x7F7FFFFF, 0x7F7F8000, 0xFF7FFFFF, 0x00000001, 0x80000000], np.uint32)
    x = np.concatenate([bits, ties, edges]).view(np.float32)
    x = np.concatenate([x, np.float32([np.inf, -np.inf, 0.0, -0.0, 1e-45, 3.4e38])])
    ours = ser.bfloat16_bits(x)
    ref = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(ours[finite], ref[finite])
    assert np.isnan(ser.float32_from_bfloat16_bits(ours[~finite])).all()


def test_bfloat16_to_float32_matches_torch_for_every_pattern() -> None:
    patterns = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    ours = ser.float32_from_bfloat16_bits(patterns)
    ref = torch.from_numpy(patterns.view(np.int16)).view(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(ours.view(np.uint32), ref.view(np.uint32))


# --- what tw.save writes -----------------------------------------------------------------


def test_written_layout_follows_the_spec_byte_for_byte(tmp_path: Path) -> None:
    refs = {f"t.{code}": sample(code, (3, 5), seed=i) for i, code in enumerate(TORCH_DTYPES)}
    refs["empty"] = torch.zeros((0, 4), dtype=torch.float32)
    refs["scalar"] = torch.tensor(7, dtype=torch.int64)
    state = {name: from_torch(t) for name, t in refs.items()}
    path = tmp_path / "m.safetensors"
    ser.save(state, path)

    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    assert (8 + n) % 8 == 0, "the data buffer starts 8-byte aligned"
    header = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    metadata = header.pop("__metadata__")
    assert all(isinstance(v, str) for v in metadata.values())
    assert set(header) == set(refs)
    spans = sorted(tuple(e["data_offsets"]) for e in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "contiguous, no overlap"
    for name, t in refs.items():
        entry = header[name]
        assert TORCH_DTYPES[entry["dtype"]] == t.dtype
        assert entry["shape"] == list(t.shape)
        begin, end = entry["data_offsets"]
        assert data[begin:end] == torch_bytes(t), name
        if end > begin:
            assert begin % t.element_size() == 0, f"{name} is aligned to its item size"


def test_foreign_file_loads_as_flat_dict_in_header_order(tmp_path: Path) -> None:
    refs = {"z.weight": sample("F32", (4, 3)), "a.bias": sample("BF16", (3,), seed=2)}
    refs["mask"] = sample("BOOL", (2, 2), seed=3)
    path = assemble(tmp_path / "foreign.safetensors", refs, metadata={"format": "pt"})
    loaded = ser.load(path, device=ON)
    assert list(loaded) == list(refs)
    for name, t in refs.items():
        got = loaded[name]
        assert got.dtype is TW_DTYPES[code_of(t)]
        ref = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        np.testing.assert_array_equal(got.numpy(), ref)


def test_files_are_read_by_the_safetensors_package(tmp_path: Path) -> None:
    safetensors_torch = pytest.importorskip(
        "safetensors.torch", reason="the safetensors package is not installed"
    )
    refs = {f"t.{code}": sample(code, (2, 3), seed=i) for i, code in enumerate(TORCH_DTYPES)}
    state = {name: from_torch(t) for name, t in refs.items()}
    path = tmp_path / "m.safetensors"
    ser.save(state, path)
    loaded = safetensors_torch.load_file(str(path))
    for name, t in refs.items():
        assert loaded[name].dtype == t.dtype
        assert torch.equal(loaded[name], t), name


# --- bad files ------------------------------------------------------------------------------


def valid_header() -> dict:
    return {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}


def check_error(path: Path, *fragments: str) -> None:
    with pytest.raises(ser.SafetensorsError) as info:
        ser.load(path)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message


def test_empty_and_short_files_are_truncated(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    check_error(tmp_path / "empty", "truncated", "0 bytes")
    (tmp_path / "short").write_bytes(b"\x10\x00\x00")
    check_error(tmp_path / "short", "truncated", "3 bytes")


def test_truncated_data_is_reported(tmp_path: Path) -> None:
    path = assemble(tmp_path / "t.safetensors", {"w": sample("F64", (4, 4))})
    blob = path.read_bytes()
    path.write_bytes(blob[:-9])
    check_error(path, "'w'", "outside", "truncated")


def test_header_length_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "h"
    path.write_bytes(struct.pack("<Q", 10_000) + b'{"a":1}')
    check_error(path, "header length 10000", "past the end")


def test_pickle_checkpoint_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    check_error(path, "pickle", "safetensors")


def test_corrupted_header_json(tmp_path: Path) -> None:
    check_error(write_raw(tmp_path / "a", None, raw=b'{"w": {"dtype": "F32",'), "not valid")
    check_error(write_raw(tmp_path / "b", None, raw=b"\xff\xfe{}"), "UTF-8")
    check_error(write_raw(tmp_path / "c", [1, 2]), "not an object")


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"dtype": "F8_E4M3"}, ("unknown or unsupported dtype 'F8_E4M3'",)),
        ({"dtype": 3}, ("unknown or unsupported dtype",)),
        ({"shape": [2, -2]}, ("shape [2, -2]",)),
        ({"shape": [2, True]}, ("shape",)),
        ({"shape": [2, 3]}, ("span 16 bytes", "needs 24")),
        ({"data_offsets": [0]}, ("data_offsets [0]",)),
        ({"data_offsets": [8, 4]}, ("outside",)),
        ({"data_offsets": [0, 64]}, ("outside",)),
        ({"extra": 1}, ("dtype, shape and data_offsets",)),
    ],
)
def test_bad_entries(tmp_path: Path, change: dict, fragments: tuple[str, ...]) -> None:
    header = valid_header()
    header["w"].update(change)
    check_error(write_raw(tmp_path / "f", header, bytes(16)), "'w'", *fragments)


def test_overlap_gap_and_trailing_bytes(tmp_path: Path) -> None:
    entry = {"dtype": "I32", "shape": [2]}
    overlap = {"a": {**entry, "data_offsets": [0, 8]}, "b": {**entry, "data_offsets": [4, 12]}}
    check_error(write_raw(tmp_path / "o", overlap, bytes(12)), "'b'", "overlaps")
    gap = {"a": {**entry, "data_offsets": [0, 8]}, "b": {**entry, "data_offsets": [12, 20]}}
    check_error(write_raw(tmp_path / "g", gap, bytes(20)), "'b'", "gap")
    check_error(write_raw(tmp_path / "t", valid_header(), bytes(20)), "cover 16 bytes", "20")


def test_bad_metadata_and_structure(tmp_path: Path) -> None:
    header = {"__metadata__": {"k": 1}, **valid_header()}
    check_error(write_raw(tmp_path / "m", header, bytes(16)), "__metadata__")
    header["__metadata__"] = {ser.STRUCTURE_KEY: "{not json"}
    check_error(write_raw(tmp_path / "s", header, bytes(16)), ser.STRUCTURE_KEY, "JSON")
    header["__metadata__"] = {ser.STRUCTURE_KEY: json.dumps({"dict": [["x", {"tensor": "v"}]]})}
    check_error(write_raw(tmp_path / "r", header, bytes(16)), "'v'", "does not hold")
    header["__metadata__"] = {ser.STRUCTURE_KEY: json.dumps({"set": [1]})}
    check_error(write_raw(tmp_path / "u", header, bytes(16)), "unknown structure node 'set'")


# --- loading runs no code ----------------------------------------------------------------------


def test_loader_imports_nothing_that_runs_code() -> None:
    import ast

    tree = ast.parse(Path(ser.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert not imported & {"pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle"}
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and hasattr(n.func, "id")}
    assert not calls & {"eval", "exec", "compile", "__import__"}


def test_load_never_unpickles(tmp_path: Path) -> None:
    # NumPy imports pickle itself, so the module's presence proves nothing: instead every way
    # into the unpickler raises, and an audit hook records any class an unpickler resolves.
    path = tmp_path / "state.safetensors"
    ser.save({"state": {0: {"step": 3, "m": tw.ones(2, 2)}}, "lr": 0.5}, path)
    code = f"""
import pickle, _pickle, sys
events = []
sys.addaudithook(lambda event, args: events.append(event) if event.startswith("pickle") else None)
def refuse(*args, **kwargs):
    raise AssertionError("the load path unpickled")
for module in (pickle, _pickle):
    module.load = module.loads = module.Unpickler = refuse
from tensorweaver import serialization
out = serialization.load({str(path)!r})
assert out["state"][0]["m"].numpy().sum() == 4 and out["lr"] == 0.5, out
assert not events, events
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
