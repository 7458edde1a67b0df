"""tw.save / tw.load round trips: bit-exact values for every dtype, across backends, nested
state dicts rebuilt exactly, and save's bounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
from saving_devices import BACKENDS, available, dtypes_of
from tensorweaver import serialization as ser
from tensorweaver.serialization import limits

DTYPES = (
    tw.bool,
    tw.uint8,
    tw.int8,
    tw.int16,
    tw.int32,
    tw.int64,
    tw.float16,
    tw.bfloat16,
    tw.float32,
    tw.float64,
)


def host_values(dtype: object, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Values of ``dtype`` spanning its range (floats with inf, nan, -0.0 and subnormals)."""
    rng = np.random.default_rng(seed)
    if dtype is tw.bool:
        return rng.random(shape) < 0.5
    if dtype.is_complex:  # special values in both parts, not at the same places
        part = dtype.to_real()
        re, im = host_values(part, shape, seed), host_values(part, shape, seed + 1)
        out = np.empty(shape, dtype.numpy_name)
        out.real, out.imag = re, np.roll(im, 2)
        return out
    if dtype.is_floating_point:
        np_dtype = np.float32 if dtype is tw.bfloat16 else np.dtype(dtype.numpy_name)
        x = (rng.standard_normal(shape) * 1e3).astype(np_dtype)
        flat = x.reshape(-1)
        special = [np.inf, -np.inf, np.nan, -0.0, np.finfo(np_dtype).smallest_subnormal]
        flat[: len(special)] = special[: flat.size]
        return x
    info = np.iinfo(dtype.numpy_name)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype.numpy_name)


def bits(t: object) -> np.ndarray:
    """The tensor's values as raw unsigned integers, so NaN and -0.0 compare exactly."""
    a = np.asarray(t.numpy(), order="C")
    if a.dtype.kind == "c":  # both parts' bits
        a = np.stack([a.real, a.imag], -1)
    return a.view(f"u{a.itemsize}") if a.dtype.kind == "f" else a


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_dtype_round_trips_bit_exact(tmp_path: Path, dtype: object) -> None:
    # bfloat16 lives only on backends that have it (PyTorch's).
    where = available("torch:cpu") if dtype is tw.bfloat16 else "numpy"
    original = tw.tensor(host_values(dtype, (4, 6)), dtype=dtype, device=where)
    ser.save({"x": original, "empty": tw.zeros(0, 3, dtype=dtype, device=where)}, tmp_path / "f")
    loaded = ser.load(tmp_path / "f", device=where)
    assert loaded["x"].dtype is dtype and loaded["x"].shape == (4, 6)
    np.testing.assert_array_equal(bits(loaded["x"]), bits(original))
    assert loaded["empty"].dtype is dtype and loaded["empty"].shape == (0, 3)


def test_float64_round_trip_is_bit_exact_at_every_rank(tmp_path: Path) -> None:
    state = {f"r{n}": tw.tensor(host_values(tw.float64, (3,) * n, seed=n)) for n in range(5)}
    state["grad"] = tw.randn(3, 2, dtype=tw.float64, requires_grad=True)
    ser.save(state, str(tmp_path / "f.safetensors"))
    loaded = ser.load(str(tmp_path / "f.safetensors"))
    assert list(loaded) == list(state)
    for name, t in state.items():
        assert loaded[name].shape == t.shape
        assert loaded[name].requires_grad == t.requires_grad  # as torch.load
        np.testing.assert_array_equal(bits(loaded[name].detach()), bits(t.detach()))


@pytest.mark.parametrize("target", BACKENDS)
def test_load_onto_any_backend_and_back(tmp_path: Path, spec: str, target: str) -> None:
    available(target)
    state = {
        d.name: tw.tensor(host_values(d, (2, 3)), dtype=d, device=spec)
        for d in dtypes_of(spec, target)
    }
    ser.save(state, tmp_path / "a")
    moved = ser.load(tmp_path / "a", device=target)
    for name, t in moved.items():
        assert t.device == target
        np.testing.assert_array_equal(bits(t), bits(state[name]))
    ser.save(moved, tmp_path / "b")
    back = ser.load(tmp_path / "b", map_location=spec)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    for name, t in back.items():
        assert t.device == spec
        np.testing.assert_array_equal(bits(t), bits(state[name]))


def test_complex_tensors_are_float_pairs_other_tools_read(tmp_path: Path) -> None:
    # safetensors has no complex codes: the file holds view_as_real's layout.
    from safetensors.numpy import load_file

    z = tw.tensor(host_values(tw.complex64, (3, 2)), dtype=tw.complex64)
    weight = tw.nn.Parameter(tw.tensor([1 + 2j, -3j], dtype=tw.complex128))
    ser.save({"z": z, "w": weight, "same": z}, tmp_path / "f")
    raw = load_file(tmp_path / "f")
    assert raw["z"].dtype == np.float32 and raw["z"].shape == (3, 2, 2)
    np.testing.assert_array_equal(raw["w"], [[1, 2], [0, -3]])
    loaded = ser.load(tmp_path / "f")
    assert loaded["z"].dtype is tw.complex64 and loaded["z"] is loaded["same"]
    np.testing.assert_array_equal(bits(loaded["z"]), bits(z))
    assert isinstance(loaded["w"], tw.nn.Parameter) and loaded["w"].requires_grad
    assert loaded["w"].dtype is tw.complex128


def test_dtype_the_target_device_lacks_is_named(tmp_path: Path) -> None:
    source = available("torch:cpu")
    if tw.bfloat16 in dtypes_of("numpy"):
        pytest.skip("the NumPy backend has bfloat16 now")
    ser.save({"w": tw.ones(2, dtype=tw.bfloat16, device=source)}, tmp_path / "f")
    with pytest.raises(TypeError, match=r"tensor 'w' of .*'.*f'.*bfloat16.*device="):
        ser.load(tmp_path / "f", device="numpy")


def test_default_device_is_the_current_one(tmp_path: Path) -> None:
    target = available("torch:cpu")
    ser.save({"w": tw.ones(2)}, tmp_path / "f")
    with tw.device(target):
        loaded = ser.load(tmp_path / "f")
    assert loaded["w"].device.backend == "torch"
    assert ser.load(tmp_path / "f")["w"].device.backend == tw.ones(1).device.backend


def test_nested_optimizer_state_is_rebuilt_exactly(tmp_path: Path) -> None:
    m0, v1 = tw.randn(3, dtype=tw.float64), tw.rand(2, 2)
    state = {
        "state": {
            0: {"step": 3, "exp_avg": m0, "exp_avg_sq": m0 * m0},
            1: {"step": 3, "momentum_buffer": v1, "trace": [v1, None]},
        },
        "param_groups": [
            {
                "lr": 1e-3,
                "betas": (0.9, 0.999),
                "eps": float("inf"),
                "amsgrad": False,
                "name": "encoder",
                "params": [0, 1],
                "weird keys": {True: "t", 2.5: "f", None: "n", "0": "s"},
            }
        ],
    }
    ser.save(state, tmp_path / "opt")
    loaded = ser.load(tmp_path / "opt")

    def same(a: object, b: object) -> None:
        assert type(a) is type(b) or (isinstance(a, tw.Tensor) and isinstance(b, tw.Tensor))
        if isinstance(a, tw.Tensor):
            np.testing.assert_array_equal(bits(a), bits(b))
        elif isinstance(a, dict):
            assert list(a) == list(b) and [type(k) for k in a] == [type(k) for k in b]
            for key in a:
                same(a[key], b[key])
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        else:
            assert a == b

    same(loaded, state)
    trace = loaded["state"][1]["trace"][0]
    assert trace is loaded["state"][1]["momentum_buffer"], "one tensor, saved once"


def test_colliding_paths_and_reserved_names_stay_apart(tmp_path: Path) -> None:
    a, b, c = tw.tensor([1.0]), tw.tensor([2.0]), tw.tensor([3.0])
    state = {"a.b": a, "a": {"b": b}, "__metadata__": c}
    ser.save(state, tmp_path / "f")
    loaded = ser.load(tmp_path / "f")
    assert loaded["a.b"].item() == 1.0 and loaded["a"]["b"].item() == 2.0
    assert loaded["__metadata__"].item() == 3.0


def test_unstorable_values_name_their_path(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"a frozenset at 'groups\.0\.fn'"):
        ser.save({"groups": [{"fn": frozenset({1, 2})}]}, tmp_path / "f")
    with pytest.raises(TypeError, match=r"key \(1, 2\)"):
        ser.save({(1, 2): tw.ones(1)}, tmp_path / "f")
    assert not list(tmp_path.iterdir()), "nothing is written when the object cannot be stored"


def test_save_refuses_what_load_would_refuse(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    ser.save({"w": tw.ones(2)}, path)
    before = path.read_bytes()
    many = [tw.zeros(0) for _ in range(limits.MAX_TENSORS + 1)]
    with pytest.raises(ValueError, match=rf"{limits.MAX_TENSORS + 1} tensors, more than the"):
        ser.save(many, path)
    notes = "x" * limits.MAX_HEADER_BYTES  # non-tensor data goes into the header
    with pytest.raises(ValueError, match=rf"-byte header, more than the {limits.MAX_HEADER_BYTES}"):
        ser.save({"w": tw.ones(2), "notes": notes}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"], "and no temporary is left"
