"""What a backend's optional ``compile_graph(graph)`` hook receives (API 2.4).

A confirmed graph's backend calls, between reading the step's inputs and writing its
results back, form one pure function of backend arrays: :attr:`GraphRecord.fn`. The core
replays it as it is unless the backend's hook returns a faster callable with the same
signature and results (torch hands it to ``torch.compile``; a backend might also fuse its
calls or write into buffers it reuses). The core offers the hook only graphs whose calls
all go to that one backend and read nothing back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import FunctionType
from typing import Any, Callable, NamedTuple, Optional


class Call(NamedTuple):
    """One backend call of the graph, in the order the eager step made it."""

    #: The backend method called (``add``, ``matmul``, ``fused_linear``).
    primitive: str
    #: Its arguments as Python source: value names (``v3``), constant names (``C1``, see
    #: :attr:`GraphRecord.constants`), literals, lists of these, ``key=value`` for keywords.
    args: tuple[str, ...]
    #: The name of its result (a tuple result's items are ``vN = result[i]`` lines in
    #: :attr:`GraphRecord.source`; a call found to give an argument back unchanged, such
    #: as ``x * 1``, is a ``vN = vM`` line there instead of a call).
    result: str


@dataclass(frozen=True)
class GraphRecord:
    """A compiled step's backend calls as one function, with what a compiler needs to know.

    ``fn(*inputs)`` calls the backend's own methods, one per :class:`Call`, and returns a
    tuple of the arrays named by :attr:`outputs`. It never writes into its inputs; an input
    is a backend array or a Python float that changes between calls (a learning rate or a
    bias correction recomputed each step): a compiler must not bake those in. A compiled
    form may write the outputs named in :attr:`donated` into their inputs' arrays instead
    (as PyTorch's in-place updates do).
    """

    fn: Callable[..., tuple]
    #: The names of ``fn``'s parameters, in order.
    inputs: tuple[str, ...]
    #: The names of the values ``fn`` returns, in order.
    outputs: tuple[str, ...]
    calls: tuple[Call, ...]
    #: The objects the constant names in :attr:`calls` stand for (arrays, dtypes, tuples).
    constants: dict[str, Any]
    #: ``(shape, native dtype)`` of every array value as traced (inputs and results);
    #: Python numbers have no entry.
    values: dict[str, tuple[tuple[int, ...], Any]]
    #: ``fn``'s Python source.
    source: str
    #: The backend method each function name in :attr:`source` (``F3``) calls.
    methods: dict[str, str]
    #: ``tw.compile``'s ``mode`` (None, ``"default"``, ``"reduce-overhead"``,
    #: ``"max-autotune"``, ``"max-autotune-no-cudagraphs"``).
    mode: Optional[str] = None
    #: ``(output, input)`` pairs: the output is the new value of a tensor whose array so far
    #: is the input (a parameter's update, optimizer state changed in place). A compiled
    #: form may write the output into the input's array and return that array: the core
    #: then passes an input there only where nothing but that tensor holds the array (no
    #: ``clone()`` sharing it, no NumPy view), and reads neither after the call. It must
    #: leave an array alone, and return a new one, where the backend sees the memory shared
    #: (a view of it held elsewhere). A compiled form that may write into these inputs says
    #: so with a true attribute ``writes_donated``; one without it gets any input as it is.
    donated: tuple[tuple[str, str], ...] = ()

    def rebind(self, replacements: dict[str, Callable]) -> Callable[..., tuple]:
        """``fn`` with the calls of some backend methods going to other callables (a
        compiler's traceable forms of them), keyed by method name, each taking the
        method's arguments (without ``self``)."""
        names = dict(self.fn.__globals__)
        for name, method in self.methods.items():
            if method in replacements:
                names[name] = replacements[method]
        return FunctionType(self.fn.__code__, names, self.fn.__name__)
