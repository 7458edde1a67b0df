"""Review of the sixteenth session's strided fixes (``as_strided`` of a view reads through
it, ``ops/views.py``) and of Tensor methods' keyword names against PyTorch 2.13's.

``as_strided`` of a strided view that requires grad now sends the gradient to the view's own
elements only; that of a view whose array is a copy (a diagonal, ``.real``/``.imag``), which
the review found reading the wrong memory, reads its base's since the seventeenth session.
The keyword sweep compared each Tensor method's parameter names with torch's method
signatures: those listed in ``ops/methods.py``'s ``TORCH_METHOD_KEYWORDS`` took only
tensorweaver's own names (``x.addcdiv(tensor1=...)`` raised TypeError)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.ops.methods import TORCH_METHOD_KEYWORDS

WEIGHTS = [[1.0, 2.0], [3.0, 4.0]]


def _both(make) -> tuple:
    """``make(base, lib)`` on the same 4x6 float64 base in torch and tensorweaver, as NumPy
    arrays."""
    values = np.arange(24.0).reshape(4, 6)
    results = []
    for lib in (torch, tw):
        out = make(lib.tensor(values), lib)
        results.append([t.detach().numpy() for t in out])
    return results


def _assert_same(make) -> None:
    expected, got = _both(make)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


VIEWS = {
    "offset": lambda b: b[1:, 2:],
    "offset-stepped": lambda b: b[1:, 1::2],
    "view-of-view": lambda b: b[:, ::2][1:],
    "transposed-view-of-view": lambda b: b[1:][:, ::2].t(),
    "narrowed-transpose": lambda b: b.t()[2:],
    "column": lambda b: b[:, 1],
    "as_strided-of-as_strided": lambda b: b.as_strided((3, 3), (6, 2), 1),
    # views that hold a position more than once: each copy gets its share of the gradient
    # (before the review: as_strided read their base, so memory they do not hold got some,
    # and a leaf one lost the graph)
    "expanded": lambda b: b[0].expand(3, 6),
    "expanded-stepped": lambda b: b[0, ::2].expand(2, 3),
    "overlapping": lambda b: b.as_strided((3, 3), (1, 1), 1),
}
#: (size, stride, storage_offset) of the read: None is the view's own offset
READS = {
    "stepped": ((2, 2), (1, 2), None),
    "stepped-from-3": ((2, 2), (1, 2), 3),
    "overlapping": ((2, 2), (1, 1), None),
    "repeated-from-1": ((3, 2), (0, 1), 1),
}


@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("view", list(VIEWS))
def test_as_strided_of_a_view_matches_torch_values_and_gradients(
    backend: str, view: str, read: str
) -> None:
    # storage offsets, views of views, overlapping and repeated outputs (their gradients add
    # up as torch's), the base's gradient and a leaf view's own
    size, stride, offset = READS[read]

    def grads(base, lib):
        base.requires_grad_(True)
        x = VIEWS[view](base)
        out = x.as_strided(size, stride) if offset is None else x.as_strided(size, stride, offset)
        (
            out * lib.arange(1.0, 1 + out.numel(), dtype=out.dtype).reshape(out.shape)
        ).sum().backward()
        leaf = VIEWS[view](base.detach()).requires_grad_(True)
        again = lib.as_strided(leaf, size, stride, offset)
        (again * again).sum().backward()
        return out, base.grad, leaf.grad

    _assert_same(grads)


@pytest.mark.parametrize("expanded", [False, True], ids=["stepped", "expanded"])
def test_as_strided_of_a_view_twice_differentiated(backend: str, expanded: bool) -> None:
    # (differed before the read-through: the second derivative missed the view's square)
    def grads(base, lib):
        base.requires_grad_(True)
        square = base * base
        x = square[0].expand(3, 6) if expanded else square[1:, ::2]
        out = lib.as_strided(x, (2, 2), (1, 2))
        (first,) = lib.autograd.grad((out**2).sum(), base, create_graph=True)
        first.sum().backward()
        return first, base.grad

    _assert_same(grads)


def test_in_place_write_through_as_strided_of_a_view_reaches_its_base(backend: str) -> None:
    def written(base, lib):
        x = base[1:, ::2]
        out = lib.as_strided(x, (2, 2), (1, 2))
        version = base._version
        out.mul_(10)
        assert base._version > version and x._version == base._version
        base.add_(1)
        return base, out, x

    _assert_same(written)


def test_in_place_change_of_as_strided_of_a_view_sends_gradient_to_its_base(
    backend: str,
) -> None:
    # out reads memory positions 7..10 of b; x = b[1:, ::2] holds 7 and 9 only. torch's
    # gradient of a reaches all four (x10); ours reached 7 and 9 (8 and 10 got 0)
    def grads(base, lib):
        base.requires_grad_(True)
        b = base * 1
        out = lib.as_strided(b[1:, ::2], (2, 2), (1, 2))
        out.mul_(10)
        (b * lib.arange(24.0, dtype=b.dtype).reshape(4, 6)).sum().backward()
        return (base.grad,)

    _assert_same(grads)


@pytest.mark.parametrize("part", ["diagonal", "real", "imag"])
def test_as_strided_of_a_view_holding_a_copy_reads_the_bases_memory(
    backend: str, part: str
) -> None:
    # (read zeros for a diagonal, the wrong floats for .imag, before the seventeenth session:
    # ops/views.py's Memory took the view's copy as memory of its own)
    def read(base, lib):
        if part == "diagonal":
            x = base.diagonal()
        else:
            x = getattr(lib.complex(base, base * 10), part)
        return (lib.as_strided(x, (2, 2), (1, 2), 1),)

    _assert_same(read)


# -- Tensor methods' keywords: PyTorch's names ----------------------------------------------------


def _operands(lib, name: str) -> tuple:
    """``(self, positional arguments)`` for the method ``name`` on small float64 tensors."""
    m = lib.arange(1.0, 5.0, dtype=lib.float64).reshape(2, 2)
    v = lib.arange(1.0, 3.0, dtype=lib.float64)
    if name.startswith("bitwise"):
        return m.long(), (m.long(),)
    special = {
        "addcdiv": (m, (m, m)),
        "addcmul": (m, (m, m)),
        "addmm": (m, (m, m)),
        "addmv": (v, (m, v)),
        "baddbmm": (m[None], (m[None], m[None])),
        "broadcast_to": (v, ((3, 2),)),
        "where": (m, (m > 2, m * 0)),
        "swapaxes": (m, (0, 1)),
        "dot": (v, (v,)),
        "outer": (v, (v,)),
        "ger": (v, (v,)),
        "tensor_split": (v.repeat(2), (2,)),
        "hsplit": (m, (2,)),
        "vsplit": (m, (2,)),
        "dsplit": (m[None], (2,)),
    }
    return special.get(name, (m, (m,)))


def _call(lib, name: str, inplace: bool, by_keyword: bool) -> list:
    self, args = _operands(lib, name)
    leading = TORCH_METHOD_KEYWORDS[name]
    kwargs = {names[0]: a for names, a in zip(leading, args)} if by_keyword else {}
    method = getattr(self.clone(), name + "_" if inplace else name)
    out = method(**kwargs) if by_keyword else method(*args)
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


CALLS = [
    pytest.param(name, inplace, id=name + "_" * inplace)
    for name in TORCH_METHOD_KEYWORDS
    for inplace in (False, True)
    if hasattr(torch.Tensor, name + "_" * inplace)
]


@pytest.mark.parametrize(("name", "inplace"), CALLS)
def test_method_takes_pytorchs_keywords(backend: str, name: str, inplace: bool) -> None:
    expected = _call(torch, name, inplace, by_keyword=True)
    got = _call(tw, name, inplace, by_keyword=True)
    positional = _call(tw, name, inplace, by_keyword=False)
    for g, p, e in zip(got, positional, expected, strict=True):
        np.testing.assert_array_equal(g, e)
        np.testing.assert_array_equal(p, e)


@pytest.mark.parametrize(
    ("method", "keywords"),
    [
        ("tensor_split", {"indices": [1]}),
        ("tensor_split", {"sections": 2, "dim": 0}),
        ("hsplit", {"indices": [1]}),
        ("vsplit", {"indices": [1]}),
    ],
)
def test_split_methods_take_sections_or_indices(backend: str, method: str, keywords: dict) -> None:
    def pieces(lib):
        out = getattr(lib.arange(16.0).reshape(4, 4), method)(**keywords)
        return [t.numpy() for t in out]

    for g, e in zip(pieces(tw), pieces(torch), strict=True):
        np.testing.assert_array_equal(g, e)


def test_split_method_names_its_size_split_size(backend: str) -> None:
    # the method takes split_size and refuses the function's split_size_or_sections
    for lib in (torch, tw):
        x = lib.arange(6.0)
        assert [len(p) for p in x.split(split_size=[2, 4], dim=0)] == [2, 4]
        with pytest.raises(TypeError):
            x.split(split_size_or_sections=2)
    assert [len(p) for p in tw.split(tw.arange(6.0), split_size_or_sections=4)] == [4, 2]
