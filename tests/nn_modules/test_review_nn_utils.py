"""Review of ``tw.nn.utils`` parametrizations, weight norm and fusion (commit fd5de2f) against
PyTorch on identical weights, float64: each test fails on that commit and passes once the
defect it names is fixed."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _tw(t: torch.Tensor) -> tw.Tensor:
    return tw.tensor(t.detach().numpy())


def _np(t: object) -> np.ndarray:
    return t.detach().numpy()  # type: ignore[attr-defined]


def _identity_parametrization(lib: object) -> object:
    class Identity(lib.nn.Module):  # type: ignore[attr-defined, name-defined, misc]
        def forward(self, x: object) -> object:
            return x

        def right_inverse(self, x: object) -> object:
            return x

    return Identity()


def _float32_right_inverse(lib: object) -> object:
    class ToFloat32(lib.nn.Module):  # type: ignore[attr-defined, name-defined, misc]
        def forward(self, x: object) -> object:
            return x

        def right_inverse(self, x: object) -> object:
            return x.float()  # type: ignore[attr-defined]

    return ToFloat32()


def _right_inverse_not_implemented(lib: object) -> object:
    class Scale(lib.nn.Module):  # type: ignore[attr-defined, name-defined, misc]
        def forward(self, x: object) -> object:
            return 3 * x

        def right_inverse(self, x: object) -> object:
            raise NotImplementedError

    return Scale()


def _doubling_without_right_inverse(lib: object) -> object:
    class Double(lib.nn.Module):  # type: ignore[attr-defined, name-defined, misc]
        def forward(self, x: object) -> object:
            return 2 * x

    return Double()


@pytest.mark.parametrize("lib", [torch, tw], ids=["torch", "tw"])
def test_remove_parametrizations_of_weight_norm_keeps_weight_trainable(lib: object) -> None:
    # A tensor parametrized by several originals (weight_norm's g and v) comes back as a
    # Parameter that requires grad, as PyTorch's does; the tw copy was frozen.
    m = lib.nn.Linear(3, 2).double()  # type: ignore[attr-defined]
    lib.nn.utils.parametrizations.weight_norm(m)  # type: ignore[attr-defined]
    lib.nn.utils.parametrize.remove_parametrizations(m, "weight")  # type: ignore[attr-defined]
    assert isinstance(m.weight, lib.nn.Parameter)  # type: ignore[attr-defined]
    assert m.weight.requires_grad
    assert sorted(n for n, p in m.named_parameters() if p.requires_grad) == ["bias", "weight"]


@pytest.mark.parametrize("dim", [-2, -3])
def test_legacy_weight_norm_negative_dim_matches_torch(dim: int) -> None:
    tc = torch.nn.Conv1d(3, 4, 2).double()
    tm = tw.nn.Conv1d(3, 4, 2, dtype=tw.float64)
    tm.load_state_dict({k: _tw(v) for k, v in tc.state_dict().items()})
    torch.nn.utils.weight_norm(tc, dim=dim)
    tw.nn.utils.weight_norm(tm, dim=dim)
    assert tuple(tm.weight_g.shape) == tuple(tc.weight_g.shape)
    np.testing.assert_allclose(_np(tm.weight_g), _np(tc.weight_g), rtol=1e-12)


@pytest.mark.parametrize("dim", [-2, -3])
def test_weight_norm_parametrization_negative_dim_loads_torch_checkpoint(dim: int) -> None:
    tc = torch.nn.Conv1d(3, 4, 2).double()
    tm = tw.nn.Conv1d(3, 4, 2, dtype=tw.float64)
    torch.nn.utils.parametrizations.weight_norm(tc, dim=dim)
    tw.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    with torch.no_grad():  # a trained magnitude, not the initial norm
        tc.parametrizations.weight.original0.mul_(
            torch.rand_like(tc.parametrizations.weight.original0) + 0.5
        )
    shapes = {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in tc.state_dict().items()}
    tm.load_state_dict({k: _tw(v) for k, v in tc.state_dict().items()})
    x = torch.randn(2, 3, 5, dtype=torch.float64)
    np.testing.assert_allclose(_np(tm(_tw(x))), _np(tc(x)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lib", [torch, tw], ids=["torch", "tw"])
def test_assigning_a_parametrized_tensor_may_not_change_its_dtype(lib: object) -> None:
    m = lib.nn.Linear(3, 2).double()  # type: ignore[attr-defined]
    parametrize = lib.nn.utils.parametrize  # type: ignore[attr-defined]
    parametrize.register_parametrization(m, "weight", _identity_parametrization(lib))
    with pytest.raises(ValueError, match="dtype"):
        m.weight = lib.ones(2, 3, dtype=lib.float32)  # type: ignore[attr-defined]


@pytest.mark.parametrize("lib", [torch, tw], ids=["torch", "tw"])
def test_unsafe_registration_may_not_change_the_original_dtype(lib: object) -> None:
    m = lib.nn.Linear(3, 2).double()  # type: ignore[attr-defined]
    parametrize = lib.nn.utils.parametrize  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="dtype"):
        parametrize.register_parametrization(m, "weight", _float32_right_inverse(lib), unsafe=True)


@pytest.mark.parametrize("lib", [torch, tw], ids=["torch", "tw"])
def test_assigning_through_a_parametrization_without_right_inverse_raises(lib: object) -> None:
    # unsafe=True waives the shape/dtype checks, not the need for right_inverse: tw skipped
    # the parametrization and stored the value as the original (m.weight became 2 * value).
    m = lib.nn.Linear(3, 2).double()  # type: ignore[attr-defined]
    parametrize = lib.nn.utils.parametrize  # type: ignore[attr-defined]
    parametrize.register_parametrization(
        m, "weight", _doubling_without_right_inverse(lib), unsafe=True
    )
    with pytest.raises(RuntimeError, match="right_inverse"):
        m.weight = lib.ones(2, 3, dtype=lib.float64)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "name",
    ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"],
)
def test_fusion_functions_are_exported_from_nn_utils(name: str) -> None:
    assert hasattr(torch.nn.utils, name)
    assert getattr(tw.nn.utils, name) is getattr(tw.nn.utils.fusion, name)


def test_fused_bias_of_a_biasless_layer_requires_grad_like_torch() -> None:
    # PyTorch's fused bias starts from zeros_like(running_mean), so it does not require grad.
    from torch.nn.utils import fusion as torch_fusion

    pairs = [
        (torch.nn.Conv2d(2, 3, 3, bias=False), tw.nn.Conv2d(2, 3, 3, bias=False)),
        (torch.nn.Linear(2, 3, bias=False), tw.nn.Linear(2, 3, bias=False)),
    ]
    for tc, tm in pairs:
        conv = isinstance(tc, torch.nn.Conv2d)
        bc = torch.nn.BatchNorm2d(3) if conv else torch.nn.BatchNorm1d(3)
        bm = tw.nn.BatchNorm2d(3) if conv else tw.nn.BatchNorm1d(3)
        for module in (tc, tm, bc, bm):
            module.eval()
        if conv:
            fc = torch_fusion.fuse_conv_bn_eval(tc, bc)
            fm = tw.nn.utils.fusion.fuse_conv_bn_eval(tm, bm)
        else:
            fc = torch_fusion.fuse_linear_bn_eval(tc, bc)
            fm = tw.nn.utils.fusion.fuse_linear_bn_eval(tm, bm)
        assert fm.bias.requires_grad == fc.bias.requires_grad
        assert fm.weight.requires_grad == fc.weight.requires_grad


@pytest.mark.parametrize("lib", [torch, tw], ids=["torch", "tw"])
def test_registration_skips_a_right_inverse_that_is_not_implemented(lib: object) -> None:
    # PyTorch registers the parametrization and keeps the original as it is.
    m = lib.nn.Linear(3, 2).double()  # type: ignore[attr-defined]
    before = _np(m.weight).copy()
    parametrize = lib.nn.utils.parametrize  # type: ignore[attr-defined]
    parametrize.register_parametrization(m, "weight", _right_inverse_not_implemented(lib))
    np.testing.assert_array_equal(_np(m.parametrizations.weight.original), before)
    np.testing.assert_allclose(_np(m.weight), 3 * before)


@pytest.mark.parametrize("lib", [torch, tw], ids=["torch", "tw"])
def test_appending_a_parametrization_checks_its_right_inverse(lib: object) -> None:
    m = lib.nn.Linear(3, 2).double()  # type: ignore[attr-defined]
    parametrize = lib.nn.utils.parametrize  # type: ignore[attr-defined]
    parametrize.register_parametrization(m, "weight", _identity_parametrization(lib))
    with pytest.raises(ValueError, match="dtype"):
        parametrize.register_parametrization(m, "weight", _float32_right_inverse(lib))
