"""tw.save / tw.load with file objects, as PyTorch accepts them: io.BytesIO, open binary files,
anything with write / read. A file object gets the same bytes a path gets, and loading from one
keeps every check a path gets (bounds, checksums, the library's validation)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn as nn
import torch
from safetensors_files import assemble, sample, write_raw
from tensorweaver import serialization as ser
from tensorweaver.serialization import reader


def optimizer_state() -> dict:
    model = nn.Linear(3, 2)
    opt = tw.optim.Adam(model.parameters(), lr=1e-3)
    model(tw.randn(4, 3)).sum().backward()
    opt.step()
    return opt.state_dict()


def every_dtype() -> dict:
    # bfloat16 only where the backend has it (PyTorch's).
    return {
        d.name: tw.tensor(np.arange(6).reshape(2, 3) % 2, dtype=d, device="torch:cpu")
        for d in (tw.bool, tw.uint8, tw.int8, tw.int16, tw.int32, tw.int64)
    } | {
        d.name: tw.randn(2, 3, dtype=d, device="torch:cpu")
        for d in (tw.float16, tw.bfloat16, tw.float32, tw.float64)
    }


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 2)).double()


# Every kind of object tw.save supports, made fresh for each test.
OBJECTS: dict[str, Callable[[], Any]] = {
    "tensor": lambda: tw.randn(3, 4, dtype=tw.float64),
    "every-dtype": every_dtype,
    "empty-tensors": lambda: {"e": tw.zeros(0, 3), "f": tw.zeros(2, 0, dtype=tw.int8)},
    "nested": lambda: {"a": [tw.ones(2), (1, 2.5, None, "s")], 3: {True: tw.zeros(1)}},
    "state-dict": lambda: mlp().state_dict(),
    "optimizer-state": optimizer_state,
    "module": mlp,
    "checkpoint": lambda: {"model": mlp(), "optimizer": optimizer_state(), "epoch": 3},
    "dtypes-and-functions": lambda: {"dtype": tw.float16, "act": tw.nn.functional.gelu},
}


def same(a: Any, b: Any) -> None:
    """Equal types, structure and bits; modules by class, flags and state."""
    assert type(a) is type(b) or all(isinstance(x, (tw.Tensor, dict)) for x in (a, b))
    if isinstance(a, tw.Tensor):
        assert (a.dtype, a.shape, a.requires_grad) == (b.dtype, b.shape, b.requires_grad)
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()
    elif isinstance(a, nn.Module):
        assert [type(m) for m in a.modules()] == [type(m) for m in b.modules()]
        assert [m.training for m in a.modules()] == [m.training for m in b.modules()]
        same(dict(a.state_dict()), dict(b.state_dict()))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a is b or a == b


@pytest.mark.parametrize("kind", OBJECTS)
def test_every_kind_round_trips_through_file_objects(tmp_path: Path, kind: str) -> None:
    obj = OBJECTS[kind]()
    path = tmp_path / "ckpt"
    ser.save(obj, path)
    buffer = io.BytesIO()
    ser.save(obj, buffer)
    with open(tmp_path / "opened", "wb") as f:
        ser.save(obj, f)
    assert buffer.getvalue() == path.read_bytes() == (tmp_path / "opened").read_bytes()
    where = "torch:cpu" if kind == "every-dtype" else None
    reference = ser.load(path, map_location=where)
    same(obj, reference)
    buffer.seek(0)
    same(ser.load(buffer, map_location=where), reference)
    assert buffer.read() == b"", "load reads to the end"
    with open(tmp_path / "opened", "rb") as f:
        same(ser.load(f, where), reference)


def test_file_object_position_is_where_reading_and_writing_start() -> None:
    buffer = io.BytesIO()
    buffer.write(b"HEAD")
    ser.save({"w": tw.arange(5)}, buffer)
    buffer.seek(4)
    np.testing.assert_array_equal(ser.load(buffer)["w"].numpy(), np.arange(5))


class OnlyWrite:
    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.calls.append(bytes(data))
        return len(data)


class OnlyRead:
    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def read(self) -> bytes:
        blob, self.blob = self.blob, b""
        return blob


class ShortWrites(OnlyWrite):
    def write(self, data: bytes) -> int:  # a raw stream takes at most 7 bytes per call
        self.calls.append(bytes(data[:7]))
        return len(self.calls[-1])


def test_duck_typed_file_objects_and_one_write(tmp_path: Path) -> None:
    state = {"w": tw.randn(3, 3), "step": 2}
    ser.save(state, tmp_path / "ref")
    sink = OnlyWrite()
    ser.save(state, sink)
    assert sink.calls == [(tmp_path / "ref").read_bytes()], "the whole file in one write"
    same(ser.load(OnlyRead(sink.calls[0])), ser.load(tmp_path / "ref"))
    short = ShortWrites()
    ser.save(state, short)
    assert b"".join(short.calls) == sink.calls[0]


def test_an_error_while_serializing_writes_nothing() -> None:
    buffer = io.BytesIO(b"kept")
    buffer.seek(4)
    with pytest.raises(TypeError, match=r"a function at 'groups\.0\.fn'"):
        ser.save({"w": tw.ones(2), "groups": [{"fn": lambda x: x}]}, buffer)
    with pytest.raises(TypeError, match=r"a object at 'x'"):
        ser.save({"w": tw.ones(2), "x": object()}, buffer)
    assert buffer.getvalue() == b"kept" and buffer.tell() == 4


def test_oversized_header_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorweaver.serialization import writer

    monkeypatch.setattr(writer, "MAX_HEADER_BYTES", 64)
    sink = OnlyWrite()
    with pytest.raises(ValueError, match=r"<OnlyWrite> would have a \d+-byte header"):
        ser.save({"w": tw.ones(2), "notes": "x" * 100}, sink)
    assert sink.calls == []


def test_wrong_objects_raise_clear_errors(tmp_path: Path) -> None:
    ser.save({"w": tw.ones(2)}, tmp_path / "good")
    with open(tmp_path / "text", "w") as f, pytest.raises(TypeError, match=r"text-mode.*'wb'"):
        ser.save({"w": tw.ones(2)}, f)
    assert (tmp_path / "text").read_bytes() == b""
    with open(tmp_path / "good") as f, pytest.raises(TypeError, match=r"text-mode.*'rb'"):
        ser.load(f)
    with pytest.raises(TypeError, match=r"binary file object with write\(\), got bytes.*BytesIO"):
        ser.save({"w": tw.ones(2)}, b"not a file")
    with pytest.raises(TypeError, match=r"binary file object with read\(\), got bytes.*BytesIO"):
        ser.load((tmp_path / "good").read_bytes())
    for wrong in (None, 3):
        with pytest.raises(TypeError, match=r"must be a path .* or a binary file object"):
            ser.load(wrong)
    with open(tmp_path / "good", "rb") as f, pytest.raises(io.UnsupportedOperation, match="'wb'"):
        ser.save({"w": tw.ones(2)}, f)
    with open(tmp_path / "other", "wb") as f, pytest.raises(io.UnsupportedOperation, match="'rb'"):
        ser.load(f)

    class TextRead:
        def read(self) -> str:
            return "{}"

    with pytest.raises(TypeError, match=r"TextRead.*returned str, not bytes.*'rb'"):
        ser.load(TextRead())


def test_load_keywords(tmp_path: Path) -> None:
    ser.save({"w": tw.ones(2)}, tmp_path / "f")
    blob = (tmp_path / "f").read_bytes()
    for weights_only in (None, True, False):
        assert ser.load(io.BytesIO(blob), weights_only=weights_only)["w"].shape == (2,)
    assert ser.load(tmp_path / "f", mmap=True)["w"].shape == (2,)
    with pytest.raises(ValueError, match="file path in order to use the mmap argument"):
        ser.load(io.BytesIO(blob), mmap=True)
    loaded = ser.load(io.BytesIO(blob), map_location="torch:cpu")
    assert loaded["w"].device.backend == "torch"
    # PyTorch's remapping forms: the location of a tensor is where it loads by default.
    seen = []
    identity = ser.load(io.BytesIO(blob), map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cpu"] and identity["w"].tolist() == [1.0, 1.0]
    assert ser.load(io.BytesIO(blob), map_location=lambda t, loc: None)["w"].shape == (2,)
    moved = ser.load(io.BytesIO(blob), map_location=lambda t, loc: t.to("torch:cpu"))
    assert moved["w"].device.backend == "torch"
    assert ser.load(io.BytesIO(blob), map_location={"cuda:0": "cpu"})["w"].device.type == "cpu"
    with tw.device("numpy"):
        by_dict = ser.load(io.BytesIO(blob), map_location={"cpu": "torch:cpu"})
    assert by_dict["w"].device.backend == "torch"
    with pytest.raises(TypeError, match=r"map_location function returned str"):
        ser.load(io.BytesIO(blob), map_location=lambda t, loc: "cpu")


# --- damaged data is refused from a file object as from a path ---------------------------------


def error_of(source: Any) -> str:
    with pytest.raises(ser.SafetensorsError) as info:
        ser.load(source)
    return str(info.value)


def check_like_a_path(tmp_path: Path, blob: bytes) -> str:
    """The error of loading ``blob`` from a BytesIO, checked equal to a path's (but for how the
    two name the source, and the library's own prefix for where it parsed)."""
    path = tmp_path / "damaged"
    path.write_bytes(blob)
    from_path = error_of(path).replace(repr(str(path)), "<BytesIO>")
    from_buffer = error_of(io.BytesIO(blob))

    def library(text: str) -> str:
        return re.sub(r"Error while deserializing( header)?:", "Error while deserializing:", text)

    assert library(from_buffer) == library(from_path)
    return from_buffer


def test_truncated_and_extended_data(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    ser.save({"w": tw.randn(4, 4, dtype=tw.float64), "step": 1}, buffer)
    blob = buffer.getvalue()
    (n,) = np.frombuffer(blob[:8], "<u8")
    for cut in (0, 5, 8, 20):
        assert "truncated" in check_like_a_path(tmp_path, blob[:cut])
    for cut in (8 + int(n), len(blob) - 1):
        assert "not fully covered" in check_like_a_path(tmp_path, blob[:cut])
    assert "not a valid safetensors file" in check_like_a_path(tmp_path, blob + b"\0\0")


def test_bit_flips_are_caught_by_the_checksums(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    ser.save({"w": tw.randn(8, dtype=tw.float64), "b": tw.arange(3)}, buffer)
    blob = buffer.getvalue()
    rng = np.random.default_rng(0)
    header_end = 8 + int(np.frombuffer(blob[:8], "<u8")[0])
    for bit in [
        *rng.integers(64, header_end * 8, 10),
        *rng.integers(header_end * 8, len(blob) * 8, 10),
    ]:
        damaged = bytearray(blob)
        damaged[bit // 8] ^= 1 << (bit % 8)
        message = check_like_a_path(tmp_path, bytes(damaged))
        assert "damaged" in message or "not a valid safetensors file" in message, message


def test_bounds_hold_for_file_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = {"w": {"dtype": "F32", "shape": [1] * 33, "data_offsets": [0, 4]}}
    blob = write_raw(tmp_path / "d", deep, bytes(4)).read_bytes()
    assert "33 dimensions" in check_like_a_path(tmp_path, blob)
    odd = {"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}
    blob = write_raw(tmp_path / "c", odd, bytes(8)).read_bytes()
    assert "dtype C64" in check_like_a_path(tmp_path, blob)
    many = {f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(5)}
    blob = write_raw(tmp_path / "many", many).read_bytes()
    monkeypatch.setattr(reader, "MAX_TENSORS", 4)
    assert "holds 5 tensors, more than the 4" in check_like_a_path(tmp_path, blob)
    monkeypatch.setattr(reader, "MAX_HEADER_BYTES", 64)
    assert "more than the 64 TensorWeaver reads" in check_like_a_path(tmp_path, blob)


def test_pickle_checkpoint_in_a_buffer_gets_the_hint() -> None:
    buffer = io.BytesIO()  # the legacy bare pickle: the zip format loads
    torch.save({"w": torch.ones(2)}, buffer, _use_new_zipfile_serialization=False)
    assert "pickle" in error_of(io.BytesIO(buffer.getvalue()))


def test_real_file_objects_are_named_by_their_file(tmp_path: Path) -> None:
    path = tmp_path / "named.safetensors"
    path.write_bytes(b"\x01\x00")
    with open(path, "rb") as f:
        assert repr(str(path)) in error_of(f)


def test_foreign_bytes_load_as_a_flat_dict_in_file_order(tmp_path: Path) -> None:
    # Data laid out z, a, m: neither name order nor the library's own writing order.
    refs = {"z": sample("F32", (2, 3)), "a": sample("I64", (3,), seed=1), "m": sample("BOOL", (2,))}
    blob = assemble(tmp_path / "foreign", refs, metadata={"format": "pt"}).read_bytes()
    loaded = ser.load(io.BytesIO(blob))
    assert list(loaded) == ["z", "a", "m"]
    for name, t in refs.items():
        np.testing.assert_array_equal(loaded[name].numpy(), t.numpy())
