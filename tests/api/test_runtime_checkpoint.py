"""tw.utils.checkpoint against torch.utils.checkpoint: values, gradients, random draws."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch
import torch.utils.checkpoint as tcp
from tensorweaver.utils import checkpoint as wcp


def _pair(seed: int = 0) -> tuple:
    """A torch block and the same block in tensorweaver (float64, same weights)."""
    torch.manual_seed(seed)
    t = torch.nn.Sequential(
        torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 6), torch.nn.Sigmoid()
    ).double()
    w = tw.nn.Sequential(tw.nn.Linear(5, 6), tw.nn.Tanh(), tw.nn.Linear(6, 6), tw.nn.Sigmoid())
    w = w.double()
    with tw.no_grad():
        for pw, pt in zip(w.parameters(), t.parameters()):
            pw.copy_(tw.tensor(pt.detach().numpy()))
    return t, w


def _inputs() -> tuple:
    x = np.random.default_rng(1).standard_normal((4, 5))
    xt = torch.tensor(x, requires_grad=True)
    xw = tw.tensor(x, requires_grad=True)
    return xt, xw


def _close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
def test_values_and_gradients_match_torch(reentrant: bool) -> None:
    t, w = _pair()
    xt, xw = _inputs()

    def body(net, lib):
        def f(x, scale, *, shift=0.0):
            h = net(x) * scale + shift
            return h, {"mean": h.mean(), "label": "block"}, 7

        return f

    kw = {} if reentrant else {"shift": 0.5}
    yt, auxt, nt = tcp.checkpoint(body(t, torch), xt, 2.0, use_reentrant=reentrant, **kw)
    yw, auxw, nw = wcp.checkpoint(body(w, tw), xw, 2.0, use_reentrant=reentrant, **kw)
    assert (nw, auxw["label"]) == (nt, auxt["label"])
    _close(yw, yt)
    (yt.square().sum() + auxt["mean"]).backward()
    (yw.square().sum() + auxw["mean"]).backward()
    _close(xw.grad, xt.grad)
    for pw, pt in zip(w.parameters(), t.parameters()):
        _close(pw.grad, pt.grad)


def test_autograd_grad_reaches_module_parameters_and_input_without_grad() -> None:
    t, w = _pair()
    x = np.random.default_rng(2).standard_normal((3, 5))
    yt = tcp.checkpoint(t, torch.tensor(x), use_reentrant=False)
    yw = wcp.checkpoint(w, tw.tensor(x), use_reentrant=False)
    gt = torch.autograd.grad(yt.sum(), list(t.parameters()))
    gw = tw.autograd.grad(yw.sum(), list(w.parameters()))
    for a, b in zip(gw, gt):
        _close(a, b)


_global_net = None


def _through_global(x):
    """A block that reaches its module by a global name, as a training script does."""
    return _global_net(x)


def _through_dict(nets: dict):
    return lambda x: nets["net"](x) * 2  # the module held in a dict in the closure


@pytest.mark.parametrize("held", ["global", "dict"])
def test_autograd_grad_reaches_modules_named_as_globals_and_leaves_grad_alone(held: str) -> None:
    global _global_net
    t, w = _pair()
    x = np.random.default_rng(4).standard_normal((3, 5))
    got = []
    for net, lib, cp in ((t, torch, tcp), (w, tw, wcp)):
        _global_net = net
        function = _through_global if held == "global" else _through_dict({"net": net})
        y = cp.checkpoint(function, lib.tensor(x), use_reentrant=False)
        got.append(lib.autograd.grad(y.sum(), list(net.parameters())))
        assert all(p.grad is None for p in net.parameters())  # grad() fills no .grad
    for a, b in zip(got[1], got[0]):
        _close(a, b)


def _nested(lib, cp, x: np.ndarray) -> tuple:
    """Nested checkpoints over a tensor the functions reach only through their closure."""
    a = lib.tensor(x, requires_grad=True)
    k = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)

    def inner(v):
        return (v * k).sin()

    def outer(v):
        return cp.checkpoint(inner, v, use_reentrant=False).exp() * k

    y = cp.checkpoint(outer, a, use_reentrant=False)
    y.sum().backward()
    return y, a.grad, k.grad


def test_closure_tensor_gets_grad_and_nesting_matches() -> None:
    x = np.random.default_rng(3).standard_normal((4,))
    for w, t in zip(_nested(tw, wcp, x), _nested(torch, tcp, x)):
        _close(w, t)


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_dropout_masks_of_recomputation_are_those_of_forward(spec: str) -> None:
    tw.manual_seed(0)
    p = 0.4
    with tw.device(spec):
        x = tw.rand(2000, dtype=tw.float64) + 0.5
    x.requires_grad_()

    def f(v):
        return tw.nn.functional.dropout(v, p, True) * 3.0

    y = wcp.checkpoint(f, x, use_reentrant=False)
    y.sum().backward()
    kept = np.asarray(y.detach()) != 0
    np.testing.assert_allclose(np.asarray(x.grad), kept * 3.0 / (1 - p), rtol=1e-12)
    assert 0.5 < kept.mean() < 0.7

    x.grad = None
    y = wcp.checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    # Without preserving, the recomputation draws another mask: the gradient disagrees.
    assert not np.array_equal(np.asarray(x.grad) != 0, np.asarray(y.detach()) != 0)


def test_under_no_grad_nothing_is_recorded_and_values_match() -> None:
    t, w = _pair()
    x = np.random.default_rng(4).standard_normal((2, 5))
    with torch.no_grad():
        yt = tcp.checkpoint(t, torch.tensor(x), use_reentrant=False)
    with tw.no_grad():
        yw = wcp.checkpoint(w, tw.tensor(x), use_reentrant=False)
    assert yw.requires_grad is yt.requires_grad is False
    _close(yw, yt)


def test_checkpoint_sequential_matches_torch() -> None:
    t, w = _pair()
    xt, xw = _inputs()
    yt = tcp.checkpoint_sequential(t, 2, xt, use_reentrant=False)
    yw = wcp.checkpoint_sequential(w, 2, xw, use_reentrant=False)
    _close(yw, yt)
    yt.sum().backward()
    yw.sum().backward()
    _close(xw.grad, xt.grad)
    for pw, pt in zip(w.parameters(), t.parameters()):
        _close(pw.grad, pt.grad)


def _raised(fn, *args) -> type | None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e)
    return None


def test_warnings_and_errors_like_torch() -> None:
    for lib, cp in ((torch, tcp), (tw, wcp)):
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="use_reentrant"):
            cp.checkpoint(lambda v: v * 2, x)
        with pytest.warns(UserWarning, match="use_reentrant"):
            cp.checkpoint_sequential([lambda v: v * 2, lambda v: v + 1], 2, x)
        with pytest.warns(UserWarning, match="None of the inputs"):
            cp.checkpoint(lambda v: v * 2, lib.ones(2), use_reentrant=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cp.checkpoint(lambda v: v * 2, x, use_reentrant=False)
    for case in (
        lambda cp, x: cp.checkpoint(lambda v, a=0: v, x, a=1, use_reentrant=True),
        lambda cp, x: cp.checkpoint(lambda v: v, x, use_reentrant=True, debug=True),
        lambda cp, x: cp.checkpoint(lambda v: v, x, use_reentrant=False, determinism_check="x"),
        lambda cp, x: cp.checkpoint_sequential([lambda v: v], 1, x, use_reentrant=False, a=1),
    ):
        expected = _raised(case, tcp, torch.ones(2, requires_grad=True))
        assert expected is ValueError
        assert _raised(case, wcp, tw.ones(2, requires_grad=True)) is expected


def test_selective_checkpointing_gives_the_gradients_of_plain_checkpointing() -> None:
    assert [(m.name, m.value) for m in wcp.CheckpointPolicy] == [
        (m.name, m.value) for m in tcp.CheckpointPolicy
    ]
    t, w = _pair()
    xt, xw = _inputs()

    def policy(ctx, op, *args, **kwargs):
        return tcp.CheckpointPolicy.PREFER_RECOMPUTE

    yt = tcp.checkpoint(
        t,
        xt,
        use_reentrant=False,
        context_fn=lambda: tcp.create_selective_checkpoint_contexts(policy),
    )
    with wcp.set_checkpoint_early_stop(False), wcp.set_checkpoint_debug_enabled(None):
        yw = wcp.checkpoint(
            w,
            xw,
            use_reentrant=False,
            context_fn=lambda: wcp.create_selective_checkpoint_contexts(policy),
        )
    yt.sum().backward()
    yw.sum().backward()
    _close(yw, yt)
    _close(xw.grad, xt.grad)
    with pytest.raises(TypeError):
        wcp.create_selective_checkpoint_contexts("not a policy")


def _gradient_penalty(lib, cp, net, x: np.ndarray) -> list:
    """A gradient penalty through a checkpoint: create_graph=True, then second and third
    derivatives, reaching the input (through a non-leaf) and the module's parameters."""
    a = lib.tensor(x, requires_grad=True)
    y = cp.checkpoint(net, a * 1.5, use_reentrant=False)
    (g,) = lib.autograd.grad(y.square().sum(), a, create_graph=True)
    (g.norm(dim=1) - 1).square().mean().backward(retain_graph=True)
    (third,) = lib.autograd.grad(g.sum(), a)
    return [g, a.grad, third, *(p.grad for p in net.parameters())]


def test_create_graph_through_checkpoint_gives_higher_derivatives_as_torch() -> None:
    t, w = _pair()
    x = np.random.default_rng(5).standard_normal((4, 5))
    for a, b in zip(_gradient_penalty(tw, wcp, w, x), _gradient_penalty(torch, tcp, t, x)):
        _close(a, b)


def _double_backward_through_closure(lib, cp, x: np.ndarray) -> list:
    """backward(create_graph=True) through a checkpoint returning a tuple, over a tensor the
    function reaches only through its closure; then a backward of the gradients."""
    a = lib.tensor(x, requires_grad=True)
    k = lib.tensor(0.7, dtype=lib.float64, requires_grad=True)
    y1, y2 = cp.checkpoint(lambda v: ((v * k).sin(), v**3 * k), a, use_reentrant=False)
    (y1.sum() + 2 * y2.sum()).backward(create_graph=True)
    ga, gk = a.grad, k.grad
    a.grad = k.grad = None
    (ga.square().sum() + gk).backward()
    return [ga, gk, a.grad, k.grad]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_double_backward_reaches_closure_tensors_as_torch() -> None:
    x = np.random.default_rng(6).standard_normal((3,))
    got = _double_backward_through_closure(tw, wcp, x)
    for a, b in zip(got, _double_backward_through_closure(torch, tcp, x)):
        _close(a, b)
