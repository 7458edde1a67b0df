"""Review of ``tw.nn.utils.prune`` (aa41a36) against ``torch.nn.utils.prune`` 2.13: the
amount check's NaN, the state around a pruned module (optimizers, ``tw.save``/``tw.load`` of
its state_dict into a freshly pruned module, other forward pre-hooks, tied weights, buffers,
parametrizations, a move to another backend) and ``tw.compile`` of a pruned forward."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.utils.parametrize as tw_parametrize
import tensorweaver.nn.utils.prune as tw_prune
import torch
import torch.nn.utils.parametrize as torch_parametrize
import torch.nn.utils.prune as torch_prune

PRUNE = {torch: torch_prune, tw: tw_prune}
PARAMETRIZE = {torch: torch_parametrize, tw: tw_parametrize}


def linear(m: Any, seed: int = 0) -> Any:
    lin = m.nn.Linear(4, 3)
    rs = np.random.RandomState(seed)
    with m.no_grad():
        lin.weight.copy_(m.tensor(rs.randn(3, 4), dtype=m.float32))
        lin.bias.copy_(m.tensor(rs.randn(3), dtype=m.float32))
    return lin


def host(t: Any) -> np.ndarray:
    return np.asarray(t.detach()) if isinstance(t, tw.Tensor) else t.detach().numpy()


def both(fn: Any) -> tuple[Any, Any]:
    """``fn(m, prune)`` on torch and on tw: its result, or the exception's class name."""
    out = []
    for m in (torch, tw):
        try:
            out.append(fn(m, PRUNE[m]))
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            out.append(type(e).__name__)
    return out[0], out[1]


def test_nan_amount_is_refused_when_counted_like_torch() -> None:
    # Before: tw refused a NaN fraction when the method was built (ValueError); torch's
    # range check lets NaN through and fails only when the count is computed.
    def build(m: Any, prune: Any) -> str:
        prune.L1Unstructured(float("nan"))
        prune.RandomStructured(float("nan"), dim=0)
        return "built"

    assert both(build) == ("built", "built")

    def apply(m: Any, prune: Any) -> Any:
        lin = linear(m)
        try:
            prune.l1_unstructured(lin, "weight", float("nan"))
        except ValueError:
            return [n for n, _ in lin.named_parameters()]  # left as it was

    want, got = both(apply)
    assert got == want == ["bias", "weight"]


def test_optimizer_keeps_training_the_original_through_prune_and_remove() -> None:
    def run(m: Any, prune: Any) -> Any:
        lin = linear(m)
        opt = m.optim.SGD(lin.parameters(), lr=0.1)
        prune.l1_unstructured(lin, "weight", 0.5)
        assert opt.param_groups[0]["params"][0] is lin.weight_orig
        for _ in range(3):
            opt.zero_grad()
            lin(m.ones(2, 4)).pow(2).sum().backward()
            opt.step()
        prune.remove(lin, "weight")
        assert opt.param_groups[0]["params"][0] is lin.weight
        return host(lin.weight)

    want, got = both(run)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_saved_pruned_state_dict_loads_into_a_freshly_pruned_module() -> None:
    def run(m: Any, prune: Any) -> Any:
        src = linear(m)
        prune.l1_unstructured(src, "weight", 0.5)
        buf = io.BytesIO()
        m.save(src.state_dict(), buf)
        buf.seek(0)
        state = m.load(buf)
        dst = linear(m, seed=3)
        prune.random_unstructured(dst, "weight", 0.9)  # another mask, replaced by the load
        dst.load_state_dict(state)
        return list(state), host(dst(m.ones(1, 4))), host(dst.weight_mask)

    want, got = both(run)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_array_equal(got[2], want[2])


def test_pruning_hook_runs_after_earlier_pre_hooks_like_torch() -> None:
    def run(m: Any, prune: Any) -> Any:
        lin, seen = linear(m), []
        lin.register_forward_pre_hook(lambda mod, i: seen.append(int((mod.weight != 0).sum())))
        prune.l1_unstructured(lin, "weight", 6)
        lin.register_forward_pre_hook(lambda mod, i: seen.append(int((mod.weight != 0).sum())))
        with m.no_grad():
            lin.weight_orig.fill_(1.0)
        lin(m.ones(1, 4))
        prune.l1_unstructured(lin, "weight", 2)  # the container moves to the end
        lin(m.ones(1, 4))
        return seen

    want, got = both(run)
    assert got == want


@pytest.mark.parametrize("what", ["buffer", "parametrized weight"])
def test_pruning_what_is_no_parameter_raises_like_torch(what: str) -> None:
    def run(m: Any, prune: Any) -> Any:
        lin = linear(m)
        if what == "buffer":
            lin.register_buffer("scale", m.ones(3))
            name = "scale"
        else:

            class Double(m.nn.Module):
                def forward(self, x: Any) -> Any:
                    return 2 * x

            PARAMETRIZE[m].register_parametrization(lin, "weight", Double())
            name = "weight"
        prune.l1_unstructured(lin, name, 1)

    want, got = both(run)
    assert got == want == "TypeError"


def test_tied_weight_pruned_in_one_module_like_torch() -> None:
    def run(m: Any, prune: Any) -> Any:
        a, b = linear(m), linear(m, seed=1)
        b.weight = a.weight
        seq = m.nn.Sequential(a, b)
        prune.l1_unstructured(a, "weight", 0.5)
        seq.eval()
        names = [n for n, _ in seq.named_parameters()], list(seq.state_dict())
        return names, int((a.weight != 0).sum()), int((b.weight != 0).sum())

    want, got = both(run)
    assert got == want


def test_pruned_module_moved_to_torch_backend_keeps_pruning() -> None:
    lin = linear(tw)
    tw_prune.l1_unstructured(lin, "weight", 0.5)
    lin.to("torch:cpu")
    y = lin(tw.ones(2, 4, device="torch:cpu"))
    assert y.device == lin.weight.device == lin.weight_mask.device
    tw_prune.random_structured(lin, "weight", 1, dim=0)
    tw_prune.ln_structured(lin, "weight", 1, n=1, dim=1)
    assert lin.weight_mask.device == lin.weight_orig.device
    assert int((lin.weight != 0).sum()) <= 6


def test_compiled_forward_rebinds_the_pruned_attribute() -> None:
    lin = linear(tw)
    tw_prune.l1_unstructured(lin, "weight", 0.5)
    compiled = tw.compile(lin)
    for _ in range(4):
        with tw.no_grad():
            lin.weight_orig.add_(1.0)
        compiled(tw.ones(2, 4))
        with tw.no_grad():
            gap = float((lin.weight - lin.weight_orig * lin.weight_mask).abs().max())
        assert gap == 0.0
