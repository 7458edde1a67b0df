"""``tw doctor``: the core's checks, every plugin's ``tw_diagnose``, text and JSON.

The command runs as a subprocess over the project's plugins and, where a test needs them,
two third-party backends installed by pip as a real distribution (tests/cli/plugins/), a
fake ``nvidia-smi`` first on PATH and thread settings in the environment.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from pip_targets import pip_target
from tensorweaver.cli import format_table
from tensorweaver.contract.records import SEVERITIES, DeviceRecord, Diagnosis, Problem
from tensorweaver.doctor import Report, Section, as_diagnosis, checks, render
from tensorweaver_torch import diagnosis

PROJECT_PLUGINS = {"numpy", "torch", "cunumeric"}
FAKES = Path(__file__).parent / "plugins" / "tw-doctor-fakes"
#: What a machine with an NVIDIA driver for CUDA 12.4 and two GPUs prints.
FAKE_SMI = textwrap.dedent(
    """\
    #!/bin/sh
    if [ "$1" = "-L" ]; then
      echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)"
      echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0001)"
    else
      echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |"
    fi
    """
)
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def doctor(*args: str, pythonpath: str = "", **environ: str) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TENSORWEAVER_", "OMP_", "MKL_", "OPENBLAS_")) and k != "PYTHONPATH"
    }
    env.update(PYTHONPATH=pythonpath, **environ)
    command = [sys.executable, "-m", "tensorweaver.cli", "doctor", *args]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def by_name(report: dict) -> dict[str, dict]:
    return {section["name"]: section for section in report["sections"]}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a troubled machine: the fake backends installed, a fake
    nvidia-smi first on PATH, OpenMP asked for more threads than there are cores, and
    cuPyNumeric disabled."""
    root = tmp_path_factory.mktemp("doctor")
    installed = pip_target(tmp_path_factory, FAKES)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    return {
        "pythonpath": str(installed),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "OMP_NUM_THREADS": str(CORES * 8),
        "TENSORWEAVER_DISABLE_PLUGINS": "cunumeric",
    }


@pytest.fixture(scope="module")
def troubled(machine: dict[str, str]) -> dict:
    result = doctor("--json", **machine)
    # The raising hook is an error: the command says so in its exit status.
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def test_json_schema_names_the_plugins_with_their_versions(troubled: dict) -> None:
    assert set(troubled) == {"tensorweaver", "worst", "sections", "fixes"}
    assert troubled["tensorweaver"] == importlib.metadata.version("tensorweaver")
    assert troubled["sections"][0]["name"] == "core"
    sections = by_name(troubled)
    assert PROJECT_PLUGINS <= set(sections)
    for name in PROJECT_PLUGINS:
        section = sections[name]
        distribution = f"tensorweaver-{name}"
        assert section["distribution"] == distribution
        assert section["version"] == importlib.metadata.version(distribution)
    for name in PROJECT_PLUGINS - {"cunumeric"}:  # cunumeric is disabled here
        assert sections[name]["status"] == "ok"
        handshake = sections[name]["findings"][0]
        assert (handshake["subject"], handshake["severity"]) == ("plugin", "ok")
        assert "backend API" in handshake["message"] and "accepted" in handshake["message"]
    for section in troubled["sections"]:
        assert set(section) == {"name", "distribution", "version", "status", "findings"}
        for finding in section["findings"]:
            assert set(finding) == {"subject", "severity", "message", "fix"}
            assert finding["severity"] in SEVERITIES and finding["message"]
            assert finding["fix"] is None or finding["fix"]
    assert troubled["worst"] in SEVERITIES


def test_numpy_reports_its_blas(troubled: dict) -> None:
    import numpy

    blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    (finding,) = [f for f in by_name(troubled)["numpy"]["findings"] if f["subject"] == "BLAS"]
    assert blas in finding["message"] and "threads" in finding["message"]


def test_third_party_diagnoses_are_shown(troubled: dict) -> None:
    section = by_name(troubled)["docgood"]
    assert (section["distribution"], section["version"]) == ("tw-doctor-fakes", "0.7.1")
    findings = {f["subject"]: f for f in section["findings"]}
    assert findings["library"]["severity"] == "ok"
    assert findings["firmware"]["severity"] == "warning"
    assert findings["firmware"]["fix"] == "fakectl update-firmware"
    # A plain Problem, as plugins gave before Diagnosis existed, is a warning.
    assert findings["problem"] == {
        "subject": "problem",
        "severity": "warning",
        "message": "an old-style problem",
        "fix": "fakectl repair",
    }
    assert {"fakectl update-firmware", "fakectl repair"} <= set(troubled["fixes"])


def test_a_raising_hook_is_reported_not_a_crash(troubled: dict) -> None:
    section = by_name(troubled)["docraise"]
    assert section["status"] == "error"
    (handshake, hook) = section["findings"]
    assert hook["severity"] == "error" and hook["subject"] == "tw_diagnose"
    assert "RuntimeError: the firmware query crashed" in hook["message"]
    assert "TENSORWEAVER_DISABLE_PLUGINS=docraise" in hook["fix"]
    assert troubled["worst"] == "error"
    assert by_name(troubled)["docgood"]["status"] == "ok"  # the others go on


@pytest.mark.skipif(
    torch.version.cuda is not None or torch.version.hip is not None, reason="a GPU build of torch"
)
def test_cpu_only_torch_on_a_machine_with_a_driver_gets_the_matching_wheel(troubled: dict) -> None:
    findings = {f["subject"]: f for f in by_name(troubled)["torch"]["findings"]}
    assert "CPU-only build" in findings["build"]["message"]
    assert "550.54.15" in findings["driver"]["message"]
    assert "CUDA 12.4" in findings["driver"]["message"]
    devices = findings["devices"]
    assert devices["severity"] == "warning" and "CPU-only" in devices["message"]
    release = torch.__version__.split("+")[0]
    fix = f"pip install torch=={release} --index-url https://download.pytorch.org/whl/cu124"
    assert devices["fix"] == fix
    assert fix in troubled["fixes"]


def test_oversubscribed_threads_are_found(troubled: dict) -> None:
    threads = [f for f in troubled["sections"][0]["findings"] if f["subject"] == "threads"]
    (warning,) = [f for f in threads if "OMP_NUM_THREADS" in f["message"]]
    assert warning["severity"] == "warning"
    assert f"{CORES * 8} threads on {CORES} cores" in warning["message"]
    assert warning["fix"] == f"export OMP_NUM_THREADS={CORES}"


def test_a_disabled_plugin_says_how_to_enable_it(troubled: dict) -> None:
    section = by_name(troubled)["cunumeric"]
    assert section["status"] == "disabled"
    (finding,) = section["findings"]
    assert finding["severity"] == "info" and "disabled" in finding["message"]
    assert finding["fix"] == "unset TENSORWEAVER_DISABLE_PLUGINS"


def test_text_names_every_part_and_ends_with_a_verdict() -> None:
    result = doctor()
    assert result.returncode == 0, result.stderr  # no plugin of the project is broken
    text = result.stdout
    assert text.startswith(f"core (tensorweaver {importlib.metadata.version('tensorweaver')})")
    for name in PROJECT_PLUGINS:
        distribution = f"tensorweaver-{name}"
        assert f"\n{name} ({distribution} {importlib.metadata.version(distribution)})\n" in text
    last = text.rstrip().splitlines()
    assert last[-1] == "No problems found." or "To fix them:" in last


def test_text_puts_each_fix_under_its_finding_and_lists_them_all() -> None:
    report = Report(
        [
            Section(
                "core", "tensorweaver", "9.9", "ok", [Diagnosis("fine", subject="a", severity="ok")]
            ),
            Section(
                "mylib",
                "tw-mylib",
                "1.0",
                "error",
                [
                    Diagnosis("slow", "mylib tune", "speed", "warning"),
                    Diagnosis("broken", "pip install -U tw-mylib", "hook", "error"),
                ],
            ),
        ]
    )
    lines = render.as_text(report).splitlines()
    assert lines[0] == "core (tensorweaver 9.9)"
    assert lines[1].split() == ["ok", "a", "fine"]
    at = lines.index("mylib (tw-mylib 1.0)")
    assert lines[at + 1].split() == ["warning", "speed", "slow"]
    assert lines[at + 2].strip() == "fix: mylib tune"
    assert lines[-4:] == [
        "Found 1 error and 1 warning.",
        "To fix them:",
        "  pip install -U tw-mylib",
        "  mylib tune",
    ]
    assert report.worst() == "error"


@pytest.mark.skipif(CORES < 2, reason="one core cannot be oversubscribed by pools")
def test_pools_that_each_take_every_core_need_passive_waiting() -> None:
    pools = [
        {
            "user_api": "blas",
            "internal_api": "openblas",
            "prefix": "libopenblas",
            "num_threads": CORES,
        },
        {"user_api": "openmp", "internal_api": "openmp", "prefix": "libgomp", "num_threads": CORES},
    ]
    (*_, spinning) = checks.threads(pools, {"OMP_WAIT_POLICY": "ACTIVE"})
    assert spinning.severity == "warning" and "oversubscribe" in spinning.message
    assert spinning.fix == "export OMP_WAIT_POLICY=PASSIVE"
    (*_, passive) = checks.threads(pools, {"OMP_WAIT_POLICY": "passive"})
    assert passive.severity == "ok"
    (*_, alone) = checks.threads(pools[:1], {})
    assert alone.severity == "ok"
    blas_only = [pools[0], {**pools[0], "internal_api": "mkl", "prefix": "libmkl_rt"}]
    (*_, no_spinning) = checks.threads(blas_only, {"OMP_WAIT_POLICY": "ACTIVE"})
    assert no_spinning.severity == "ok"
    too_many = [{**pools[1], "num_threads": CORES + 1}]
    assert any(
        d.severity == "warning" and d.fix == f"export OMP_NUM_THREADS={CORES}"
        for d in checks.threads(too_many, {"OMP_WAIT_POLICY": "PASSIVE"})
    )


def test_devices_detail_is_key_value_words() -> None:
    record = DeviceRecord(
        "x:cpu:0", "x", "cpu", detail={"config": {"source": "a default", "gpus": 0}, "n": 1}
    )
    row = format_table([record]).splitlines()[1]
    assert row.endswith("config.source='a default' config.gpus=0 n=1")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a real NVIDIA driver")
def test_devices_shows_cunumerics_config_as_key_value() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORWEAVER_")}
    env["TENSORWEAVER_DISABLE_PLUGINS"] = "torch"
    out = subprocess.run(
        [sys.executable, "-m", "tensorweaver.cli", "devices"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    ).stdout
    (row,) = [line for line in out.splitlines() if line.startswith("cunumeric:")]
    assert "config.LEGATE_CONFIG='" in row and "{" not in row


# The torch plugin's other cases, in this process: a driver and its GPUs are simulated.
DRIVER_124 = diagnosis.Driver(version="550.54.15", cuda=(12, 4), gpus=("NVIDIA H100",))


def torch_findings(monkeypatch: pytest.MonkeyPatch, **environ: str) -> dict[str, Diagnosis]:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return {d.subject: d for d in diagnosis.diagnose()}


def test_torch_built_for_a_newer_cuda_than_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diagnosis, "nvidia_driver", lambda: DRIVER_124)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    devices = torch_findings(monkeypatch)["devices"]
    assert devices.severity == "warning" and "newer than the driver's CUDA 12.4" in devices.message
    assert devices.fix.endswith("--index-url https://download.pytorch.org/whl/cu124")


def test_torch_gpus_hidden_by_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diagnosis, "nvidia_driver", lambda: DRIVER_124)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    devices = torch_findings(monkeypatch, CUDA_VISIBLE_DEVICES="")["devices"]
    assert devices.severity == "warning" and "CUDA_VISIBLE_DEVICES=''" in devices.message
    assert devices.fix == "unset CUDA_VISIBLE_DEVICES"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    devices = torch_findings(monkeypatch)["devices"]
    assert (devices.severity, devices.message) == ("ok", "2 GPUs usable as torch:cuda:0..1")


def test_a_failing_nvidia_smi_is_a_problem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\necho "NVIDIA-SMI has failed: couldn\'t talk to the driver"\nexit 9\n'
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    driver = torch_findings(monkeypatch)["driver"]
    assert driver.severity == "warning" and "exit code 9" in driver.message
    assert "NVIDIA-SMI has failed" in driver.message and driver.fix == diagnosis.DRIVER_FIX


@pytest.mark.parametrize(
    "driver, index",
    [((12, 5), "cu124"), ((12, 6), "cu126"), ((13, 2), "cu130"), ((11, 4), None), (None, None)],
)
def test_the_wheel_index_is_the_newest_the_driver_runs(driver, index) -> None:
    found = diagnosis.cuda_index(driver)
    assert found == (None if index is None else f"https://download.pytorch.org/whl/{index}")


def test_a_plugins_own_severity_word_is_taken_as_a_problem() -> None:
    odd = as_diagnosis(Diagnosis("odd", "fixit", "x", "fatal"))
    assert (odd.severity, odd.message, odd.fix) == ("warning", "odd (severity 'fatal')", "fixit")
    plain = as_diagnosis(Problem("old", "fixit"))
    assert (plain.subject, plain.severity) == ("problem", "warning")
