"""The kit fails a plugin that imports its array library when its plugin module is imported,
and says which library, and that the plugin then breaks where the library is missing."""

from __future__ import annotations


def test_eager_import_is_named(broken, tmp_path):
    # Its backend is the torch plugin's, checked in full elsewhere: packaging is the point.
    run = broken.kit("eager", tmp_path, "-k", "packaging or primitive/add/float32")
    assert run.returncode != 0
    assert sorted(run.failures) == ["packaging/light-import", "packaging/missing-library"]
    light = run.failures["packaging/light-import"]
    assert "importing tw_conformance_broken.eager also imported" in light
    assert "torch" in light.split("also imported")[1].split(";")[0]
    assert "No module named 'torch'" in run.failures["packaging/missing-library"]
    assert run.outcomes["primitive/add/float32"] == "passed"
