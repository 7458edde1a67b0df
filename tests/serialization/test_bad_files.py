"""Every way a file can be bad raises tw.SafetensorsError naming the file and the fault: faults
of the format (found by the safetensors library, whose words are passed on), and TensorWeaver's
own bounds, dtypes and structure. Files are assembled here from the spec with struct and json."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy
import tensorweaver as tw
import torch
from safetensors_files import assemble, sample, write_raw
from tensorweaver import serialization as ser
from tensorweaver.serialization import limits, reader


def valid_header() -> dict:
    return {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}


def check_error(path: Path, *fragments: str, by_library: bool = False) -> None:
    """``tw.load(path)`` raises the one error type, naming the file and each fragment."""
    with pytest.raises(ser.SafetensorsError) as info:
        ser.load(path)
    error, message = info.value, str(info.value)
    assert isinstance(error, ValueError) and isinstance(error, safetensors.SafetensorError)
    assert str(path) in message
    if by_library:  # the library's own description of the fault is passed on
        assert isinstance(error.__cause__, safetensors.SafetensorError)
        assert "not a valid safetensors file" in message and str(error.__cause__) in message
    for fragment in fragments:
        assert fragment in message, message


# --- the format ------------------------------------------------------------------------------


def test_empty_and_short_files_are_truncated(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    check_error(tmp_path / "empty", "truncated", "0 bytes")
    (tmp_path / "short").write_bytes(b"\x10\x00\x00")
    check_error(tmp_path / "short", "truncated", "3 bytes")


def test_header_length_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "h"
    path.write_bytes(struct.pack("<Q", 10_000) + b'{"a":1}')
    check_error(path, "header length 10000", "past the end")


def test_pickle_checkpoint_gets_a_hint(tmp_path: Path) -> None:
    # torch.save's zip format loads (test_torch_checkpoints_session22.py); its legacy bare
    # pickle is refused
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    check_error(path, "pickle", "legacy format")


def test_truncated_data(tmp_path: Path) -> None:
    path = assemble(tmp_path / "t.safetensors", {"w": sample("F64", (4, 4))})
    path.write_bytes(path.read_bytes()[:-9])
    check_error(path, by_library=True)


def test_corrupted_header_json(tmp_path: Path) -> None:
    check_error(write_raw(tmp_path / "a", None, raw=b'{"w": {"dtype": "F32",'), by_library=True)
    check_error(write_raw(tmp_path / "b", None, raw=b"\xff\xfe{}"), "UTF-8", by_library=True)
    check_error(write_raw(tmp_path / "c", [1, 2]), by_library=True)


@pytest.mark.parametrize(
    "change",
    [
        {"dtype": 3},
        {"shape": [2, -2]},
        {"shape": [2, True]},
        {"shape": [2, 3]},
        {"data_offsets": [0]},
        {"data_offsets": [8, 4]},
        {"data_offsets": [0, 64]},
    ],
    ids=str,
)
def test_bad_entries(tmp_path: Path, change: dict) -> None:
    header = valid_header()
    header["w"].update(change)
    check_error(write_raw(tmp_path / "f", header, bytes(16)), by_library=True)


def test_overlap_gap_trailing_bytes_and_duplicate_names(tmp_path: Path) -> None:
    entry = {"dtype": "I32", "shape": [2]}
    overlap = {"a": {**entry, "data_offsets": [0, 8]}, "b": {**entry, "data_offsets": [4, 12]}}
    check_error(write_raw(tmp_path / "o", overlap, bytes(12)), by_library=True)
    gap = {"a": {**entry, "data_offsets": [0, 8]}, "b": {**entry, "data_offsets": [12, 20]}}
    check_error(write_raw(tmp_path / "g", gap, bytes(20)), by_library=True)
    check_error(write_raw(tmp_path / "t", valid_header(), bytes(20)), by_library=True)
    # json.loads would keep the last of two equal names; the library refuses the file.
    twice = b'{"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, '
    twice += b'"w": {"dtype": "F32", "shape": [0], "data_offsets": [16, 16]}}'
    check_error(write_raw(tmp_path / "d", None, bytes(16), raw=twice), by_library=True)


@pytest.mark.parametrize("metadata", [{"k": 1}, {"k": None}, [], "", 0, False], ids=repr)
def test_metadata_of_the_wrong_json_type(tmp_path: Path, metadata: object) -> None:
    header = {"__metadata__": metadata, **valid_header()}
    check_error(write_raw(tmp_path / "m", header, bytes(16)), by_library=True)


# --- TensorWeaver's bounds and dtypes -------------------------------------------------------------


@pytest.mark.parametrize("rank", [33, 70])
def test_too_many_dimensions(tmp_path: Path, rank: int) -> None:
    header = {"w": {"dtype": "F32", "shape": [1] * rank, "data_offsets": [0, 4]}}
    check_error(write_raw(tmp_path / "f", header, bytes(4)), "'w'", f"{rank} dimensions")


@pytest.mark.parametrize("shape", [[0, 2**63], [0, 2**62, 4], [2**61, 0, 8]], ids=str)
def test_empty_tensor_with_unindexable_dimensions(tmp_path: Path, shape: list) -> None:
    header = {"w": {"dtype": "F64", "shape": shape, "data_offsets": [0, 0]}}
    check_error(write_raw(tmp_path / "f", header), "'w'", str(shape), "64-bit index")


@pytest.mark.parametrize(("code", "nbytes"), [("U16", 2), ("C64", 8), ("F8_E4M3", 1)])
def test_dtype_tensorweaver_lacks(tmp_path: Path, code: str, nbytes: int) -> None:
    # Valid safetensors dtypes, each one element here, that TensorWeaver has no dtype for.
    header = {"w": {"dtype": code, "shape": [1], "data_offsets": [0, nbytes]}}
    check_error(write_raw(tmp_path / "f", header, bytes(nbytes)), "'w'", code, "BF16")


def test_a_million_entry_header_is_refused_at_once(tmp_path: Path) -> None:
    # 58 MB of zero-size entries: parsing it took 14 s and 915 MB before the bound.
    entries = b",".join(
        b'"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i for i in range(1_000_000)
    )
    path = write_raw(tmp_path / "f", None, raw=b"{" + entries + b"}")
    check_error(path, f"more than the {limits.MAX_HEADER_BYTES}")


def test_header_just_over_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "f"
    n = limits.MAX_HEADER_BYTES + 1
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n))
        f.truncate(8 + n)  # sparse: the length alone decides
    check_error(path, f"header takes {n} bytes", "limits")


def test_tensor_count_bound(tmp_path: Path) -> None:
    count = limits.MAX_TENSORS + 1
    entries = b",".join(
        b'"t%d":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}' % i for i in range(count)
    )
    path = write_raw(tmp_path / "f", None, raw=b"{" + entries + b"}")
    check_error(path, f"holds {count} tensors", f"more than the {limits.MAX_TENSORS}")


# --- the structure --------------------------------------------------------------------------------


def legacy_file(path: Path, structure: object, **arrays: np.ndarray) -> Path:
    """A file as TensorWeaver 0.3 wrote it: the structure's JSON alone, no checksum."""
    metadata = {"tensorweaver.structure": json.dumps(structure)}
    safetensors.numpy.save_file(arrays or {"w": np.zeros(2, np.float32)}, path, metadata=metadata)
    return path


@pytest.mark.parametrize(
    ("structure", "fragments"),
    [
        ({"dict": [["x", {"tensor": "v"}], ["w", {"tensor": "w"}]]}, ("'v'", "does not hold")),
        ({"frozenset": [{"tensor": "w"}]}, ("unknown structure node 'frozenset'",)),
        ({"dict": "w"}, ("'dict' must hold a JSON list",)),
        ({"list": [{"tensor": "w"}], "tuple": []}, ("exactly one key",)),
        ([{"tensor": "w"}], ("bare JSON list",)),
        ({"dict": [["w"]]}, ("[key, value] pair",)),
        ({"dict": [[["k"], {"tensor": "w"}]]}, ("must be a JSON scalar",)),
    ],
    ids=str,
)
def test_bad_structure(tmp_path: Path, structure: object, fragments: tuple) -> None:
    check_error(legacy_file(tmp_path / "f", structure), "bad structure", *fragments)


def test_tensors_the_structure_never_mentions(tmp_path: Path) -> None:
    arrays = {"w": np.float32([1, 2]), "x": np.int8([3]), "y": np.int8([4])}
    path = legacy_file(tmp_path / "f", {"dict": [["w", {"tensor": "w"}]]}, **arrays)
    check_error(path, "2 tensor(s) the structure never refers to", "'x'", "'y'")
    path = legacy_file(tmp_path / "g", 5, **arrays)  # a bare scalar, its tensors dropped
    check_error(path, "3 tensor(s)")


def test_structure_that_is_not_json(tmp_path: Path) -> None:
    metadata = {"tensorweaver.structure": "{not json"}
    safetensors.numpy.save_file({"w": np.zeros(1)}, tmp_path / "f", metadata=metadata)
    check_error(tmp_path / "f", "'tensorweaver.structure'", "not valid JSON")


# --- a file replaced while it is read -------------------------------------------------------------


def test_file_replaced_while_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, other = tmp_path / "ckpt", tmp_path / "other"
    ser.save({"w": tw.ones(4)}, path)
    ser.save({"w": tw.zeros(2, 2, dtype=tw.float64)}, other)
    real_open = safetensors.safe_open

    def replaced_first(name: str, *args: object, **kwargs: object) -> object:
        os.replace(other, path)  # a concurrent save lands between our open and the library's
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(reader.safetensors, "safe_open", replaced_first)
    check_error(path, "changed while it was being read")
