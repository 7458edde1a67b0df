"""torch's op database on strided inputs (see ``opinfo_harness.LAYOUTS``): each sample's tensors
as non-contiguous views (torch's own ``SampleInput.noncontiguous``), transposed (``.mT`` of a
swapped copy), expanded (stride 0) or stepped (``x[::2]``) in torch and the same views in
tensorweaver, values, gradients and what in-place ops wrote through to the views' bases
compared with torch.

The suite's share (~10 s): every tenth op (sorted by name), its function variant on NumPy
in float64, its first sample, in one layout (the layouts taken in turn over the chosen ops).
``TW_OPINFO_FULL=1`` runs every op in every layout, the function, method and in-place
variants in float64, float32, int64, bool and complex128 on NumPy and torch:cpu, with three
samples each. A difference found is a strict xfail named in ``KNOWN`` below (with the layouts
it shows in); one that the same values show contiguous too (ties of a repeated value, a
singular matrix: ``contiguous-too``) is the contiguous sweep's, not this one's. Each defect
found is also a named test in ``test_strided_fixes.py``.
"""

from __future__ import annotations

import os

import pytest
import torch
from opinfo import opinfo_harness as harness
from tw_backends import entered

FULL = bool(os.environ.get("TW_OPINFO_FULL"))
BACKENDS = ("numpy", "torch:cpu") if FULL else ("numpy",)
DTYPES = (
    (torch.float64, torch.float32, torch.int64, torch.bool, torch.complex128)
    if FULL
    else (torch.float64,)
)
VARIANTS = ("function", "method", "inplace") if FULL else ("function",)
SAMPLES = 3 if FULL else 1
NOT_COMPARED = ("skip", "harness", "missing", "contiguous-too")

#: Strided differences from torch the project knows of, by op id: (the layouts they show in,
#: why); a strict xfail wherever the test runs one of those layouts.
KNOWN: dict[str, tuple[tuple[str, ...], str]] = {
    "masked.median": (
        ("expanded",),
        "torch 2.13's masked.median of an expanded input reads memory it never wrote (tiny "
        "denormals; the same values contiguous give the median, as ours does)",
    ),
    "stft": (
        ("expanded",),
        "torch spreads the gradient of an expanded (stride-0) leaf evenly over its copies "
        "(AsStridedBackward of overlapping memory); ours gives each element its own, as torch "
        "does for the same values contiguous (the sums agree)",
    ),
    "resize_": (
        ("noncontiguous", "transposed", "stepped"),
        "resize_ of a view (it shares memory with its base) raises in tensorweaver; torch "
        "resizes it",
    ),
}

#: The share's ops and each one's layout; the full sweep's: every op in every layout.
STEP = 10


def chosen() -> dict[str, tuple[str, ...]]:
    names = sorted(harness.ops_by_id())
    if FULL:
        return {name: harness.LAYOUTS for name in names}
    share = names[::STEP]
    return {name: (harness.LAYOUTS[i % len(harness.LAYOUTS)],) for i, name in enumerate(share)}


def strided_differences(op, backend: str, layouts: tuple[str, ...]) -> list[str]:
    """Every (layout, variant, dtype) of ``op`` on ``backend`` that differs: its first."""
    found = []
    supported = op.supported_dtypes("cpu")
    with entered(backend):
        for layout in layouts:
            for dtype in DTYPES:
                if dtype not in supported:
                    continue
                for variant in VARIANTS:
                    if variant != "function" and (
                        (op.method_variant if variant == "method" else op.inplace_variant) is None
                    ):
                        continue
                    grads = (
                        variant == "function" and dtype == torch.float64 and op.supports_autograd
                    )
                    samples = harness.samples(op, dtype, requires_grad=grads)
                    for index, sample in enumerate(samples):
                        if index >= SAMPLES:
                            break
                        outcome = harness.run_sample(
                            op, variant, sample, grads=grads, layout=layout
                        )
                        if outcome is not None and outcome.kind not in NOT_COMPARED:
                            found.append(f"{layout} {variant} {str(dtype)[6:]} #{index} {outcome}")
                            break
    return found


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("name", "layouts"),
    [
        pytest.param(name, layouts, id=name if FULL else f"{name}-{layouts[0]}")
        for name, layouts in sorted(chosen().items())
    ],
)
def test_op_on_strided_inputs_like_torch(
    name: str, layouts: tuple[str, ...], backend: str, request: pytest.FixtureRequest
) -> None:
    shows_in, why = KNOWN.get(name, ((), ""))
    if set(shows_in) & set(layouts):
        request.applymarker(pytest.mark.xfail(strict=True, reason=why))
    found = strided_differences(harness.ops_by_id()[name], backend, layouts)
    assert not found, "\n".join(found)


def test_the_sweep_sees_an_in_place_write_that_misses_the_base(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an add_ that answers right but leaves the view's base as it was: only the bases'
    # comparison can see it, in every layout whose views are written through
    import tensorweaver as tw

    monkeypatch.setattr(tw.Tensor, "add_", lambda self, other, alpha=1: self + other * alpha)
    op = harness.ops_by_id()["add"]
    sample = next(
        s
        for s in harness.samples(op, torch.float64, requires_grad=False)
        if s.input.ndim == 2 and s.input.shape[1] > 1 and s.input.shape == s.args[0].shape
    )
    with entered("numpy"):
        for layout in ("noncontiguous", "transposed", "stepped"):
            outcome = harness.run_sample(op, "inplace", sample, grads=False, layout=layout)
            assert outcome is not None and outcome.kind == "base", (layout, outcome)
