"""Nested tuples, lists, dicts (plain, ordered, default), deques and namedtuples of
leaves, as ``torch.utils._pytree`` sees them (each container type its own kind of node;
any other type, a subclass of these included, a leaf): flattening to a list of leaves and
a spec, rebuilding, and broadcasting a prefix (``in_dims``, ``out_dims``) to every leaf
under it. ``None`` is a leaf, as in PyTorch 2.13 (a transform rejects it where it wants a
tensor: a None output of ``vmap``, an ``aux``)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from typing import Any, Callable, Optional

#: Container types whose children are looked up by key.
_MAPPINGS = (dict, OrderedDict, defaultdict)


class TreeSpec:
    """The shape of a tree: its container type, keys (mappings), what else rebuilds it (a
    defaultdict's default_factory, a deque's maxlen) and the children's specs."""

    __slots__ = ("kind", "keys", "extra", "children")

    def __init__(
        self, kind: Any, keys: tuple = (), children: tuple = (), extra: Any = None
    ) -> None:
        self.kind, self.keys, self.children, self.extra = kind, keys, children, extra

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeSpec) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def _identity(self) -> tuple:
        return self.kind, self.keys, self.extra, self.children

    def __repr__(self) -> str:
        if self.is_leaf:
            return "*"
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        inner = ", ".join(map(repr, self.children))
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is tuple:
            return f"({inner},)" if len(self.children) == 1 else f"({inner})"
        return f"{self.kind.__name__}({inner})"


LEAF = TreeSpec(None)


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _children(tree: Any) -> Optional[tuple[Any, tuple, list, Any]]:
    """(kind, keys, children, extra) of a container node, or None for a leaf."""
    kind = type(tree)
    if kind in _MAPPINGS:
        factory = tree.default_factory if kind is defaultdict else None
        return kind, tuple(tree), list(tree.values()), factory
    if kind in (tuple, list) or _is_namedtuple(tree):
        return kind, (), list(tree), None
    if kind is deque:
        return kind, (), list(tree), tree.maxlen
    return None


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its spec."""
    leaves: list = []

    def visit(node: Any) -> TreeSpec:
        parts = _children(node)
        if parts is None:
            leaves.append(node)
            return LEAF
        kind, keys, children, extra = parts
        return TreeSpec(kind, keys, tuple(visit(c) for c in children), extra)

    return leaves, visit(tree)


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The tree of shape ``spec`` holding ``leaves`` in order."""
    it = iter(leaves)

    def build(node: TreeSpec) -> Any:
        if node.is_leaf:
            return next(it)
        children = [build(c) for c in node.children]
        if node.kind is defaultdict:
            return defaultdict(node.extra, zip(node.keys, children))
        if node.kind in _MAPPINGS:
            return node.kind(zip(node.keys, children))
        if node.kind is deque:
            return deque(children, maxlen=node.extra)
        if node.kind in (tuple, list):
            return node.kind(children)
        return node.kind(*children)  # a namedtuple

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> Optional[list]:
    """One value of ``prefix`` per leaf of ``spec``: a leaf of ``prefix`` (an int or None)
    stands for every leaf under it; None when the structures do not match."""
    parts = _children(prefix)
    if parts is None:
        return [prefix] * spec.num_leaves
    kind, keys, children, _ = parts
    pairs: Any = zip(children, spec.children)
    if kind in _MAPPINGS and spec.kind in _MAPPINGS:
        # any mapping for any mapping, key by key; PyTorch lists the values in the
        # prefix's key order, whatever the tree's
        if set(keys) != set(spec.keys):
            return None
        position = {k: i for i, k in enumerate(spec.keys)}
        pairs = [(prefix[k], spec.children[position[k]]) for k in keys]
    elif spec.is_leaf or kind is not spec.kind or len(children) != len(spec.children):
        return None
    out: list = []
    for child, child_spec in pairs:
        part = broadcast_prefix(child, child_spec)
        if part is None:
            return None
        out.extend(part)
    return out
