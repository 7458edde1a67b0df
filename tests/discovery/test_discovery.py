"""Discovery through real installed distributions: what `tw.plugins()`, `tw devices` and
`tw --version` report, for a complete third-party plugin and for broken ones."""

from __future__ import annotations

import sys

import pytest

if sys.version_info >= (3, 10):
    from importlib.metadata import entry_points
else:
    from importlib_metadata import entry_points

import tensorweaver
from tensorweaver.contract.api import API_VERSION

PLUGIN_STATUSES = """
    import dataclasses, json, tensorweaver as tw
    print(json.dumps({p.distribution: dataclasses.asdict(p) for p in tw.plugins()}))
"""


def test_third_party_plugin_is_discovered(good) -> None:
    statuses = good.json(PLUGIN_STATUSES)
    assert statuses["tw-example-good"] == {
        "name": "pyref",
        "distribution": "tw-example-good",
        "version": "0.1.0",
        "status": "ok",
        "error": "",
        "fix": "",
        "api_version": "2.0",
    }
    assert statuses["tensorweaver-numpy"]["status"] == "ok"


@pytest.mark.parametrize("via", ["script", "module"])
def test_tw_devices_lists_the_third_party_device(good, via: str) -> None:
    table = good.tw("devices", via=via).stdout.splitlines()
    assert table[0].split() == ["DEVICE", "KIND", "STATUS", "DETAIL"]
    rows = {line.split()[0]: line.split()[1:3] for line in table[1:]}
    assert rows["pyref:cpu:0"] == ["cpu", "available"]
    assert rows["numpy:cpu:0"] == ["cpu", "available"]


def test_tw_devices_json_passes_the_probe_flag_to_the_hook(good) -> None:
    expected = {
        "name": "pyref:cpu:0",
        "backend": "pyref",
        "kind": "cpu",
        "index": 0,
        "status": "available",
    }
    for flags, probed in [((), False), (("--probe",), True)]:
        # --probe creates every available backend; keep Legate's runtime and torch (which
        # `tw devices` imports for its devices, ~3 s of CPU a run) out of it.
        record = good.devices(*flags, TENSORWEAVER_DISABLE_PLUGINS="cunumeric,torch")["pyref:cpu:0"]
        assert record == {**expected, "detail": {"probe": probed}}


@pytest.fixture(scope="module")
def mixed_records(mixed) -> dict[str, dict]:
    return mixed.devices()


API_TEXT = ".".join(map(str, API_VERSION))  # the core's own version, "2.4"
# backend, distribution, words the error names, words the fix names
BROKEN = [
    (
        "brokenimport",
        "tw-broken-import",
        ["ModuleNotFoundError", "a_module_that_does_not_exist"],
        ["TENSORWEAVER_DISABLE_PLUGINS=brokenimport"],
    ),
    ("brokenapi", "tw-broken-api", ["'99.0'", API_TEXT, "major"], [f"backend API {API_TEXT}"]),
    (
        "brokenhook",
        "tw-broken-hook",
        ["tw_devices", "RuntimeError", "driver query failed"],
        ["tw-broken-hook"],
    ),
    (
        "pyref",
        "tw-shadow-duplicate",
        ["duplicates backend name 'pyref'", "tw-example-good"],
        ["pip uninstall tw-shadow-duplicate"],
    ),
]


@pytest.mark.parametrize(
    "backend, distribution, error_words, fix_words", BROKEN, ids=[case[1] for case in BROKEN]
)
def test_broken_plugin_is_a_row_with_its_cause_and_fix(
    mixed_records, backend: str, distribution: str, error_words: list, fix_words: list
) -> None:
    (record,) = [
        r
        for r in mixed_records.values()
        if r["status"] == "error" and r["detail"]["distribution"] == distribution
    ]
    assert (record["name"], record["backend"], record["kind"]) == (backend, backend, "-")
    for word in error_words:
        assert word in record["detail"]["error"]
    for word in fix_words:
        assert word in record["detail"]["fix"]


def test_broken_plugins_leave_the_others_working(mixed_records) -> None:
    assert mixed_records["numpy:cpu:0"]["status"] == "available"
    assert mixed_records["pyref:cpu:0"]["status"] == "available"
    # Without a probe the incomplete backend object has not been created, so it looks fine.
    assert mixed_records["brokenmissing:cpu:0"]["status"] == "available"


def test_probe_finds_missing_primitives(mixed) -> None:
    # Legate's runtime and torch (~3 s of CPU a run) are not what is probed here.
    records = mixed.devices("--probe", TENSORWEAVER_DISABLE_PLUGINS="cunumeric,torch")
    assert "brokenmissing:cpu:0" not in records
    missing = records["brokenmissing"]
    assert missing["status"] == "error"
    lacking = missing["detail"]["error"].split("lacks required primitives: ")[1].split(", ")
    assert "matmul" in lacking and "add" not in lacking  # it does define add
    assert "tw-broken-missing" in missing["detail"]["fix"]
    assert records["pyref:cpu:0"]["status"] == "available"


def test_table_shows_each_broken_plugin_without_a_traceback(mixed) -> None:
    rows = mixed.tw("devices").stdout.splitlines()[1:]
    errors = {line.split()[0] for line in rows if line.split()[2] == "error"}
    assert errors == {"brokenimport", "brokenapi", "brokenhook", "pyref"}
    assert all("-- fix: " in line for line in rows if line.split()[2] == "error")


def test_version_lists_core_and_every_plugin(mixed) -> None:
    lines = mixed.tw("--version").stdout.splitlines()
    assert lines[0] == f"tensorweaver {tensorweaver.__version__}"
    # The project's own plugins, read from this environment's metadata.
    for ep in entry_points(group="tensorweaver.backends"):
        assert f"  {ep.name}: {ep.dist.name} {ep.dist.version}" in lines
    assert "  pyref: tw-example-good 0.1.0" in lines
    (api,) = [line for line in lines if line.startswith("  brokenapi:")]
    assert api.startswith("  brokenapi: tw-broken-api 0.1.0 [error: ")


def test_import_loads_no_plugin_module_and_no_heavy_library(everything) -> None:
    # tw-broken-eager imports torch at module top: listing the plugins must show it,
    # so an empty list after `import tensorweaver` means no plugin module was imported.
    before, after = everything.json("""
        import json, sys
        watch = {"torch", "cupynumeric", "legate", "tensorweaver_numpy", "tensorweaver_torch",
                 "tensorweaver_cunumeric", "tw_example_good", "tw_broken_eager"}
        loaded = lambda: sorted({m.split(".")[0] for m in sys.modules} & watch)
        import tensorweaver as tw
        before = loaded()
        tw.plugins()
        print(json.dumps([before, loaded()]))
    """)
    assert before == []
    assert {"torch", "tw_broken_eager", "tw_example_good", "tensorweaver_numpy"} <= set(after)
