"""Index-based layers: ``embedding``, ``embedding_bag`` and ``one_hot``.

``embedding`` is ``index_select`` on the weight rows, so its gradient is ``index_add`` of
the output gradient; rows read at ``padding_idx`` pass a detached copy, so that row gets
no gradient. The indices are checked once, up front, with PyTorch's error classes.

``embedding_bag`` is a composite a backend may fuse, except with ``scale_grad_by_freq``
(PyTorch 2.13's CPU kernel scales by the wrong count, pytorch/pytorch#190063).

``sparse=True`` gives the same gradient values as PyTorch's sparse gradient, stored dense
(the core has no sparse layout) in a :class:`SparseGradient`, which reports ``is_sparse`` as
PyTorch's does (``optim.SparseAdam`` refuses any other): rows not looked up are zero, which
``optim.SparseAdam`` treats as absent. ``scale_grad_by_freq`` divides each row's gradient by
how often its index occurs in the batch, as PyTorch does. An ``embedding``'s gradient also
carries its entries (one per lookup, :func:`keep_entries`), which the autograd engine sums
as PyTorch's does; its ``_indices()``/``_values()``/``_nnz()`` and print show them.
"""

from __future__ import annotations

import numbers
import weakref
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.autograd.node import saves_integer_input
from tensorweaver.contract.dtypes import DType
from tensorweaver.layout import sparse_coo
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.bounds import check_index, checked_by_kernel, extrema, inside
from tensorweaver.ops.composite import Resaved, fused_or_reference
from tensorweaver.tensor import Tensor


class SparseGradient(Tensor):
    """A weight's gradient that PyTorch holds in its sparse layout (a ``sparse=True`` lookup's),
    stored dense. The autograd engine keeps the class while every gradient summed into a
    ``.grad`` is one (a dense one added makes the sum dense, as in PyTorch). The methods below
    keep it where PyTorch's result of a sparse tensor is sparse: copies (``.data`` and
    ``copy.deepcopy`` too), casts, negation, products, division by a number, sums of two
    sparse ones and the zero-preserving ``abs``, ``sign``, ``sqrt``, ``square`` and ``pow``
    (operators and methods; the ``tw.`` functions give dense results); they raise PyTorch's
    RuntimeError where it refuses a sparse operand (division by a dense tensor, an in-place
    sum of a dense one).

    Uncoalesced, as PyTorch's gradient of a lookup of several indices (one entry per index);
    :meth:`coalesce` gives a :class:`CoalescedSparseGradient` (as a lookup of one index does)."""

    __slots__ = ()
    is_sparse = True
    layout = sparse_coo

    def is_coalesced(self) -> bool:
        return False

    def coalesce(self) -> SparseGradient:
        """A coalesced copy (the values are already summed per row in the dense storage):
        an entry for each row looked up, as PyTorch's (a zero sum kept), where the lookups
        are known."""
        out = _marked(Tensor.clone(self), CoalescedSparseGradient)
        entries = sparse_entries(self)
        if entries is not None:
            rows = tw.unique(entries[0])  # (sorted, as PyTorch's coalesced indices)
            keep_entries(out, rows, Tensor.index_select(out, 0, rows))
        return out

    def to_dense(self, dtype: DType | None = None, *, masked_grad: Any = None) -> Tensor:
        """A dense copy: writes into it leave this gradient as it is."""
        if dtype is not None:  # (PyTorch's sparse_to_dense takes none, even its own dtype)
            raise RuntimeError(
                "to_dense: the dtype argument is not supported by sparse_to_dense; call "
                "to_dense() and cast the result with .to(dtype)"
            )
        return Tensor.clone(self)

    def sparse_dim(self) -> int:
        """1: the entries are rows (of an embedding's weight)."""
        return 1

    def dense_dim(self) -> int:
        """The dimensions of each entry's values."""
        return self.dim() - 1

    def _rows(self) -> Tensor:
        """The rows that hold entries, as a 1-d int64 tensor: the nonzero rows of the dense
        storage (NaN ones too), which are PyTorch's entries once coalesced."""
        host = self.backend.to_host(self.native)
        rows = np.flatnonzero(host.reshape(host.shape[0], -1).any(axis=1))
        return tw.tensor(rows, dtype=tw.int64, device=self.device)

    def _indices(self) -> Tensor:
        """The entries' rows, ``(1, nnz)`` int64: one per lookup, as PyTorch's, where the
        gradient carries its lookups (:func:`keep_entries`: an embedding's, and the engine's
        sums of such). Otherwise (an ``embedding_bag``'s, or the gradient changed in place
        since) those of its coalesced form, the nonzero rows of the dense storage."""
        entries = sparse_entries(self)
        return (self._rows() if entries is None else entries[0]).unsqueeze(0)

    def _values(self) -> Tensor:
        """The entries' values (the rows of :meth:`_indices`), ``(nnz, *dense dims)``."""
        entries = sparse_entries(self)
        if entries is not None:
            return entries[1]
        return Tensor.index_select(self, 0, self._rows())

    def _nnz(self) -> int:
        """How many entries (rows of :meth:`_indices`) there are."""
        entries = sparse_entries(self)
        return int((self._rows() if entries is None else entries[0]).numel())

    def indices(self) -> Tensor:
        """:meth:`_indices` of a coalesced gradient; PyTorch refuses an uncoalesced one."""
        _refuse_uncoalesced(self, "indices")
        return self._indices()

    def values(self) -> Tensor:
        """:meth:`_values` of a coalesced gradient; PyTorch refuses an uncoalesced one."""
        _refuse_uncoalesced(self, "values")
        return self._values()

    def __repr__(self) -> str:
        return _sparse_repr(self)

    def _alias(self) -> Tensor:
        out = _marked(Tensor.data.fget(self), type(self))
        carry_entries(out, self)
        return out

    data = property(_alias, Tensor.data.fset, doc="A detached alias, sparse as PyTorch's.")

    def __deepcopy__(self, memo: dict) -> Tensor:
        out = _marked(Tensor.__deepcopy__(self, memo), type(self))
        entries = sparse_entries(self)
        if entries is not None:
            keep_entries(out, entries[0].clone(), entries[1].clone(), True)
        return out


class CoalescedSparseGradient(SparseGradient):
    """A :class:`SparseGradient` after ``coalesce()``, which PyTorch reports coalesced."""

    __slots__ = ()

    def is_coalesced(self) -> bool:
        return True

    def coalesce(self) -> SparseGradient:
        return self  # (as PyTorch's coalesce() of a coalesced tensor)


#: id(gradient) -> (a weak reference to it, its _version then, indices, values): the entries
#: (one per lookup) of a sparse gradient, which its dense storage cannot tell apart
_ENTRIES: dict[int, tuple] = {}


def keep_entries(
    t: Tensor, indices: Tensor, values: Tensor, contiguous: bool | None = None
) -> None:
    """Record ``indices`` (1-d int64) and ``values`` (a row each) as the entries of the
    sparse gradient ``t`` while ``t`` stays as it is now (an in-place change drops them);
    ``contiguous``: whether PyTorch's values are (by default, whether ``values`` are)."""
    key = id(t)
    ref = weakref.ref(t, lambda _, key=key: _ENTRIES.pop(key, None))
    if contiguous is None:
        contiguous = values.is_contiguous()
    _ENTRIES[key] = (ref, t._version, indices, values, contiguous)


def sparse_entries(t: Tensor) -> tuple[Tensor, Tensor, bool] | None:
    """The ``(indices, values, contiguous)`` kept for ``t`` (:func:`keep_entries`), or
    None."""
    kept = _ENTRIES.get(id(t)) if _ENTRIES else None
    if kept is None or kept[0]() is not t or kept[1] != t._version:
        return None
    return kept[2:]


def carry_entries(out: Tensor, *parts: Any, stored: bool = False) -> None:
    """Give ``out``, the sum of the sparse gradients ``parts`` (each a tensor, or the
    ``(indices, values)`` read from one before an in-place sum), their entries summed as
    PyTorch's engine sums sparse gradients, left to right (:func:`_summed_entries`); none
    where a part has none. ``stored``: ``out`` is a new ``.grad``, whose values PyTorch's
    AccumulateGrad makes contiguous (a clone where they are not)."""
    found = None
    for part in parts:
        entries = sparse_entries(part) if isinstance(part, Tensor) else part
        if entries is None:
            return
        found = entries if found is None else _summed_entries(found, entries)
    if found is not None:
        keep_entries(out, found[0], found[1], True if stored else found[2])


def _summed_entries(first: tuple, second: tuple) -> tuple[Tensor, Tensor, bool]:
    """The entries of the sum of two uncoalesced sparse gradients as PyTorch's CPU kernel
    makes them: where both hold contiguous values (add_out_sparse_contiguous), one walk
    through both lists of entries as if each were sorted, an entry of each with the same
    index at the same time summed into one, a smaller index taken first (so repeated
    indices stay, and the order is the walk's); else (an embedding's values of an expanded
    output gradient, ``y.sum()``'s) the entries of both, one after the other."""
    ti, tv, t_contiguous = first
    si, sv, s_contiguous = second
    if not (t_contiguous and s_contiguous):
        return tw.cat([ti, si]), tw.cat([tv, sv.to(tv.dtype)]), True
    a, b = ti.tolist(), si.tolist()
    t_at: list[int] = []  # per entry of the sum: the entry of first (len(a): none) ...
    s_at: list[int] = []  # ... and of second (len(b): none) summed into it
    i = j = 0
    while i < len(a) or j < len(b):
        cmp = -1 if i >= len(a) else 1 if j >= len(b) else (a[i] < b[j]) - (a[i] > b[j])
        t_at.append(i if cmp >= 0 else len(a))
        s_at.append(j if cmp <= 0 else len(b))
        i, j = i + (cmp >= 0), j + (cmp <= 0)
    indices = [a[k] if k < len(a) else b[m] for k, m in zip(t_at, s_at)]

    def placed(values: Tensor, at: list[int]) -> Tensor:
        none = tw.zeros((1, *values.shape[1:]), dtype=values.dtype, device=values.device)
        rows = tw.tensor(at, dtype=tw.int64, device=values.device)
        return Tensor.index_select(tw.cat([values, none]), 0, rows)

    values = placed(tv, t_at) + placed(sv.to(tv.dtype), s_at)
    return tw.tensor(indices, dtype=tw.int64, device=ti.device), values, True


def _refuse_uncoalesced(t: SparseGradient, part: str) -> None:
    if not t.is_coalesced():
        raise RuntimeError(
            f"Cannot get {part} on an uncoalesced tensor, please call .coalesce() first "
            f"(or read ._{part}(), the entries as they are)"
        )


def _sparse_repr(t: SparseGradient) -> str:
    """``repr(t)`` in PyTorch's sparse COO form: its indices and values, then its device
    (as a dense tensor's), size, nnz, dtype (where not a default one), layout and graph
    suffixes, the first of them on a line of its own."""
    from tensorweaver import printing
    from tensorweaver.promotion import default_complex_dtype, get_default_dtype
    from tensorweaver.selection import current_backend

    indent = len("tensor(")
    text = "tensor("
    for name, part in (("indices", t._indices()), ("values", t._values())):
        inner = f"{name}=tensor("
        body = _body(part, indent + len(inner))
        if part.numel() == 0:
            body += f", size={tuple(part.shape)}"
        text += ("" if name == "indices" else ",\n" + " " * indent) + inner + body + ")"
    suffixes = []
    if t.backend.device.kind != "cpu" or t.backend is not current_backend():
        suffixes.append(f"device='{t.device}'")
    suffixes += [f"size={tuple(t.shape)}", f"nnz={t._nnz()}"]
    if t.dtype not in (get_default_dtype(), default_complex_dtype(), tw.int64, tw.bool):
        suffixes.append(f"dtype={t.dtype}")
    suffixes.append(f"layout={t.layout}")
    if t._node is not None:
        suffixes.append(f"grad_fn=<{t._node.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    text += ",\n" + " " * indent + suffixes[0]  # (PyTorch starts a sparse one's on a new line)
    return printing._with_suffixes(text, suffixes[1:], indent)


def _body(part: Tensor, indent: int) -> str:
    """The elements of the dense ``part`` as a print of it at ``indent`` lays them out."""
    from tensorweaver import printing

    if part.numel() == 0:
        return "[]"
    host = part.backend.to_host(part.native)
    summarise = host.size > printing.OPTIONS.threshold
    shown = printing._summarised(host) if summarise else host
    fmt: Any = (
        printing._ComplexFormatter(shown)
        if part.dtype.is_complex
        else printing._Formatter(shown, part.dtype.is_floating_point)
    )
    return printing._nested(host, indent, summarise, fmt)


def _marked(out: Tensor, kind: type) -> Tensor:
    """``out``, a new result of a sparse gradient, made a ``kind`` (a class of the same slots:
    its graph and memory stay as they are)."""
    out.__class__ = kind
    return out


def sparse_gradient(t: Tensor, coalesced: bool) -> Tensor:
    """``t``, a plain tensor made anew (``tw.load``'s), marked a sparse gradient."""
    return _marked(t, CoalescedSparseGradient if coalesced else SparseGradient)


def _keeping_sparse(name: str, kept: Callable[[Tensor, Any], type | None]) -> Callable:
    """Tensor's method ``name``, its result of a sparse gradient marked sparse where PyTorch's
    is sparse: ``kept(self, other)`` (the first operand after ``self``) names the result's
    class, or None for a dense result, or raises where PyTorch refuses the operands (before
    anything is computed or written)."""
    method = getattr(Tensor, name)

    def keeping(self: SparseGradient, *args: Any, **kwargs: Any) -> Tensor:
        kind = kept(self, args[0] if args else kwargs.get("other", kwargs.get("exponent")))
        out = method(self, *args, **kwargs)
        return out if out is self or kind is None else _marked(out, kind)

    keeping.__name__, keeping.__qualname__ = name, f"SparseGradient.{name}"
    keeping.__doc__ = method.__doc__
    return keeping


def _own_kind(self: Tensor, other: Any) -> type:
    return type(self)


def _coalesced(self: Tensor, other: Any) -> type:
    """A zero-preserving elementwise op: PyTorch coalesces the entries first."""
    return CoalescedSparseGradient


def _positive_power(self: Tensor, exponent: Any) -> type | None:
    """``pow``: sparse for a number exponent > 0, which keeps zeros zero; PyTorch refuses 0.
    (A negative one is dense here: the dense storage's absent rows would be inf, where
    PyTorch's stay absent.)"""
    if not isinstance(exponent, numbers.Real):  # (a tensor exponent: PyTorch has no kernel)
        return None
    if exponent == 0:
        raise RuntimeError(
            "pow: cannot raise to zeroth power on sparse tensor; it would make the result "
            "tensor dense (use tw.ones_like(grad.to_dense()))"
        )
    return CoalescedSparseGradient if exponent > 0 else None


def _by_number(self: Tensor, other: Any) -> type:
    """Division: sparse by a number or a 0-d dense tensor; PyTorch refuses other divisors."""
    if isinstance(other, Tensor) and (other.shape or other.is_sparse):
        raise RuntimeError(
            "Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
            f"{list(other.shape)} for divisor): divide grad.to_dense() instead"
        )
    return type(self)


def _sparse_addend(self: Tensor, other: Any) -> type:
    """An in-place sum into a sparse tensor: of a sparse one (PyTorch refuses a dense one)."""
    if not (isinstance(other, Tensor) and other.is_sparse):
        raise RuntimeError(
            f"add(sparse, dense) is not supported (got a {type(other).__name__} added into a "
            "sparse gradient in place). Use add(dense, sparse) instead: "
            "dense.add_(grad) or grad.to_dense().add_(...)"
        )
    return type(self)


def _of_two_sparse(self: Tensor, other: Any) -> type | None:
    """A sum of two sparse tensors is sparse, coalesced where both are (PyTorch merges them);
    with a dense one it is dense."""
    if not isinstance(other, SparseGradient):
        return None
    return type(self) if type(other) is type(self) else SparseGradient


for _name, _kept in (
    *((n, _own_kind) for n in ("clone", "detach", "to", "float", "double", "half", "bfloat16")),
    *((n, _own_kind) for n in ("neg", "negative", "__neg__", "mul", "multiply", "__mul__")),
    ("__rmul__", _own_kind),  # (tried before a dense tensor's __mul__: the product is sparse)
    *((n, _by_number) for n in ("div", "divide", "true_divide", "__truediv__")),
    *((n, _by_number) for n in ("div_", "__itruediv__")),
    *((n, _coalesced) for n in ("abs", "__abs__", "sign", "sqrt", "square")),
    *((n, _positive_power) for n in ("pow", "__pow__")),
    *((n, _sparse_addend) for n in ("add_", "sub_", "__iadd__", "__isub__")),
    *((n, _of_two_sparse) for n in ("add", "__add__", "sub", "subtract", "__sub__")),
):
    setattr(SparseGradient, _name, _keeping_sparse(_name, _kept))


class _SparseWeightGradient(tw.autograd.Function):
    """The weight unchanged; its gradient a :class:`SparseGradient`, coalesced where PyTorch's
    holds at most one entry (one per index looked up, ``padding_idx``'s left out)."""

    @staticmethod
    def forward(
        ctx, weight: Tensor, indices: Tensor, padding_idx: int | None, rows: list | None
    ) -> Tensor:
        ctx.indices, ctx.padding_idx, ctx.rows = indices, padding_idx, rows
        return weight.detach()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        indices, padding_idx = ctx.indices, ctx.padding_idx
        entries = indices.numel()
        if entries > 1 and padding_idx is not None:  # (a count on the host: rare, in backward)
            entries = int((indices != padding_idx).sum())
        kind = CoalescedSparseGradient if entries <= 1 else SparseGradient
        out = kind(grad.native, grad.backend, grad.dtype)
        if ctx.rows:  # each lookup's rows of the output gradient (_LookupRows): its entries
            values = ctx.rows.pop()
            if padding_idx is not None:  # (PyTorch's sparse backward leaves those out)
                kept = indices != padding_idx
                indices, values = indices[kept], values[kept]
            keep_entries(out, indices, values)
        return out, None, None, None


class _LookupRows(tw.autograd.Function):
    """Identity forward on a ``sparse=True`` lookup's rows; its backward keeps their gradient
    (one row per lookup, before the weight's backward runs) for the weight's sparse gradient,
    whose entries they are."""

    @staticmethod
    def forward(ctx, rows: Tensor, kept: list) -> Tensor:
        ctx.kept = kept
        return rows

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        ctx.kept.append(grad.detach())
        return grad, None


def _sparse_gradient(
    weight: Tensor,
    sparse: bool,
    indices: Tensor,
    padding_idx: int | None,
    rows: list | None = None,
) -> Tensor:
    """``weight``, through :class:`_SparseWeightGradient` for a ``sparse=True`` lookup of the
    flat ``indices`` that autograd records (``rows``: where :class:`_LookupRows` leaves each
    lookup's gradient)."""
    if sparse and weight.requires_grad and tw.is_grad_enabled():
        return _SparseWeightGradient.apply(weight, indices, padding_idx, rows)
    return weight


class PaddingIndexError(AssertionError, ValueError):
    """``padding_idx`` outside ``[-num_embeddings, num_embeddings)``: an AssertionError, as
    PyTorch raises, and a ValueError, as tw raised before."""


def check_padding_idx(padding_idx: int, size: int, fn: str) -> int:
    """``padding_idx`` as a row of ``size`` rows (a negative one counts from the end)."""
    if not -size <= padding_idx < size:
        raise PaddingIndexError(
            f"{fn}: padding_idx ({padding_idx}) must be within [-{size}, {size}) for "
            f"{size} embeddings"
        )
    return padding_idx % size


def _flat_indices(input: Tensor) -> Tensor:
    """``embedding``'s indices as a 1-d int64 tensor (not Tensor.reshape: these indices are
    the op's own, never written through, so they need no view bookkeeping; nor a reshape
    op: an integer tensor has no graph, and its checks cost ~1 us a lookup)."""
    if len(input._shape) != 1:
        backend = input.backend
        native = backend.reshape(input.native, (input.numel(),))
        input = Tensor(native, backend, input.dtype)
    return input.long()


def _checked_rows(input: Tensor, size: int) -> Tensor:
    """The rows ``embedding`` looks ``input`` up in, made again at backward, where a write
    through ``input.data`` must reach them, as PyTorch's node reads the indices it saved."""
    indices = _flat_indices(input)
    check_index("embedding()", indices, size, 0, error=IndexError)
    return indices


def _renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale, in place, the rows of ``weight`` at ``indices`` whose norm exceeds ``max_norm``
    down to ``max_norm``, as PyTorch does."""
    with tw.no_grad():
        rows = weight.index_select(0, indices)
        norms = rows.norm(p=norm_type, dim=1, keepdim=True)
        scale = tw.where(norms > max_norm, max_norm / (norms + 1e-7), tw.ones_like(norms))
        weight[indices] = rows * scale


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """The rows of ``(num_embeddings, dim)`` ``weight`` at the integer ``input``, shaped
    ``(*input.shape, dim)``."""
    if weight.dim() != 2:
        raise RuntimeError(
            f"embedding: weight must be (num_embeddings, embedding_dim), got {tuple(weight.shape)}"
        )
    size = weight.shape[0]
    if input.dtype not in (tw.int64, tw.int32):
        raise RuntimeError(
            f"embedding: expected int64 or int32 indices, got {input.dtype.name}; use .long()"
        )
    indices = _flat_indices(input)
    if size == 0 and indices.numel() and max_norm is None:
        # (PyTorch's index_select refuses a weight of no rows before any range check; with
        # max_norm, its renorm indexes first: the IndexError below)
        raise RuntimeError(
            "embedding(): index_select(): self indexing axis dim should be positive: the "
            f"weight {tuple(weight.shape)} has no rows to look {indices.numel()} indices up in"
        )
    if (
        max_norm is not None  # (its renorm reads the rows first)
        or sparse
        or input.backend is not weight.backend
        or not checked_by_kernel(weight.backend, "embedding")
    ):
        check_index("embedding()", indices, size, 0, error=IndexError)  # PyTorch's class
    if max_norm is not None:
        _renorm_(weight, indices, max_norm, norm_type)
    if padding_idx is not None:
        padding_idx = check_padding_idx(padding_idx, size, "embedding")
    looked_up: list | None = [] if sparse else None
    table = _sparse_gradient(weight, sparse, indices, padding_idx, looked_up)
    rows = fused_or_reference("embedding", embedding_reference, (table, indices), padding_idx)
    node = rows._node
    if node is not None:  # (the fused kernel's saved values or the reference's take node)
        remade = ix.Remade(lambda i: _checked_rows(i, size), [input])
        if node.op == "fused":
            name, saved, reference, static, slots = node.saved
            node.saved = (name, Resaved(saved, 1, remade), reference, static, slots)
        else:
            taken = rows
            if node.op == "where":  # (padding_idx: the rows kept, then the take before)
                ix.remade_at_backward(rows, lambda i: _kept(remade.make(i), padding_idx), [input])
                taken = node.inputs[1]
            if indices is not input:
                ix.remade_at_backward(taken, remade.make, remade.given)
        if scale_grad_by_freq:
            if sparse:  # PyTorch raises this when the backward runs; here before it is recorded
                raise RuntimeError(
                    "embedding_backward: scale_grad_by_freq not supported with sparse gradients"
                )
            rows = _FrequencyScale.apply(rows, lambda: remade.index(indices), size)
    if table is not weight:  # (sparse, recorded: each lookup's gradient is an entry)
        rows = _LookupRows.apply(rows, looked_up)
    # (no view node: rows is new; the shape holds rows' elements: no check)
    out = mv._reshape(rows, (*input._shape, weight._shape[1]), "embedding")
    # The reshape's node is PyTorch's one node, whose one edge is the weight's own
    out = labelled(out, "EmbeddingBackward0", weight)
    return saves_integer_input(out, input)  # (PyTorch's node saves the indices)


class _GradientScale(tw.autograd.Function):
    """Identity forward; the gradient multiplied by ``scale`` (not differentiated)."""

    @staticmethod
    def forward(ctx, rows: Tensor, scale: Tensor) -> Tensor:
        ctx.save_for_backward(scale)
        return rows

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        (scale,) = ctx.saved_tensors
        return grad * scale, None


class _FrequencyScale(tw.autograd.Function):
    """Identity forward; the gradient of each row divided by how often its index occurs among
    ``indices()`` (the indices as they are at backward, as PyTorch's node reads its saved
    ones) in ``range(size)``."""

    @staticmethod
    def forward(ctx, rows: Tensor, indices: Callable[[], Tensor], size: int) -> Tensor:
        ctx.indices, ctx.size = indices, size
        return rows

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        now = ctx.indices()
        counts = tw.bincount(now, minlength=ctx.size).index_select(0, now)
        scaled = grad / counts.to(grad.dtype).unsqueeze(1)
        if tw.is_grad_enabled():  # create_graph: PyTorch's double backward scales nothing
            return grad + (scaled - grad).detach(), None, None
        return scaled, None, None


def embedding_reference(weight: Tensor, indices: Tensor, padding_idx: int | None) -> Tensor:
    """The decomposition of the ``embedding`` composite: gathered rows, the padding row's
    gradient cut."""
    rows = ix.take_along(weight, 0, indices)
    if padding_idx is None:
        return rows
    return tw.where(_kept(indices, padding_idx), rows, rows.detach())


def _kept(indices: Tensor, padding_idx: int) -> Tensor:
    """Which of ``embedding``'s rows carry a gradient: those not at the padding row."""
    return (indices != padding_idx).unsqueeze(1)


def _check_offsets(input: Tensor, offsets: Tensor | None) -> np.ndarray | None:
    """The bag starts of a 1-D ``input`` (on the host), checked as PyTorch checks them; None
    for a 2-D input (one bag per row)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "embedding_bag: if input is 2-D, then offsets has to be None, as input is "
                "treated as a mini-batch of fixed-length bags"
            )
        return None
    if offsets is None or offsets.dim() != 1:
        raise ValueError(
            "embedding_bag: a 1-D input needs 1-D offsets (where each bag starts), got "
            f"{None if offsets is None else tuple(offsets.shape)}"
        )
    if offsets.dtype.is_floating_point or offsets.dtype is tw.bool:
        raise RuntimeError(f"embedding_bag: offsets must be integers, got {offsets.dtype.name}")
    size = input.shape[0]
    starts = np.asarray(offsets.tolist(), dtype=np.int64)
    if starts.size and starts[0] != 0:
        raise RuntimeError(
            f"embedding_bag: offsets[0] has to be 0 (the first bag starts at the first index), "
            f"got {starts[0]}"
        )
    if starts.size and starts[-1] > size:
        raise RuntimeError(
            f"embedding_bag: offsets[-1] can not be greater than input's length {size}, got "
            f"{starts[-1]}"
        )
    if np.any(np.diff(starts) < 0):
        raise RuntimeError(f"embedding_bag: offsets must not decrease, got {starts.tolist()}")
    return starts


def _bags(
    input: Tensor, offsets: Tensor | None, include_last_offset: bool
) -> tuple[Tensor, Tensor, np.ndarray | None]:
    """The bags as a ``(B, W)`` index matrix (W the longest bag), which of its entries are
    real, and (1-D input) the positions in ``input`` they came from."""
    if offsets is None:
        return input, tw.ones(tuple(input.shape), dtype=tw.bool, device=input.device), None
    size = input.shape[0]
    starts = np.asarray(offsets.tolist(), dtype=np.int64)
    if include_last_offset:
        # As PyTorch: the last offset starts no bag, and the last bag runs to the end.
        starts = starts[:-1]
    ends = np.append(starts[1:], size)
    width = int(max(ends - starts, default=0))
    positions = starts[:, None] + np.arange(width)
    real = positions < ends[:, None]
    positions = np.where(real, positions, 0)
    real = tw.tensor(real, device=input.device)
    if not size:
        return tw.zeros(tuple(positions.shape), dtype=input.dtype, device=input.device), real, None
    return input[tw.tensor(positions, device=input.device)], real, positions


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the ``weight`` rows in each bag, shaped ``(B, dim)``.

    A 2-D ``(B, W)`` input holds one bag per row; a 1-D input is cut into bags where
    ``offsets`` start them (``include_last_offset``: the last offset starts no bag).
    Entries equal to ``padding_idx`` are left out of their bag; empty bags give zeros.
    ``per_sample_weights`` (``mode='sum'`` only) scales each row before the sum."""
    if weight.dim() != 2:
        raise ValueError(
            f"embedding_bag: weight must be (num_embeddings, embedding_dim), got "
            f"{tuple(weight.shape)}"
        )
    if input.dtype not in (tw.int64, tw.int32):
        raise RuntimeError(
            f"embedding_bag: expected int64 or int32 indices, got {input.dtype.name}; use .long()"
        )
    if input.dim() not in (1, 2):
        raise ValueError(f"embedding_bag: input has to be 1-D or 2-D, got {input.dim()}-D")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and (scale_grad_by_freq or sparse):  # (PyTorch's functional refuses both)
        what = "scaling the gradient by the frequency" if scale_grad_by_freq else "sparse weights"
        raise ValueError(f"embedding_bag: max mode does not support {what}; use sum or mean")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"embedding_bag: per_sample_weights is only supported for mode='sum' (got "
                f"mode={mode!r})"
            )
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: per_sample_weights of shape {tuple(per_sample_weights.shape)} "
                f"must have the input's shape {tuple(input.shape)}"
            )
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(
                f"embedding_bag: per_sample_weights ({per_sample_weights.dtype.name}) must have "
                f"the weight's dtype ({weight.dtype.name}); convert one with .to(...)"
            )
    count = weight.shape[0]
    if padding_idx is not None:
        if not -count <= padding_idx < count:
            raise RuntimeError(
                f"embedding_bag: padding_idx must be within the number of embeddings, "
                f"-{count} through {count - 1}, but got {padding_idx}"
            )
        padding_idx %= count
    flat = input.reshape(-1).long()
    check_index("embedding_bag()", flat, count, 0)
    if max_norm is not None:
        _renorm_(weight, flat, max_norm, norm_type)
    starts = _check_offsets(input, offsets)
    index = input.long()
    weight = _sparse_gradient(weight, sparse, flat, padding_idx)
    tensors = (weight, index, None if starts is None else offsets.long(), per_sample_weights)
    static = (mode, padding_idx, include_last_offset)
    if scale_grad_by_freq and weight.requires_grad:
        frequency = tw.bincount(flat, minlength=count)
        out = _bag_reduce(*tensors, *static, frequency)
    elif starts is not None and len(starts) == include_last_offset:
        # No bag at all: torch 2.13's max kernel crashes the process on it (a segfault), so no
        # backend's kernel is asked; the decomposition gives the empty (0, dim) result.
        out = embedding_bag_reference(*tensors, *static)
    else:
        out = fused_or_reference("embedding_bag", embedding_bag_reference, tensors, *static)
    # PyTorch's node saves these: changed in place before backward, it is refused
    saved = [t for t in (input, offsets, per_sample_weights) if t is not None]
    return saves_integer_input(out, *saved)


def embedding_bag_reference(
    weight: Tensor,
    input: Tensor,
    offsets: Tensor | None,
    per_sample_weights: Tensor | None,
    mode: str,
    padding_idx: int | None,
    include_last_offset: bool,
) -> Tensor:
    """The decomposition of the ``embedding_bag`` composite: the bags' rows gathered into a
    padded ``(B, W, dim)`` block, then masked and reduced."""
    static = (mode, padding_idx, include_last_offset)
    return _bag_reduce(weight, input, offsets, per_sample_weights, *static, None)


def _bag_reduce(
    weight: Tensor,
    input: Tensor,
    offsets: Tensor | None,
    per_sample_weights: Tensor | None,
    mode: str,
    padding_idx: int | None,
    include_last_offset: bool,
    frequency: Tensor | None,
) -> Tensor:
    """The bags reduced; ``frequency`` (per row of ``weight``, or None) divides each looked
    up row's gradient (``scale_grad_by_freq``)."""
    index, real, positions = _bags(input, offsets, include_last_offset)
    if padding_idx is not None:
        real = real & (index != padding_idx)
    rows = ix.take_along(weight, 0, index.reshape(-1))
    if frequency is not None:
        scale = 1.0 / frequency.index_select(0, index.reshape(-1)).clamp(min=1).to(rows.dtype)
        rows = _GradientScale.apply(rows, scale.unsqueeze(1))
    rows = mv.reshape(rows, (*index.shape, weight.shape[1]))
    if per_sample_weights is not None:
        scale = per_sample_weights
        if positions is not None:
            scale = scale[tw.tensor(positions, device=input.device)]
        rows = rows * scale.unsqueeze(-1)
    sizes = real.sum(1, keepdim=True)
    if mode == "max" and index.shape[1]:  # (all bags empty: the zeros below)
        best = rows.masked_fill(~real.unsqueeze(-1), float("-inf")).max(1).values
        return best.masked_fill(sizes == 0, 0)
    total = rows.masked_fill(~real.unsqueeze(-1), 0).sum(1)
    return total if mode == "sum" else total / sizes.clamp(min=1).to(total.dtype)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape ``(*tensor.shape, num_classes)`` with a 1 at each index;
    ``num_classes=-1`` means one more than the largest index."""
    if tensor.dtype is not tw.int64:
        raise RuntimeError(
            f"one_hot: expected an int64 index tensor, got {tensor.dtype.name}; use .long()"
        )
    # With num_classes given, the outcome holds for any values in [0, num_classes).
    bounds = extrema(tensor, inside(0, num_classes - 1) if num_classes > 0 else None)
    if bounds is None and num_classes <= 0:  # PyTorch refuses 0 too
        raise RuntimeError(
            "one_hot: cannot infer num_classes from an empty tensor; pass num_classes > 0"
        )
    if num_classes == -1:
        num_classes = bounds[1] + 1
    if bounds is not None and bounds[0] < 0:
        raise RuntimeError(f"one_hot: class values must be non-negative, got {bounds[0]}")
    if bounds is not None and bounds[1] >= num_classes:
        raise RuntimeError(
            f"one_hot: class values must be smaller than num_classes ({num_classes}), got "
            f"{bounds[1]}"
        )
    return (tensor.unsqueeze(-1) == tw.arange(num_classes, device=tensor.device)).long()
