"""Matrix products: ``matmul`` (NumPy's rules for 1-d and batched operands) and ``einsum``."""

from __future__ import annotations

import math
import operator
import string
from typing import Any

from tensorweaver.amp import autocast_dtype, outside_autocast
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, SelfFirst, refuse_saved
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import views as vw
from tensorweaver.ops.apply import apply, broadcast_shapes, check_backends, labelled
from tensorweaver.ops.rank import max_ndim
from tensorweaver.promotion import promote_types
from tensorweaver.tensor import Tensor, watch_memory


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return _matmul(input, other, True)


def _matmul(input: Tensor, other: Tensor, fold: bool) -> Tensor:
    """``matmul``; with ``fold``, a batched product that records a graph is recorded as
    PyTorch's graph has it (:func:`_folded`), else as one node (``bmm``'s)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul: both operands must be tensors")
    low = autocast_dtype()
    if low is not None:
        input, other = autocast_operands(low, input, other)
    if (
        input.dtype.kind == "b" and other.dtype is input.dtype
    ):  # PyTorch's CPU kernels: no boolean product
        raise NotImplementedError(
            f"\"matmul\" not implemented for 'Bool' (shapes {list(input.shape)} and "
            f"{list(other.shape)}); convert with .int() or .float() first"
        )
    if (
        input.ndim >= 2
        and other.ndim >= 2
        and input.dtype is other.dtype
        and input.backend is other.backend
    ):
        if input.shape[-1] != other.shape[-2]:
            raise RuntimeError(_mismatch(input, other))
        if input.ndim > 2 or other.ndim > 2:
            try:
                broadcast_shapes("matmul", input.shape[:-2], other.shape[:-2])
            except RuntimeError:
                raise RuntimeError(
                    f"matmul: the batch dimensions of shapes {input.shape} and {other.shape} "
                    "cannot be broadcast together (all but the last two dimensions must match or "
                    "be 1)"
                ) from None
            if fold and (input.requires_grad or other.requires_grad) and is_grad_enabled():
                folded = _folded(input, other)
                if folded is not None:
                    return folded
        return matrix_product(input, other)
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {list(input.shape)} "
            f"and {list(other.shape)}; use * for scalars"
        )
    check_backends("matmul", (input, other))
    check_same_dtype("matmul", input, other)
    if input.ndim == 1 and other.ndim == 1:
        if input.shape != other.shape:
            raise RuntimeError(_mismatch(input, other))
        # an integer dot product keeps its dtype (wrapping), as PyTorch's, where sum widens
        kept = input.dtype if input.dtype.kind in "ui" else None
        if SAVED_TENSORS_HOOKS:  # (DotBackward0 packs self first: mul's node would not)
            with SelfFirst():
                product = rd.sum(ew.mul(input, other), dtype=kept)
        else:
            product = rd.sum(ew.mul(input, other), dtype=kept)
        return labelled(product, "DotBackward0", input, other)
    # PyTorch names a vector product after the kernel it runs: mv, or mm then squeeze for a
    # vector times a matrix; a batched one is folded into one product and viewed back
    if input.ndim == 1 and other.ndim > 2 and input.requires_grad and is_grad_enabled():
        # PyTorch's mv of the batch's transposed rows, viewed back
        made = matmul(_transposed_rows(other), input)
        return labelled(mv.reshape(made, (*other.shape[:-2], other.shape[-1])), _VIEWED, made)
    if input.ndim == 1:
        out = mv.squeeze(_saving(matmul(_as_matrix(input, 0, other), other), input, other), -2)
        label = "SqueezeBackward4" if other.ndim == 2 else "UnsafeViewBackward0"
    elif (
        other.ndim == 1
        and input.ndim > 2
        and (input.requires_grad or other.requires_grad)
        and is_grad_enabled()
    ):
        # PyTorch's mv of the input's rows, viewed back: a hook on that view sees the
        # gradient of mv's result
        made = matmul(_rows(input), other)
        return labelled(mv.reshape(made, input.shape[:-1]), _VIEWED, made)
    elif other.ndim == 1:
        column = _as_matrix(other, 1, input)
        if SAVED_TENSORS_HOOKS:  # (PyTorch's MvBackward0 packs self, then vec)
            with SelfFirst():
                product = matmul(input, column)
        else:
            product = matmul(input, column)
        out = mv.squeeze(_saving(product, other, input), -1)
        if input.ndim == 2:  # (its hook sees the matrix's and the vector's gradients)
            return labelled(out, "MvBackward0", input, other)
        label = "UnsafeViewBackward0"
    else:
        return matmul(input, other)
    return ew.named(out, label)


def _as_matrix(vector: Tensor, dim: int, matrix: Tensor) -> Tensor:
    """``vector`` unsqueezed at ``dim`` for its product with ``matrix``: a view of it where
    the product's node saves it (``matrix`` needs a gradient), so that a write through
    ``vector.data`` before backward reaches that node, as it reaches PyTorch's saved view."""
    if matrix.requires_grad and is_grad_enabled():
        return vw.unsqueeze(vector, dim)
    return mv.unsqueeze(vector, dim)


def _saving(product: Tensor, vector: Tensor, matrix: Tensor) -> Tensor:
    """``product`` of ``matrix`` and ``vector`` unsqueezed: where its node saves that
    unsqueezed vector (``matrix`` needs a gradient), a later in-place write into the vector
    or its base (``h[1] = ...`` after ``h[0] @ W``) makes backward raise, as PyTorch's saved
    unsqueezed view shares the vector's version counter (and refuses an inference vector)."""
    node = product._node
    if node is not None and matrix.requires_grad:
        if vector._inference:
            refuse_saved("matmul", vector)  # (as Node refuses a saved input)
        watch_memory(node, vector)
    return product


def matrix_product(input: Tensor, other: Tensor) -> Tensor:
    """The backend's product of two matrices or batches of them (of one dtype and backend,
    checked): one node."""
    native = input.backend.matmul(input.native, other.native)
    return apply("matmul", native, input.dtype, (input, other))


#: PyTorch's name of the view that gives a folded product its batch shape.
_VIEWED = "UnsafeViewBackward0"


def _folded(input: Tensor, other: Tensor) -> Tensor | None:
    """A batched product recorded as PyTorch's graph has it, so that a hook on each node sees
    that node's gradients: a batch of matrices times a matrix (or a batch of one) is one mm
    of the input's rows (MmBackward0 of ViewBackward0), a matrix that requires grad times a
    batch one mm of the batch's transposed rows, viewed, transposed back and copied
    (CloneBackward0 of TransposeBackward0), two batches of three dimensions and one size one
    bmm (BmmBackward0), the products viewed as the result (UnsafeViewBackward0); None for
    other batches (PyTorch expands and stacks both: nodes that cost more than the product's
    own recording)."""
    if other.ndim == 3 and input.ndim == 3:  # (PyTorch's matmul squeezes a batch of one)
        if other.shape[0] == 1 != input.shape[0]:
            other = vw.squeeze(other, 0)
        elif input.shape[0] == 1 != other.shape[0] and input.requires_grad:
            input = vw.squeeze(input, 0)
    if input.ndim == 2:
        if not input.requires_grad:  # (PyTorch folds only to spare the matrix's gradient)
            return None
        made = matrix_product(_transposed_rows(other), vw.t(input))
        out = mv.reshape(made, (*other.shape[:-2], other.shape[-1], input.shape[0]))
        return mv.contiguous(mv.transpose(labelled(out, _VIEWED, made), -2, -1))
    if other.ndim == 2:
        made = matrix_product(_rows(input), other)
        out = mv.reshape(made, (*input.shape[:-1], other.shape[-1]))
    elif input.ndim == other.ndim == 3 and input.shape[0] == other.shape[0]:
        # (the view keeps bmm's shape)
        made = labelled(matrix_product(input, other), "BmmBackward0", input, other)
        out = apply("reshape", made.native, made.dtype, (made,))
    else:
        return None
    return labelled(out, _VIEWED, made)


def _transposed_rows(batch: Tensor) -> Tensor:
    """The rows of ``batch``'s transposed matrices as one matrix (:func:`_rows`)."""
    return _rows(mv.transpose(batch, -2, -1))


def _rows(batch: Tensor) -> Tensor:
    """The rows of ``batch``'s matrices as one matrix, as PyTorch's reshape makes them: a
    view of ``batch`` where they are contiguous (so a write through ``batch.data`` before
    backward reaches the product's node, which reads the view's memory as PyTorch's), else a
    copy (UnsafeViewBackward0 of CloneBackward0)."""
    # (explicit sizes: -1 is ambiguous for an inner size of 0)
    shape = (math.prod(batch.shape[:-1]), batch.shape[-1])
    if batch.is_contiguous():
        return vw.reshape(batch, shape)
    copied = mv.contiguous(batch)
    return labelled(mv.reshape(copied, shape), _VIEWED, copied)


def check_same_dtype(name: str, a: Tensor, b: Tensor) -> None:
    """Operands of one dtype: PyTorch promotes elementwise ops, never matrix products (an
    error names the function the user called)."""
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{name}: expected both operands to have the same dtype, got {a.dtype.name} and "
            f"{b.dtype.name}; convert one with .to(other.dtype)"
        )


def autocast_operands(low: DType, *tensors: Tensor) -> tuple:
    """``tensors`` as PyTorch's autocast passes them to an op on its lower-precision list:
    every floating-point one in the autocast dtype ``low``, but float64 (left alone)."""
    return tuple(
        ew.cast(t, low)
        if isinstance(t, Tensor)
        and t.dtype.kind == "f"
        and t.dtype is not low
        and t.dtype.itemsize < 8
        else t
        for t in tensors
    )


def _mismatch(a: Tensor, b: Tensor) -> str:
    return (
        f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be multiplied "
        f"({a.shape[-1]} != {b.shape[-2] if b.ndim > 1 else b.shape[0]}); the last dimension "
        "of the first must equal the second-to-last of the second"
    )


def _tensors(op: str, first: Any, second: Any, name: str) -> None:
    """PyTorch's TypeError for an argument that is not a tensor (``mm(a, 2)``)."""
    for argument, value, position in (("input", first, 1), (name, second, 2)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{op}(): argument '{argument}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if not (isinstance(input, Tensor) and isinstance(mat2, Tensor)):
        _tensors("mm", input, mat2, "mat2")
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"mm: expects 2-d tensors, got shapes {list(input.shape)} and {list(mat2.shape)}"
        )
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if not (isinstance(input, Tensor) and isinstance(mat2, Tensor)):
        _tensors("bmm", input, mat2, "mat2")
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise RuntimeError(
            f"bmm: expects 3-d tensors with the same batch size, got shapes {list(input.shape)} "
            f"and {list(mat2.shape)}"
        )
    return labelled(_matmul(input, mat2, False), "BmmBackward0", input, mat2)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    if not (isinstance(input, Tensor) and isinstance(tensor, Tensor)):
        _tensors("dot", input, tensor, "tensor")
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(
            f"dot: expects 1-d tensors, got {list(input.shape)} and {list(tensor.shape)}"
        )
    check_same_dtype("dot", input, tensor)
    return matmul_as_given(input, tensor)


def matmul_as_given(a: Tensor, b: Tensor) -> Tensor:
    """``matmul(a, b)`` in the operands' own dtype also under autocast: the products PyTorch's
    CPU autocast leaves alone (``dot``, ``mv``, ``addmv``)."""
    return matmul(a, b) if autocast_dtype() is None else outside_autocast(matmul, a, b)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-D tensors (also ``tw.ger``)."""
    for name, arg, t in (("self", "input", input), ("vec2", "vec2", vec2)):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"outer(): argument '{arg}' must be Tensor, not {type(t).__name__}; wrap "
                "a number with tw.tensor(...)"
            )
        if t.dim() != 1:
            raise RuntimeError(
                f"outer: Expected 1-D argument {name}, but got {t.dim()}-D; flatten it first"
            )
    return ew.mul(mv.unsqueeze(input, 1), mv.unsqueeze(vec2, 0))


def einsum(equation: Any = None, *operands: Any) -> Tensor:
    """Einstein summation for one or more operands (pairwise, left to right, via matmul).

    Also in PyTorch's sublist format, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    if isinstance(equation, Tensor):
        equation, operands = _sublist_equation((equation, *operands))
    elif equation is None or not operands:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    _check_equation(equation, operands)
    eq = equation.replace(" ", "")
    if "..." in eq:
        eq = _expand_ellipsis(eq, operands)
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = lhs.split(",")
    operands, terms = zip(
        *(_diagonals(t, term, i) for i, (t, term) in enumerate(zip(operands, terms)))
    )
    result, rterm = operands[0], terms[0]
    for i in range(1, len(terms)):
        keep = set(out) | {c for later in terms[i + 1 :] for c in later}
        term, t = terms[i], operands[i]
        result, rterm = _contract(result, rterm, t, term, keep)
    # Sum letters that do not reach the output, then order as asked.
    drop = [i for i, c in enumerate(rterm) if c not in out]
    if drop:
        result = rd.sum(result, tuple(drop))
        rterm = "".join(c for c in rterm if c in out)
    result = mv.permute(result, [rterm.index(c) for c in out]) if rterm != out else result
    summed = len(set(lhs.replace(",", "")) - set(out))
    limit = max_ndim(result.backend)
    if (
        len(terms) > 1
        and summed
        and result.requires_grad
        and (limit is None or result.ndim + summed <= limit)
    ):
        # PyTorch's last step views its product, which keeps a size-1 axis per summed letter,
        # as the output: the same here, so a hook on that node sees its gradient's shape
        # (where a graph is recorded and the backend takes that many dimensions)
        shape = tuple(result.shape)
        result = mv.reshape(mv.reshape(result, shape + (1,) * summed), shape)
    return result


def _check_equation(equation: str, operands: tuple) -> None:
    """PyTorch's refusals of a malformed ``equation`` (an index counts spaces, as torch's)."""
    if _plainly_valid(equation, operands):
        return
    lhs, arrow, rhs = equation.partition("->")
    terms: list[list[str]] = [[]]
    for _, c in _subscripts(lhs):
        if c == ",":
            terms.append([])
            if len(terms) > len(operands):
                raise RuntimeError(
                    f"einsum(): fewer operands ({len(operands)}) were provided than specified "
                    f"in the equation {equation!r}"
                )
            continue
        _check_ellipsis(c, terms[-1], f"operand {len(terms) - 1}")
        terms[-1].append(c)
    if len(terms) < len(operands):
        raise RuntimeError(
            f"einsum(): more operands ({len(operands)}) were provided than specified in the "
            f"equation {equation!r}"
        )
    for i, (term, t) in enumerate(zip(terms, operands)):
        ellipsis = "..." in term
        n = len(term) - ellipsis
        if n > t.ndim if ellipsis else n != t.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({n}) "
                + ("is more than" if ellipsis else "does not match")
                + f" the number of dimensions ({t.ndim}) for operand {i} of shape "
                f"{list(t.shape)}" + ("" if ellipsis else " and no ellipsis was given")
            )
    if not arrow:
        return
    inputs = {c for term in terms for c in term}
    out: list[str] = []
    for i, c in _subscripts(rhs, len(lhs) + 2):
        if c == ",":
            raise _invalid_subscript(c, len(lhs) + 2 + i)
        _check_ellipsis(c, out, "output")
        if c in out and c != "...":
            raise RuntimeError(
                f"einsum(): output subscript {c} appears more than once in the output"
            )
        if c not in inputs and c != "...":
            raise RuntimeError(
                f"einsum(): output subscript {c} does not appear in the equation for any "
                "input operand"
            )
        out.append(c)


def _plainly_valid(equation: str, operands: tuple) -> bool:
    """Whether ``equation`` is letters, commas and at most one arrow (no ellipsis) that fit
    ``operands``: the usual case, told at a glance (anything else is checked in full)."""
    lhs, _, rhs = (part.replace(" ", "") for part in equation.partition("->"))
    terms = lhs.split(",")
    letters = lhs.replace(",", "") + rhs
    return (
        letters.isascii()
        and (letters.isalpha() or not letters)
        and len(terms) == len(operands)
        and all(len(term) == t.ndim for term, t in zip(terms, operands))
        and len(set(rhs)) == len(rhs)
        and set(rhs) <= set(lhs)
    )


def _subscripts(part: str, start: int = 0) -> Any:
    """``(index, token)`` for each letter, ``,``, ``...`` and lone ``.`` of one side of an
    equation, skipping spaces and refusing anything else."""
    i = 0
    while i < len(part):
        c = part[i]
        if c == "." and part.startswith("...", i):
            yield i, "..."
            i += 3
            continue
        if c in string.ascii_letters or c in ",.":
            yield i, c
        elif c != " ":
            raise _invalid_subscript(c, start + i)
        i += 1


def _check_ellipsis(token: str, term: list, where: str) -> None:
    """Refuse a second ellipsis in one term, or a ``.`` outside an ellipsis."""
    if token in (".", "...") and "..." in term:
        raise RuntimeError(
            f"einsum(): found '.' for {where} for which an ellipsis was already found"
        )
    if token == ".":
        raise RuntimeError(
            f"einsum(): found '.' for {where} that is not part of any ellipsis (...)"
        )


def _invalid_subscript(c: str, index: int) -> RuntimeError:
    return RuntimeError(
        f"einsum(): invalid subscript {c!r} given at index {index} in the equation string, "
        "subscripts must be in [a-zA-Z]"
    )


def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    """The equation and operands of ``einsum(op1, sublist1, op2, sublist2, ..., [out])``: the
    subscripts 0-25 stand for A-Z and 26-51 for a-z (so the implicit output's order is theirs),
    ``Ellipsis`` for ``...``."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    has_output = len(args) % 2 == 1
    pairs = args[:-1] if has_output else args
    equation = ",".join(_sublist_term(sublist) for sublist in pairs[1::2])
    if has_output:
        equation += "->" + _sublist_term(args[-1])
    return equation, pairs[0::2]


def _sublist_term(sublist: Any) -> str:
    return "".join(_sublist_letter(subscript) for subscript in sublist)


def _sublist_letter(subscript: Any) -> str:
    if subscript is Ellipsis:
        return "..."
    n = operator.index(subscript)
    if not 0 <= n < 52:
        raise ValueError(
            f"einsum(): subscript {n} in subscript list is not within the valid range [0, 52)"
        )
    return chr(ord("A") + n) if n < 26 else chr(ord("a") + n - 26)


def _diagonals(t: Tensor, term: str, position: int) -> tuple[Tensor, str]:
    """``t`` with each letter its ``term`` repeats taken along its diagonal (``ii`` is the
    diagonal of a matrix, ``iii`` of a cube), as a last axis named by the letter."""
    from tensorweaver.ops.structure import diagonal  # structure imports this module

    for c in dict.fromkeys(term):
        while term.count(c) > 1:
            i = term.index(c)
            j = term.index(c, i + 1)
            if t.shape[i] != t.shape[j]:
                raise RuntimeError(
                    f"einsum(): subscript {c} is repeated for operand {position} but the sizes "
                    f"don't match, {t.shape[j]} != {t.shape[i]}"
                )
            t = diagonal(t, 0, i, j)
            term = term[:i] + term[i + 1 : j] + term[j + 1 :] + c
    return t, term


def _broadcast_shared(a: Tensor, at: str, b: Tensor, bt: str) -> tuple[Tensor, Tensor]:
    """Letters both operands share, stretched where one of them has size 1."""
    sa, sb = list(a.shape), list(b.shape)
    for c in set(at) & set(bt):
        n, m = sa[at.index(c)], sb[bt.index(c)]
        if n != m:
            if n != 1 and m != 1:
                raise RuntimeError(
                    f"einsum: subscript {c!r} has size {n} in one operand and {m} in another"
                )
            sa[at.index(c)] = sb[bt.index(c)] = n if m == 1 else m
    return mv.expand(a, sa), mv.expand(b, sb)


def _expand_ellipsis(eq: str, operands: tuple) -> str:
    """The equation with each ``...`` spelled out in unused letters, right-aligned as NumPy
    broadcasts them; without ``->`` the ellipsis letters lead the output."""
    lhs, arrow, out = eq.partition("->")
    pool = [c for c in string.ascii_letters if c not in eq]
    terms = lhs.split(",")
    counts = [t.ndim - (len(term) - 3) if "..." in term else 0 for term, t in zip(terms, operands)]
    letters = "".join(pool[: max(counts, default=0)])
    terms = [
        term.replace("...", letters[len(letters) - k :] if k else "")
        for term, k in zip(terms, counts)
    ]
    if arrow:
        out = out.replace("...", letters)
    else:
        joined = "".join(terms)
        out = letters + "".join(
            sorted(c for c in set(joined) if joined.count(c) == 1 and c not in letters)
        )
    return ",".join(terms) + "->" + out


def _promoted(a: Tensor, b: Tensor, summed: list) -> tuple[Tensor, Tensor]:
    """Operands of two dtypes in their common one where their product sums no letter (an
    elementwise product, which PyTorch promotes), else PyTorch's error (a matrix product)."""
    if summed:
        raise RuntimeError(
            f"einsum(): the operands summed over {''.join(summed)!r} must have the same dtype, "
            f"got {a.dtype.name} and {b.dtype.name}; convert them with .to(dtype)"
        )
    dtype = promote_types(a.dtype, b.dtype)
    return ew.cast(a, dtype), ew.cast(b, dtype)


def _contract(a: Tensor, at: str, b: Tensor, bt: str, keep: set) -> tuple[Tensor, str]:
    """Multiply two operands, summing the letters that are in neither ``keep`` nor alone."""
    a, b = _broadcast_shared(a, at, b, bt)
    # Letters only in one operand and not kept are summed right away.
    for name, t, term, other in (("a", a, at, bt), ("b", b, bt, at)):
        lone = [i for i, c in enumerate(term) if c not in other and c not in keep]
        if lone:
            t = rd.sum(t, tuple(lone))
            term = "".join(c for c in term if c in other or c in keep)
        if name == "a":
            a, at = t, term
        else:
            b, bt = t, term
    batch = [c for c in at if c in bt and c in keep]
    summed = [c for c in at if c in bt and c not in keep]
    if a.dtype is not b.dtype:
        a, b = _promoted(a, b, summed)
    left = [c for c in at if c not in bt]
    right = [c for c in bt if c not in at]
    size = {c: n for term, t in ((at, a), (bt, b)) for c, n in zip(term, t.shape)}
    a3 = mv.reshape(
        mv.permute(a, [at.index(c) for c in batch + left + summed]),
        (
            math.prod(size[c] for c in batch),
            math.prod(size[c] for c in left),
            math.prod(size[c] for c in summed),
        ),
    )
    b3 = mv.reshape(
        mv.permute(b, [bt.index(c) for c in batch + summed + right]),
        (
            math.prod(size[c] for c in batch),
            math.prod(size[c] for c in summed),
            math.prod(size[c] for c in right),
        ),
    )
    # Nothing summed: PyTorch multiplies, which a boolean einsum may (its matmul may not).
    product = ew.mul(a3, b3) if not summed and a3.dtype.kind == "b" else matmul(a3, b3)
    letters = batch + left + right
    return mv.reshape(product, tuple(size[c] for c in letters)), "".join(letters)
