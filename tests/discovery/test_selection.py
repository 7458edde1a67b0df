"""Selecting backends and devices through real installed distributions: the third-party
backend works, every failure is an error that says what to do, and the scope of
`tw.device` is one thread or task."""

from __future__ import annotations

import pytest

# Disabled where a test's answer depends on the order of devices: a real CUDA device of
# the torch plugin would rightly win there, and probing cuPyNumeric starts Legate.
ONLY_TEST_DEVICES = "torch,cunumeric"

SELECT = """
    import json, tensorweaver as tw
    try:
        device = {call}
    except Exception as exc:
        print(json.dumps({{"error": type(exc).__name__, "message": str(exc),
                           "backend_error": isinstance(exc, tw.BackendError),
                           "value_error": isinstance(exc, ValueError)}}))
    else:
        print(json.dumps({{"device": device.name}}))
"""


def select(env, call: str, **environ: str) -> dict:
    """What ``call`` (an expression giving a Device) returns or raises, in a fresh process."""
    return env.json(SELECT.format(call=call), **environ)


def test_third_party_backend_computes_on_its_own_arrays(good) -> None:
    result = good.json("""
        import json, math
        import numpy as np
        import tensorweaver as tw
        from tensorweaver import registry
        from tensorweaver.contract import dtypes as d, ir

        b = registry.backend_object("pyref")
        assert registry.backend_object("pyref:cpu:0") is b and not ir.missing_primitives(b)
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
        X, Y = b.from_host(x, d.float64), b.from_host(y, d.float64)
        x32 = b.from_host(x, d.float32)
        index = np.array([[0, 0, 2]])
        checks = {
            "matmul": (b.matmul(X, Y), x @ y, 1e-12),
            "sum": (b.sum(X, (0, 2), True), x.sum(axis=(0, 2), keepdims=True), 1e-12),
            "add 0-d": (b.add(X, b.full((), 2.5, d.float64)), x + 2.5, 0),
            "exp float32": (b.exp(x32), np.exp(x.astype(np.float32).astype(np.float64)), 1e-6),
            "erf": (b.erf(X), np.vectorize(math.erf)(x), 1e-12),
            "max": (b.max(X, (1,), False), x.max(axis=1), 0),
            "where": (b.where(b.gt(X, b.full((), 0.0, d.float64)), X, b.neg(X)), abs(x), 0),
            "slice": (b.slice(X, (0, 1, 0), (2, 3, 4), (1, 1, 2)), x[:, 1:3, ::2], 0),
            "scatter_add": (
                b.scatter_add(b.full((1, 3), 0.0, d.float64), 1, b.from_host(index, d.int64),
                              b.from_host(np.array([[1.0, 2.0, 4.0]]), d.float64)),
                np.array([[3.0, 0.0, 4.0]]), 0),
        }
        for name, (got, want, rtol) in checks.items():
            assert type(got).__name__ == "RefArray", name
            host = b.to_host(got)
            assert host.dtype == (np.float32 if name.endswith("float32") else np.float64), name
            np.testing.assert_allclose(host, want, rtol=rtol, atol=0, err_msg=name)
        trunc = b.to_host(b.cast(b.from_host(np.array([-1.7, 2.9]), d.float64), d.int32))
        assert trunc.dtype == np.int32 and trunc.tolist() == [-1, 2]
        print(json.dumps([type(b).__module__, tw.set_backend("pyref").name, tw.get_backend().name]))
    """)
    assert result == ["tw_example_good.backend", "pyref:cpu:0", "pyref:cpu:0"]


def test_alias_selects_the_backend(good) -> None:
    assert select(good, 'tw.set_backend("pyreference:cpu:0")') == {"device": "pyref:cpu:0"}


@pytest.mark.parametrize(
    "backend, words",
    [
        ("brokenimport", ["tw-broken-import", "ModuleNotFoundError"]),
        ("brokenapi", ["tw-broken-api", "99.0"]),
        ("brokenhook", ["tw-broken-hook", "driver query failed"]),
        ("brokenmissing", ["tw-broken-missing", "lacks required primitives", "matmul"]),
    ],
)
def test_selecting_a_broken_plugin_names_distribution_cause_and_fix(
    mixed, backend: str, words: list
) -> None:
    outcome = select(mixed, f"tw.set_backend({backend!r})")
    assert outcome["error"] == "PluginError" and outcome["backend_error"]
    for word in [*words, "Fix:"]:
        assert word in outcome["message"]


def test_the_good_plugin_still_works_beside_broken_ones(mixed) -> None:
    assert select(mixed, 'tw.set_backend("pyref")') == {"device": "pyref:cpu:0"}
    assert select(mixed, 'tw.set_backend("numpy")') == {"device": "numpy:cpu:0"}


def test_unknown_backend_lists_installed_ones_and_a_pip_command(good) -> None:
    outcome = select(good, 'tw.set_backend("torchish")')
    assert outcome["error"] == "UnknownBackendError" and outcome["value_error"]
    assert "'torchish'" in outcome["message"] and "pip install" in outcome["message"]
    installed = outcome["message"].split("installed backends: ")[1].split(".")[0].split(", ")
    assert {"numpy", "pyref"} <= set(installed)


@pytest.mark.parametrize(
    "spec, real", [("pyref:gpu", "pyref:cpu:0"), ("numpy:cpu:3", "numpy:cpu:0")]
)
def test_missing_device_lists_the_real_ones(good, spec: str, real: str) -> None:
    outcome = select(good, f"tw.set_backend({spec!r})")
    assert outcome["error"] == "DeviceNotFoundError" and outcome["value_error"]
    assert repr(spec) in outcome["message"] and real in outcome["message"]


def test_bad_spec_shows_the_grammar(good) -> None:
    outcome = select(good, 'tw.set_backend("numpy:cpu:x")')
    assert outcome["error"] == "ValueError" and "backend[:kind[:index]]" in outcome["message"]


def test_disable_plugins_by_name(mixed) -> None:
    disable = {"TENSORWEAVER_DISABLE_PLUGINS": "pyref,brokenimport"}
    statuses = mixed.json(
        """
        import json, tensorweaver as tw
        print(json.dumps({p.distribution: p.status for p in tw.plugins()}))
    """,
        **disable,
    )
    for distribution in ["tw-example-good", "tw-shadow-duplicate", "tw-broken-import"]:
        assert statuses[distribution] == "disabled"
    assert statuses["tensorweaver-numpy"] == "ok"
    records = mixed.devices(**disable)
    assert not [r for r in records.values() if r["backend"] in ("pyref", "brokenimport")]
    outcome = select(mixed, 'tw.set_backend("pyref")', **disable)
    assert outcome["error"] == "PluginError"
    assert "disabled by TENSORWEAVER_DISABLE_PLUGINS" in outcome["message"]


def test_disable_all_keeps_only_numpy(mixed) -> None:
    assert list(mixed.devices(TENSORWEAVER_DISABLE_PLUGINS="all")) == ["numpy:cpu:0"]


def test_backend_env_sets_the_default(good, mixed) -> None:
    assert select(good, "tw.get_backend()") == {"device": "numpy:cpu:0"}
    assert select(good, "tw.get_backend()", TENSORWEAVER_BACKEND="pyref") == {
        "device": "pyref:cpu:0"
    }
    # A bad default breaks neither the import nor `tw devices`: only the first use says why.
    unknown = select(good, "tw.get_backend()", TENSORWEAVER_BACKEND="nope")
    assert unknown["error"] == "UnknownBackendError"
    assert "TENSORWEAVER_BACKEND='nope'" in unknown["message"]
    broken = select(mixed, "tw.get_backend()", TENSORWEAVER_BACKEND="brokenimport")
    assert broken["error"] == "PluginError" and "tw-broken-import" in broken["message"]
    assert "numpy:cpu:0" in mixed.devices(TENSORWEAVER_BACKEND="brokenimport")


def test_device_scope_is_per_thread_and_per_task(good) -> None:
    seen = good.json("""
        import asyncio, json, threading
        import tensorweaver as tw

        seen = {}
        entered, checked = threading.Event(), threading.Event()

        def scoped_thread():
            with tw.device("pyref"):
                entered.set()
                checked.wait()
                seen["thread, inside its block"] = tw.get_backend().name

        thread = threading.Thread(target=scoped_thread)
        thread.start()
        entered.wait()
        seen["main, while the thread is in its block"] = tw.get_backend().name
        checked.set()
        thread.join()

        async def scoped_task(inside, done):
            with tw.device("pyref"):
                inside.set()
                await done.wait()
                seen["task, inside its block"] = tw.get_backend().name

        async def other_task(inside, done):
            await inside.wait()
            seen["task, while the other is in its block"] = tw.get_backend().name
            done.set()

        async def main():
            inside, done = asyncio.Event(), asyncio.Event()
            await asyncio.gather(scoped_task(inside, done), other_task(inside, done))

        asyncio.run(main())
        seen["main, after all"] = tw.get_backend().name
        print(json.dumps(seen))
    """)
    assert seen == {
        "main, while the thread is in its block": "numpy:cpu:0",
        "thread, inside its block": "pyref:cpu:0",
        "task, inside its block": "pyref:cpu:0",
        "task, while the other is in its block": "numpy:cpu:0",
        "main, after all": "numpy:cpu:0",
    }


ORDER = """
    import json, tensorweaver as tw
    out = {"auto": tw.set_backend("auto").name, "fakeaccel": tw.set_backend("fakeaccel").name}
    try:
        out["use_gpu"] = tw.use_gpu().name
    except tw.DeviceNotFoundError as exc:
        out["use_gpu"] = str(exc)
    out["use_cpu"] = tw.use_cpu().name
    tw.set_backend("pyref")
    out["use_cpu from pyref"] = tw.use_cpu().name
    print(json.dumps(out))
"""


def test_auto_prefers_an_accelerator_to_every_cpu(accel) -> None:
    order = accel.json(ORDER, TENSORWEAVER_DISABLE_PLUGINS=ONLY_TEST_DEVICES, TW_FAKEACCEL_GPUS="2")
    assert order == {
        "auto": "fakeaccel:gpu:0",
        "fakeaccel": "fakeaccel:gpu:0",
        "use_gpu": "fakeaccel:gpu:0",
        "use_cpu": "fakeaccel:cpu:0",  # the current backend's own CPU
        "use_cpu from pyref": "pyref:cpu:0",
    }
    outcome = select(accel, 'tw.set_backend("fakeaccel:gpu:1")', TW_FAKEACCEL_GPUS="2")
    assert outcome == {"device": "fakeaccel:gpu:1"}


def test_auto_takes_numpy_first_among_cpus(accel) -> None:
    # fakeaccel:cpu:0 sorts before numpy:cpu:0 and comes from a plugin listed first.
    order = accel.json(ORDER, TENSORWEAVER_DISABLE_PLUGINS=ONLY_TEST_DEVICES, TW_FAKEACCEL_GPUS="0")
    assert order["auto"] == "numpy:cpu:0"
    assert order["fakeaccel"] == "fakeaccel:cpu:0"
    assert order["use_gpu"].startswith("no available device of kind cuda/")
    assert "fakeaccel:cpu:0" in order["use_gpu"] and "numpy:cpu:0" in order["use_gpu"]
