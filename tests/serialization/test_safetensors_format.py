"""The safetensors format itself: bfloat16 bits, the byte layout tw.save writes (parsed here by
hand and compared with PyTorch's own bytes), and files exchanged with the safetensors library
and with TensorWeaver 0.3, both ways.

References are independent of the module under test: PyTorch's bfloat16 conversion and
``Tensor.numpy()`` bytes, files assembled here with ``struct`` and ``json`` from the spec, and
the safetensors library's own readers and writers.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import tensorweaver as tw
import torch
from safetensors_files import (
    ON,
    TORCH_DTYPES,
    TW_DTYPES,
    assemble,
    code_of,
    from_torch,
    header_of,
    sample,
    torch_bytes,
)
from tensorweaver import serialization as ser

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
    assert list(metadata) == ["tensorweaver"] and isinstance(metadata["tensorweaver"], str)
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


def test_same_state_gives_the_same_bytes(tmp_path: Path) -> None:
    # The library writes its metadata object from a hash map in a varying order: one entry
    # keeps checkpoints of one state byte-identical (comparable by their hashes).
    state = {"model": {"w": tw.randn(3, 2), "b": tw.zeros(2)}, "step": 4, "betas": (0.9, 0.99)}
    for i in range(5):
        ser.save(state, tmp_path / f"f{i}")
    blobs = {(tmp_path / f"f{i}").read_bytes() for i in range(5)}
    assert len(blobs) == 1


# --- files other tools wrote, and other tools reading ours -------------------------------------


def test_foreign_file_loads_as_flat_dict_in_file_order(tmp_path: Path) -> None:
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


def test_files_written_by_the_safetensors_library_load(tmp_path: Path) -> None:
    refs = {f"t.{code}": sample(code, (2, 3), seed=i) for i, code in enumerate(TORCH_DTYPES)}
    refs["empty"] = torch.zeros((0, 5), dtype=torch.float64)
    path = tmp_path / "lib.safetensors"
    safetensors.torch.save_file(refs, str(path), metadata={"format": "pt"})
    loaded = ser.load(path, device=ON)
    _, header = header_of(path)
    header.pop("__metadata__")
    in_file_order = sorted(header, key=lambda name: header[name]["data_offsets"])
    assert list(loaded) == in_file_order
    for name, t in refs.items():
        assert loaded[name].dtype is TW_DTYPES[code_of(t)] and loaded[name].shape == t.shape
        ref = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        np.testing.assert_array_equal(loaded[name].numpy(), ref)
    # And through the library's NumPy writer, onto the NumPy backend.
    arrays = {"w": np.arange(6, dtype=np.float64).reshape(2, 3), "n": np.int16([-3, 7])}
    safetensors.numpy.save_file(arrays, str(tmp_path / "np.safetensors"))
    loaded = ser.load(tmp_path / "np.safetensors", device="numpy")
    for name, a in arrays.items():
        assert loaded[name].numpy().dtype == a.dtype
        np.testing.assert_array_equal(loaded[name].numpy(), a)


def test_files_are_read_by_the_safetensors_library(tmp_path: Path) -> None:
    refs = {f"t.{code}": sample(code, (2, 3), seed=i) for i, code in enumerate(TORCH_DTYPES)}
    state = {name: from_torch(t) for name, t in refs.items()}
    path = tmp_path / "m.safetensors"
    ser.save(state, path)
    loaded = safetensors.torch.load_file(str(path))
    assert set(loaded) == set(refs)
    for name, t in refs.items():
        assert loaded[name].dtype == t.dtype
        assert torch.equal(loaded[name], t), name
    nested = {"opt": {"state": {0: {"m": tw.tensor([1.5, -2.0], dtype=tw.float64)}}}}
    ser.save(nested, path)
    with safetensors.safe_open(str(path), framework="numpy") as f:
        assert f.keys() == ["opt.state.0.m"]
        np.testing.assert_array_equal(f.get_tensor("opt.state.0.m"), [1.5, -2.0])
        assert list(f.metadata()) == ["tensorweaver"]


def test_tensorweaver_0_3_files_are_rebuilt(tmp_path: Path) -> None:
    # TensorWeaver 0.3 stored the structure alone, under "tensorweaver.structure": no checksum.
    structure = {
        "dict": [
            ["state", {"dict": [[0, {"dict": [["m", {"tensor": "state.0.m"}]]}]]}],
            ["lr", 0.5],
            ["pair", {"tuple": [{"tensor": "w"}, {"tensor": "state.0.m"}]}],
        ]
    }
    arrays = {"state.0.m": np.float32([1, 2]), "w": np.int64([[7]])}
    path = tmp_path / "old.safetensors"
    metadata = {"tensorweaver.structure": json.dumps(structure)}
    safetensors.numpy.save_file(arrays, str(path), metadata=metadata)
    loaded = ser.load(path, device="numpy")
    assert list(loaded) == ["state", "lr", "pair"] and loaded["lr"] == 0.5
    assert list(loaded["state"]) == [0] and isinstance(loaded["pair"], tuple)
    np.testing.assert_array_equal(loaded["state"][0]["m"].numpy(), [1, 2])
    np.testing.assert_array_equal(loaded["pair"][0].numpy(), [[7]])
    assert loaded["pair"][1] is loaded["state"][0]["m"]


# --- loading runs no code ----------------------------------------------------------------------


def test_loader_imports_nothing_that_runs_code() -> None:
    import ast

    sources = sorted(Path(ser.__file__).parent.glob("*.py"))
    assert len(sources) > 1, "the package's modules"
    for source in sources:
        tree = ast.parse(source.read_text())
        # PyTorch's exception type for a refused global is the one name taken from pickle.
        exception_only = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module == "pickle"
            and [a.name for a in node.names] == ["UnpicklingError"]
        ]
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in exception_only
            for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
        }
        assert not imported & {"pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle"}
        calls = {
            n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and hasattr(n.func, "id")
        }
        assert not calls & {"eval", "exec", "compile", "__import__"}, source.name


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
