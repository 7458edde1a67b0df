"""The cunumeric plugin: device records with and without starting Legate, the errors it
raises instead of letting Legate abort, and the primitives where cuPyNumeric needed a
workaround (see the docstring of tensorweaver_cunumeric.backend).

The shared primitive suite in tests/primitives covers every primitive on this backend;
this file does not repeat it. References are NumPy float64. Each cuPyNumeric call costs
about 0.4 ms, so arrays are small. Legate starts once per process: the tests that need a
fresh runtime (or none) run Python in a subprocess.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
from cunumeric_child import run_python
from tensorweaver import registry
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.errors import OutOfMemoryError
from tensorweaver.contract.records import AVAILABLE, NOT_PROBED, UNAVAILABLE
from tensorweaver_cunumeric import legate_config, plugin

installed = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)


@pytest.fixture(scope="module")
def cpu():
    return plugin.tw_create_backend(device=plugin.tw_devices(probe=True)[0])


def test_missing_library_is_an_unavailable_record(monkeypatch):
    monkeypatch.setattr(legate_config, "library_name", lambda: None)
    (record,) = plugin.tw_devices(probe=False)
    assert (record.name, record.status) == ("cunumeric:cpu:0", UNAVAILABLE)
    assert "pip install tensorweaver[cunumeric]" in record.detail["reason"]
    assert plugin.tw_diagnose()[0].fix == "pip install tensorweaver[cunumeric]"
    assert "cupynumeric" in plugin.tw_backend_info().aliases


def test_parse_legate_config():
    assert legate_config.parse("--cpus 2 --gpus=4 --sysmem 3000 --logging gpu=6") == {
        "cpus": 2,
        "gpus": 4,
        "sysmem": 3000,
    }


@installed
def test_listing_does_not_start_legate():
    out = run_python("""
        import json, sys
        import tensorweaver as tw
        records = [r.as_dict() for r in tw.devices() if r.backend == "cunumeric"]
        loaded = sorted({m.split(".")[0] for m in sys.modules} & {"legate", "cupynumeric"})
        print(json.dumps([records, loaded]))
    """)
    records, loaded = out
    assert loaded == []
    gpus = ["cunumeric:gpu:0"] if legate_config.nvidia_driver() else []  # auto-configured
    assert [r["name"] for r in records] == [*gpus, "cunumeric:cpu:0"]
    assert {r["status"] for r in records} == {NOT_PROBED}
    detail = records[0]["detail"]
    assert detail["version"] and detail["library"] in legate_config.LIBRARIES
    if not legate_config.nvidia_driver():
        assert detail["config"]["source"] == legate_config.DEFAULT_SOURCE
        assert detail["config"]["gpus"] == 0 and detail["config"]["sysmem"] > 0


@installed
def test_listing_reads_a_users_gpu_config_without_changing_it():
    config = "--cpus 2 --gpus 2 --sysmem 1000"
    out = run_python(
        """
        import json, os
        from tensorweaver.contract.records import is_problem
        from tensorweaver_cunumeric import plugin
        records = [r.as_dict() for r in plugin.tw_devices(probe=False)]
        print(json.dumps([records, os.environ["LEGATE_CONFIG"]]))
    """,
        LEGATE_CONFIG=config,
    )
    records, after = out
    assert after == config
    assert [r["name"] for r in records] == ["cunumeric:gpu:0", "cunumeric:cpu:0"]
    assert records[0]["detail"]["config"] == {
        "source": "LEGATE_CONFIG",
        "LEGATE_CONFIG": config,
        "cpus": 2,
        "gpus": 2,
        "sysmem": 1000,
    }


@installed
def test_missing_cuda_driver_library_names_the_stand_in():
    # Simulated: the import error the CUDA wheels give where libcuda.so.1 is missing.
    out = run_python("""
        import importlib, json
        def fail(name, *args):
            raise ImportError("libcuda.so.1: cannot open shared object file")
        importlib.import_module = fail
        from tensorweaver.contract.records import is_problem
        from tensorweaver_cunumeric import plugin
        (record,) = plugin.tw_devices(probe=True)
        try:
            plugin.tw_create_backend(device=record)
        except RuntimeError as exc:
            error = str(exc)
        print(json.dumps([record.status, record.detail["fix"], error]))
    """)
    status, fix, error = out
    assert status == UNAVAILABLE
    assert "scripts/cupynumeric-cpu/install.sh" in fix and "libcuda.so.1" in error


@installed
@pytest.mark.skipif(legate_config.nvidia_driver(), reason="auto-configuration works here")
def test_failed_legate_start_is_reported_with_its_fix():
    # LEGATE_CONFIG without LEGATE_AUTO_CONFIG=0 leaves Legate's auto-configuration on: it fails.
    out = run_python(
        """
        import json
        from tensorweaver.contract.records import is_problem
        from tensorweaver_cunumeric import plugin
        (record,) = plugin.tw_devices(probe=True)
        print(json.dumps([record.status, record.detail["reason"], record.detail["fix"],
                          [p.message for p in plugin.tw_diagnose() if is_problem(p)]]))
    """,
        LEGATE_CONFIG="--cpus 1",
    )
    status, reason, fix, problems = out
    assert status == UNAVAILABLE
    assert "auto-configuration failed" in reason and "LEGATE_AUTO_CONFIG=0" in fix
    assert problems == [reason]


@installed
def test_probe_reads_legates_machine():
    records = plugin.tw_devices(probe=True)
    by_kind = {r.kind: r for r in records}
    cpu = by_kind["cpu"]
    assert cpu.status == AVAILABLE and cpu.detail["cpus"] >= 1 and cpu.detail["nodes"] >= 1
    assert cpu.detail["sysmem_mb"] > 0
    gpu = by_kind["gpu"]
    if gpu.status == AVAILABLE:
        assert records[0] is gpu and gpu.detail["gpus"] >= 1
    else:
        assert records[0] is cpu and "legate --gpus N" in gpu.detail["fix"]


@installed
def test_gpu_request_without_gpus_names_the_fix():
    gpu = next(r for r in plugin.tw_devices(probe=True) if r.kind == "gpu")
    if gpu.status == AVAILABLE:
        pytest.skip("this Legate runtime has GPUs")
    with pytest.raises(RuntimeError, match=r"no GPUs.*legate --gpus N.*LEGATE_CONFIG"):
        plugin.tw_create_backend(device=gpu)
    with pytest.raises(RuntimeError, match=r"no GPUs.*legate --gpus N.*LEGATE_CONFIG"):
        registry.backend_object("cunumeric:gpu")


@installed
def test_registry_selects_the_backend_by_its_alias():
    backend = registry.backend_object("cupynumeric")
    assert backend.device.name == registry.backend_object("cunumeric").device.name
    assert d.bfloat16 not in backend.dtypes and d.float16 in backend.dtypes


@installed
def test_changed_config_after_start_is_reported():
    out = run_python(
        """
        import json, os
        import cupynumeric
        os.environ["LEGATE_CONFIG"] = "--cpus 1 --gpus 0 --utility 1 --sysmem 700"
        from tensorweaver.contract.records import is_problem
        from tensorweaver_cunumeric import plugin
        records = plugin.tw_devices(probe=False)
        print(json.dumps([records[0].status, records[0].detail.get("note", ""),
                          [p.message for p in plugin.tw_diagnose() if is_problem(p)]]))
    """,
        LEGATE_AUTO_CONFIG="0",
        LEGATE_CONFIG="--cpus 1 --gpus 0 --utility 1 --sysmem 500",
    )
    status, note, problems = out
    assert status == AVAILABLE  # already running, so listing reads it for free
    assert "--sysmem 700 asked, 500 running" in note and "cannot change" in note
    assert problems == [note]


@installed
@pytest.mark.parametrize(
    "make", ["full", "from_host", "expand", "pad", "matmul", "fft_c2r", "repeat", "broadcast"]
)
def test_array_beyond_sysmem_raises_before_legate_aborts(cpu, make):
    # Each of these made a lazy array that Legate's mapper later failed to place, aborting
    # the whole process (tw.ones(2).repeat(2**41) did): the plugin refuses it up front.
    n = legate_config.running()["sysmem_mb"] * 2**20 // 8 + 1
    root = int(n**0.5) + 1
    with pytest.raises(OutOfMemoryError, match=r"--sysmem"):
        if make == "full":
            cpu.full((n,), 0.0, d.float64)
        elif make == "from_host":  # a broadcast view: no host memory behind it
            cpu.from_host(np.broadcast_to(np.zeros(1), (n,)), d.float64)
        elif make == "expand":
            cpu.expand(cpu.full((1,), 0.0, d.float64), (n,))
        elif make == "pad":
            cpu.pad(cpu.full((1,), 0.0, d.float64), ((0, n),), 0.0)
        elif make == "matmul":
            cpu.matmul(cpu.full((root, 1), 0.0, d.float64), cpu.full((1, root), 0.0, d.float64))
        elif make == "fft_c2r":
            cpu.fft_c2r(cpu.full((3,), 0.0, d.complex128), (0,), "backward", n)
        elif make == "repeat":  # through the core
            tw.ones(1, dtype=tw.float64, device="cunumeric").repeat(n)
        else:
            column = tw.ones(root, 1, dtype=tw.float64, device="cunumeric")
            column + column.T
    assert issubclass(OutOfMemoryError, RuntimeError)  # torch.OutOfMemoryError's class


@installed
@pytest.mark.parametrize("dtype", [d.float32, d.float64, d.int64, d.int8])
def test_scatter_add_accumulates_duplicates(cpu, dtype):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    index = np.array([[0, 0, 0, 3], [1, 1, 2, 2], [3, 0, 3, 0]])
    src = np.arange(1, 13, dtype=np.float64).reshape(3, 4)
    ref = a.copy()
    np.add.at(ref, (np.arange(3)[:, None], index), src)
    got = cpu.scatter_add(
        cpu.from_host(a, dtype), 1, cpu.from_host(index, d.int64), cpu.from_host(src, dtype)
    )
    host = cpu.to_host(got)
    assert host.dtype == np.dtype(dtype.numpy_name)
    np.testing.assert_array_equal(host, ref)


@installed
def test_scatter_add_wraps_small_integers_as_numpy(cpu):
    a, index, src = np.array([100, 0]), np.array([0, 0, 0]), np.array([100, 100, 100])
    ref = a.astype(np.int8)
    np.add.at(ref, index, src.astype(np.int8))
    got = cpu.scatter_add(
        cpu.from_host(a, d.int8), 0, cpu.from_host(index, d.int64), cpu.from_host(src, d.int8)
    )
    np.testing.assert_array_equal(cpu.to_host(got), ref)


NAN = np.nan
# (primitive, arguments, NumPy float64 reference): each case is a place where cuPyNumeric
# 26.06 itself gives another answer.
WORKAROUNDS = [
    ("max", ([[1.0, NAN], [2.0, 3.0]], (1,), False), [NAN, 3.0]),
    ("min", ([[1.0, NAN, 0.0]] * 2, (0, 1), True), [[NAN]]),
    ("argmax", ([[1.0, NAN, 5.0, NAN]], 1, False), [1]),
    ("argmin", ([[4.0, 2.0, NAN]], 1, False), [2]),
    ("argmax", ([[-np.inf, -np.inf], [0.0, 1.0]], 1, False), [0, 1]),
    ("maximum", ([1.0, 2.0], [NAN, 0.0]), [NAN, 2.0]),
    ("minimum", ([1.0, 2.0], NAN), [NAN, NAN]),
    ("sign", ([NAN, -2.0, 0.0],), [NAN, -1.0, 0.0]),
    ("floordiv", ([1.0, -5.0, 7.0, 1.0], [0.1, np.inf, -2.0, 0.0]), [9.0, -1.0, -4.0, np.inf]),
    ("any", ([[[True, False]], [[False, False]]], (0, 2), False), [True]),
]


@installed
@pytest.mark.parametrize(
    ("name", "args", "expected"),
    WORKAROUNDS,
    ids=[f"{w[0]}-{i}" for i, w in enumerate(WORKAROUNDS)],
)
def test_cupynumeric_differences_are_worked_around(cpu, name, args, expected):
    expected = np.asarray(expected)
    dtype = d.bool_ if expected.dtype == bool else d.float64

    def arg(value):
        is_array = isinstance(value, list) or isinstance(value, float)
        return cpu.from_host(np.asarray(value), dtype) if is_array else value

    got = cpu.to_host(getattr(cpu, name)(*map(arg, args)))
    np.testing.assert_array_equal(got, expected)


@installed
def test_integer_division_by_zero_gives_zero_not_sigfpe(cpu):
    a, b = (cpu.from_host(np.array(v), d.int32) for v in ([7, -7, 5], [2, 2, 0]))
    np.testing.assert_array_equal(cpu.to_host(cpu.floordiv(a, b)), [3, -4, 0])
    np.testing.assert_array_equal(cpu.to_host(cpu.remainder(a, b)), [1, 1, 0])


@installed
def test_float32_sum_accumulates_in_float64(cpu):
    x = np.full(100_000, 0.1, dtype=np.float32)
    got = float(cpu.to_host(cpu.sum(cpu.from_host(x, d.float32), (0,), False)))
    assert got == pytest.approx(x.astype(np.float64).sum(), rel=1e-7)


@installed
def test_integer_matmul_is_exact(cpu):
    a = np.arange(-6, 6).reshape(3, 4)
    b = np.arange(8).reshape(4, 2)
    got = cpu.to_host(cpu.matmul(cpu.from_host(a, d.int64), cpu.from_host(b, d.int64)))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, a @ b)


@installed
def test_erf_is_within_an_ulp_of_math_erf(cpu):
    # Every range of the approximation and its edges, the tails, signed zero, inf and NaN.
    edges = [0.84375, 1.25, 1 / 0.35, 6.0]
    x = np.concatenate(
        [np.linspace(-7, 7, 2001), edges, np.nextafter(edges, 0), [-0.0, 1e-300, np.inf, -np.inf]]
    )
    ref = np.array([math.erf(v) for v in x])
    got = cpu.to_host(cpu.erf(cpu.from_host(x, d.float64)))
    assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref)))
    assert np.signbit(got[x == 0]).tolist() == [False, True]  # erf(0.0), erf(-0.0)
    assert np.isnan(cpu.to_host(cpu.erf(cpu.from_host(np.array([np.nan]), d.float64))))[0]


@installed
def test_reshape_of_a_sliced_broadcast_is_right(cpu):
    # cuPyNumeric itself gets this wrong; the backend reshapes a copy.
    row = cpu.expand(cpu.reshape(cpu.full((), 1.0, d.float64), (1,)), (8,))
    part = cpu.slice(row, (0,), (6,), (1,))
    np.testing.assert_array_equal(cpu.to_host(cpu.reshape(part, (2, 3))), np.ones((2, 3)))
