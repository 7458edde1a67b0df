"""A write through ``.data`` into a tensor that PyTorch's node saves, between forward and
backward, reaches that node's backward (PyTorch's node reads the saved tensor's memory, and
such a write bumps no version). Before session 30 these read forward-time values silently:
linear's input and weight (its fused node kept the arrays it was given), linalg.solve's
result of a vector or ``left=False`` (a squeeze or transpose computed from the node's
output, not a view of it), cholesky's upper factor (a computed transpose), and on torch:cpu
every whole linalg call's result (the backend's recorded output kept its old values)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import grad_fn_name, result_doubled_through_data, same, same_each

SPECS = ["numpy", "torch:cpu"]


def _linear(m: Any, written: str, shape: tuple, bias: bool, create_graph: bool) -> list:
    """The gradients of ``linear(x, w, b)`` (and of its gradient's square with
    ``create_graph``) after ``written`` (x or w) was doubled through ``.data``."""
    w = (m.arange(12.0, dtype=m.float64).reshape(3, 4) / 10).requires_grad_()
    b = m.linspace(-1.0, 1.0, 3, dtype=m.float64).requires_grad_() if bias else None
    x = (m.linspace(-2.0, 2.0, 4 * shape[0] * shape[-2], dtype=m.float64) ** 2).reshape(shape)
    x.requires_grad_()
    y = m.nn.functional.linear(x, w, b)
    (x if written == "x" else w).data.mul_(2.0)
    if create_graph:
        gx, gw = m.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        return list(m.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w)))
    (y * y).sum().backward()
    return [x.grad, w.grad, None if b is None else b.grad]


@pytest.mark.parametrize("spec", SPECS)
def test_linear_reads_its_data_written_input_and_weight(spec: str) -> None:
    programs: dict[str, Callable] = {}
    for written in ("x", "w"):
        for shape in ((2, 4), (2, 3, 4)):
            for bias in (True, False):
                if written == "x" and len(shape) == 3 and not bias:
                    continue  # (matmul's: below)
                key = f"{written} {len(shape)}-d {'bias' if bias else 'no bias'}"
                programs[key] = lambda m, a=(written, shape, bias, False): _linear(m, *a)
        programs[f"{written} create_graph"] = lambda m, w=written: _linear(
            m, w, (2, 3, 4), True, True
        )
    same_each(programs, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_batched_product_reads_its_data_written_input(spec: str) -> None:
    same_each(
        {
            "linear": lambda m: _linear(m, "x", (2, 3, 4), False, False),
            "linear create_graph": lambda m: _linear(m, "x", (2, 3, 4), False, True),
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_linear_module_weight_written_through_data(spec: str) -> None:
    def program(m: Any) -> list:
        layer = m.nn.Linear(4, 3).double()
        with m.no_grad():
            layer.weight.copy_(m.arange(12.0, dtype=m.float64).reshape(3, 4).sin())
            layer.bias.copy_(m.arange(3.0, dtype=m.float64).cos())
        x = m.ones(5, 4, dtype=m.float64, requires_grad=True)
        y = layer(x)
        layer.weight.data.sub_(0.5)
        y.pow(2).sum().backward()
        return [x.grad, layer.weight.grad, layer.bias.grad]

    same(program, spec)


def _solve(m: Any, b: list, left: bool) -> Any:
    a = m.tensor([[4.0, 1.0], [2.0, 3.0]], dtype=m.float64, requires_grad=True)
    x = m.linalg.solve(a, m.tensor(b, dtype=m.float64), left=left)
    x.data.mul_(2)
    (x * x).sum().backward()
    return a.grad


@pytest.mark.parametrize("spec", SPECS)
def test_solve_reads_its_data_written_result(spec: str) -> None:
    matrix = [[1.0, 2.0], [0.5, -1.0]]
    same_each(
        {
            "vector": lambda m: _solve(m, [1.0, 2.0], True),
            "matrix": lambda m: _solve(m, matrix, True),
            "from the right": lambda m: _solve(m, matrix, False),
        },
        spec,
    )


def _positive(m: Any, a: Any) -> Any:
    return a @ a.mT + m.eye(2, dtype=a.dtype)


LINALG = {
    "cholesky": lambda m, a: m.linalg.cholesky(_positive(m, a)),
    "cholesky upper": lambda m, a: m.linalg.cholesky(_positive(m, a), upper=True),
    "cholesky_ex upper": lambda m, a: m.linalg.cholesky_ex(_positive(m, a), upper=True).L,
    "det": lambda m, a: m.linalg.det(a),
    "inv": lambda m, a: m.linalg.inv(a),
    "solve_triangular": lambda m, a: m.linalg.solve_triangular(a.triu(), a, upper=True),
}


@pytest.mark.parametrize("spec", SPECS)
def test_linalg_results_written_through_data(spec: str) -> None:
    same_each({name: result_doubled_through_data(op) for name, op in LINALG.items()}, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_real_and_imag_node_names(spec: str) -> None:
    """(their next_functions: see test_kept_result_rules_session29.py)"""

    def program(m: Any) -> list:
        r = m.tensor([0.5, 1.5], dtype=m.float64, requires_grad=True)
        z = m.polar(r, r * 2)
        return [z.real.grad_fn.name(), m.imag(z).grad_fn.name(), m.real(z * 2).grad_fn.name()]

    same(program, spec)


def _cdist(m: Any, p: float, rows: int, write: bool) -> list:
    """cdist's gradients (a repeated point: a zero distance and zero gaps), its result
    doubled through ``.data`` first with ``write``, and its node's name."""
    x1 = m.linspace(-1.0, 2.0, rows * 3, dtype=m.float64).reshape(1, rows, 3) ** 2
    x2 = m.cat([x1[:, :1], m.linspace(-1.0, 1.0, 9, dtype=m.float64).reshape(1, 3, 3)], 1)
    x1, x2 = x1.expand(2, rows, 3).requires_grad_(), x2.requires_grad_()
    y = m.cdist(x1, x2, p=p)
    if write:
        y.data.mul_(2)
    (y * m.arange(8.0, dtype=m.float64).reshape(2, 1, 4)).sum().backward()
    # (the name below 26 rows: above, tw names the matrix product's node CdistBackward0, where
    # torch's is the ViewBackward0 of its _euclidean_dist, pre-existing)
    return [x1.grad, x2.grad, grad_fn_name(y) if rows < 26 else None]


@pytest.mark.parametrize("spec", SPECS)
def test_cdist_reads_its_data_written_result(spec: str) -> None:
    """(PyTorch's CdistBackward0 reads its result but for p = 0 and 1; above 25 rows, p = 2
    goes by a matrix product whose backward reads it too)"""
    programs = {
        f"p={p} rows={rows} write={write}": lambda m, a=(p, rows, write): _cdist(m, *a)
        for p in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf"))
        for rows in (3, 30)
        for write in (False, True)
    }
    same_each(programs, spec)


@pytest.mark.parametrize("p", [0.5, 1.5, 2.0, 3.0])
def test_cdist_finite_differences(p: float) -> None:
    """(first and second order: PyTorch has no second derivative of cdist)"""
    import tensorweaver as tw

    x1 = tw.tensor([[0.3, -1.2], [2.0, 0.7], [0.1, -0.4]], dtype=tw.float64, requires_grad=True)
    x2 = tw.tensor([[1.0, 0.5], [-0.6, 0.2]], dtype=tw.float64, requires_grad=True)
    assert tw.autograd.gradcheck(lambda a, b: tw.cdist(a, b, p=p), (x1, x2))
    assert tw.autograd.gradgradcheck(lambda a, b: tw.cdist(a, b, p=p), (x1, x2))


def _conv(m: Any, written: str, dims: int, transposed: bool) -> list:
    """The gradients of a convolution after ``written`` (x or w) was doubled through
    ``.data`` (PyTorch's ConvolutionBackward0 saves both)."""
    x = m.linspace(-1.0, 1.0, 4 * 4**dims, dtype=m.float64).reshape((2, 2) + (4,) * dims)
    w = m.linspace(-0.5, 0.7, 6 * 2**dims, dtype=m.float64)
    w = w.reshape(((2, 3) if transposed else (3, 2)) + (2,) * dims)
    x, w = x.requires_grad_(), w.requires_grad_()
    y = getattr(m.nn.functional, f"conv{'_transpose' if transposed else ''}{dims}d")(x, w)
    (x if written == "x" else w).data.mul_(2)
    (y * y).sum().backward()
    return [x.grad, w.grad]


#: (written, dims, transposed) -> whether numpy runs the reference decomposition (no fused
#: kernel there for conv3d and the transposed ones), whose inner nodes keep copies.
CONVS = {
    (written, dims, transposed): transposed or (dims == 3 and written == "x")
    for written in ("x", "w")
    for dims in (1, 2, 3)
    for transposed in (False, True)
}


def _conv_programs(missed: bool) -> dict[str, Callable]:
    return {
        f"{w} {d}-d{' transposed' if t else ''}": lambda m, a=(w, d, t): _conv(m, *a)
        for (w, d, t), misses in CONVS.items()
        if misses == missed
    }


@pytest.mark.parametrize("spec", SPECS)
def test_convolutions_read_their_data_written_input_and_weight(spec: str) -> None:
    programs = _conv_programs(False)
    if spec == "torch:cpu":  # (the backend's fused kernels for each)
        programs.update(_conv_programs(True))
    same_each(programs, spec)


def test_convolutions_by_the_reference_read_a_data_write() -> None:
    """(fixed in session 31: one node records the reference, ops/composite.py ``Traced``)"""
    same_each(_conv_programs(True), "numpy")
