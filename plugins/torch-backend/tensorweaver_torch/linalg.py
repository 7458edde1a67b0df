"""The optional linear algebra (tw.linalg: solve, cholesky, eigh, svd, ...) primitives of the
backend API 2.3 and 2.4 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's
library computes them: each is one torch call.

``linalg_function`` computes a whole ``torch.linalg`` function in one call, with torch's own
gradient: the core would otherwise compose it from the primitives, and a solve's backward,
say, would factor the matrix again where torch reuses its LU. With ``grad``, the call is
recorded by torch's autograd on detached leaves of the inputs (inputs already on torch's
tape, from ``tw.to_torch_module``, stay on it), and ``fused_linalg_backward`` replays that
small graph for one output's gradient (``fused_linalg_outputs_backward``: once for the
gradients of several outputs), calling torch's one node of the function directly where the
graph is just that node; the graph is kept so that the core may run a backward twice, and
freed with ``saved``. Without ``grad`` nothing is recorded
(``eigvalsh`` then computes no eigenvectors).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import torch
from tensorweaver.contract.errors import LinAlgError

try:  # torch.autograd.grad's own call into the engine (torch >= 2.3), without its checks
    from torch.autograd.graph import _engine_run_backward
except ImportError:  # a torch that moved it: the public call, a little slower
    _engine_run_backward = None

#: Turns torch's grad mode on or off at once (torch.set_grad_enabled is a class whose
#: instance does the same).
_set_grad_enabled = getattr(torch._C, "_set_grad_enabled", torch.set_grad_enabled)

Tensor = torch.Tensor
#: What a fused kernel keeps for backward: its outputs, still in torch's graph, and leaves
#: (a list of leaves of its own, or the tuple of inputs already on torch's tape).
Recorded = tuple[tuple[Tensor, ...], Any]


def _fused(fn: Callable[[tuple, tuple], tuple], static: tuple, inputs: tuple) -> tuple:
    """``fn(inputs, static)``'s outputs, recorded on torch's tape, and what :func:`_replay`
    needs."""
    # One plain loop: this runs once per call, against kernels of ~20 us.
    enabled = torch.is_grad_enabled()  # as it is unless torch code turned it off
    leaves = []
    for t in inputs:
        if t.requires_grad and enabled:  # on torch's own tape: torch differentiates through it
            outs = fn(inputs, static)
            # (a tuple, not a list of leaves of our own: rebind_linalg_input leaves it)
            return outs, (outs, inputs)
        if t.is_floating_point() or t.is_complex():
            # the cached leaf read here, not in a function: a frame less an input, each call
            key = id(t)
            entry = _LEAVES.get(key)
            leaf = entry[1] if entry is not None and entry[0]() is t else _new_leaf(t, key)
            # an array given twice gets two leaves: the engine's gradient of one leaf named
            # twice would be the sum of both places' in each
            for seen in leaves:
                if seen is leaf:
                    leaf = t.data.requires_grad_()
                    break
            leaves.append(leaf)
        else:
            leaves.append(t)
    if enabled:  # skip the switch when it is on already
        outs = fn(tuple(leaves), static)
    else:
        with torch.enable_grad():
            outs = fn(tuple(leaves), static)
    if len(outs) == 1:
        return (outs[0].detach(),), (outs, leaves)
    if len(outs) == 2:  # a result and LAPACK's info, the solves' case: no loop's frame, and
        second = outs[1]  # an output outside the graph (the info) needs no detached copy
        return (outs[0].detach(), second.detach() if second.requires_grad else second), (
            outs,
            leaves,
        )
    return tuple([o.detach() for o in outs]), (outs, leaves)


#: id(array) -> (weak reference to the array, its detached leaf requiring grad): one leaf
#: per input array, reused by every call recorded on it (a ``detach().requires_grad_()``
#: took 1.5-3 us of each call on a loaded CPU). The leaf shares the array's memory, not its
#: version counter (``t.data``'s own, as PyTorch's ``.data``): a write through a tensor's
#: ``.data`` into memory NumPy shares is a torch in-place op on the array, which the saved
#: leaf must not see as one. No backward here accumulates into its ``.grad``.
_LEAVES: dict[int, tuple] = {}


def _new_leaf(t: Tensor, key: int) -> Tensor:
    """A detached leaf of ``t`` that requires grad, kept in ``_LEAVES`` under ``key``
    (``id(t)``) for the calls after this one."""
    leaf = t.data.requires_grad_()
    _LEAVES[key] = (weakref.ref(t, lambda ref: _forget(key, ref)), leaf)
    return leaf


def _forget(key: int, ref: weakref.ref) -> None:
    """A weak reference's callback: drop the entry of the array that went (unless a later
    array with its id has one already)."""
    entry = _LEAVES.get(key)
    if entry is not None and entry[0] is ref:
        del _LEAVES[key]


def _replay(recorded: Recorded, roots: tuple, grads: tuple, needs: tuple) -> tuple:
    """The gradients of the recorded inputs (None where ``needs`` wants none) from
    ``grads``, those of the recorded outputs numbered ``roots``."""
    outs, leaves = recorded
    found = _call_node(outs, leaves, roots, grads, needs)
    if found is not None:
        return _resolved(found)
    wanted = tuple([leaf for leaf, need in zip(leaves, needs) if need])
    tensors = tuple([outs[i] for i in roots])
    # torch.autograd.grad's own call into the engine, without its Python checks of the
    # arguments (the core hands a gradient of the output's shape and dtype): they took 70 us
    # a call on a loaded CPU, more than the backward of a solve of eight 4x4 matrices.
    if _engine_run_backward is not None:
        found = _engine_run_backward(tensors, grads, True, False, wanted, True, False)
    else:
        found = torch.autograd.grad(tensors, wanted, grads, retain_graph=True, allow_unused=True)
    if len(found) == len(needs):  # every input wanted (the usual case)
        return _resolved(tuple(found))
    it = iter(found)
    return _resolved(tuple([next(it) if need else None for need in needs]))


def _resolved(grads: tuple) -> tuple:
    """``grads`` without conjugate views (torch's gradient of a complex solve from the right
    is one), which the host cannot read."""
    for g in grads:
        if g is not None and g.is_conj():
            return tuple([None if g is None else g.resolve_conj() for g in grads])
    return grads


def _call_node(outs: tuple, leaves: list, roots: tuple, grads: tuple, needs: tuple) -> Any:
    """The gradients from a call of the one graph node that made the outputs ``roots``
    straight from the leaves (a whole ``torch.linalg`` function is one such node), or None
    where the recorded graph is more than that, or the node would also compute a gradient
    that no input needs: the engine then runs instead. A direct call skips the engine's
    set-up for a one-node graph (30 us of a 170 us backward on a loaded CPU). The core
    sums a broadcast gradient to its input's shape, as the engine would (torch's formulas
    already give a real input a real gradient); the node keeps what it saved, as the engine
    does with ``retain_graph``."""
    first = outs[roots[0]]
    node = first.grad_fn
    count = _NODE_OUTPUTS.get(type(node))
    if count is None:
        metadata = getattr(node, "_input_metadata", None)  # a private attribute: else the engine
        if metadata is None or not callable(node):  # a Python Function's node is not callable
            return None
        count = _NODE_OUTPUTS[type(node)] = len(metadata)
    args: list = [None] * count  # one gradient per output of the node; None: unused
    if len(roots) == 1:  # the usual case: its node is the one just read (grad_fn: 0.1 us)
        args[first.output_nr] = grads[0]
    else:
        for i, g in zip(roots, grads):
            out = outs[i]
            if out.grad_fn is not node:
                return None
            args[out.output_nr] = g
    places = []  # the input each of the node's results is the gradient of
    for edge, _ in node.next_functions:
        if edge is None:
            places.append(None)
            continue
        variable = getattr(edge, "variable", None)  # an AccumulateGrad: a leaf
        for j, leaf in enumerate(leaves):
            if leaf is variable and needs[j] and j not in places:  # one result per input
                places.append(j)
                break
        else:
            return None
    # Without recording, as the engine runs a node without create_graph; torch's private
    # switch costs a fifth of torch.no_grad() (0.6 us against 2.9 on a loaded CPU).
    enabled = torch.is_grad_enabled()
    _set_grad_enabled(False)
    try:
        results = node(*args)
    finally:
        _set_grad_enabled(enabled)
    if not isinstance(results, tuple):
        results = (results,)
    found: list = [None] * len(leaves)
    for j, result in zip(places, results):
        if j is not None:
            found[j] = result
    return tuple(found)


#: A torch node class -> how many outputs its forward has (its call's gradients): fixed per
#: generated class, and torch refuses a call with another count. Reading ``_input_metadata``
#: builds a list of objects each time (0.8 us).
_NODE_OUTPUTS: dict[type, int] = {}


class LinearAlgebra:
    """Mixed into the backend class; each method is one optional primitive."""

    def linalg_cholesky_ex(self, a: Tensor) -> tuple:
        return tuple(torch.linalg.cholesky_ex(a))

    def linalg_lu_factor_ex(self, a: Tensor) -> tuple:
        return tuple(torch.linalg.lu_factor_ex(a))

    def linalg_solve_ex(self, a: Tensor, b: Tensor) -> tuple:
        return tuple(torch.linalg.solve_ex(a, b))

    def linalg_solve_triangular(
        self, a: Tensor, b: Tensor, upper: bool, unitriangular: bool
    ) -> Tensor:
        return torch.linalg.solve_triangular(a, b, upper=upper, unitriangular=unitriangular)

    def linalg_qr(self, a: Tensor, mode: str) -> tuple:
        return tuple(torch.linalg.qr(a, mode=mode))

    def linalg_eigh(self, a: Tensor, uplo: str) -> tuple:
        return tuple(torch.linalg.eigh(a, UPLO=uplo))

    def linalg_eig(self, a: Tensor) -> tuple:
        return tuple(torch.linalg.eig(a))

    def linalg_svd(self, a: Tensor, full_matrices: bool) -> tuple:
        try:
            return tuple(torch.linalg.svd(a, full_matrices=full_matrices))
        except torch.linalg.LinAlgError as error:  # torch's class: the contract's for the core
            raise LinAlgError(str(error)) from error

    def linalg_det(self, a: Tensor) -> Tensor:
        return torch.linalg.det(a)

    def linalg_slogdet(self, a: Tensor) -> tuple:
        return tuple(torch.linalg.slogdet(a))

    def tril(self, a: Tensor, k: int) -> Tensor:
        return torch.tril(a, k)

    def triu(self, a: Tensor, k: int) -> Tensor:
        return torch.triu(a, k)

    def linalg_function(self, name: str, arrays: tuple, static: tuple, grad: bool) -> tuple | None:
        fn = _FUNCTIONS.get(name)
        if fn is None:
            return None
        try:
            if not grad:  # the call alone: nothing to record
                return fn(arrays, static), None
            return _fused(fn, static, arrays)
        except torch.linalg.LinAlgError as error:  # torch's class: the contract's for the core
            raise LinAlgError(str(error)) from error

    def fused_linalg_backward(
        self, saved: tuple[Recorded, int], grad_output: Tensor, needs: tuple
    ) -> tuple:
        recorded, i = saved
        return _replay(recorded, (i,), (grad_output,), needs)

    def rewrite_linalg_output(self, saved: tuple[Recorded, int], new: Tensor) -> None:
        """Write ``new`` into output i of the recorded call as a write through ``.data``
        does (no version bump): torch's backward of the call reads it, as torch's own node
        reads its saved result's memory."""
        (outs, _), i = saved
        out = outs[i]
        if out.shape == new.shape and out.dtype == new.dtype:
            out.data.copy_(new)

    def rebind_linalg_input(
        self, saved: tuple[Recorded, int], new: Tensor
    ) -> Callable[[], None] | None:
        """Make input j of the recorded call read ``new``, the input's array since a write
        through its ``.data`` replaced the one the call was given: the recorded leaf's
        ``.data`` is set to it (torch's node reads the tensor it saved, as torch's own
        reads a leaf whose ``.data`` changed), not written into the old array, whose memory
        a view's base or a NumPy array may share. For this backward alone: ``_LEAVES``
        shares the leaf among every call recorded on that array (a detached alias's), so
        what is returned puts the old array back."""
        (_, leaves), j = saved
        if type(leaves) is not list:  # (the inputs themselves, on torch's own tape)
            return None
        leaf = leaves[j]
        # (an integer input, lu_solve's pivots, is the array itself: not ours to rebind)
        if not leaf.requires_grad or leaf.shape != new.shape or leaf.dtype != new.dtype:
            return None
        old = leaf.data
        leaf.data = new
        return lambda: setattr(leaf, "data", old)

    def write_linalg_output(self, dst: Tensor, src: Tensor) -> bool:
        """Write ``src`` into ``dst``'s memory as a write through ``.data`` does (no version
        bump: a call recorded since that saved ``dst`` still runs its backward): the core's
        linalg formulas read it, as torch's nodes read their saved outputs' memory."""
        if dst.shape != src.shape or dst.dtype != src.dtype:
            return False
        if src.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
            src = src.clone()  # (torch refuses some overlapping copies)
        dst.data.copy_(src)
        return True

    def fused_linalg_outputs_backward(
        self, saved: tuple[Recorded, tuple], grad_outputs: tuple, needs: tuple
    ) -> tuple:
        recorded, indices = saved
        roots, grads = [], []
        for i, g in zip(indices, grad_outputs):
            if g is not None:
                roots.append(i)
                grads.append(g)
        return _replay(recorded, tuple(roots), tuple(grads), needs)


def _solve_right(a: Tensor, b: Tensor, solve: Callable[..., Any]) -> Any:
    """X A = B by ``solve`` (torch.linalg.solve, or solve_ex with the info after X): torch's
    X of a complex A is a conjugate view, which the host cannot read."""
    found = solve(a, b, left=False)
    if isinstance(found, Tensor):
        return found.resolve_conj()
    return found[0].resolve_conj(), found[1]


def _eigvals(a: Tensor) -> Tensor:
    """torch.linalg.eigvals after torch.linalg.eig's own check: torch 2.13's eigenvalues-only
    CPU kernel writes past its buffers at a NaN or inf (a SIGSEGV, or a wrong answer in a
    batch)."""
    from tensorweaver_torch.backend import _tracing  # (backend.py imports this module)

    # Traced, eigvals becomes torch's linalg_eig, which checks; a value read back would stop
    # the tracer.
    if not _tracing() and not bool(torch.isfinite(a).all()):
        raise RuntimeError(
            "torch.linalg.eigvals: input tensor should not contain infs or NaNs; "
            "replace them (torch.nan_to_num) or drop those matrices first"
        )
    return torch.linalg.eigvals(a)


#: The functions ``linalg_function`` computes: f(arrays, static) -> a tuple of outputs (torch's
#: named tuple as it comes, a single output in a tuple). Indexing the two tuples, rather than
#: unpacking them into one call, saves a fifth of a microsecond a call (a tenth of the core's
#: whole cost around a small solve_triangular).
_FUNCTIONS: dict[str, Callable[[tuple, tuple], tuple]] = {
    # cholesky, solve, inv and lu_factor raise torch's error for a failed factorization (read
    # from LAPACK's info in torch's C++, where the core would read it on the host)
    "cholesky": lambda a, s: (torch.linalg.cholesky(a[0], upper=s[0]),),
    "cholesky_ex": lambda a, s: torch.linalg.cholesky_ex(a[0], upper=s[0]),
    "solve": lambda a, s: (
        torch.linalg.solve(a[0], a[1]) if s[0] else _solve_right(a[0], a[1], torch.linalg.solve),
    ),
    "solve_ex": lambda a, s: (
        torch.linalg.solve_ex(a[0], a[1], left=True)
        if s[0]
        else _solve_right(a[0], a[1], torch.linalg.solve_ex)
    ),
    "inv": lambda a, s: (torch.linalg.inv(a[0]),),
    "inv_ex": lambda a, s: torch.linalg.inv_ex(a[0]),
    "solve_triangular": lambda a, s: (
        # torch's parsing of the two defaults took 0.1 us of a 5 us call on 4 x 4 matrices;
        # identity tests: another value goes to torch, which refuses what is not a bool
        torch.linalg.solve_triangular(a[0], a[1], upper=s[0])
        if s[1] is True and s[2] is False
        else torch.linalg.solve_triangular(a[0], a[1], upper=s[0], left=s[1], unitriangular=s[2]),
    ),
    "cholesky_solve": lambda a, s: (torch.cholesky_solve(a[0], a[1], s[0]),),
    "det": lambda a, s: (torch.linalg.det(a[0]),),
    "slogdet": lambda a, s: torch.linalg.slogdet(a[0]),
    "eigh": lambda a, s: torch.linalg.eigh(a[0], UPLO=s[0]),
    "eigvalsh": lambda a, s: (torch.linalg.eigvalsh(a[0], UPLO=s[0]),),
    "eig": lambda a, s: torch.linalg.eig(a[0]),
    "eigvals": lambda a, s: (_eigvals(a[0]),),
    "svd": lambda a, s: torch.linalg.svd(a[0], full_matrices=s[0]),
    "svdvals": lambda a, s: (torch.linalg.svdvals(a[0]),),
    "qr": lambda a, s: torch.linalg.qr(a[0], mode=s[0]),
    "lu_factor": lambda a, s: torch.linalg.lu_factor(a[0]),
    "lu_factor_ex": lambda a, s: torch.linalg.lu_factor_ex(a[0]),
    "lu": lambda a, s: torch.linalg.lu(a[0]),
    "lu_solve": lambda a, s: (
        torch.linalg.lu_solve(a[0], a[1], a[2], left=s[0], adjoint=s[1]).resolve_conj(),
    ),
    "householder_product": lambda a, s: (torch.linalg.householder_product(a[0], a[1]),),
    "matrix_exp": lambda a, s: (torch.linalg.matrix_exp(a[0]),),
    "lstsq": lambda a, s: torch.linalg.lstsq(a[0], a[1], rcond=s[0], driver=s[1]),
    "pinv": lambda a, s: (torch.linalg.pinv(a[0], atol=s[0], rtol=s[1], hermitian=s[2]),),
    "matrix_rank": lambda a, s: (
        torch.linalg.matrix_rank(a[0], atol=s[0], rtol=s[1], hermitian=s[2]),
    ),
}
