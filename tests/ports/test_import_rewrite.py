"""The import rewrite is the only edit a port gets: it must change import lines and nothing else."""

from __future__ import annotations

import ast
import difflib

import pytest
from import_rewrite import rewrite_imports, torch_imports
from port_harness import PROGRAMS, load_program

PROGRAM_FILES = sorted(PROGRAMS.glob("*.py"))


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("import torch\n", "import tensorweaver as torch\n"),
        ("import torch as T\n", "import tensorweaver as T\n"),
        ("import torch.nn as nn\n", "import tensorweaver.nn as nn\n"),
        ("import torch.nn\n", "import tensorweaver.nn, tensorweaver as torch\n"),
        ("import os, torch, sys\n", "import os, tensorweaver as torch, sys\n"),
        ("from torch import nn, optim\n", "from tensorweaver import nn, optim\n"),
        ("from torch.nn import functional as F\n", "from tensorweaver.nn import functional as F\n"),
        (
            "from torch.utils.data import DataLoader, TensorDataset  # data\n",
            "from tensorweaver.utils.data import DataLoader, TensorDataset  # data\n",
        ),
        (
            "from torch.optim import (\n    SGD,\n    Adam,\n)\nx = 1\n",
            "from tensorweaver.optim import SGD, Adam\n\n\n\nx = 1\n",
        ),
        ("def f():\n    import torch\n", "def f():\n    import tensorweaver as torch\n"),
        ("import torchvision\nfrom torchaudio import x\n",) * 2,
        ("import numpy as np\nx = 'import torch'\n", "import numpy as np\nx = 'import torch'\n"),
    ],
)
def test_rewrite_cases(before: str, after: str) -> None:
    assert rewrite_imports(before) == after


def test_an_import_sharing_its_line_is_refused() -> None:
    with pytest.raises(ValueError, match="line 1"):
        rewrite_imports("import torch; x = torch.ones(2)\n")


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=[p.stem for p in PROGRAM_FILES])
def test_rewrite_touches_only_import_lines(path) -> None:
    source = path.read_text()
    rewritten = rewrite_imports(source)
    import_lines = {
        line for node in torch_imports(source) for line in range(node.lineno, node.end_lineno + 1)
    }
    before, after = source.splitlines(), rewritten.splitlines()
    assert len(before) == len(after)
    changed = {i + 1 for i, (a, b) in enumerate(zip(before, after)) if a != b}
    assert import_lines, f"{path.name} imports no torch module"
    assert changed <= import_lines, "".join(difflib.unified_diff(before, after, lineterm="\n"))
    # No torch import survives and the program names no tensorweaver itself.
    assert not torch_imports(rewritten)
    assert "tensorweaver" not in source
    ast.parse(rewritten)


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=[p.stem for p in PROGRAM_FILES])
def test_rewritten_program_binds_tensorweaver(path) -> None:
    module = load_program(path.stem, "tw")
    bound = {name for name, value in vars(module).items() if type(value).__name__ == "module"}
    torch_modules = [n for n in bound if vars(module)[n].__name__.split(".")[0] == "torch"]
    assert not torch_modules, f"{path.name} still reaches torch through {torch_modules}"
