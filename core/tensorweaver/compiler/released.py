"""Results of a replayed step that look to autograd as the eager step's do.

A step that runs its own backward and returns a tensor of that graph (the loss, an LSTM's
hidden state) returns, eagerly, a tensor that requires grad, is no leaf and has a
``grad_fn``; a backward through it raises PyTorch's "Trying to backward through the graph
a second time", since the step's backward freed the graph. The replay gives such a result
the same face: a copy of the nodes between it and the freed ones (their ``grad_fn`` names
and links, down to the leaves), fresh on every replay, whose backward raises as eagerly
before it computes anything. A result whose graph is still whole after the step (a backward with
``retain_graph=True``) would give real gradients eagerly, which a replay cannot: for it
:func:`shape_of` gives None, and the step is not replayed. A result's ``.grad`` (a new leaf,
or a ``retain_grad()`` one) comes with it (:func:`with_grad`), and a ``detach()`` of a
tensor the caller can reach is its alias again (:func:`alias`): a write into it reaches
that tensor, as eagerly.
"""

from __future__ import annotations

import functools
import sys
import weakref
from types import CodeType, FunctionType
from typing import Any, Callable, Optional

from tensorweaver.autograd.composite_hooks import graph_order
from tensorweaver.autograd.grad_fn import kept_inputs
from tensorweaver.autograd.node import Node

#: A graph's shape, as bound into the replay: per node, in an order where each node comes
#: after those it links to, ``(grad_fn name, indices of its parents)``, its parents those of
#: PyTorch's node (``grad_fn.kept_inputs``: a composite's inputs, not its inner nodes),
#: a parent that needs no gradient is None, a leaf that requires grad (an ``AccumulateGrad``)
#: is ``-1 - i`` for leaf ``i`` of the list :func:`shape_of` fills; and, for a node the
#: step's backward freed, ``(fused,)``: what it keeps for ``next_functions`` besides its
#: parents (a fused op's kernel, slots and rank, or None: node.py ``Node.release``), else
#: None. A freed node keeps its parents for ``next_functions``, as PyTorch's does.
Shape = tuple[tuple[str, Optional[tuple[Optional[int], ...]], Optional[tuple]], ...]


def shape_of(node: Node, leaves: list | None = None) -> Shape | None:
    """The shape of the graph ending at ``node``, or None when a backward through it would
    run (no node it reaches has been freed); its leaves go into ``leaves``."""
    if all(n.parents is not None for n in graph_order(node, _producers)):
        return None
    # (PyTorch's nodes: a composite's inner ones, freed or not, are none of them)
    order = graph_order(node, _nodes_before)  # each node after its parents
    index = {id(n): i for i, n in enumerate(order)}
    found = [] if leaves is None else leaves
    inputs = [kept_inputs(n) for n in order]
    for parents in inputs:
        for p in parents or ():
            if p is not None and type(p) is not Node and id(p) not in index:
                index[id(p)] = -1 - len(found)
                found.append(p)
    return tuple(
        (
            n.name,
            None
            if parents is None
            else tuple(None if p is None else index[id(p)] for p in parents),
            _freed(n, index),
        )
        for n, parents in zip(order, inputs)
    )


def _freed(node: Node, pytorch: dict[int, int]) -> tuple | None:
    """None for a node backward has not freed, else ``(fused,)`` (see :data:`Shape`)."""
    if node.parents is not None:
        # (a composite's last node may keep its parents while backward freed one inside
        # it, as ``p @ x``'s sum over a freed mul: PyTorch's node for it is freed)
        return (None,) if _freed_inside(node, pytorch) else None
    kept = getattr(node, "edges", None)
    return (None if kept is None else kept[2],)


def _freed_inside(node: Node, pytorch: dict[int, int]) -> bool:
    """Whether backward freed a node of the composite that ``node`` ends: one between it
    and the nodes PyTorch has (``pytorch``, by id), which its inputs come from."""
    inner = graph_order(node, lambda n: [p for p in _producers(n) if id(p) not in pytorch])
    return any(n.parents is None for n in inner)


def _producers(node: Node) -> list[Node]:
    """The nodes that made ``node``'s inputs (none once freed)."""
    return [p for p in node.parents or () if type(p) is Node]


def _nodes_before(node: Node) -> list[Node]:
    """The nodes that feed PyTorch's node for ``node`` (a composite's inputs' producers)."""
    return [p for p in kept_inputs(node) or () if type(p) is Node]


def releaser(shape: Shape, retained: bool = False) -> Callable[[Any, tuple], Any]:
    """:func:`_releaser`'s function for one graph: the nodes it keeps for reuse are that
    graph's (held as long as the compiled function holds the graph)."""
    code, names = _releaser(shape, retained)
    release = FunctionType(code, {**names, "KEPT": [], "COUNTS": []})
    release.same = (shape, retained)  # type: ignore[attr-defined]  (graph.py _equal)
    return release


@functools.lru_cache(maxsize=256)
def _releaser(shape: Shape, retained: bool = False) -> tuple[CodeType, dict]:
    """The code (and its global names) of a function ``(t, leaves) -> t`` giving ``t`` the
    face of a result of a graph of ``shape`` on ``leaves`` (requiring grad, no leaf;
    ``retained``: as after ``t.retain_grad()``), generated once per shape: a replay calls it
    on every run, and the nodes built in line cost a third of a loop over ``shape``."""
    lines = []
    again = []  # (the links to leaves, set again on the nodes reused)
    for i, (name, parents, freed) in enumerate(shape):
        n = f"n{i}"
        # (a copy has no rule: a backward stops before rules)
        lines += [
            f"{n} = new(Node)",
            f"{n}.op = {n}.label = {name!r}",
            f"{n}.inputs = {n}.saved = {n}.retained = {n}.view = None",
            f"{n}.versions, {n}.epoch, {n}.keeps_saved = (), 0, False",
            f"{n}.parents = {'None' if freed else _parents_source(parents)}",
        ]
        if not freed and "leaves" in lines[-1]:
            again.append(lines[-1])
        if freed:  # (backward through it raises; its next_functions are kept: grad_fn.py)
            lines.append(f"{n}.edges = ({_parents_source(parents)}, None, {freed[0]!r})")
            if "leaves" in lines[-1]:
                again.append(lines[-1])
            if freed[0] is not None:  # (a fused op's: its next_functions are PyTorch's steps)
                lines.append(f"{n}.op = 'fused'")
    last = f"n{len(shape) - 1}"
    nodes = ", ".join(f"n{i}" for i in range(len(shape)))
    if retained:
        lines.append(f"{last}.retained = ref(t)")
        body = lines
    else:
        # The nodes of the last replay's result are used again when nothing else holds
        # them (that result, its grad_fn and every node are gone: their reference counts
        # are those the nodes have among themselves, measured when they were made; no
        # weak reference to one: the tables keyed by node, CHANGED_OUTPUTS, PACKED, ...,
        # hold none; none was retain_grad()'s), with their links to this replay's leaves:
        # no one can tell them from new ones. 0.8 -> 0.3 us a replay for three nodes
        # (session 35).
        counts = ", ".join(f"_count({n})" for n in nodes.split(", "))
        weak = " or ".join(f"_weak({n})" for n in nodes.split(", "))
        # (a node a grad_fn was made for may hold its metadata, its leaves' accumulators)
        unseen = " and ".join(f"{n}.view is None" for n in nodes.split(", "))
        body = [
            "if KEPT:",
            f"    {nodes}, = KEPT",
            f"    if [{counts}] == COUNTS and not ({weak}) and {last}.retained is None"
            f" and {unseen}:",
            *(f"        {line}" for line in again),
            f"        t._node = {last}",
            "        t._requires_grad = True",
            "        return t",
            *lines,
            f"KEPT[:] = ({nodes},)",
            "if not COUNTS:",
            f"    COUNTS[:] = [{counts}]",
        ]
    body += [f"t._node = {last}", "t._requires_grad = True"]
    source = "def release(t, leaves):\n" + "".join(f"    {s}\n" for s in [*body, "return t"])
    names: dict[str, Any] = {
        "new": Node.__new__,
        "Node": Node,
        "ref": weakref.ref,
        "_count": sys.getrefcount,
        "_weak": weakref.getweakrefcount,
    }
    module = compile(source, "<tw.compile released>", "exec")
    code = next(c for c in module.co_consts if isinstance(c, CodeType))
    return code, names


def _parents_source(parents: tuple[int | None, ...] | None) -> str:
    if parents is None:
        return "None"
    parts = ("None" if p is None else f"n{p}" if p >= 0 else f"leaves[{-1 - p}]" for p in parents)
    return "".join(["(", *(f"{p}, " for p in parts), ")"])


def with_grad(t: Any, grad: Any) -> Any:
    """``t`` with ``grad`` as its ``.grad``."""
    t.grad = grad
    return t


def alias(base: Any, native: Any, requires_grad: bool) -> Any:
    """A ``detach()`` of ``base`` holding ``native`` (the array it held when the step
    returned it, which the step may have rebound in ``base`` since)."""
    t = base.detach()
    t.native = native
    t._requires_grad = requires_grad
    return t


def view_again(t: Any, base: Any, marks: tuple) -> Any:
    """``t`` made a view of ``base`` as the eager step's result was of its base, which the
    step did not return (one of ``chunk()``'s pieces): ``marks`` are that view's write-back,
    re-read and PyTorch's errors (``ops/views.py`` ``as_view``). So the pieces of one
    replayed base share its version counter and ``_base``, and a write into one is written
    back into the base, as eagerly."""
    write, read, *errors = marks
    t._view_of = (base, *marks)
    t._own_version = base._own_version
    t._inference = base._inference
    base._follow(t, read, getattr(write, "region", None), errors[0][1] if errors else None)
    return t
