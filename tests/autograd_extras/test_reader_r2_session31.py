"""Reader r2 (session 31): defects found in this session's changes (regressions first) and
older ones they expose, each against real torch 2.13 through tests/snippet_outcomes.py."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same

DEVICES = ["numpy", "torch:cpu"]


def _square(m: Any) -> Any:
    """A fixed, well-conditioned 3x3 float64 matrix (no random draws)."""
    return m.tensor([[2.0, 1.0, 0.3], [0.5, 3.0, 0.2], [0.1, 0.4, 2.5]], dtype=m.float64)


# -- REGRESSION 1 ---------------------------------------------------------------------------

#: decomposition -> (its outputs from A, the output written).
DECOMPOSITIONS: dict[str, tuple[Callable[[Any, Any], tuple], int]] = {
    "qr Q": (lambda m, a: tuple(m.linalg.qr(a)), 0),
    "qr R": (lambda m, a: tuple(m.linalg.qr(a)), 1),
    "eigh V": (lambda m, a: tuple(m.linalg.eigh(a + a.mT)), 1),
    "svd U": (lambda m, a: tuple(m.linalg.svd(a)), 0),
}


def _rebound_then_written(name: str) -> Callable:
    def program(m: Any) -> Any:
        a = _square(m).requires_grad_()
        outs = DECOMPOSITIONS[name][0](m, a)
        o = outs[DECOMPOSITIONS[name][1]]
        o.data = o.data * 2  # (new memory: torch's node keeps the old one it saved)
        o.data.add_(1)  # (a write into the new memory: not what torch's node reads)
        loss = sum((x * x).sum() for x in outs if x.requires_grad)
        return m.autograd.grad(loss, a)

    return program


@pytest.mark.parametrize("name", list(DECOMPOSITIONS))
def test_write_after_rebinding_a_decomposition_output_stays_unseen(name: str) -> None:
    same(_rebound_then_written(name), "torch:cpu", decimals=9)


# -- REGRESSION 2 ---------------------------------------------------------------------------

#: kind -> (input shape, weight shape, bias size, call).
CONVS: dict[str, tuple[tuple, tuple, int, Callable]] = {
    "conv1d": ((2, 4, 5), (3, 4, 3), 3, lambda F, x, w, b: F.conv1d(x, w, b, padding=1)),
    "conv2d": ((2, 4, 5, 5), (3, 4, 3, 3), 3, lambda F, x, w, b: F.conv2d(x, w, b)),
    "conv3d": ((1, 2, 3, 3, 3), (3, 2, 2, 2, 2), 3, lambda F, x, w, b: F.conv3d(x, w, b)),
    "conv_transpose1d": (
        (2, 4, 5),
        (4, 3, 3),
        3,
        lambda F, x, w, b: F.conv_transpose1d(x, w, b, stride=2),
    ),
    "conv_transpose2d": (
        (2, 4, 3, 3),
        (4, 3, 2, 2),
        3,
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2),
    ),
}


def _bias_changed_in_place(kind: str) -> Callable:
    def program(m: Any) -> Any:
        xs, ws, nb, call = CONVS[kind]
        x = (m.arange(float(m.Size(xs).numel()), dtype=m.float64).reshape(xs) / 9).sin()
        w = (m.arange(float(m.Size(ws).numel()), dtype=m.float64).reshape(ws) / 5).cos()
        b0 = m.arange(1.0, nb + 1.0, dtype=m.float64).requires_grad_()
        x.requires_grad_()
        w.requires_grad_()
        b = b0 * 1
        y = call(m.nn.functional, x, w, b)
        b.mul_(2)  # (PyTorch's ConvolutionBackward0 saves the input and weight, no bias)
        return m.autograd.grad((y * y).sum(), (x, w, b0))

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["conv1d", "conv3d", "conv_transpose2d"])
def test_convolution_bias_changed_in_place_is_no_error(kind: str, device: str) -> None:
    same(_bias_changed_in_place(kind), device, decimals=9)


# -- older defects met on the way -----------------------------------------------------------


def _single_output_rebound_then_written(name: str) -> Callable:
    def program(m: Any) -> Any:
        a = _square(m).requires_grad_()
        y = m.linalg.inv(a) if name == "inv" else m.linalg.cholesky(a @ a.mT)
        y.data = y.data * 2
        y.data.add_(1)
        return m.autograd.grad((y * y).sum(), a)

    return program


@pytest.mark.parametrize("name", ["inv", "cholesky"])
def test_write_after_rebinding_a_fused_linalg_output_stays_unseen(name: str) -> None:
    same(_single_output_rebound_then_written(name), "torch:cpu", decimals=9)


def _conv_packed(kind: str) -> Callable:
    def program(m: Any) -> Any:
        xs, ws, _, call = CONVS[kind]
        x = m.ones(xs, dtype=m.float64).requires_grad_()
        w = m.ones(ws, dtype=m.float64).requires_grad_()
        packed = []

        def pack(t: Any) -> Any:
            packed.append(tuple(t.shape))
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = call(m.nn.functional, x, w, None)
        y.sum().backward()
        return sorted(packed), x.grad, w.grad

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["conv3d", "conv_transpose2d"])
def test_convolution_packs_input_and_weight(kind: str, device: str) -> None:
    same(_conv_packed(kind), device, decimals=9)


def _conv_double_backward_after_write(kind: str) -> Callable:
    def program(m: Any) -> Any:
        xs, ws, _, call = CONVS[kind]
        x = (m.arange(float(m.Size(xs).numel()), dtype=m.float64).reshape(xs) / 9).sin()
        w = (m.arange(float(m.Size(ws).numel()), dtype=m.float64).reshape(ws) / 5).cos()
        x.requires_grad_()
        w.requires_grad_()
        y = call(m.nn.functional, x, w, None)
        gx, gw = m.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        x.data.add_(1)  # (torch's double-backward nodes read x's memory: they see this)
        return m.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w))

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["conv3d"])
def test_convolution_double_backward_sees_a_data_write(kind: str, device: str) -> None:
    same(_conv_double_backward_after_write(kind), device, decimals=6)


def _lu_after_data_write(m: Any) -> Any:
    a = m.tensor([[2.0, 1.0], [0.5, 3.0]], dtype=m.float64).requires_grad_()
    _, low, up = m.linalg.lu(a)
    up.data.mul_(2)  # (torch's LinalgLuBackward0 reads the saved L and U's memory)
    return m.autograd.grad(low.sum() + up.sum(), a)


def test_lu_data_write_reaches_backward() -> None:
    same(_lu_after_data_write, "numpy", decimals=9)


def _view_grad_fn_after_data_write(op: str) -> Callable:
    def program(m: Any) -> Any:
        y = m.arange(1.0, 7.0, dtype=m.float64).requires_grad_().exp()
        part = {
            "split": lambda: y.split(2)[0],
            "unbind": lambda: y.view(3, 2).unbind(0)[0],
            "slice": lambda: y[0:2],
            "select": lambda: y[1],
        }[op]()
        part.data.mul_(2)  # (unseen by autograd: torch's view keeps its grad_fn)
        return type(part.grad_fn).__name__, part._version, y._version

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["split", "unbind", "slice", "select"])
def test_view_keeps_its_grad_fn_after_a_data_write(op: str, device: str) -> None:
    same(_view_grad_fn_after_data_write(op), device)


def _svd_data_write_after_create_graph(m: Any) -> Any:
    # (plus the identity: well-conditioned, where sin alone is of rank 2 and its second
    # derivative, ~1e29, follows LAPACK's rounding)
    a = (m.arange(12.0, dtype=m.float64).reshape(4, 3) * 0.37).sin() + m.eye(4, 3, dtype=m.float64)
    a = a.requires_grad_()
    u, s, _ = m.linalg.svd(a, full_matrices=False)
    weights = (m.arange(12.0, dtype=m.float64).reshape(4, 3) / 7).sin()
    (g,) = m.autograd.grad((u * u * weights).sum() + s.sum(), a, create_graph=True)
    s.data.mul_(2)  # (torch's double-backward graph reads the saved S's memory: sees this)
    return g, m.autograd.grad(g.sum(), a)


@pytest.mark.parametrize("device", DEVICES)
def test_svd_data_write_after_create_graph_reaches_second_backward(device: str) -> None:
    same(_svd_data_write_after_create_graph, device, decimals=6)


def _svd_pack_order(m: Any) -> Any:
    a = (m.arange(12.0, dtype=m.float64).reshape(4, 3) * 0.37).sin().requires_grad_()
    packed = []

    def pack(t: Any) -> Any:
        packed.append(tuple(t.shape))
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        m.linalg.svd(a, full_matrices=False)
    return packed


@pytest.mark.parametrize("device", DEVICES)
def test_svd_outputs_packed_in_torch_order(device: str) -> None:
    same(_svd_pack_order, device)
