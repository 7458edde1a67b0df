"""Reader r2, session 35: a rebinding of a linalg input's .data leaves memory that a view's
base or a NumPy array shares as it was (wave 1's first fix wrote into it: reverted), and older
defects of linalg, indexing and pow nodes as strict xfails."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import grid, same, walk


# ---- 1. REGRESSION: tests/linalg/test_linalg_saved_session33.py ----------------------------
def _rebound_shared(kind: str) -> Callable:
    """A leaf over memory another live array uses (a view of a base, an array from NumPy),
    rebound through ``.data =`` after a linalg call: PyTorch's rebinding leaves that memory
    as it was."""

    def program(m: Any) -> Any:
        n = np.array([[0.5, 0.2, 0.1], [0.3, 0.4, 0.2], [0.1, 0.2, 0.6]])
        base = m.from_numpy(n) if kind == "from_numpy" else m.tensor(n.T.copy())
        a = (base if kind == "from_numpy" else base.t()).requires_grad_()
        y = m.linalg.matrix_exp(a)
        a.data = m.zeros(3, 3, dtype=m.float64)
        y.sum().backward()
        return base, m.tensor(n)

    return program


@pytest.mark.parametrize("kind", ["transposed", "from_numpy"])
def test_rebound_input_leaves_shared_memory(kind: str) -> None:
    same(_rebound_shared(kind), "torch:cpu", decimals=8)


# ---- 2. older: tests/linalg/test_linalg_saved_session33.py -----------------------------------
def _input_of_two_calls(m: Any) -> Any:
    """An input of two linalg calls written through ``.data`` before backward: both
    PyTorch nodes read the new values."""
    a = m.tensor([[0.5, 0.2, 0.1], [0.3, 0.4, 0.2], [0.1, 0.2, 0.6]], requires_grad=True)
    y1, y2 = m.linalg.pinv(a), m.linalg.matrix_exp(a)
    a.data.mul_(1.5)
    return m.autograd.grad((y1 * y1).sum() + (y2 * y2).sum(), a)


def test_input_of_two_calls_written() -> None:
    """Before (session 36): both torch:cpu records read the old values (each held its leaf
    of the array as it was); now the backend's rebind_linalg_input sets the shared leaf's
    .data to the new array at backward."""
    same(_input_of_two_calls, "torch:cpu", decimals=8)


# ---- 3. older: tests/linalg/test_linalg_saved_session33.py -----------------------------------
def _shared_input_written(m: Any) -> Any:
    """A leaf over a NumPy array's memory written through ``.data`` after a linalg call."""
    n = np.array([[0.5, 0.2], [0.3, 0.4]])
    a = m.from_numpy(n).requires_grad_()
    y = m.linalg.pinv(a)
    a.data.mul_(1.5)
    return m.autograd.grad((y * y).sum(), a), m.tensor(n)


def test_shared_input_written_through_data() -> None:
    """Before (session 36): torch:cpu raised torch's 'modified by an inplace operation' (the
    recorded leaf was t.detach(), sharing t's version counter); now t.data's."""
    same(_shared_input_written, "torch:cpu", decimals=8)


# ---- 4. older (helper L): tests/autograd_extras/test_saved_hooks_session35.py or similar --------
def _output_doubled_after_create_graph(op: str) -> Callable:
    """A create_graph gradient of ``op``'s output (exp, tanh: PyTorch's node saves the
    result), then the output doubled through ``.data``: the second-order gradient reads the
    doubled memory in PyTorch."""

    def program(m: Any) -> Any:
        a = m.tensor([0.5], dtype=m.float64, requires_grad=True)
        d = getattr(a, op)()
        (g,) = m.autograd.grad((d * d).sum(), a, create_graph=True)
        d.data.mul_(2)
        return g, m.autograd.grad(g.sum(), a)

    return program


@pytest.mark.parametrize(
    "op",
    [
        "exp",
        "tanh",
    ],
)
def test_output_written_after_create_graph(backend: str, op: str) -> None:
    same(_output_doubled_after_create_graph(op), backend, decimals=8)


# ---- 5. older: tests/linalg (matrix_exp's create_graph graph on torch:cpu) -------------------
def _matrix_exp_gradient_node(m: Any) -> Any:
    """The grad_fn of matrix_exp's create_graph gradient (PyTorch: its block formula's
    narrow, a SliceBackward0)."""
    a = m.tensor([[0.5, 0.2], [0.3, 0.4]], dtype=m.float64, requires_grad=True)
    (g,) = m.autograd.grad(m.linalg.matrix_exp(a).sum(), a, create_graph=True)
    return walk(g.grad_fn, 1)


def test_matrix_exp_create_graph_node_on_torch() -> None:
    """Before (session 36): torch:cpu differentiated the core's decomposition (MulBackward0
    on top); now its one-output node applies the block formula (linalg/fused.py _as_rule)."""
    same(_matrix_exp_gradient_node, "torch:cpu")


# ---- 6. older: tests/tensor/test_index_checks_session34.py ------------------------------------
#: index -> what x[index] is given where saved_tensors_hooks' unpack changes the index
INDICES_UNPACKED: dict[str, Callable[[Any], Any]] = {
    "range": lambda m: range(0, 3, 2),
    "tuple of lists": lambda m: ([0, 2], [1, 0]),
    "0-d bool and a list": lambda m: (m.tensor(True), [0, 2]),
}


def _index_unpacked_as_zeros(index: Callable[[Any], Any]) -> Callable:
    def program(m: Any) -> Any:
        x = grid(m, 3, 4).requires_grad_()

        def unpack(t: Any) -> Any:
            return t if t.dtype.is_floating_point else m.zeros_like(t)

        with m.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            y = x[index(m)]
        w = m.arange(1.0, y.numel() + 1.0, dtype=m.float64).reshape(y.shape)
        return m.autograd.grad((y * w).sum(), x)

    return program


@pytest.mark.parametrize("name", list(INDICES_UNPACKED))
def test_index_read_from_unpacked_hooks(backend: str, name: str) -> None:
    same(_index_unpacked_as_zeros(INDICES_UNPACKED[name]), backend)


# ---- 7. older: tests/tensor/test_index_checks_session34.py ------------------------------------
def _uint8_array_mask_write(m: Any) -> Any:
    x = grid(m, 3, 4)
    x[np.array([1, 0, 1], dtype=np.uint8)] = -1.0
    return x


def test_uint8_array_mask_write(backend: str) -> None:
    same(_uint8_array_mask_write, backend)


# ---- 8. older: tests/tensor/ (pow's nodes; `backend` fixture) --------------------------------
def _root_power_nodes(power: float) -> Callable:
    """x ** 0.5 and x ** -0.5: PyTorch's PowBackward0, whose create_graph gradient is
    g * (p * x ** (p - 1)) (MulBackward0 over a MulBackward1)."""

    def program(m: Any) -> Any:
        x = m.tensor([0.5, 2.0], dtype=m.float64, requires_grad=True)
        y = x**power
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        return walk(y.grad_fn, 1), walk(g.grad_fn, 2), g

    return program


@pytest.mark.parametrize("power", [0.5, -0.5])
def test_root_power_nodes(backend: str, power: float) -> None:
    same(_root_power_nodes(power), backend)
