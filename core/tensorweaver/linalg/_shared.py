"""Small tensor helpers the linalg families share: matrix transposes, identities, batch
broadcasting, whether an output's gradient is given and named results."""

from __future__ import annotations

from tensorweaver.ops import complex as cx
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.apply import broadcast_shapes
from tensorweaver.return_types import _structseq
from tensorweaver.tensor import Tensor


def mT(x: Tensor) -> Tensor:  # noqa: N802  (PyTorch's name)
    return mv.transpose(x, -2, -1)


#: While a create_graph formula runs on a call's outputs (linalg/one_node.py), the complex
#: conjugate transposes :func:`mH` computes: [(conjugate, the transposed view it was computed
#: from)], innermost formula last.
CONJUGATES_OF: list[list] = []


def mH(x: Tensor) -> Tensor:  # noqa: N802  (PyTorch's name)
    """The conjugate transpose, computed (the transpose of a real matrix): what the formulas
    and gradient rules use, where a conjugate view would only add its tracking (2.45 us
    against 1.26 for 64 values). Inside a create_graph formula it is noted
    (:data:`CONJUGATES_OF`): a later write through an output's ``.data`` is written into it
    anew, as PyTorch's conjugate view (of a saved output, a gradient) reads that memory."""
    t = mT(x)
    out = cx.conj_physical(t)
    if CONJUGATES_OF and out is not t:
        CONJUGATES_OF[-1].append((out, t))
    return out


def mH_view(x: Tensor) -> Tensor:  # noqa: N802  (PyTorch's name)
    """The conjugate transpose as a conjugate view, for a result PyTorch returns as one
    (``torch.svd``'s V)."""
    return cx.conj(mT(x))


def is_given(g: Tensor | None) -> bool:
    """Whether an output's gradient counts as given: not None nor all zeros (the gradient of
    an output the program did not use), as PyTorch's defined gradient, whose terms its
    formulas skip where it is undefined."""
    return g is not None and bool(rd.any(ew.ne(g, 0)).item())


def eye_like(x: Tensor, n: int, m: int | None = None) -> Tensor:
    """An n x m identity of ``x``'s dtype and device."""
    return cr.eye(n, m, dtype=x.dtype, device=x.device)


def to_batch(x: Tensor, batch: tuple) -> Tensor:
    """``x`` with its batch dimensions (all but the last two) broadcast to ``batch``."""
    return mv.expand(x, (*batch, *x.shape[-2:]))


def broadcast_batch(name: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` with their batch dimensions broadcast together."""
    batch = broadcast_shapes(name, a.shape[:-2], b.shape[:-2])
    return to_batch(a, batch), to_batch(b, batch)


def result(name: str, *fields: str) -> type:
    """A named tuple type for ``torch.return_types.<name>``."""
    return _structseq(name, fields)
