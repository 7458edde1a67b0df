"""The API name list of scripts/api_coverage.py names real PyTorch API, and the report runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

SCRIPT = Path(__file__).parents[2] / "scripts" / "api_coverage.py"
spec = importlib.util.spec_from_file_location("api_coverage", SCRIPT)
api_coverage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api_coverage)


def _torch_has(name: str) -> bool:
    obj = torch
    for part in name.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def test_every_listed_name_is_pytorch_api() -> None:
    names = api_coverage.NAMES.read_text().split()
    assert len(names) == len(set(names)) > 1000
    assert [n for n in names if not _torch_has(n)] == []


def test_the_list_is_what_the_generator_makes_from_this_torch() -> None:
    assert api_coverage.generate() == api_coverage.NAMES.read_text().split()


def test_resolves_reads_torch_as_tensorweaver() -> None:
    assert api_coverage.resolves("torch.nn.Linear")
    assert api_coverage.resolves("torch.Tensor.backward")
    assert api_coverage.resolves("torch.nn.utils.rnn.pad_sequence")
    assert not api_coverage.resolves("torch.nn.NoSuchLayer")
    assert not api_coverage.resolves("torch.no_such_module.f")


def test_report_counts_every_name(capsys) -> None:
    api_coverage.main([])
    total = capsys.readouterr().out.strip().splitlines()[-1].split()
    assert total[0] == "total" and total[3] == str(len(api_coverage.NAMES.read_text().split()))
