"""Nested tuples, lists, dicts and namedtuples of leaves, as ``torch.utils._pytree`` sees
them: flattening to a list of leaves and a spec, rebuilding, and broadcasting a prefix
(``in_dims``, ``out_dims``) to every leaf under it. ``None`` is a node without leaves."""

from __future__ import annotations

from typing import Any, Callable, Optional


class TreeSpec:
    """The shape of a tree: its container type, keys (dicts) and the children's specs."""

    __slots__ = ("kind", "keys", "children")

    def __init__(self, kind: Any, keys: tuple = (), children: tuple = ()) -> None:
        self.kind, self.keys, self.children = kind, keys, children

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeSpec) and (self.kind, self.keys, self.children) == (
            other.kind,
            other.keys,
            other.children,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.keys, self.children))

    def __repr__(self) -> str:
        if self.is_leaf:
            return "*"
        if self.kind is type(None):
            return "None"
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


def _children(tree: Any) -> Optional[tuple[Any, tuple, list]]:
    """(kind, keys, children) of a container node, or None for a leaf."""
    if tree is None:
        return type(None), (), []
    if isinstance(tree, dict):
        return dict, tuple(tree), list(tree.values())
    if _is_namedtuple(tree):
        return type(tree), (), list(tree)
    if type(tree) in (tuple, list):
        return type(tree), (), list(tree)
    return None


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its spec."""
    leaves: list = []

    def visit(node: Any) -> TreeSpec:
        parts = _children(node)
        if parts is None:
            leaves.append(node)
            return LEAF
        kind, keys, children = parts
        return TreeSpec(kind, keys, tuple(visit(c) for c in children))

    return leaves, visit(tree)


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The tree of shape ``spec`` holding ``leaves`` in order."""
    it = iter(leaves)

    def build(node: TreeSpec) -> Any:
        if node.is_leaf:
            return next(it)
        if node.kind is type(None):
            return None
        children = [build(c) for c in node.children]
        if node.kind is dict:
            return dict(zip(node.keys, children))
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
    if prefix is None or _children(prefix) is None:
        return [prefix] * spec.num_leaves
    kind, keys, children = _children(prefix)
    if spec.is_leaf or kind is not spec.kind or len(children) != len(spec.children):
        return None
    if kind is dict and set(keys) != set(spec.keys):
        return None
    if kind is dict:
        children = [prefix[k] for k in spec.keys]
    out: list = []
    for child, child_spec in zip(children, spec.children):
        part = broadcast_prefix(child, child_spec)
        if part is None:
            return None
        out.extend(part)
    return out
