"""``tw.compile``: a step captured once as a graph of backend primitives, then replayed.

Modules: :mod:`.recorder` (records the calls a step makes on its backends),
:mod:`.state` (what the step reads and writes, and its guards), :mod:`.graph` (the
replay function generated from one recording), :mod:`.symbolic` (optimizer numbers the
replay recomputes), :mod:`.reads` (values the step reads into Python, and how it uses
them), :mod:`.branches` (a graph per path through branches on those values),
:mod:`.draws` (random draws handed on when a guard stops a replay),
:mod:`.differentiable` (a replayed forward with its recorded backward), :mod:`.released`
(returned tensors of a graph the step's backward freed, as eagerly), :mod:`.compiled`
(the cache of graphs, tracing and replay; :func:`compile`), :mod:`.public` (PyTorch's
``torch.compiler`` helpers: ``disable``, ``is_compiling``).
"""

from tensorweaver.compiler.compiled import (
    CompiledFunction,
    CompileWarning,
    OptimizedModule,
    compile,
)
from tensorweaver.compiler.public import disable, is_compiling, is_dynamo_compiling
from tensorweaver.compiler.recorder import HostRead

__all__ = [
    "CompileWarning",
    "CompiledFunction",
    "HostRead",
    "OptimizedModule",
    "compile",
    "disable",
    "is_compiling",
    "is_dynamo_compiling",
]
