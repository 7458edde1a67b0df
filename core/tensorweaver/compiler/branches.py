"""The graphs of one signature, one per path through the step's branches on read values.

A step that branches on a value it reads (``if loss.item() > 1:``) gives one graph per
sequence of outcomes (its *path*, :attr:`.graph.Graph.path`). A replay starts with the
graph that ran last; when a guard's outcome differs (:class:`.reads.Branch` at guard ``k``),
the graph whose path begins with the outcomes seen so far runs instead, from the start
(the calls before the read are repeated: the replay wrote nothing back yet, as graphs that
write into memory shared with NumPy before a guard are not built, and its random draws
are handed back, :mod:`.draws`). No such graph: :class:`NewPath`, and the step is
traced on the new path, with the same draws.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from tensorweaver.compiler.draws import DRAWS
from tensorweaver.compiler.reads import Branch


class NewPath(Exception):
    """The replay's reads took a path no graph of this signature was traced on."""


def _path(graph: Any) -> tuple:
    return getattr(graph, "forward", graph).path  # a DifferentiableGraph's is its forward's


class Branches:
    """Graphs keyed by path, the most recently run first."""

    def __init__(self) -> None:
        self.graphs: OrderedDict[tuple, Any] = OrderedDict()

    def add(self, graph: Any) -> None:
        self.graphs[_path(graph)] = graph
        self.graphs.move_to_end(_path(graph), last=False)

    def __len__(self) -> int:
        return len(self.graphs)

    def ready(self) -> bool:
        return all(g.ready() for g in self.graphs.values())

    def run(self, args: tuple, kwargs: dict) -> Any:
        graph = next(iter(self.graphs.values()))
        DRAWS.clear()
        for _ in range(len(self.graphs)):
            try:
                result = graph.run(args, kwargs)
            except Branch as taken:
                DRAWS.again()
                path = _path(graph)
                seen = path[: taken.index] + (taken.value,)
                graph = next((g for p, g in self.graphs.items() if p[: len(seen)] == seen), None)
                if graph is None:
                    raise NewPath from None
            else:
                DRAWS.clear()
                self.graphs.move_to_end(_path(graph), last=False)
                return result
        raise NewPath  # the reads changed between two replays (random draws before them)
