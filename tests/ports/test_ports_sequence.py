"""Sequence, attention, graph and custom-autograd PyTorch programs run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws, and compares the losses
(every training step, then the program's final evaluation loss).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from port_harness import assert_losses_match, run_torch, run_tw
from tw_backends import FAST

pytestmark = [
    # torch's own notices about the configurations these runs choose, not failures.
    pytest.mark.filterwarnings("ignore:dropout option adds dropout after all but last"),
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype"),
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True, but self.use_nested_tensor"),
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
]

#: (program, argv, the reason it is expected to fail, or None). Sizes keep each run ~1 s.
CASES = {
    # LSTM with embedding/output dropout (shared), TBPTT over 2 epochs (the second anneals
    # the learning rate or saves a better model), save + reload.
    "word_lm-lstm-dropout": (
        "word_lm",
        ["--nlayers", "1", "--dropout", "0.2", "--steps", "4"],
        None,
    ),
    # 2-layer GRU with tied encoder/decoder weights (its inter-layer dropout is torch's own).
    "word_lm-gru-tied": (
        "word_lm",
        ["--model", "GRU", "--tied", "--dropout", "0", "--epochs", "1", "--steps", "4"],
        None,
    ),
    # Variable-length sentences through pack_padded_sequence(enforce_sorted=False).
    "word_lm-packed": (
        "word_lm",
        ["--packed", "--dropout", "0", "--epochs", "1", "--steps", "4"],
        None,
    ),
    # The example's causal Transformer (nn.Transformer subclass, log(tril(ones)) mask).
    "word_lm-transformer": (
        "word_lm",
        ["--model", "Transformer", "--dropout", "0", "--lr", "1", "--epochs", "1", "--steps", "4"],
        None,
    ),
    # The example's generate.py: sampled words and their NLL (randint, multinomial, fill_).
    "word_lm-generate": (
        "word_lm",
        ["--nlayers", "1", "--dropout", "0", "--epochs", "1", "--steps", "2", "--words", "10"],
        None,
    ),
    "word_lm-transformer-generate": (
        "word_lm",
        ["--model", "Transformer", "--dropout", "0", "--lr", "1", "--epochs", "1", "--steps", "2"]
        + ["--words", "10"],
        None,
    ),
    # Encoder-layer dropout is torch's fused attention dropout, so only the embedding's is on.
    "transformer_classifier": (
        "transformer_classifier",
        ["--dropout", "0", "--steps", "8"],
        None,
    ),
    # The tutorial's EmbeddingBag baseline, fed words and offsets.
    "transformer_classifier-bag": (
        "transformer_classifier",
        ["--arch", "bag", "--lr", "0.05", "--steps", "8"],
        None,
    ),
    # A checkpoint of model, AdamW and LambdaLR state after epoch 1, resumed in fresh objects.
    "transformer_classifier-resume": (
        "transformer_classifier",
        ["--dropout", "0", "--epochs", "2", "--steps", "4", "--resume-each-epoch"],
        None,
    ),
    "gcn": ("gcn", ["--steps", "10"], None),
    # Isolated nodes: deg ** -0.5 is inf and is masked to 0.
    "gcn-no-self-loops": ("gcn", ["--no-self-loops", "--steps", "5"], None),
    # The pygcn way: a sparse COO adjacency and torch.sparse.mm.
    "gcn-sparse": (
        "gcn",
        ["--sparse", "--steps", "5"],
        "tensorweaver has no sparse COO tensors yet (torch.sparse_coo_tensor, torch.sparse.mm)",
    ),
    "custom_function-legendre": ("custom_function", ["--steps", "40"], None),
    "custom_function-setup-context": (
        "custom_function",
        ["--function", "setup_context", "--no-gradcheck", "--steps", "40"],
        None,
    ),
    "custom_function-quant": (
        "custom_function",
        ["--model", "quant", "--no-gradcheck", "--steps", "10"],
        None,
    ),
}
#: Also run on cuPyNumeric (about 0.4 ms an op): the smallest programs.
ON_CUNUMERIC = ("transformer_classifier-bag", "custom_function-legendre", "custom_function-quant")


def params() -> list:
    out = []
    for case, (_, _, reason) in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        specs = [*FAST, "cunumeric"] if case in ON_CUNUMERIC else FAST
        for spec in specs:
            extra = [pytest.mark.cunumeric] if spec == "cunumeric" else []
            out.append(pytest.param(case, spec, marks=marks + extra, id=f"{case}-{spec}"))
    return out


@pytest.fixture(scope="module")
def torch_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[list[float], Path]]:
    """A case's torch losses and initial weights, computed once for all backends (a run
    that raised raises again, without running)."""
    done: dict[str, tuple[list[float], Path] | BaseException] = {}

    def run(case: str) -> tuple[list[float], Path]:
        if case not in done:
            name, argv, _ = CASES[case]
            try:
                done[case] = run_torch(name, argv, tmp_path_factory.mktemp(case))
            except Exception as e:
                done[case] = e
        result = done[case]
        if isinstance(result, BaseException):
            raise result
        return result

    return run


@pytest.mark.parametrize(("case", "spec"), params())
def test_program_losses_match_pytorch(
    case: str, spec: str, torch_run: Callable[[str], tuple[list[float], Path]]
) -> None:
    name, argv, _ = CASES[case]
    torch_losses, init = torch_run(case)
    tw_losses = run_tw(name, argv, spec, init)
    assert_losses_match(tw_losses, torch_losses, rtol=1e-4, atol=1e-6)
