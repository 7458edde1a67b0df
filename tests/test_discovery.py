"""Discovery, selection and `tw devices` through real installed distributions.

The distributions under tests/plugins/ are built and installed with pip into a
temporary folder; each check runs Python in a subprocess with that folder on
PYTHONPATH, so entry points are read from real metadata.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN_DIRS = sorted((Path(__file__).parent / "plugins").iterdir())


@pytest.fixture(scope="session")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            *map(str, PLUGIN_DIRS),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


def run(plugin_path: Path | None, code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TENSORWEAVER_")}
    if plugin_path is not None:
        environ["PYTHONPATH"] = os.pathsep.join(
            [str(plugin_path), *filter(None, [environ.get("PYTHONPATH")])]
        )
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


def tw_cli(plugin_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return run(
        plugin_path,
        f"import sys; from tensorweaver.cli import main; sys.exit(main({list(args)!r}))",
        **env,
    )


def devices_json(plugin_path: Path, *extra: str, **env: str) -> dict[str, dict]:
    result = tw_cli(plugin_path, "devices", "--json", *extra, **env)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return {r["name"]: r for r in json.loads(result.stdout)}


def test_good_plugin_is_discovered_and_selectable(plugin_path: Path) -> None:
    result = run(
        plugin_path,
        """
        import tensorweaver as tw
        from tensorweaver import registry
        dev = tw.set_backend("pyref")
        print(dev.name, tw.get_backend().name, type(registry.backend_object("pyref")).__name__)
        with tw.device("pyreference:cpu:0") as d:   # an alias declared in BackendInfo
            print(d.name)
    """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["pyref:cpu:0", "pyref:cpu:0", "NumpyBackend", "pyref:cpu:0"]


def test_broken_plugins_are_reported_not_raised(plugin_path: Path) -> None:
    records = devices_json(plugin_path)
    assert records["numpy:cpu:0"]["status"] == "available"
    assert records["pyref:cpu:0"]["status"] == "available"
    broken_import = records["brokenimport"]
    assert broken_import["status"] == "error"
    assert "a_module_that_does_not_exist" in broken_import["detail"]["error"]
    assert "TENSORWEAVER_DISABLE_PLUGINS=brokenimport" in broken_import["detail"]["fix"]
    api = records["brokenapi"]["detail"]
    assert "tw-broken-api" in api["error"] and "'99.0'" in api["error"] and "1.0" in api["error"]
    # Two distributions claim "pyref": the alphabetically first keeps it (documented rule).
    duplicate = records["pyref"]["detail"]
    assert duplicate["distribution"] == "tw-shadow-duplicate"
    assert "already provided by tw-example-good" in duplicate["error"]
    assert "pip uninstall tw-shadow-duplicate" in duplicate["fix"]
    # Without a probe the incomplete backend object has not been created yet.
    assert records["brokenmissing:cpu:0"]["status"] == "available"


def test_probe_finds_missing_primitives(plugin_path: Path) -> None:
    records = devices_json(plugin_path, "--probe")
    missing = records["brokenmissing"]
    assert missing["status"] == "error"
    assert "lacks required primitives" in missing["detail"]["error"]
    assert "matmul" in missing["detail"]["error"]
    assert records["pyref:cpu:0"]["status"] == "available"


def test_table_output_has_no_traceback(plugin_path: Path) -> None:
    result = tw_cli(plugin_path, "devices")
    assert result.returncode == 0
    out = result.stdout + result.stderr
    assert "Traceback" not in out
    assert out.splitlines()[0].split()[:3] == ["DEVICE", "KIND", "STATUS"]
    assert "brokenapi" in out and "fix:" in out


@pytest.mark.parametrize(
    "name, words",
    [
        ("brokenimport", ["tw-broken-import", "ModuleNotFoundError"]),
        ("brokenapi", ["tw-broken-api", "99.0"]),
        ("brokenmissing", ["tw-broken-missing", "lacks required primitives"]),
    ],
)
def test_selecting_a_broken_plugin_names_it(plugin_path: Path, name: str, words: list) -> None:
    result = run(
        plugin_path,
        f"""
        import tensorweaver as tw
        try:
            tw.set_backend({name!r})
        except tw.PluginError as exc:
            print("PluginError:", exc)
    """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("PluginError:")
    for word in words:
        assert word in result.stdout


def test_unknown_backend_and_missing_device_errors(plugin_path: Path) -> None:
    result = run(
        plugin_path,
        """
        import tensorweaver as tw
        for spec in ["torchish", "pyref:gpu", "numpy:cpu:3", "numpy:cpu:x"]:
            try:
                tw.set_backend(spec)
            except (tw.UnknownBackendError, tw.DeviceNotFoundError, ValueError) as exc:
                print(type(exc).__name__, "|", exc)
    """,
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith("UnknownBackendError")
    assert "installed backends:" in lines[0] and "numpy" in lines[0] and "pyref" in lines[0]
    assert "pip install" in lines[0]
    assert lines[1].startswith("DeviceNotFoundError") and "pyref:cpu:0" in lines[1]
    assert lines[2].startswith("DeviceNotFoundError") and "numpy:cpu:0" in lines[2]
    assert lines[3].startswith("ValueError") and "backend[:kind[:index]]" in lines[3]
    assert tw_cli(plugin_path, "devices").returncode == 0


def test_disable_plugins_env(plugin_path: Path) -> None:
    records = devices_json(plugin_path, TENSORWEAVER_DISABLE_PLUGINS="brokenimport,brokenapi")
    assert "brokenimport" not in records and "brokenapi" not in records
    assert "pyref:cpu:0" in records
    everything = devices_json(plugin_path, TENSORWEAVER_DISABLE_PLUGINS="all")
    assert list(everything) == ["numpy:cpu:0"]
    result = run(
        plugin_path,
        """
        import tensorweaver as tw
        try:
            tw.set_backend("pyref")
        except tw.PluginError as exc:
            print(exc)
    """,
        TENSORWEAVER_DISABLE_PLUGINS="pyref",
    )
    assert "disabled by TENSORWEAVER_DISABLE_PLUGINS" in result.stdout


def test_backend_env_sets_the_default(plugin_path: Path) -> None:
    code = "import tensorweaver as tw; print(tw.get_backend())"
    assert run(plugin_path, code, TENSORWEAVER_BACKEND="pyref").stdout.strip() == "pyref:cpu:0"
    assert run(plugin_path, code).stdout.strip() == "numpy:cpu:0"
    bad = run(plugin_path, code, TENSORWEAVER_BACKEND="nope")
    assert "UnknownBackendError" in bad.stderr and "TENSORWEAVER_BACKEND='nope'" in bad.stderr


def test_device_scope_is_per_thread_and_per_task(plugin_path: Path) -> None:
    result = run(
        plugin_path,
        """
        import asyncio, threading
        import tensorweaver as tw
        seen = {}
        def other_thread():
            seen["thread"] = tw.get_backend().name
        async def task(name, spec):
            if spec:
                with tw.device(spec):
                    await asyncio.sleep(0.01)
                    seen[name] = tw.get_backend().name
            else:
                await asyncio.sleep(0.005)
                seen[name] = tw.get_backend().name
        async def main():
            await asyncio.gather(task("scoped", "pyref"), task("unscoped", None))
        with tw.device("pyref"):
            t = threading.Thread(target=other_thread); t.start(); t.join()
            seen["inside"] = tw.get_backend().name
        seen["after"] = tw.get_backend().name
        asyncio.run(main())
        print(sorted(seen.items()))
    """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(
        sorted(
            {
                "thread": "numpy:cpu:0",
                "inside": "pyref:cpu:0",
                "after": "numpy:cpu:0",
                "scoped": "pyref:cpu:0",
                "unscoped": "numpy:cpu:0",
            }.items()
        )
    )


def test_auto_prefers_numpy_among_cpus_and_use_cpu(plugin_path: Path) -> None:
    result = run(
        plugin_path,
        """
        import tensorweaver as tw
        print(tw.set_backend("auto"))
        tw.set_backend("pyref")
        print(tw.use_cpu())
        try:
            tw.use_gpu()
        except tw.DeviceNotFoundError as exc:
            print("no gpu:", exc)
    """,
    )
    lines = result.stdout.splitlines()
    assert lines[:2] == ["numpy:cpu:0", "pyref:cpu:0"]
    assert lines[2].startswith("no gpu:") and "numpy:cpu:0" in lines[2]


def test_version_lists_core_and_plugins(plugin_path: Path) -> None:
    result = tw_cli(plugin_path, "--version")
    assert result.returncode == 0
    assert result.stdout.startswith("tensorweaver 0.2.0")
    assert "numpy: tensorweaver-numpy 0.2.0" in result.stdout
    assert "pyref: tw-example-good 0.1.0" in result.stdout
    assert "brokenapi: tw-broken-api 0.1.0 [error:" in result.stdout


def test_import_loads_no_plugin_and_no_heavy_library(plugin_path: Path) -> None:
    result = run(
        plugin_path,
        """
        import sys
        import tensorweaver
        heavy = {"torch", "cupynumeric", "legate", "tw_example_good", "tw_broken_import"}
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
    """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
