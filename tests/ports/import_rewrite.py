"""The one edit a user makes to a PyTorch program: its imports name tensorweaver instead.

``rewrite_imports`` changes only ``import`` statements that name ``torch`` or one of its
submodules, and nothing else: each name ``torch`` that the original binds is bound to
``tensorweaver``, and each ``torch.x.y`` module path becomes ``tensorweaver.x.y``. Line count and
every other line stay as they were, so a traceback's line numbers point at the original program.
"""

from __future__ import annotations

import ast

OLD = "torch"
NEW = "tensorweaver"


def _renamed(module: str) -> str:
    return NEW + module[len(OLD) :]


def _names_torch(module: str | None) -> bool:
    return module is not None and (module == OLD or module.startswith(OLD + "."))


def _import_text(node: ast.Import) -> str:
    """``import torch.nn as nn, os`` -> ``import tensorweaver.nn as nn, os``.

    ``import torch.nn`` binds the name ``torch`` to the top package, so it becomes
    ``import tensorweaver.nn, tensorweaver as torch``.
    """
    parts = []
    for alias in node.names:
        if not _names_torch(alias.name):
            parts.append(alias.name if alias.asname is None else f"{alias.name} as {alias.asname}")
        elif alias.asname is not None:
            parts.append(f"{_renamed(alias.name)} as {alias.asname}")
        elif alias.name == OLD:
            parts.append(f"{NEW} as {OLD}")
        else:
            parts.append(f"{_renamed(alias.name)}, {NEW} as {OLD}")
    return "import " + ", ".join(parts)


def _from_text(node: ast.ImportFrom) -> str:
    """``from torch.utils.data import X`` -> ``from tensorweaver.utils.data import X``."""
    names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in node.names)
    return f"from {_renamed(node.module)} import {names}"


def torch_imports(source: str) -> list[ast.stmt]:
    """Every ``import``/``from ... import`` statement of ``source`` that names torch."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(_names_torch(a.name) for a in node.names):
            found.append(node)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _names_torch(node.module):
            found.append(node)
    return found


def rewrite_imports(source: str) -> str:
    """``source`` with its torch imports naming tensorweaver; every other line unchanged."""
    lines = source.splitlines(keepends=True)
    for node in torch_imports(source):
        first, last = node.lineno - 1, node.end_lineno - 1
        head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset :]
        if head.strip() or tail.strip().split("#")[0].strip():
            raise ValueError(
                f"line {node.lineno}: an import shares its line with other code; "
                "put each torch import on lines of its own"
            )
        text = _import_text(node) if isinstance(node, ast.Import) else _from_text(node)
        newline = "\n" if lines[last].endswith("\n") else ""
        lines[first] = head + text + tail.rstrip("\n") + newline
        for i in range(first + 1, last + 1):
            lines[i] = newline  # a parenthesised import keeps its line count
    return "".join(lines)
