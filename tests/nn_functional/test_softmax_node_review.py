"""Review of the one-node softmax/log_softmax decompositions (commit 8033e1e): their values,
first and second derivatives against torch 2.13 in float64, on the fused path and on the
core's reference (``reference_only``: cuPyNumeric's path, and every composite's double
backward), and the divergences from torch that the review found and recorded."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
from tensorweaver.ops.fusion import reference_only

PATHS = ["fused", "reference"]


def _path(path: str):
    return reference_only() if path == "reference" else nullcontext()


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((4, 5))
    rows[0, 2] = -np.inf  # one -inf entry: its probability is 0
    rows[1, :] = -np.inf  # an all -inf row: NaN, as torch
    return {
        "2d": rng.standard_normal((3, 4)),
        "3d-noncontiguous": rng.standard_normal((4, 3, 2)),
        "0d": np.array(0.7),
        "size-1": rng.standard_normal((3, 1)),
        "empty-axis": np.zeros((2, 0)),
        "empty-other": np.zeros((0, 3)),
        "-inf": rows,
    }


CASES = [
    (fn, name, dim)
    for fn in ("softmax", "log_softmax", "softmin")
    for name in _inputs()
    for dim in ((0, -1) if name in ("2d", "3d-noncontiguous") else (-1,))
]


def _call(lib, fn: str, x, dim: int, name: str):
    functional = torch.nn.functional if lib is torch else F
    if name == "3d-noncontiguous":
        x = x.transpose(0, 2)
    return getattr(functional, fn)(x, dim)


def _close(want: torch.Tensor, got: tw.Tensor, what: str) -> None:
    np.testing.assert_allclose(
        np.asarray(got.detach()), want.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=what
    )


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("fn", "name", "dim"), CASES, ids=[f"{f}-{n}-{d}" for f, n, d in CASES])
def test_values_and_two_derivatives_like_torch(
    backend: str, path: str, fn: str, name: str, dim: int
) -> None:
    value = _inputs()[name]
    xt = torch.tensor(value, requires_grad=True)
    xw = tw.tensor(value, requires_grad=True)
    yt = _call(torch, fn, xt, dim, name)
    with _path(path):
        yw = _call(tw, fn, xw, dim, name)
        _close(yt, yw, "value")
        up = np.random.default_rng(1).standard_normal(tuple(yt.shape))
        (gt,) = torch.autograd.grad(yt, xt, torch.tensor(up), create_graph=True)
        (gw,) = tw.autograd.grad(yw, xw, tw.tensor(up), create_graph=True)
        _close(gt, gw, "gradient")
        if not gt.requires_grad:  # an empty input: nothing to differentiate again
            return
        # Gradient also flows into y from a later use of it, besides through the gradient.
        (ht,) = torch.autograd.grad((gt * gt).sum() + (yt * yt).sum(), xt)
        (hw,) = tw.autograd.grad((gw * gw).sum() + (yw * yw).sum(), xw)
        _close(ht, hw, "second derivative")


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_dtype_argument_casts_an_integer_input_first(backend: str, fn: str) -> None:
    value = np.arange(6).reshape(2, 3)
    want = getattr(torch.nn.functional, fn)(torch.tensor(value), 1, dtype=torch.float64)
    got = getattr(F, fn)(tw.tensor(value), 1, dtype=tw.float64)
    assert got.dtype == tw.float64
    _close(want, got, "value")
    with pytest.raises(NotImplementedError):  # torch's CPU kernels refuse an int64 input too
        getattr(F, fn)(tw.tensor(value), 1)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_reference_node_refuses_an_output_changed_in_place_like_torch(
    backend: str, fn: str
) -> None:
    """The reference's node saves its output, as torch's SoftmaxBackward0 does: changing the
    output in place before backward raises, as in torch."""
    value = np.random.default_rng(2).standard_normal((3, 4))
    yt = getattr(torch.nn.functional, fn)(torch.tensor(value, requires_grad=True), 1)
    yt.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yt.sum().backward()
    with reference_only():
        yw = getattr(F, fn)(tw.tensor(value, requires_grad=True), 1)
        yw.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            yw.sum().backward()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_fused_node_refuses_an_output_changed_in_place_like_torch(backend: str, fn: str) -> None:
    """The fused node saves its output as a native array: the output tensor's in-place change
    reaches it through ``Tensor._assign`` (``autograd/node.py``'s ``output_changed``)."""
    value = np.random.default_rng(2).standard_normal((3, 4))
    yw = getattr(F, fn)(tw.tensor(value, requires_grad=True), 1)
    yw.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yw.sum().backward()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_node_name_and_next_functions_like_torch(backend: str, path: str, fn: str) -> None:
    value = np.random.default_rng(3).standard_normal((2, 3))
    yt = getattr(torch.nn.functional, fn)(torch.tensor(value, requires_grad=True), 1)
    with _path(path):
        yw = getattr(F, fn)(tw.tensor(value, requires_grad=True), 1)
    assert yw.grad_fn.name() == type(yt.grad_fn).__name__
    assert [type(f).__name__ for f, _ in yw.grad_fn.next_functions] == [
        type(f).__name__ for f, _ in yt.grad_fn.next_functions
    ]


def test_compiled_softmax_create_graph_gradient_requires_grad_on_replay() -> None:
    """On the default backend only: compiling for torch:cpu costs seconds. (A replayed
    program's create_graph gradient did not require grad: compiler/differentiable.py now
    runs the step again eagerly and differentiates that.)"""
    compiled = tw.compile(lambda t: (F.softmax(t, 1) * tw.arange(4.0)).sum())
    value = np.random.default_rng(4).standard_normal((3, 4))
    for shift in range(3):
        x = tw.tensor(value + shift, requires_grad=True)
        (g,) = tw.autograd.grad(compiled(x), x, create_graph=True)
        assert g.requires_grad, f"call {shift}"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_double_backward_after_a_freed_first_backward_raises_like_torch(
    backend: str, path: str, fn: str
) -> None:
    """The first-order gradient's graph goes through softmax's own node, as in torch: once a
    ``create_graph`` backward without ``retain_graph`` freed it, differentiating that gradient
    raises (the fused path recomputed softmax on stand-ins of its input, and did not)."""
    value = np.random.default_rng(5).standard_normal((3, 4))
    for lib, functional in ((torch, torch.nn.functional), (tw, F)):
        x = lib.tensor(value, requires_grad=True)
        with _path(path) if lib is tw else nullcontext():
            y = getattr(functional, fn)(x, 1)
            (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True, retain_graph=False)
            with pytest.raises(RuntimeError, match="backward through the graph a second time"):
                lib.autograd.grad((g * g).sum(), x)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_input_changed_in_place_before_backward_like_torch(backend: str, fn: str) -> None:
    value = np.random.default_rng(6).standard_normal((3, 4))
    grads = []
    for lib, functional in ((torch, torch.nn.functional), (tw, F)):
        x = lib.tensor(value, requires_grad=True)
        a = x * 1
        y = getattr(functional, fn)(a, 1)
        a.mul_(2)
        (y * lib.tensor(value)).sum().backward()
        grads.append(np.asarray(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-14)
