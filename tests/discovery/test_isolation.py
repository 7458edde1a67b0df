"""Plugins that end or hang the process asking them, installed for real: `tw devices`,
`tw --version` and `auto` still finish in bounded time and name each one's fault and fix;
discovery in the program's own process survives a plugin's `sys.exit`."""

from __future__ import annotations

import json
import sys
import time

import pytest
from tensorweaver import cli, isolation

# The project's own plugins are left out: torch's cold import would eat into the short
# timeouts here, and a real CUDA device would rightly win `auto`.
ONLY_TEST_PLUGINS = {"TENSORWEAVER_DISABLE_PLUGINS": "torch,cunumeric"}
DISABLE = "TENSORWEAVER_DISABLE_PLUGINS="
# A timeout that a working test plugin meets easily, even on a busy machine.
SHORT = 4
# What the bounded commands may take beyond the timeout: starting Python twice, discovery.
SLACK = 15

# backend, distribution, words the error names
FATAL = [
    ("brokensegv", "tw-broken-segfault", ["crashed with SIGSEGV", "in its tw_devices hook"]),
    ("brokenabort", "tw-broken-abort", ["crashed with SIGABRT", "in its tw_devices hook"]),
    ("brokenexit", "tw-broken-exit", ["failed to load", "SystemExit", "sys.exit(3)"]),
]
HANG = ("brokensleep", "tw-broken-sleep", [f"did not answer within {SHORT} s", "tw_devices"])


def assert_error(record: dict, backend: str, distribution: str, words: list) -> None:
    assert (record["status"], record["kind"]) == ("error", "-")
    assert record["detail"]["distribution"] == distribution
    for word in words:
        assert word in record["detail"]["error"]
    assert f"{DISABLE}{backend}" in record["detail"]["fix"]
    assert distribution in record["detail"]["fix"]


def assert_working(records: dict) -> None:
    for name in ["numpy:cpu:0", "pyref:cpu:0", "fakeaccel:gpu:0", "fakeaccel:cpu:0"]:
        assert records[name]["status"] == "available", name


def test_tw_devices_names_each_fatal_plugin_and_lists_the_rest(fatal) -> None:
    result = fatal.tw("devices", "--json", **ONLY_TEST_PLUGINS)
    records = {r["name"]: r for r in json.loads(result.stdout)}
    for backend, distribution, words in FATAL:
        assert_error(records[backend], backend, distribution, words)
    assert_working(records)
    # What the plugin printed before it crashed went to stderr, not into the JSON.
    assert "brokensegv: querying the driver (tw_devices)" in result.stderr


def test_tw_devices_table_shows_each_fault_with_its_fix(fatal) -> None:
    rows = fatal.tw("devices", **ONLY_TEST_PLUGINS).stdout.splitlines()[1:]
    errors = {line.split()[0]: line for line in rows if line.split()[2] == "error"}
    assert set(errors) == {backend for backend, _, _ in FATAL}
    assert all("-- fix: " in line for line in errors.values())


def test_probe_contains_a_crash_at_import_and_an_exit_in_create(fatal) -> None:
    records = fatal.devices(
        "--probe",
        TW_BROKEN_SEGFAULT_AT="import",
        TW_BROKEN_EXIT_AT="tw_create_backend",
        **ONLY_TEST_PLUGINS,
    )
    segv = ["crashed with SIGSEGV (Segmentation fault) while being imported"]
    assert_error(records["brokensegv"], "brokensegv", "tw-broken-segfault", segv)
    created = ["hook tw_create_backend raised SystemExit: it called sys.exit(3)"]
    assert_error(records["brokenexit"], "brokenexit", "tw-broken-exit", created)
    assert "brokenexit:cpu:0" not in records
    assert_working(records)


def test_version_survives_exit_and_crash_at_import(fatal) -> None:
    lines = fatal.tw("--version", TW_BROKEN_SEGFAULT_AT="import").stdout.splitlines()
    assert "  pyref: tw-example-good 0.1.0" in lines
    assert "  brokenabort: tw-broken-abort 0.1.0" in lines  # it aborts only when listing
    (exit_line,) = [line for line in lines if line.startswith("  brokenexit:")]
    assert exit_line.startswith("  brokenexit: tw-broken-exit 0.1.0 [error: failed to load")
    assert "sys.exit(3)" in exit_line
    (segv_line,) = [line for line in lines if line.startswith("  brokensegv:")]
    assert "crashed with SIGSEGV" in segv_line and "while being imported" in segv_line


def test_tw_devices_gives_up_on_a_hanging_plugin_after_the_timeout(hanging) -> None:
    start = time.monotonic()
    result = hanging.tw("devices", "--json", "--timeout", str(SHORT), **ONLY_TEST_PLUGINS)
    assert time.monotonic() - start < SHORT + SLACK
    records = {r["name"]: r for r in json.loads(result.stdout)}
    backend, distribution, words = HANG
    assert_error(records[backend], backend, distribution, words)
    assert "--timeout" in records[backend]["detail"]["fix"]
    for backend, distribution, words in FATAL:
        assert_error(records[backend], backend, distribution, words)
    assert_working(records)


AUTO = """
    import json, warnings
    import tensorweaver as tw
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = {"auto": tw.set_backend("auto").name, "use_gpu": tw.use_gpu().name}
    out["warnings"] = sorted({str(w.message) for w in caught})
    out["sum"] = tw.ones(3).sum().item()
    print(json.dumps(out))
"""


def test_auto_skips_plugins_that_crash_hang_or_exit_and_says_so(hanging) -> None:
    start = time.monotonic()
    out = hanging.json(AUTO, TENSORWEAVER_PLUGIN_TIMEOUT=str(SHORT), **ONLY_TEST_PLUGINS)
    assert time.monotonic() - start < SHORT + SLACK
    assert (out["auto"], out["use_gpu"], out["sum"]) == ("fakeaccel:gpu:0", "fakeaccel:gpu:0", 3)
    for backend, distribution, words in [*FATAL, HANG]:
        (warning,) = [w for w in out["warnings"] if f"skipped {backend!r} " in w]
        assert distribution in warning and "Fix: " in warning
        assert all(word in warning for word in words)


ASKED_HERE = """
    import json, os, tensorweaver as tw
    from tensorweaver import isolation
    {first}
    (record,) = [r for r in isolation.probed_devices() if r.backend == "brokenexit"]
    print(json.dumps(record.detail["pid"] == os.getpid()))
"""


@pytest.mark.parametrize("used_first", [False, True])
def test_auto_asks_a_plugin_already_in_use_in_this_process(exiting, used_first: bool) -> None:
    # A child would set up a used plugin's library a second time (Legate's runtime).
    first = 'tw.set_backend("brokenexit")' if used_first else ""
    code = ASKED_HERE.format(first=first)
    here = exiting.json(code, TW_BROKEN_EXIT_AT="nowhere", **ONLY_TEST_PLUGINS)
    assert here is used_first


ASK = """
    import json, tensorweaver as tw
    out = {"devices": {r.backend: r.detail.get("error", r.status) for r in tw.devices()},
           "plugins": {p.name: p.error or p.status for p in tw.plugins()}}
    try:
        tw.set_backend("brokenexit")
    except tw.PluginError as exc:
        out["select"] = str(exc)
    out["after"] = tw.set_backend("pyref").name
    print(json.dumps(out))
"""
INTERRUPTED = """
    import json, tensorweaver as tw
    try:
        tw.devices()
        tw.set_backend("brokenexit")
    except KeyboardInterrupt:
        print(json.dumps("interrupted"))
"""


@pytest.mark.parametrize(
    "step, error",
    [
        ("import", "failed to load (SystemExit: it called sys.exit(3))"),
        ("tw_backend_info", "failed to load (SystemExit: it called sys.exit(3))"),
        ("tw_devices", "hook tw_devices raised SystemExit: it called sys.exit(3)"),
        ("tw_create_backend", "hook tw_create_backend raised SystemExit: it called sys.exit(3)"),
    ],
)
def test_in_process_discovery_survives_sys_exit_but_not_ctrl_c(
    exiting, step: str, error: str
) -> None:
    out = exiting.json(ASK, TW_BROKEN_EXIT_AT=step, **ONLY_TEST_PLUGINS)
    assert "tw-broken-exit" in out["select"] and error in out["select"]
    assert "Fix:" in out["select"] and f"{DISABLE}brokenexit" in out["select"]
    assert out["after"] == "pyref:cpu:0"
    # Listing it needs no backend object: only an exit before that shows there.
    assert out["devices"]["brokenexit"] == ("available" if step == "tw_create_backend" else error)
    assert out["plugins"]["brokenexit"] == ("ok" if step == "tw_create_backend" else error)
    interrupt = {"TW_BROKEN_EXIT_AT": step, "TW_BROKEN_EXIT_WITH": "interrupt"}
    assert exiting.json(INTERRUPTED, **interrupt, **ONLY_TEST_PLUGINS) == "interrupted"


def test_timeout_comes_from_the_option_then_the_environment(monkeypatch, capsys) -> None:
    monkeypatch.delenv(isolation.TIMEOUT_ENV, raising=False)
    assert isolation.timeout_seconds() == isolation.DEFAULT_TIMEOUT
    monkeypatch.setenv(isolation.TIMEOUT_ENV, "7.5")
    assert (isolation.timeout_seconds(), isolation.timeout_seconds(2)) == (7.5, 2)
    for bad in ["soon", "0", "-1", "nan"]:
        monkeypatch.setenv(isolation.TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=f"{isolation.TIMEOUT_ENV}='{bad}'"):
            isolation.timeout_seconds()
        with pytest.raises(SystemExit):
            cli.main(["devices"])
        assert f"{isolation.TIMEOUT_ENV}='{bad}'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["devices", "--timeout", "0"])
    assert "positive number of seconds" in capsys.readouterr().err


def test_tw_check_reports_fatal_plugins_broken_and_checks_the_rest(fatal) -> None:
    result = fatal.run(
        sys.executable,
        "-m",
        "tensorweaver.cli",
        "check",
        "--only",
        "primitive/add/*",
        **ONLY_TEST_PLUGINS,
    )
    output = result.stdout + result.stderr
    assert result.returncode not in (-11, -6), output  # not killed by a plugin's crash
    for backend, _, words in FATAL:
        assert backend in output and words[0] in output, output
    assert "numpy" in output and "pyref" in output
