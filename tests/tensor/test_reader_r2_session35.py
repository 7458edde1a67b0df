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


@pytest.mark.xfail(
    strict=True,
    reason="older (HEAD too): on torch:cpu an input of two "
    "linalg calls written through .data before backward: both records read the old values. "
    "Cause: the backend's record of each call holds its leaf of the array as it was. Fix: the "
    "backend's recorded leaf (shared by both calls through _LEAVES) takes the new data "
    "(tests/linalg/test_linalg_saved_session33.py _TORCH_RECORD_LEFT)",
)
def test_input_of_two_calls_written() -> None:
    same(_input_of_two_calls, "torch:cpu", decimals=8)


# ---- 3. older: tests/linalg/test_linalg_saved_session33.py -----------------------------------
def _shared_input_written(m: Any) -> Any:
    """A leaf over a NumPy array's memory written through ``.data`` after a linalg call."""
    n = np.array([[0.5, 0.2], [0.3, 0.4]])
    a = m.from_numpy(n).requires_grad_()
    y = m.linalg.pinv(a)
    a.data.mul_(1.5)
    return m.autograd.grad((y * y).sum(), a), m.tensor(n)


@pytest.mark.xfail(
    strict=True,
    reason="older (HEAD too): torch:cpu raises torch's 'modified by an inplace operation' "
    "for a write through .data of an input whose memory NumPy shares (from_numpy, or "
    ".numpy() called before), after a linalg call. Cause: plugins/torch-backend "
    "tensorweaver_torch/linalg.py _new_leaf makes the recorded leaf by t.detach(), which "
    "shares t's version counter, and the shared-memory write is a torch in-place op on t. "
    "Fix: _new_leaf's leaf = t.data.requires_grad_() (same memory, its own version counter, "
    "as PyTorch's .data write does not bump the saved input's version)",
)
def test_shared_input_written_through_data() -> None:
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


@pytest.mark.xfail(
    strict=True,
    reason="older (HEAD too; helper L): exp's/tanh's output doubled through .data after a "
    "create_graph gradient: the second-order gradient reads the old values in part "
    "(exp at 0.5: 2/3 of PyTorch's). Cause: autograd/node.py output_rewritten rebinds the "
    "node's saved array (saved is old -> node.saved = new), but the nodes the create_graph "
    "backward made (the MulBackward0 of g * result, the rule's Tensor over the saved array) "
    "keep the old array. Fix: the create_graph rule wraps the saved array in one Tensor "
    "kept on the node (a weak reference), and output_rewritten rebinds that Tensor's native "
    "and the saved arrays of the nodes made over it (or writes new into old where only "
    "autograd holds it)",
)
@pytest.mark.parametrize("op", ["exp", "tanh"])
def test_output_written_after_create_graph(backend: str, op: str) -> None:
    same(_output_doubled_after_create_graph(op), backend, decimals=8)


# ---- 5. older: tests/linalg (matrix_exp's create_graph graph on torch:cpu) -------------------
def _matrix_exp_gradient_node(m: Any) -> Any:
    """The grad_fn of matrix_exp's create_graph gradient (PyTorch: its block formula's
    narrow, a SliceBackward0)."""
    a = m.tensor([[0.5, 0.2], [0.3, 0.4]], dtype=m.float64, requires_grad=True)
    (g,) = m.autograd.grad(m.linalg.matrix_exp(a).sum(), a, create_graph=True)
    return walk(g.grad_fn, 1)


@pytest.mark.xfail(
    strict=True,
    reason="older (HEAD too; numpy fixed in session 35): on torch:cpu matrix_exp's "
    "create_graph gradient is the core's decomposition differentiated (MulBackward0 on "
    "top), not PyTorch's block formula (SliceBackward0). Cause: linalg/fused_backward.py "
    "function_backward under create_graph takes the reference's graph, not the formula= "
    "given to fused_or_reference (products.py _matrix_exp_backward). Fix: under "
    "create_graph a linalg_function node with a formula applies it (as keep_outputs does "
    "for qr/eigh/svd)",
)
def test_matrix_exp_create_graph_node_on_torch() -> None:
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


@pytest.mark.xfail(
    strict=True,
    reason="older (session 35's _save_as_torch does not cover them): saved_tensors_hooks' "
    "unpack of x[index]'s saved index is not what the backward reads for a range, a tuple "
    "of lists (two advanced indices) or a 0-d bool with a list (PyTorch's IndexBackward0 "
    "reads the unpacked indices). Cause: ops/index.py _save_as_torch remakes the positions "
    "only for a one-take node (node.op == 'take' and len(node.saved) == 3) from list/array/"
    "tensor items, and pytorch_indices makes no tensor of a range. Fix: treat a range as a "
    "list in pytorch_indices/_save_as_torch, and remake the positions for the several-index "
    "take (and the bool's unit axis) from the unpacked tensors",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="older (HEAD too): a float tensor ** 0.5 / ** -0.5 is recorded as sqrt's node "
    "(SqrtBackward0; DivBackward0 for -0.5), PyTorch's is PowBackward0 (values equal). "
    "Cause: ops/elementwise.py pow returns _root(...) (sqrt, 1 / sqrt) for these exponents, "
    "graph and all. Fix: compute _root's values under no_grad and record pow's node over "
    "them (as rsqrt's _with_result_node does)",
)
@pytest.mark.parametrize("power", [0.5, -0.5])
def test_root_power_nodes(backend: str, power: float) -> None:
    same(_root_power_nodes(power), backend)
