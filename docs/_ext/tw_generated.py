"""Sphinx directives whose content is read from the code at build time, so the site cannot
drift from it: the IR table (``contract/ir.py``), the PyTorch-compatibility table (the name
list of ``scripts/api_coverage.py`` resolved against the installed tensorweaver, and every
docstring line that starts with ``Differs from PyTorch:``), and the CLI's ``--help`` text.

Each directive builds reStructuredText and hands it to Sphinx's own parser (no HTML by hand).
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import sys
from contextlib import redirect_stdout
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[2]
MARKER = "Differs from PyTorch:"


def _parse(directive: SphinxDirective, lines: list[str]) -> list[nodes.Node]:
    container = nodes.section()
    container.document = directive.state.document
    directive.state.nested_parse(StringList(lines, "<generated>"), 0, container)
    return list(container.children)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


class IRTable(SphinxDirective):
    """``.. tw-ir-table::`` — every primitive, composite and optional method of the IR."""

    def run(self) -> list[nodes.Node]:
        from tensorweaver.contract import ir
        from tensorweaver.contract.api import API_VERSION

        lines = [f"Backend API version: **{API_VERSION[0]}.{API_VERSION[1]}**.", ""]
        groups: dict[str, list] = {}
        for p in ir.PRIMITIVES.values():
            groups.setdefault(p.group, []).append(p)
        lines += [".. list-table:: Required primitives", "   :header-rows: 1", ""]
        lines += ["   * - group", "     - signature", "     - meaning"]
        for group, prims in groups.items():
            for p in prims:
                lines += [f"   * - {group}", f"     - ``{p.signature}``", f"     - {_cell(p.doc)}"]
        lines += ["", ".. list-table:: Composites a backend may fuse", "   :header-rows: 1", ""]
        lines += ["   * - name", "     - arguments and meaning"]
        for name, doc in ir.COMPOSITES.items():
            lines += [f"   * - ``{name}``", f"     - {_cell(doc)}"]
        lines += ["", ".. list-table:: Optional methods", "   :header-rows: 1", ""]
        lines += ["   * - name", "     - meaning"]
        for name, doc in ir.OPTIONAL.items():
            lines += [f"   * - ``{name}``", f"     - {_cell(doc)}"]
        return _parse(self, lines)


def _differences() -> list[tuple[str, str]]:
    """``(qualified name, text)`` for every docstring line starting with :data:`MARKER`."""
    import tensorweaver

    found: dict[str, str] = {}
    for info in pkgutil.walk_packages(tensorweaver.__path__, "tensorweaver."):
        if ".conformance" in info.name or info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # an optional dependency missing: that module documents nothing
            continue
        for obj in [module, *vars(module).values()]:
            if getattr(obj, "__module__", module.__name__) != module.__name__:
                continue
            members = [obj]
            if inspect.isclass(obj):
                members += [m for m in vars(obj).values() if callable(m) or isinstance(m, property)]
            for member in members:
                doc = inspect.getdoc(member) or ""
                for paragraph in doc.split("\n\n"):
                    text = " ".join(paragraph.split())
                    if text.startswith(MARKER):
                        qualname = getattr(member, "__qualname__", getattr(member, "__name__", ""))
                        where = f"{getattr(member, '__module__', module.__name__)}.{qualname}"
                        found[where] = text[len(MARKER) :].strip()
    return sorted(found.items())


class CompatibilityTable(SphinxDirective):
    """``.. tw-compat-table::`` — per namespace: PyTorch names present, missing, and how the
    present ones differ."""

    def run(self) -> list[nodes.Node]:
        sys.path.insert(0, str(ROOT / "scripts"))
        try:
            import api_coverage
        finally:
            sys.path.pop(0)
        names = api_coverage.NAMES.read_text().split()
        present = [n for n in names if api_coverage.resolves(n)]
        missing = sorted(set(names) - set(present))
        lines = [".. list-table:: PyTorch names, by namespace", "   :header-rows: 1", ""]
        lines += ["   * - namespace", "     - present", "     - missing", "     - coverage"]
        namespaces = sorted({api_coverage.namespace(n) for n in names})
        for ns in namespaces:
            have = sum(1 for n in present if api_coverage.namespace(n) == ns)
            lack = sorted(n for n in missing if api_coverage.namespace(n) == ns)
            total = have + len(lack)
            lines += [f"   * - ``{ns}``", f"     - {have}", f"     - {len(lack)}"]
            lines += [f"     - {100 * have / total:.1f} %"]
        total = len(present) + len(missing)
        lines += ["", f"In all **{len(present)} of {total}** names "]
        lines += [f"({100 * len(present) / total:.1f} %) exist.", ""]
        lines += ["Missing names", "-------------", ""]
        for ns in namespaces:
            lack = sorted(n for n in missing if api_coverage.namespace(n) == ns)
            if lack:
                lines += [f"``{ns}``: " + ", ".join(f"``{n}``" for n in lack), ""]
        lines += ["What differs", "------------", ""]
        lines += [
            "Collected from every docstring paragraph that starts with *Differs from PyTorch:*",
            "",
        ]
        for where, text in _differences():
            lines += [f"- ``{where}``: {text}"]
        return _parse(self, lines)


class CLIHelp(SphinxDirective):
    """``.. tw-cli-help:: [subcommand]`` — the ``tw`` command's own ``--help`` output."""

    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        from tensorweaver import cli

        argv = [*self.arguments, "--help"]
        out = io.StringIO()
        with redirect_stdout(out):
            try:
                cli.main(argv)
            except SystemExit:
                pass
        text = out.getvalue().rstrip()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def setup(app: object) -> dict:
    app.add_directive("tw-ir-table", IRTable)
    app.add_directive("tw-compat-table", CompatibilityTable)
    app.add_directive("tw-cli-help", CLIHelp)
    return {"parallel_read_safe": True, "version": "1"}
