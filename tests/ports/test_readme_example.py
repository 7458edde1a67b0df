"""The README's first example is a PyTorch script whose imports, and nothing else, were swapped."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from import_rewrite import rewrite_imports, torch_imports

README = Path(__file__).parents[2] / "README.md"


def first_example() -> str:
    text = README.read_text()
    section = text[text.index("## A first training example") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def as_pytorch(source: str) -> str:
    """The script a PyTorch user had: each import line naming tensorweaver names torch again."""
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(("import tensorweaver", "from tensorweaver")):
            line = line.replace("import tensorweaver as torch", "import torch")
            lines[i] = line.replace("tensorweaver", "torch")
    return "".join(lines)


def run(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "README.md", "exec"), {"__name__": "__main__"})
    return [float(a) for a in re.findall(r"test accuracy ([0-9.]+)%", out.getvalue())]


def test_the_example_is_the_rewritten_pytorch_script() -> None:
    example = first_example()
    original = as_pytorch(example)
    assert "tensorweaver" not in original and torch_imports(original)
    assert rewrite_imports(original) == example


def test_the_example_trains_on_tensorweaver_as_the_script_does_on_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = first_example()
    ours = run(example, tmp_path, monkeypatch)
    theirs = run(as_pytorch(example), tmp_path, monkeypatch)
    assert len(ours) == len(theirs) == 10
    assert ours[-1] > 85 and abs(ours[-1] - theirs[-1]) < 5, (ours, theirs)
    assert (tmp_path / "digits.safetensors").exists()
