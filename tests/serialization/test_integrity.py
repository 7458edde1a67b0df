"""Checksums: a file damaged after tw.save raises instead of loading other values.

References: the digests are recomputed here with hashlib from the format's definition (in
tensorweaver/serialization/document.py), and damage is done to the file's bytes directly.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
from safetensors_files import header_of, write_raw
from tensorweaver import serialization as ser


def training_state() -> dict:
    """A model's and an Adam optimizer's state: int keys, tuples, several dtypes."""
    gen = np.random.default_rng(0)
    params = {
        "0.weight": gen.standard_normal((8, 6)).astype(np.float32),
        "1.weight": gen.standard_normal((6, 4)),
        "1.bias": gen.standard_normal(4).astype(np.float16),
    }
    state = {
        i: {
            "step": 7,
            "exp_avg": tw.tensor(gen.standard_normal(p.shape).astype(p.dtype)),
            "exp_avg_sq": tw.tensor(gen.random(p.shape).astype(p.dtype)),
        }
        for i, p in enumerate(params.values())
    }
    groups = [{"lr": 1e-3, "betas": (0.9, 0.999), "amsgrad": False, "params": [0, 1, 2]}]
    return {
        "model": {name: tw.tensor(p) for name, p in params.items()},
        "optimizer": {"state": state, "param_groups": groups},
        "seen": tw.tensor(gen.integers(0, 100, 5)),
        "mask": tw.tensor(gen.random(7) < 0.5),
        "epoch": 3,
    }


def same(a: object, b: object) -> bool:
    """Equal structure, types, dtypes, shapes and bits."""
    if isinstance(a, tw.Tensor):
        return (
            isinstance(b, tw.Tensor)
            and (a.dtype, a.shape) == (b.dtype, b.shape)
            and np.asarray(a.numpy()).tobytes() == np.asarray(b.numpy()).tobytes()
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def flipped(blob: bytes, bit: int) -> bytes:
    out = bytearray(blob)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def test_single_bit_flips_never_load_other_values(tmp_path: Path) -> None:
    # Before checksums, 55% of such flips loaded other values silently (all of those in the
    # data, a tenth of those in the header).
    state, path, bad = training_state(), tmp_path / "ckpt", tmp_path / "bad"
    ser.save(state, path)
    blob = path.read_bytes()
    header_bits = (8 + header_of(path)[0]) * 8  # the length field and the JSON
    rng = np.random.default_rng(1)
    outcomes, silent = Counter(), []
    for i in range(300):
        region = ("header", "data")[i % 2]
        bit = int(
            rng.integers(0, header_bits)
            if region == "header"
            else rng.integers(header_bits, len(blob) * 8)
        )
        bad.write_bytes(flipped(blob, bit))
        try:
            loaded = ser.load(bad)
        except ser.SafetensorsError:
            outcomes[region, "raised"] += 1
            continue
        if same(loaded, state):
            outcomes[region, "loaded the same values"] += 1
        else:
            silent.append(bit)
    assert not silent, f"bits {silent} loaded other values silently; {outcomes}"
    assert outcomes["data", "raised"] == 150, outcomes


def test_structure_flip_pointing_at_another_tensor_raises(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    ser.save(training_state(), path)
    blob = path.read_bytes()
    # In the stored structure, one bit ('1' 0x31 → '0' 0x30) points the optimizer's state 1
    # at state 0's exp_avg: a valid name, so without a checksum it loaded silently.
    reference = b'{\\"tensor\\":\\"optimizer.state.1.exp_avg\\"}'
    at = blob.index(reference) + reference.index(b"state.1") + len(b"state.")
    (tmp_path / "bad").write_bytes(flipped(blob, at * 8))
    with pytest.raises(ser.SafetensorsError, match=r"'.*bad' is damaged: its header .* checksum"):
        ser.load(tmp_path / "bad")


def test_data_flip_raises_naming_the_data(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    ser.save(training_state(), path)
    blob = path.read_bytes()
    (tmp_path / "bad").write_bytes(flipped(blob, len(blob) * 8 - 3))
    with pytest.raises(ser.SafetensorsError, match=r"'.*bad' is damaged: its tensor data"):
        ser.load(tmp_path / "bad")


def test_a_flip_in_the_metadata_key_does_not_make_a_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    ser.save(training_state(), path)
    blob = path.read_bytes()
    at = blob.index(b'"tensorweaver":') + 2
    (tmp_path / "bad").write_bytes(flipped(blob, at * 8 + 5))  # "tensorweaver" → "tEnsorweaver"
    with pytest.raises(ser.SafetensorsError, match=r"'.*bad' is damaged: its header"):
        ser.load(tmp_path / "bad")


def test_digests_follow_the_documented_definition(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    ser.save(training_state(), path)
    n, header = header_of(path)
    data = path.read_bytes()[8 + n :]
    entry = json.loads(header.pop("__metadata__")["tensorweaver"])
    assert entry["format"] == "tensorweaver/2"
    names = sorted(header)
    table = [[name, header[name]["dtype"], header[name]["shape"]] for name in names]
    described = json.dumps(["tensorweaver", entry["format"], entry["structure"], table])
    compact = json.dumps(json.loads(described), separators=(",", ":"))
    assert entry["sha256"]["header"] == hashlib.sha256(compact.encode("ascii")).hexdigest()
    spans = [slice(*header[name]["data_offsets"]) for name in names]
    assert entry["sha256"]["data"] == hashlib.sha256(b"".join(data[s] for s in spans)).hexdigest()


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (lambda e: e.update(format="tensorweaver/4"), ("format 'tensorweaver/4'", "upgrade")),
        (lambda e: e.update(format="tensorweaver/4", more=1), ("format 'tensorweaver/4'",)),
        (lambda e: e.update(format=2), ("format 2",)),
        (lambda e: e["sha256"].update(data="ab" * 31), ("checksums", "malformed")),
        (lambda e: e["sha256"].update(header="G" * 64), ("checksums", "malformed")),
        (lambda e: e.pop("sha256"), ("'tensorweaver' metadata entry is malformed",)),
        (lambda e: e.update(structure={"tensor": "model.1.bias"}), ("header", "checksum")),
    ],
    ids=[
        "newer-format",
        "newer-fields",
        "format-type",
        "short-digest",
        "not-hex",
        "no-checksums",
        "edited",
    ],
)
def test_edited_entries_raise(tmp_path: Path, edit: object, fragments: tuple) -> None:
    path = tmp_path / "ckpt"
    ser.save(training_state(), path)
    n, header = header_of(path)
    entry = json.loads(header["__metadata__"]["tensorweaver"])
    edit(entry)
    header["__metadata__"]["tensorweaver"] = json.dumps(entry)
    write_raw(tmp_path / "bad", header, path.read_bytes()[8 + n :])
    with pytest.raises(ser.SafetensorsError) as info:
        ser.load(tmp_path / "bad")
    assert str(tmp_path / "bad") in str(info.value)
    for fragment in fragments:
        assert fragment in str(info.value)
