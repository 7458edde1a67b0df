"""A whole ``tw.linalg`` function as one backend call, where the backend has PyTorch's own
kernel for it (the optional ``linalg_function`` and ``fused_linalg_backward``, API 2.4): the
torch backend computes ``torch.linalg.cholesky`` and its gradient as torch does, at torch's
cost, where the core's composition would add its own steps (a solve's backward would factor
the matrix again).

A call with one differentiable output records one ``linalg_function`` node, whose rule
(``linalg/fused_backward.py``) hands the output's gradient to the backend's
``fused_linalg_backward``. A call with several (eigh's eigenvalues and eigenvectors)
records one ``linalg_outputs`` node for the call, whose rule runs the backend's backward
once with the gradients of all outputs (the optional ``fused_linalg_outputs_backward``),
and a ``linalg_output`` node per output that hands its gradient on to it (a ``Slot``). A
backend without that primitive gets one ``linalg_function`` node per output. Under
``create_graph`` the rules differentiate the core's decomposition instead, or, for a
function given a ``rule`` (inv) or a ``formula`` (qr, eigh, svd, eig: linalg/one_node.py
``keep_outputs``), apply that formula to this call's own outputs: a second
backward then reaches this call with the whole gradient of each output, where a recomputed
decomposition would take a part of it (eig's check of the eigenvectors' phases holds for
the whole, not for the parts).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, InputShape, Node, shape_of
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.linalg.fused_backward import Attached, Rule
from tensorweaver.linalg.one_node import (
    formula_call,
    fused_call,
    keep_outputs,
    pack_outputs,
    reference_call,
)
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.tensor import Tensor

#: The kinds (see :func:`fused_or_reference`) of a result and LAPACK's ``info``.
WITH_INFO = (None, dtypes.int32)
#: The kind of a differentiable output that is real for complex input (eigenvalues of a
#: Hermitian matrix, singular values, log|det|).
REAL = "real"


def _dtype(kind: DType | str | None, dtype: DType) -> DType:
    if kind is None:
        return dtype
    return dtype.to_real() if kind is REAL else kind


def fused_or_reference(
    name: str,
    grad_fn: str,
    reference: Callable[..., tuple],
    tensors: tuple,
    static: tuple,
    kinds: tuple[DType | str | None, ...],
    dtype: DType | None = None,
    rule: Rule | None = None,
    places: tuple | None = None,
    formula: Callable[[tuple, tuple], tuple] | None = None,
) -> tuple:
    """The outputs of the linalg function ``name`` on ``tensors`` (the first one floating-
    point) with ``static`` arguments: the backend's ``linalg_function`` where it computes
    ``name``, else ``reference(*tensors, *static)`` (a tuple of tensors, one per output).

    ``kinds`` gives each output's dtype: None for a differentiable output of ``dtype``
    (the first tensor's unless given; its node is named ``grad_fn``), ``REAL`` for one of
    its real dtype, a DType for one without gradient. ``rule(tensors, outputs, grads)``,
    where given, is the gradient formula of the differentiable outputs (``grads`` None for
    an unused one). ``places`` is (each differentiable output's place among the outputs of
    PyTorch's node, their count) where that node has more (eigvalsh's is eigh's).
    ``formula(saved, grads)``, where given, is PyTorch's gradient of the call from what its
    node saves (the inputs, then the differentiable outputs: linalg/one_node.py
    ``formula_call``), recorded where the core's decomposition computes the call: its node
    then reads the outputs' arrays, which a write through ``.data`` reaches; where the
    backend computes a call with one output (matrix_exp), its create_graph gradient applies
    the formula too (:func:`_as_rule`)."""
    first = tensors[0]
    backend = first.backend
    # The fused path needs the backend's backward; fused_kernel also hides it inside
    # ``reference_only`` (tw check's reference), where the core's decomposition runs.
    function = getattr(backend, "linalg_function", None)
    if (
        function is None
        or (SAVED_TENSORS_HOOKS and name in _PACKS_RESULT)
        or fused_kernel(backend, "linalg_backward") is None
    ):
        if _graph(tensors):  # (a ``rule`` serves the backend's call alone)
            if formula is not None:
                wanted = _wanted(kinds)
                return formula_call(
                    grad_fn, reference, tensors, static, wanted, formula, again=True
                )
            return _reference_as_one_node(grad_fn, reference, tensors, static, kinds, places)
        return reference(*tensors, *static)
    # No loops for one or two tensors (most functions, and the solves), and no frames for
    # a single output: this runs once per call, against kernels of 5-20 us (0.4 us less
    # than a loop and a call of _dtype, measured around a 2 x 4 x 4 solve_triangular).
    # (``requires_grad`` read from the slots: its property's frame only for a view, whose
    # flag may be its base's; 0.1 us a tensor)
    if len(tensors) == 1:
        natives: tuple = (first.native,)
        grad = first._requires_grad or (first._view_of is not None and first.requires_grad)
    elif len(tensors) == 2:
        second = tensors[1]
        natives = (first.native, second.native)
        grad = (
            first._requires_grad
            or second._requires_grad
            or (first._view_of is not None and first.requires_grad)
            or (second._view_of is not None and second.requires_grad)
        )
    else:
        listed = []
        grad = False
        for t in tensors:
            listed.append(t.native)
            if t.requires_grad:
                grad = True
        natives = tuple(listed)
    grad = grad and is_grad_enabled()
    result = function(name, natives, static, grad)
    if result is None:
        return reference(*tensors, *static)
    given, natives = natives, result[0]  # (the inputs' arrays: fused_backward.py rebound)
    dtype = dtype or first._dtype
    if len(kinds) == 1:  # one output, the usual case
        kind = kinds[0]
        outs: tuple = (Tensor(natives[0], backend, dtype if kind is None else _dtype(kind, dtype)),)
    elif kinds is WITH_INFO:  # a solve's or factorization's result and info: no loop
        outs = (Tensor(natives[0], backend, dtype), Tensor(natives[1], backend, dtypes.int32))
    else:
        made = []
        for native, kind in zip(natives, kinds):  # (no _dtype frame: this runs every call)
            if kind is None:
                kind = dtype
            elif kind is REAL:
                kind = dtype.to_real()
            made.append(Tensor(native, backend, kind))
        outs = tuple(made)
    if grad:
        if places is None and (kinds is WITH_INFO or kinds == (None,)):
            # the usual node (one differentiable output, the first), as _record makes it,
            # made here: two frames, a test and a loop less (0.3 us a call)
            if rule is None and formula is not None:  # (matrix_exp's, under create_graph)
                rule = _as_rule(formula)
            attached = None if rule is None else Attached(rule, (0,), outs)
            node = Node(
                "linalg_function", tensors, (result[1], 0, reference, static, attached, given)
            )
            if (rule is not None and rule in OUTPUTS_ONLY) or name in _FROM_FACTOR:
                node.inputs = (shape_of(first),)  # (A's in-place change: no error)
            node.label = grad_fn
            node.made = natives  # (what a write through .data may reach: node.py's Node)
            node.edges = _float_edges(node, tensors)  # (a hook on it sees their gradients)
            out = outs[0]
            out._node = node
            out._requires_grad = True
            if attached is not None:  # (weakly: the node holds ``attached``)
                attached.nodes = (weakref.ref(node),)
        else:
            call = (result[1], reference, static, rule, given)
            _record(outs, kinds, tensors, call, grad_fn, places)
            if formula is not None and rule is None:  # (qr, eigh, svd: one node)
                keep_outputs(outs, _wanted(kinds), formula)
                if SAVED_TENSORS_HOOKS:
                    pack_outputs(outs, _wanted(kinds))
    return outs


#: The calls whose PyTorch node saves their one result, which saved_tensors_hooks pack: under
#: hooks the core's primitive records them (linalg/primitives.py packs that result), where
#: the backend's record would keep the result unseen by the hooks.
_PACKS_RESULT = frozenset(("det", "inv", "inv_ex", "cholesky", "cholesky_ex"))

#: The rules that read the call's outputs alone, as PyTorch's node saves only them (inv's):
#: its node keeps no input that an in-place change could make stale.
OUTPUTS_ONLY: set = set()


#: The calls whose node reads their factor alone, as PyTorch's (its create_graph gradient:
#: linalg/fused_backward.py ``FROM_FACTOR``): the node keeps A's shape, not A.
_FROM_FACTOR = frozenset(("cholesky", "cholesky_ex"))


#: formula -> the same as a :data:`Rule` (one per formula, made once, not per call).
_AS_RULE: dict[Callable, Rule] = {}


def _as_rule(formula: Callable[[tuple, tuple], tuple]) -> Rule:
    """``formula(saved, grads)`` (``saved``: the inputs, then the differentiable outputs)
    as a :data:`Rule`: a call with one output applies it under ``create_graph`` on that
    output attached again, as PyTorch's node (matrix_exp's block formula, whose top node is
    its narrow's), not the core's decomposition differentiated."""
    rule = _AS_RULE.get(formula)
    if rule is None:

        def rule(inputs: tuple, outputs: tuple, grads: tuple) -> tuple:
            return formula((*inputs, *outputs), grads)

        _AS_RULE[formula] = rule
    return rule


def computes_whole(backend: Any) -> bool:
    """Whether :func:`fused_or_reference` hands ``backend`` the whole function (it has
    ``linalg_function`` and its backward, and ``reference_only`` is off)."""
    function = getattr(backend, "linalg_function", None)
    return function is not None and fused_kernel(backend, "linalg_backward") is not None


def _record(
    outs: tuple, kinds: tuple, tensors: tuple, call: tuple, grad_fn: str, places: tuple | None
) -> None:
    """Attach the differentiable ``outs`` to the graph (the nodes ``apply()`` and
    ``labelled()`` would make, made at once). ``call`` is (saved, reference, static, rule,
    the inputs' arrays)."""
    saved, reference, static, rule, given = call
    wanted = _wanted(kinds)
    attached = None if rule is None else Attached(rule, wanted, outs)
    if (len(wanted) > 1 or places) and rule is None:  # PyTorch's one node for them all
        fused_call(grad_fn, tensors, outs, wanted, (reference, static), (saved, given), places)
        return
    made = tuple([out.native for out in outs])  # (the arrays the call returned: Node.made)
    if len(wanted) == 1 or not hasattr(tensors[0].backend, "fused_linalg_outputs_backward"):
        for i in wanted:  # a node per output (the usual case: one)
            node = Node("linalg_function", tensors, (saved, i, reference, static, attached, given))
            node.edges, node.made = _float_edges(node, tensors), made
            _attach(outs[i], node, grad_fn)
    else:
        group = Node("linalg_outputs", tensors, (saved, wanted, reference, static, attached, given))
        group.label, group.made = grad_fn, made
        for slot, i in enumerate(wanted):
            node = Node("linalg_output", (), (slot, len(wanted)))
            shape = InputShape(outs[i])  # its one input stands for the call's node
            node.inputs, node.parents, node.versions = (shape,), (group,), (shape._version,)
            _attach(outs[i], node, grad_fn)
    if attached is not None:  # weak references: the nodes hold ``attached``
        attached.nodes = tuple([weakref.ref(outs[i]._node) for i in wanted])


#: kinds (see :func:`fused_or_reference`) -> the places of their differentiable outputs:
#: a few call sites' constant tuples, found once rather than by a loop every call.
_WANTED: dict[tuple, tuple] = {}


def _wanted(kinds: tuple) -> tuple:
    """The places of the differentiable outputs among ``kinds``."""
    wanted = _WANTED.get(kinds)
    if wanted is None:
        wanted = _WANTED[kinds] = tuple(
            [i for i, kind in enumerate(kinds) if kind is None or kind is REAL]
        )
    return wanted


def _attach(out: Tensor, node: Node, grad_fn: str) -> None:
    node.label = grad_fn
    out._node = node
    out._requires_grad = True


def _reference_as_one_node(
    grad_fn: str, reference: Callable, tensors: tuple, static: tuple, kinds: tuple, places: Any
) -> tuple:
    """The core's decomposition recorded as PyTorch's one node ``grad_fn`` over the call's
    floating-point inputs (integer ones, as lu_solve's pivots, have no place in it): one
    node for several differentiable outputs (linalg/one_node.py), else the output's last
    node labelled as the whole call, so that hooks on it see the call's inputs' gradients."""
    if places is not None or sum(kind is None or kind is REAL for kind in kinds) > 1:
        return reference_call(grad_fn, reference, tensors, static, places)
    outs = reference(*tensors, *static)
    floats = [t for t in tensors if t.dtype.is_floating_point or t.dtype.is_complex]
    for out, kind in zip(outs, kinds):
        if kind is None or kind is REAL:
            labelled(out, grad_fn, *floats)
    return outs


def _float_edges(node: Node, tensors: tuple) -> tuple:
    """PyTorch's node's inputs, where a hook on it sees their gradients: the call's
    floating-point ones (lu_solve's integer pivots have no place in it)."""
    if len(tensors) < 3:  # (no call of one or two tensors takes an integer one)
        return node.parents
    return tuple(
        [
            p
            for p, t in zip(node.parents, tensors)
            if t.dtype.is_floating_point or t.dtype.is_complex
        ]
    )


def _graph(tensors: tuple) -> bool:
    """Whether a call on ``tensors`` records a graph."""
    return is_grad_enabled() and any(t.requires_grad for t in tensors)
