"""One graph node for a linalg call with several differentiable outputs (eigh's eigenvalues
and eigenvectors, svd's U, S and Vh, qr, slogdet, lu), as PyTorch records it: every
output's ``grad_fn`` is that node, its pre-hooks see one gradient per output (None for an
output the loss did not use) and its hooks the inputs' gradients, and its rule runs once
per backward with the gradients of all outputs.

The node is an autograd.Function's node (ops/several_outputs.py records unbind's the same
way). Its rule is the backend's own backward of the whole call where the backend computed
it (linalg/fused.py), else PyTorch's formula where the core has it (:func:`formula_call`:
triangular_solve, lstsq, qr, eigh, svd, lu: it reads the outputs the node keeps, which a
write through ``.data`` reaches, as PyTorch's saved outputs), else the gradient of the
core's decomposition, recorded in forward on stand-ins of the inputs. Under
``create_graph`` qr's, eigh's, svd's, eig's and lu's formula runs on their outputs
attached to the node again (a second backward reaches the call with each output's whole
gradient, as PyTorch's); the others' decomposition is
differentiated again on the inputs themselves (fused_backward.py ``_through_reference``),
so that a second backward reaches them.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from tensorweaver.autograd.function import Function, FunctionCtx, _watched
from tensorweaver.autograd.graph import _checked, _Packed
from tensorweaver.autograd.mode import _restore, _switched, enable_grad, is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, HooksOff, Node, output_node, shape_of
from tensorweaver.linalg._shared import CONJUGATES_OF
from tensorweaver.linalg.fused_backward import _through_reference, _wrapped, rebound, restored
from tensorweaver.tensor import Tensor


class _LinalgCall(Function):
    """The inputs' gradients of a linalg call from its outputs' (None: not used)."""

    _well_formed = True  # (every rule below returns one gradient or None per input)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple:
        count = len(ctx.needs_input_grad)
        kept = ctx.saved_tensors  # (read first: an input changed in place since is refused)
        if ctx._unpack is not None:  # (outputs a saved_tensors_hooks' pack saw)
            kept = _unpacked(ctx, kept, count)
        inputs = kept[:count]
        if ctx.places is not None:  # (the outputs of PyTorch's node this call has)
            grads = tuple([grads[p] for p in ctx.places])
        # A loop, not all() of a generator: this runs once per call in every backward.
        for g in grads:
            if g is not None:
                break
        else:
            return (None,) * count
        inert = ctx.inert
        if inert is not None and inert(grads):
            return (None,) * count
        if is_grad_enabled():  # create_graph
            if ctx.attached is not None:  # a formula: on this call's outputs, attached
                outs = _attached_outputs(ctx, kept[count : count + len(ctx.indices)])
                if outs is not None:
                    return _formula_again(ctx, inputs, outs, kept[count + len(outs) :], grads)
            reference, static = ctx.reference  # else a graph from the inputs themselves
            return _through_reference(inputs, reference, static, ctx.indices, grads)
        return ctx.rule(kept, grads)

    @staticmethod
    def _output_rewritten(ctx: FunctionCtx, slot: int, old: Any, new: Any) -> None:
        """Output ``slot``'s array ``old`` was replaced by ``new`` through ``.data``
        (autograd/node.py ``output_rewritten``): the rule reads the new one, as PyTorch's
        node reads the memory of the outputs it saved."""
        if ctx.fused is not None:  # (the backend's record of its call: written there)
            rewrite = getattr(ctx.inputs_backend, "rewrite_linalg_output", None)
            k = slot if ctx.places is None else ctx.places.index(slot)
            made = ctx.made
            # (only the array the call returned: one ``.data`` was rebound to is not the
            # memory the record keeps, which PyTorch's node goes on reading)
            if rewrite is not None and made[k] is old:
                made[k] = new
                rewrite((ctx.fused, ctx.indices[k]), new)
        saved = ctx._saved
        now = ctx.__dict__.get("now")  # (place -> the output's array, where kept's was written)
        for k in range(len(ctx.needs_input_grad), len(saved)):  # (keep_outputs' outputs)
            kept = saved[k]
            if type(kept) is _Packed:  # (unpack's: read in backward)
                continue
            if (kept.native if now is None else now.get(k, kept.native)) is not old:
                continue
            # Into the kept array's memory where the backend can write it: the views a
            # create_graph backward's formula took of it (movement's unsqueeze, narrow, mT)
            # read that memory, as PyTorch's double-backward nodes read the saved outputs'.
            # (not where the backend computed the call whole: its record, which its graph
            # saved, is written by rewrite_linalg_output above)
            if ctx.fused is None and new is not old and _write_memory(kept, new):
                if now is None:
                    now = ctx.now = {}
                now[k] = new  # (the output's array now: a later write names it as ``old``)
            else:
                kept.native = new
                if now is not None:
                    now.pop(k, None)
        conjugates = ctx.__dict__.get("conjugates")
        if conjugates is not None:  # (the create_graph formulas' copies: written anew)
            conjugate = ctx.inputs_backend.conj
            for copy, source in conjugates:
                _write_memory(copy, conjugate(source.native))


def _formula_again(
    ctx: FunctionCtx, inputs: tuple, outs: tuple, extra: tuple, grads: tuple
) -> tuple:
    """The inputs' gradients by the call's formula on its ``outs`` attached again (and the
    ``extra`` values it reads), with a graph: the conjugate transposes it computes of them
    are kept (``ctx.conjugates``), so that a later write through an output's ``.data``
    reaches them, as it reaches PyTorch's conjugate views of the saved outputs."""
    noted: list = []
    CONJUGATES_OF.append(noted)
    try:
        found = ctx.attached[2]((*inputs, *outs, *extra), grads)
    finally:
        CONJUGATES_OF.pop()
    if noted:
        ctx.conjugates = (*ctx.__dict__.get("conjugates", ()), *noted)
    return found


def keep_outputs(outs: tuple, indices: tuple, formula: Callable[[tuple, tuple], tuple]) -> None:
    """Under ``create_graph`` the node of the call whose differentiable ``outs`` (numbered
    ``indices``) hang from it applies ``formula(saved, grads)`` (``saved``: the inputs, those
    outputs) to the outputs attached to it again (:func:`_attached_outputs`); where the
    backend computed the call whole, copies of the outputs are kept for it."""
    node = outs[indices[0]]._node
    ctx, group = node.saved[1], node.parents[0]
    if ctx.fused is not None:  # (formula_call keeps its own)
        copies = []
        for i in indices:
            out = outs[i]
            copies.append(Tensor(out.native, out.backend, out.dtype))
        ctx._saved = (*ctx._saved, *copies)
    nodes = tuple([weakref.ref(outs[i]._node) for i in indices])  # (weakly: they hold ctx)
    ctx.attached = (weakref.ref(group), nodes, formula)


def pack_outputs(outs: tuple, indices: tuple) -> None:
    """Pass the call's differentiable ``outs`` (numbered ``indices``), then the other
    outputs its formula reads (formula_call's ``extra``: lu's P), through the innermost
    saved_tensors_hooks' pack, as PyTorch's node of qr, eigh, svd, eig or lu packs the
    outputs it saves (not the input): its rule reads what unpack gives. Called where a hook
    is on."""
    node = outs[indices[0]]._node
    ctx = node.saved[1]
    count = len(ctx.needs_input_grad)
    saved = ctx._saved  # (the outputs kept: keep_outputs, formula_call)
    kept = [outs[i] for i in indices]
    kept.extend(saved[count + len(indices) :])
    packed: list = [None] * len(kept)
    with HooksOff() as (pack, ctx._unpack):  # (what the hook computes saves nothing)
        for k in _PACK_ORDER.get(node.label, range(len(kept))):
            out = kept[k]
            packed[k] = _Packed(out, pack(out))
    ctx._saved = (*saved[:count], *packed)
    ctx._versions = ()  # (PyTorch checks no version of a packed tensor: unpack's is read)


#: node name -> the order in which PyTorch's node packs the outputs it saves (places among
#: those :func:`pack_outputs` packs) where it is not theirs: LinalgSvdBackward0 saves S
#: before U and Vh, LinalgLuBackward0 L, P (kept after L and U), U.
_PACK_ORDER = {"LinalgSvdBackward0": (1, 0, 2), "LinalgLuBackward0": (0, 2, 1)}


def _unpacked(ctx: FunctionCtx, kept: tuple, count: int) -> tuple:
    """``kept`` with the packed outputs unpacked; where the backend computed the call whole,
    written into its record, which its backward reads."""
    unpack = ctx._unpack
    found = list(kept)
    for k, t in enumerate(kept[count:], count):
        if type(t) is _Packed:
            value = _checked(unpack(t.value))
            found[k] = value
            rewrite = getattr(ctx.inputs_backend, "rewrite_linalg_output", None)
            if ctx.fused is not None and rewrite is not None:
                rewrite((ctx.fused, ctx.indices[k - count]), value.native)
    return tuple(found)


def _attached_outputs(ctx: FunctionCtx, kept: tuple) -> tuple | None:
    """The outputs a formula reads (``kept``: their copies) as tensors attached to their
    nodes again (an output the program dropped to a node made anew), so that a second
    backward reaches this call with the whole gradient of each output, as PyTorch's saved
    outputs do: a recomputed decomposition would take a part of it, and eig's check of the
    eigenvectors' phases holds for the whole only. None where the graph was released."""
    group_ref, refs, _ = ctx.attached
    outs = []
    for slot, t in enumerate(kept):
        node = refs[slot]()
        if node is None:  # (its call's node runs this backward: alive)
            group = group_ref()
            shapes = group.saved[4]
            saved = (_LinalgCall, ctx, None, slot, len(shapes))
            node = output_node("function", group, shapes[slot], saved)
            node.label = group.label
            remade = list(refs)
            remade[slot] = weakref.ref(node)  # (kept alive by the graph made from it)
            refs = tuple(remade)
            ctx.attached = (group_ref, refs, ctx.attached[2])
        elif node.parents is None:
            return None
        out = Tensor(t.native, t.backend, t.dtype)
        out._node = node
        out._requires_grad = True
        outs.append(out)
    return tuple(outs)


def one_node(
    label: str,
    tensors: tuple,
    outs: tuple,
    indices: tuple,
    call: tuple,
    rule: Callable[[tuple, tuple], tuple],
    kept: tuple = (),
    places: tuple | None = None,
    fused: Any = None,
) -> None:
    """Attach the differentiable ``outs`` (numbered ``indices`` among the call's outputs) of
    the call on ``tensors`` to one node named ``label``. ``call`` is the core's
    ``(reference, static)``; ``rule(saved, grads)`` gives the inputs' gradients, ``saved``
    being ``tensors`` then ``kept`` (freed with the node's saved tensors). ``places``, where
    given, is (each output's place among those of PyTorch's node, their count): eigvalsh's
    node is eigh's, whose hooks see the eigenvectors' gradient too (None). ``fused`` is the
    backend's record of a call it computed whole (its backward's state), else None."""
    # Plain loops, no comprehensions (a frame each on Python 3.11): this runs every call.
    if len(tensors) == 1:  # (slogdet, qr, eigh, svd, lu: one input)
        first = tensors[0]  # (the slot read; the property's frame only for a view)
        needs: tuple = (
            first._requires_grad or (first._view_of is not None and first.requires_grad),
        )
    else:
        needs = tuple([t.requires_grad for t in tensors])
    ctx = FunctionCtx(needs)
    ctx.reference, ctx.indices, ctx.rule = call, indices, rule
    ctx.fused, ctx.inputs_backend, ctx.attached = fused, tensors[0].backend, None
    if fused is not None:  # (the arrays it returned, which the record keeps: _output_rewritten)
        made = []
        for i in indices:
            made.append(outs[i].native)
        ctx.made = made
    ctx.places = None if places is None else places[0]
    inert = _INERT.get(label)
    ctx.inert = None if inert is None or tensors[0].dtype.is_complex else inert
    ctx.materialize_grads = False
    ctx._saved = (*tensors, *kept)
    ctx._versions, ctx._name = _saved_versions(label, tensors, outs, indices), label[:-9]
    shapes = []
    for i in indices:
        shapes.append(shape_of(outs[i]))
    slots = range(len(indices)) if places is None else places[0]
    if places is not None:  # (the shapes of outputs this call does not make: never read)
        shapes = [shapes[slots.index(k)] if k in slots else shapes[0] for k in range(places[1])]
    group = Node("function", tensors, (_LinalgCall, ctx, tensors, None, tuple(shapes)))
    group.label = label
    for slot, i in zip(slots, indices):
        saved = (_LinalgCall, ctx, None, slot, len(shapes))
        node = output_node("function", group, shapes[slot], saved)
        node.label = label
        out = outs[i]
        out._node = node
        out._requires_grad = True


#: What PyTorch's node saves where not every output and no input: (whether it reads the
#: input, the outputs it keeps): slogdet's keeps the matrix and the sign, not log|det|;
#: triangular_solve's and lstsq's their inputs and the solution; matrix_exp's the matrix.
_SAVES = {
    "LinalgSlogdetBackward0": (True, (0,)),
    "TriangularSolveBackward0": (True, (0,)),
    "LinalgLstsqBackward0": (True, (0,)),
    "LinalgMatrixExpBackward0": (True, ()),
}


def _saved_versions(label: str, tensors: tuple, outs: tuple, indices: tuple) -> tuple:
    """What backward checks was not changed in place since, as PyTorch's node saves it (see
    :data:`_SAVES`; eigh's keeps its eigenvalues and eigenvectors, not the matrix): the
    outputs weakly (a dropped output can change no more)."""
    reads_input, kept = _SAVES.get(label, (False, indices))
    entries = list(_watched(tensors, [])) if reads_input else []
    first = len(tensors)
    for k, i in enumerate(indices):
        if i in kept:
            out = outs[i]
            entries.append((first + k, weakref.ref(out), out._version))
    return tuple(entries)


def _sign_only(grads: tuple) -> bool:
    return grads[1] is None


#: node name -> whether ``grads`` give a real input no gradient at all (None: never): a real
#: matrix's slogdet with only its sign's gradient (PyTorch's rule reads only log|det|'s then,
#: and gives None). Module-level, not a closure per call.
_INERT: dict[str, Callable[[tuple], bool]] = {"LinalgSlogdetBackward0": _sign_only}


def reference_call(
    label: str, reference: Callable, tensors: tuple, static: tuple, places: tuple | None
) -> tuple:
    """The outputs of the core's decomposition ``reference`` on ``tensors``, recorded as
    :func:`one_node` where an input requires grad: the decomposition's own graph runs from
    stand-ins of the inputs, and the node's rule asks it for their gradients."""
    # (new tensors over the inputs' arrays, not aliases: an input changed in place later
    # leaves them as they were, as PyTorch's node keeps what it saved)
    stands = tuple([Tensor(t.native, t.backend, t.dtype) for t in tensors])
    for stand, t in zip(stands, tensors):
        stand._requires_grad = t.requires_grad
    with enable_grad():
        ys = reference(*stands, *static)
    outs = tuple([Tensor(y.native, y.backend, y.dtype) for y in ys])
    indices = tuple([i for i, y in enumerate(ys) if y.requires_grad])
    if not indices:
        return outs
    count = len(tensors)

    def rule(kept: tuple, grads: tuple) -> tuple:
        from tensorweaver.autograd.engine import grad

        stands, ys = kept[count : 2 * count], kept[2 * count :]
        used = [(ys[i], g) for i, g in zip(indices, grads) if g is not None]
        wanted = [s for s in stands if s.requires_grad]
        found = iter(
            grad(
                [y for y, _ in used],
                wanted,
                [g for _, g in used],
                retain_graph=True,  # (freed with the node's saved tensors)
                allow_unused=True,
            )
        )
        return tuple([next(found) if s.requires_grad else None for s in stands])

    one_node(label, tensors, outs, indices, (reference, static), rule, (*stands, *ys), places)
    return outs


def formula_call(
    label: str,
    reference: Callable,
    tensors: tuple,
    static: tuple,
    indices: tuple,
    rule: Callable[[tuple, tuple], tuple],
    extra: int = 0,
    again: bool = False,
) -> tuple:
    """The outputs of the core's decomposition ``reference`` on ``tensors``, computed without
    a graph and recorded as :func:`one_node` ``label`` (differentiable outputs numbered
    ``indices``) whose rule is PyTorch's formula ``rule(saved, grads)``, ``saved`` being
    ``tensors``, those outputs, then the last ``extra`` values ``reference`` returns beyond
    the call's outputs (what the formula reads: lstsq's pseudo-inverse). Under
    ``create_graph`` the formula runs again on the outputs attached to this node where
    ``again`` (a formula of the outputs alone: qr's, eigh's, svd's, eig's, lu's), else the
    decomposition is differentiated again, as :func:`reference_call`'s."""
    tokens = _switched(False)  # no_grad(), without its object: 1-2 us of every call
    try:
        ys = reference(*tensors, *static)
    finally:
        _restore(tokens)
    count = len(ys) - extra
    outs = list(ys[:count])
    for i in indices:  # (new tensors: the rule's copies stay as computed, views or not)
        y = ys[i]
        outs[i] = Tensor(y.native, y.backend, y.dtype)
    kept = (*[ys[i] for i in indices], *ys[count:])
    one_node(label, tensors, tuple(outs), indices, (reference, static), rule, kept)
    if extra:  # (an extra the call returns, lu's P: PyTorch's node checks its version too)
        ctx = outs[indices[0]]._node.saved[1]
        first = len(tensors) + len(indices)
        for j, y in enumerate(ys[count:], first):
            if any([y is out for out in outs]):
                ctx._versions = (*ctx._versions, (j, weakref.ref(y), y._version))
    if again:
        keep_outputs(outs, indices, rule)
        if SAVED_TENSORS_HOOKS:
            pack_outputs(outs, indices)
    return tuple(outs)


def fused_call(
    label: str,
    tensors: tuple,
    outs: tuple,
    indices: tuple,
    call: tuple,
    recorded: tuple,
    places: tuple | None,
) -> None:
    """Record the differentiable ``outs`` (numbered ``indices``) of a call the backend
    computed whole as :func:`one_node`; ``recorded`` is (its backward's state, the inputs'
    arrays it was given)."""
    count = len(tensors)
    saved, given = recorded

    def rule(kept: tuple, grads: tuple) -> tuple:
        first = kept[0]
        backend = first.backend
        inputs = kept[:count]
        undo = rebound(None, given, saved, backend, inputs)  # (inputs' .data replaced since)
        try:
            whole = getattr(backend, "fused_linalg_outputs_backward", None)
            if whole is None:  # the backward of one output at a time, summed
                needs = tuple([t.requires_grad for t in inputs])
                found = [None] * count
                for i, g in zip(indices, grads):
                    if g is not None:
                        part = backend.fused_linalg_backward((saved, i), g.native, needs)
                        found = [_add(backend, a, b) for a, b in zip(found, part)]
                return _wrapped(found, inputs)
            listed = []
            for g in grads:  # (a loop: a comprehension's frame every backward)
                listed.append(None if g is None else g.native)
            natives = tuple(listed)
            if count == 1:  # one input (eigh, slogdet, qr, ...): no loops
                (n,) = whole((saved, indices), natives, (first.requires_grad,))
                return (None if n is None else Tensor(n, backend, first.dtype),)
            return _wrapped(
                whole((saved, indices), natives, tuple([t.requires_grad for t in inputs])), inputs
            )
        finally:
            restored(undo)

    one_node(label, tensors, outs, indices, call, rule, (), places, saved)


def _add(backend: Any, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return b if a is None else a
    return backend.add(a, b)


def _write_memory(kept: Tensor, new: Any) -> bool:
    """Whether ``new``'s values were written into the memory of ``kept``'s array (same shape
    and dtype) as a write through ``.data`` does: by the backend's ``write_linalg_output``
    where it records calls of its own (``rewrite_linalg_output``: torch's; its
    ``write_into`` counts as an in-place change there, which a later call's record that
    saved the array would refuse in backward), else by its ``write_into``."""
    backend = kept.backend
    old = kept.native
    if tuple(new.shape) != tuple(old.shape) or new.dtype != old.dtype:
        return False
    write = getattr(backend, "write_linalg_output", None)
    if write is None and getattr(backend, "rewrite_linalg_output", None) is None:
        write = getattr(backend, "write_into", None)
    return write is not None and bool(write(old, new))
