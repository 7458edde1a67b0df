"""The documentation site builds with warnings as errors and every example on it runs.

``docs/`` is built here as CI builds it: the HTML with ``-W`` (a broken reference, a bad
include or a docstring Sphinx cannot read fails), then ``sphinx.ext.doctest`` runs every
``>>>`` example on the pages against the installed package, so the site cannot drift from
the code. The generated tables are checked to hold what the code holds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tensorweaver.contract import ir

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _build(builder: str, out: Path, doctrees: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder,
         "-d", str(doctrees), str(DOCS), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def doctrees(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The parsed pages, shared by this worker's two builds as ``make`` shares them: the
    second build reads no page again (the first, with ``-W``, fails on a page's warning)."""
    return tmp_path_factory.mktemp("doctrees")


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory, doctrees: Path) -> Path:
    out = tmp_path_factory.mktemp("html")
    result = _build("html", out, doctrees)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_every_example_on_the_site_runs(tmp_path: Path, doctrees: Path) -> None:
    result = _build("doctest", tmp_path, doctrees)
    report = (tmp_path / "output.txt").read_text()
    assert result.returncode == 0, report + result.stderr
    assert " 0 failures in tests" in report
    assert int(report.split(" tests\n")[0].split()[-1]) >= 20  # the examples were found


def test_the_ir_table_lists_every_primitive_and_composite(html: Path) -> None:
    page = (html / "plugins.html").read_text()
    for name in [*ir.PRIMITIVES, *ir.COMPOSITES, *ir.OPTIONAL]:
        assert f'<span class="pre">{name}' in page, name


def test_the_hookspecs_are_documented(html: Path) -> None:
    page = (html / "plugins.html").read_text()
    for hook in ("tw_backend_info", "tw_devices", "tw_create_backend"):
        assert hook in page


def test_the_compatibility_table_is_generated_from_the_code(html: Path) -> None:
    page = (html / "compatibility.html").read_text()
    assert "torch.nn.functional" in page
    assert "tensorweaver.tensor.Size" in page  # a "Differs from PyTorch:" docstring


def test_the_cli_page_is_the_commands_own_help(html: Path) -> None:
    page = (html / "cli.html").read_text()
    assert "usage: tw" in page
    assert "--backend" in page
