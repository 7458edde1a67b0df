"""Node hooks and ``next_functions`` of linear algebra and batched products, as torch 2.13's
(twenty-third session), with only the import changed, in float64.

Before: on torch:cpu, where the torch plugin computes a linalg function whole, a hook on
its node (inv, solve, cholesky, det, pinv, lu_factor, matrix_exp, ...) raised ("its nodes
here do not record where the op's inputs were"); eigh, svd, qr, slogdet and lu had one node
per output on both backends, whose pre-hooks were refused and whose hooks saw one output's
gradient where torch's one node sees every output's (None for an unused one); eigvalsh's and
svdvals' nodes are eigh's and svd's in torch, with the eigenvectors' (U's, Vh's) gradient
slots; lu_solve's node listed the integer pivots; on numpy matrix_exp, householder_product
and lu_solve were their decompositions' last nodes (MmBackward0, SubBackward0, ...), and
cholesky_inverse cholesky_solve's; matrix_power(a, 3) multiplied in another order and
matrix_power(a, 1) returned ``a`` itself (torch: a copy, CloneBackward0). A batch
of matrices times a matrix (also F.linear without bias on a 3-D input) was one node named
UnsafeViewBackward0 whose hook saw the operands' gradients, where torch's UnsafeViewBackward0
views an MmBackward0 of the flattened input and its hook sees one (rows, n) gradient; the
same for a batch times a vector (MvBackward0) and two batches (BmmBackward0).

Gradients whose sign depends on the LAPACK's choice of eigen/singular vector signs are
compared in absolute value.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _data(m: Any, *shape: int, seed: int) -> Any:
    values = np.random.default_rng(seed).standard_normal(shape)
    return m.tensor(values, dtype=m.float64, requires_grad=True)


def _spd(m: Any, *batch: int, n: int = 3, seed: int = 0) -> Any:
    r = np.random.default_rng(seed).standard_normal((*batch, n, n))
    a = r @ np.swapaxes(r, -1, -2) + n * np.eye(n)
    return m.tensor(a, dtype=m.float64, requires_grad=True)


def _plain(g: Any) -> Any:
    """None, or a gradient's shape and absolute values (vector signs are LAPACK's choice)."""
    if g is None:
        return None
    return tuple(g.shape), np.round(np.abs(np.asarray(g.detach().tolist())), 8).tolist()


def _lu_solve(m: Any) -> Any:
    lu, pivots = (t.detach() for t in m.linalg.lu_factor(_data(m, 3, 3, seed=1)))
    return m.linalg.lu_solve(lu, pivots, _data(m, 3, 2, seed=2))


#: name -> (m -> the call's outputs, which output the loss uses)
CASES: dict[str, tuple[Callable[[Any], Any], int]] = {
    "inv": (lambda m: (m.linalg.inv(_spd(m)),), 0),
    "solve": (lambda m: (m.linalg.solve(_spd(m), _data(m, 3, 2, seed=1)),), 0),
    "cholesky": (lambda m: (m.linalg.cholesky(_spd(m)),), 0),
    "det_batched": (lambda m: (m.linalg.det(_spd(m, 2)),), 0),
    "pinv": (lambda m: (m.linalg.pinv(_data(m, 4, 3, seed=1)),), 0),
    "lu_factor": (lambda m: tuple(m.linalg.lu_factor(_data(m, 3, 3, seed=1))), 0),
    "lu_solve": (lambda m: (_lu_solve(m),), 0),
    "matrix_exp": (lambda m: (m.linalg.matrix_exp(_data(m, 3, 3, seed=1) / 3),), 0),
    "householder_product": (
        lambda m: (m.linalg.householder_product(_data(m, 4, 3, seed=1), _data(m, 2, seed=2)),),
        0,
    ),
    "solve_triangular": (
        lambda m: (m.linalg.solve_triangular(_spd(m).triu(), _data(m, 3, 2, seed=1), upper=True),),
        0,
    ),
    "matrix_power_1": (lambda m: (m.linalg.matrix_power(_data(m, 3, 3, seed=1), 1),), 0),
    "matrix_power_3": (lambda m: (m.linalg.matrix_power(_data(m, 3, 3, seed=1), 3),), 0),
    "matrix_power_-3": (lambda m: (m.linalg.matrix_power(_spd(m), -3),), 0),
    "cholesky_inverse": (
        lambda m: (m.cholesky_inverse(m.linalg.cholesky(_spd(m)).detach().requires_grad_()),),
        0,
    ),
    "eigh_values": (lambda m: tuple(m.linalg.eigh(_spd(m))), 0),
    "eigh_vectors": (lambda m: tuple(m.linalg.eigh(_spd(m))), 1),
    "eigvalsh": (lambda m: (m.linalg.eigvalsh(_spd(m, 2)),), 0),
    "svd_U": (lambda m: tuple(m.linalg.svd(_data(m, 4, 3, seed=1), full_matrices=False)), 0),
    "svd_S": (lambda m: tuple(m.linalg.svd(_data(m, 4, 3, seed=1), full_matrices=False)), 1),
    "svdvals": (lambda m: (m.linalg.svdvals(_data(m, 4, 3, seed=1)),), 0),
    "qr_R": (lambda m: tuple(m.linalg.qr(_data(m, 4, 3, seed=1))), 1),
    "slogdet_sign": (lambda m: tuple(m.linalg.slogdet(_spd(m))), 0),
    "slogdet_logabsdet": (lambda m: tuple(m.linalg.slogdet(_spd(m))), 1),
    "torch_slogdet": (lambda m: tuple(m.slogdet(_spd(m))), 1),
    "lu_U": (lambda m: tuple(m.linalg.lu(_data(m, 3, 3, seed=1))), 2),
    "matmul_batch_by_matrix": (
        lambda m: (_data(m, 2, 3, 4, seed=0) @ _data(m, 4, 5, seed=1),),
        0,
    ),
    "matmul_4d_by_matrix": (
        lambda m: (m.matmul(_data(m, 2, 2, 3, 4, seed=0), _data(m, 4, 5, seed=1)),),
        0,
    ),
    "matmul_matrix_needs_grad_only": (
        lambda m: (_data(m, 2, 3, 4, seed=0).detach() @ _data(m, 4, 5, seed=1),),
        0,
    ),
    "matmul_batch_by_vector": (
        lambda m: (m.matmul(_data(m, 2, 3, 4, seed=0), _data(m, 4, seed=1)),),
        0,
    ),
    "matmul_two_batches": (
        lambda m: (m.matmul(_data(m, 2, 3, 4, seed=0), _data(m, 2, 4, 5, seed=1)),),
        0,
    ),
    "matmul_batch_by_batch_of_one": (
        lambda m: (m.matmul(_data(m, 2, 3, 4, seed=0), _data(m, 1, 4, 5, seed=1)),),
        0,
    ),
    "matmul_non_contiguous_batch": (
        lambda m: (m.matmul(_data(m, 2, 4, 3, seed=0).transpose(1, 2), _data(m, 4, 5, seed=1)),),
        0,
    ),
    "bmm": (lambda m: (m.bmm(_data(m, 2, 3, 4, seed=0), _data(m, 2, 4, 5, seed=1)),), 0),
    "linear_3d_without_bias": (
        lambda m: (m.nn.functional.linear(_data(m, 2, 3, 4, seed=0), _data(m, 5, 4, seed=1)),),
        0,
    ),
}


def _hooked(case: str, replace: bool = False) -> Callable[[Any], Any]:
    """The node's name and next_functions, what its pre-hook and hook see, the leaves'
    gradients (with ``replace``, the hook returns every grad_input times 3), and the
    next_functions kept after backward."""

    def program(m: Any) -> Any:
        make, which = CASES[case]
        outs = make(m)
        out = outs[which]
        fn = out.grad_fn
        seen: list = []
        fn.register_prehook(lambda go: seen.append(("pre", [_plain(g) for g in go])))

        def hook(gi: tuple, go: tuple) -> Any:
            seen.append(([_plain(g) for g in gi], [_plain(g) for g in go]))
            return tuple(None if g is None else g * 3 for g in gi) if replace else None

        fn.register_hook(hook)
        names = [None if f is None else f.name() for f, _ in fn.next_functions]
        leaves = [t for t in _leaves(fn) if t is not None]
        weights = m.arange(1.0, out.numel() + 1.0, dtype=m.float64).reshape(out.shape)
        (out * out * weights).sum().backward()
        kept = [None if f is None else f.name() for f, _ in fn.next_functions]
        return fn.name(), names, seen, [_plain(t.grad) for t in leaves], kept

    return program


def _leaves(fn: Any) -> list:
    """The leaf tensors that ``fn``'s graph reaches, in next_functions order."""
    found: list = []
    for f, _ in fn.next_functions:
        if f is None:
            continue
        if hasattr(f, "variable"):
            found.append(f.variable)
        else:
            found.extend(_leaves(f))
    return found


def _same(program: Callable[[Any], Any], spec: str) -> None:
    want = program(torch)
    with entered(spec):
        assert program(tw) == want


@pytest.mark.parametrize("case", sorted(CASES))
def test_node_hooks_like_torch(spec: str, case: str) -> None:
    _same(_hooked(case), spec)


@pytest.mark.parametrize(
    "case", ["det_batched", "eigh_vectors", "svd_S", "lu_solve", "matmul_batch_by_matrix"]
)
def test_hook_replacing_grad_inputs_like_torch(spec: str, case: str) -> None:
    _same(_hooked(case, replace=True), spec)


def test_prehook_replacing_grad_outputs_like_torch(spec: str) -> None:
    """A pre-hook on eigh's one node doubles the eigenvalues' gradient and drops the
    eigenvectors'."""

    def program(m: Any) -> Any:
        a = _spd(m)
        values, vectors = m.linalg.eigh(a)
        values.grad_fn.register_prehook(lambda go: (go[0] * 2, None))
        (values * values + vectors * vectors * 3).sum().backward()
        return _plain(a.grad)

    _same(program, spec)


def test_matrix_power_one_is_a_copy(spec: str) -> None:
    """Before: ``matrix_power(a, 1)`` returned ``a`` itself (a change of the result in
    place changed ``a``)."""

    def program(m: Any) -> Any:
        a = _data(m, 3, 3, seed=1).detach()
        power = m.linalg.matrix_power(a, 1)
        power.mul_(2)
        return power is a, _plain(a)

    _same(program, spec)


def test_one_node_for_every_output(spec: str) -> None:
    def program(m: Any) -> Any:
        u, s, vh = m.linalg.svd(_data(m, 4, 3, seed=1), full_matrices=False)
        return u.grad_fn is s.grad_fn is vh.grad_fn, [u.output_nr, s.output_nr, vh.output_nr]

    _same(program, spec)


#: name -> ((m, the call's input) -> its outputs, the output the loss sums (one whose
#: gradient is the same whatever the vectors' signs), (input, outputs) -> the tensor changed
#: in place before backward)
CHANGED: dict[str, tuple[Callable[[Any, Any], Any], int, Callable[[Any, tuple], Any]]] = {
    "eigh_input": (lambda m, a: tuple(m.linalg.eigh(a)), 0, lambda a, outs: a),
    "eigh_values": (lambda m, a: tuple(m.linalg.eigh(a)), 0, lambda a, outs: outs[0]),
    "eigh_vectors": (lambda m, a: tuple(m.linalg.eigh(a)), 0, lambda a, outs: outs[1]),
    "svd_S": (lambda m, a: tuple(m.linalg.svd(a)), 1, lambda a, outs: outs[1]),
    "slogdet_input": (lambda m, a: tuple(m.linalg.slogdet(a)), 1, lambda a, outs: a),
    "slogdet_sign": (lambda m, a: tuple(m.linalg.slogdet(a)), 1, lambda a, outs: outs[0]),
    "slogdet_logabsdet": (lambda m, a: tuple(m.linalg.slogdet(a)), 1, lambda a, outs: outs[1]),
    "eigvalsh_input": (lambda m, a: (m.linalg.eigvalsh(a),), 0, lambda a, outs: a),
}


@pytest.mark.parametrize("case", sorted(CHANGED))
def test_change_in_place_before_backward_like_torch(spec: str, case: str) -> None:
    """Refused where torch's node saved what changed (eigh's outputs, slogdet's input), not
    elsewhere (eigh's node does not keep the matrix)."""

    def program(m: Any) -> Any:
        leaf = _spd(m)
        a = leaf * 1
        make, used, changed = CHANGED[case]
        outs = make(m, a)
        loss = outs[used].sum()  # (a sum keeps no output: only the node does)
        with m.no_grad():
            changed(a, outs).mul_(2)
        try:
            loss.backward()
        except RuntimeError as e:
            return re.search("modified by an in-?place operation", str(e)) is not None
        return _plain(leaf.grad)

    _same(program, spec)


@pytest.mark.parametrize("which", [0, 1])
def test_second_derivative_through_the_one_node(spec: str, which: int) -> None:
    """create_graph through eigh's node (one output used, then both)."""

    def program(m: Any) -> Any:
        a = _spd(m)
        values, vectors = m.linalg.eigh(a)
        loss = (values**3).sum() + ((vectors**2) * values).sum() * which
        (g,) = m.autograd.grad(loss, a, create_graph=True)
        (g * g).sum().backward()
        return _plain(a.grad)

    _same(program, spec)


def test_backward_twice_with_retain_graph(spec: str) -> None:
    def program(m: Any) -> Any:
        a = _spd(m)
        q, r = m.linalg.qr(a)
        loss = (q * q * 2).sum() + (r * r).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()
        return _plain(a.grad)

    _same(program, spec)


@pytest.mark.parametrize("shape", [(2, 3, 4), (4,)], ids=str)
def test_fused_batched_linear_hook_like_torch(spec: str, shape: tuple) -> None:
    def program(m: Any) -> Any:
        x = _data(m, *shape, seed=0)
        out = m.nn.functional.linear(x, _data(m, 5, 4, seed=1), _data(m, 5, seed=2))
        seen: list = []
        out.grad_fn.register_hook(lambda gi, go: seen.append([_plain(g) for g in gi]))
        out.sum().backward()
        return out.grad_fn.name(), seen

    _same(program, spec)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="a product of broadcast batches or of two batches of 4 dimensions is still one node "
    "named UnsafeViewBackward0 whose hook sees both operands' gradients; torch's views a "
    "BmmBackward0 of the expanded batches, and its hook sees one (4, 3, 5) gradient. SILENT. "
    "Fix: ops/linalg.py _folded: expand both batches, reshape each to 3-D (a copy for a "
    "non-contiguous one, as torch's) and view a labelled bmm back (left: it adds a copy to "
    "attention's products)",
)
def test_product_of_four_dimensional_batches_like_torch(spec: str) -> None:
    def program(m: Any) -> Any:
        out = m.matmul(_data(m, 2, 2, 3, 4, seed=0), _data(m, 2, 2, 4, 5, seed=1))
        seen: list = []
        out.grad_fn.register_hook(lambda gi, go: seen.append([_plain(g) for g in gi]))
        out.sum().backward()
        return [f.name() for f, _ in out.grad_fn.next_functions], seen

    _same(program, spec)
