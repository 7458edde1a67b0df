"""Views whose write-backs and reads are made once per run, permutation or piece count and
shared between calls (ops/views.py ``_run``, ``_split_marks``, ``_unbind_marks``,
``_permuting``): each view still writes into its own base, follows its own base, and a
piece names its own place in PyTorch's errors; compared with torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

CUTS: dict[str, Callable[[Any], Any]] = {
    "unbind": lambda x: x.unbind(1)[2],
    "unbind_neg": lambda x: x.unbind(-1)[1],
    "split": lambda x: x.split(2, 1)[1],
    "split_sizes": lambda x: x.split([1, 3], 1)[1],
    "chunk": lambda x: x.chunk(2, 0)[1],
    "narrow": lambda x: x.narrow(1, 1, 2),
    "permute": lambda x: x.permute(1, 0),
    "mT": lambda x: x.mT,
    "transpose": lambda x: x.transpose(0, -1),
    "reshape": lambda x: x.reshape(-1),
}


def _two_bases(m: Any, cut: Callable[[Any], Any]) -> list:
    """Two bases cut the same way, twice each: writes through each view, then changes of
    each base; every value as it stands after each step."""
    a = m.arange(16.0, dtype=m.float64).reshape(4, 4)
    b = m.arange(16.0, dtype=m.float64).reshape(4, 4) * 10
    seen = []
    pa, pb = cut(a), cut(b)
    pb.add_(1)
    pa.mul_(2)
    seen += [a.tolist(), b.tolist(), pa.tolist(), pb.tolist()]
    qa, qb = cut(a), cut(b)  # (the second call's views: the shared write-backs again)
    qa.sub_(3)
    b.add_(100)
    seen += [a.tolist(), b.tolist(), pa.tolist(), pb.tolist(), qa.tolist(), qb.tolist()]
    seen += [pa._version, pb._version, a._version, b._version]
    return seen


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("cut", list(CUTS))
def test_views_made_alike_write_into_and_follow_their_own_base(spec: str, cut: str) -> None:
    want = _two_bases(torch, CUTS[cut])
    with entered(spec):
        assert _two_bases(tw, CUTS[cut]) == want


PIECES: dict[str, Callable[[Any], Any]] = {
    "unbind": lambda x: x.unbind(0),
    "split": lambda x: x.split(1, 0),
    "chunk": lambda x: x.chunk(3, 0),
    "split_sizes": lambda x: x.split([2, 1], 0),
}


def _refusals(m: Any, cut: Callable[[Any], Any]) -> list:
    """Which output each piece's refused in-place change names, over two calls."""
    x = m.ones(3, 2, dtype=m.float64, requires_grad=True) * 1
    named = []
    for _ in range(2):
        for piece in cut(x):
            try:
                piece.mul_(2)
                named.append(None)
            except RuntimeError as e:
                named.append(str(e).split(" is a view")[0].split(" of ")[0])
    return named


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("cut", list(PIECES))
def test_each_piece_names_its_own_output(spec: str, cut: str) -> None:
    want = _refusals(torch, PIECES[cut])
    with entered(spec):
        assert _refusals(tw, PIECES[cut]) == want


def _unbind_graph(m: Any) -> list:
    """unbind's pieces of a permuted projection (attention's q, k, v), one unused: their
    node, the gradient, and the pieces under no_grad."""
    w = m.linspace(-1.0, 1.0, 24, dtype=m.float64).reshape(2, 2, 6).requires_grad_()
    qkv = (w * 2).reshape(2, 2, 3, 2).permute(2, 0, 1, 3)
    q, k, v = qkv.unbind(0)
    out = [type(q.grad_fn).__name__, q.grad_fn is k.grad_fn, q.requires_grad]
    (q * 2 + (v * v)).sum().backward()
    out.append(w.grad.tolist())
    with m.no_grad():
        p = qkv.unbind(1)
    out += [p[0].requires_grad, p[0].grad_fn is None, len(p)]
    return out


@pytest.mark.parametrize("spec", FAST)
def test_unbind_pieces_share_one_node(spec: str) -> None:
    want = _unbind_graph(torch)
    with entered(spec):
        assert _unbind_graph(tw) == want


SECTIONS: dict[str, Callable[[Any], list]] = {
    "tensor": lambda m: [m.tensor(1), 2],
    "numpy_int": lambda m: [np.int64(1), 2],  # (after a tensor's: the same cut, not its key)
    "bool": lambda m: [True, 2],
    "float": lambda m: [1.0, 2],
}


def _split_by(m: Any, sections: list) -> Any:
    x = m.arange(6.0, dtype=m.float64).reshape(2, 3)
    try:
        pieces = x.split(sections, 1)
    except TypeError:
        return "TypeError"
    pieces[1].mul_(10)
    return [p.tolist() for p in pieces], x.tolist()


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("sections", list(SECTIONS))
def test_split_sizes_taken_as_torch_takes_them(spec: str, sections: str) -> None:
    """A 0-d integer tensor or NumPy integer among the sizes is that int (before: a tensor's
    cut gave an empty second piece); a bool or a float is a TypeError, as PyTorch's."""
    want = _split_by(torch, SECTIONS[sections](torch))
    with entered(spec):
        assert _split_by(tw, SECTIONS[sections](tw)) == want


@pytest.mark.parametrize("spec", FAST)
def test_refused_sizes_leave_no_cut_behind(spec: str) -> None:
    """Float sizes equal to ints (refused) and then those ints: the ints' own cut."""
    want = [_split_by(torch, s) for s in ([1.0, 2.0], [1, 2], [np.int64(1), 2])]
    with entered(spec):
        assert [_split_by(tw, s) for s in ([1.0, 2.0], [1, 2], [np.int64(1), 2])] == want
