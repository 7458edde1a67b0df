"""A half-done plugin: the kit checks its packaging and handshake without creating its
backend, so they pass or fail on their own; a non-string api_version gets the fix that
spells it."""

from __future__ import annotations


def test_packaging_passes_when_the_backend_cannot_be_created(broken, tmp_path):
    run = broken.kit("nocreate", tmp_path, "-k", "packaging or primitive/add/float32")
    assert run.returncode != 0
    assert sorted(run.failures) == ["packaging/backend-object", "primitive/add/float32"]
    assert "cannot open nocreate:cpu:0: no device handle" in run.failures["primitive/add/float32"]
    for check in ("entry-point", "light-import", "api-version", "device-records", "diagnose"):
        assert run.outcomes[f"packaging/{check}"] == "passed"


def test_an_int_api_version_gets_the_string_to_declare(broken, tmp_path):
    run = broken.kit("intapi", tmp_path, "-k", "packaging")
    message = run.failures["packaging/api-version"]
    assert "speaks backend API 2, this tensorweaver speaks 2." in message
    assert 'declare api_version = "2.0" (a string "MAJOR.MINOR")' in message
    assert "a tensorweaver that speaks" not in message
    for check in ("entry-point", "light-import", "contract-only-imports"):
        assert run.outcomes[f"packaging/{check}"] == "passed"


def test_api_version_must_be_the_string_major_minor():
    from tensorweaver import registry

    assert registry.api_mismatch(f"{registry.API_VERSION[0]}.0") == ""
    for declared in (2, 2.0, "2", None):
        assert registry.api_mismatch(declared).startswith('not a string of the form "MAJOR.MINOR"')
    assert [registry.intended_api(v) for v in (2, 2.0, "2", " 3 ")] == ["2.0"] * 3 + ["3.0"]
    assert registry.intended_api(None) == registry.api_text()
