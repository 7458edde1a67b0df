"""``tw.nn.utils.prune`` against ``torch.nn.utils.prune`` 2.13 on the same weights: state_dict
keys and order, masks (exactly, for the deterministic methods), pruned values, forward outputs
and gradients through the masks, iterative pruning through a ``PruningContainer``,
``remove``, ``global_unstructured`` over several modules, and the validation errors; random
methods by their pruned counts, and value by value with torch on torch:cpu (torch's stream)."""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
import torch.nn.utils.prune  # noqa: F401 - not imported by torch.nn.utils itself
from tw_backends import entered


def host(t: Any) -> np.ndarray:
    return np.asarray(t.detach()) if isinstance(t, tw.Tensor) else t.detach().numpy()


def twin_modules(dtype: str = "float64", seed: int = 0) -> tuple[dict, dict]:
    """A Linear and a Conv2d on torch and on tw with the same distinct-valued weights."""
    rs = np.random.RandomState(seed)
    pairs: tuple[dict, dict] = ({}, {})
    for key, (make, shapes) in {
        "fc": (lambda m: m.nn.Linear(6, 5), {"weight": (5, 6), "bias": (5,)}),
        "conv": (lambda m: m.nn.Conv2d(3, 4, 3), {"weight": (4, 3, 3, 3), "bias": (4,)}),
    }.items():
        values = {name: rs.randn(*shape) for name, shape in shapes.items()}
        for m, out in zip((torch, tw), pairs):
            mod = make(m).to(getattr(m, dtype))
            with m.no_grad():
                for name, v in values.items():
                    getattr(mod, name).copy_(m.tensor(v, dtype=getattr(m, dtype)))
            out[key] = mod
    return pairs


INPUTS = {"fc": (3, 6), "conv": (2, 3, 5, 5)}


def assert_like_torch(tmod: Any, wmod: Any, key: str, dtype: str = "float64") -> None:
    """Same state_dict (keys in order; masks and values), hooks, forward and gradients."""
    ts, ws = tmod.state_dict(), wmod.state_dict()
    assert list(ws) == list(ts)
    for k in ts:
        assert str(ws[k].dtype).split(".")[-1] == str(ts[k].dtype).split(".")[-1], k
        np.testing.assert_array_equal(host(ws[k]), host(ts[k]), err_msg=k)
    assert [n for n, _ in wmod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    assert [n for n, _ in wmod.named_buffers()] == [n for n, _ in tmod.named_buffers()]
    assert [type(h).__name__ for h in wmod._forward_pre_hooks.values()] == [
        type(h).__name__ for h in tmod._forward_pre_hooks.values()
    ]
    x = np.random.RandomState(1).randn(*INPUTS[key])
    outs = []
    for m, mod in ((torch, tmod), (tw, wmod)):
        y = mod(m.tensor(x, dtype=getattr(m, dtype)))
        (y * y).sum().backward()
        outs.append((host(y), {n: host(p.grad) for n, p in mod.named_parameters()}))
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-4}
    np.testing.assert_allclose(outs[1][0], outs[0][0], **tol)
    for n, g in outs[0][1].items():
        np.testing.assert_allclose(outs[1][1][n], g, **tol, err_msg=n)


DETERMINISTIC: dict[str, Callable] = {
    "identity": lambda m, mod: m.nn.utils.prune.identity(mod, "weight"),
    "l1 fraction": lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "weight", amount=0.3),
    "l1 count": lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "weight", amount=7),
    "l1 zero": lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "weight", amount=0),
    "l1 all": lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "weight", amount=1.0),
    "l1 bias": lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "bias", amount=2),
    "l1 scores": lambda m, mod: m.nn.utils.prune.l1_unstructured(
        mod,
        "weight",
        0.5,
        importance_scores=m.arange(mod.weight.numel(), 0, -1.0)
        .reshape(mod.weight.shape)
        .to(mod.weight.dtype),
    ),
    "ln 2 dim 0": lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 0.5, n=2, dim=0),
    "ln 1 dim 1": lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 2, n=1, dim=1),
    "ln inf dim -1": lambda m, mod: m.nn.utils.prune.ln_structured(
        mod, "weight", 0.4, n=math.inf, dim=-1
    ),
    "ln -inf": lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 1, -math.inf, 0),
    "ln fro": lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 0.5, "fro", 0),
    "ln zero": lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 0, 2, 0),
    "ln scores": lambda m, mod: m.nn.utils.prune.ln_structured(
        mod, "weight", 2, 2, 0, importance_scores=mod.weight.detach().flip(0)
    ),
    "custom mask": lambda m, mod: m.nn.utils.prune.custom_from_mask(
        mod, "weight", mask=(m.arange(mod.weight.numel()) % 3 != 0).reshape(mod.weight.shape)
    ),
    "iterative l1, ln, l1": lambda m, mod: m.nn.utils.prune.l1_unstructured(
        m.nn.utils.prune.ln_structured(
            m.nn.utils.prune.l1_unstructured(mod, "weight", 0.25), "weight", 0.5, 1, 0
        ),
        "weight",
        3,
    ),
    "iterative custom, ln": lambda m, mod: m.nn.utils.prune.ln_structured(
        m.nn.utils.prune.custom_from_mask(
            mod, "weight", (m.arange(mod.weight.numel()) % 2 == 0).reshape(mod.weight.shape)
        ),
        "weight",
        0.5,
        2,
        -1,
    ),
    "weight and bias": lambda m, mod: m.nn.utils.prune.l1_unstructured(
        m.nn.utils.prune.l1_unstructured(mod, "weight", 0.5), "bias", 0.5
    ),
}


@pytest.mark.parametrize(
    ("case", "key"),
    # 'fro' over a conv channel's three dims is an error: test_fro_norm_of_conv_channels_raises
    [(c, k) for c in DETERMINISTIC for k in ("fc", "conv") if (c, k) != ("ln fro", "conv")],
)
def test_deterministic_pruning_like_torch(backend: str, case: str, key: str) -> None:
    mods = twin_modules()
    for m, ms in zip((torch, tw), mods):
        assert DETERMINISTIC[case](m, ms[key]) is ms[key]
        assert m.nn.utils.prune.is_pruned(ms[key])
    assert_like_torch(mods[0][key], mods[1][key], key)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_container_history_and_remove_like_torch(backend: str, dtype: str) -> None:
    (tmods, wmods) = twin_modules(dtype)
    for m, mods in ((torch, tmods), (tw, wmods)):
        p = m.nn.utils.prune
        mod = mods["conv"]
        p.l1_unstructured(mod, "weight", amount=0.2)
        p.ln_structured(mod, "weight", amount=1, n=2, dim=0)
        p.l1_unstructured(mod, "bias", amount=1)
        p.l1_unstructured(mod, "weight", amount=5)
        hooks = list(mod._forward_pre_hooks.values())
        assert [type(h).__name__ for h in hooks] == ["L1Unstructured", "PruningContainer"]
        container = hooks[1]
        assert len(container) == 3 and container._tensor_name == "weight"
        assert [type(h).__name__ for h in container] == [
            "L1Unstructured",
            "LnStructured",
            "L1Unstructured",
        ]
        assert type(container[1]).__name__ == "LnStructured"
    ts, ws = tmods["conv"].state_dict(), wmods["conv"].state_dict()
    assert list(ws) == list(ts)
    for k in ts:
        np.testing.assert_array_equal(host(ws[k]), host(ts[k]), err_msg=k)
    for m, mods in ((torch, tmods), (tw, wmods)):
        mod = mods["conv"]
        orig = mod.weight_orig
        assert m.nn.utils.prune.remove(mod, "weight") is mod
        assert mod.weight is orig and isinstance(mod.weight, m.nn.Parameter)
        assert "weight" not in mod.__dict__ and not hasattr(mod, "weight_mask")
        assert m.nn.utils.prune.is_pruned(mod)  # the bias still is
        m.nn.utils.prune.remove(mod, "bias")
        assert not m.nn.utils.prune.is_pruned(mod)
        assert not m.nn.utils.prune.is_pruned(m.nn.Sequential(mod))
    assert_like_torch(tmods["conv"], wmods["conv"], "conv", dtype)
    assert list(wmods["conv"].state_dict()) == ["weight", "bias"]  # weight moved to the end


@pytest.mark.parametrize("amount", [0.35, 20, 0])
def test_global_unstructured_like_torch(backend: str, amount: float) -> None:
    mods = twin_modules()
    for m, ms in zip((torch, tw), mods):
        p = m.nn.utils.prune
        p.l1_unstructured(ms["fc"], "bias", 2)  # an existing mask is the default one
        params = [(ms["fc"], "weight"), (ms["conv"], "weight"), (ms["fc"], "bias")]
        scores = {(ms["conv"], "weight"): ms["conv"].weight.detach() * 0.5}
        out = p.global_unstructured(
            params,
            pruning_method=p.L1Unstructured,
            importance_scores=scores,
            amount=amount,
        )
        assert out is None
        assert m.nn.utils.prune.is_pruned(m.nn.Sequential(ms["fc"], ms["conv"]))
    for key in ("fc", "conv"):
        assert_like_torch(mods[0][key], mods[1][key], key)
    total = sum(host(mods[1][k].weight_mask).size for k in ("fc", "conv")) + 5
    zeros = sum((host(getattr(mods[1][k], n)) == 0).sum() for k, n in
                [("fc", "weight_mask"), ("conv", "weight_mask"), ("fc", "bias_mask")])  # fmt: skip
    # the amount is of the entries the bias' mask left (2 of them were already pruned)
    expected = amount if isinstance(amount, int) else round(amount * (total - 2))
    assert zeros == 2 + expected


def test_fine_tuning_keeps_pruned_weights_zero(backend: str) -> None:
    """SGD steps through the hooks: the effective weight stays masked, the original moves
    only where kept, as torch's."""
    mods = twin_modules()
    for m, ms in zip((torch, tw), mods):
        mod = ms["fc"]
        m.nn.utils.prune.ln_structured(mod, "weight", 0.4, 1, 1)
        opt = m.optim.SGD(mod.parameters(), lr=0.1, momentum=0.9)
        x = m.tensor(np.random.RandomState(2).randn(4, 6), dtype=m.float64)
        for _ in range(3):
            opt.zero_grad()
            mod(x).pow(2).mean().backward()
            opt.step()
        mod(x)  # the hook recomputes weight from the stepped original
    t, w = mods[0]["fc"], mods[1]["fc"]
    np.testing.assert_allclose(host(w.weight_orig), host(t.weight_orig), rtol=1e-12)
    np.testing.assert_allclose(host(w.weight), host(t.weight), rtol=1e-12)
    assert (host(w.weight)[host(w.weight_mask) == 0] == 0).all()
    assert (host(w.weight_orig.grad)[host(w.weight_mask) == 0] == 0).all()


class EveryOther(tw.nn.utils.prune.BasePruningMethod):
    """A user's method, as torch's tutorial writes one: writes through a view."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


class TorchEveryOther(torch.nn.utils.prune.BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def test_custom_method_and_prune_like_torch(backend: str) -> None:
    mods = twin_modules()
    for method, ms in zip((TorchEveryOther, EveryOther), mods):
        method.apply(ms["conv"], "weight")
        method.apply(ms["conv"], "weight")  # a container: every other of what is left
    assert_like_torch(mods[0]["conv"], mods[1]["conv"], "conv")
    # ``prune`` works on a tensor, no module involved
    x = np.random.RandomState(3).randn(4, 5)
    got = [
        host(m.nn.utils.prune.L1Unstructured(0.4).prune(m.tensor(x), importance_scores=scores))
        for m, scores in ((torch, torch.tensor(-x[::-1].copy())), (tw, tw.tensor(-x[::-1].copy())))
    ]
    np.testing.assert_array_equal(got[1], got[0])
    got = [host(m.nn.utils.prune.LnStructured(2, 1, 0).prune(m.tensor(x))) for m in (torch, tw)]
    np.testing.assert_array_equal(got[1], got[0])


@pytest.mark.parametrize("key", ["fc", "conv"])
@pytest.mark.parametrize(
    ("method", "amount", "dim"),
    [("random_unstructured", 0.3, None), ("random_unstructured", 4, None),
     ("random_structured", 0.5, 0), ("random_structured", 2, -1), ("random_structured", 0, 1)],
)  # fmt: skip
def test_random_methods_prune_the_amount(
    backend: str, key: str, method: str, amount: float, dim: Any
) -> None:
    mod = twin_modules()[1][key]
    args = () if dim is None else (dim,)
    getattr(tw.nn.utils.prune, method)(mod, "weight", amount, *args)
    mask = host(mod.weight_mask)
    assert set(np.unique(mask)) <= {0.0, 1.0} and mask.dtype == np.float64
    if dim is None:
        expected = amount if isinstance(amount, int) else round(amount * mask.size)
        assert (mask == 0).sum() == expected
    else:
        per_channel = np.moveaxis(mask, dim, 0).reshape(mask.shape[dim], -1)
        assert all(len(set(row)) == 1 for row in per_channel)  # whole channels go
        n = mask.shape[dim]
        expected = amount if isinstance(amount, int) else round(amount * n)
        assert (per_channel[:, 0] == 0).sum() == expected
    np.testing.assert_array_equal(host(mod.weight), host(mod.weight_orig) * mask)
    # structured on top: only channels still alive are chosen among
    tw.nn.utils.prune.random_structured(mod, "weight", 1, 0)
    assert len(mod._forward_pre_hooks[max(mod._forward_pre_hooks)]) == 2


@pytest.mark.parametrize("seed", [0, 7])
def test_random_masks_equal_torchs_on_its_stream(seed: int) -> None:
    """On torch:cpu tw draws torch's own stream: the same seed gives torch's masks."""
    with entered("torch:cpu"):
        mods = twin_modules()
        for m, ms in zip((torch, tw), mods):
            m.manual_seed(seed)
            m.nn.utils.prune.random_unstructured(ms["conv"], "weight", 0.4)
            m.nn.utils.prune.random_structured(ms["conv"], "weight", 0.5, 0)
            m.nn.utils.prune.random_structured(ms["fc"], "weight", 2, 1)
            m.nn.utils.prune.random_unstructured(ms["fc"], "bias", 2)
        for key in ("fc", "conv"):
            assert_like_torch(mods[0][key], mods[1][key], key)


@pytest.mark.cunumeric
def test_pruned_state_dict_loads_into_an_identity_pruned_module(backend: str) -> None:
    """torch's pruned state_dict loads into a module given the same keys by ``identity``;
    the next forward recomputes the pruned weight. A pruned module's weight is not a leaf:
    deepcopy refuses, as torch's."""
    tmod = twin_modules()[0]["conv"]
    torch.nn.utils.prune.ln_structured(tmod, "weight", 2, 1, 0)
    wmod = tw.nn.Conv2d(3, 4, 3).double()
    tw.nn.utils.prune.identity(wmod, "weight")
    wmod.load_state_dict({k: tw.tensor(host(v)) for k, v in tmod.state_dict().items()})
    x = np.random.RandomState(4).randn(1, 3, 5, 5)
    np.testing.assert_allclose(host(wmod(tw.tensor(x))), host(tmod(torch.tensor(x))), rtol=1e-12)
    np.testing.assert_array_equal(host(wmod.weight), host(tmod.weight))
    got = [raised(copy.deepcopy, mod) for mod in (tmod, wmod)]
    assert got[1][0] is got[0][0] is RuntimeError


def test_fro_norm_of_conv_channels_raises(backend: str) -> None:
    """torch.norm's 'fro' takes a matrix: channels of a 4-d weight are 3-d."""
    mods = twin_modules()
    got = [
        raised(m.nn.utils.prune.ln_structured, ms["conv"], "weight", 1, "fro", 0)
        for m, ms in zip((torch, tw), mods)
    ]
    assert got[1][0] is got[0][0] is RuntimeError and "dim must be a 2-tuple" in got[1][1]
    assert list(mods[1]["conv"].state_dict()) == list(mods[0]["conv"].state_dict())


def raised(fn: Callable, *args: Any) -> tuple[type, str]:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the class itself is compared with torch's
        return type(e), str(e)
    raise AssertionError("no exception")


ERRORS: dict[str, tuple[Callable, str]] = {
    "amount negative": (lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "weight", -1),
                        "non-negative integer"),
    "amount above 1": (lambda m, mod: m.nn.utils.prune.random_unstructured(mod, "weight", 1.5),
                       "float in the range [0, 1]"),
    "amount str": (lambda m, mod: m.nn.utils.prune.L1Unstructured("0.5"), "int or float"),
    "amount too many": (lambda m, mod: m.nn.utils.prune.l1_unstructured(mod, "weight", 31),
                        "smaller than the number of parameters"),
    "channels too many": (lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 6, 2, 0),
                          "smaller than the number of parameters"),
    "structured 1-d": (lambda m, mod: m.nn.utils.prune.random_structured(mod, "bias", 1, 0),
                       "multidimensional"),
    "dim too big": (lambda m, mod: m.nn.utils.prune.ln_structured(mod, "weight", 1, 2, 2),
                    "Invalid index 2"),
    "scores shape": (lambda m, mod: m.nn.utils.prune.l1_unstructured(
        mod, "weight", 1, importance_scores=m.ones(3)), "same shape"),
    "remove unpruned": (lambda m, mod: m.nn.utils.prune.remove(mod, "weight"),
                        "has to be pruned"),
    "custom mask shape": (lambda m, mod: m.nn.utils.prune.custom_from_mask(
        mod, "weight", m.ones(3)), "must match"),
    "global not iterable": (lambda m, mod: m.nn.utils.prune.global_unstructured(
        5, m.nn.utils.prune.L1Unstructured, amount=1), "not an Iterable"),
    "global scores list": (lambda m, mod: m.nn.utils.prune.global_unstructured(
        [(mod, "weight")], m.nn.utils.prune.L1Unstructured, importance_scores=[], amount=1),
        "must be of type dict"),
    "global one-shot iterator": (lambda m, mod: m.nn.utils.prune.global_unstructured(
        iter([(mod, "weight")]), m.nn.utils.prune.L1Unstructured, amount=1), "non-empty"),
    "global structured": (lambda m, mod: m.nn.utils.prune.global_unstructured(
        [(mod, "weight")], m.nn.utils.prune.LnStructured, amount=1, n=2), "unstructured"),
    "container wrong name": (lambda m, mod: m.nn.utils.prune.PruningContainer(
        m.nn.utils.prune.Identity.apply(mod, "weight")).add_pruning_method(
        m.nn.utils.prune.Identity.apply(mod, "bias")), "Found 'bias'"),
    "container not a method": (lambda m, mod: m.nn.utils.prune.PruningContainer(
        m.nn.utils.prune.Identity.apply(mod, "weight")).add_pruning_method(3),
        "not a BasePruningMethod"),
    "unknown type": (lambda m, mod: m.nn.utils.prune.PruningContainer(
        type("Odd", (m.nn.utils.prune.Identity,), {"PRUNING_TYPE": "odd"}).apply(mod, "weight")
    ).compute_mask(mod.weight, mod.weight_mask), "Unrecognized PRUNING_TYPE"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_like_torch(backend: str, case: str) -> None:
    fn, gist = ERRORS[case]
    mods = twin_modules()
    got = [raised(fn, m, ms["fc"]) for m, ms in zip((torch, tw), mods)]
    assert got[1][0] is got[0][0], (got[1], got[0])
    assert gist in got[0][1] and gist in got[1][1], (got[1], got[0])
    # a failed first pruning leaves the module as it was
    t, w = mods[0]["fc"], mods[1]["fc"]
    assert list(w.state_dict()) == list(t.state_dict())
    assert [n for n, _ in w.named_parameters()] == [n for n, _ in t.named_parameters()]


def test_tied_magnitudes_prune_the_same_count(backend: str) -> None:
    """Where magnitudes tie at the threshold, which of them go is topk's choice: unspecified
    in torch (its CPU kernel's order), the lowest indices in tw (a stable topk). The count and
    the pruned magnitudes agree."""
    values = np.array([[1.0, -1.0, 2.0, 1.0], [0.5, -2.0, 1.0, 0.5], [1.0, 3.0, -1.0, 2.0]])
    masks = []
    for m in (torch, tw):
        mod = m.nn.Linear(4, 3).double()
        with m.no_grad():
            mod.weight.copy_(m.tensor(values))
        m.nn.utils.prune.l1_unstructured(mod, "weight", 5)
        masks.append(host(mod.weight_mask))
    assert masks[1].sum() == masks[0].sum() == values.size - 5
    pruned = [np.sort(np.abs(values[mask == 0])) for mask in masks]
    np.testing.assert_array_equal(pruned[1], pruned[0])
    np.testing.assert_array_equal(masks[1].ravel()[[0, 1, 3]], [0.0, 0.0, 0.0])  # stable: first
